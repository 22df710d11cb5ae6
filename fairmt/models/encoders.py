"""Loading a sentence encoder to train or measure: a sentence-transformers folder, a plain transformers encoder, or
a masked LM kept with its head (so that a debiased checkpoint can still be scored by CrowS-Pairs and StereoSet),
optionally wrapped by a PEFT LoRA adapter. The embedding-debiasing recipes (CCD, DPCE, ADEPT-F) load through here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError


def resolve_model_path(model: str) -> str:
    """A local folder or Hub id for ``model``: a folder, a Hub id (cached or reachable), ``pkg:<module>`` (a model
    bundled by an installed package) or ``minilm`` — the one convention of :func:`fairmt.hub.resolve_model_ref`."""
    from fairmt.hub import require_model, resolve_model_ref

    return require_model(resolve_model_ref(model), "encoder")


def is_sentence_transformers_dir(path: str | Path) -> bool:
    """Whether ``path`` is a saved sentence-transformers model (it has ``modules.json``)."""
    return (Path(path) / "modules.json").is_file()


def is_masked_lm_dir(path: str) -> bool:
    """Whether a model folder's ``config.json`` names a ``*ForMaskedLM`` / ``*ForPreTraining`` architecture."""
    cfg = Path(path) / "config.json"
    if not cfg.is_file():
        return False
    try:
        archs = json.loads(cfg.read_text(encoding="utf-8")).get("architectures") or []
    except (json.JSONDecodeError, AttributeError):
        return False
    return any(str(a).endswith(("ForMaskedLM", "ForPreTraining")) for a in archs)


def load_encoder(path: str, peft_cfg: dict | None = None, sentence_transformers: bool = True) -> tuple[Any, Any, bool]:
    """(model, tokenizer, is_sentence_transformers) for a local folder or a Hub id.

    A sentence-transformers folder is loaded as a ``SentenceTransformer`` (its own pooling and normalisation) unless
    ``sentence_transformers`` is false (then its transformer is loaded as below, as DPCE / ADEPT-F train it). A
    ``*ForMaskedLM`` checkpoint is loaded with its head (``AutoModelForMaskedLM``), so the saved debiased model keeps
    it; any other plain encoder with ``AutoModel``. ``peft_cfg``: :class:`peft.LoraConfig` fields (plain encoders)."""
    from fairmt.hub import require_model

    require_model(path, "encoder")

    if sentence_transformers and is_sentence_transformers_dir(path):
        if peft_cfg:
            raise FairmtError("peft with a sentence-transformers folder is not supported here: give the bare encoder")
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(path, device="cpu")
        return model, model.tokenizer, True
    from transformers import AutoModel, AutoTokenizer

    if is_masked_lm_dir(path):
        # keep the masked-LM head: the debiased checkpoint is then scored by CrowS-Pairs and StereoSet as well
        # (the trainers embed its hidden states, never its vocabulary logits)
        from transformers import AutoModelForMaskedLM

        model = AutoModelForMaskedLM.from_pretrained(path)
    else:
        model = AutoModel.from_pretrained(path)
    if peft_cfg:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(**peft_cfg))
    return model, AutoTokenizer.from_pretrained(path), False


__all__ = ["is_masked_lm_dir", "is_sentence_transformers_dir", "load_encoder", "resolve_model_path"]
