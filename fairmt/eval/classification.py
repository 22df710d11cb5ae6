"""Fairness metrics for text classifiers: accuracy, F1, AUC-ROC, GAP, ΔEO, leakage, trade-off, latent subgroups.

Pure numpy / scikit-learn (no torch), so it can score predictions written by any model. Every rate is a fraction in
[0, 1] (the papers print percentages: multiply by 100 to compare).

Notation: ``y`` the gold task label, ``ŷ`` the prediction, ``a`` the protected group. For a class ``y`` and a group
``a``, ``TPR_{a,y} = P(ŷ = y | y, a)`` and ``FPR_{a,y} = P(ŷ = y | label ≠ y, a)``; ``TPR_y``/``FPR_y`` are the same
rates over every example of the split.

* **GAP** (De-Arteaga et al. 2019; Ravfogel et al. 2020; Shen et al. 2022, eq. 4): per class
  ``GAP_y = Σ_a |TPR_{a,y} − TPR_y|`` and ``GAP = sqrt(mean_y GAP_y²)`` (root mean square over classes).
  Multi-group definition: the sum over groups of each group's absolute deviation from the overall TPR of the class,
  as in the fairlib toolkit (Han et al.). With two groups the overall TPR is a weighted mean of the two group TPRs
  and lies between them, so ``GAP_y = |TPR_{a,y} − TPR_{¬a,y}|`` exactly: the two-group case is Shen et al.'s
  TPR difference.
* **PPR-GAP and FPR-GAP** (fairlib's ``PPR_GAP`` and ``FPR_GAP``, Han et al.): the same aggregation as GAP — per
  class ``Σ_a |r_{a,y} − r_y|``, root mean square over the classes — of the positive prediction rate
  ``PPR_{a,y} = P(ŷ = y | a)`` (demographic parity: the share of group ``a`` predicted as ``y``, whatever its label)
  and of ``FPR_{a,y}``. Every scored class counts, also for a two-class task (unlike ``delta_fpr``, a plain sum over
  the positive class in the default ``eo_classes``). Conventions (in the signature as ``ppr,fpr:rms-sumabs-all``):
  exact rates (fairlib adds 1e-5 to every confusion-matrix count), the empty-cell rule below (a PPR cell is empty only
  when its group is absent; an FPR cell when the group has no example outside the class); ``None`` with a note when
  no class has the rate for two groups.
* **fairlearn's forms** (Bird et al., fairlearn; computed beside fairlib's, named as fairlearn names them), for a
  two-class task, of the positive class (fairlearn's ``pos_label``), over the groups scored:
  ``demographic_parity_difference`` = max − min over groups of the selection rate ``P(ŷ = pos | a)`` and
  ``demographic_parity_ratio`` = min / max; ``equalized_odds_difference`` = the larger of the TPR and the FPR
  differences (max − min over groups; fairlearn's default ``agg="worst_case"``) and ``equalized_odds_difference_mean``
  their mean (``agg="mean"``); ``equalized_odds_ratio`` = the smaller of the TPR and FPR ratios (min / max) and
  ``equalized_odds_ratio_mean`` their mean. Unlike fairlib's ``ppr_gap`` (a sum of every group's deviation from the
  overall rate, RMS over classes), these take the two extreme groups, so the two disagree once there are more than
  two groups (with two, ``ppr_gap`` is the demographic parity difference). A group with no example of a rate's denominator is left out of that rate
  (fairmt's empty-cell rule). ``None`` with more than two classes (fairlearn defines them for a binary ``pos_label``)
  and for a ratio whose maximum is 0; the differences are rates (percent in the reports), the ratios are not.
* **Intersectional groups**: ``groups`` may hold several protected attributes per example (a sequence of tuples,
  an (n, k) array, or a mapping ``{attribute: column}``); every metric is then computed over the cross-product groups
  (keys ``"f|young"``, the attribute values joined by ``|`` in the attributes' order). The groups scored are all
  combinations of the values present of each attribute (or ``group_values``, given as tuples); a combination with no
  example is skipped with a warning (the empty-group rule below). ``group_attributes`` names the attributes and the
  signature gets ``|groups:x{k}``.
* **F1**: for a two-class task ``f1`` is the F1 of the positive class (``positive_class``, default the larger
  label; CSCL's Jigsaw F1 and the sampling paper's F1 are this number: the CSCL authors' released evaluation uses
  scikit-learn's ``average="binary"``) and ``macro_f1`` the unweighted mean of both classes' F1; for more classes
  ``f1`` is absent (``None``) and ``macro_f1`` and ``micro_f1`` are given (micro-F1 equals accuracy for single-label
  predictions; it is what the CSCL release reports as ``f1`` on Bias-in-Bios). Beware: that release also prints the
  binary F1 under the name ``macro_f1`` for a two-class task; fairmt's ``macro_f1`` is always the macro average.
* **AUC-ROC** (``auc``) when the predictions carry scores: scikit-learn's ``roc_auc_score`` on the probability of the
  positive class (two classes; ``scores`` of shape (n,), or (n, 2) per-class probabilities) or one-vs-rest,
  macro-averaged over the classes (``scores`` of shape (n, K), rows summing to 1), as the CSCL release. Without
  scores ``auc`` is ``None`` and ``notes`` says so.
* **ΔEO** (Chi et al., CSCL, after Dixon et al. 2018 / Pruksachatkun et al. 2021):
  ``ΔEO = Σ_y Σ_a (|TPR_{a,y} − TPR_y| + |FPR_{a,y} − FPR_y|)``, a *sum* of fraction differences (≥ 0, not bounded
  by 1: at most 2·|Y|·|A|). Two conventions differ for a two-class task, and ``eo_classes`` says which is reported
  (the signature names it): ``"positive"`` (default) — the formula as CSCL prints it, Δ_TPR and Δ_FPR of the positive
  class only (``eo:pos``); ``"all"`` — the CSCL authors' released evaluation (``EO_gap = FPR_gap + FNR_gap`` summed
  over both classes), which counts every term of a two-class task twice, so it is exactly 2× the printed one
  (``eo:all``); the CSCL recipes report it so that numbers compare with the paper's figures. For more classes both
  conventions are the same sum over every class. (The release also scores an empty (group, class) cell as a rate of
  0 instead of skipping it; fairmt skips it with a warning, see below.)
* **Leakage@h / leakage@ŷ** (Shen et al. 2022, after Elazar & Goldberg 2018): accuracy of a linear SVM
  (``sklearn.svm.LinearSVC``) predicting the group from the hidden representation ``h`` / from the prediction. The
  SVM is trained on one split (``train_*`` arguments: the training split, as Shen et al.) and scored on the split
  being evaluated; with no training split, it is the mean accuracy of stratified 5-fold cross-validation on the
  evaluated split (each fold trained on the other four). Leakage@ŷ uses the logits when given, else the one-hot
  predicted label. Chance level is the majority-group rate, not 0.
* **GAP is a sum over groups, not bounded by 1** (``GAP_FAMILY``: ``gap``, ``ppr_gap``, ``fpr_gap``): with many
  groups and large disparities it exceeds 1 (12 groups: 2.989). For a two-class task ``fpr_gap`` equals ``gap``
  exactly: the FPR of one class is 1 − the TPR of the other, so the per-class terms are the same two numbers.
* **Trade-off** (Shen et al. 2022): ``½ N(Acc) + ¼ N(1−GAP) + ⅛ N(1−Leakage@h) + ⅛ N(1−Leakage@ŷ)`` where
  ``N`` divides each value by its maximum over the compared models (so it ranks a set of models; 1 is best). When a
  GAP exceeds 1 the fairness term is the bounded ``1 − GAP / max(1, max GAP)`` (:func:`bounded_fairness`), the same
  as ``1 − GAP`` whenever every GAP is at most 1.
* **Distance to optimum** (DTO; Han et al., fairlib): Euclidean distance of (accuracy, 1−GAP) to the optimum
  (1, 1); with ``normalise=True`` both coordinates are first divided by their maximum over the candidates, as in the
  trade-off score, so the optimum is the best observed accuracy and fairness. Lower is better.
* **Area under the performance–fairness front** (Han et al., fairlib's ``auc_performance_fairness_tradeoff``):
  over a set of models (a sweep), the trapezoidal area under the Pareto front of (performance, 1 − GAP) anchored at
  the worst model (performance 0, fairness 1); see :func:`performance_fairness_auc`. It summarises a method's whole
  trade-off; it never selects a model.
* **Latent-subgroup measures** (Martin & Ogbuokiri): on K-means clusters of embeddings (or given cluster labels):
  cluster dominance ratio = size of the largest cluster / N; representation entropy = Shannon entropy (bits) of the
  cluster-size distribution; subgroup separation distance = mean Euclidean distance between pairs of centroids.

Empty groups and classes (documented policy, never a silent NaN):

* the classes scored are ``classes`` when given (else the sorted union of gold labels and predictions); the groups
  are ``group_values`` when given (else those present);
* a class with no gold example in the split has no TPR: it is left out of GAP and of the TPR part of ΔEO, with a
  warning (its FPR part still counts: every example is a negative for it);
* a (group, class) cell with no example has no rate: the term is skipped, with a warning; a class left with fewer
  than two groups that have examples drops out of GAP (and of ΔEO's TPR part) with a warning;
* a listed group absent from the split is skipped with a warning;
* an empty split, mismatched lengths, fewer than two groups present, or no class with two groups → ``FairmtError``;
* ``strict=True`` turns every warning into a ``FairmtError``.

Caveats are kept in ``ClassificationResult.warnings`` and issued as one :func:`warnings.warn` per call.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import warnings as _warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError

METRICS_VERSION = "1"
EO_CLASSES = ("positive", "all")

__all__ = [
    "METRICS_VERSION",
    "ClassificationResult",
    "BOUNDED_FAIRNESS",
    "EO_CLASSES",
    "FrontAUC",
    "GAP_FAMILY",
    "LatentSubgroupResult",
    "caveats_once",
    "bounded_fairness",
    "classification_metrics",
    "distance_to_optimum",
    "equalized_odds_difference",
    "fairlearn_forms",
    "latent_subgroup_metrics",
    "intersectional_groups",
    "leakage",
    "performance_fairness_auc",
    "positive_prediction_rates",
    "rate_gap",
    "rates_by_group",
    "tpr_gap",
    "tradeoff_scores",
]


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


@dataclasses.dataclass
class LatentSubgroupResult:
    """Martin & Ogbuokiri's cluster-balance measures (fractions; entropy in bits, ``max_entropy`` = log2 C)."""

    n: int
    n_clusters: int
    cluster_sizes: list[int]
    cluster_dominance_ratio: float
    representation_entropy: float
    max_entropy: float
    subgroup_separation_distance: float
    signature: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dataclasses.asdict(self)


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


def _as_1d(x: Any, name: str) -> np.ndarray:
    if isinstance(x, (str, bytes, dict, set, frozenset)):
        raise FairmtError(f"{name} must be a sequence with one entry per example, not a {type(x).__name__}")
    if not hasattr(x, "__len__") and hasattr(x, "__iter__"):
        x = list(x)  # a generator or other one-pass iterable: read once, here (np.asarray would make it a 0-d object)
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise FairmtError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _check_lengths(**arrays: np.ndarray | None) -> int:
    lengths = {k: len(v) for k, v in arrays.items() if v is not None}
    if len(set(lengths.values())) > 1:
        raise FairmtError(f"length mismatch: {lengths}; every array must have one entry per example")
    n = next(iter(lengths.values()))
    if n == 0:
        raise FairmtError("no examples to score (empty split)")
    return n


def rates_by_group(
    labels: Sequence, preds: Sequence, groups: Sequence, classes: Sequence, group_values: Sequence
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-group and overall TPR and FPR for each class.

    Returns ``(tpr_g, fpr_g, tpr_all, fpr_all)``: arrays of shape (groups, classes) and (classes,), with ``nan``
    where the rate has no denominator (no positive / no negative example in the cell).
    """
    y, p, g = np.asarray(labels), np.asarray(preds), np.asarray(groups)
    tpr_g = np.full((len(group_values), len(classes)), np.nan)
    fpr_g = np.full_like(tpr_g, np.nan)
    tpr_all = np.full(len(classes), np.nan)
    fpr_all = np.full(len(classes), np.nan)

    def rate(hit: np.ndarray, mask: np.ndarray) -> float:
        n = int(mask.sum())
        return float(hit[mask].sum()) / n if n else math.nan

    for j, c in enumerate(classes):
        pos, hit = y == c, p == c
        tpr_all[j], fpr_all[j] = rate(hit, pos), rate(hit, ~pos)
        for i, a in enumerate(group_values):
            in_a = g == a
            tpr_g[i, j], fpr_g[i, j] = rate(hit, pos & in_a), rate(hit, ~pos & in_a)
    return tpr_g, fpr_g, tpr_all, fpr_all


def tpr_gap(tpr_g: np.ndarray, tpr_all: np.ndarray) -> tuple[float, np.ndarray]:
    """GAP from :func:`rates_by_group` output: ``sqrt(mean_y (Σ_a |TPR_{a,y} − TPR_y|)²)`` over classes with a TPR
    for at least two groups (others get ``nan`` in the per-class array). Raises when no class qualifies."""
    dev = np.abs(tpr_g - tpr_all[None, :])
    ok = (np.sum(~np.isnan(tpr_g), axis=0) >= 2) & ~np.isnan(tpr_all)
    per_class = np.where(ok, np.nansum(dev, axis=0), np.nan)
    if not ok.any():
        raise FairmtError("GAP is undefined: no class has gold examples from at least two groups in this split")
    return float(np.sqrt(np.mean(per_class[ok] ** 2))), per_class


def rate_gap(rate_g: np.ndarray, rate_all: np.ndarray) -> tuple[float | None, np.ndarray]:
    """fairlib's aggregation of any per-class rate: ``sqrt(mean_y (Σ_a |r_{a,y} − r_y|)²)`` over the classes with the
    rate for at least two groups (empty cells, ``nan``, skipped); ``(None, all-nan)`` when no class qualifies."""
    dev = np.abs(rate_g - rate_all[None, :])
    ok = (np.sum(~np.isnan(rate_g), axis=0) >= 2) & ~np.isnan(rate_all)
    per_class = np.where(ok, np.nansum(dev, axis=0), np.nan)
    if not ok.any():
        return None, per_class
    return float(np.sqrt(np.mean(per_class[ok] ** 2))), per_class


def positive_prediction_rates(
    preds: Sequence, groups: Sequence, classes: Sequence, group_values: Sequence
) -> tuple[np.ndarray, np.ndarray]:
    """``(ppr_g, ppr_all)``: ``PPR_{a,y} = P(ŷ = y | a)`` of shape (groups, classes) and ``PPR_y = P(ŷ = y)``
    (``nan`` for a group with no example)."""
    p, g = np.asarray(preds), np.asarray(groups)
    ppr_g = np.full((len(group_values), len(classes)), np.nan)
    ppr_all = np.array([float(np.mean(p == c)) if len(p) else np.nan for c in classes])
    for i, a in enumerate(group_values):
        in_a = g == a
        if in_a.any():
            ppr_g[i] = [float(np.mean(p[in_a] == c)) for c in classes]
    return ppr_g, ppr_all


SEP = "|"


def intersectional_groups(
    groups: Any, group_values: Sequence | None = None
) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    """Cross-product group keys of several protected attributes.

    ``groups``: a sequence of tuples / an (n, k) array (attributes ``a0 … a{k-1}``) or a mapping
    ``{attribute: column}``. Returns ``(keys, group_values, attributes)``: one string key per example (the values
    joined by ``|``), the keys of every combination of the values present of each attribute (or of the given
    ``group_values`` tuples), and the attribute names. A one-dimensional ``groups`` is returned unchanged with
    ``(group_values, None)``.
    """
    from collections.abc import Mapping

    if not isinstance(groups, Mapping) and not hasattr(groups, "__len__") and hasattr(groups, "__iter__"):
        groups = list(groups)  # a generator or other one-pass iterable: read once, here
    if isinstance(groups, Mapping):
        names = [str(k) for k in groups]
        cols = [list(v) for v in groups.values()]
        if not cols:
            raise FairmtError("groups is an empty mapping: give at least one protected attribute")
        lengths = {len(c) for c in cols}
        if len(lengths) != 1:
            raise FairmtError(
                f"the protected attributes have different lengths: {dict(zip(names, (len(c) for c in cols)))}"
            )
        rows = list(zip(*cols))
    else:
        try:
            arr = np.asarray(groups, dtype=object)
        except ValueError:
            raise FairmtError(
                "groups must be one value per example, or one tuple of the same length per example "
                "(intersectional groups)"
            ) from None
        if arr.ndim == 1 and not (len(arr) and isinstance(arr[0], (tuple, list))):
            return groups, (None if group_values is None else list(group_values)), None
        if arr.ndim != 2:
            raise FairmtError(
                "intersectional groups must hold one tuple of the same length per example, got ragged or nested values"
            )
        rows = [tuple(r) for r in arr.tolist()]
        names = [f"a{i}" for i in range(arr.shape[1])]
    if not rows:
        raise FairmtError("no examples to score (empty split)")
    for r in rows:
        for v in r:
            if SEP in str(v):
                raise FairmtError(
                    f"a protected-attribute value holds {SEP!r} ({v!r}), the separator of "
                    "intersectional group keys; rename it"
                )
    k = len(names)
    if any(len(r) != k for r in rows):
        raise FairmtError(f"every example needs one value per protected attribute ({k})")

    def key(t) -> str:
        return SEP.join(str(v) for v in t)

    keys = np.array([key(r) for r in rows], dtype=object)
    if group_values is None:
        import itertools

        values = [sorted({r[i] for r in rows}, key=str) for i in range(k)]
        combos = [key(c) for c in itertools.product(*values)]
    else:
        combos = []
        for t in group_values:
            if not isinstance(t, (tuple, list)) or len(t) != k:
                raise FairmtError(f"intersectional group_values must be tuples of {k} values, got {t!r}")
            combos.append(key(t))
    return keys, combos, names


def equalized_odds_difference(
    tpr_g: np.ndarray, fpr_g: np.ndarray, tpr_all: np.ndarray, fpr_all: np.ndarray, class_mask: np.ndarray | None = None
) -> tuple[float, float, float]:
    """``(ΔEO, Δ_TPR, Δ_FPR)`` with ``Δ_TPR = Σ_y Σ_a |TPR_{a,y} − TPR_y|`` (likewise FPR) over the classes in
    ``class_mask`` (all by default); empty cells (``nan``) and classes with fewer than two groups are skipped."""
    mask = np.ones(tpr_all.shape, dtype=bool) if class_mask is None else np.asarray(class_mask, dtype=bool)

    def part(rg: np.ndarray, ra: np.ndarray) -> float:
        ok = mask & (np.sum(~np.isnan(rg), axis=0) >= 2) & ~np.isnan(ra)
        return float(np.nansum(np.abs(rg - ra[None, :])[:, ok]))

    d_tpr, d_fpr = part(tpr_g, tpr_all), part(fpr_g, fpr_all)
    return d_tpr + d_fpr, d_tpr, d_fpr


def leakage(
    features: Any,
    groups: Sequence,
    *,
    train_features: Any = None,
    train_groups: Sequence | None = None,
    C: float = 1.0,
    folds: int = 5,
    seed: int = 0,
    max_iter: int = 5000,
) -> tuple[float, str]:
    """Linear leakage: accuracy of ``LinearSVC(C)`` predicting ``groups`` from ``features``.

    With ``train_features``/``train_groups`` the SVM is fitted on them and scored on ``features`` (protocol
    ``"train→eval"``); otherwise stratified ``folds``-fold cross-validation on ``features`` (``"5-fold-cv"``).
    Returns ``(accuracy, protocol)``.
    """
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.svm import LinearSVC

    X = np.asarray(features, dtype=np.float64)
    g = _as_1d(groups, "groups")
    if X.ndim != 2 or len(X) != len(g):
        raise FairmtError(f"leakage features must be (n, d) with n = {len(g)} groups, got shape {X.shape}")
    clf = LinearSVC(C=C, dual="auto", max_iter=max_iter, random_state=seed)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", category=Warning)  # ConvergenceWarning on near-separable data
        if train_features is not None:
            Xt = np.asarray(train_features, dtype=np.float64)
            gt = _as_1d(train_groups, "train_groups")
            if Xt.ndim != 2 or Xt.shape[1] != X.shape[1] or len(Xt) != len(gt):
                raise FairmtError(
                    f"training features for leakage must be (n, {X.shape[1]}) with one group each, got {Xt.shape}"
                )
            if len(np.unique(gt)) < 2:
                raise FairmtError("leakage: the training split holds a single group; a classifier cannot be fitted")
            clf.fit(Xt, gt)
            return float(np.mean(clf.predict(X) == g)), "train→eval"
        _, counts = np.unique(g, return_counts=True)
        k = int(min(folds, counts.min()))
        if len(counts) < 2 or k < 2:
            raise FairmtError(
                "leakage by cross-validation needs at least two groups with two examples each; "
                "pass a training split instead"
            )
        cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
        return float(np.mean(cross_val_score(clf, X, g, cv=cv))), f"{k}-fold-cv"


def _logit_features(value: Any, name: str, n: int | None, classes: Sequence) -> np.ndarray:
    """The (n, c) features of leakage@ŷ from ``logits``: one column per class, or — for a task of two classes —
    a single column (or a vector): the positive class's sigmoid logit, as a binary head with one output gives it
    (a linear SVM reads the same from it as from the two softmax logits, whose difference it is). Any other shape is
    refused, naming it (one column for more classes, fewer columns than classes, not 1-D or 2-D, another number of
    rows)."""
    X = np.asarray(value, dtype=np.float64)
    k = len(classes)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise FairmtError(f"{name} must be (n, {k}) logits (one column per class), got shape {np.shape(value)}")
    if X.shape[1] == 1 and k > 2:
        raise FairmtError(
            f"{name} has one column (shape {np.shape(value)}), but the task has {k} classes: give one "
            f"logit per class, (n, {k}); a single column is read as a sigmoid logit for two classes only"
        )
    if 1 < X.shape[1] < k:
        raise FairmtError(
            f"{name} has {X.shape[1]} columns (shape {np.shape(value)}) for {k} classes: give one logit "
            f"per class, (n, {k})"
        )
    if n is not None and len(X) != n:
        raise FairmtError(f"{name} has {len(X)} rows (shape {np.shape(value)}) for {n} examples")
    return X


def _one_hot(values: np.ndarray, classes: Sequence) -> np.ndarray:
    index = {c: i for i, c in enumerate(classes)}
    out = np.zeros((len(values), len(classes)))
    for r, v in enumerate(values):
        if v in index:
            out[r, index[v]] = 1.0
    return out


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


def fairlearn_forms(tpr: np.ndarray, fpr: np.ndarray, selection: np.ndarray) -> dict[str, float | None]:
    """fairlearn's demographic parity and equalized odds differences and ratios (see the module docstring) from the
    positive class's per-group rates (``nan`` for an empty cell, left out): ``tpr``, ``fpr`` and the selection rate
    ``P(ŷ = pos | a)``, one entry per group."""

    def spread(r: np.ndarray) -> tuple[float | None, float | None]:
        r = r[~np.isnan(r)]
        if len(r) < 2:
            return None, None
        hi, lo = float(r.max()), float(r.min())
        return hi - lo, (lo / hi if hi > 0 else None)

    dp_d, dp_r = spread(np.asarray(selection, dtype=np.float64))
    (t_d, t_r), (f_d, f_r) = spread(np.asarray(tpr, dtype=np.float64)), spread(np.asarray(fpr, dtype=np.float64))

    def agg(a: float | None, b: float | None, how) -> float | None:
        return None if a is None or b is None else float(how(a, b))

    return {
        "demographic_parity_difference": dp_d,
        "demographic_parity_ratio": dp_r,
        "equalized_odds_difference": agg(t_d, f_d, max),
        "equalized_odds_difference_mean": agg(t_d, f_d, lambda a, b: (a + b) / 2),
        "equalized_odds_ratio": agg(t_r, f_r, min),
        "equalized_odds_ratio_mean": agg(t_r, f_r, lambda a, b: (a + b) / 2),
    }


# ---------------------------------------------------------------------------------------------------- main API
def classification_metrics(
    labels: Sequence,
    preds: Sequence,
    groups: Sequence,
    hidden: Any = None,
    *,
    logits: Any = None,
    train_hidden: Any = None,
    train_preds: Sequence | None = None,
    train_logits: Any = None,
    train_groups: Sequence | None = None,
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
            both classes, the CSCL authors' released evaluation: 2× on a two-class task); see the module docstring.
        binary_positive_only: older spelling of ``eo_classes`` (True = "positive", False = "all").
        svm_C, seed: LinearSVC settings for the leakage probes.
        strict: raise ``FairmtError`` instead of warning about empty groups/classes.

    See the module docstring for the formulas and the empty-group policy.

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
    """AUC-ROC from class probabilities (see the module docstring); ``None`` with a note when it cannot be had."""
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


# ------------------------------------------------------------------------------------- comparing several models
GAP_FAMILY = ("gap", "ppr_gap", "fpr_gap")
"""The GAP-family measures: sums over groups (``Σ_a |r_{a,y} − r_y|``), so not bounded by 1 — twelve groups with
large disparities give 2.989 (as a fraction). Every trade-off and selection function takes them at any size ≥ 0."""

BOUNDED_FAIRNESS = "1 − GAP / max(1, the largest GAP of the compared models)"
"""How a GAP becomes the fairness term of a trade-off (:func:`bounded_fairness`), in words."""


def _as_fraction_columns(**cols: Sequence[float] | None) -> dict[str, np.ndarray]:
    """One value per model of each metric. ``gap`` (and any GAP-family name) may exceed 1 (a sum over groups); the
    others are fractions in [0, 1], and one above 1 is a percentage: the error says to divide by 100."""
    out = {}
    for name, col in cols.items():
        if col is None:
            continue
        arr = np.asarray(col, dtype=np.float64)
        if arr.ndim != 1 or len(arr) == 0:
            raise FairmtError(f"{name} must be a non-empty list with one value per model")
        if np.any(np.isnan(arr)) or np.any(np.isinf(arr)):
            raise FairmtError(f"{name} must hold finite numbers, got {arr.tolist()}")
        if name in GAP_FAMILY:
            if np.any(arr < 0):
                raise FairmtError(f"{name} must be ≥ 0 (a sum of absolute rate differences), got {arr.tolist()}")
        elif np.any(arr > 1):
            raise FairmtError(f"{name} must hold fractions in [0, 1] (divide percentages by 100), got {arr.tolist()}")
        elif np.any(arr < 0):
            hint = (
                " (1 − GAP with a GAP above 1? GAP sums over groups and may exceed 1: pass gap= instead, and the "
                f"bounded form {BOUNDED_FAIRNESS} is used)"
                if name == "fairness"
                else ""
            )
            raise FairmtError(f"{name} must hold fractions in [0, 1], got {arr.tolist()}{hint}")
        out[name] = arr
    lengths = {len(v) for v in out.values()}
    if len(lengths) > 1:
        raise FairmtError("every metric list must have one value per model")
    return out


def bounded_fairness(gap: Sequence[float]) -> list[float]:
    """The fairness term of the trade-offs, in [0, 1], from GAP-family values (one per compared model, fractions):
    ``1 − GAP / max(1, max GAP)``. With every GAP ≤ 1 it is the papers' ``1 − GAP`` unchanged; a GAP can exceed 1
    (it sums over groups: see :data:`GAP_FAMILY`), and then every GAP is divided by the largest, so the least fair
    model gets 0 and the order of the models is kept."""
    g = _as_fraction_columns(gap=gap)["gap"]
    return [float(v) for v in 1.0 - g / max(1.0, float(g.max()))]


def _normalise_by_max(x: np.ndarray, name: str, *, tie: bool = False) -> np.ndarray:
    m = x.max()
    if m <= 0:
        if tie and np.all(x == m):  # every model equally unfair (the same GAP above 1): the term ranks nobody
            return np.ones_like(x)
        raise FairmtError(f"cannot normalise {name}: its maximum over the models is 0")
    return x / m


def tradeoff_scores(
    accuracy: Sequence[float],
    gap: Sequence[float],
    leakage_h: Sequence[float],
    leakage_yhat: Sequence[float],
) -> list[float]:
    """Shen et al. (2022) trade-off of each compared model (1 = best on every metric).

    ``Tradeoff = ½·N(Acc) + ¼·N(F) + ⅛·N(1−Leakage@h) + ⅛·N(1−Leakage@ŷ)``, ``N`` = division by the maximum of
    that quantity over the compared models, ``F`` the bounded fairness ``1 − GAP / max(1, max GAP)``
    (:func:`bounded_fairness`): Shen et al.'s ``1 − GAP`` whenever every GAP is at most 1; GAP sums over groups and
    can exceed 1 (many groups), and the bounded form keeps the term in [0, 1] (a GAP above 1 would make ``1 − GAP``
    negative and its N meaningless). Inputs are fractions, one per model, all scored on the same split (GAP may
    exceed 1; the others above 1 are percentages and are refused). Fed the mean metrics of Shen et al.'s Table 1 it
    gives their Moji trade-offs to two decimals and the other three datasets within 0.015 (their scores are averages
    over 10 runs, not the score of the averages).
    """
    cols = _as_fraction_columns(accuracy=accuracy, gap=gap, leakage_h=leakage_h, leakage_yhat=leakage_yhat)
    score = (
        0.5 * _normalise_by_max(cols["accuracy"], "accuracy")
        + 0.25 * _normalise_by_max(np.asarray(bounded_fairness(cols["gap"])), "1-GAP", tie=True)
        + 0.125 * _normalise_by_max(1 - cols["leakage_h"], "1-leakage@h")
        + 0.125 * _normalise_by_max(1 - cols["leakage_yhat"], "1-leakage@ŷ")
    )
    return [float(s) for s in score]


TRADEOFF_DEFINITION = (
    "Tradeoff = 1/2·N(accuracy) + 1/4·N(1 − GAP) + 1/8·N(1 − leakage@h) + 1/8·N(1 − leakage@ŷ), "
    "N = division by the maximum over the compared models (Shen et al. 2022, Evaluation Metrics "
    f"and Table 1); a GAP above 1 (GAP sums over groups) enters as {BOUNDED_FAIRNESS}"
)
"""Shen et al.'s Tradeoff in words (:func:`tradeoff_scores`), printed beside every score of it."""


def distance_to_optimum(accuracy: Sequence[float], gap: Sequence[float], *, normalise: bool = False) -> list[float]:
    """Distance of each model's (accuracy, 1−GAP) to the optimum (1, 1); lower is better.

    ``DTO = sqrt((1 − acc)² + (1 − (1 − GAP))²)``. With ``normalise=True`` accuracy and the fairness are divided by
    their maximum over the candidates first (the normalisation of Shen et al.'s trade-off), so the optimum is the best
    accuracy and the best fairness observed; the fairness is then the bounded ``1 − GAP / max(1, max GAP)``
    (:func:`bounded_fairness`; ``1 − GAP`` when every GAP is at most 1). Without, the optimum is the absolute (1, 1),
    a model's score does not depend on the others, and a GAP above 1 (GAP sums over groups) is a longer distance like
    any other: ``sqrt((1 − acc)² + GAP²)``, unbounded.
    """
    cols = _as_fraction_columns(accuracy=accuracy, gap=gap)
    acc = cols["accuracy"]
    if normalise:
        acc = _normalise_by_max(acc, "accuracy")
        fair = _normalise_by_max(np.asarray(bounded_fairness(cols["gap"])), "1-GAP", tie=True)
    else:
        fair = 1 - cols["gap"]
    return [float(d) for d in np.sqrt((1 - acc) ** 2 + (1 - fair) ** 2)]


@dataclasses.dataclass
class FrontAUC:
    """Area under a performance–fairness front (:func:`performance_fairness_auc`). ``curve`` holds the
    ``(performance, fairness)`` points integrated, in increasing performance, the anchor and any interpolated
    threshold point included; ``front`` the indices of the input points on the Pareto front."""

    auc: float
    curve: list[tuple[float, float]]
    front: list[int]
    random_performance: float
    performance_threshold: float | None
    normalised: bool
    signature: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def performance_fairness_auc(
    performance: Sequence[float],
    fairness: Sequence[float] | None = None,
    *,
    gap: Sequence[float] | None = None,
    random_performance: float = 0.0,
    performance_threshold: float | None = None,
    interpolation: str = "linear",
    normalise: bool = False,
) -> FrontAUC:
    """Area under the performance–fairness trade-off front, as fairlib's ``auc_performance_fairness_tradeoff``
    (Han et al.), a summary of a whole sweep of one method (never a rule to select a model with).

    Inputs: one ``performance`` (e.g. accuracy) and one ``fairness`` (``1 − GAP``) per model, fractions, higher better,
    all scored on the same split; or, instead of ``fairness``, the ``gap`` of each model (a GAP-family measure, which
    sums over groups and may exceed 1): the fairness is then the bounded ``1 − GAP / max(1, max GAP)``
    (:func:`bounded_fairness`; ``1 − GAP`` when every GAP is at most 1). The points on the Pareto front (no other point at least as good on both and better
    on one) are kept, the worst model ``(random_performance, 1)`` (fairlib's default 0: a constant model is perfectly
    fair) is added, and the fairness is integrated over performance with the trapezoidal rule, the points taken in
    increasing performance:

        AUC = Σ_i ½ (f_i + f_{i+1}) (p_{i+1} − p_i)

    ``performance_threshold``: only the part of the curve at or above that performance counts (0 when no model
    reaches it; clamped to ``random_performance`` below it); the fairness at the threshold is interpolated between
    the nearest points below and above it (``interpolation``: ``linear`` or ``constant`` — the nearer point's).
    ``normalise``: divide by ``1 − min performance`` of the curve (the largest area a curve could have there).
    """
    if (fairness is None) == (gap is None):
        raise FairmtError(
            "give either fairness (1 − GAP, in [0, 1]) or gap (any GAP-family value ≥ 0), not both or neither"
        )
    if gap is not None:
        fairness = bounded_fairness(gap)
    cols = _as_fraction_columns(performance=performance, fairness=fairness)
    if interpolation not in ("linear", "constant"):
        raise FairmtError(f"interpolation must be linear or constant, got {interpolation!r}")
    perf, fair = cols["performance"], cols["fairness"]
    front = [
        i
        for i in range(len(perf))
        if not np.any((perf >= perf[i]) & (fair >= fair[i]) & ((perf > perf[i]) | (fair > fair[i])))
    ]
    pts = sorted([(float(perf[i]), float(fair[i])) for i in front] + [(float(random_performance), 1.0)])
    if performance_threshold is not None:
        t = float(performance_threshold)
        best = max(p for p, _ in pts)
        if t > best:
            pts = []
        else:
            t = max(t, min(p for p, _ in pts))
            below = max((q for q in pts if q[0] <= t), key=lambda q: q[0])
            above = min((q for q in pts if q[0] >= t), key=lambda q: q[0])
            if above[0] == below[0]:
                f_t = below[1] if below[0] == t else above[1]
            elif interpolation == "linear":
                f_t = below[1] + (above[1] - below[1]) * (t - below[0]) / (above[0] - below[0])
            else:
                f_t = below[1] if (t - below[0]) <= (above[0] - t) else above[1]
            pts = sorted([q for q in pts if q[0] >= t and q[0] != t] + [(t, f_t)])
    if len(pts) < 2:
        area = 0.0
    else:
        area = float(sum(0.5 * (f0 + f1) * (p1 - p0) for (p0, f0), (p1, f1) in zip(pts, pts[1:])))
    if normalise and pts:
        span = 1.0 - min(p for p, _ in pts)
        area = area / span if span > 0 else 0.0
    sig = (
        f"fairmt-front-auc:v{METRICS_VERSION}|pareto|anchor:{random_performance:g},1|trapz"
        + (f"|thr:{performance_threshold:g}-{interpolation}" if performance_threshold is not None else "")
        + ("|norm" if normalise else "")
    )
    return FrontAUC(
        auc=area,
        curve=pts,
        front=front,
        random_performance=float(random_performance),
        performance_threshold=performance_threshold,
        normalised=normalise,
        signature=sig,
    )


# ------------------------------------------------------------------------------------------- latent subgroups
def latent_subgroup_metrics(
    embeddings: Any = None,
    *,
    cluster_labels: Sequence[int] | None = None,
    cluster_sizes: Sequence[int] | None = None,
    n_clusters: int = 4,
    seed: int = 0,
) -> LatentSubgroupResult:
    """Martin & Ogbuokiri's latent-subgroup measures of an embedding space.

    Clusters: ``cluster_labels`` when given, else K-means (``n_clusters``, default K = 4 as the paper) on
    ``embeddings``. ``cluster_sizes`` alone gives the two size-based measures (separation distance is then ``nan``
    and flagged in the signature).

    * cluster dominance ratio = max_c N_c / N (lower = more balanced; 1/C is perfect balance);
    * representation entropy = −Σ_c p(c) log2 p(c), p(c) = N_c / N (bits; log2 C is uniform);
    * subgroup separation distance = mean over centroid pairs of ‖μ_c − μ_c'‖₂ (higher = more distinct).

    Empty clusters (a label value in ``range(C)`` with no member) count in C with N_c = 0 and have no centroid.
    """
    X = None if embeddings is None else np.asarray(embeddings, dtype=np.float64)
    if cluster_sizes is not None:
        sizes = np.asarray(cluster_sizes, dtype=np.int64)
        labels = None
    else:
        if X is None or X.ndim != 2 or len(X) == 0:
            raise FairmtError("latent_subgroup_metrics needs (n, d) embeddings, cluster labels or cluster sizes")
        if cluster_labels is None:
            from sklearn.cluster import KMeans

            if len(X) < n_clusters:
                raise FairmtError(f"K-means with K={n_clusters} needs at least {n_clusters} embeddings, got {len(X)}")
            labels = KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit_predict(X)
        else:
            labels = _as_1d(cluster_labels, "cluster_labels").astype(np.int64)
            if len(labels) != len(X):
                raise FairmtError(f"{len(labels)} cluster labels for {len(X)} embeddings")
            if labels.min() < 0:
                raise FairmtError("cluster labels must be non-negative integers")
        sizes = np.bincount(labels, minlength=n_clusters if cluster_labels is None else 0)
    if sizes.sum() <= 0 or np.any(sizes < 0):
        raise FairmtError(f"cluster sizes must be non-negative with a positive total, got {sizes.tolist()}")
    p = sizes / sizes.sum()
    nz = p[p > 0]
    entropy = float(-(nz * np.log2(nz)).sum())
    sep = math.nan
    if labels is not None and X is not None:
        cents = np.stack([X[labels == c].mean(axis=0) for c in range(len(sizes)) if sizes[c] > 0])
        if len(cents) >= 2:
            d = np.linalg.norm(cents[:, None, :] - cents[None, :, :], axis=-1)
            iu = np.triu_indices(len(cents), k=1)
            sep = float(d[iu].mean())
    return LatentSubgroupResult(
        n=int(sizes.sum()),
        n_clusters=len(sizes),
        cluster_sizes=[int(s) for s in sizes],
        cluster_dominance_ratio=float(p.max()),
        representation_entropy=entropy,
        max_entropy=float(math.log2(len(sizes))) if len(sizes) else 0.0,
        subgroup_separation_distance=sep,
        signature=f"fairmt-latent:v{METRICS_VERSION}|k:{len(sizes)}|entropy:bits|sep:euclid-centroid-mean"
        + ("|sizes-only" if labels is None else ""),
    )
