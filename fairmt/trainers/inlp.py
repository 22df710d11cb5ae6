"""Iterative Nullspace Projection (INLP; Ravfogel et al., ACL 2020, "Null It Out").

INLP removes *linearly decodable* protected-attribute information from frozen representations ``X``:

    P_0 = I
    for i = 1..n:
        fit a linear classifier W_i (rows = weight vectors) predicting the group from X P_{i-1}
        R_i = projection onto rowspace(W_i)
        P_i = I − projection onto span(R_1 + … + R_i)       # intersection of the nullspaces
    return P_n

so that ``X P`` holds no direction any of the classifiers used. For equalized odds (``by_class``), each round fits
the classifier on the examples of one task class only (chosen at random, as Ravfogel et al.'s ``by_class`` option),
removing the group information *conditional on the label*. The guarded representations are ``X @ P`` (``P`` is
symmetric); a task head is then trained on them (e.g. ``sklearn.linear_model.LogisticRegression``).

Only numpy / scikit-learn: it runs on representations exported from any encoder, no torch needed.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError

__all__ = ["INLPResult", "inlp", "nullspace_projection", "rowspace_projection"]


@dataclasses.dataclass
class INLPResult:
    """Output of :func:`inlp`.

    Attributes:
        projection: (d, d) symmetric projection matrix ``P``; apply as ``X @ projection``.
        n_iterations: classifiers actually fitted (fewer than asked when ``min_accuracy`` stopped it).
        accuracies: per round, the classifier's group accuracy on the dev split (or on the training data of that
            round when no dev split is given), measured *before* its direction is removed.
        rank_removed: dimension of the removed subspace (d − rank(P)).
    """

    projection: np.ndarray
    n_iterations: int
    accuracies: list[float]
    rank_removed: int

    def transform(self, X: Any) -> np.ndarray:
        """``X @ P``: the representations with the removed directions projected out."""
        return np.asarray(X, dtype=np.float64) @ self.projection


def rowspace_projection(W: np.ndarray) -> np.ndarray:
    """Orthogonal projection onto the row space of ``W`` (k, d): ``B Bᵀ`` with ``B`` an orthonormal basis."""
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    if not np.any(W):
        return np.zeros((W.shape[1], W.shape[1]))
    basis = _orthonormal_basis(W.T)
    return basis @ basis.T


def nullspace_projection(rowspace_projections: Sequence[np.ndarray], dim: int) -> np.ndarray:
    """Projection onto the intersection of the nullspaces: ``I − proj(span(Σ R_i))`` (Ravfogel et al., eq. 3)."""
    if not rowspace_projections:
        return np.eye(dim)
    Q = np.sum(rowspace_projections, axis=0)
    return np.eye(dim) - rowspace_projection(Q)


def _orthonormal_basis(M: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis of the column space of ``M`` (via SVD, dropping tiny singular values)."""
    u, s, _ = np.linalg.svd(M, full_matrices=False)
    if s.size == 0:
        return u[:, :0]
    keep = s > tol * max(M.shape) * s.max()
    return u[:, keep]


def _default_classifier(seed: int) -> Any:
    from sklearn.svm import LinearSVC

    # Ravfogel et al. use linear SVMs (LinearSVC) as the guarding classifiers
    return LinearSVC(C=1.0, dual="auto", fit_intercept=True, max_iter=5000, random_state=seed)


def inlp(
    X: Any,
    groups: Sequence,
    *,
    n_iterations: int = 20,
    labels: Sequence | None = None,
    by_class: bool = False,
    dev: tuple[Any, Sequence] | tuple[Any, Sequence, Sequence] | None = None,
    min_accuracy: float = 0.0,
    classifier: Callable[[], Any] | None = None,
    seed: int = 0,
) -> INLPResult:
    """Fit INLP on frozen representations and return the projection.

    Args:
        X: (n, d) training representations (e.g. a CE-trained encoder's [CLS] vectors, as CSCL's baseline).
        groups: protected attribute of each row (any hashable values; two or more groups).
        n_iterations: number of classifiers / rounds (CSCL tunes it in {20, 50, 80, 100, 150}; the paper's knob).
        labels: task label of each row; required for ``by_class``.
        by_class: equalized-odds variant: each round fits on the rows of one randomly chosen task class.
        dev: optional ``(X_dev, groups_dev[, labels_dev])`` on which each round's classifier accuracy is measured.
        min_accuracy: stop early once a round's classifier scores at or below it (e.g. the majority rate), as
            Ravfogel et al.; 0 never stops early.
        classifier: zero-argument factory of a scikit-learn linear classifier with ``coef_`` (default
            ``LinearSVC``).
        seed: random state for the classifier and the class choice.

    Returns:
        :class:`INLPResult` with the (d, d) projection matrix.

    Example:
        >>> res = inlp(X_train, gender_train, n_iterations=30)            # doctest: +SKIP
        >>> X_guarded = res.transform(X_test)                              # doctest: +SKIP
    """
    X = np.asarray(X, dtype=np.float64)
    g = np.asarray(groups)
    if X.ndim != 2 or len(X) != len(g) or len(X) == 0:
        raise FairmtError(f"INLP needs (n, d) representations with one group per row; got X {X.shape}, {len(g)} groups")
    if len(np.unique(g)) < 2:
        raise FairmtError("INLP needs at least two groups in the training representations")
    if n_iterations < 1:
        raise FairmtError(f"n_iterations must be ≥ 1, got {n_iterations}")
    y = None if labels is None else np.asarray(labels)
    if by_class:
        if y is None or len(y) != len(g):
            raise FairmtError("INLP by_class (equalized odds) needs the task label of every row: pass labels=")
        # a class where a single group occurs cannot train a group classifier
        usable = [c for c in np.unique(y) if len(np.unique(g[y == c])) >= 2]
        if not usable:
            raise FairmtError("INLP by_class: no task class holds examples of two groups")
    if dev is not None:
        X_dev = np.asarray(dev[0], dtype=np.float64)
        g_dev = np.asarray(dev[1])
        y_dev = np.asarray(dev[2]) if len(dev) > 2 else None
        if X_dev.ndim != 2 or X_dev.shape[1] != X.shape[1] or len(X_dev) != len(g_dev):
            raise FairmtError(f"INLP dev representations must be (n, {X.shape[1]}) with one group per row")

    make = classifier or (lambda: _default_classifier(seed))
    rng = np.random.default_rng(seed)
    d = X.shape[1]
    rowspaces: list[np.ndarray] = []
    P = np.eye(d)
    accuracies: list[float] = []
    for _ in range(n_iterations):
        Xp = X @ P
        rows = np.ones(len(X), dtype=bool)
        dev_rows = None
        if by_class:
            cls = rng.choice(usable)
            rows = y == cls
            if dev is not None and y_dev is not None:
                dev_rows = y_dev == cls
        clf = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning on separable data
            clf.fit(Xp[rows], g[rows])
        if dev is not None:
            Xd, gd = X_dev @ P, g_dev
            if dev_rows is not None and dev_rows.any():
                Xd, gd = Xd[dev_rows], gd[dev_rows]
            acc = float(np.mean(clf.predict(Xd) == gd))
        else:
            acc = float(np.mean(clf.predict(Xp[rows]) == g[rows]))
        accuracies.append(acc)
        if acc <= min_accuracy:
            break
        W = np.atleast_2d(clf.coef_)
        rowspaces.append(rowspace_projection(W))
        # Ravfogel et al.: recompute P from all rowspaces so that numerical error does not accumulate
        P = nullspace_projection(rowspaces, d)
    rank_removed = int(round(d - np.trace(P)))
    return INLPResult(projection=P, n_iterations=len(accuracies), accuracies=accuracies, rank_removed=rank_removed)
