"""The ``hf`` backend: transformers ``generate`` (beam search) through :class:`fairmt.models.TranslationModel`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.translate.cache import model_fingerprint


def as_translation_model(model: Any, src_lang: str = "en", tgt_lang: str = "de", family: str | None = None):
    """``model`` (a path, a Hub id or a :class:`TranslationModel`) as a :class:`TranslationModel` set to the pair."""
    from fairmt.models import TranslationModel, load_translation_model

    if isinstance(model, TranslationModel):
        model.set_languages(src_lang=src_lang, tgt_lang=tgt_lang)
        return model
    if isinstance(model, (str, Path)):
        return load_translation_model(str(model), src_lang=src_lang, tgt_lang=tgt_lang, family=family)
    raise FairmtError(
        f"cannot translate with a {type(model).__name__}: give a model name/path or a fairmt TranslationModel "
        "(fairmt.models.load_translation_model)"
    )


class HFTranslator:
    """Today's runner: batched beam search with transformers ``generate`` (the reference the others match)."""

    name = "hf"
    OPTIONS = ("family", "src_lang", "tgt_lang", "device")

    def __init__(
        self,
        model: Any,
        family: str | None = None,
        src_lang: str = "en",
        tgt_lang: str = "de",
        device: str | None = None,
    ):
        self.tm = as_translation_model(model, src_lang, tgt_lang, family)
        if device:
            self.tm.model.to(device)
        self.family = self.tm.family
        self.model_name = str(self.tm.name_or_path or type(self.tm.model).__name__)

    def check_languages(self, src_lang: str, tgt_lang: str) -> None:
        self.tm.lang(src_lang)
        self.tm.lang(tgt_lang)

    def fingerprint(self) -> str:
        return model_fingerprint(self.tm)

    def translate(self, sources, src_lang, tgt_lang, num_beams=5, max_new_tokens=200, batch_size=16) -> list[str]:
        self.tm.set_languages(src_lang=src_lang, tgt_lang=tgt_lang)
        return self.tm.translate(
            list(sources), batch_size=batch_size, num_beams=num_beams, max_new_tokens=max_new_tokens
        )
