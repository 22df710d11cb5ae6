"""Algorithm 1 over a whole training set: positives against brute force, the batch sampler's layout and its
negatives counted over many batches, the K-means fit saved and reloaded."""

import math

import numpy as np
import pytest

from fairmt.data.sampling import (
    FairPairBatchSampler,
    IndexedCollator,
    IndexedDataset,
    LatentSubgroups,
    PairIndex,
    fit_latent_subgroups,
    nearest_same_cluster,
)
from fairmt.errors import FairmtError


def brute_nearest(Z, labels, i):
    """Every distance from row i, in float64; the smallest among the other rows of its cluster."""
    d = np.sqrt(((Z.astype(np.float64) - Z[i].astype(np.float64)) ** 2).sum(axis=1))
    d[(labels != labels[i]) | (np.arange(len(Z)) == i)] = math.inf
    j = int(np.argmin(d))
    return (j, float(d[j])) if math.isfinite(d[j]) else (-1, math.inf)


def _data(n=150, d=6, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d)).astype(np.float32)
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    labels = rng.choice(4, size=n, p=[0.55, 0.25, 0.15, 0.05])
    return Z, labels


def test_positive_is_the_true_nearest_same_cluster_neighbour_over_the_whole_set():
    Z, labels = _data()
    Z[7] = Z[3]  # an exact duplicate
    labels[7] = labels[3]
    labels[149] = 3
    labels[labels == 3] = 2
    labels[149] = 3  # a singleton cluster: no positive
    pos = nearest_same_cluster(Z, labels)
    for i in range(len(Z)):
        want, want_d = brute_nearest(Z, labels, i)
        if want < 0:
            assert pos[i] == -1
            continue
        assert pos[i] != i and labels[pos[i]] == labels[i]
        got_d = float(np.sqrt(((Z[i].astype(np.float64) - Z[pos[i]]) ** 2).sum()))
        assert got_d == pytest.approx(want_d, abs=1e-6), i  # ties may pick either, distances must agree
    assert pos[3] == 7 and pos[7] == 3
    index = PairIndex(Z, labels)
    assert 149 not in set(index.eligible.tolist()) and len(index.eligible) == len(Z) - 1


def test_batch_sampler_layout_positives_and_one_negative_per_anchor_from_other_clusters():
    Z, labels = _data()
    index = PairIndex(Z, labels, n_clusters=4, epsilon=0.1)
    sampler = FairPairBatchSampler(index, batch_size=16, num_negatives=1, seed=3)
    batches = list(sampler)
    assert len(batches) == len(sampler) == math.ceil(len(index.eligible) / 16)
    seen = []
    for b in batches:
        n = len(b) // 3
        assert len(b) == 3 * n
        anchors, positives, negatives = b[:n], b[n : 2 * n], b[2 * n :]
        for a, p, q in zip(anchors, positives, negatives):
            assert p == brute_nearest(Z, labels, a)[0] or np.isclose(
                np.linalg.norm(Z[a] - Z[p]), brute_nearest(Z, labels, a)[1], atol=1e-6
            )
            assert labels[q] != labels[a]
        seen += anchors
    assert sorted(seen) == sorted(index.eligible.tolist())  # one epoch = every eligible anchor once
    again = list(FairPairBatchSampler(index, batch_size=16, num_negatives=1, seed=3))
    assert again == batches  # reproducible from the seed
    two = next(iter(FairPairBatchSampler(index, batch_size=16, num_negatives=2, seed=3)))
    assert len(two) == 16 * 4
    no_neg = next(iter(FairPairBatchSampler(index, batch_size=16, seed=3, with_negatives=False)))
    assert len(no_neg) == 32


def test_negatives_over_many_batches_follow_the_published_cluster_weights():
    """Counting the negatives the batch sampler hands out for anchors of each cluster over many epochs: their cluster
    shares are w(c) / Σ_{c'≠c_i} w(c'), w(c) = max(0, 1/4 − p(c)) + 0.1, within binomial tolerance."""
    Z, labels = _data(n=120, seed=1)
    index = PairIndex(Z, labels, n_clusters=4, epsilon=0.1)
    p = np.bincount(labels, minlength=4) / len(labels)
    w = np.maximum(0, 0.25 - p) + 0.1
    sampler = FairPairBatchSampler(index, batch_size=40, num_negatives=1, seed=0)
    counts = np.zeros((4, 4))
    for _ in range(150):
        for b in sampler:
            n = len(b) // 3
            for a, q in zip(b[:n], b[2 * n :]):
                counts[labels[a], labels[q]] += 1
    worst = 0.0
    for ca in range(4):
        total = counts[ca].sum()
        others = [c for c in range(4) if c != ca]
        assert counts[ca, ca] == 0
        for c in others:
            expect = w[c] / w[others].sum()
            worst = max(worst, abs(counts[ca, c] - total * expect) / math.sqrt(total * expect * (1 - expect)))
    assert worst < 4.5, worst


def test_index_update_and_latent_subgroups_round_trip(tmp_path):
    Z, labels = _data(n=80)
    index = PairIndex(Z, labels)
    v = index.version
    Z2 = Z[::-1].copy()
    index.update(Z2)  # same labels, new Z: positives recomputed in the new space
    assert index.version == v + 1
    for i in range(0, 80, 9):
        assert np.isclose(np.linalg.norm(Z2[i] - Z2[index.positives[i]]), brute_nearest(Z2, labels, i)[1], atol=1e-6)
    sub = fit_latent_subgroups(Z, n_clusters=4, seed=2, n_init=3, space="test")
    assert np.array_equal(sub.labels, fit_latent_subgroups(Z, n_clusters=4, seed=2, n_init=3).labels)
    assert sub.probs.sum() == pytest.approx(1.0) and sub.sizes.sum() == 80
    sub.save(tmp_path / "c")
    back = LatentSubgroups.load(tmp_path / "c")
    assert np.array_equal(back.labels, sub.labels) and back.seed == 2 and back.n_clusters == 4
    assert np.allclose(back.centroids, sub.centroids)
    with pytest.raises(FairmtError, match="cannot read"):
        LatentSubgroups.load(tmp_path / "nothing")
    with pytest.raises(FairmtError, match="at least 4"):
        fit_latent_subgroups(Z[:3], n_clusters=4)
    with pytest.raises(FairmtError, match="one sample"):
        PairIndex(Z[:3], np.array([0, 1, 2]))


def test_indexed_dataset_and_collator_carry_the_row_position():
    ds = IndexedDataset([{"x": 1}, {"x": 2}, {"x": 3}])
    batch = IndexedCollator(lambda rows: {"x": [r["x"] for r in rows]})([ds[2], ds[0]])
    assert batch["x"] == [3, 1] and batch["sample_index"].tolist() == [2, 0]
