"""CCED: the content-conditional equal-distance gap of a text encoder on (neutral, group_1, …, group_k) tuples.

CCED fairness (the CCD paper, "LLM-Assisted Content Conditional Debiasing for Fair Text Embedding", Def. 3.1)
asks that texts of one content C written for different sensitive groups lie at equal L2 distance from the
embedding of the neutral text of that content: ‖f(S_C^{a_i}) − f(S_C^n)‖ = ‖f(S_C^{a_j}) − f(S_C^n)‖. The paper
measures the violation on held-out tuples as

    CCED gap = 1/N Σ_t | ‖f(S_t^{a_i}) − f(S_t^n)‖ − ‖f(S_t^{a_j}) − f(S_t^n)‖ |        (lower is fairer)

With more than two groups the per-tuple value is the mean over the unordered group pairs (i < j). The embeddings
are used as the runner gives them (``normalize=True`` L2-normalises them first, for encoders whose outputs are
not normalised and whose scale would otherwise dominate). Besides the gap, each group pair gets its mean signed
difference d_i − d_j (positive: group i lies farther from the neutral text).

Input: JSON lines ``{"neutral": str, "<group>": str, ...}`` (e.g. ``{"neutral", "male", "female"}``); the groups
are the string keys other than ``neutral``, ``id`` and ``source`` of the first line unless given, and every line
must have them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fairmt.data.jsonl import iter_jsonl
from fairmt.errors import FairmtError

METRIC_VERSION = "1.0"
RESERVED_KEYS = ("neutral", "id", "source")


@dataclass
class ContentTuple:
    """One content written neutrally and once per sensitive group."""

    neutral: str
    groups: dict[str, str]


def load_tuples(path: str | Path, groups: Sequence[str] | None = None) -> tuple[list[ContentTuple], list[str]]:
    """Read CCED tuples from JSON lines; returns the tuples and the group names (see the module docstring)."""
    path = Path(path)
    if not path.exists():
        raise FairmtError(f"CCED tuple file {path} not found")
    tuples: list[ContentTuple] = []
    group_list = list(groups) if groups else None
    for lineno, obj in iter_jsonl(path):
        if not isinstance(obj, dict) or not isinstance(obj.get("neutral"), str):
            raise FairmtError(f"{path}:{lineno}: expected an object with a string 'neutral' and one string per group")
        if group_list is None:
            group_list = [k for k, v in obj.items() if k not in RESERVED_KEYS and isinstance(v, str)]
            if len(group_list) < 2:
                raise FairmtError(
                    f"{path}:{lineno}: a CCED tuple needs at least two groups besides 'neutral', found {group_list}"
                )
        missing = [g for g in group_list if not isinstance(obj.get(g), str) or not obj[g].strip()]
        if missing:
            raise FairmtError(
                f"{path}:{lineno}: tuple lacks group(s) {missing} (expected {['neutral', *group_list]}); "
                "fix or drop the line"
            )
        tuples.append(ContentTuple(obj["neutral"], {g: obj[g] for g in group_list}))
    if not tuples:
        raise FairmtError(f"CCED tuple file {path} is empty")
    return tuples, list(group_list or [])


@dataclass
class CCEDResult:
    """CCED gap over N tuples, with per-group-pair absolute and signed mean distance differences."""

    gap: float
    n: int
    groups: list[str]
    mean_distance: dict[str, float]
    pair_gap: dict[str, float]
    pair_signed: dict[str, float]
    signature: str

    def __str__(self) -> str:
        return f"CCED gap {self.gap:.4f} over {self.n} tuples  [{self.signature}]"


def cced_signature(groups: Sequence[str], normalize: bool, pooling: str) -> str:
    """The versioned signature printed beside every CCED gap."""
    norm = "unit" if normalize else "none"
    return f"CCED|groups:{'+'.join(groups)}|dist:l2|norm:{norm}|pool:{pooling}|v:{METRIC_VERSION}"


def cced_gap(
    neutral: np.ndarray,
    group_embeddings: dict[str, np.ndarray],
    normalize: bool = False,
    pooling: str = "unknown",
) -> CCEDResult:
    """CCED gap from the neutral embeddings (N, d) and each group's embeddings (N, d), row t = tuple t."""
    groups = list(group_embeddings)
    if len(groups) < 2:
        raise FairmtError(f"CCED needs at least two groups, got {groups}")
    from fairmt.eval.validate import finite_array

    def prep(x: np.ndarray, name: str) -> np.ndarray:
        x = finite_array(x, f"CCED: the {name} embeddings")
        if not normalize:
            return x
        norm = np.linalg.norm(x, axis=-1, keepdims=True)
        if x.ndim == 2 and (norm == 0).any():
            raise FairmtError(
                f"CCED: the {name} embedding of tuple {int(np.argwhere(norm[:, 0] == 0)[0][0])} is a zero "
                "vector: it cannot be L2-normalised (normalize / --cced-normalize)"
            )
        return x / norm

    n = prep(neutral, "neutral")
    dist = {}
    for g in groups:
        e = prep(group_embeddings[g], g)
        if e.shape != n.shape:
            raise FairmtError(f"CCED: embeddings of group {g} have shape {e.shape}, neutral ones {n.shape}")
        dist[g] = np.linalg.norm(e - n, axis=-1)
    pairs = list(itertools.combinations(groups, 2))
    diffs = {f"{a}-{b}": dist[a] - dist[b] for a, b in pairs}
    per_tuple = np.mean(np.abs(np.stack(list(diffs.values()))), axis=0)
    return CCEDResult(
        gap=float(per_tuple.mean()),
        n=int(n.shape[0]),
        groups=groups,
        mean_distance={g: float(d.mean()) for g, d in dist.items()},
        pair_gap={k: float(np.abs(v).mean()) for k, v in diffs.items()},
        pair_signed={k: float(v.mean()) for k, v in diffs.items()},
        signature=cced_signature(groups, normalize, pooling),
    )


def cced_score(
    tuples: Sequence[ContentTuple], groups: Sequence[str], encode, normalize: bool = False, pooling: str = "unknown"
) -> CCEDResult:
    """Encode the tuples with ``encode(list[str]) -> (n, d) array`` and compute the CCED gap."""
    neutral = np.asarray(encode([t.neutral for t in tuples]))
    embs = {g: np.asarray(encode([t.groups[g] for t in tuples])) for g in groups}
    return cced_gap(neutral, embs, normalize=normalize, pooling=pooling)


__all__ = ["CCEDResult", "ContentTuple", "cced_gap", "cced_score", "cced_signature", "load_tuples"]
