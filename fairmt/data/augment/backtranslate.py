"""Back-translation views (Edunov et al., 2018; used as a CSCL augmentation by Chi et al., 2022 with wmt19-en-de).

A thin wrapper: translate into a pivot language and back with any object exposing
``.translate(texts, tgt_lang=...) -> list[str]`` — e.g. :func:`fairmt.models.load_translation_model` (M2M-100,
NLLB-200, SMaLL-100), or two single-direction models (``forward`` en→de and ``backward`` de→en). With a single
multilingual model, its source language is switched to the pivot for the return trip through ``set_languages``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from fairmt.errors import FairmtError


class Translator(Protocol):
    """Anything that translates a list of texts into ``tgt_lang``."""

    def translate(self, texts: Sequence[str], tgt_lang: str | None = None, **kwargs: Any) -> list[str]: ...


def backtranslate(
    texts: Sequence[str],
    forward: Translator,
    pivot_lang: str = "de",
    source_lang: str = "en",
    backward: Translator | None = None,
    **translate_kwargs: Any,
) -> list[str]:
    """Round-trip ``texts`` through ``pivot_lang``: ``backward(forward(texts → pivot) → source)``.

    ``backward`` defaults to ``forward`` (a multilingual model); its source language is then set to ``pivot_lang``
    with ``set_languages(src_lang=...)`` for the second pass and restored afterwards. Extra keyword arguments go
    to both ``translate`` calls (``batch_size``, ``num_beams`` ...). Raises when a model returns a different number
    of texts than it was given.
    """
    texts = list(texts)
    if not texts:
        return []
    if hasattr(forward, "set_languages"):
        forward.set_languages(src_lang=source_lang)
    pivots = forward.translate(texts, tgt_lang=pivot_lang, **translate_kwargs)
    if len(pivots) != len(texts):
        raise FairmtError(f"the forward translator returned {len(pivots)} texts for {len(texts)} inputs")
    back_model = backward if backward is not None else forward
    switch = backward is None and hasattr(back_model, "set_languages")
    if switch:
        back_model.set_languages(src_lang=pivot_lang)
    try:
        out = back_model.translate(pivots, tgt_lang=source_lang, **translate_kwargs)
    finally:
        if switch:
            back_model.set_languages(src_lang=source_lang)
    if len(out) != len(texts):
        raise FairmtError(f"the backward translator returned {len(out)} texts for {len(pivots)} inputs")
    return list(out)
