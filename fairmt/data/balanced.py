"""Balanced training (BT; Han, Baldwin & Cohn, EACL 2021 — fairlib's ``BT`` / ``BTObj``): instance weights, or a
resampled / downsampled training set, from the joint frequency of (task label ``y``, protected group ``g``).

Targets (``target``), with ``n`` the training-set size, ``n_y``, ``n_g``, ``n_{y,g}`` the counts and ``|·|`` the
number of distinct values (or non-empty cells) present:

=============  =============================================  ===============================================
``target``     instance weight of a row in cell (y, g)        what a resampled set holds
=============  =============================================  ===============================================
``joint``      ``(n / |cells|) / n_{y,g}``                    every (y, g) cell equally often: ``p(y, g)`` uniform
``y``          ``(n / |Y|) / n_y``                            every class equally often (groups as they come)
``g``          ``(n / |G|) / n_g``                            every group equally often (labels as they come)
``eo``         ``n_y / n_{y,g}``                              within each class every group equally often
                                                              (``p(g | y)`` uniform, ``p(y)`` kept: equal opportunity)
=============  =============================================  ===============================================

Methods (``method``):

* ``reweight`` — the rows keep their counts; the training CE becomes ``mean_i(w_i · CE_i)`` (fairlib's
  ``torch.mean(loss * instance_weights)``: the batch mean of the weighted per-example losses, not a weighted mean);
* ``resample`` — per cell (``joint``/``y``/``g``: every key; ``eo``: every (y, g) of a class) draw
  ``⌊n / |keys|⌋`` rows (``eo``: ``⌊n_y / |G|⌋``) **with replacement**;
* ``downsample`` — per cell keep ``min`` over the cells (``eo``: the smallest group of the class) rows, drawn without
  replacement.

Differences from fairlib, each deliberate: draws come from a seeded ``numpy`` generator (fairlib: the global
``random`` module); an ``eo`` cell that is empty (a group with no example of a class, where fairlib fails with a
``TypeError``/``IndexError``) is a :class:`~fairmt.errors.FairmtError` naming the cell for ``resample``/``downsample``,
and is skipped for ``reweight`` (no row carries its weight); the groups of ``eo`` are those present in the whole set.
The indices come back sorted by cell then draw order, as fairlib's (a DataLoader shuffles them anyway).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError

__all__ = ["BALANCE_METHODS", "BALANCE_TARGETS", "balanced_indices", "balanced_weights", "cell_counts"]

BALANCE_TARGETS = ("joint", "y", "g", "eo")
BALANCE_METHODS = ("reweight", "resample", "downsample")


def _check(labels: Sequence, groups: Sequence, target: str) -> tuple[list, list]:
    if target not in BALANCE_TARGETS:
        raise FairmtError(f"balanced-training target must be one of {', '.join(BALANCE_TARGETS)}, got {target!r}")
    y, g = list(labels), list(groups)
    if len(y) != len(g):
        raise FairmtError(f"{len(y)} labels for {len(g)} groups: one of each per training example")
    if not y:
        raise FairmtError("balanced training needs a non-empty training set")
    return y, g


def _key(target: str, y: Any, g: Any) -> Any:
    return (y, g) if target in ("joint", "eo") else y if target == "y" else g


def cell_counts(labels: Sequence, groups: Sequence, target: str = "joint") -> dict[Any, int]:
    """Counts of the keys ``target`` balances: (y, g) pairs, labels or groups."""
    y, g = _check(labels, groups, target)
    return dict(Counter(_key(target, a, b) for a, b in zip(y, g)))


def balanced_weights(labels: Sequence, groups: Sequence, target: str = "joint") -> np.ndarray:
    """One weight per row (see the module docstring's table); float64."""
    y, g = _check(labels, groups, target)
    counts = cell_counts(y, g, target)
    n = len(y)
    if target == "eo":
        n_y = Counter(y)
        weight = {k: n_y[k[0]] / c for k, c in counts.items()}
    else:
        weight = {k: (n / len(counts)) / c for k, c in counts.items()}
    return np.array([weight[_key(target, a, b)] for a, b in zip(y, g)], dtype=np.float64)


def balanced_indices(
    labels: Sequence, groups: Sequence, target: str = "joint", method: str = "resample", seed: int = 0
) -> np.ndarray:
    """Row indices of the resampled (with replacement) or downsampled (without) training set."""
    if method not in ("resample", "downsample"):
        raise FairmtError(f"balanced sampling method must be resample or downsample, got {method!r}")
    y, g = _check(labels, groups, target)
    rng = np.random.default_rng(seed)
    rows: dict[Any, list[int]] = {}
    for i, (a, b) in enumerate(zip(y, g)):
        rows.setdefault(_key(target, a, b), []).append(i)
    out: list[np.ndarray] = []

    def take(idx: list[int], k: int) -> None:
        arr = np.asarray(idx, dtype=np.int64)
        if method == "downsample":
            out.append(rng.permutation(arr)[:k])
        else:
            out.append(rng.choice(arr, size=k, replace=True))

    if target != "eo":
        keys = sorted(rows, key=str)
        k = min(len(rows[c]) for c in keys) if method == "downsample" else int(len(y) / len(keys))
        for c in keys:
            take(rows[c], k)
    else:
        all_groups = sorted(set(g), key=str)
        for label in sorted(set(y), key=str):
            missing = [b for b in all_groups if (label, b) not in rows]
            if missing:
                raise FairmtError(
                    f"balanced training (target eo, {method}): class {label!r} has no example of group(s) "
                    f"{missing[:5]}; equal opportunity cannot be balanced there — use target joint or "
                    "method reweight"
                )
            sizes = [len(rows[(label, b)]) for b in all_groups]
            k = min(sizes) if method == "downsample" else int(sum(sizes) / len(all_groups))
            for b in all_groups:
                take(rows[(label, b)], k)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
