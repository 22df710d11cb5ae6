"""Degenerate translations: output that no gender metric should be read on without a warning.

A model that emits ``"ariariari…"`` contains no wrong-gender word, so MT-GenEval scores it 100 % accurate; a model
that copies English or answers in another script passes WinoMT's morphology checks just as vacuously. Gender
accuracy is only trustworthy beside translation quality (chrF++) and a count of such lines, which
:func:`degenerate_counts` gives per language. Each hypothesis is checked for:

- **empty**: nothing but white space;
- **repetitive**: one unit of 1–20 characters repeated at least 4 times in a row (``(.{1,20}?)\\1{3,}``) over at
  least half of the hypothesis (at least 8 characters) — ``"ariariari…"``, ``"der der der der"``; a number such as
  ``1000000`` in a sentence or an ellipsis covers far less than half;
- **wrong script**: fewer than half of its letters are in the target language's script (the script part of the
  language's FLORES-200 code, e.g. ``rus_Cyrl``; Unicode character names give each letter's script). A language whose
  script is not known is not checked (``script`` is None).

- **unrelated** (only where references are given: MT-GenEval, FLORES-200): fluent text that does not translate its
  source, such as a toy model's "Der Bibliothekar mochte die Schlüssel." for a long Wikipedia sentence (no wrong-gender
  word in it, so MT-GenEval calls it accurate). A line is unrelated when its sentence-level chrF++ against its own
  reference is below :data:`UNRELATED_CHRF` (20), counted only in a file where at least :data:`UNRELATED_SHARE`
  (a quarter) of the lines are so — single short lines of a real system can score that low. Calibrated on the shipped
  2019 WinoMT outputs, scoring one real system against another (the closest stand-in for real output vs a reference
  this data holds): 0–7.5 % of lines are below 20 for every system against Google in de, es, fr, it, ru, uk, he and ar
  (the median is 34–87; all 3,888 lines, Bing, Systran, AWS and the 2019 SOTA), so no real system is flagged; the
  same lines paired with another sentence's translation (fluent, right language, wrong content) have a median of 12–17
  and are flagged (``tests/cli/test_unrelated_flag.py``).

The rules are heuristics stated here so that a count can be reproduced; a flagged line is a line to look at, not a
proof of a broken model.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

_REPEAT = re.compile(r"(.{1,20}?)\1{3,}", re.DOTALL)
_SCRIPT_NAMES = {  # FLORES-200 script subtag → the first word(s) of Unicode character names in that script
    "Latn": ("LATIN",),
    "Cyrl": ("CYRILLIC",),
    "Arab": ("ARABIC",),
    "Hebr": ("HEBREW",),
    "Deva": ("DEVANAGARI",),
    "Grek": ("GREEK",),
    "Hans": ("CJK",),
    "Hant": ("CJK",),
    "Jpan": ("CJK", "HIRAGANA", "KATAKANA"),
    "Hang": ("HANGUL",),
    "Ethi": ("ETHIOPIC",),
    "Armn": ("ARMENIAN",),
    "Beng": ("BENGALI",),
    "Geor": ("GEORGIAN",),
    "Gujr": ("GUJARATI",),
    "Guru": ("GURMUKHI",),
    "Khmr": ("KHMER",),
    "Knda": ("KANNADA",),
    "Laoo": ("LAO",),
    "Mlym": ("MALAYALAM",),
    "Mymr": ("MYANMAR",),
    "Orya": ("ORIYA",),
    "Sinh": ("SINHALA",),
    "Taml": ("TAMIL",),
    "Thai": ("THAI",),
}
REASONS = ("empty", "repetitive", "wrong_script", "unrelated")
UNRELATED_CHRF = 20.0
"""Sentence-level chrF++ against the own reference below which a line does not translate its source."""
UNRELATED_SHARE = 0.25
"""Share of a file's lines that must be below :data:`UNRELATED_CHRF` before any of them is counted as unrelated."""
N_EXAMPLES = 3


def target_script(lang: str) -> str | None:
    """The script subtag of ``lang`` (ISO code as ``de``, or a FLORES-200 code as ``deu_Latn``), None if unknown."""
    script: str | None
    if "_" in lang:
        script = lang.rsplit("_", 1)[1]
    else:
        from fairmt.models.languages import ISO_TO_NLLB

        code = ISO_TO_NLLB.get(lang)
        script = code.rsplit("_", 1)[1] if code else None
    return script if script in _SCRIPT_NAMES else None


def is_repetitive(text: str) -> bool:
    """One unit repeated ≥ 4 times in a row over at least half of ``text`` (and at least 8 characters)."""
    s = text.strip()
    if len(s) < 8:
        return False
    longest = max((m.end() - m.start() for m in _REPEAT.finditer(s)), default=0)
    return longest >= 8 and 2 * longest >= len(s)


def in_script_fraction(text: str, script: str) -> float | None:
    """Share of the letters of ``text`` whose Unicode name starts with ``script``'s name(s); None without letters."""
    names = _SCRIPT_NAMES[script]
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return None
    return sum(unicodedata.name(c, "").startswith(names) for c in letters) / len(letters)


def degenerate_reasons(text: str, script: str | None) -> list[str]:
    """The reasons (of :data:`REASONS`) ``text`` is degenerate, empty if it is not."""
    if not text.strip():
        return ["empty"]
    out = []
    if is_repetitive(text):
        out.append("repetitive")
    if script is not None:
        frac = in_script_fraction(text, script)
        if frac is not None and frac < 0.5:
            out.append("wrong_script")
    return out


def chrfpp_scores(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, list[float], str]:
    """chrF++ (sacrebleu, ``word_order=2``) of the corpus and of each line against its own reference, from ONE pass
    over the lines: sacrebleu's per-line statistics (``_extract_corpus_statistics``, the same ones its paired
    bootstrap reuses) are aggregated once per line and once summed, so each equals ``corpus_score`` /
    ``sentence_score`` exactly (tests/cli/test_unrelated_flag.py) at the cost of one ``corpus_score``. Returns the corpus
    score, the line scores and sacrebleu's signature of the corpus score (:func:`chrfpp_scores_and_statistics`
    returns the line statistics too)."""
    return chrfpp_scores_and_statistics(hypotheses, references)[:3]


def chrfpp_scores_and_statistics(
    hypotheses: Sequence[str], references: Sequence[str]
) -> tuple[float, list[float], str, list[list[int]]]:
    """:func:`chrfpp_scores` and the lines' statistics (24 integers each, what a paired bootstrap of chrF++ needs:
    :mod:`fairmt.eval.significance`)."""
    stats = chrfpp_line_statistics(hypotheses, references)
    return (*chrfpp_scores_from_statistics(stats), stats)


def chrfpp_scores_from_statistics(stats: Sequence[Sequence[int]]) -> tuple[float, list[float], str]:
    """The corpus chrF++, each line's chrF++ and sacrebleu's signature from the lines' statistics
    (:func:`chrfpp_line_statistics`; lines scored against different reference lists may be concatenated: a line's
    statistics depend on its own hypothesis and reference only)."""
    chrf = _chrfpp_aggregator()
    corpus, signature = chrfpp_corpus_from_statistics(stats)
    return corpus, [chrf._aggregate_and_compute([list(s)]).score for s in stats], signature


def chrfpp_corpus_from_statistics(stats: Sequence[Sequence[int]]) -> tuple[float, str]:
    """The corpus chrF++ (equal to sacrebleu's ``corpus_score`` of the lines) and its signature, from the lines'
    statistics."""
    chrf = _chrfpp_aggregator()
    return chrf._aggregate_and_compute(list(stats)).score, str(chrf.get_signature())


def chrfpp_corpus_and_statistics(
    hypotheses: Sequence[str], references: Sequence[str]
) -> tuple[float, str, list[list[int]]]:
    """The corpus chrF++ (sacrebleu, ``word_order=2``; equal to ``corpus_score``), sacrebleu's signature and the
    lines' statistics it was summed from (the ``chrf_stats`` of a result's ``items``), without the line scores."""
    stats = chrfpp_line_statistics(hypotheses, references)
    return (*chrfpp_corpus_from_statistics(stats), stats)


def chrfpp_line_statistics(hypotheses: Sequence[str], references: Sequence[str]) -> list[list[int]]:
    """sacrebleu's chrF++ statistics (``CHRF(word_order=2)._extract_corpus_statistics``) of each hypothesis against
    its own reference. The references' n-grams are sacrebleu's own reference cache (``CHRF(references=...)``), kept
    for the last few reference lists of the process (:data:`CHRF_REFERENCE_CACHE` lists, keyed by their text): the
    next hypothesis file scored against the same references (another run, the other system of a paired bootstrap)
    skips their extraction. The statistics are the same either way (``tests/cli/test_unrelated_flag.py``)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    if not references:  # sacrebleu's reference cache cannot be empty
        from sacrebleu.metrics import CHRF

        return CHRF(word_order=2)._extract_corpus_statistics([], [[]])
    return _chrfpp_metric(tuple(references))._extract_corpus_statistics(list(hypotheses), None)


CHRF_REFERENCE_CACHE = 4
"""Reference lists whose chrF++ n-grams :func:`chrfpp_line_statistics` keeps per process (about 30 kB a line)."""


@functools.cache
def _chrfpp_aggregator():
    """sacrebleu's ``CHRF(word_order=2)`` that turns statistics into scores, with the signature of one reference per
    line (as every line here has); kept apart from :func:`_chrfpp_metric`'s reference cache, whose slots stay for
    real reference lists."""
    from sacrebleu.metrics import CHRF

    return CHRF(word_order=2, references=[[""]])


@functools.lru_cache(maxsize=CHRF_REFERENCE_CACHE)
def _chrfpp_metric(references: tuple[str, ...]):
    """sacrebleu's ``CHRF(word_order=2)`` holding ``references``' n-grams; callers only read it
    (``_extract_corpus_statistics`` with ``references=None`` reads the cache and changes nothing)."""
    from sacrebleu.metrics import CHRF

    return CHRF(word_order=2, references=[list(references)])


def unrelated_lines(
    hypotheses: Sequence[str], references: Sequence[str], sentence_chrf: Sequence[float] | None = None
) -> list[bool]:
    """Per line, whether it counts as **unrelated** to its source (see the module docstring): sentence chrF++
    (sacrebleu, ``word_order=2``) against its own reference below :data:`UNRELATED_CHRF`, in a file where at least
    :data:`UNRELATED_SHARE` of the lines are so; all False otherwise. ``sentence_chrf``: those scores, when the
    caller already has them (:func:`chrfpp_scores`)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    if sentence_chrf is None:
        sentence_chrf = chrfpp_scores(hypotheses, references)[1]
    low = [bool(h.strip()) and score < UNRELATED_CHRF for h, score in zip(hypotheses, sentence_chrf)]
    if not low or sum(low) < UNRELATED_SHARE * len(low):
        return [False] * len(low)
    return low


def degenerate_counts(
    hypotheses: Sequence[str],
    lang: str,
    references: Sequence[str] | None = None,
    sentence_chrf: Sequence[float] | None = None,
) -> dict:
    """Counts of degenerate hypotheses for target language ``lang``: ``n``, ``degenerate`` (lines with any reason),
    one count per reason, ``script`` (the script checked, None if unknown) and up to three ``examples``
    (line number from 1, the reasons, the first 60 characters). ``references`` (one per hypothesis, its own) turn
    on the ``unrelated`` check; without them ``unrelated`` is None (not checked). ``sentence_chrf``: each line's chrF++
    against its reference, when the caller computed it already (:func:`chrfpp_scores`)."""
    script = target_script(lang)
    counts: dict = {r: 0 for r in REASONS}
    unrelated = unrelated_lines(hypotheses, references, sentence_chrf) if references is not None else None
    if unrelated is None:
        counts["unrelated"] = None
    flagged = 0
    examples: list[dict] = []
    for i, h in enumerate(hypotheses):
        reasons = degenerate_reasons(h, script)
        if unrelated is not None and unrelated[i]:
            reasons.append("unrelated")
        if not reasons:
            continue
        flagged += 1
        for r in reasons:
            counts[r] += 1
        if len(examples) < N_EXAMPLES:
            examples.append({"line": i + 1, "reasons": reasons, "text": h[:60]})
    return {"n": len(hypotheses), "degenerate": flagged, **counts, "script": script, "examples": examples}


def merge_counts(*parts: dict) -> dict:
    """Several :func:`degenerate_counts` (e.g. the masculine and feminine sets of one language) as one; line numbers
    of the examples stay those of their own part."""
    out = {
        "n": sum(p["n"] for p in parts),
        "degenerate": sum(p["degenerate"] for p in parts),
        **{r: None if any(p.get(r) is None for p in parts) else sum(p[r] for p in parts) for r in REASONS},
        "script": parts[0]["script"] if parts else None,
    }
    out["examples"] = [e for p in parts for e in p["examples"]][:N_EXAMPLES]
    return out


def describe(what: str, counts: dict | None) -> str | None:
    """One warning line (``"MT-GenEval de: 12 of 600 translations degenerate (repetitive 10, empty 2)"``), or None
    when nothing was flagged."""
    if not counts or not counts.get("degenerate"):
        return None
    reasons = ", ".join(f"{r.replace('_', ' ')} {counts[r]}" for r in REASONS if counts.get(r))
    ex = counts["examples"][0] if counts.get("examples") else None
    example = f"; e.g. line {ex['line']}: {ex['text']!r}" if ex else ""
    rests = "; a gender accuracy on these lines does not measure translation" if counts.get("unrelated") else ""
    return f"{what}: {counts['degenerate']} of {counts['n']} translations degenerate ({reasons}){example}{rests}"


__all__ = [
    "REASONS",
    "UNRELATED_CHRF",
    "UNRELATED_SHARE",
    "chrfpp_corpus_and_statistics",
    "chrfpp_scores",
    "chrfpp_scores_and_statistics",
    "degenerate_counts",
    "unrelated_lines",
    "degenerate_reasons",
    "describe",
    "in_script_fraction",
    "is_repetitive",
    "merge_counts",
    "target_script",
]
