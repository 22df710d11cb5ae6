"""Issue 54: GAP-family measures above 1 (GAP sums over groups) flow through every trade-off and selection function
and through `fairmt report`'s Tradeoff column; `fpr_gap` = `gap` for two classes; fairlearn's demographic parity and
equalized odds forms beside fairlib's, against fairlearn itself (when installed) and a slow loop reference."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fairmt.errors import FairmtError
from fairmt.eval.classification import (
    bounded_fairness,
    classification_metrics,
    distance_to_optimum,
    performance_fairness_auc,
    tradeoff_scores,
)  # fmt: skip


def _twelve_groups(seed: int = 0, n: int = 2400):
    """Two classes, 12 groups whose TPRs spread from 0.05 to 0.95: a GAP well above 1."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 12, n)
    y = rng.integers(0, 2, n)
    right = rng.random(n) < (0.05 + 0.9 * g / 11)
    p = np.where(right, y, 1 - y)
    return y, p, g


def test_twelve_groups_give_a_gap_above_one_that_every_tradeoff_function_takes():
    y, p, g = _twelve_groups()
    r = classification_metrics(y, p, g)
    assert r.gap > 2.5 and r.n_groups == 12  # a sum over 12 groups' deviations
    other = classification_metrics(y, np.where(np.random.default_rng(1).random(len(y)) < 0.8, y, 1 - y), g)
    assert other.gap < 1
    acc, gap = [r.accuracy, other.accuracy], [r.gap, other.gap]
    scores = tradeoff_scores(acc, gap, [0.6, 0.6], [0.55, 0.55])
    # the bounded fairness: the GAP-above-1 model gets 0, the other 1 − its GAP / the largest GAP
    fair = bounded_fairness(gap)
    assert fair == pytest.approx([0.0, 1 - other.gap / r.gap])
    assert scores == pytest.approx([0.5 * acc[0] / max(acc) + 0.25, 0.5 * acc[1] / max(acc) + 0.25 * 1 + 0.25])
    assert scores[1] > scores[0]  # the fairer model ranks higher, as it should
    # absolute DTO: an unbounded distance; normalised DTO: the bounded fairness
    assert distance_to_optimum(acc, gap) == pytest.approx([math.hypot(1 - a, g_) for a, g_ in zip(acc, gap)])
    norm = distance_to_optimum(acc, gap, normalise=True)
    assert norm == pytest.approx([math.hypot(1 - acc[0] / max(acc), 1 - 0.0), math.hypot(1 - acc[1] / max(acc), 0.0)])
    front = performance_fairness_auc(acc, gap=gap)
    assert front.auc == pytest.approx(performance_fairness_auc(acc, fair).auc) and front.auc > 0
    # GAP ≤ 1 everywhere: the bounded form is the papers' 1 − GAP, unchanged
    assert bounded_fairness([0.1, 0.4]) == pytest.approx([0.9, 0.6])
    assert tradeoff_scores([0.8, 0.7], [0.1, 0.4], [0.6, 0.5], [0.5, 0.5]) == pytest.approx(
        [0.5 * 1 + 0.25 * 1 + 0.125 * 0.4 / 0.5 + 0.125, 0.5 * 0.7 / 0.8 + 0.25 * 0.6 / 0.9 + 0.125 + 0.125]
    )
    # one model, or every model with the same GAP above 1: the fairness term ranks nobody (a tie), no error
    assert tradeoff_scores([r.accuracy], [r.gap], [0.6], [0.5]) == pytest.approx([1.0])


def test_the_percentage_error_only_where_the_input_is_a_percentage():
    with pytest.raises(FairmtError, match=r"accuracy must hold fractions in \[0, 1\] \(divide percentages by 100\)"):
        tradeoff_scores([72.0, 70.0], [2.989, 0.5], [0.6, 0.6], [0.5, 0.5])
    with pytest.raises(FairmtError, match="divide percentages by 100"):
        distance_to_optimum([80.0], [2.989])
    with pytest.raises(FairmtError, match=r"gap must be ≥ 0"):
        distance_to_optimum([0.8], [-0.1])
    with pytest.raises(FairmtError, match=r"fairness must hold fractions in \[0, 1\].*GAP sums over groups.*pass gap="):
        performance_fairness_auc([0.8, 0.7], [1 - 2.989, 0.5])
    with pytest.raises(FairmtError, match="either fairness .* or gap"):
        performance_fairness_auc([0.8], [0.5], gap=[0.5])


def test_the_trainers_compute_metrics_and_selection_take_a_gap_above_one():
    from transformers import EvalPrediction

    from fairmt.eval.selection import EvalRecord, fairness_compute_metrics, select_checkpoint

    y, p, g = _twelve_groups(2)
    logits = np.stack([(p == 0).astype(float), (p == 1).astype(float)], axis=1)
    out = fairness_compute_metrics(num_classes=2)(EvalPrediction(predictions=logits, label_ids=(y, g)))
    assert out["gap"] > 1 and out["dto"] == pytest.approx(math.hypot(1 - out["accuracy"], out["gap"]))
    records = [EvalRecord(step=1, accuracy=out["accuracy"], gap=out["gap"]), EvalRecord(step=2, accuracy=0.7, gap=0.3)]
    assert select_checkpoint(records, "dto").step == 2
    assert select_checkpoint(records, "dto", normalise=False).step == 2


def test_fpr_gap_equals_gap_for_two_classes_and_not_for_three():
    rng = np.random.default_rng(5)
    for groups in (2, 3, 7):
        y, g = rng.integers(0, 2, 500), rng.integers(0, groups, 500)
        p = np.where(rng.random(500) < 0.3 + 0.1 * g, y, 1 - y)
        r = classification_metrics(y, p, g)
        assert r.fpr_gap == pytest.approx(r.gap, abs=1e-12)
    y3 = rng.integers(0, 3, 500)
    r3 = classification_metrics(y3, np.where(rng.random(500) < 0.6, y3, (y3 + 1) % 3), rng.integers(0, 3, 500))
    assert abs(r3.fpr_gap - r3.gap) > 1e-6


def _loop_reference(y, p, g, pos):
    """fairlearn's forms by hand: per group, the selection rate, TPR and FPR of the positive class; max − min and
    min / max over the groups; worst case = the larger difference / the smaller ratio, mean = their mean."""
    rates = {"sel": [], "tpr": [], "fpr": []}
    for a in sorted(set(g), key=str):
        idx = [i for i in range(len(y)) if g[i] == a]
        pos_i = [i for i in idx if y[i] == pos]
        neg_i = [i for i in idx if y[i] != pos]
        rates["sel"].append(sum(p[i] == pos for i in idx) / len(idx))
        if pos_i:
            rates["tpr"].append(sum(p[i] == pos for i in pos_i) / len(pos_i))
        if neg_i:
            rates["fpr"].append(sum(p[i] == pos for i in neg_i) / len(neg_i))
    diff = {k: max(v) - min(v) for k, v in rates.items()}
    ratio = {k: min(v) / max(v) for k, v in rates.items()}
    return {
        "demographic_parity_difference": diff["sel"],
        "demographic_parity_ratio": ratio["sel"],
        "equalized_odds_difference": max(diff["tpr"], diff["fpr"]),
        "equalized_odds_difference_mean": (diff["tpr"] + diff["fpr"]) / 2,
        "equalized_odds_ratio": min(ratio["tpr"], ratio["fpr"]),
        "equalized_odds_ratio_mean": (ratio["tpr"] + ratio["fpr"]) / 2,
    }


FORMS = (
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equalized_odds_difference",
    "equalized_odds_difference_mean",
    "equalized_odds_ratio",
    "equalized_odds_ratio_mean",
)


@pytest.mark.parametrize("groups", [2, 3, 7])
def test_fairlearn_forms_against_a_loop_reference(groups):
    rng = np.random.default_rng(groups)
    y, g = rng.integers(0, 2, 400), rng.integers(0, groups, 400)
    p = np.where(rng.random(400) < 0.55 + 0.05 * g, y, 1 - y)
    r = classification_metrics(y, p, g)
    ref = _loop_reference(y.tolist(), p.tolist(), g.tolist(), 1)
    for key in FORMS:
        assert getattr(r, key) == pytest.approx(ref[key], abs=1e-15), key
    if groups == 2:  # with two groups (and two classes) fairlib's ppr_gap is the demographic parity difference
        assert r.ppr_gap == pytest.approx(r.demographic_parity_difference, abs=1e-15)
    else:
        assert r.ppr_gap > r.demographic_parity_difference  # a sum over groups, not the extreme pair
    pct = r.to_percent_dict()
    assert pct["demographic_parity_difference"] == pytest.approx(100 * r.demographic_parity_difference)
    assert pct["demographic_parity_ratio"] == r.demographic_parity_ratio  # a ratio has no percent


def test_fairlearn_forms_are_none_with_a_note_for_more_classes():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 90)
    r = classification_metrics(y, y, rng.integers(0, 2, 90))
    assert all(getattr(r, k) is None for k in FORMS)
    assert any("fairlearn" in n and "two-class" in n for n in r.notes)


@pytest.mark.parametrize("case", ["3-groups", "7-groups", "strings-positive-a", "intersectional"])
def test_fairlearn_forms_equal_fairlearn(case):
    fm = pytest.importorskip("fairlearn.metrics", reason="fairlearn is not installed (pip install fairlearn)")
    rng = np.random.default_rng(11)
    n = 500
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    pos = 1
    if case.endswith("-groups"):
        k = int(case[0])
        g = rng.integers(0, k, n)
        p = np.where(rng.random(n) < 0.5 + 0.06 * g, y, 1 - y)
        ours, theirs = classification_metrics(y, p, g), {"sensitive_features": g}
    elif case == "strings-positive-a":
        y, p = np.array(["a", "b"])[y], np.array(["a", "b"])[p]
        g = rng.choice(["f", "m", "x"], n)
        pos = "a"
        ours, theirs = classification_metrics(y, p, g, positive_class="a"), {"sensitive_features": g}
    else:
        import pandas as pd

        gender, age = rng.choice(["f", "m"], n), rng.choice(["young", "mid", "old"], n)
        p = np.where(rng.random(n) < np.where(age == "old", 0.9, 0.6), y, 1 - y)
        ours = classification_metrics(y, p, {"gender": gender, "age": age})
        theirs = {"sensitive_features": pd.DataFrame({"gender": gender, "age": age})}
    yb, pb = (y == pos).astype(int), (p == pos).astype(int)
    want = {
        "demographic_parity_difference": fm.demographic_parity_difference(yb, pb, **theirs),
        "demographic_parity_ratio": fm.demographic_parity_ratio(yb, pb, **theirs),
        "equalized_odds_difference": fm.equalized_odds_difference(yb, pb, **theirs),
        "equalized_odds_difference_mean": fm.equalized_odds_difference(yb, pb, agg="mean", **theirs),
        "equalized_odds_ratio": fm.equalized_odds_ratio(yb, pb, **theirs),
        "equalized_odds_ratio_mean": fm.equalized_odds_ratio(yb, pb, agg="mean", **theirs),
    }
    for key, value in want.items():
        assert getattr(ours, key) == pytest.approx(value, abs=1e-12), key


def test_a_gap_above_one_keeps_the_reports_tradeoff_column(tmp_path):
    """`fairmt report` on classification results whose GAP is 298.9 % (2.989): the Tradeoff column is there."""
    from fairmt.eval.reporting import build_tables, read_runs

    fix = Path(__file__).parents[1] / "fixtures" / "report"
    names = ["classification_adversarial_results.json", "classification_fcl_results.json"]
    for i, name in enumerate(names):
        data = json.loads((fix / name).read_text(encoding="utf-8"))
        if i == 0:
            data["test"]["gap"] = 298.9
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
    runs = [r for n in names for r in read_runs(tmp_path / n)]
    (t,) = build_tables(runs)
    assert "tradeoff" in {m.key for m in t.columns}
    tests = [json.loads((tmp_path / n).read_text())["test"] for n in names]
    want = tradeoff_scores(*[[x[k] / 100 for x in tests] for k in ("accuracy", "gap", "leakage_h", "leakage_yhat")])
    assert [r.values["tradeoff"] for r in t.rows] == pytest.approx(want)
    assert t.rows[0].values["tradeoff"] < t.rows[1].values["tradeoff"]


def test_cli_json_and_module_carry_fairlearns_forms(tmp_path, capsys):
    from fairmt.cli import main

    rng = np.random.default_rng(2)
    rows = [
        {"label": int(a), "pred": int(b), "group": int(c)}
        for a, b, c in zip(rng.integers(0, 2, 150), rng.integers(0, 2, 150), rng.integers(0, 3, 150))
    ]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert (
        main(["eval", "classification", "--predictions", str(tmp_path / "p.jsonl"), "--no-leakage", "--json", "-"]) == 0
    )
    cli = json.loads(capsys.readouterr().out)
    py = classification_metrics([r["label"] for r in rows], [r["pred"] for r in rows], [r["group"] for r in rows])
    for key in FORMS:
        scale = 100 if key.endswith(("difference", "difference_mean")) else 1
        assert cli[key] == pytest.approx(scale * getattr(py, key)), key
