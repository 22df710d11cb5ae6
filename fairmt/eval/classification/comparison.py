"""Comparing several models scored on the same split (see :mod:`fairmt.eval.classification`): Shen et al.'s
trade-off, the distance to the optimum, the area under the performance–fairness front, and the bounded fairness term
they share for a GAP above 1."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.eval.classification._arrays import METRICS_VERSION, Numbers

GAP_FAMILY = ("gap", "ppr_gap", "fpr_gap")
"""The GAP-family measures: sums over groups (``Σ_a |r_{a,y} − r_y|``), so not bounded by 1 — twelve groups with
large disparities give 2.989 (as a fraction). Every trade-off and selection function takes them at any size ≥ 0."""

BOUNDED_FAIRNESS = "1 − GAP / max(1, the largest GAP of the compared models)"
"""How a GAP becomes the fairness term of a trade-off (:func:`bounded_fairness`), in words."""


def _as_fraction_columns(**cols: Numbers | None) -> dict[str, np.ndarray]:
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


def bounded_fairness(gap: Numbers) -> list[float]:
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
    accuracy: Numbers,
    gap: Numbers,
    leakage_h: Numbers,
    leakage_yhat: Numbers,
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


def distance_to_optimum(accuracy: Numbers, gap: Numbers, *, normalise: bool = False) -> list[float]:
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
    performance: Numbers,
    fairness: Numbers | None = None,
    *,
    gap: Numbers | None = None,
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
