"""Classification fairness (accuracy, F1, AUC, GAP, ΔEO, leakage) as a Hugging Face ``evaluate`` metric (fairmt)."""

import datasets
import evaluate

from fairmt.citations import bibtex
from fairmt.evaluate_modules._batches import PerExampleInputs

_DESCRIPTION = """Utility and group fairness of a classifier's predictions: accuracy, F1 (the positive class's for a
two-class task, micro-F1 for more), macro-F1, AUC-ROC when scores are given, GAP (root mean square of the per-class
true-positive-rate gaps between groups, as in fairlib) and ΔEO (equalized-odds difference; over the positive class
or over every class, as eo_classes says), plus leakage of the protected attribute when hidden representations are
given. Same numbers as `fairmt eval classification` on the same predictions."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: predicted labels (ints or strings). references: gold labels.
    groups: the protected group of each example; for intersectional groups, one tuple per example (e.g.
        ("f", "young")) or a dict of columns ({"gender": [...], "age": [...]}): every metric is then over the
        cross-product groups (keys "f|young") and the signature ends "|groups:x2", as `--group-columns`.
    hidden: optional (n, d) representations for leakage@h; train_hidden / train_groups / train_preds /
        train_logits: the split the leakage SVM is trained on; logits: optional (n, |Y|) logits for leakage@ŷ
        (two classes: one column, (n, 1), or a bare (n,) vector, is read as the positive class's sigmoid logit;
        any other shape that is not one column per class is refused, naming it);
        leakage: False skips the leakage SVMs (the CLI's --no-leakage).
    scores: optional class probabilities for AUC-ROC ((n,) positive-class or (n, K) per-class).
    positive_class: the positive class of a two-class task (default the larger label).
    eo_classes: "positive" (default) or "all" (the CSCL release's convention, 2x for two classes).
    add / add_batch: predictions, references and the per-example inputs (groups, hidden, logits, scores) may be
        added batch by batch; compute() then scores them all, as one compute on the whole split.
Returns:
    the fields of fairmt.eval.classification.ClassificationResult (accuracy, f1, macro_f1, auc, gap, delta_eo,
    fairlearn's demographic_parity_difference / _ratio and equalized_odds_difference / _ratio (worst case and
    _mean), ..., signature), rates in percent as the CLI reports them ("scale": "percent").
Example:
    >>> m = evaluate.load(fairmt.evaluate_module("classification_fairness"))
    >>> m.compute(predictions=preds, references=labels, groups=genders)["gap"]
    >>> for p, y, g in batches:
    ...     m.add_batch(predictions=p, references=y, groups=g)
    >>> m.compute()["gap"]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ClassificationFairness(PerExampleInputs, evaluate.Metric):
    module = "classification_fairness"
    per_example = ("groups", "hidden", "logits", "scores")

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

    def _compute(
        self,
        predictions,
        references,
        groups=None,
        hidden=None,
        logits=None,
        train_hidden=None,
        train_groups=None,
        train_preds=None,
        train_logits=None,
        leakage=True,
        seed=0,
        scores=None,
        positive_class=None,
        eo_classes="positive",
    ):
        import warnings

        from fairmt.errors import FairmtError
        from fairmt.eval.classification import classification_metrics

        if groups is None:
            raise FairmtError("classification_fairness: give groups=, the protected group of each example")
        if not isinstance(leakage, bool):
            raise FairmtError(f"classification_fairness: leakage must be True or False, got {leakage!r}")
        with warnings.catch_warnings():  # kept in the result's "warnings", as the CLI does
            warnings.simplefilter("ignore")
            result = classification_metrics(
                list(references),
                list(predictions),
                groups if isinstance(groups, dict) else list(groups),
                hidden=hidden if leakage else None,
                logits=logits if leakage else None,
                train_hidden=train_hidden if leakage else None,
                train_preds=train_preds,
                train_logits=train_logits,
                train_groups=train_groups if leakage else None,
                leakage_yhat=leakage,
                seed=seed,
                scores=scores,
                positive_class=positive_class,
                eo_classes=eo_classes,
            )
        return result.to_percent_dict()
