"""Finding the profession in the translation, as the reference WinoMT evaluation (mt_gender ``src/``) does.

The English entity is the profession's head word (the gold index) plus the word before it when that word is
"the", "a" or "an" (case-insensitive). The translated profession is every target word aligned to those source
words, source word by source word, in the order the alignment lists the links, joined with spaces. A source word
with no link contributes nothing, so an entity with no aligned word gives the empty string (which detectors
map to ``unknown`` or to their language's default).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from fairmt.eval.winomt.align import tokenize
from fairmt.eval.winomt.io import GoldEntry

DETERMINERS = ("the", "an", "a")


def source_indices(entry: GoldEntry) -> list[int]:
    """The English entity's word indices: ``[det, head]`` when a determiner precedes the head, else ``[head]``."""
    toks = entry.tokens
    idx = entry.index
    out = [idx - 1] if idx > 0 and toks[idx - 1].lower() in DETERMINERS else []
    out.append(idx)
    return out


@dataclass(frozen=True)
class TranslatedEntity:
    """The target words aligned to the English entity, their indices in the translation, and the tokens."""

    words: tuple[str, ...]
    indices: tuple[int, ...]
    target_tokens: tuple[str, ...]

    @property
    def text(self) -> str:
        """The aligned words joined with spaces (the string the reference evaluation's detectors see)."""
        return " ".join(self.words)


def find_translated_entity(
    entry: GoldEntry, alignment: Sequence[tuple[int, int]], translation: str
) -> TranslatedEntity:
    """Target words aligned to ``entry``'s entity, given ``(src, tgt)`` links over whitespace tokens."""
    tgt = tokenize(translation)
    by_src: dict[int, list[int]] = defaultdict(list)
    for s, t in alignment:
        by_src[s].append(t)
    idx = [t for s in source_indices(entry) for t in by_src.get(s, ()) if t < len(tgt)]
    return TranslatedEntity(tuple(tgt[t] for t in idx), tuple(idx), tuple(tgt))
