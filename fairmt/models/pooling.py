"""Sentence representations from token states: the one pooling function the trainers and runners share."""

from __future__ import annotations

from typing import Any

import torch

from fairmt.errors import FairmtError

POOLING_MODES = ("mean", "cls", "first", "max", "pooler")


def pool(
    hidden: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    mode: str = "mean",
    pooler_output: torch.Tensor | None = None,
) -> torch.Tensor:
    """``(N, d)`` representation of ``(N, T, d)`` token states; 2-D states are already one vector per row.

    ``mean``: average over the tokens the attention mask keeps (over all tokens without a mask); ``cls`` /
    ``first``: the first token; ``max``: element-wise maximum over the kept tokens; ``pooler``: the model's own
    ``pooler_output``.
    """
    if hidden.dim() == 2:
        return hidden
    if mode in ("cls", "first"):
        return hidden[:, 0]
    if mode == "mean":
        if attention_mask is None:
            return hidden.mean(1)
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
    if mode == "max":
        if attention_mask is None:
            return hidden.max(1).values
        keep = attention_mask.unsqueeze(-1).bool()
        return hidden.masked_fill(~keep, torch.finfo(hidden.dtype).min).max(1).values
    if mode == "pooler":
        if pooler_output is None:
            raise FairmtError("pooling='pooler' but the model returns no pooler_output; use 'mean' or 'cls'")
        return pooler_output
    raise FairmtError(f"unknown pooling {mode!r}; choose one of {POOLING_MODES}")


def representation_and_logits(model: torch.nn.Module, model_inputs: dict[str, Any], pooling: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward of a classifier with ``output_hidden_states=True``: the pooled ``(N, d)`` last hidden state and
    the ``(N, C)`` logits."""
    outputs = model(**model_inputs, output_hidden_states=True)
    hidden_states = outputs["hidden_states"] if isinstance(outputs, dict) else outputs.hidden_states
    if not hidden_states:
        raise FairmtError(f"{type(model).__name__} returned no hidden_states: cannot take a representation")
    rep = pool(hidden_states[-1], model_inputs.get("attention_mask"), pooling)
    logits = outputs["logits"] if isinstance(outputs, dict) else outputs.logits
    return rep, logits
