"""The base classes every WinoMT gender detector builds on, and the majority vote they share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from fairmt.eval.winomt.io import Gender
from fairmt.eval.winomt.profession import TranslatedEntity

M, F, N, U = Gender.male, Gender.female, Gender.neutral, Gender.unknown
_PUNCT = ",.;:!?\"'«»„“”()[]"


class GenderDetector:
    """Base class: override :meth:`detect_text` (string of aligned words) or :meth:`detect` (full entity).

    Results are cached per entity string, since WinoMT repeats the same translated professions many times.
    """

    lang = "xx"
    uses_context = False  # True when the result depends on more than the aligned words

    @property
    def signature_name(self) -> str:
        """What goes into a result's signature: the detector and, for analysers, their model and version."""
        return type(self).__name__

    def __init__(self) -> None:
        self._cache: dict[str, Gender] = {}

    def detect(self, entity: TranslatedEntity) -> Gender:
        """Gender of the translated entity (cached by its text unless ``uses_context``)."""
        if self.uses_context:
            return self.detect_entity(entity)
        text = entity.text
        if text not in self._cache:
            self._cache[text] = self.detect_text(text)
        return self._cache[text]

    def detect_many(self, entities: Iterable[TranslatedEntity]) -> list[Gender]:
        """Genders of many entities (subclasses may batch the distinct strings, as :class:`SpacyDetector` does)."""
        return [self.detect(e) for e in entities]

    def detect_entity(self, entity: TranslatedEntity) -> Gender:  # pragma: no cover - for subclasses
        """Gender from the whole entity (aligned words, their indices, the translation)."""
        return self.detect_text(entity.text)

    def detect_text(self, text: str) -> Gender:  # pragma: no cover - abstract
        """Gender from the aligned words joined with spaces."""
        raise NotImplementedError

    def __call__(self, text: str) -> Gender:
        """Convenience: detect from a plain string of target words (taken as the whole aligned entity)."""
        words = tuple(text.split())
        return self.detect(TranslatedEntity(words, tuple(range(len(words))), words))


def majority(genders: Iterable[Gender | None], empty: Gender = N) -> Gender:
    """Most frequent non-None gender; ties go to the first seen (Python ``Counter.most_common``)."""
    seen = [g for g in genders if g is not None]
    return Counter(seen).most_common(1)[0][0] if seen else empty


class TokenVoteDetector(GenderDetector):
    """Empty entity → unknown; else majority vote of :meth:`token_gender` over whitespace tokens."""

    def detect_text(self, text: str) -> Gender:
        if not text.strip():
            return U
        return majority(self.token_gender(tok) for tok in text.split())

    def token_gender(self, token: str) -> Gender | None:  # pragma: no cover - abstract
        """Gender indicated by one token, or None."""
        raise NotImplementedError
