"""Per-group rates and their gaps (see :mod:`fairmt.eval.classification` for the definitions): TPR/FPR/PPR by
(group, class), GAP and the fairlib rate gaps, ΔEO, fairlearn's parity forms, intersectional group keys."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.eval.classification._arrays import Column


def rates_by_group(
    labels: Column, preds: Column, groups: Column, classes: Sequence, group_values: Sequence
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
    preds: Column, groups: Column, classes: Sequence, group_values: Sequence
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
) -> tuple[Column, list[Any] | None, list[str] | None]:
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


def fairlearn_forms(tpr: np.ndarray, fpr: np.ndarray, selection: np.ndarray) -> dict[str, float | None]:
    """fairlearn's demographic parity and equalized odds differences and ratios (see
    :mod:`fairmt.eval.classification`) from the positive class's per-group rates (``nan`` for an empty cell, left
    out): ``tpr``, ``fpr`` and the selection rate ``P(ŷ = pos | a)``, one entry per group."""

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
