"""Shen et al.'s Tradeoff column in `fairmt sweep`'s report: each setting's score across the compared settings, on
the dev and the test means, equal to fairmt.eval.classification.tradeoff_scores on the same numbers."""

from __future__ import annotations

import pytest

from fairmt.eval.classification import tradeoff_scores
from fairmt.sweep.report import TRADEOFF_DEFINITION, shen_tradeoff


def _setting(acc, gap, lh, ly, dev_shift=0.0):
    mean = {}
    for split, shift in (("dev", dev_shift), ("test", 0.0)):
        mean.update(
            {
                f"{split}.accuracy": acc + shift,
                f"{split}.gap": gap,
                f"{split}.leakage_h": lh,
                f"{split}.leakage_yhat": ly,
            }
        )
    return {"mean": mean}


def test_the_sweep_report_scores_each_setting_with_shens_tradeoff():
    # Shen et al.'s Table 1, Moji (CE, INLP, Adv, Con*^ft, Con*): accuracy, GAP, leakage@h, leakage@ŷ in percent
    rows = [
        (72.09, 40.21, 85.75, 70.96),
        (72.81, 36.81, 68.15, 67.80),
        (74.47, 30.59, 81.98, 65.04),
        (75.99, 14.40, 57.01, 55.42),
        (75.84, 13.92, 55.75, 55.32),
    ]
    settings = [_setting(*r, dev_shift=1.0) for r in rows]
    out = shen_tradeoff(settings, percent=True)
    assert out == {"definition": TRADEOFF_DEFINITION, "splits": ["dev", "test"]}
    want = tradeoff_scores(*[[r[i] / 100 for r in rows] for i in range(4)])
    assert [s["mean"]["test.tradeoff"] for s in settings] == pytest.approx(want)
    assert [round(s["mean"]["test.tradeoff"], 2) for s in settings] == [0.77, 0.84, 0.84, 0.99, 1.00]  # Table 1
    assert settings[0]["mean"]["dev.tradeoff"] != settings[0]["mean"]["test.tradeoff"]  # the dev means, not test's


def test_no_tradeoff_without_the_four_metrics():
    settings = [{"mean": {"dev.accuracy": 70.0, "dev.gap": 10.0}}, {"mean": {"dev.accuracy": 60.0, "dev.gap": 5.0}}]
    assert shen_tradeoff(settings, percent=True) is None
    assert all("dev.tradeoff" not in s["mean"] for s in settings)
