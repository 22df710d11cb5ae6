"""SEAT: the Sentence Encoder Association Test (May et al., NAACL 2019), on precomputed embeddings.

A SEAT test has two target sets X, Y (e.g. male / female names) and two attribute sets A, B (e.g. career /
family). With cos the cosine similarity:

    s(w, A, B) = mean_{a∈A} cos(w, a) − mean_{b∈B} cos(w, b)
    effect size d = (mean_{x∈X} s(x,A,B) − mean_{y∈Y} s(y,A,B)) / std_{w∈X∪Y} s(w,A,B)       (std with ddof=1)
    test statistic S(X, Y) = Σ_{x∈X} s(x,A,B) − Σ_{y∈Y} s(y,A,B)
    p = P_{(Xi,Yi)}[ S(Xi, Yi) ≥ S(X, Y) ]   over the equal-size re-splits (Xi, Yi) of X ∪ Y   (one-sided)

This follows the reference implementation of W4ngatang/sent-bias (``weat.py``), which bias-bench reuses:
the p-value is exact (all C(|X|+|Y|, |X|) splits enumerated) when that number is at most ``n_samples``,
otherwise ``n_samples − 1`` random splits are drawn (seeded) and the observed split is counted once, so that a
sampled p-value is never 0 ("biasing by 1", as sent-bias does). Ties count as "≥" (the conservative test);
statistics within 1e-12 (relative) of the observed one are treated as ties so that the observed split itself
is counted whatever the float summation order.

The test files are ``sent-weat{6,6b,7,7b,8,8b}.jsonl`` (and the word-level ``weat*.jsonl``): one JSON object
``{"targ1": {"category", "examples"}, "targ2": …, "attr1": …, "attr2": …}``. The model is run by
:mod:`fairmt.eval.embedding.encode`; this module only sees arrays.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fairmt._deprecated import moved_names
from fairmt.errors import FairmtError

METRIC_VERSION = "1.0"
SETS = ("targ1", "targ2", "attr1", "attr2")
#: The SEAT gender tests the CCD paper reports (Table 2/3), in its column order.
GENDER_TESTS = ("6", "6b", "7", "7b", "8", "8b")
SEAT_N_SAMPLES = 100_000
"""The one default of SEAT's permutation count (``seat_n_samples``: the recipe key, ``fairmt eval embeddings
--seat-n-samples``, :func:`fairmt.evaluate_embeddings` and :class:`fairmt.integrations.SEATEvaluator`): sampled splits
when the exact test has more. 100,000 is the SEAT paper's reference code's default (sent-bias ``main.py
--n_samples``); the CCD paper reports effect sizes only (the count changes p-values, never d). It costs about 2 s for
the six gender tests on one core (10,000: 0.3 s), little beside encoding their sentences."""


@dataclass
class SeatTest:
    """One SEAT test: the example sentences of its four sets and their category names."""

    name: str
    targ1: list[str]
    targ2: list[str]
    attr1: list[str]
    attr2: list[str]
    categories: dict[str, str] = field(default_factory=dict)

    def texts(self) -> list[str]:
        """All example texts, deduplicated, in order of first appearance (what the runner has to encode)."""
        return list(dict.fromkeys(self.targ1 + self.targ2 + self.attr1 + self.attr2))


def load_seat_test(path: str | Path, name: str | None = None) -> SeatTest:
    """Read a SEAT/WEAT test file (one JSON object with ``targ1``, ``targ2``, ``attr1``, ``attr2``).

    Raises :class:`FairmtError` naming the file and the set when a set is missing, empty or malformed.
    """
    from fairmt.data.inputs import read_json

    path = Path(path)
    data = read_json(path, "SEAT test")
    if not isinstance(data, dict):
        raise FairmtError(f"SEAT file {path}: expected a JSON object with keys {SETS}, got {type(data).__name__}")
    missing = [s for s in SETS if s not in data]
    if missing:
        raise FairmtError(
            f"SEAT file {path} lacks the set(s) {', '.join(missing)}; a SEAT test needs targ1, targ2, attr1 and "
            "attr2, each {'category': NAME, 'examples': [texts]}"
        )
    sets: dict[str, list[str]] = {}
    cats: dict[str, str] = {}
    for s in SETS:
        entry = data[s]
        examples = entry.get("examples") if isinstance(entry, dict) else None
        if not isinstance(examples, list) or not examples or not all(isinstance(e, str) for e in examples):
            raise FairmtError(
                f"SEAT file {path}: set {s} must be an object with a non-empty list of strings under 'examples'"
            )
        sets[s] = list(examples)
        cats[s] = str(entry.get("category", s))
    if name is None:
        name = path.name.split(".")[0].replace("sent-weat", "").replace("weat", "")
    return SeatTest(name=name, categories=cats, **sets)


def seat_test_path(root: str | Path, test: str, sentence_level: bool = True) -> Path:
    """The file of SEAT test ``test`` ("6", "7b", ...) under ``root`` (the ``embedding_bias/seat`` folder)."""
    return Path(root) / (f"sent-weat{test}.jsonl" if sentence_level else f"weat{test}.jsonl")


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise FairmtError(f"SEAT expects a 2-D array of embeddings (n, dim), got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise FairmtError("SEAT: an embedding is the zero vector, its cosine similarity is undefined")
    return x / norms


def association(W: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """s(w, A, B) for every row w of W: mean cosine to A minus mean cosine to B."""
    W, A, B = _unit(W), _unit(A), _unit(B)
    return (W @ A.T).mean(axis=1) - (W @ B.T).mean(axis=1)


def effect_size(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    """Cohen's-d-like SEAT effect size; the denominator is the sample std (ddof=1) of s(w,A,B) over X ∪ Y."""
    sx, sy = association(X, A, B), association(Y, A, B)
    return float((sx.mean() - sy.mean()) / np.concatenate([sx, sy]).std(ddof=1))


def _split_stats(s_all: np.ndarray, idx_x: np.ndarray) -> np.ndarray:
    """S(Xi, Yi) for each row of ``idx_x`` (indices into ``s_all`` forming Xi; Yi is the complement)."""
    total = s_all.sum()
    sum_x = s_all[idx_x].sum(axis=1)
    return sum_x - (total - sum_x)


def permutation_p_value(
    X: np.ndarray,
    Y: np.ndarray,
    A: np.ndarray,
    B: np.ndarray,
    n_samples: int = SEAT_N_SAMPLES,
    seed: int = 0,
    chunk: int = 10_000,
) -> tuple[float, str, int]:
    """One-sided permutation p-value of S(X, Y); returns ``(p, "exact"|"sampled", number of splits used)``.

    Exact over all C(|X|+|Y|, |X|) splits when that is ≤ ``n_samples``; otherwise ``n_samples`` splits
    (the observed one plus ``n_samples − 1`` uniform random ones from ``numpy.random.default_rng(seed)``).
    """
    s_all = np.concatenate([association(X, A, B), association(Y, A, B)])
    n, k = len(s_all), len(X)
    observed = _split_stats(s_all, np.arange(k)[None, :])[0]
    tol = 1e-12 * max(1.0, float(np.abs(s_all).sum()))
    n_splits = math.comb(n, k)
    hits = 0
    if n_splits <= n_samples:
        combos = itertools.combinations(range(n), k)
        done = 0
        while done < n_splits:
            take = min(chunk, n_splits - done)
            idx = np.fromiter(
                itertools.chain.from_iterable(itertools.islice(combos, take)), dtype=np.int64, count=take * k
            )
            hits += int(np.count_nonzero(_split_stats(s_all, idx.reshape(take, k)) >= observed - tol))
            done += take
        return hits / n_splits, "exact", n_splits
    rng = np.random.default_rng(seed)
    hits, drawn = 1, 1  # the observed split, counted once (sent-bias's bias-by-one)
    base = np.broadcast_to(np.arange(n), (chunk, n))
    while drawn < n_samples:
        take = min(chunk, n_samples - drawn)
        perms = rng.permuted(base[:take], axis=1)
        hits += int(np.count_nonzero(_split_stats(s_all, perms[:, :k]) >= observed - tol))
        drawn += take
    return hits / n_samples, "sampled", n_samples


@dataclass
class SeatResult:
    """Effect size and p-value of one SEAT test, with the sizes of the sets and a versioned signature."""

    test: str
    effect_size: float
    p_value: float
    p_method: str
    n_splits: int
    sizes: dict[str, int]
    categories: dict[str, str]
    signature: str

    def __str__(self) -> str:
        return f"SEAT-{self.test}: d={self.effect_size:+.3f} p={self.p_value:.4g}  [{self.signature}]"


def seat_signature(pooling: str, p_method: str, n_samples: int, seed: int) -> str:
    """The versioned signature printed beside every SEAT score."""
    perm = "exact" if p_method == "exact" else f"sampled:{n_samples}:seed{seed}"
    return f"SEAT|pool:{pooling}|cos|std:ddof1|p:one-sided:{perm}|v:{METRIC_VERSION}"


def seat_score(
    test: SeatTest,
    embeddings: dict[str, np.ndarray] | Callable[[Sequence[str]], np.ndarray],
    pooling: str = "unknown",
    n_samples: int = SEAT_N_SAMPLES,
    seed: int = 0,
) -> SeatResult:
    """Score one SEAT test given the embedding of each example (a ``{text: vector}`` map or an encode function).

    ``pooling`` is only recorded in the signature (the runner decides how sentences become vectors).
    """
    if callable(embeddings):
        texts = test.texts()
        vecs = np.asarray(embeddings(texts))
        embeddings = dict(zip(texts, vecs))
    arrays = {}
    for s in SETS:
        try:
            arrays[s] = np.stack([np.asarray(embeddings[t]) for t in getattr(test, s)])
        except KeyError as err:
            raise FairmtError(f"SEAT test {test.name}: no embedding for {err.args[0]!r} of set {s}") from None
    X, Y, A, B = (arrays[s] for s in SETS)
    d = effect_size(X, Y, A, B)
    p, method, n_splits = permutation_p_value(X, Y, A, B, n_samples=n_samples, seed=seed)
    return SeatResult(
        test=test.name,
        effect_size=d,
        p_value=p,
        p_method=method,
        n_splits=n_splits,
        sizes={s: len(getattr(test, s)) for s in SETS},
        categories=dict(test.categories),
        signature=seat_signature(pooling, method, n_samples, seed),
    )


def seat_n_samples_of(seat_n_samples: int | None, n_samples: int | None, where: str) -> int:
    """The SEAT permutation count a caller gave: ``seat_n_samples``, or the deprecated keyword ``n_samples`` of
    ``where`` (warned, until fairmt 0.2), else :data:`SEAT_N_SAMPLES`; both given with different values: refused."""
    if n_samples is None:
        return SEAT_N_SAMPLES if seat_n_samples is None else int(seat_n_samples)
    from fairmt._deprecated import renamed_option

    mapped = int(
        renamed_option(f"{where}(n_samples=...)", "seat_n_samples", n_samples, {n_samples: n_samples}, stacklevel=3)
    )
    if seat_n_samples is not None and int(seat_n_samples) != mapped:
        raise FairmtError(
            f"{where}: n_samples={n_samples} and seat_n_samples={seat_n_samples} differ: give seat_n_samples only"
        )
    return mapped


__all__ = [
    "GENDER_TESTS",
    "SEAT_N_SAMPLES",
    "SeatResult",
    "SeatTest",
    "association",
    "effect_size",
    "load_seat_test",
    "permutation_p_value",
    "seat_n_samples_of",
    "seat_score",
    "seat_signature",
    "seat_test_path",
]


__getattr__ = moved_names(__name__, {"DEFAULT_N_SAMPLES": f"{__name__}:SEAT_N_SAMPLES"})  # the old name, until 0.2
