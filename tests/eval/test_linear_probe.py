"""The linear-probe evaluator against brute-force metric computations, and `fairmt eval linear-probe`."""

import json

import numpy as np
import pytest

from fairmt.cli import main
from fairmt.errors import FairmtError
from fairmt.eval.classification import latent_subgroup_metrics
from fairmt.eval.linear_probe import linear_probe, probe_split


def _data(n=300, d=8, seed=0, noise=1.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = (X @ w + noise * rng.normal(size=n) > 0.3).astype(np.int64)
    g = rng.integers(0, 2, n)
    return X, y, g


def brute_auc(y, score):
    """P(score of a random positive > score of a random negative), ties 1/2 — over every pair."""
    pos, neg = score[y == 1], score[y == 0]
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def test_probe_metrics_match_brute_force_on_the_same_split():
    from sklearn.linear_model import LogisticRegression

    X, y, _ = _data()
    res, pred = linear_probe(X, y, seed=3, n_clusters=None, return_predictions=True)
    tr, te = probe_split(len(y), 0.2, 3)
    assert res.n_train == len(tr) == 240 and res.n_test == len(te) == 60
    assert np.array_equal(pred["index"], te) and not set(tr) & set(te)
    mu, sd = X[tr].mean(0), X[tr].std(0)
    clf = LogisticRegression(C=1.0, max_iter=1000, random_state=3).fit((X[tr] - mu) / sd, y[tr])
    p = clf.predict((X[te] - mu) / sd)
    assert np.array_equal(p, pred["pred"])
    yt = y[te]
    tp, fp, fn = int(((p == 1) & (yt == 1)).sum()), int(((p == 1) & (yt == 0)).sum()), int(((p == 0) & (yt == 1)).sum())
    assert res.accuracy == pytest.approx(float((p == yt).mean()))
    assert res.f1 == pytest.approx(2 * tp / (2 * tp + fp + fn))  # positive class only
    assert res.auc_roc == pytest.approx(brute_auc(yt, clf.predict_proba((X[te] - mu) / sd)[:, 1]))
    assert res.positive_rate_test == pytest.approx(float(yt.mean()))
    assert "split:random-0.8/0.2:seed3" in res.signature and "f1-pos1" in res.signature


def test_probe_separable_data_groups_subgroups_and_unusable_rows():
    X, y, g = _data(noise=0.0)
    y = y.copy()
    y[:10] = -1  # e.g. CheXpert's uncertain labels under U-Ignore
    res = linear_probe(X, y, groups=g, seed=0, C=100.0)
    assert res.n_train + res.n_test == 290 and any("10 rows" in w for w in res.warnings)
    assert res.accuracy > 0.95 and res.auc_roc > 0.99
    assert res.fairness is not None and 0.0 <= res.fairness["gap"] <= 1.0
    want = latent_subgroup_metrics(X, n_clusters=4, seed=0)
    assert res.subgroups["cluster_sizes"] == want.cluster_sizes
    assert res.subgroups["subgroup_separation_distance"] == pytest.approx(want.subgroup_separation_distance)
    with pytest.raises(FairmtError, match="one class"):
        linear_probe(X, np.zeros(len(X), dtype=np.int64))
    with pytest.raises(FairmtError, match="integers"):
        linear_probe(X, y.astype(float))
    with pytest.raises(FairmtError, match="NaN"):
        linear_probe(np.full((4, 2), np.nan), np.array([0, 1, 0, 1]))
    with pytest.raises(FairmtError, match="test_fraction"):
        linear_probe(X, y, test_fraction=1.5)


def test_cli_on_npz_and_jsonl(tmp_path, capsys):
    X, y, g = _data()
    Z = X[:, :4] / np.linalg.norm(X[:, :4], axis=1, keepdims=True)
    np.savez(tmp_path / "emb.npz", backbone=X, projection=Z, y_target=y, g_sex=g)
    assert (
        main(
            [
                "eval",
                "linear-probe",
                "--embeddings",
                str(tmp_path / "emb.npz"),
                "--embedding-key",
                "backbone",
                "--label",
                "y_target",
                "--group",
                "g_sex",
                "--subgroup-key",
                "projection",
                "--json",
                "-",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    direct = linear_probe(X, y, groups=g, subgroup_embeddings=Z)
    assert out["accuracy"] == pytest.approx(direct.accuracy) and out["f1"] == pytest.approx(direct.f1)
    assert out["subgroups"]["cluster_sizes"] == latent_subgroup_metrics(Z, n_clusters=4, seed=0).cluster_sizes
    assert out["fairness"]["gap"] == pytest.approx(direct.fairness["gap"])
    with open(tmp_path / "emb.jsonl", "w") as fh:
        for i in range(len(y)):
            fh.write(json.dumps({"embedding": X[i].tolist(), "label": int(y[i])}) + "\n")
    md = tmp_path / "probe.md"
    assert (
        main(
            [
                "eval",
                "linear-probe",
                "--embeddings",
                str(tmp_path / "emb.jsonl"),
                "--n-clusters",
                "0",
                "--markdown",
                str(md),
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert f"{direct.accuracy:.4f}" in table and "| accuracy |" in md.read_text()
    assert main(["eval", "linear-probe", "--embeddings", str(tmp_path / "emb.npz"), "--label", "y_nope"]) == 2
    err = capsys.readouterr().err
    assert "no array" in err and "'y_nope'" in err and "backbone" in err
    (tmp_path / "bad.jsonl").write_text('{"embedding": [1, 2], "label": 1}\n{"embedding": [1], "label": 0}\n')
    assert main(["eval", "linear-probe", "--embeddings", str(tmp_path / "bad.jsonl")]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err


def test_rows_without_a_group_are_counted_and_said():
    """Issue 52: rows whose group is NaN (or a negative id) are left out of GAP/ΔEO and said with their count (they
    were dropped silently); the fairness equals the one computed on the rows with a group only."""
    from fairmt.eval.linear_probe import group_fairness, probe_split

    X, y, g = _data()
    gf = g.astype(float)
    gf[::7] = np.nan
    res, pred = linear_probe(X, y, groups=gf, seed=0, n_clusters=None, return_predictions=True)
    _, te = probe_split(len(y), 0.2, 0)
    missing = int(np.isnan(gf[te]).sum())
    assert missing > 0 and res.fairness["n_without_group"] == missing
    assert f"{missing} of {len(te)} test rows without a group (a negative id or NaN) left out" in " ".join(res.warnings)
    known = ~np.isnan(gf[te])
    alone = group_fairness(y[te][known], pred["pred"][known], g[te][known], [0, 1])
    assert res.fairness["gap"] == pytest.approx(alone["gap"]) and alone["n_without_group"] == 0
    none = linear_probe(X, y, groups=np.full(len(y), np.nan), seed=0, n_clusters=None)
    assert none.fairness is None and any(
        f"{len(te)} of {len(te)} test rows without a group" in w for w in none.warnings
    )
