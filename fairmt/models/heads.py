"""Projection heads for the contrastive term, shared by the Hugging Face trainer (:mod:`fairmt.trainers.gacl`) and
the fairseq criterion (:mod:`fairmt.fairseq.criterion`); torch only, no transformers or fairseq import."""

from torch import nn


class ProjectionHead(nn.Module):
    """SimCSE-style MLP head (Linear → Tanh → Linear) for the contrastive representations."""

    def __init__(self, d_model: int, out_dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_model), nn.Tanh(), nn.Linear(d_model, out_dim))

    def forward(self, x):
        return self.net(x)


class LinearProjectionHead(nn.Module):
    """The GACL authors' released head: ``Dropout(p = the model's dropout) → Linear(d, d)``."""

    def __init__(self, d_model: int, dropout: float):
        super().__init__()
        self.net = nn.Sequential(nn.Dropout(dropout), nn.Linear(d_model, d_model))

    def forward(self, x):
        return self.net(x)
