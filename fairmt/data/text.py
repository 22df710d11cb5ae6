"""One text normalisation for every evaluator that matches words: how real MT systems and editors write text.

Real system output and files that passed through a word processor carry characters that look like ordinary text
and are not: no-break spaces between words (U+00A0, common in French and German output), decomposed accents
(NFD: ``e`` + U+0301 instead of ``é``), zero-width spaces inside words, right-to-left marks after every Hebrew or
Arabic word. Word matching treats each of them as a different word: German WinoMT translations whose words are
separated by no-break spaces score accuracy 0 and ΔG 0 without normalisation (a ΔG of 0 reads as "unbiased").

:func:`normalize_text` is applied to every string an evaluator matches on (WinoMT translations and sources,
MT-GenEval hypotheses and references, the spBLEU/chrF++ inputs), never to what is written out:

1. Unicode NFC (composed characters);
2. every space separator (Unicode category Zs: no-break, narrow no-break, thin, ideographic, ... spaces) and the
   line and paragraph separators (Zl, Zp) become a plain space;
3. the invisible format characters that change no letter are removed (:data:`REMOVED_FORMAT_CHARS`: zero-width
   space, word joiner, byte-order mark, soft hyphen, the directional marks, embeddings, overrides and isolates).
   The zero-width joiner and non-joiner (U+200D, U+200C) are kept: they are part of correct spelling in Indic and
   Arabic-script languages (and of emoji sequences).

Text with nothing to change (plain ASCII, or NFC without any of those characters) is returned unchanged by a
C-speed check (the fast path). The rule is named in every result signature that
depends on it (:data:`TEXT_NORM`).

Two things no normalisation can undo are counted and said (:meth:`NormalizationReport.warn`, one warning each,
naming how many lines): words that mix look-alike scripts (a Latin word with a Cyrillic ``а`` or Greek ``ο``: the
word is no longer the word, and WinoMT accuracy drops without a word of explanation) and symbols that change how the
text is split into words (emoji, their ZWJ sequences, variation selectors and skin-tone modifiers).
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

TEXT_NORM = "nfc+spaces+nofmt"
"""The signature token of :func:`normalize_text` (bump it when the rule changes)."""

REMOVED_FORMAT_CHARS = frozenset(
    "\u200b"  # zero-width space
    "\u2060"  # word joiner
    "\ufeff"  # zero-width no-break space / byte-order mark
    "\u00ad"  # soft hyphen
    "\u200e\u200f\u061c"  # left-to-right, right-to-left and Arabic letter marks
    "\u202a\u202b\u202c\u202d\u202e"  # directional embeddings and overrides, pop
    "\u2066\u2067\u2068\u2069"  # directional isolates
)
"""Format characters removed before matching (see the module docstring for the ones kept)."""

_KINDS = ("composed (NFC)", "spaces", "format characters")
_LOOKALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK"})
"""Scripts whose letters look alike: a word holding letters of two of them is counted as mixed."""
_WORD = re.compile(r"[^\W\d_]+")
_SYMBOL = re.compile("[\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff\ufe0e\ufe0f\u20e3]")
"""Emoji and pictographs (every emoji ZWJ sequence holds some), the emoji/text presentation selectors and the keycap
mark; a zero-width joiner alone is not counted (in Indic and Arabic-script words it is spelling)."""


def mixes_scripts(text: str) -> bool:
    """Whether a word of ``text`` holds letters of two look-alike scripts (Latin with Cyrillic or Greek)."""
    if text.isascii():
        return False
    for word in _WORD.findall(text):
        if word.isascii():
            continue
        scripts = {_lookalike_script(ch) for ch in word}
        if len(scripts) - (None in scripts) > 1:
            return True
    return False


@lru_cache(maxsize=8192)
def _lookalike_script(ch: str) -> str | None:
    """The look-alike script of a character (the first word of its Unicode name), None for any other: looked up
    once per character (a file scores hundreds of thousands of characters, a few hundred distinct ones)."""
    script = unicodedata.name(ch, "?").split(" ", 1)[0]
    return script if script in _LOOKALIKE_SCRIPTS else None


def has_symbols(text: str) -> bool:
    """Whether ``text`` holds emoji or pictographs, or the joiners and selectors of their sequences."""
    return not text.isascii() and _SYMBOL.search(text) is not None


SPACE_SEPARATORS = (
    "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode's space separators (categories Zs, Zl, Zp) other than " " — a fixed list, checked against
``unicodedata`` by ``tests/data/test_text_normalisation.py``."""
# every character the rule changes besides decomposed text, as one class: clean non-ASCII text (German, Russian,
# ...) is checked at C speed
_SPECIAL = re.compile("[" + re.escape(SPACE_SEPARATORS + "".join(sorted(REMOVED_FORMAT_CHARS))) + "]")


def _changes(text: str) -> tuple[str, tuple[bool, bool, bool]]:
    nfc = unicodedata.normalize("NFC", text)
    out = []
    spaces = fmt = False
    for ch in nfc:
        if ch in REMOVED_FORMAT_CHARS:
            fmt = True
            continue
        if ch != " " and unicodedata.category(ch) in ("Zs", "Zl", "Zp"):
            spaces = True
            out.append(" ")
            continue
        out.append(ch)
    return "".join(out), (nfc != text, spaces, fmt)


def _clean(text: str) -> bool:
    """Nothing in ``text`` for the rule to change (the fast path, at C speed)."""
    return text.isascii() or (unicodedata.is_normalized("NFC", text) and not _SPECIAL.search(text))


def normalize_text(text: str) -> str:
    """``text`` in NFC with every space separator a plain space and invisible format characters removed."""
    if _clean(text):
        return text
    return _changes(text)[0]


@dataclass
class NormalizationReport:
    """How many of the ``n`` strings :func:`normalize_many` changed, and by which rule."""

    what: str
    n: int = 0
    changed: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    mixed_scripts: int = 0  # lines with a word mixing look-alike scripts (mixes_scripts)
    symbols: int = 0  # lines with emoji or their sequences (has_symbols)

    @property
    def mostly_changed(self) -> bool:
        """More than half of the strings were changed: the input was not written as plain text."""
        return self.n > 0 and self.changed * 2 > self.n

    def describe(self) -> str:
        kinds = ", ".join(f"{k} {v}" for k, v in self.by_kind.items() if v)
        return f"{self.changed} of {self.n} {self.what} changed by text normalisation ({TEXT_NORM}: {kinds})"

    def warn(self, stacklevel: int = 3) -> None:
        """One :func:`warnings.warn` when the strings were mostly changed (the scores then rest on the rule), one
        when any line mixes look-alike scripts inside a word, one when any carries emoji or their sequences."""
        if self.mostly_changed:
            warnings.warn(
                f"{self.describe()}: the scores are computed on the normalised text; check how the file was written",
                stacklevel=stacklevel,
            )
        if self.mixed_scripts:
            warnings.warn(
                f"{self.mixed_scripts} of {self.n} {self.what} have a word mixing Latin, Cyrillic or Greek letters "
                "(look-alike letters such as Cyrillic а in a Latin word): such a word matches nothing, and the scores "
                "count it as wrong; check how the file was written",
                stacklevel=stacklevel,
            )
        if self.symbols:
            warnings.warn(
                f"{self.symbols} of {self.n} {self.what} carry emoji or emoji sequences (zero-width joiners, variation "
                "selectors): they change how the lines split into words, and the scores with them",
                stacklevel=stacklevel,
            )


def normalize_many(texts: Iterable[str], what: str = "lines") -> tuple[list[str], NormalizationReport]:
    """Normalise each string (:func:`normalize_text`) and count what changed."""
    report = NormalizationReport(what, by_kind=dict.fromkeys(_KINDS, 0))
    out = []
    for text in texts:
        text = str(text)
        report.n += 1
        if text.isascii():
            out.append(text)
            continue
        report.mixed_scripts += mixes_scripts(text)
        report.symbols += has_symbols(text)
        if _clean(text):
            out.append(text)
            continue
        new, kinds = _changes(text)
        if new != text:
            report.changed += 1
            for name, hit in zip(_KINDS, kinds):
                report.by_kind[name] += hit
        out.append(new)
    return out, report
