"""INLP removes linearly decodable group information while keeping the task (synthetic and real Bias-in-Bios)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from fairmt.errors import FairmtError
from fairmt.eval.classification import leakage
from fairmt.trainers.inlp import inlp, nullspace_projection, rowspace_projection


def _synthetic(n=1600, d=48, seed=0, class_dependent=False):
    """Task label (3 classes) along 3 directions, a binary group along 2 other directions (or, when
    ``class_dependent``, along a different direction for each class), Gaussian noise elsewhere."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    g = rng.integers(0, 2, n)
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    X = rng.normal(size=(n, d))
    X += 4.0 * basis[:, :3][:, y].T  # class c shifted along basis vector c
    if class_dependent:
        X += 2.0 * (2 * g - 1)[:, None] * basis[:, 3 + y].T
    else:
        X += 2.0 * (2 * g - 1)[:, None] * (basis[:, 3] + 0.5 * basis[:, 4])[None, :]
    return X, y, g


def _task_accuracy(Xtr, ytr, Xte, yte):
    clf = LogisticRegression(max_iter=2000).fit(Xtr, ytr)
    return float(np.mean(clf.predict(Xte) == yte))


def test_projection_algebra():
    rng = np.random.default_rng(0)
    W1, W2 = rng.normal(size=(1, 6)), rng.normal(size=(2, 6))
    R1, R2 = rowspace_projection(W1), rowspace_projection(W2)
    assert np.allclose(R1 @ R1, R1) and np.allclose(R1, R1.T) and np.isclose(np.trace(R1), 1)
    P = nullspace_projection([R1, R2], 6)
    assert np.allclose(P @ P, P) and np.allclose(P, P.T) and np.isclose(np.trace(P), 3)
    assert np.allclose(W1 @ P, 0) and np.allclose(W2 @ P, 0)
    assert np.allclose(nullspace_projection([], 4), np.eye(4))


def test_inlp_removes_group_information_and_keeps_the_task():
    X, y, g = _synthetic()
    tr, te = slice(0, 1200), slice(1200, None)
    before, _ = leakage(X[te], g[te], train_features=X[tr], train_groups=g[tr])
    task_before = _task_accuracy(X[tr], y[tr], X[te], y[te])
    assert before > 0.95

    # stop once the group classifier is at chance on the dev split (Ravfogel et al.'s min_accuracy)
    res = inlp(X[tr], g[tr], n_iterations=20, dev=(X[te], g[te]), min_accuracy=0.6)
    Xp = res.transform(X)
    after, _ = leakage(Xp[te], g[te], train_features=Xp[tr], train_groups=g[tr])
    task_after = _task_accuracy(Xp[tr], y[tr], Xp[te], y[te])
    chance = max(np.mean(g[te]), 1 - np.mean(g[te]))
    assert after < chance + 0.06, (before, after, chance)
    assert task_after > task_before - 0.03 and task_after > 0.9, (task_before, task_after)
    # the first classifier found the group, then the rounds fall to chance and INLP stops
    assert res.accuracies[0] > 0.95 and res.accuracies[-1] <= 0.6
    assert res.n_iterations < 20 and res.rank_removed == res.n_iterations - 1
    assert np.allclose(res.projection, res.projection.T)


def test_min_accuracy_stops_early():
    X, _, g = _synthetic(seed=1)
    res = inlp(X[:1200], g[:1200], n_iterations=15, dev=(X[1200:], g[1200:]), min_accuracy=0.6)
    assert res.n_iterations < 15 and res.accuracies[-1] <= 0.6
    assert res.rank_removed == res.n_iterations - 1  # the last (failed) round removes nothing


def test_by_class_removes_class_conditional_group_information():
    X, y, g = _synthetic(seed=2, class_dependent=True)
    tr, te = slice(0, 1200), slice(1200, None)
    res = inlp(X[tr], g[tr], labels=y[tr], by_class=True, n_iterations=12, dev=(X[te], g[te], y[te]), seed=0)
    Xp = res.transform(X)
    for c in range(3):
        mtr, mte = (y[tr] == c), (y[te] == c)
        before, _ = leakage(X[te][mte], g[te][mte], train_features=X[tr][mtr], train_groups=g[tr][mtr])
        after, _ = leakage(Xp[te][mte], g[te][mte], train_features=Xp[tr][mtr], train_groups=g[tr][mtr])
        chance = max(np.mean(g[te][mte]), 1 - np.mean(g[te][mte]))
        assert before > 0.9 and after < chance + 0.1, (c, before, after, chance)
    assert _task_accuracy(Xp[tr], y[tr], Xp[te], y[te]) > 0.9


def test_bad_input():
    X = np.zeros((4, 3))
    with pytest.raises(FairmtError, match="two groups"):
        inlp(X, [0, 0, 0, 0])
    with pytest.raises(FairmtError, match="labels="):
        inlp(X, [0, 1, 0, 1], by_class=True)
    with pytest.raises(FairmtError, match="one group per row"):
        inlp(X, [0, 1])
    with pytest.raises(FairmtError, match="no task class holds"):
        inlp(X, [0, 1, 0, 1], labels=[0, 1, 0, 1], by_class=True)


@pytest.mark.data
def test_inlp_on_real_bias_in_bios(shared_data):
    """TF-IDF + SVD representations of 1280 real biographies leak gender (pronouns); INLP removes it."""
    import csv

    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    rows = []
    for name in ("bios_28prof_x10.csv", "bios_accountant_1000.csv"):
        with open(shared_data / "bios" / name, newline="", encoding="utf-8") as fh:
            rows += list(csv.DictReader(fh))
    texts = [r["hard_text"] for r in rows]
    g = np.array([r["gender"] for r in rows])
    X = TfidfVectorizer(min_df=2).fit_transform(texts)
    X = TruncatedSVD(48, random_state=0).fit_transform(X)
    perm = np.random.default_rng(0).permutation(len(rows))
    X, g = X[perm], g[perm]
    tr, te = slice(0, 900), slice(900, None)
    before, _ = leakage(X[te], g[te], train_features=X[tr], train_groups=g[tr])
    res = inlp(X[tr], g[tr], n_iterations=25)
    Xp = res.transform(X)
    after, _ = leakage(Xp[te], g[te], train_features=Xp[tr], train_groups=g[tr])
    chance = max(np.mean(g[te] == "Male"), np.mean(g[te] == "Female"))
    assert before > 0.85, before
    assert after < chance + 0.07, (before, after, chance)


def test_custom_classifier_and_multi_group():
    """Any scikit-learn linear classifier with ``coef_`` works; three groups give a 2-D rowspace per round."""
    rng = np.random.default_rng(4)
    n, d = 1500, 30
    g = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += 3.0 * (g == 1)
    X[:, 1] += 3.0 * (g == 2)
    res = inlp(X[:1000], g[:1000], n_iterations=3, classifier=lambda: LogisticRegression(max_iter=2000))
    assert res.rank_removed == 6  # one-vs-rest: 3 weight vectors per round
    Xp = res.transform(X)
    before, _ = leakage(X[1000:], g[1000:], train_features=X[:1000], train_groups=g[:1000])
    after, _ = leakage(Xp[1000:], g[1000:], train_features=Xp[:1000], train_groups=g[:1000])
    chance = np.bincount(g[1000:]).max() / 500
    assert before > 0.85 and after < chance + 0.06, (before, after, chance)
