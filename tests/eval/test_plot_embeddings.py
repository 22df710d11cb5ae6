"""`fairmt plot embeddings`: the papers' t-SNE / PCA figures from a run's predictions.jsonl (scikit-learn projections,
two panels coloured by task label and protected group), the per-label sample of Shen et al.'s Fig. 4."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fairmt.errors import FairmtError
from fairmt.eval.embedding_plot import project, sample_per_label


def _predictions(path, n=40, d=6, hidden=True):
    rng = np.random.default_rng(0)
    with open(path, "w") as fh:
        for i in range(n):
            row = {"label": i % 2, "pred": i % 2, "group": (i // 2) % 2}
            if hidden:
                row["hidden"] = (rng.normal(size=d) + 3 * (i % 2)).round(4).tolist()
            fh.write(json.dumps(row) + "\n")
    return path


def test_pca_is_the_top_two_principal_directions():
    X = np.random.default_rng(1).normal(size=(30, 5)) * [5, 3, 1, 0.5, 0.1]
    got = project(X, "pca")
    centred = X - X.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    want = centred @ vt[:2].T
    assert np.allclose(np.abs(got), np.abs(want), atol=1e-8)


def test_tsne_separates_two_clusters_and_the_sample_is_per_label():
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(size=(20, 8)), rng.normal(size=(20, 8)) + 10])
    pts = project(X, "tsne", seed=0)
    assert pts.shape == (40, 2) and np.isfinite(pts).all()
    a, b = pts[:20].mean(0), pts[20:].mean(0)
    assert np.linalg.norm(a - b) > 3 * max(pts[:20].std(0).max(), pts[20:].std(0).max())
    idx = sample_per_label([0] * 30 + [1] * 5, 10, seed=0)
    assert len(idx) == 15 and sum(i < 30 for i in idx) == 10 and list(idx) == sorted(idx)
    with pytest.raises(FairmtError, match="projection method must be one of tsne, pca"):
        project(X, "umap")


def test_the_command_writes_the_figure(tmp_path, capsys):
    from fairmt.cli import main

    preds = _predictions(tmp_path / "predictions.jsonl")
    out = tmp_path / "fig" / "pca.png"
    assert main(["plot", "embeddings", str(preds), "--method", "pca", "--out", str(out), "--per-label", "15"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "pca of 30 representations" in capsys.readouterr().out
    bare = _predictions(tmp_path / "bare.jsonl", hidden=False)
    assert main(["plot", "embeddings", str(bare), "--out", str(tmp_path / "x.png")]) == 2
    assert "has no 'hidden' column" in capsys.readouterr().err


def test_group_names_and_title_with_mathtext_are_drawn_as_text(tmp_path):
    """Issue 52: a group named ``$\\frac{$`` (or a title holding one) is a label, not mathtext: the figure is drawn."""
    import numpy as np

    from fairmt.eval.embedding_plot import plot_embeddings

    pts = np.random.default_rng(0).normal(size=(8, 2))
    out = tmp_path / "e.png"
    plot_embeddings(pts, [0, 1] * 4, ["$\\frac{$", "_b"] * 4, out, title="$\\frac{$ run")
    assert out.stat().st_size > 1000
