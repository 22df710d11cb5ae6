"""Inputs of any Python shape the docs allow (lists, tuples, generators, numpy arrays, torch tensors, pandas Series
with any index) give the numbers the same inputs give as lists; a shape without an order is refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from fairmt.errors import FairmtError

Y = [0, 1, 1, 0, 1, 0, 1, 1]
P = [0, 1, 0, 0, 1, 1, 1, 1]
G = [0, 0, 0, 0, 1, 1, 1, 1]
H = [[0.1 * i, 1.0 - 0.05 * i] for i in range(8)]


def _shapes(values):
    import pandas as pd
    import torch

    return {
        "tuple": lambda: tuple(values),
        "generator": lambda: (v for v in values),
        "numpy": lambda: np.asarray(values),
        "torch": lambda: torch.tensor(values),
        # a Series for labels, a DataFrame for vectors; either with an index that does not start at 0
        "series-shifted-index": lambda: (
            pd.DataFrame(values) if isinstance(values[0], list) else pd.Series(values)
        ).set_axis(range(5, 5 + len(values))),
    }


@pytest.mark.parametrize("shape", ["tuple", "generator", "numpy", "torch", "series-shifted-index"])
def test_classification_fairness_module_takes_any_shape(shape):
    import evaluate

    import fairmt

    m = evaluate.load(fairmt.evaluate_module("classification_fairness"))
    ref = m.compute(predictions=P, references=Y, groups=G, hidden=H, leakage=False)
    mk = {k: _shapes(v)[shape] for k, v in (("p", P), ("y", Y), ("g", G), ("h", H))}
    got = m.compute(predictions=mk["p"](), references=mk["y"](), groups=mk["g"](), hidden=mk["h"](), leakage=False)
    for key in ("accuracy", "gap", "delta_eo", "n"):
        assert got[key] == pytest.approx(ref[key]), key


@pytest.mark.parametrize("shape", ["tuple", "generator", "numpy", "torch", "series-shifted-index"])
def test_classification_metrics_takes_any_shape(shape):
    from fairmt.eval.classification import classification_metrics

    ref = classification_metrics(Y, P, G, hidden=H)
    s = {k: _shapes(v)[shape] for k, v in (("y", Y), ("p", P), ("g", G), ("h", H))}
    got = classification_metrics(s["y"](), s["p"](), s["g"](), hidden=s["h"]())
    assert (got.accuracy, got.gap, got.leakage_h) == pytest.approx((ref.accuracy, ref.gap, ref.leakage_h))


def test_mt_geneval_module_takes_a_generator():
    import evaluate

    import fairmt

    m_ref, f_ref = ["Er ist ein guter Arzt."], ["Sie ist eine gute Ärztin."]
    m = evaluate.load(fairmt.evaluate_module("mt_geneval"))
    ref = m.compute(predictions=m_ref + f_ref, references=m_ref + f_ref, counterfactual_references=f_ref + m_ref)
    got = m.compute(
        predictions=(x for x in m_ref + f_ref),
        references=tuple(m_ref + f_ref),
        counterfactual_references=(x for x in f_ref + m_ref),
    )
    assert got["accuracy"] == ref["accuracy"] == 100.0 and got["chrfpp"] == ref["chrfpp"]


@pytest.mark.parametrize("bad, what", [({0: 1, 1: 0}, "dict"), ({0, 1}, "set"), ("01", "string")])
def test_shapes_without_an_order_are_refused_by_name(bad, what):
    import evaluate

    import fairmt
    from fairmt.eval.classification import classification_metrics

    m = evaluate.load(fairmt.evaluate_module("classification_fairness"))
    with pytest.raises(FairmtError, match=f"classification_fairness: predictions must be a list.*{what}"):
        m.compute(predictions=bad, references=[0, 1], groups=[0, 1], leakage=False)
    with pytest.raises(FairmtError, match=f"preds must be a sequence.*{'str' if what == 'string' else what}"):
        classification_metrics([0, 1], bad, [0, 1])
