"""Classification fairness (accuracy, macro-F1, GAP, ΔEO, leakage) as a Hugging Face ``evaluate`` metric (fairmt)."""

import datasets
import evaluate

from fairmt.citations import bibtex

_DESCRIPTION = """Utility and group fairness of a classifier's predictions: accuracy, macro-F1, GAP (root mean square
of the per-class true-positive-rate gaps between groups, as in fairlib) and ΔEO (equalized-odds difference), plus
leakage of the protected attribute when hidden representations are given. Same numbers as
`fairmt eval classification` on the same predictions."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: predicted labels (ints or strings). references: gold labels.
    groups: the protected group of each example.
    hidden: optional (n, d) representations for leakage@h; train_hidden / train_groups / train_preds /
        train_logits: the split the leakage SVM is trained on; logits: optional (n, |Y|) logits for leakage@ŷ;
        leakage: False skips the leakage SVMs (the CLI's --no-leakage).
Returns:
    the fields of fairmt.eval.classification.ClassificationResult (accuracy, macro_f1, gap, delta_eo, ..., signature),
    rates in percent as the CLI reports them ("scale": "percent").
Example:
    >>> m = evaluate.load(fairmt.evaluate_module("classification_fairness"))
    >>> m.compute(predictions=preds, references=labels, groups=genders)["gap"]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ClassificationFairness(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=bibtex("han2022fairlib"),
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}),
                datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            ],
        )

    def _compute(self, predictions, references, groups=None, hidden=None, logits=None, train_hidden=None,
                 train_groups=None, train_preds=None, train_logits=None, leakage=True, seed=0):
        import warnings

        from fairmt.errors import FairmtError
        from fairmt.eval.classification import classification_metrics

        if groups is None:
            raise FairmtError("classification_fairness: give groups=, the protected group of each example")
        with warnings.catch_warnings():  # kept in the result's "warnings", as the CLI does
            warnings.simplefilter("ignore")
            result = classification_metrics(
                list(references), list(predictions), list(groups), hidden=hidden if leakage else None,
                logits=logits if leakage else None, train_hidden=train_hidden if leakage else None,
                train_preds=train_preds, train_logits=train_logits, train_groups=train_groups if leakage else None,
                leakage_yhat=leakage, seed=seed,
            )
        return result.to_percent_dict()
