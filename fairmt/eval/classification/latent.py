"""Latent-subgroup measures of an embedding space (Martin & Ogbuokiri); see :mod:`fairmt.eval.classification`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.eval.classification._arrays import METRICS_VERSION, Column, _as_1d


@dataclasses.dataclass
class LatentSubgroupResult:
    """Martin & Ogbuokiri's cluster-balance measures (fractions; entropy in bits, ``max_entropy`` = log2 C)."""

    n: int
    n_clusters: int
    cluster_sizes: list[int]
    cluster_dominance_ratio: float
    representation_entropy: float
    max_entropy: float
    subgroup_separation_distance: float
    signature: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dataclasses.asdict(self)


def latent_subgroup_metrics(
    embeddings: Any = None,
    *,
    cluster_labels: Column | None = None,
    cluster_sizes: Sequence[int] | None = None,
    n_clusters: int = 4,
    seed: int = 0,
) -> LatentSubgroupResult:
    """Martin & Ogbuokiri's latent-subgroup measures of an embedding space.

    Clusters: ``cluster_labels`` when given, else K-means (``n_clusters``, default K = 4 as the paper) on
    ``embeddings``. ``cluster_sizes`` alone gives the two size-based measures (separation distance is then ``nan``
    and flagged in the signature).

    * cluster dominance ratio = max_c N_c / N (lower = more balanced; 1/C is perfect balance);
    * representation entropy = −Σ_c p(c) log2 p(c), p(c) = N_c / N (bits; log2 C is uniform);
    * subgroup separation distance = mean over centroid pairs of ‖μ_c − μ_c'‖₂ (higher = more distinct).

    Empty clusters (a label value in ``range(C)`` with no member) count in C with N_c = 0 and have no centroid.
    """
    X = None if embeddings is None else np.asarray(embeddings, dtype=np.float64)
    if cluster_sizes is not None:
        sizes = np.asarray(cluster_sizes, dtype=np.int64)
        labels = None
    else:
        if X is None or X.ndim != 2 or len(X) == 0:
            raise FairmtError("latent_subgroup_metrics needs (n, d) embeddings, cluster labels or cluster sizes")
        if cluster_labels is None:
            from sklearn.cluster import KMeans

            if len(X) < n_clusters:
                raise FairmtError(f"K-means with K={n_clusters} needs at least {n_clusters} embeddings, got {len(X)}")
            labels = KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit_predict(X)
        else:
            labels = _as_1d(cluster_labels, "cluster_labels").astype(np.int64)
            if len(labels) != len(X):
                raise FairmtError(f"{len(labels)} cluster labels for {len(X)} embeddings")
            if labels.min() < 0:
                raise FairmtError("cluster labels must be non-negative integers")
        sizes = np.bincount(labels, minlength=n_clusters if cluster_labels is None else 0)
    if sizes.sum() <= 0 or np.any(sizes < 0):
        raise FairmtError(f"cluster sizes must be non-negative with a positive total, got {sizes.tolist()}")
    p = sizes / sizes.sum()
    nz = p[p > 0]
    entropy = float(-(nz * np.log2(nz)).sum())
    sep = math.nan
    if labels is not None and X is not None:
        cents = np.stack([X[labels == c].mean(axis=0) for c in range(len(sizes)) if sizes[c] > 0])
        if len(cents) >= 2:
            d = np.linalg.norm(cents[:, None, :] - cents[None, :, :], axis=-1)
            iu = np.triu_indices(len(cents), k=1)
            sep = float(d[iu].mean())
    return LatentSubgroupResult(
        n=int(sizes.sum()),
        n_clusters=len(sizes),
        cluster_sizes=[int(s) for s in sizes],
        cluster_dominance_ratio=float(p.max()),
        representation_entropy=entropy,
        max_entropy=float(math.log2(len(sizes))) if len(sizes) else 0.0,
        subgroup_separation_distance=sep,
        signature=f"fairmt-latent:v{METRICS_VERSION}|k:{len(sizes)}|entropy:bits|sep:euclid-centroid-mean"
        + ("|sizes-only" if labels is None else ""),
    )
