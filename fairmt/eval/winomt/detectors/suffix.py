"""Suffix rules for the Semitic languages (``he``, ``ar``): a feminine suffix on any aligned word."""

from __future__ import annotations

from collections.abc import Iterable

from fairmt.eval.winomt.detectors.base import _PUNCT, F, GenderDetector, M
from fairmt.eval.winomt.io import Gender

HE_FEMININE_SUFFIXES = ("ה", "ת")  # -a (ה), -et/-it/-ut (ת, ית, ות)
HE_PARTICLES = frozenset({"את"})  # the accusative marker ends in ת but carries no gender
AR_FEMININE_SUFFIXES = ("ة", "ات")  # taa marbuta, sound feminine plural
AR_PARTICLES: frozenset[str] = frozenset()


class SuffixDetector(GenderDetector):
    """Semitic languages: female if any aligned word (punctuation stripped, particles skipped) ends with a
    feminine suffix, else male.

    An entity with no aligned word counts as female, as in the reference: with these rules the 2019 Hebrew
    confusion matrix of the Google translations is reproduced cell for cell.
    """

    def __init__(self, lang: str, feminine_suffixes: tuple[str, ...], particles: Iterable[str] = ()):
        super().__init__()
        self.lang = lang
        self.suffixes = feminine_suffixes
        self.particles = frozenset(particles)

    def detect_text(self, text: str) -> Gender:
        words = [w.strip(_PUNCT) for w in text.split()]
        words = [w for w in words if w and w not in self.particles]
        if not text.strip():
            return F
        return F if any(w.endswith(self.suffixes) for w in words) else M
