"""Small encoder + head classifiers used by the fair-classification recipes.

Each model returns a :class:`transformers.modeling_outputs.SequenceClassifierOutput` whose ``hidden_states`` is a
one-element tuple holding the pooled ``(N, d)`` representation ``h`` fed to the head (what the contrastive losses,
leakage@h and INLP work on), so the fair-classification Trainers treat them exactly like an
``AutoModelForSequenceClassification``. The head is the ``classifier`` sub-module (what a two-stage recipe trains
on a frozen encoder).

* :class:`MLPClassifier` — ``Enc`` of Shen et al. (2022): two fully-connected layers (hidden 300, tanh) on fixed
  sentence embeddings (``features``), then a linear head (``head_layers=1``, Shen et al.'s) or a two-layer MLP head
  (``head_layers=2``, CSCL's g).
* :class:`GRUClassifier` — embedding + bidirectional GRU (Huang et al., 2020; cell 200 → 400-d), max-pooled.
* :class:`EmbeddingBagClassifier` — mean of token embeddings, one hidden layer.

Each has ``head_forward(h)``: the logits from the representation, what a two-stage recipe trains on cached features
of the frozen encoder. (:class:`fairmt.models.encoder_classifier.TransformerClassifier` is the same contract on a
pretrained transformer.) They are ``huggingface_hub.PyTorchModelHubMixin`` models: ``save_pretrained(DIR)`` writes
``config.json`` (the constructor arguments, class names included as ``labels``) beside ``model.safetensors``,
``Cls.from_pretrained(DIR)`` reloads, ``push_to_hub`` uploads.
"""

from __future__ import annotations

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput


def _output(logits: torch.Tensor, hidden: torch.Tensor, labels: torch.Tensor | None) -> SequenceClassifierOutput:
    loss = None
    if labels is not None:
        loss = nn.functional.cross_entropy(logits, labels.long())
    return SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=(hidden,))


class MLPClassifier(nn.Module, PyTorchModelHubMixin):
    """Two-layer MLP encoder (hidden 300) over fixed embeddings plus a linear head (Shen et al., 2022), or a two-layer
    MLP head (``head_layers=2``: :class:`~fairmt.models.encoder_classifier.MLPHead`, CSCL's g)."""

    def __init__(
        self,
        input_dim: int,
        num_labels: int,
        hidden_dim: int = 300,
        num_layers: int = 2,
        dropout: float = 0.1,
        labels: list[str] | None = None,
        head_layers: int = 1,
    ):
        super().__init__()
        self.labels = labels
        layers: list[nn.Module] = []
        dim = input_dim
        for _ in range(num_layers):
            layers += [nn.Dropout(dropout), nn.Linear(dim, hidden_dim), nn.Tanh()]
            dim = hidden_dim
        self.encoder = nn.Sequential(*layers)
        if head_layers == 1:
            self.classifier = nn.Linear(dim, num_labels)
        else:
            from fairmt.models.encoder_classifier import MLPHead

            self.classifier = MLPHead(dim, num_labels, head_layers, dropout=dropout)
        self.num_labels = num_labels
        self.representation_dim = dim

    def head_forward(self, h: torch.Tensor) -> torch.Tensor:
        """Logits from the representation ``h``."""
        return self.classifier(h)

    def forward(
        self, features: torch.Tensor, labels: torch.Tensor | None = None, **_: object
    ) -> SequenceClassifierOutput:
        """``features``: ``(N, input_dim)`` fixed embeddings."""
        h = self.encoder(features.float())
        return _output(self.head_forward(h), h, labels)


class GRUClassifier(nn.Module, PyTorchModelHubMixin):
    """Token-id classifier: embedding, bidirectional GRU, max-pool over non-padding positions, linear head."""

    def __init__(
        self,
        vocab_size: int,
        num_labels: int,
        embed_dim: int = 200,
        hidden_dim: int = 200,
        dropout: float = 0.2,
        padding_idx: int = 0,
        labels: list[str] | None = None,
    ):
        super().__init__()
        self.labels = labels
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        self.gru = nn.GRU(embed_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(2 * hidden_dim, num_labels)
        self.num_labels = num_labels

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        **_: object,
    ) -> SequenceClassifierOutput:
        x = self.dropout(self.embed(input_ids))
        out, _h = self.gru(x)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        out = out.masked_fill(~attention_mask.bool()[..., None], float("-inf"))
        h = out.max(dim=1).values
        h = torch.where(torch.isfinite(h), h, torch.zeros_like(h))
        return _output(self.head_forward(h), h, labels)

    def head_forward(self, h: torch.Tensor) -> torch.Tensor:
        """Logits from the representation ``h`` (dropout, then the linear layer)."""
        return self.classifier(self.dropout(h))


class EmbeddingBagClassifier(nn.Module, PyTorchModelHubMixin):
    """Token-id classifier: mean of token embeddings (``nn.EmbeddingBag``), one tanh layer, linear head."""

    def __init__(
        self,
        vocab_size: int,
        num_labels: int,
        embed_dim: int = 128,
        hidden_dim: int = 128,
        dropout: float = 0.2,
        padding_idx: int = 0,
        labels: list[str] | None = None,
    ):
        super().__init__()
        self.labels = labels
        self.bag = nn.EmbeddingBag(vocab_size, embed_dim, mode="mean", padding_idx=padding_idx)
        self.encoder = nn.Sequential(nn.Dropout(dropout), nn.Linear(embed_dim, hidden_dim), nn.Tanh())
        self.classifier = nn.Linear(hidden_dim, num_labels)
        self.num_labels = num_labels

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        **_: object,
    ) -> SequenceClassifierOutput:
        h = self.encoder(self.bag(input_ids))
        return _output(self.head_forward(h), h, labels)

    def head_forward(self, h: torch.Tensor) -> torch.Tensor:
        """Logits from the representation ``h``."""
        return self.classifier(h)
