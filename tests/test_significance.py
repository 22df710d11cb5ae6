"""Paired bootstrap (issue 44 item 3): accuracy, ΔG and chrF++ of two runs against a brute-force resampling that
rebuilds each resample's item lists and scores them from scratch (chrF++ by sacrebleu.corpus_chrf)."""

import numpy as np
import pytest

from fairmt.eval.significance import paired_accuracy, paired_chrf, paired_delta_g, resample_indices

GENDER = ["male", "female"] * 10 + ["neutral"] * 2
A = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1]
B = [1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 1]


def _brute(score_a, score_b, n, n_samples, seed):
    diffs = []
    for row in resample_indices(n, n_samples, seed):  # every resample rebuilt and scored from scratch
        diffs.append(score_a(list(row)) - score_b(list(row)))
    diffs = np.array(diffs)
    obs = score_a(list(range(n))) - score_b(list(range(n)))
    c = np.abs(diffs) - np.abs(diffs).mean()
    return obs, np.percentile(diffs, [2.5, 97.5]), (np.sum(c >= abs(obs)) + 1) / (len(diffs) + 1)


def _acc(c):
    return lambda rows: 100.0 * sum(c[i] for i in rows) / len(rows)


def _dg(c):
    def f(rows):
        m = [c[i] for i in rows if GENDER[i] == "male"]
        w = [c[i] for i in rows if GENDER[i] == "female"]
        return 100.0 * (sum(m) / len(m) - sum(w) / len(w))
    return f


@pytest.mark.parametrize("which", ["accuracy", "delta_g"])
def test_accuracy_and_delta_g_match_brute_force_resampling(which):
    if which == "accuracy":
        got = paired_accuracy(A, B, n_samples=300, seed=7)
        obs, ci, p = _brute(_acc(A), _acc(B), len(A), 300, 7)
    else:
        got = paired_delta_g(A, B, GENDER, n_samples=300, seed=7)
        obs, ci, p = _brute(_dg(A), _dg(B), len(A), 300, 7)
    assert got.difference == pytest.approx(obs) and [got.ci_low, got.ci_high] == pytest.approx(list(ci))
    assert got.p_value == pytest.approx(p) and got.n_items == 22 and got.ci_low < got.difference < got.ci_high
    assert paired_accuracy(A, A, n_samples=200).p_value == 1.0  # a run against itself is never significant


def test_chrf_uses_sacrebleus_statistics_and_matches_corpus_chrf_on_each_resample():
    import sacrebleu

    refs = ["the doctor finished her shift", "a nurse helped him", "the teacher spoke to the class",
            "my lawyer called yesterday", "the baker sold bread", "our engineer fixed it"]
    ha = ["the doctor finished his shift", "a nurse helped him", "the teacher talked to the class",
          "my lawyer called today", "the baker sold the bread", "our engineer repaired it"]
    hb = ["doctor ends shift", "nurse help", "teacher class", "the lawyer phoned", "bread", "engineer fix"]

    def chrf(h):
        return lambda rows: sacrebleu.corpus_chrf([h[i] for i in rows], [[refs[i] for i in rows]], word_order=2).score

    got = paired_chrf(ha, hb, refs, n_samples=100, seed=3)
    obs, ci, p = _brute(chrf(ha), chrf(hb), len(refs), 100, 3)
    assert got.a == pytest.approx(sacrebleu.corpus_chrf(ha, [refs], word_order=2).score)
    assert got.difference == pytest.approx(obs) and [got.ci_low, got.ci_high] == pytest.approx(list(ci), abs=1e-6)
    assert got.p_value == pytest.approx(p) and got.to_dict()["method"].startswith("paired bootstrap")
