"""Sentence representations from token states: the one pooling function the trainers and runners share."""

from __future__ import annotations

from typing import Any

import torch

from fairmt.errors import FairmtError

POOLING_MODES = ("mean", "cls", "first", "max", "pooler")
REPRESENTATIONS = ("head", "cls", "mean")
"""What a classification trainer takes as the representation ``h`` (:func:`representation_and_logits`)."""
HEAD_NAMES = ("classifier", "score", "classification_head")


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


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside DDP/FSDP (``.module``) and PEFT (``get_base_model()``) wrappers."""
    for _ in range(4):
        inner = getattr(model, "module", None)
        if isinstance(inner, torch.nn.Module):
            model = inner
            continue
        if hasattr(model, "get_base_model"):
            model = model.get_base_model()
            continue
        break
    return model


def classification_head(model: torch.nn.Module) -> tuple[str, torch.nn.Module] | None:
    """``(name, module)`` of a sequence classifier's head (``classifier``, ``score`` or ``classification_head``)."""
    inner = _unwrap(model)
    for name in HEAD_NAMES:
        head = getattr(inner, name, None)
        if isinstance(head, torch.nn.Module):
            return name, head
    return None


def _head_input_vector(x: torch.Tensor, head_name: str, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """A captured head input of token states ``(N, T, d)`` as the head itself reduces it: the last real token for a
    decoder's ``score`` head (pooled after scoring, at the sequence end), the first token otherwise (RoBERTa-style
    heads take ``features[:, 0]``)."""
    if x.dim() == 2:
        return x
    if head_name == "score":
        if attention_mask is None:
            return x[:, -1]
        m = attention_mask.long()
        last = m.shape[1] - 1 - torch.flip(m, dims=[1]).argmax(dim=1)
        return x[torch.arange(x.shape[0], device=x.device), last]
    return x[:, 0]


def representation_and_logits(
    model: torch.nn.Module, model_inputs: dict[str, Any], pooling: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward of a classifier: the ``(N, d)`` representation ``h`` and the ``(N, C)`` logits.

    ``pooling="head"``: ``h`` is the input of the classification head — the vector the classifier consumes, so a loss
    on ``h`` and leakage@h concern what the head sees. fairmt's own classifiers (:mod:`fairmt.models.text_classifiers`,
    :class:`~fairmt.models.encoder_classifier.TransformerClassifier`) return it as their last hidden state (2-D);
    for a transformers ``*ForSequenceClassification`` model it is captured by a forward pre-hook on the head module
    (``classifier`` / ``score`` / ``classification_head``): ``dropout(pooler([CLS]))`` for BERT, the ``[CLS]`` state
    for RoBERTa's two-layer head. ``"cls"``/``"mean"``: the first token / the masked mean of the last hidden state —
    for a ``*ForSequenceClassification`` model *not* the vector its head reads.
    """
    if pooling == "head":
        return _head_representation(model, model_inputs)
    outputs = model(**model_inputs, output_hidden_states=True)
    hidden_states = outputs["hidden_states"] if isinstance(outputs, dict) else outputs.hidden_states
    if not hidden_states:
        raise FairmtError(f"{type(model).__name__} returned no hidden_states: cannot take a representation")
    rep = pool(hidden_states[-1], model_inputs.get("attention_mask"), pooling)
    logits = outputs["logits"] if isinstance(outputs, dict) else outputs.logits
    return rep, logits


def _head_representation(model: torch.nn.Module, model_inputs: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    found = classification_head(model)
    captured: list[torch.Tensor] = []
    handle = None
    if found is not None:

        def grab(_module, args, kwargs):
            first = args[0] if args else next((v for v in kwargs.values() if isinstance(v, torch.Tensor)), None)
            if first is not None and not captured:
                captured.append(first)

        handle = found[1].register_forward_pre_hook(grab, with_kwargs=True)
    try:
        outputs = model(**model_inputs)
    finally:
        if handle is not None:
            handle.remove()
    hidden_states = (
        outputs.get("hidden_states") if isinstance(outputs, dict) else getattr(outputs, "hidden_states", None)
    )
    logits = outputs["logits"] if isinstance(outputs, dict) else outputs.logits
    if hidden_states and hidden_states[-1].dim() == 2:  # fairmt's classifiers: the head's input itself
        return hidden_states[-1], logits
    if captured:
        return _head_input_vector(captured[0], found[0], model_inputs.get("attention_mask")), logits
    raise FairmtError(
        f"cannot find the input of {type(_unwrap(model)).__name__}'s classification head (no {'/'.join(HEAD_NAMES)} "
        "module, no 2-D last hidden state): set pooling to cls or mean, or use fairmt.models.encoder_classifier."
        "TransformerClassifier"
    )
