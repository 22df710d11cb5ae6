"""Loading multilingual seq2seq MT models (SMaLL-100, NLLB-200, M2M-100) by Hub name or local path.

:func:`load_translation_model` returns a :class:`TranslationModel` that knows its family's conventions:

================  =========================================  ==========================  ==================
family            source                                     labels                      generation
================  =========================================  ==========================  ==================
``m2m100``        ``__src__ x </s>``                         ``__tgt__ y </s>``          forced BOS __tgt__
``nllb``          ``src_Code x </s>`` (transformers ≥ 4.3x)  ``tgt_Code y </s>``         forced BOS tgt_Code
``small100``      ``__tgt__ x </s>`` (target code!)          ``y </s>``                  no forced BOS
================  =========================================  ==========================  ==================

The family is read from the checkpoint's own files (the saved tokenizer class: ``SMALL100Tokenizer``,
``NllbTokenizer``, ``M2M100Tokenizer``; NLLB's language tokens) unless given; a Hub id without readable files falls
back on its name (:func:`family_evidence`). A local folder's name never decides.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.models.languages import check_m2m_code, nllb_code

FAMILIES = ("m2m100", "nllb", "small100")
logger = logging.getLogger(__name__)


def _family_from_class(cls: str | None) -> str | None:
    cls = (cls or "").lower()
    for family, marker in (("small100", "small100"), ("nllb", "nllb"), ("m2m100", "m2m100")):
        if marker in cls:
            return family
    return None


def _family_from_name(name: str) -> str | None:
    name = name.lower()
    if "small100" in name or "small-100" in name:
        return "small100"
    if "nllb" in name:
        return "nllb"
    if "m2m100" in name or "m2m_100" in name:
        return "m2m100"
    return None


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _family_from_local_files(path: Path) -> tuple[str, str] | None:
    """The family a local checkpoint's own files state, with the evidence: the saved tokenizer class, else NLLB's
    FLORES-200 language tokens in the tokenizer files."""
    cls = _read_json(path / "tokenizer_config.json").get("tokenizer_class")
    family = _family_from_class(cls)
    if family:
        return family, f"tokenizer_config.json of {path} names {cls}"
    for name in ("tokenizer.json", "special_tokens_map.json", "added_tokens.json", "tokenizer_config.json"):
        f = path / name
        if f.is_file() and "eng_Latn" in f.read_text(encoding="utf-8", errors="replace"):
            return "nllb", f"{f} holds NLLB's FLORES-200 language tokens (eng_Latn)"
    return None


def family_evidence(name_or_path: str) -> tuple[str, str]:
    """``(family, evidence)``: the model family and what decided it.

    A local folder is judged by its files only (its name is a path a user chose: an M2M-100 model saved in
    ``outputs/gacl-small100-en-de`` is M2M-100). A Hub id is judged by its ``tokenizer_config.json`` when it can be
    read, else by the name; when both speak and disagree, that is an error naming both."""
    path = Path(name_or_path)
    if path.exists():
        found = _family_from_local_files(path)
        if found is None:
            raise FairmtError(
                f"cannot tell the model family of {path}: its tokenizer_config.json names no SMaLL-100/NLLB/M2M-100 "
                f"tokenizer class; pass family= (--family) one of {FAMILIES}"
            )
        return found
    by_name = _family_from_name(str(name_or_path))
    cls = None
    try:  # a Hub name: read the tokenizer config only
        from huggingface_hub import hf_hub_download

        cls = _read_json(Path(hf_hub_download(str(name_or_path), "tokenizer_config.json"))).get("tokenizer_class")
    except Exception:  # offline and not cached, or no such file: the name is all there is
        pass
    by_files = _family_from_class(cls)
    if by_files and by_name and by_files != by_name:
        raise FairmtError(
            f"{name_or_path!r}: the name says {by_name} but its tokenizer_config.json names {cls} ({by_files}); "
            "pass family= (--family) to choose"
        )
    if by_files:
        return by_files, f"tokenizer_config.json of {name_or_path} on the Hub names {cls}"
    if by_name:
        return by_name, f"the model name {name_or_path!r} (its tokenizer_config.json could not be read)"
    raise FairmtError(
        f"cannot tell the model family of {name_or_path!r} (not a local folder; tokenizer class unknown); pass "
        f"family= (--family) one of {FAMILIES}"
    )


def detect_family(name_or_path: str) -> str:
    """``"small100"``, ``"nllb"`` or ``"m2m100"`` (see :func:`family_evidence`)."""
    return family_evidence(name_or_path)[0]


def _load_tokenizer(name_or_path: str, family: str, src_lang: str, tgt_lang: str):
    if family == "nllb":
        from transformers import NllbTokenizer

        from fairmt.models.languages import NLLB_CODES

        return NllbTokenizer.from_pretrained(
            name_or_path, src_lang=src_lang, tgt_lang=tgt_lang, extra_special_tokens=list(NLLB_CODES)
        )
    from transformers import M2M100Tokenizer

    from fairmt.models.languages import m2m_codes
    from fairmt.models.small100 import Small100Tokenizer

    lang_tokens = [f"__{c}__" for c in m2m_codes()]  # special, so decode(skip_special_tokens=True) drops them
    if family == "small100":
        return Small100Tokenizer.from_pretrained(name_or_path, tgt_lang=tgt_lang, extra_special_tokens=lang_tokens)
    return M2M100Tokenizer.from_pretrained(
        name_or_path, src_lang=src_lang, tgt_lang=tgt_lang, extra_special_tokens=lang_tokens
    )


def longest_first(texts: Sequence[str], indices: Iterable[int] | None = None) -> list[int]:
    """``indices`` (default: all of ``texts``) in the order sentences are translated: longest first by characters,
    ties in their order. Batches cut from it hold sentences of similar length (less padding); the order depends on
    the texts only, so a resumed run forms the batches an uninterrupted one did. Used by
    :meth:`TranslationModel.translate` and :mod:`fairmt.translate.runner`."""
    return sorted(range(len(texts)) if indices is None else indices, key=lambda i: (-len(texts[i]), i))


@dataclass
class TranslationModel:
    """A seq2seq MT model with its tokenizer and its family's language-token conventions."""

    model: Any
    tokenizer: Any
    family: str
    src_lang: str
    tgt_lang: str
    name_or_path: str = ""
    _lang_cache: dict = field(default_factory=dict, repr=False)

    def lang(self, code: str) -> str:
        """``code`` in this family's convention, validated (clear error listing the valid codes)."""
        if code not in self._lang_cache:
            self._lang_cache[code] = nllb_code(code) if self.family == "nllb" else check_m2m_code(code, self.family)
        return self._lang_cache[code]

    def set_languages(self, src_lang: str | None = None, tgt_lang: str | None = None) -> None:
        if src_lang is not None:
            self.src_lang = self.lang(src_lang)
            if self.family != "small100":
                self.tokenizer.src_lang = self.src_lang
        if tgt_lang is not None:
            self.tgt_lang = self.lang(tgt_lang)
            self.tokenizer.tgt_lang = self.tgt_lang
            self.sync_generation_config()

    def sync_generation_config(self) -> None:
        """Put the forced BOS target-language token of M2M-100/NLLB into the model's ``generation_config``, so any
        ``generate`` call — ``Seq2SeqTrainer``'s ``predict_with_generate`` included — starts the target language
        (None for SMaLL-100, which has the language on the source side)."""
        config = getattr(self.model, "generation_config", None)
        if config is not None:
            config.forced_bos_token_id = self.generate_kwargs().get("forced_bos_token_id")

    def encode(
        self,
        sources: Sequence[str],
        targets: Sequence[str] | None = None,
        max_length: int = 256,
        padding: bool | str = False,
        return_tensors: str | None = None,
    ):
        """Tokenise sources (and targets as ``labels``) with this family's language tokens."""
        if targets is not None and len(targets) != len(sources):
            raise FairmtError(f"{len(sources)} source sentences but {len(targets)} targets: they must pair up")
        return self.tokenizer(
            list(sources),
            text_target=list(targets) if targets is not None else None,
            max_length=max_length,
            truncation=True,
            padding=padding,
            return_tensors=return_tensors,
        )

    def generate_kwargs(self, tgt_lang: str | None = None) -> dict:
        """Extra ``generate`` arguments: the forced BOS language token for M2M-100/NLLB, nothing for SMaLL-100."""
        tgt = self.lang(tgt_lang) if tgt_lang else self.tgt_lang
        if self.family == "small100":
            return {}
        if self.family == "nllb":
            return {"forced_bos_token_id": self.tokenizer.convert_tokens_to_ids(tgt)}
        return {"forced_bos_token_id": self.tokenizer.get_lang_id(tgt)}

    def translate(
        self,
        texts: Sequence[str],
        tgt_lang: str | None = None,
        batch_size: int = 16,
        num_beams: int = 5,
        max_new_tokens: int = 200,
    ) -> list[str]:
        """Translate ``texts`` into ``tgt_lang`` (default: the model's target) with batched beam search; one
        translation per text, in the texts' order.

        The texts are translated in :func:`longest_first` order (the runner's too), so each batch holds sentences of
        similar length: less padding in the encoder and no beam kept decoding for a long neighbour. On MT-GenEval's
        300 feminine English test sentences, batches of 16 are padded to 8,684 words instead of 14,156 in file
        order. A list that fits in one batch is that one batch either way."""
        import torch

        if tgt_lang is not None:
            self.set_languages(tgt_lang=tgt_lang)
        device = next(self.model.parameters()).device
        was_training = self.model.training
        self.model.eval()
        order = longest_first(texts)
        out: list[str] = [""] * len(texts)
        try:
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                batch = self.encode([texts[i] for i in idx], padding=True, return_tensors="pt").to(device)
                with torch.no_grad():
                    ids = self.model.generate(
                        **batch, num_beams=num_beams, max_new_tokens=max_new_tokens, **self.generate_kwargs()
                    )
                for i, s in zip(idx, self.tokenizer.batch_decode(ids, skip_special_tokens=True), strict=True):
                    out[i] = s.strip()
        finally:
            self.model.train(was_training)
        return out


def load_translation_model(
    name_or_path: str,
    src_lang: str = "en",
    tgt_lang: str = "de",
    family: str | None = None,
    torch_dtype: Any = None,
    model: Any = None,
) -> TranslationModel:
    """Load a SMaLL-100 / NLLB-200 / M2M-100 model and tokenizer by Hub name or local path.

    Args:
        name_or_path: e.g. ``"alirezamsh/small100"``, ``"facebook/nllb-200-distilled-600M"``,
            ``"facebook/m2m100_418M"``, or a local folder (a fairmt checkpoint, a tiny test model).
        src_lang, tgt_lang: ISO codes (``en``, ``de``); NLLB also takes FLORES-200 codes (``eng_Latn``).
        family: ``"small100"``, ``"nllb"`` or ``"m2m100"``; detected from the checkpoint when ``None``.
        model: an already loaded model (e.g. a PEFT-wrapped one) to pair with the tokenizer.
    """
    if model is None:
        from fairmt.hub import require_model

        require_model(name_or_path, "translation model")
    if family is None:
        family, evidence = family_evidence(name_or_path)
        logger.info("model family of %s: %s (%s)", name_or_path, family, evidence)
    if family not in FAMILIES:
        raise FairmtError(f"unknown model family {family!r}; choose one of {FAMILIES}")
    if family == "nllb":
        src, tgt = nllb_code(src_lang), nllb_code(tgt_lang)
    else:
        src, tgt = check_m2m_code(src_lang, family), check_m2m_code(tgt_lang, family)
    from fairmt.hub import loading

    with loading(name_or_path, "translation model's tokenizer"):
        tokenizer = _load_tokenizer(str(name_or_path), family, src, tgt)
    if model is None:
        from transformers import AutoModelForSeq2SeqLM

        kwargs = {"dtype": torch_dtype} if torch_dtype is not None else {}
        with loading(name_or_path, "translation model"):
            model = AutoModelForSeq2SeqLM.from_pretrained(name_or_path, **kwargs)
    tm = TranslationModel(model, tokenizer, family, src, tgt, str(name_or_path))
    tm.sync_generation_config()
    return tm
