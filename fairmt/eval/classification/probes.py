"""Leakage probes (Shen et al. 2022, after Elazar & Goldberg 2018): a linear SVM predicting the protected group
from a representation or from the prediction; see :mod:`fairmt.eval.classification`."""

from __future__ import annotations

import warnings as _warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.eval.classification._arrays import Column, _as_1d


def leakage(
    features: Any,
    groups: Column,
    *,
    train_features: Any = None,
    train_groups: Column | None = None,
    C: float = 1.0,
    folds: int = 5,
    seed: int = 0,
    max_iter: int = 5000,
) -> tuple[float, str]:
    """Linear leakage: accuracy of ``LinearSVC(C)`` predicting ``groups`` from ``features``.

    With ``train_features``/``train_groups`` the SVM is fitted on them and scored on ``features`` (protocol
    ``"train→eval"``); otherwise stratified ``folds``-fold cross-validation on ``features`` (``"5-fold-cv"``).
    Returns ``(accuracy, protocol)``.
    """
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.svm import LinearSVC

    X = np.asarray(features, dtype=np.float64)
    g = _as_1d(groups, "groups")
    if X.ndim != 2 or len(X) != len(g):
        raise FairmtError(f"leakage features must be (n, d) with n = {len(g)} groups, got shape {X.shape}")
    clf = LinearSVC(C=C, dual="auto", max_iter=max_iter, random_state=seed)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", category=Warning)  # ConvergenceWarning on near-separable data
        if train_features is not None:
            Xt = np.asarray(train_features, dtype=np.float64)
            gt = _as_1d(train_groups, "train_groups")
            if Xt.ndim != 2 or Xt.shape[1] != X.shape[1] or len(Xt) != len(gt):
                raise FairmtError(
                    f"training features for leakage must be (n, {X.shape[1]}) with one group each, got {Xt.shape}"
                )
            if len(np.unique(gt)) < 2:
                raise FairmtError("leakage: the training split holds a single group; a classifier cannot be fitted")
            clf.fit(Xt, gt)
            return float(np.mean(clf.predict(X) == g)), "train→eval"
        _, counts = np.unique(g, return_counts=True)
        k = int(min(folds, counts.min()))
        if len(counts) < 2 or k < 2:
            raise FairmtError(
                "leakage by cross-validation needs at least two groups with two examples each; "
                "pass a training split instead"
            )
        cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
        return float(np.mean(cross_val_score(clf, X, g, cv=cv))), f"{k}-fold-cv"


def _logit_features(value: Any, name: str, n: int | None, classes: Sequence) -> np.ndarray:
    """The (n, c) features of leakage@ŷ from ``logits``: one column per class, or — for a task of two classes —
    a single column (or a vector): the positive class's sigmoid logit, as a binary head with one output gives it
    (a linear SVM reads the same from it as from the two softmax logits, whose difference it is). Any other shape is
    refused, naming it (one column for more classes, fewer columns than classes, not 1-D or 2-D, another number of
    rows)."""
    X = np.asarray(value, dtype=np.float64)
    k = len(classes)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise FairmtError(f"{name} must be (n, {k}) logits (one column per class), got shape {np.shape(value)}")
    if X.shape[1] == 1 and k > 2:
        raise FairmtError(
            f"{name} has one column (shape {np.shape(value)}), but the task has {k} classes: give one "
            f"logit per class, (n, {k}); a single column is read as a sigmoid logit for two classes only"
        )
    if 1 < X.shape[1] < k:
        raise FairmtError(
            f"{name} has {X.shape[1]} columns (shape {np.shape(value)}) for {k} classes: give one logit "
            f"per class, (n, {k})"
        )
    if n is not None and len(X) != n:
        raise FairmtError(f"{name} has {len(X)} rows (shape {np.shape(value)}) for {n} examples")
    return X


def _one_hot(values: np.ndarray, classes: Sequence) -> np.ndarray:
    index = {c: i for i, c in enumerate(classes)}
    out = np.zeros((len(values), len(classes)))
    for r, v in enumerate(values):
        if v in index:
            out[r, index[v]] = 1.0
    return out
