"""pymorphy3 (``ru``, ``uk``): the reference evaluation's any-parse rule, and the dictionaries it ran with."""

from __future__ import annotations

import functools
from pathlib import Path

from fairmt.errors import FairmtError
from fairmt.eval.winomt.detectors.base import _PUNCT, F, M, N, TokenVoteDetector, U, majority
from fairmt.eval.winomt.io import Gender

_PYMORPHY_GENDER = {"masc": M, "femn": F, "neut": N}


@functools.lru_cache(maxsize=8)
def load_pymorphy(lang: str, dictionary: str | None = None):
    """A ``pymorphy3.MorphAnalyzer`` for ``lang``, from the installed dictionary or a dictionary folder; loaded once
    per process (1–2 s each) and shared by every detector that asks for it (the analyzer is read-only).

    Dictionaries compiled by pymorphy2 store prediction-suffix records as three 16-bit numbers where pymorphy3
    writes a 32-bit count first; pymorphy3 cannot read the older ones as they are. The record format is probed
    on load, and an older dictionary is re-opened with its own layout (the class constant is set only while the
    files are read).
    """
    import struct

    try:
        import pymorphy3
        import pymorphy3.dawg as pm_dawg
    except ImportError as err:  # pragma: no cover
        raise FairmtError(
            "the ru/uk gender detector needs pymorphy3: pip install pymorphy3 pymorphy3-dicts-uk"
        ) from err
    if dictionary is not None and not (Path(dictionary) / "meta.json").is_file():
        raise FairmtError(f"{dictionary} is not a pymorphy dictionary folder (no meta.json in it)")
    try:
        morph = pymorphy3.MorphAnalyzer(path=dictionary, lang=lang)
    except Exception as err:
        if dictionary is not None:
            raise FairmtError(f"cannot load the pymorphy dictionary in {dictionary}: {err}") from err
        raise FairmtError(
            f"pymorphy3 dictionary for '{lang}' is not installed: pip install pymorphy3-dicts-{lang}"
        ) from err
    try:
        for d in morph.dictionary.prediction_suffixes_dawgs:
            next(d.iteritems(), None)  # one record; ``items()`` would unpack all of them (~190k, seconds)
    except struct.error:
        current = pm_dawg.PredictionSuffixesDAWG.DATA_FORMAT
        pm_dawg.PredictionSuffixesDAWG.DATA_FORMAT = ">HHH"  # pymorphy2's layout
        try:
            morph = pymorphy3.MorphAnalyzer(path=dictionary, lang=lang)
        finally:
            pm_dawg.PredictionSuffixesDAWG.DATA_FORMAT = current
    return morph


def acl2019_uk_dictionary() -> str:
    """Folder of the 2016 Ukrainian dictionary (``pymorphy2-dicts-uk`` 2.4.1.1.1460299261) the 2019 evaluation used."""
    try:
        import pymorphy2_dicts_uk
    except ImportError as err:
        raise FairmtError(
            "--compat acl2019 for Ukrainian needs the 2016 dictionary the 2019 evaluation used "
            f"(today's dictionary moves ΔG by 4 points): pip install pymorphy2-dicts-uk=={ACL2019_UK_DICT_VERSION}"
        ) from err
    return pymorphy2_dicts_uk.get_path()


ACL2019_UK_DICT_VERSION = "2.4.1.1.1460299261"


class PymorphyDetector(TokenVoteDetector):
    """Russian/Ukrainian gender from pymorphy3, by the reference evaluation's rule or the most probable parse.

    ``rule="any_parse"`` (default; the reference's): the entity is split with pymorphy's
    ``simple_word_tokenize``, so trailing punctuation is a token of its own that votes neutral; a token is
    feminine if any of its parses is feminine, else masculine if any parse is masculine, else neutral; majority
    vote, first seen wins a tie. On the 2019 Google Russian translations the confusion matrix equals the 2019
    log's cell by cell (acc 37.7, ΔG 36.8). It calls "Механик" feminine (a parse as the genitive plural of
    "механика" exists), as the 2019 evaluation did.

    ``rule="most_probable"``: the gender of the most probable parse (pymorphy's P(t|w) ranking), punctuation
    stripped, tokens without gender abstain; no gendered token → neutral. Not comparable with published
    numbers (Russian Google 2019: 38.8 / ΔG 43.2 against the published 37.7 / 36.8).
    """

    RULES = ("any_parse", "most_probable")

    def __init__(self, lang: str = "ru", rule: str = "any_parse", dictionary: str | None = None):
        """``dictionary``: a pymorphy dictionary folder (pymorphy3's, or an older pymorphy2 one such as the 2016
        Ukrainian dictionary the 2019 evaluation used); None = the installed ``pymorphy3-dicts-<lang>``."""
        super().__init__()
        if rule not in self.RULES:
            raise FairmtError(f"unknown pymorphy rule '{rule}': use one of {', '.join(self.RULES)}")
        try:
            from pymorphy3.tokenizers import simple_word_tokenize
        except ImportError as err:  # pragma: no cover
            raise FairmtError(
                "the ru/uk gender detector needs pymorphy3: pip install pymorphy3 pymorphy3-dicts-uk"
            ) from err
        self.morph = load_pymorphy(lang, dictionary)
        self.lang = lang
        self.rule = rule
        self._tokenize = simple_word_tokenize

    @property
    def signature_name(self) -> str:
        import pymorphy3

        meta = self.morph.dictionary.meta
        compiled = str(meta.get("compiled_at", ""))[:10]  # the revision alone does not tell uk dictionaries apart
        revision = meta.get("source_revision", "")
        return f"pymorphy3-{pymorphy3.__version__}-{self.lang}-dict{revision}@{compiled}-{self.rule}"

    def detect_text(self, text: str) -> Gender:
        if self.rule == "most_probable":
            return super().detect_text(text)
        if not text.strip():
            return U
        return majority(self._any_parse_gender(tok) for tok in self._tokenize(text))

    def _any_parse_gender(self, token: str) -> Gender:
        genders = {p.tag.gender for p in self.morph.parse(token)}
        return F if "femn" in genders else M if "masc" in genders else N

    def token_gender(self, token: str) -> Gender | None:
        tok = token.strip(_PUNCT)
        return _PYMORPHY_GENDER.get(self.morph.parse(tok)[0].tag.gender) if tok else None
