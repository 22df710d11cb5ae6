"""Scores of one model on one split (:func:`classification_metrics`, :class:`ClassificationResult`): accuracy, F1,
AUC-ROC, the GAP family, ΔEO, fairlearn's forms and the leakages, with the empty-group policy of
:mod:`fairmt.eval.classification` (whose docstring holds the definitions)."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import warnings as _warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.eval.classification._arrays import METRICS_VERSION, Column, _as_1d, _check_lengths
from fairmt.eval.classification.probes import _logit_features, _one_hot, leakage
from fairmt.eval.classification.rates import (
    equalized_odds_difference,
    fairlearn_forms,
    intersectional_groups,
    positive_prediction_rates,
    rate_gap,
    rates_by_group,
    tpr_gap,
)

EO_CLASSES = ("positive", "all")


@dataclasses.dataclass
class ClassificationResult:
    """Scores of one split. Rates are fractions in [0, 1]; ``delta_eo`` is a sum of them (≥ 0, may exceed 1).

    ``gap_by_class`` maps each scored class (as a string) to its ``GAP_y``; ``tpr``/``fpr`` map group → class →
    rate (``None`` for an empty cell). ``leakage_h``/``leakage_yhat`` are ``None`` when not computed;
    ``leakage_protocol`` says how they were ("train→eval" or "5-fold-cv"). ``f1`` is the positive class's F1 of a
    two-class task (``positive_class`` names that class; ``None`` with more classes), ``micro_f1`` is given with more
    than two classes, ``auc`` when scores were given; ``eo_classes`` is the ΔEO convention used; ``notes`` lists
    what was not computed and why (no scores → no AUC).
    """

    n: int
    n_classes: int
    n_groups: int
    accuracy: float
    macro_f1: float
    gap: float
    delta_eo: float
    delta_tpr: float
    delta_fpr: float
    gap_by_class: dict[str, float]
    tpr: dict[str, dict[str, float | None]]
    fpr: dict[str, dict[str, float | None]]
    ppr_gap: float | None = None
    fpr_gap: float | None = None
    ppr: dict[str, dict[str, float | None]] = dataclasses.field(default_factory=dict)
    demographic_parity_difference: float | None = None
    demographic_parity_ratio: float | None = None
    equalized_odds_difference: float | None = None
    equalized_odds_difference_mean: float | None = None
    equalized_odds_ratio: float | None = None
    equalized_odds_ratio_mean: float | None = None
    group_attributes: list[str] | None = None
    leakage_h: float | None = None
    leakage_yhat: float | None = None
    leakage_protocol: str | None = None
    f1: float | None = None
    micro_f1: float | None = None
    auc: float | None = None
    positive_class: str | None = None
    eo_classes: str = "positive"
    classes: list[str] = dataclasses.field(default_factory=list)
    groups: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    signature: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (fractions, as the attributes)."""
        return dataclasses.asdict(self)

    PERCENT_FIELDS = (
        "accuracy",
        "f1",
        "macro_f1",
        "micro_f1",
        "auc",
        "gap",
        "ppr_gap",
        "fpr_gap",
        "delta_eo",
        "delta_tpr",
        "delta_fpr",
        "leakage_h",
        "leakage_yhat",
        "demographic_parity_difference",
        "equalized_odds_difference",
        "equalized_odds_difference_mean",
    )
    FAIRLEARN_FIELDS = (
        "demographic_parity_difference",
        "demographic_parity_ratio",
        "equalized_odds_difference",
        "equalized_odds_difference_mean",
        "equalized_odds_ratio",
        "equalized_odds_ratio_mean",
    )

    def to_percent_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` on fairmt's reporting scale, as every other evaluator and the papers (Table 1 of Shen et
        al. 2022: accuracy 73.64, leakage around 55): rates in percent (``delta_eo`` in percentage points), with
        ``"scale": "percent"``. What the CLI, the recipes' ``results.json`` and the ``evaluate`` module report."""
        d = self.to_dict()
        for k in self.PERCENT_FIELDS:
            if d.get(k) is not None:
                d[k] = 100.0 * d[k]
        d["gap_by_class"] = {c: 100.0 * v for c, v in d["gap_by_class"].items()}
        for key in ("tpr", "fpr", "ppr"):
            d[key] = {g: {c: (None if v is None else 100.0 * v) for c, v in row.items()} for g, row in d[key].items()}
        d["scale"] = "percent"
        return d

    def summary(self, percent: bool = False) -> dict[str, Any]:
        """The headline numbers: ``accuracy``, ``f1`` (two classes) or ``micro_f1`` (more), ``macro_f1``, ``auc`` when
        computed, ``gap``, ``ppr_gap`` and ``fpr_gap`` (when defined), ``delta_eo`` (in the convention the signature names) and the leakages when present."""
        out: dict[str, Any] = {"accuracy": self.accuracy}
        if self.f1 is not None:
            out["f1"] = self.f1
        out["macro_f1"] = self.macro_f1
        if self.micro_f1 is not None:
            out["micro_f1"] = self.micro_f1
        if self.auc is not None:
            out["auc"] = self.auc
        out["gap"] = self.gap
        for key in ("ppr_gap", "fpr_gap"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["delta_eo"] = self.delta_eo
        if self.leakage_h is not None:
            out["leakage_h"] = self.leakage_h
        if self.leakage_yhat is not None:
            out["leakage_yhat"] = self.leakage_yhat
        if percent:
            out = {k: 100.0 * v for k, v in out.items()}
            out["scale"] = "percent"
        out["eo_classes"] = self.eo_classes
        if self.positive_class is not None:
            out["positive_class"] = self.positive_class
        out["signature"] = self.signature
        return out


# ----------------------------------------------------------------------------------------------------- helpers
class _Notes:
    """Collects caveats (or raises the first when strict); :meth:`warn_once` issues them as ONE warning, so a run
    that scores many small splits does not print one warning per empty (class, group) cell."""

    def __init__(self, strict: bool):
        self.strict = strict
        self.items: list[str] = []

    def __call__(self, msg: str) -> None:
        if self.strict:
            raise FairmtError(msg + " (strict=True)")
        self.items.append(msg)

    def warn_once(self) -> None:
        seen = _SEEN.get()
        items = [m for m in self.items if seen is None or m not in seen]
        if seen is not None:
            seen.update(items)
        if items:
            more = f" (+{len(items) - 1} more in result.warnings)" if len(items) > 1 else ""
            _warnings.warn(f"classification metrics: {items[0]}{more}", stacklevel=3)


_SEEN: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("fairmt_metric_caveats", default=None)


@contextlib.contextmanager
def caveats_once():
    """Within the block, each caveat of :func:`classification_metrics` is warned about once, however many times the
    same split is scored (a training run scores its dev set every epoch, then once more at the end); every result
    still lists all of its own caveats in ``result.warnings``."""
    token = _SEEN.set(set())
    try:
        yield
    finally:
        _SEEN.reset(token)


def _signature(
    eo_classes: str, positive: str | None, auc: bool, leak: str | None, C: float, n_attributes: int = 1
) -> str:
    eo = "pos" if eo_classes == "positive" else "all"
    f1 = f"pos={positive}+macro" if positive is not None else "macro+micro"
    sig = f"fairmt-cls:v{METRICS_VERSION}|gap:rms-sumabs|eo:{eo}|f1:{f1}"
    if auc:
        sig += "|auc:roc" + ("" if positive is not None else "-ovr-macro")
    if leak:
        sig += f"|leak:linearsvc-C{C:g}-{leak}"
    sig += "|ppr,fpr:rms-sumabs-all"
    if n_attributes > 1:
        sig += f"|groups:x{n_attributes}"
    return sig


# ---------------------------------------------------------------------------------------------------- main API
def classification_metrics(
    labels: Column,
    preds: Column,
    groups: Column,
    hidden: Any = None,
    *,
    logits: Any = None,
    train_hidden: Any = None,
    train_preds: Column | None = None,
    train_logits: Any = None,
    train_groups: Column | None = None,
    classes: Sequence | None = None,
    group_values: Sequence | None = None,
    num_classes: int | None = None,
    leakage_yhat: bool | None = None,
    scores: Any = None,
    positive_class: Any = None,
    eo_classes: str = "positive",
    binary_positive_only: bool | None = None,
    svm_C: float = 1.0,
    seed: int = 0,
    strict: bool = False,
) -> ClassificationResult:
    """Score one split: accuracy, F1, AUC-ROC (with scores), GAP, ΔEO and (when possible) leakage@h and leakage@ŷ.

    Args:
        labels, preds, groups: one entry per example (ints or strings); ``groups`` may give several protected
            attributes per example (tuples, an (n, k) array or ``{attribute: column}``): intersectional groups.
        hidden: (n, d) hidden representations for leakage@h (optional).
        logits: (n, |Y|) logits for leakage@ŷ (optional; otherwise the one-hot ``preds`` are used). For a task of
            two classes, one column ((n,) or (n, 1)) is read as the positive class's sigmoid logit (a binary head with
            one output); one column for more classes, or fewer columns than classes, is refused naming the shape.
        train_hidden, train_preds, train_logits, train_groups: the same for the split the leakage SVM is trained on
            (Shen et al. train it on the training split); without them leakage is cross-validated on this split.
        classes: the task classes (default: sorted union of labels and preds). ``num_classes=K`` means
            ``classes = range(K)`` and requires integer labels/preds in ``[0, K)``.
        group_values: the protected groups to score (default: those present; intersectional: every combination
            of the values present, as tuples).
        leakage_yhat: compute leakage@ŷ (default: when logits or a training split is given, or ``hidden`` is).
        scores: class probabilities for AUC-ROC: (n,) probability of the positive class (two classes only) or
            (n, K) per-class probabilities in the order of the classes.
        positive_class: the positive class of a two-class task (for ``f1``, AUC and ``eo_classes="positive"``);
            default the larger label.
        eo_classes: ``"positive"`` (ΔEO of the positive class, the formula CSCL prints) or ``"all"`` (summed over
            both classes, the CSCL authors' released evaluation: 2× on a two-class task); see
            :mod:`fairmt.eval.classification`.
        binary_positive_only: older spelling of ``eo_classes`` (True = "positive", False = "all").
        svm_C, seed: LinearSVC settings for the leakage probes.
        strict: raise ``FairmtError`` instead of warning about empty groups/classes.

    See :mod:`fairmt.eval.classification` for the formulas and the empty-group policy.

    Example:
        >>> r = classification_metrics([0, 0, 1, 1], [0, 1, 1, 1], ["f", "m", "f", "m"])
        >>> r.accuracy, r.gap
        (0.75, 0.7071067811865476)
    """
    groups, group_values, attributes = intersectional_groups(groups, group_values)
    if attributes is not None and train_groups is not None:
        train_groups, _, train_attributes = intersectional_groups(train_groups)
        if train_attributes is None or len(train_attributes) != len(attributes):
            raise FairmtError(f"train_groups must hold the same {len(attributes)} protected attributes as groups")
    y, p, g = _as_1d(labels, "labels"), _as_1d(preds, "preds"), _as_1d(groups, "groups")
    n = _check_lengths(labels=y, preds=p, groups=g)
    from fairmt.eval.validate import finite_array  # a NaN representation would give a NaN leakage, silently

    hidden, logits, train_hidden, train_logits, scores = (  # a generator is read once, here
        list(v) if v is not None and not hasattr(v, "__len__") and hasattr(v, "__iter__") else v
        for v in (hidden, logits, train_hidden, train_logits, scores)
    )
    for name, value in (
        ("hidden", hidden),
        ("logits", logits),
        ("train_hidden", train_hidden),
        ("train_logits", train_logits),
        ("scores", scores),
    ):
        if value is not None:
            finite_array(value, name)
    notes = _Notes(strict)
    kinds = {_label_kind(v) for v in y.tolist()} | {_label_kind(v) for v in p.tolist()}
    if len(kinds) != 1 or None in kinds:
        raise FairmtError(
            "labels and predictions must all be integers or all be strings (the same ids in both); "
            f"got {sorted(str(k) for k in kinds)}"
        )

    if num_classes is not None:
        if classes is not None:
            raise FairmtError("give either classes or num_classes, not both")
        for name, arr in (("label", y), ("pred", p)):
            if arr.dtype.kind not in "iu":
                raise FairmtError(f"num_classes={num_classes} needs integer {name}s, got dtype {arr.dtype}")
            bad = np.flatnonzero((arr < 0) | (arr >= num_classes))
            if len(bad):
                raise FairmtError(
                    f"{name} {arr[bad[0]]} at index {bad[0]} is out of range [0, {num_classes}); "
                    "fix the data or the number of classes"
                )
        classes = list(range(num_classes))
    if classes is None:
        classes = sorted(set(y.tolist()) | set(p.tolist()))
    else:
        classes = list(classes)
        unknown = sorted(set(y.tolist()) - set(classes), key=str)
        if unknown:
            raise FairmtError(f"gold labels {unknown[:5]} are not among the classes {classes[:10]}")
    if binary_positive_only is not None:
        eo_classes = "positive" if binary_positive_only else "all"
    if eo_classes not in EO_CLASSES:
        raise FairmtError(f"eo_classes must be one of {', '.join(EO_CLASSES)}, got {eo_classes!r}")
    positive = None
    if len(classes) == 2:
        if positive_class is None:
            positive = classes[1]
        else:
            matches = [c for c in classes if c == positive_class or str(c) == str(positive_class)]
            if not matches:
                raise FairmtError(f"positive_class {positive_class!r} is not one of the classes {classes}")
            positive = matches[0]
    elif positive_class is not None:
        raise FairmtError(
            f"positive_class is for a two-class task; this one has {len(classes)} classes (macro/micro-F1 are given)"
        )
    present = sorted(set(g.tolist()), key=str)
    if group_values is None:
        group_values = present
    else:
        group_values = list(group_values)
        for a in group_values:
            if a not in present:
                notes(f"group {a!r} has no example in this split; it is left out of GAP and ΔEO")
        extra = sorted(set(present) - set(group_values), key=str)
        if extra:
            raise FairmtError(f"groups {extra[:5]} are not among group_values {group_values[:10]}")
        group_values = [a for a in group_values if a in present]
    if len(group_values) < 2:
        raise FairmtError(
            f"fairness metrics need at least two groups in the split, found {group_values}; check the group column"
        )

    from sklearn.metrics import f1_score

    accuracy = float(np.mean(y == p))
    # sklearn's macro-F1 averages over the union of gold and predicted labels; a class never predicted scores 0
    macro_f1 = float(f1_score(y, p, average="macro", zero_division=0))
    f1 = micro_f1 = None
    if positive is not None:
        f1 = float(f1_score(y, p, average="binary", pos_label=positive, zero_division=0))
    else:
        micro_f1 = float(f1_score(y, p, average="micro", zero_division=0))
    result_notes: list[str] = []
    gold_classes = sorted(set(y.tolist()), key=str)
    if len(gold_classes) < 2:  # GAP and ΔEO compare recall across groups: with one class there is nothing to compare
        result_notes.append(
            f"{ONE_CLASS}: the gold labels hold the class {gold_classes[0]!r} only, so GAP and ΔEO "
            "measure nothing (0 whenever every prediction is that class)"
        )
    auc = _auc(y, scores, classes, positive, n, result_notes)

    tpr_g, fpr_g, tpr_all, fpr_all = rates_by_group(y, p, g, classes, group_values)
    for j, c in enumerate(classes):
        if np.isnan(tpr_all[j]):
            notes(f"class {c!r} has no gold example in this split: no TPR, left out of GAP")
            continue
        for i, a in enumerate(group_values):
            if np.isnan(tpr_g[i, j]):
                notes(f"group {a!r} has no gold example of class {c!r}: that TPR term is skipped")
        if np.sum(~np.isnan(tpr_g[:, j])) < 2:
            notes(f"class {c!r} has gold examples from fewer than two groups: left out of GAP")
    gap, per_class = tpr_gap(tpr_g, tpr_all)
    for j, c in enumerate(classes):
        for i, a in enumerate(group_values):
            if np.isnan(fpr_g[i, j]):
                notes(f"group {a!r} has no gold example outside class {c!r}: that FPR term is skipped")
    fpr_gap, _ = rate_gap(fpr_g, fpr_all)
    ppr_g, ppr_all = positive_prediction_rates(p, g, classes, group_values)
    ppr_gap, _ = rate_gap(ppr_g, ppr_all)
    if fpr_gap is None:
        result_notes_pending = ["fpr_gap not computed: no class has a false-positive rate for two groups"]
    else:
        result_notes_pending = []

    if positive is not None:
        jp = classes.index(positive)
        fl = fairlearn_forms(tpr_g[:, jp], fpr_g[:, jp], ppr_g[:, jp])
        for k in ("demographic_parity_ratio", "equalized_odds_ratio"):
            if fl[k] is None and fl[k.replace("ratio", "difference")] is not None:
                result_notes.append(f"{k} is None: a rate is 0 for every group (min / max undefined)")
    else:
        fl = dict.fromkeys(ClassificationResult.FAIRLEARN_FIELDS)
        result_notes.append(
            f"fairlearn's demographic parity and equalized odds forms are for a two-class task "
            f"(pos_label); this one has {len(classes)} classes: not computed"
        )

    eo_mask = np.ones(len(classes), dtype=bool)
    effective_eo = "positive" if (eo_classes == "positive" and positive is not None) else "all"
    if effective_eo == "positive":
        eo_mask = np.array([c == positive for c in classes])
    delta_eo, d_tpr, d_fpr = equalized_odds_difference(tpr_g, fpr_g, tpr_all, fpr_all, eo_mask)

    # leakage
    leak_h = leak_y = protocol = None
    have_train = train_groups is not None
    if hidden is not None:
        if have_train and train_hidden is None:
            raise FairmtError("leakage@h with a training split needs train_hidden as well as hidden")
        leak_h, protocol = leakage(
            hidden,
            g,
            train_features=train_hidden if have_train else None,
            train_groups=train_groups if have_train else None,
            C=svm_C,
            seed=seed,
        )
    if leakage_yhat is None:
        leakage_yhat = hidden is not None or logits is not None or have_train
    if leakage_yhat:
        if logits is not None:
            feats = _logit_features(logits, "logits", n, classes)
            tfeats = None if train_logits is None else _logit_features(train_logits, "train_logits", None, classes)
        else:
            feats = _one_hot(p, classes)
            tfeats = None if train_preds is None else _one_hot(_as_1d(train_preds, "train_preds"), classes)
        if have_train and tfeats is None:
            raise FairmtError("leakage@ŷ with a training split needs train_preds (or train_logits)")
        leak_y, protocol_y = leakage(
            feats,
            g,
            train_features=tfeats if have_train else None,
            train_groups=train_groups if have_train else None,
            C=svm_C,
            seed=seed,
        )
        protocol = protocol or protocol_y

    key = str
    notes.warn_once()
    return ClassificationResult(
        n=n,
        n_classes=len(classes),
        n_groups=len(group_values),
        accuracy=accuracy,
        macro_f1=macro_f1,
        f1=f1,
        micro_f1=micro_f1,
        auc=auc,
        positive_class=None if positive is None else key(positive),
        eo_classes=effective_eo,
        gap=gap,
        ppr_gap=ppr_gap,
        fpr_gap=fpr_gap,
        ppr={key(a): {key(c): _f(ppr_g[i, j]) for j, c in enumerate(classes)} for i, a in enumerate(group_values)},
        **fl,
        group_attributes=attributes,
        delta_eo=delta_eo,
        delta_tpr=d_tpr,
        delta_fpr=d_fpr,
        gap_by_class={key(c): float(v) for c, v in zip(classes, per_class) if not np.isnan(v)},
        tpr={key(a): {key(c): _f(tpr_g[i, j]) for j, c in enumerate(classes)} for i, a in enumerate(group_values)},
        fpr={key(a): {key(c): _f(fpr_g[i, j]) for j, c in enumerate(classes)} for i, a in enumerate(group_values)},
        leakage_h=leak_h,
        leakage_yhat=leak_y,
        leakage_protocol=protocol,
        classes=[key(c) for c in classes],
        groups=[key(a) for a in group_values],
        warnings=notes.items,
        notes=result_notes + result_notes_pending,
        signature=_signature(
            effective_eo,
            None if positive is None else key(positive),
            auc is not None,
            protocol,
            svm_C,
            len(attributes) if attributes else 1,
        ),
    )


ONE_CLASS = "GAP and ΔEO not meaningful"
"""How a result's ``notes`` begin when the gold labels hold one class (the CLI then shows no GAP/ΔEO)."""


def _auc(y: np.ndarray, scores: Any, classes: list, positive: Any, n: int, notes: list[str]) -> float | None:
    """AUC-ROC from class probabilities (see :mod:`fairmt.eval.classification`); ``None`` with a note when it
    cannot be had."""
    if scores is None:
        notes.append(
            "auc not computed: the predictions carry no scores (give each a 'score': the probability of "
            "the positive class, or per-class probabilities)"
        )
        return None
    from sklearn.metrics import roc_auc_score

    try:
        S = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise FairmtError(
            "scores must be numbers: (n,) positive-class probabilities or (n, K) per-class probabilities"
        ) from None
    k = len(classes)
    if S.ndim == 2 and S.shape == (n, 1):
        S = S[:, 0]
    ok = (S.ndim == 1 and len(S) == n and k == 2) or (S.ndim == 2 and S.shape == (n, k))
    if not ok:
        want = f"({n},) positive-class probabilities or ({n}, {k})" if k == 2 else f"({n}, {k})"
        raise FairmtError(
            f"scores have shape {S.shape}; expected {want} per-class probabilities "
            f"(one row per prediction, one column per class in the order {classes[:10]})"
        )
    if not np.all(np.isfinite(S)):
        raise FairmtError("scores hold NaN or infinite values")
    if S.ndim == 2 and k > 2 and (S.min() < 0 or S.max() > 1 or not np.allclose(S.sum(1), 1.0, atol=1e-4)):
        i = int(np.argmax(np.abs(S.sum(1) - 1.0) + (S.min(1) < 0) + (S.max(1) > 1)))
        raise FairmtError(
            f"scores are not per-class probabilities: row {i + 1} is {np.round(S[i], 4).tolist()[:6]} "
            f"(sum {S[i].sum():.4g}); one-vs-rest AUC needs probabilities in [0, 1] that sum to 1 per row "
            "(apply a softmax to logits)"
        )
    if S.min() < 0 or S.max() > 1:
        notes.append(
            f"scores are not probabilities (they range over [{S.min():.4g}, {S.max():.4g}]): AUC-ROC is "
            "computed from their order alone (read as the positive class's logits), which a monotone "
            "rescaling would not change; check that they score the positive class"
        )
        _warnings.warn(notes[-1], stacklevel=3)
    if len(set(y.tolist())) < 2:
        notes.append("auc not computed: the gold labels of this split hold a single class")
        return None
    if k == 2:
        pos_score = S if S.ndim == 1 else S[:, classes.index(positive)]
        return float(roc_auc_score(y == positive, pos_score))
    if set(classes) - set(y.tolist()):
        notes.append("auc not computed: one-vs-rest AUC needs a gold example of every class in the split")
        return None
    try:
        return float(roc_auc_score(y, S, multi_class="ovr", average="macro", labels=classes))
    except ValueError as err:
        raise FairmtError(f"scores cannot give a one-vs-rest AUC: {err}") from None


def _label_kind(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, str):
        return "str"
    return None


def _f(v: float) -> float | None:
    return None if np.isnan(v) else float(v)
