"""fairlib's PPR-GAP and FPR-GAP, intersectional groups, and the area under the performance–fairness front, each
against a slow brute-force computation (loops over examples) or a hand computation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fairmt.errors import FairmtError
from fairmt.eval.classification import classification_metrics, intersectional_groups


def _rate(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def _brute_gap(y, p, g, kind: str, classes=None, groups=None) -> float | None:
    """fairlib's aggregation by loops: per class Σ_groups |rate_{g,y} − rate_y| over the groups that have the rate,
    classes with the rate for < 2 groups skipped, then the root mean square over classes."""
    classes = sorted(set(y) | set(p)) if classes is None else classes
    groups = sorted(set(g), key=str) if groups is None else groups
    per_class = []
    for c in classes:

        def rate(rows, c=c):
            if kind == "tpr":
                den = [i for i in rows if y[i] == c]
            elif kind == "fpr":
                den = [i for i in rows if y[i] != c]
            else:  # ppr
                den = list(rows)
            return _rate(sum(1 for i in den if p[i] == c), len(den))

        overall = rate(range(len(y)))
        by_group = [rate([i for i in range(len(y)) if g[i] == a]) for a in groups]
        by_group = [r for r in by_group if r is not None]
        if overall is None or len(by_group) < 2:
            continue
        per_class.append(sum(abs(r - overall) for r in by_group))
    if not per_class:
        return None
    return math.sqrt(sum(v * v for v in per_class) / len(per_class))


def _fairlib_smoothed(y, p, g, metric: str) -> float:
    """A transcription of fairlib 0.1's gap_eval_scores (confusion matrix + 1e-5 on every count, classes
    0..K−1, groups 0..G−1), for a cross-check within its smoothing."""
    k, groups = len(set(y)), sorted(set(g))

    def scores(rows):
        cm = np.zeros((k, k))
        for i in rows:
            cm[y[i], p[i]] += 1
        fp = cm.sum(0) - np.diag(cm) + 1e-5
        fn = cm.sum(1) - np.diag(cm) + 1e-5
        tp = np.diag(cm) + 1e-5
        tn = cm.sum() - (fp + fn + tp) + 1e-5
        return {"TPR": tp / (tp + fn), "FPR": fp / (fp + tn), "PPR": (tp + fp) / (tp + fp + fn + tn)}

    overall = scores(range(len(y)))[metric]
    per = np.stack([scores([i for i in range(len(y)) if g[i] == a])[metric] for a in groups], axis=1)
    return float(np.sqrt(np.mean(np.sum(np.abs(per - overall[:, None]), axis=1) ** 2)))


def _random_split(seed: int, n: int = 300, k: int = 3, groups: int = 3):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, n)
    y = rng.integers(0, k, n)
    p = np.where(rng.random(n) < 0.2 + 0.1 * g, g % k, y)  # each group errs towards its own class
    return y.tolist(), p.tolist(), g.tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppr_and_fpr_gaps_match_brute_force_and_fairlib(seed):
    y, p, g = _random_split(seed)
    r = classification_metrics(y, p, g)
    assert r.ppr_gap == pytest.approx(_brute_gap(y, p, g, "ppr"), abs=1e-12)
    assert r.fpr_gap == pytest.approx(_brute_gap(y, p, g, "fpr"), abs=1e-12)
    assert r.gap == pytest.approx(_brute_gap(y, p, g, "tpr"), abs=1e-12)
    # fairlib's numbers differ only by its +1e-5 smoothing
    for name, metric in (("ppr_gap", "PPR"), ("fpr_gap", "FPR"), ("gap", "TPR")):
        assert getattr(r, name) == pytest.approx(_fairlib_smoothed(y, p, g, metric), abs=1e-4)
    assert r.ppr_gap > 0.05 and r.fpr_gap > 0.02  # not degenerate
    # per-group PPR rows: the share of the group predicted as each class
    for a in set(g):
        rows = [i for i in range(len(y)) if g[i] == a]
        for c in range(3):
            assert r.ppr[str(a)][str(c)] == pytest.approx(sum(p[i] == c for i in rows) / len(rows))
    assert "|ppr,fpr:rms-sumabs-all" in r.signature
    s = r.summary(percent=True)
    assert s["ppr_gap"] == pytest.approx(100 * r.ppr_gap) and s["fpr_gap"] == pytest.approx(100 * r.fpr_gap)
    assert r.to_percent_dict()["ppr"][str(g[0])]["0"] == pytest.approx(100 * r.ppr[str(g[0])]["0"])


def test_binary_fpr_gap_counts_both_classes_unlike_delta_fpr():
    y = [0, 0, 1, 1, 0, 0, 1, 1]
    p = [0, 1, 1, 1, 0, 0, 0, 1]
    g = ["f", "f", "f", "f", "m", "m", "m", "m"]
    r = classification_metrics(y, p, g)
    # by hand: FPR class 1: f 1/2, m 0/2, all 1/4 -> Σ|.| = 0.5; class 0: f 0/2, m 1/2, all 1/4 -> 0.5
    assert r.fpr_gap == pytest.approx(math.sqrt((0.5**2 + 0.5**2) / 2))
    assert r.delta_fpr == pytest.approx(0.5)  # positive class only, a sum
    # PPR class 1: f 3/4, m 1/4, all 2/4 -> 0.5; class 0 the same -> RMS 0.5
    assert r.ppr_gap == pytest.approx(0.5)


def test_empty_fpr_cell_is_skipped_with_a_warning():
    # group "m" holds class 1 only: it has no FPR for class 1 (no negative) nor TPR for class 0
    y = [0, 1, 0, 1, 1, 1]
    p = [0, 1, 1, 1, 0, 1]
    g = ["f", "f", "f", "f", "m", "m"]
    with pytest.warns(UserWarning):
        r = classification_metrics(y, p, g)
    assert any("no gold example outside class 1" in w for w in r.warnings)
    assert r.fpr_gap == pytest.approx(_brute_gap(y, p, g, "fpr"), abs=1e-12)
    with pytest.raises(FairmtError, match="strict=True"):
        classification_metrics(y, p, g, strict=True)


def test_intersectional_groups_match_brute_force_on_cross_product():
    rng = np.random.default_rng(5)
    n = 400
    gender = rng.choice(["f", "m"], n)
    age = rng.choice(["old", "young"], n)
    y = rng.integers(0, 2, n)
    bias = (gender == "f") & (age == "old")
    p = np.where(bias & (rng.random(n) < 0.5), 1 - y, y)
    joint = [f"{a}|{b}" for a, b in zip(gender, age)]
    for groups in (
        list(zip(gender, age)),
        {"gender": gender.tolist(), "age": age.tolist()},
        np.stack([gender, age], axis=1),
    ):
        r = classification_metrics(y.tolist(), p.tolist(), groups)
        assert r.groups == ["f|old", "f|young", "m|old", "m|young"] and r.n_groups == 4
        for name, kind in (("gap", "tpr"), ("ppr_gap", "ppr"), ("fpr_gap", "fpr")):
            assert getattr(r, name) == pytest.approx(_brute_gap(y.tolist(), p.tolist(), joint, kind), abs=1e-12)
        assert "|groups:x2" in r.signature
    assert r.group_attributes == ["a0", "a1"]
    named = classification_metrics(y.tolist(), p.tolist(), {"gender": gender.tolist(), "age": age.tolist()})
    assert named.group_attributes == ["gender", "age"]
    # a single attribute gives a different (smaller) number: the intersection finds the f|old bias
    assert r.gap > classification_metrics(y.tolist(), p.tolist(), gender.tolist()).gap


def test_intersectional_empty_combination_follows_the_empty_group_rule():
    y = [0, 1, 0, 1, 0, 1, 1, 0]
    p = [0, 1, 1, 1, 0, 0, 1, 0]
    groups = [
        ("f", "old"),
        ("f", "old"),
        ("f", "young"),
        ("f", "young"),
        ("m", "old"),
        ("m", "old"),
        ("f", "old"),
        ("m", "old"),
    ]  # no (m, young)
    with pytest.warns(UserWarning):
        r = classification_metrics(y, p, groups)
    assert any("'m|young' has no example" in w for w in r.warnings)
    assert r.groups == ["f|old", "f|young", "m|old"]
    joint = ["|".join(t) for t in groups]
    assert r.gap == pytest.approx(_brute_gap(y, p, joint, "tpr"), abs=1e-12)
    with pytest.raises(FairmtError, match="m\\|young"):
        classification_metrics(y, p, groups, strict=True)
    # leakage with a training split of the same attributes
    h = np.eye(8, 4)
    with pytest.warns(UserWarning, match="m\\|young"):
        r2 = classification_metrics(y, p, groups, hidden=h, train_hidden=h, train_preds=p, train_groups=groups)
    assert r2.leakage_h is not None
    with pytest.raises(FairmtError, match="same 2 protected attributes"):
        classification_metrics(y, p, groups, hidden=h, train_hidden=h, train_preds=p, train_groups=[0] * 8)


def test_intersectional_input_errors():
    with pytest.raises(FairmtError, match="separator"):
        intersectional_groups([("a|b", "c"), ("d", "e")])
    with pytest.raises(FairmtError, match="different lengths"):
        intersectional_groups({"x": [1, 2], "y": [1]})
    with pytest.raises(FairmtError, match="tuples of 2"):
        intersectional_groups([(1, 2), (3, 4)], group_values=[1, 2])
    keys, combos, names = intersectional_groups([(1, "a"), (2, "b")])
    assert keys.tolist() == ["1|a", "2|b"] and combos == ["1|a", "1|b", "2|a", "2|b"] and names == ["a0", "a1"]
    assert list(itertools.chain(intersectional_groups([0, 1])[0])) == [0, 1]


# ------------------------------------------------------------------------- area under the performance–fairness front
# (accuracy, GAP) of four models; C (0.6, 0.3) is dominated by B (0.7, 0.1)
FRONT_ACC = [0.8, 0.7, 0.6, 0.9]
FRONT_GAP = [0.2, 0.1, 0.3, 0.4]


def test_front_auc_by_hand():
    from fairmt.eval.classification import performance_fairness_auc

    fair = [1 - g for g in FRONT_GAP]
    r = performance_fairness_auc(FRONT_ACC, fair)
    # front A, B, D; curve (0, 1) (0.7, 0.9) (0.8, 0.8) (0.9, 0.6):
    # ½(1 + 0.9)·0.7 + ½(0.9 + 0.8)·0.1 + ½(0.8 + 0.6)·0.1 = 0.665 + 0.085 + 0.07
    assert r.auc == pytest.approx(0.82)
    assert sorted(r.front) == [0, 1, 3]
    assert [v for pt in r.curve for v in pt] == pytest.approx([0.0, 1.0, 0.7, 0.9, 0.8, 0.8, 0.9, 0.6])
    assert performance_fairness_auc(FRONT_ACC, fair, normalise=True).auc == pytest.approx(0.82)
    # threshold 0.75: fairness interpolated between B and A (0.85), then ½(0.85 + 0.8)·0.05 + 0.07
    thr = performance_fairness_auc(FRONT_ACC, fair, performance_threshold=0.75)
    assert thr.auc == pytest.approx(0.11125)
    assert performance_fairness_auc(FRONT_ACC, fair, performance_threshold=0.75, normalise=True).auc == pytest.approx(
        0.11125 / 0.25
    )
    # constant interpolation: equidistant, so the lower point's fairness (0.9)
    assert performance_fairness_auc(
        FRONT_ACC, fair, performance_threshold=0.75, interpolation="constant"
    ).auc == pytest.approx(0.5 * (0.9 + 0.8) * 0.05 + 0.07)
    assert performance_fairness_auc(FRONT_ACC, fair, performance_threshold=0.95).auc == 0.0
    # a dominated model does not change the area; a random performance moves the anchor
    assert performance_fairness_auc(FRONT_ACC[:2] + FRONT_ACC[3:], fair[:2] + fair[3:]).auc == pytest.approx(0.82)
    assert performance_fairness_auc(FRONT_ACC, fair, random_performance=0.5).auc == pytest.approx(
        0.5 * (1 + 0.9) * 0.2 + 0.085 + 0.07
    )
    with pytest.raises(FairmtError, match="fractions"):
        performance_fairness_auc([80.0], [0.5])


def test_front_auc_in_the_sweep_report_on_dev_and_test():
    from types import SimpleNamespace

    from fairmt.sweep.report import front_auc

    settings = [
        {
            "id": f"s{i + 1}",
            "n": 1,
            "mean": {"dev.accuracy": 100 * a, "dev.gap": 100 * g, "test.accuracy": 100 * a - 10, "test.gap": 100 * g},
        }
        for i, (a, g) in enumerate(zip(FRONT_ACC, FRONT_GAP))
    ]
    spec = SimpleNamespace(tradeoff=[("dev.accuracy", "maximize"), ("dev.gap", "minimize")])
    out = front_auc(settings, spec, True, ["dev", "test"])
    assert out["dev"]["auc"] == pytest.approx(0.82) and out["dev"]["settings"] == ["s1", "s2", "s4"]
    # test: every accuracy 0.1 lower: curve (0, 1) (0.6, 0.9) (0.7, 0.8) (0.8, 0.6)
    assert out["test"]["auc"] == pytest.approx(0.5 * 1.9 * 0.6 + 0.085 + 0.07)
    assert out["test"]["metrics"] == ["test.accuracy", "test.gap"]
    spec_bad = SimpleNamespace(tradeoff=[("dev.accuracy", "maximize"), ("dev.macro_f1", "maximize")])
    assert "unavailable" in front_auc(settings, spec_bad, True, ["dev"])
