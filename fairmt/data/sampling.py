"""Algorithm 1 of fairness-driven sampling (Martin & Ogbuokiri) over a whole training set: latent subgroups, an index
of every embedding, and a batch sampler that hands the Trainer anchors with their positives and negatives.

* :func:`fit_latent_subgroups` — K-means (scikit-learn; K = 4 in the paper) fitted **once** on the embeddings of the
  whole set; ``p(c) = N_c / N`` over that set. :class:`LatentSubgroups` saves and reloads the fit (K, seed, labels,
  centroids, sizes).
* :class:`PairIndex` — the set ``Z`` (one vector space: the L2-normalised embeddings the clusters were assigned in),
  its cluster labels ``C`` and ``p(c)``:

  - positive of sample ``i`` = its nearest same-cluster neighbour over all of ``Z`` (Euclidean; Algorithm 1 lines
    5–7), precomputed for every sample with scikit-learn's ``NearestNeighbors`` (one index per cluster) each time
    ``Z`` is refreshed; a sample alone in its cluster has none (``-1``) and is never an anchor;
  - negatives = :class:`fairmt.losses.FairNegativeSampler` over all of ``Z`` (lines 9–14: another cluster with
    weight ``max(0, 1/C − p(c)) + ε``, then a member with probability ∝ its distance).

* :class:`FairPairBatchSampler` — a ``torch.utils.data`` batch sampler: each epoch is a permutation of the eligible
  anchors; each batch is the index list ``[anchors (N) | their positives (N) | their negatives (N·m)]`` (negatives
  anchor-major), so the DataLoader's workers decode and collate all three and the Trainer encodes them in one
  forward. Pairs are drawn when the batch is requested — in the main process, with the index as it is then (a
  DataLoader with workers requests a few batches ahead, so a refresh of ``Z`` reaches the pairs a few batches later).
* :class:`IndexedDataset` / :class:`IndexedCollator` — carry each row's position in the training set
  (``sample_index``) into the batch.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError


@dataclass
class LatentSubgroups:
    """A K-means fit of a training set's embeddings: ``labels[i]`` is sample ``i``'s cluster."""

    labels: np.ndarray
    centroids: np.ndarray
    n_clusters: int
    seed: int
    n_init: int = 10
    inertia: float = math.nan
    space: str = ""

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.labels, minlength=self.n_clusters)

    @property
    def probs(self) -> np.ndarray:
        """``p(c) = N_c / N`` over the whole set."""
        sizes = self.sizes
        return sizes / max(int(sizes.sum()), 1)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description (no per-sample labels)."""
        return {
            "n": int(len(self.labels)),
            "n_clusters": self.n_clusters,
            "seed": self.seed,
            "n_init": self.n_init,
            "cluster_sizes": self.sizes.tolist(),
            "p": [round(float(x), 6) for x in self.probs],
            "inertia": float(self.inertia),
            "space": self.space,
        }

    def save(self, folder: str | Path) -> None:
        """``clusters.json`` (summary and centroids) and ``cluster_labels.npy`` in ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        from fairmt.outputs import write_file, writing

        with writing(folder / "cluster_labels.npy", what="the cluster labels", binary=True) as fh:
            np.save(fh, self.labels.astype(np.int64))
        data = {**self.summary(), "centroids": self.centroids.tolist()}
        write_file(folder / "clusters.json", json.dumps(data, indent=2) + "\n", what="the clusters")

    @classmethod
    def load(cls, folder: str | Path) -> LatentSubgroups:
        folder = Path(folder)
        try:
            data = json.loads((folder / "clusters.json").read_text(encoding="utf-8"))
            labels = np.load(folder / "cluster_labels.npy")
        except (OSError, ValueError) as err:
            raise FairmtError(f"cannot read the latent subgroups saved in {folder}: {err}") from None
        return cls(
            labels=labels,
            centroids=np.asarray(data["centroids"], dtype=np.float32),
            n_clusters=int(data["n_clusters"]),
            seed=int(data["seed"]),
            n_init=int(data.get("n_init", 10)),
            inertia=float(data.get("inertia", math.nan)),
            space=data.get("space", ""),
        )


def fit_latent_subgroups(
    embeddings: np.ndarray, n_clusters: int = 4, seed: int = 0, n_init: int = 10, space: str = ""
) -> LatentSubgroups:
    """K-means (scikit-learn, ``random_state=seed``) on every row of ``embeddings`` — the paper's latent subgroup
    discovery (K = 4 on the baseline SimCLR embeddings)."""
    from sklearn.cluster import KMeans

    X = np.asarray(embeddings, dtype=np.float32)
    if X.ndim != 2 or len(X) < n_clusters:
        raise FairmtError(
            f"K-means with K={n_clusters} needs at least {n_clusters} embeddings (an (n, d) array), got shape {X.shape}"
        )
    if n_clusters < 2:
        raise FairmtError(f"n_clusters must be >= 2, got {n_clusters}")
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed).fit(X)
    return LatentSubgroups(
        labels=km.labels_.astype(np.int64),
        centroids=km.cluster_centers_.astype(np.float32),
        n_clusters=n_clusters,
        seed=seed,
        n_init=n_init,
        inertia=float(km.inertia_),
        space=space,
    )


def nearest_same_cluster(embeddings: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """For every row, the index of its nearest (Euclidean) *other* row with the same label, over the whole array;
    ``-1`` for a row alone in its cluster. One scikit-learn ``NearestNeighbors`` index per cluster."""
    from sklearn.neighbors import NearestNeighbors

    Z = np.asarray(embeddings, dtype=np.float32)
    labels = np.asarray(labels).reshape(-1)
    out = np.full(len(Z), -1, dtype=np.int64)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        if len(members) < 2:
            continue
        nn = NearestNeighbors(n_neighbors=1).fit(Z[members])
        # without a query, scikit-learn returns each indexed point's nearest neighbour other than itself
        _, ind = nn.kneighbors()
        out[members] = members[ind[:, 0]]
    return out


class PairIndex:
    """``Z``, its latent subgroups and Algorithm 1's pair construction over all of it (see the module docstring).

    Args:
        embeddings: ``(M, d)`` — the vector space of cluster assignment, positives and negatives (the trainer passes
            L2-normalised projections).
        labels: ``(M,)`` cluster of every sample.
        n_clusters: ``C`` (clusters may be empty); default ``labels.max() + 1``.
        cluster_probs: ``p(c)``; default the label shares of this set.
        epsilon: ε of ``w(c)``.
        draw: the reading of Algorithm 1 line 13 the negatives are drawn by (``two_stage`` or ``product``,
            :class:`fairmt.losses.FairNegativeSampler`).
    """

    def __init__(
        self,
        embeddings: np.ndarray,
        labels: np.ndarray,
        n_clusters: int | None = None,
        cluster_probs: Sequence[float] | None = None,
        epsilon: float = 0.1,
        draw: str = "two_stage",
    ):
        self.epsilon = epsilon
        self.draw = draw
        self.version = 0
        self.update(embeddings, labels, n_clusters, cluster_probs)

    def update(
        self,
        embeddings: np.ndarray,
        labels: np.ndarray | None = None,
        n_clusters: int | None = None,
        cluster_probs: Sequence[float] | None = None,
    ) -> None:
        """Replace ``Z`` (and, when given, the labels / ``p(c)``); recompute every positive."""
        import torch

        from fairmt.losses import FairNegativeSampler

        Z = np.ascontiguousarray(np.asarray(embeddings, dtype=np.float32))
        if labels is None:
            labels = self.labels
        labels = np.asarray(labels, dtype=np.int64).reshape(-1)
        if Z.ndim != 2 or len(Z) != len(labels):
            raise FairmtError(f"{len(labels)} cluster labels for embeddings of shape {Z.shape}")
        k = int(n_clusters or getattr(self, "n_clusters", 0) or (labels.max() + 1))
        if cluster_probs is None:
            cluster_probs = np.bincount(labels, minlength=k) / len(labels)
        self.Z, self.labels, self.n_clusters = Z, labels, k
        self.cluster_probs = np.asarray(cluster_probs, dtype=np.float64)
        self.positives = nearest_same_cluster(Z, labels)
        self.eligible = np.flatnonzero(self.positives >= 0)
        if len(self.eligible) == 0:
            raise FairmtError("no sample has a same-cluster neighbour: every latent subgroup holds one sample")
        self._sampler = FairNegativeSampler(
            torch.from_numpy(Z),
            torch.from_numpy(labels),
            torch.from_numpy(self.cluster_probs),
            self.epsilon,
            draw=self.draw,
        )
        self.version += 1

    def __len__(self) -> int:
        return len(self.Z)

    def negatives(self, anchors: np.ndarray, num_negatives: int = 1, generator=None) -> np.ndarray:
        """``(len(anchors), num_negatives)`` negatives drawn for the anchors (indices into ``Z``)."""
        import torch

        a = torch.as_tensor(np.asarray(anchors, dtype=np.int64))
        z = torch.from_numpy(self.Z)[a]
        return self._sampler.sample(z, torch.from_numpy(self.labels)[a], num_negatives, generator).numpy()


class FairPairBatchSampler:
    """Batches ``[anchors | positives | negatives]`` of dataset indices for the DataLoader (``batch_sampler=``).

    ``with_negatives=False`` yields ``[anchors | positives]`` only (negatives then come from the index's stored
    embeddings, drawn by the Trainer). Each epoch shuffles the eligible anchors with ``seed + epoch``; negatives are
    drawn with a torch generator seeded by ``seed`` (every process of a distributed run draws the same sequence and
    accelerate hands each one every k-th batch). ``batch_size`` is ``None`` — a yielded list is longer than the
    number of anchors, ``anchors_per_batch`` — which is how accelerate's batch-sampler sharding is told so.
    """

    def __init__(
        self,
        index: PairIndex,
        batch_size: int,
        num_negatives: int = 1,
        drop_last: bool = False,
        seed: int = 0,
        with_negatives: bool = True,
    ):
        import torch

        if batch_size < 1:
            raise FairmtError(f"batch_size must be >= 1, got {batch_size}")
        self.index, self.anchors_per_batch, self.num_negatives = index, batch_size, num_negatives
        self.batch_size = None
        self.drop_last, self.seed, self.with_negatives = drop_last, seed, with_negatives
        self.epoch = 0
        self.generator = torch.Generator().manual_seed(seed)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        n, b = len(self.index.eligible), self.anchors_per_batch
        return n // b if self.drop_last else math.ceil(n / b)

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng(self.seed + self.epoch)
        self.epoch += 1
        perm = rng.permutation(self.index.eligible)
        for s in range(0, len(perm), self.anchors_per_batch):
            anchors = perm[s : s + self.anchors_per_batch]
            if len(anchors) < self.anchors_per_batch and self.drop_last:
                break
            batch = [*anchors.tolist(), *self.index.positives[anchors].tolist()]
            if self.with_negatives:
                batch += self.index.negatives(anchors, self.num_negatives, self.generator).reshape(-1).tolist()
            yield batch


class IndexedDataset:
    """A dataset whose rows also carry ``sample_index`` (their position), for :class:`IndexedCollator`."""

    def __init__(self, dataset: Any):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {**self.dataset[int(i)], "sample_index": int(i)}


class IndexedCollator:
    """Wraps a collator: rows' ``sample_index`` becomes a ``(B,)`` long tensor of the batch; the rest goes to
    ``collator``."""

    def __init__(self, collator: Callable[[list[dict[str, Any]]], dict[str, Any]]):
        self.collator = collator

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        index = [f.get("sample_index", -1) for f in features]
        batch = dict(self.collator([{k: v for k, v in f.items() if k != "sample_index"} for f in features]))
        batch["sample_index"] = torch.tensor(index, dtype=torch.long)
        return batch
