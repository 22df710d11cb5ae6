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

The package holds one module per job: :mod:`~fairmt.eval.classification.metrics` (one model on one split),
:mod:`~fairmt.eval.classification.rates` (per-group rates and gaps), :mod:`~fairmt.eval.classification.probes`
(leakage), :mod:`~fairmt.eval.classification.comparison` (several models: trade-off, DTO, front AUC) and
:mod:`~fairmt.eval.classification.latent` (latent subgroups); every public name is importable from here.
"""

from fairmt.eval.classification._arrays import METRICS_VERSION
from fairmt.eval.classification.comparison import (
    BOUNDED_FAIRNESS,
    GAP_FAMILY,
    TRADEOFF_DEFINITION,
    FrontAUC,
    bounded_fairness,
    distance_to_optimum,
    performance_fairness_auc,
    tradeoff_scores,
)
from fairmt.eval.classification.latent import LatentSubgroupResult, latent_subgroup_metrics
from fairmt.eval.classification.metrics import (
    EO_CLASSES,
    ONE_CLASS,
    ClassificationResult,
    caveats_once,
    classification_metrics,
)
from fairmt.eval.classification.probes import leakage
from fairmt.eval.classification.rates import (
    SEP,
    equalized_odds_difference,
    fairlearn_forms,
    intersectional_groups,
    positive_prediction_rates,
    rate_gap,
    rates_by_group,
    tpr_gap,
)

__all__ = [
    "METRICS_VERSION",
    "ClassificationResult",
    "BOUNDED_FAIRNESS",
    "EO_CLASSES",
    "FrontAUC",
    "GAP_FAMILY",
    "ONE_CLASS",
    "SEP",
    "TRADEOFF_DEFINITION",
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
