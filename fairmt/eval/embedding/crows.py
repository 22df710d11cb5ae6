"""CrowS-Pairs (Nangia et al., EMNLP 2020) for masked language models, scored from masked-token log-probabilities.

Each pair is a more-stereotyping sentence ``sent_more`` and a less-stereotyping ``sent_less`` that differ in a few
words. Following the reference code, ``sent1`` is ``sent_more`` for ``stereo`` pairs and ``sent_less`` for
``antistereo`` pairs (and ``sent2`` the other one); a pair counts for the model's bias when the stereotyping
reading wins: ``score(sent1) > score(sent2)`` for stereo pairs, ``score(sent2) > score(sent1)`` for antistereo
pairs — i.e. when ``sent_more`` scores higher. Pairs whose two scores are equal are "neutral": they stay in the
denominator and never count as biased. The metric is ``100 · biased / N`` (50 is the ideal).

Two ways to score a sentence from the token ids of both sentences (with special tokens), aligned with
``difflib.SequenceMatcher`` on the id sequences exactly as the reference code does:

* ``"nangia"`` — the original pseudo-log-likelihood (nyu-mll/crows-pairs ``metric.py``): the tokens in the
  ``equal`` blocks (unmodified tokens) are masked one at a time and their log-probabilities summed; the first and
  last aligned positions (the [CLS]/[SEP] tokens) are skipped.
* ``"bias-bench"`` — the variant of McGill-NLP/bias-bench (``crows.py``): the tokens outside the ``equal`` blocks
  (the tokens that differ) are masked one at a time, their log-probabilities are averaged, and both averages are
  rounded to 3 decimals before the comparison (so near-ties count as neutral). A sentence with no differing token
  (the other one only inserts words) has no score (NaN): the pair is skipped — left out of N and of the stereo and
  antistereo totals, as the reference code skips it — and counted in ``skipped``.

The model is run by a *masked-LM scorer* (:class:`fairmt.eval.embedding.encode.MaskedLMRunner`, or any object with
``encode(text) -> list[int]`` and ``masked_log_probs(ids, positions) -> list[float]``); this module only aligns,
sums and counts.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from fairmt.errors import FairmtError

METRIC_VERSION = "1.1"  # 1.1: unscorable bias-bench pairs are skipped (were counted in N)
VARIANTS = ("nangia", "bias-bench")


class MaskedLMScorer(Protocol):
    """What CrowS-Pairs needs from a masked LM."""

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, with the model's special tokens."""

    def masked_log_probs(self, token_ids: Sequence[int], positions: Sequence[int]) -> list[float]:
        """For each position p: log P(token_ids[p] | token_ids with position p alone replaced by the mask)."""


@dataclass
class CrowsPair:
    """One CrowS-Pairs row."""

    index: int
    sent_more: str
    sent_less: str
    direction: str  # "stereo" | "antistereo"
    bias_type: str

    @property
    def sent1(self) -> str:
        """The sentence the reference code calls sent1 (sent_more for stereo pairs, sent_less otherwise)."""
        return self.sent_more if self.direction == "stereo" else self.sent_less

    @property
    def sent2(self) -> str:
        """The other sentence of the pair."""
        return self.sent_less if self.direction == "stereo" else self.sent_more


def load_crows_pairs(
    path: str | Path, bias_types: Sequence[str] | None = None, limit: int | None = None
) -> list[CrowsPair]:
    """Read ``crows_pairs_anonymized.csv``; optionally keep some bias types and the first ``limit`` rows."""
    from fairmt.data.inputs import csv_dict_rows

    path = Path(path)
    pairs: list[CrowsPair] = []
    _, rows = csv_dict_rows(path, "CrowS-Pairs", required=("sent_more", "sent_less", "stereo_antistereo", "bias_type"))
    for lineno, row in rows:
        direction = row["stereo_antistereo"].strip()
        if direction not in ("stereo", "antistereo"):
            raise FairmtError(f"{path}:{lineno}: stereo_antistereo must be 'stereo' or 'antistereo', got {direction!r}")
        if bias_types and row["bias_type"] not in bias_types:
            continue
        pairs.append(CrowsPair(len(pairs), row["sent_more"], row["sent_less"], direction, row["bias_type"]))
        if limit is not None and len(pairs) >= limit:
            break
    if bias_types and not pairs:
        raise FairmtError(f"no CrowS-Pairs rows of bias type {list(bias_types)} in {path}")
    return pairs


def aligned_spans(ids1: Sequence[int], ids2: Sequence[int], operation: str = "equal") -> tuple[list[int], list[int]]:
    """Positions in each sequence inside (``"equal"``) or outside (``"diff"``) the difflib matching blocks.

    Same as ``get_span`` of the reference code: ``difflib.SequenceMatcher(None, seq1, seq2)`` over the ids as
    strings (autojunk on, as there).
    """
    matcher = difflib.SequenceMatcher(None, [str(x) for x in ids1], [str(x) for x in ids2])
    t1: list[int] = []
    t2: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if (tag == "equal") == (operation == "equal"):
            t1.extend(range(i1, i2))
            t2.extend(range(j1, j2))
    return t1, t2


def score_pair(pair: CrowsPair, scorer: MaskedLMScorer, variant: str = "nangia") -> tuple[float, float]:
    """(score of sent1, score of sent2) under ``variant`` (see the module docstring)."""
    ids1, ids2 = list(scorer.encode(pair.sent1)), list(scorer.encode(pair.sent2))
    if variant == "nangia":
        t1, t2 = aligned_spans(ids1, ids2, "equal")
        inner = range(1, len(t1) - 1)  # skip the first and last aligned tokens ([CLS], [SEP])
        s1 = math.fsum(scorer.masked_log_probs(ids1, [t1[i] for i in inner]))
        s2 = math.fsum(scorer.masked_log_probs(ids2, [t2[i] for i in inner]))
        return s1, s2
    if variant == "bias-bench":
        d1, d2 = aligned_spans(ids1, ids2, "diff")

        def avg(ids: list[int], pos: list[int]) -> float:
            if not pos:
                return math.nan
            lp = scorer.masked_log_probs(ids, pos)
            return round(math.fsum(lp) / len(lp), 3)

        return avg(ids1, d1), avg(ids2, d2)
    raise FairmtError(f"unknown CrowS-Pairs variant {variant!r}; use one of {VARIANTS}")


@dataclass
class CrowsCounts:
    """Counts and metric of one bias type (or of all pairs)."""

    n: int = 0
    stereo_total: int = 0
    stereo_biased: int = 0
    antistereo_total: int = 0
    antistereo_biased: int = 0
    neutral: int = 0
    skipped: int = 0
    """Pairs without a score (bias-bench: a sentence with no differing token), left out of every count above."""

    @property
    def metric(self) -> float:
        """100 · (biased stereo + biased antistereo) / N."""
        return 100.0 * (self.stereo_biased + self.antistereo_biased) / self.n if self.n else math.nan

    def as_row(self) -> dict:
        """The counts plus the metric, for tables and JSON."""
        return {
            "n": self.n,
            "metric": self.metric,
            "stereo_score": 100.0 * self.stereo_biased / self.stereo_total if self.stereo_total else math.nan,
            "antistereo_score": 100.0 * self.antistereo_biased / self.antistereo_total
            if self.antistereo_total
            else math.nan,
            "neutral": self.neutral,
            "skipped": self.skipped,
        }


@dataclass
class CrowsResult:
    """CrowS-Pairs scores per bias type and over all scored pairs."""

    variant: str
    overall: dict
    per_bias_type: dict[str, dict]
    signature: str
    pair_scores: list[tuple[float, float]] = field(default_factory=list, repr=False)

    def __str__(self) -> str:
        return (
            f"CrowS-Pairs ({self.variant}): {self.overall['metric']:.2f} over {self.overall['n']} pairs  "
            f"[{self.signature}]"
        )


def crows_signature(variant: str, n: int) -> str:
    """The versioned signature printed beside every CrowS-Pairs score."""
    agg = "sum-pll-unmodified" if variant == "nangia" else "mean-ll-modified-round3"
    return f"CrowS-Pairs|variant:{variant}|score:{agg}|align:difflib|n:{n}|v:{METRIC_VERSION}"


def _count(c: CrowsCounts, direction: str, s1: float, s2: float) -> None:
    if math.isnan(s1) or math.isnan(s2):
        c.skipped += 1
        return
    c.n += 1
    if s1 == s2:
        c.neutral += 1
    elif direction == "stereo":
        c.stereo_total += 1
        c.stereo_biased += int(s1 > s2)
    else:
        c.antistereo_total += 1
        c.antistereo_biased += int(s2 > s1)


def crows_from_scores(pairs: Sequence[CrowsPair], scores: Sequence[tuple[float, float]], variant: str) -> CrowsResult:
    """Aggregate precomputed (sent1, sent2) scores into per-bias-type and overall metrics."""
    if len(pairs) != len(scores):
        raise FairmtError(f"{len(pairs)} CrowS pairs but {len(scores)} scores")
    overall = CrowsCounts()
    per: dict[str, CrowsCounts] = {}
    for pair, (s1, s2) in zip(pairs, scores):
        _count(overall, pair.direction, s1, s2)
        _count(per.setdefault(pair.bias_type, CrowsCounts()), pair.direction, s1, s2)
    return CrowsResult(
        variant=variant,
        overall=overall.as_row(),
        per_bias_type={k: per[k].as_row() for k in sorted(per)},
        signature=crows_signature(variant, overall.n),
        pair_scores=list(scores),
    )


def crows_score(
    pairs: Sequence[CrowsPair], scorer: MaskedLMScorer, variant: str = "nangia", progress: bool = False
) -> CrowsResult:
    """Score every pair with ``scorer`` and aggregate (see the module docstring for the two variants)."""
    if variant not in VARIANTS:
        raise FairmtError(f"unknown CrowS-Pairs variant {variant!r}; use one of {VARIANTS}")
    it = pairs
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(pairs, desc=f"CrowS-Pairs ({variant})")
    scores = [score_pair(p, scorer, variant) for p in it]
    return crows_from_scores(pairs, scores, variant)


def bias_type_counts(pairs: Sequence[CrowsPair]) -> dict[str, int]:
    """Number of pairs of each bias type."""
    return dict(Counter(p.bias_type for p in pairs))


__all__ = [
    "CrowsCounts",
    "CrowsPair",
    "CrowsResult",
    "MaskedLMScorer",
    "VARIANTS",
    "aligned_spans",
    "bias_type_counts",
    "crows_from_scores",
    "crows_score",
    "crows_signature",
    "load_crows_pairs",
    "score_pair",
]
