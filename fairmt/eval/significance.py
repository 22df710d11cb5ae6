"""Paired bootstrap resampling for two runs scored on the same items (sacrebleu's ``--paired-bs``: Koehn 2004, the
Moses ``bootstrap-hypothesis-difference-significance.pl``): the same ``n_samples`` resamples of the items, drawn with
replacement by a seeded NumPy generator, are scored for both runs; the result is the observed difference A − B, the
95 % interval of the resampled differences (2.5th and 97.5th percentiles) and sacrebleu's p-value (the share of
centred resampled |differences| reaching the observed one, +1 smoothed: ``sacrebleu.significance._compute_p_value``,
with ``>=`` where sacrebleu has ``>``, so that a run compared with itself gets p = 1, not 1 / (N + 1): fairmt's
convention, :data:`SELF_COMPARISON`). Two runs with identical per-item statistics differ by 0 on every resample
(interval [0, 0], p = 1, not distinguishable). A resample on which the measure is undefined (ΔG of a resample without
a female item) is left out of the interval and the p-value and counted (``n_undefined``); a measure undefined on all
the items is refused in one line, never an interval of NaN.

Each measure is a function of summed per-item sufficient statistics, so one resample costs one sum:

* :func:`paired_accuracy` — per item ``[correct, 1]``; accuracy = 100 · Σcorrect / n;
* :func:`paired_delta_g` — per item ``[correct·male, male, correct·female, female]``; ΔG = Acc_male − Acc_female, the
  GACL paper's "ΔG = Acc_male − Acc_female" (fairmt's one ΔG), resampled over items (WinoMT sentences, MT-GenEval
  pairs);
* :func:`paired_chrf` — sacrebleu's own chrF++ statistics (``CHRF(word_order=2)._extract_corpus_statistics``) and its
  score from summed statistics (``_compute_score_from_stats``), as ``sacrebleu --paired-bs`` computes it.

Result files carry what the test needs, per item, in compact text (:func:`flags_text`, :func:`stats_text`): a WinoMT
result's ``items`` holds ``correct`` (one ``0``/``1`` per sentence) and ``gold`` (one letter per sentence: ``m``,
``f``, ``n``); an MT-GenEval result's ``correct_masculine``/``correct_feminine``/``explicit_masculine``/
``explicit_feminine`` (one flag per pair) and ``chrf_stats`` (sacrebleu's 24 chrF++ statistics of each translation,
masculine ones first), a contextual-set result's ``correct`` and ``explicit`` (one flag per sentence); a FLORES-200
result's ``chrf_stats``. :func:`compare_items` tests two such blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from fairmt.errors import FairmtError

N_SAMPLES = 1000  # resamples of every paired bootstrap (`fairmt report --resamples`' default)
SEED = 12345  # sacrebleu's default SACREBLEU_SEED (`fairmt report --seed`'s default)
MAX_DRAWS = 400_000_000  # resamples × items of one bootstrap (3.2 GB of indices)
SELF_COMPARISON = (
    "p counts the resamples whose centred |difference| reaches the observed one with >= (sacrebleu "
    "counts >): a run against itself gets p = 1 here, 1/(N+1) in sacrebleu --paired-bs"
)
"""The p-value convention, said wherever a paired bootstrap's p-values are printed."""


@dataclass(frozen=True)
class PairedBootstrap:
    """A − B on the same items: observed difference, 95 % interval of the resampled differences, p-value."""

    measure: str
    a: float
    b: float
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    n_items: int
    n_samples: int
    seed: int
    n_undefined: int = 0  # resamples on which the measure is undefined (left out of the interval and the p-value)

    @property
    def significant(self) -> bool:
        """p < 0.05 (the interval then excludes 0 up to resampling noise)."""
        return self.p_value < 0.05

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "significant": self.significant,
            "method": f"paired bootstrap (sacrebleu --paired-bs style), {self.n_samples} resamples, seed "
            f"{self.seed}, 95% percentile interval",
        }


def resample_indices(n_items: int, n_samples: int = N_SAMPLES, seed: int = SEED) -> np.ndarray:
    """The ``(n_samples, n_items)`` item indices every paired measure resamples with (``numpy.random.default_rng``)."""
    if n_items < 1:
        raise FairmtError("a paired bootstrap needs at least one item")
    if n_samples < 1:
        raise FairmtError(f"n_samples must be at least 1, got {n_samples}")
    if n_samples * n_items > MAX_DRAWS:
        raise FairmtError(
            f"{n_samples} resamples of {n_items} items are {n_samples * n_items:,} draws, more than the "
            f"{MAX_DRAWS:,} one bootstrap holds in memory: ask for fewer resamples"
        )
    return np.random.default_rng(seed).choice(n_items, size=(n_samples, n_items), replace=True)


def paired_bootstrap(
    stats_a, stats_b, score: Callable[[np.ndarray], float], measure: str, n_samples: int = N_SAMPLES, seed: int = SEED
) -> PairedBootstrap:
    """The generic test: ``stats_a``/``stats_b`` hold per-item sufficient statistics (one row per item, the same
    items in the same order), ``score`` maps their column sums to the measure."""
    a, b = np.asarray(stats_a, dtype=np.float64), np.asarray(stats_b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise FairmtError(f"the two runs must be scored on the same items: got {a.shape[0]} and {b.shape[0]}")
    idx = resample_indices(len(a), n_samples, seed)
    sa, sb = score(a.sum(0)), score(b.sum(0))
    if not (np.isfinite(sa) and np.isfinite(sb)):
        raise FairmtError(
            f"{measure} is undefined on these {len(a)} items (e.g. no item of one gender), so it has no interval"
        )
    same = np.array_equal(a, b)  # a run against itself: every resampled difference is 0, by definition
    diffs = np.array([0.0 if same else score(a[i].sum(0)) - score(b[i].sum(0)) for i in idx])
    undefined = int(np.sum(~np.isfinite(diffs)))  # resamples without an item the measure needs (no female item)
    diffs = diffs[np.isfinite(diffs)]
    if len(diffs) == 0:
        raise FairmtError(
            f"{measure} is undefined on every resample of these {len(a)} items (too few items of a "
            "group), so it has no interval"
        )
    observed = sa - sb
    centred = np.abs(diffs) - np.abs(diffs).mean()
    p = (int(np.sum(centred >= abs(observed))) + 1) / (len(diffs) + 1)  # sacrebleu's, with >= (module docstring)
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return PairedBootstrap(
        measure,
        float(sa),
        float(sb),
        float(observed),
        float(lo),
        float(hi),
        float(p),
        len(a),
        n_samples,
        seed,
        undefined,
    )


def _rate(correct: float, total: float) -> float:
    return 100.0 * correct / total if total else float("nan")


def paired_accuracy(correct_a: Sequence[bool], correct_b: Sequence[bool], **kw) -> PairedBootstrap:
    """Accuracy (percent) of two runs on the same items, each item correct or not."""

    def stats(c):
        return [[float(bool(x)), 1.0] for x in c]

    return paired_bootstrap(stats(correct_a), stats(correct_b), lambda s: _rate(s[0], s[1]), "accuracy", **kw)


def paired_delta_g(
    correct_a: Sequence[bool], correct_b: Sequence[bool], gender: Sequence[str], **kw
) -> PairedBootstrap:
    """ΔG = Acc_male − Acc_female (percentage points) of two runs on the same items; ``gender``: each item's gold
    gender (``"male"``/``"female"``; others count in neither accuracy)."""
    if len(gender) != len(correct_a):
        raise FairmtError(f"{len(gender)} genders for {len(correct_a)} items")

    def stats(c):
        return [
            [float(bool(x) and g == "male"), float(g == "male"), float(bool(x) and g == "female"), float(g == "female")]
            for x, g in zip(c, gender)
        ]

    return paired_bootstrap(
        stats(correct_a), stats(correct_b), lambda s: _rate(s[0], s[1]) - _rate(s[2], s[3]), "delta_g", **kw
    )


def _chrf_score(metric):
    return lambda s: metric._compute_score_from_stats([int(x) for x in s]).score


def paired_chrf_stats(stats_a, stats_b, **kw) -> PairedBootstrap:
    """chrF++ of two systems from their per-sentence sacrebleu statistics (``CHRF(word_order=2)``'s 24 per line)."""
    from sacrebleu.metrics import CHRF

    return paired_bootstrap(stats_a, stats_b, _chrf_score(CHRF(word_order=2)), "chrf++", **kw)


def paired_chrf(
    hyps_a: Sequence[str], hyps_b: Sequence[str], refs: Sequence[str], *, normalize: bool = True, **kw
) -> PairedBootstrap:
    """chrF++ of two systems against one reference per sentence, by sacrebleu's own statistics and score.

    The text is read as the scorers read it: hypotheses and references pass through the Unicode normalisation of
    :func:`fairmt.data.text.normalize_text` first (``normalize=True``, what ``fairmt eval flores`` and ``eval
    geneval`` do), so two files the scorers score identically (e.g. one with no-break spaces, one with plain ones)
    are identical here too: difference 0, p = 1. ``normalize=False`` reads the text as it is (``--compat
    official``, the sacrebleu CLI's reading).

    Self-comparison convention: a system compared with itself (or with a copy that scores the same) gets p = 1 here
    (the p-value counts resampled differences ``>=`` the observed one); ``sacrebleu --paired-bs`` counts ``>`` and
    gives p = 1 / (N + 1), 0.001 at its 1,000 resamples, for the same input. The two agree for every observed
    difference that is not 0."""
    if not (len(hyps_a) == len(hyps_b) == len(refs)):
        raise FairmtError(
            f"chrF++ needs one hypothesis of each system per reference: {len(hyps_a)}, {len(hyps_b)}, {len(refs)}"
        )
    hyps_a, hyps_b, refs = list(hyps_a), list(hyps_b), list(refs)
    if normalize:
        from fairmt.data.text import normalize_many

        (hyps_a, _), (hyps_b, _), (refs, _) = normalize_many(hyps_a), normalize_many(hyps_b), normalize_many(refs)
    from fairmt.eval.degenerate import chrfpp_line_statistics

    sa = chrfpp_line_statistics(hyps_a, refs)  # the references' n-grams once for both systems
    sb = chrfpp_line_statistics(hyps_b, refs)
    return paired_chrf_stats(sa, sb, **kw)


# ------------------------------------------------------------------------------------------ per-item data in results
GENDER_LETTERS = {"male": "m", "female": "f", "neutral": "n", "unknown": "u"}


def flags_text(values) -> str:
    """One ``0``/``1`` per item (3,888 WinoMT sentences: 3,888 characters)."""
    return "".join("1" if v else "0" for v in values)


def genders_text(genders) -> str:
    """One letter per item's gold gender (:data:`GENDER_LETTERS`)."""
    return "".join(GENDER_LETTERS.get(getattr(g, "value", g), "u") for g in genders)


def stats_text(rows) -> str:
    """Per-item integer statistics: each item's numbers space-separated, items comma-separated."""
    return ",".join(" ".join(str(int(x)) for x in r) for r in rows)


def read_flags(text, what: str) -> list[bool]:
    if not isinstance(text, str) or set(text) - {"0", "1"}:
        raise FairmtError(f"{what} must be a string of 0 and 1 (one per item)")
    return [c == "1" for c in text]


def read_stats(text, what: str) -> np.ndarray:
    try:
        rows = [[int(x) for x in item.split()] for item in str(text).split(",")]
        arr = np.asarray(rows, dtype=np.int64)
    except ValueError:
        arr = None
    if not isinstance(text, str) or arr is None or arr.ndim != 2:
        raise FairmtError(
            f"{what} must hold the same count of integers per item (space-separated, items comma-separated)"
        )
    return arr


_LETTER_GENDER = {v: k for k, v in GENDER_LETTERS.items()}


def compare_items(kind: str, items_a: dict, items_b: dict, **kw) -> list[PairedBootstrap]:
    """The paired tests of two results' ``items`` blocks of one benchmark (``kind``: ``winomt``, ``geneval`` or
    ``flores``; the module docstring says what each holds): WinoMT accuracy and ΔG; MT-GenEval accuracy (a pair is
    right when both its translations are), explicit accuracy, ΔG (Acc_masculine − Acc_feminine over the pairs) and
    chrF++; FLORES-200 chrF++. Raises :class:`FairmtError` when the two were not scored on the same items."""

    def same_n(a, b, what):
        if len(a) != len(b):
            raise FairmtError(f"scored on different items ({len(a)} and {len(b)} {what})")

    out = []
    if kind == "winomt":
        if items_a.get("gold") != items_b.get("gold"):
            raise FairmtError("scored on different gold lines (their gold genders differ)")
        ca, cb = (
            read_flags(items_a.get("correct"), "items.correct"),
            read_flags(items_b.get("correct"), "items.correct"),
        )
        same_n(ca, cb, "sentences")
        gold = [_LETTER_GENDER.get(c, "unknown") for c in str(items_a.get("gold"))]
        same_n(ca, gold, "sentences and gold genders")
        out += [paired_accuracy(ca, cb, **kw), paired_delta_g(ca, cb, gold, **kw)]
    elif kind == "geneval" and "correct" in items_a:  # the contextual set: one translation per item
        for key, measure in (("correct", "accuracy"), ("explicit", "explicit_accuracy")):
            fa, fb = read_flags(items_a.get(key), f"items.{key}"), read_flags(items_b.get(key), f"items.{key}")
            same_n(fa, fb, "sentences")
            out.append(replace(paired_accuracy(fa, fb, **kw), measure=measure))
    elif kind == "geneval":
        flags = {}
        for side, items in (("a", items_a), ("b", items_b)):
            for key in ("correct_masculine", "correct_feminine", "explicit_masculine", "explicit_feminine"):
                flags[side, key] = read_flags(items.get(key), f"items.{key}")
        same_n(flags["a", "correct_masculine"], flags["b", "correct_masculine"], "pairs")

        def both(side, prefix):
            return [m and f for m, f in zip(flags[side, f"{prefix}_masculine"], flags[side, f"{prefix}_feminine"])]

        def per_pair(side):
            return [
                [float(m), float(f), 1.0]
                for m, f in zip(flags[side, "correct_masculine"], flags[side, "correct_feminine"])
            ]

        explicit = paired_accuracy(both("a", "explicit"), both("b", "explicit"), **kw)
        out += [
            paired_accuracy(both("a", "correct"), both("b", "correct"), **kw),
            replace(explicit, measure="explicit_accuracy"),
            paired_bootstrap(per_pair("a"), per_pair("b"), lambda s: 100.0 * (s[0] - s[1]) / s[2], "delta_g", **kw),
        ]
    if kind in ("geneval", "flores") and items_a.get("chrf_stats") and items_b.get("chrf_stats"):
        sa, sb = (
            read_stats(items_a["chrf_stats"], "items.chrf_stats"),
            read_stats(items_b["chrf_stats"], "items.chrf_stats"),
        )
        same_n(sa, sb, "translations")
        out.append(paired_chrf_stats(sa, sb, **kw))
    if kind not in ("winomt", "geneval", "flores"):
        raise FairmtError(f"no paired test for {kind!r}")
    return out


__all__ = [
    "GENDER_LETTERS",
    "N_SAMPLES",
    "SEED",
    "SELF_COMPARISON",
    "PairedBootstrap",
    "compare_items",
    "flags_text",
    "genders_text",
    "paired_accuracy",
    "paired_bootstrap",
    "paired_chrf",
    "paired_chrf_stats",
    "paired_delta_g",
    "read_flags",
    "read_stats",
    "resample_indices",
    "stats_text",
]
