"""A pretrained transformer encoder with an MLP classification head, as the fair-classification papers build it.

Chi et al. (2022, CSCL) write the classifier as ``X → f → Z → g → Ŷ``: a text encoder ``f`` (bert-base-uncased) whose
pooled output ``z`` is the representation, and a classifier ``g`` (a two-layer MLP) on ``z``. The contrastive terms
(``L_sup``, ``L_CS``), the classifier and leakage@h must all see that one ``z``. A stock
``AutoModelForSequenceClassification`` does not give that: its classifier reads ``dropout(pooler([CLS]))`` while the
last hidden state holds token states. :class:`TransformerClassifier` makes the split explicit:

* ``encoder`` — any ``transformers.AutoModel`` (BERT, RoBERTa, MiniLM, ...);
* ``z = pool(last_hidden_state)`` — ``cls`` (the first token) or ``mean`` (masked mean over tokens);
* ``classifier`` — :class:`MLPHead`, ``head_layers=2``: ``Linear(d, d) → tanh → dropout → Linear(d, C)`` (CSCL's g;
  the authors' released second stage trains exactly this shape: BERT's pooler dense + tanh, dropout and a linear
  layer); ``head_layers=1``: ``dropout → Linear(d, C)``.

``forward`` returns a :class:`~transformers.modeling_outputs.SequenceClassifierOutput` whose ``hidden_states`` is the
one-element tuple ``(z,)``, so fairmt's trainers treat it like its other classifiers (the representation is the
head's input). Saved with ``save_pretrained`` (``huggingface_hub.PyTorchModelHubMixin``: ``config.json`` holds the
encoder's config, the head's shape and the class names; ``model.safetensors`` every weight) and reloaded with
``TransformerClassifier.from_pretrained(DIR)`` without the original checkpoint.
"""

from __future__ import annotations

from typing import Any

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

from fairmt.errors import FairmtError

HEAD_POOLINGS = ("cls", "mean")


class MLPHead(nn.Module):
    """Classification head ``g``: ``dropout → Linear`` (``layers=1``) or ``Linear → tanh → dropout → Linear``
    (``layers=2``, the CSCL classifier), ``hidden_dim`` defaulting to the input width."""

    def __init__(
        self, input_dim: int, num_labels: int, layers: int = 2, hidden_dim: int | None = None, dropout: float = 0.1
    ):
        super().__init__()
        if layers not in (1, 2):
            raise FairmtError(f"head_layers must be 1 (linear) or 2 (MLP), got {layers}")
        hidden = hidden_dim or input_dim
        if layers == 1:
            self.net = nn.Sequential(nn.Dropout(dropout), nn.Linear(input_dim, num_labels))
        else:
            self.net = nn.Sequential(
                nn.Linear(input_dim, hidden), nn.Tanh(), nn.Dropout(dropout), nn.Linear(hidden, num_labels)
            )
        self.layers = layers

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


class TransformerClassifier(nn.Module, PyTorchModelHubMixin):
    """``AutoModel`` encoder ``f`` + pooling + :class:`MLPHead` ``g`` (see the module docstring).

    Build one on pretrained weights with :meth:`from_encoder`; the constructor makes a randomly initialised encoder
    from ``encoder_config`` (what ``from_pretrained`` does before loading the saved weights).

    Example::

        model = TransformerClassifier.from_encoder("bert-base-uncased", num_labels=28, pooling="cls", head_layers=2)
        out = model(**tokenizer(["she is a nurse"], return_tensors="pt"))
        out.logits, out.hidden_states[-1]    # (1, 28) and z, the (1, 768) vector the head consumed
    """

    def __init__(
        self,
        encoder_config: dict[str, Any],
        num_labels: int,
        pooling: str = "cls",
        head_layers: int = 2,
        head_hidden_dim: int | None = None,
        head_dropout: float = 0.1,
        labels: list[str] | None = None,
    ):
        super().__init__()
        from transformers import AutoConfig, AutoModel

        if pooling not in HEAD_POOLINGS:
            raise FairmtError(
                f"model.pooling must be one of {', '.join(HEAD_POOLINGS)} for a fine-tuned encoder, got {pooling!r}"
            )
        cfg = dict(encoder_config)
        model_type = cfg.pop("model_type", None)
        if not model_type:
            raise FairmtError("encoder_config has no model_type: pass a transformers config dict (config.to_dict())")
        self.encoder = AutoModel.from_config(AutoConfig.for_model(model_type, **cfg))
        dim = self.encoder.config.hidden_size
        self.classifier = MLPHead(dim, num_labels, head_layers, head_hidden_dim, head_dropout)
        self.pooling = pooling
        self.num_labels = num_labels
        self.representation_dim = dim
        self.labels = labels

    @classmethod
    def from_encoder(cls, name_or_path: str, num_labels: int, **kwargs: Any) -> TransformerClassifier:
        """A classifier on the pretrained encoder ``name_or_path`` (its weights loaded) with a fresh head."""
        from transformers import AutoModel

        encoder = AutoModel.from_pretrained(name_or_path)
        model = cls(encoder.config.to_dict(), num_labels, **kwargs)
        model.encoder = encoder
        return model

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``z``: the pooled last hidden state, ``(N, d)``."""
        from fairmt.models.pooling import pool

        kw: dict[str, Any] = {"attention_mask": attention_mask}
        if token_type_ids is not None:
            kw["token_type_ids"] = token_type_ids
        states = self.encoder(input_ids=input_ids, **kw).last_hidden_state
        return pool(states, attention_mask, self.pooling)

    def head_forward(self, z: torch.Tensor) -> torch.Tensor:
        """Logits from the representation: ``g(z)``."""
        return self.classifier(z)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        **_: object,
    ) -> SequenceClassifierOutput:
        z = self.encode(input_ids, attention_mask, token_type_ids)
        logits = self.head_forward(z)
        loss = None if labels is None else nn.functional.cross_entropy(logits, labels.long())
        return SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=(z,))
