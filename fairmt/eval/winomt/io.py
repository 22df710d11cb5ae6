"""Readers for WinoMT gold files, translation files and 2019 evaluator logs.

Gold (``aggregates/en.txt`` and ``aggregates_acl2019/en.txt``, also ``en_pro.txt`` / ``en_anti.txt``): one
tab-separated line per example, ``gender  word_index  sentence  profession``, where ``word_index`` is the 0-based
position of the profession's head word in the space-split sentence. The 2019 files keep the determiner in the
profession column ("The developer"); the current ones drop it ("developer").

Translations: one ``source ||| translation`` line per gold line, in gold order (the format of the shipped
``translations/<system>/en-XX.txt`` files and of fast_align's input).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from fairmt.errors import FairmtError


class Gender(str, Enum):
    """Gender labels of gold entities and predictions (``unknown``: the detector could not tell)."""

    male = "male"
    female = "female"
    neutral = "neutral"
    unknown = "unknown"


@dataclass(frozen=True)
class GoldEntry:
    """One WinoMT example: gold gender of the entity, its head-word index, the English sentence, the profession."""

    gender: Gender
    index: int
    sentence: str
    profession: str

    @property
    def tokens(self) -> list[str]:
        """The sentence split on single spaces, as the reference evaluation indexes it."""
        return self.sentence.split(" ")


@dataclass(frozen=True)
class TranslationPair:
    """A source sentence and its translation."""

    source: str
    translation: str


def _read_lines(path: str | Path, what: str) -> list[str]:
    from fairmt.data.inputs import read_lines

    return read_lines(path, what, allow_blank=True)


def read_gold(path: str | Path) -> list[GoldEntry]:
    """Read a WinoMT gold file (``en.txt``, ``en_pro.txt``, ``en_anti.txt``; current or 2019 version)."""
    return parse_gold_lines(_read_lines(path, "WinoMT gold"), path)


def parse_gold_lines(lines: Sequence[str], path: str | Path = "gold") -> list[GoldEntry]:
    """Parse WinoMT gold lines (``gender<TAB>index<TAB>sentence<TAB>profession``); errors name ``path:line``."""
    out = []
    for k, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) != 4:
            raise FairmtError(
                f"{path}:{k}: expected 4 tab-separated fields (gender, index, sentence, profession), got {len(fields)}"
            )
        gender, index, sentence, profession = fields
        try:
            g = Gender(gender.strip().lower())
        except ValueError:
            raise FairmtError(f"{path}:{k}: gold gender '{gender}' is not male, female or neutral") from None
        if not index.strip().isdigit():
            raise FairmtError(f"{path}:{k}: word index '{index}' is not a non-negative integer")
        idx = int(index)
        if idx >= len(sentence.split(" ")):
            raise FairmtError(f"{path}:{k}: word index {idx} is past the end of the sentence ({sentence!r})")
        out.append(GoldEntry(g, idx, sentence, profession))
    if not out:
        raise FairmtError(f"WinoMT gold {path} is empty")
    return out


_SEP = re.compile(r" *\|\|\| *")


def read_translations(
    path: str | Path,
    gold: Sequence[GoldEntry] | None = None,
    check_sources: bool = True,
    gold_path: str | Path | None = None,
) -> list[TranslationPair]:
    """Read a ``source ||| translation`` file; with ``gold``, check the line count and that sources match.

    Raises :class:`FairmtError` naming the file and line for an empty line, a missing ``|||``, an empty
    translation, a source that is not the gold sentence, or a line count different from the gold's.
    """
    lines = _read_lines(path, "translation")
    if gold is not None and len(lines) != len(gold):
        raise FairmtError(
            f"{path} has {len(lines)} lines but the gold file{' ' + str(gold_path) if gold_path else ''} has "
            f"{len(gold)}: give one 'source ||| translation' line per gold sentence, in gold order"
        )
    out = []
    for k, line in enumerate(lines, start=1):
        if not line.strip():
            raise FairmtError(f"{path}:{k}: empty line; expected 'source ||| translation'")
        parts = _SEP.split(line, maxsplit=1)
        if len(parts) != 2:
            raise FairmtError(f"{path}:{k}: no '|||' separator; expected 'source ||| translation'")
        src, tgt = parts[0].strip(), parts[1].strip()
        if not tgt:
            raise FairmtError(f"{path}:{k}: empty translation after '|||'")
        if not src:
            raise FairmtError(f"{path}:{k}: empty source before '|||'")
        if gold is not None and check_sources and src != gold[k - 1].sentence.strip():
            raise FairmtError(
                f"{path}:{k}: source {src!r} is not gold line {k} ({gold[k - 1].sentence!r}); the translation file "
                "must follow the gold file's order (use the gold file the translations were made from)"
            )
        out.append(TranslationPair(src, tgt))
    return out


def write_translations(path: str | Path, sources: Sequence[str], translations: Sequence[str]) -> None:
    """Write ``source ||| translation`` lines (newlines inside a translation are replaced by spaces)."""
    from fairmt.outputs import writing

    with writing(path, what="the translations") as fh:
        for s, t in zip(sources, translations):
            fh.write(f"{s} ||| {' '.join(t.split())}\n")


_LOG_ROW = re.compile(r"<GENDER\.(\w+): \d>: defaultdict")
_LOG_CELL = re.compile(r"<GENDER\.(\w+): \d>: (\d+)")


def read_2019_log(path: str | Path) -> dict:
    """Parse a 2019 WinoMT evaluator log: headline numbers and the gold×predicted confusion matrix.

    Returns ``{"acc", "f1_male", "f1_female", "p_male", "r_male", "p_female", "r_female", "confusion"}`` with
    ``confusion[gold][pred] = count`` (gender names as strings).
    """
    from fairmt.data.inputs import read_text

    text = read_text(path, "WinoMT log")
    m = re.search(
        r"acc = ([\d.]+)%; f1_male = ([\d.]+)% \(p: ([\d.]+) / r: ([\d.]+)\); "
        r"f1_female = ([\d.]+)% \(p: ([\d.]+) / r: ([\d.]+)\)",
        text,
    )
    if not m:
        raise FairmtError(f"{path}: not a WinoMT evaluator log (no 'acc = ...; f1_male = ...' line)")
    acc, f1m, pm, rm, f1f, pf, rf = map(float, m.groups())
    confusion: dict[str, dict[str, int]] = {}
    row = None
    for line in text[text.find("defaultdict(") :].splitlines():
        r = _LOG_ROW.search(line)
        if r:
            row = confusion.setdefault(r.group(1), {})
            line = line[r.end() :]
        for c in _LOG_CELL.finditer(line):
            if row is not None:
                row[c.group(1)] = int(c.group(2))
    return {
        "acc": acc,
        "f1_male": f1m,
        "p_male": pm,
        "r_male": rm,
        "f1_female": f1f,
        "p_female": pf,
        "r_female": rf,
        "confusion": confusion,
    }
