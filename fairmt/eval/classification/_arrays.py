"""Shared input checks of :mod:`fairmt.eval.classification`: one column per example, equal lengths; the metrics'
version stamped in every signature."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

import numpy as np

from fairmt.errors import FairmtError

METRICS_VERSION = "1"
"""The version of the classification metrics' definitions, first field of every signature they write."""

Column: TypeAlias = Iterable[Any]
"""One entry per example: a list, a tuple, a numpy array, a pandas Series, or a one-pass iterable (read once)."""

Numbers: TypeAlias = Sequence[float] | np.ndarray
"""One number per compared model (a list or a one-dimensional array)."""


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
