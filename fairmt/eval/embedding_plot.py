"""2-D views of a classifier's representations for the papers' figures (Chi et al. Fig. 10, Shen et al. Fig. 4: t-SNE
of the learned representations coloured by the task label and by the protected group).

:func:`sample_per_label` draws the points (Shen et al.: "100 random samples from each main task class"),
:func:`project` maps them to two dimensions with scikit-learn (``tsne``: :class:`sklearn.manifold.TSNE`, ``pca``:
:class:`sklearn.decomposition.PCA`), :func:`plot_embeddings` draws two panels — by label, by group — with matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fairmt.errors import FairmtError

METHODS = ("tsne", "pca")


def sample_per_label(labels: Sequence, per_label: int | None, seed: int = 0) -> np.ndarray:
    """Indices of at most ``per_label`` random rows of every label (all rows when None), in row order."""
    arr = np.asarray(labels)
    if per_label is None:
        return np.arange(len(arr))
    rng = np.random.default_rng(seed)
    keep = [
        rng.choice(np.flatnonzero(arr == y), size=min(per_label, int(np.sum(arr == y))), replace=False)
        for y in sorted(set(arr.tolist()), key=str)
    ]
    return np.sort(np.concatenate(keep))


def project(X, method: str = "tsne", seed: int = 0, perplexity: float = 30.0) -> np.ndarray:
    """``(n, 2)`` coordinates of the rows of ``X``: t-SNE (perplexity capped below n, PCA initialisation) or PCA."""
    X = np.asarray(X, dtype=np.float64)
    if method not in METHODS:
        raise FairmtError(f"projection method must be one of {', '.join(METHODS)}, got {method!r}")
    if X.ndim != 2 or len(X) < 3 or X.shape[1] < 2:
        raise FairmtError(f"a 2-D view needs at least 3 representations of at least 2 dimensions, got shape {X.shape}")
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=2, random_state=seed).fit_transform(X)
    from sklearn.manifold import TSNE

    return TSNE(
        n_components=2, perplexity=min(perplexity, (len(X) - 1) / 3), init="pca", random_state=seed
    ).fit_transform(X)


def plot_embeddings(
    points,
    labels: Sequence,
    groups: Sequence,
    path: str | Path,
    *,
    title: str = "",
    label_names: Sequence[str] | None = None,
    group_names: Sequence[str] | None = None,
) -> None:
    """Two scatter panels of the 2-D ``points``: coloured by task label, and by protected group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fairmt.eval.report import save_figure_atomic
    from fairmt.eval.reporting.escape import mpl  # label and group names are data: never mathtext

    points = np.asarray(points)
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.6))
    for ax, values, names, what in (
        (axes[0], labels, label_names, "task label"),
        (axes[1], groups, group_names, "protected group"),
    ):
        arr = np.asarray(values)
        for k, v in enumerate(sorted(set(arr.tolist()), key=str)):
            mask = arr == v
            name = names[int(v)] if names is not None and isinstance(v, (int, np.integer)) and v < len(names) else v
            ax.scatter(points[mask, 0], points[mask, 1], s=9, alpha=0.75, label=mpl(name), color=f"C{k % 10}")
        ax.set_title(f"by {what}", fontsize="medium")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(frameon=False, fontsize="x-small", markerscale=1.5, loc="best")
    if title:
        fig.suptitle(mpl(title), fontsize="medium")
    fig.tight_layout()
    save_figure_atomic(fig, path)


__all__ = ["METHODS", "plot_embeddings", "project", "sample_per_label"]
