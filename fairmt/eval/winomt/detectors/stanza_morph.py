"""stanza morphology (UD ``Gender`` features): a detector for any language with a stanza model
(:class:`StanzaDetector`, registered by the user)."""

from __future__ import annotations

import os

from fairmt.errors import FairmtError
from fairmt.eval.winomt.detectors.base import GenderDetector, U, majority
from fairmt.eval.winomt.detectors.spacy_morph import _SPACY_GENDER
from fairmt.eval.winomt.io import Gender


class StanzaDetector(GenderDetector):
    """Morphological gender from a stanza pipeline's UD features (``Gender=Masc|Fem|Neut``), majority vote over the
    entity's words (words without a Gender feature do not vote; none voting → neutral, as the spaCy detector).

    ``pipeline``: any callable ``text -> stanza.Document`` (a ready ``stanza.Pipeline``, or a stand-in in tests).
    Without it a ``stanza.Pipeline(lang, processors="tokenize,mwt,pos")`` is built from the models in ``model_dir``
    (default ``$FAIRMT_STANZA_DIR``, else stanza's own default folder); nothing is downloaded. ``processors`` and
    other keyword arguments go to ``stanza.Pipeline``.
    """

    def __init__(
        self, lang: str, pipeline=None, model_dir: str | None = None, processors: str = "tokenize,mwt,pos", **kwargs
    ):
        super().__init__()
        self.lang = lang
        if pipeline is not None:
            self.nlp = pipeline
            return
        try:
            import stanza
        except ImportError as err:  # pragma: no cover
            raise FairmtError("the stanza detector needs stanza: pip install 'fairmt[stanza]'") from err
        model_dir = model_dir or os.environ.get("FAIRMT_STANZA_DIR")
        if model_dir:
            kwargs["dir"] = model_dir
        try:
            self.nlp = stanza.Pipeline(
                lang, processors=processors, download_method=None, logging_level="WARN", **kwargs
            )
        except Exception as err:  # stanza raises plain exceptions for missing models
            where = model_dir or "stanza's default model folder"
            raise FairmtError(
                f"stanza model for '{lang}' is not available in {where} ({str(err).splitlines()[0][:200]}); "
                f"download it where the internet is reachable (stanza.download('{lang}')) and point "
                "FAIRMT_STANZA_DIR at the folder"
            ) from None

    @staticmethod
    def word_gender(feats: str | None) -> Gender | None:
        """The gender a word's UD feature string gives (``Gender=Masc``; the first of an ambiguous ``Masc,Fem``)."""
        parsed = dict(f.split("=", 1) for f in (feats or "").split("|") if "=" in f)
        return _SPACY_GENDER.get(parsed.get("Gender", "").split(",")[0])

    def detect_text(self, text: str) -> Gender:
        if not text.strip():
            return U
        doc = self.nlp(text)
        return majority(self.word_gender(word.feats) for sent in doc.sentences for word in sent.words)
