"""Checks of the values handed to fairmt's evaluators from Python (the ``evaluate`` modules, ``classification_metrics``,
``cced_gap``): a missing argument, a float where a class label belongs, ragged or non-finite vectors each end in one
:class:`~fairmt.errors.FairmtError` (a ``ValueError``) naming the argument and the first bad entry — never a number
computed from them (a NaN representation gives a NaN leakage; a probability cast to a label gives a wrong accuracy).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fairmt.errors import FairmtError


def sequence(value: Any, name: str, *, allow_empty: bool = False) -> list:
    """``value`` as a list, read once: a list, tuple, generator or other iterable; a numpy array, torch tensor or
    pandas Series or DataFrame by position (``tolist``: Python numbers, whatever the Series' index); None, strings,
    dicts and sets (no order) are refused by name."""
    if value is None:
        raise FairmtError(f"{name} is None: give a list (one entry per example)")
    if isinstance(value, (str, bytes)):
        raise FairmtError(f"{name} must be a list (one entry per example), not a string")
    if isinstance(value, (dict, set, frozenset)):
        raise FairmtError(f"{name} must be a list (one entry per example), not a {type(value).__name__} (no order)")
    if callable(getattr(value, "to_numpy", None)):  # pandas Series / DataFrame: by position, rows for a frame
        value = value.to_numpy()
    try:
        out = value.tolist() if callable(getattr(value, "tolist", None)) else list(value)
        if not isinstance(out, list):  # a 0-d array or tensor
            raise TypeError
    except TypeError:
        raise FairmtError(f"{name} must be a list (one entry per example), got {type(value).__name__}") from None
    if not out and not allow_empty:
        raise FairmtError(f"{name} is empty: there is nothing to score")
    return out


def labels(value: Any, name: str) -> list:
    """Class labels: all integers or all strings. A float (a probability, or 1.0) is refused rather than cast."""
    out = sequence(value, name)
    for i, v in enumerate(out):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer, str)):
            what = "a float (a probability or score?)" if isinstance(v, (float, np.floating)) else type(v).__name__
            raise FairmtError(
                f"{name}[{i}] is {what} ({v!r}): labels are class ids (integers) or names (strings); give "
                "the predicted class, not a probability"
            )
    kinds = {isinstance(v, str) for v in out}
    if len(kinds) > 1:
        raise FairmtError(f"{name} mixes integers and strings; use one kind of label")
    return out


def texts(value: Any, name: str) -> list[str]:
    """A non-empty list of strings."""
    out = sequence(value, name)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise FairmtError(f"{name}[{i}] is {type(v).__name__} ({v!r}), not a string")
    return out


def matrix(value: Any, name: str, *, rows: int | None = None, nonzero: bool = False) -> np.ndarray:
    """A 2-D float64 array: every row a list of finite numbers of the same length (``rows`` of them when given);
    ``nonzero`` refuses a row of zeros (it has no direction to normalise)."""
    out = sequence(value, name)
    width = None
    for i, row in enumerate(out):
        try:
            vec = [float(x) for x in row]
        except (TypeError, ValueError):
            raise FairmtError(f"{name}[{i}] is not a list of numbers ({str(row)[:60]})") from None
        if width is None:
            width = len(vec)
        if len(vec) != width or not vec:
            raise FairmtError(
                f"{name}[{i}] has {len(vec)} values but the first row has {width}: every vector must "
                "have the same length"
            )
        bad = next((j for j, x in enumerate(vec) if not math.isfinite(x)), None)
        if bad is not None:
            raise FairmtError(f"{name}[{i}][{bad}] is {vec[bad]}: vectors must hold finite numbers")
        if nonzero and not any(vec):
            raise FairmtError(f"{name}[{i}] is a zero vector: it cannot be L2-normalised (normalize=True)")
    if rows is not None and len(out) != rows:
        raise FairmtError(f"{name} has {len(out)} rows but there are {rows} examples")
    return np.asarray(out, dtype=np.float64)


def groups(value: Any, name: str) -> list | dict[str, list]:
    """Protected groups: one label per example (integers or strings, :func:`labels`), one tuple of the same length
    per example, or ``{attribute: column}`` (intersectional groups,
    :func:`fairmt.eval.classification.intersectional_groups`): a list, a list of tuples, or a dict of equal-length label
    columns."""
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        if not value:
            raise FairmtError(f"{name} is an empty dict: give at least one protected attribute ({{attribute: column}})")
        cols = {str(k): labels(v, f"{name}[{k!r}]") for k, v in value.items()}
        lengths = {k: len(v) for k, v in cols.items()}
        if len(set(lengths.values())) > 1:
            raise FairmtError(
                f"{name}: the protected attributes have different lengths {lengths}; give one value per example in each"
            )
        return cols
    out = sequence(value, name)
    if not isinstance(out[0], (tuple, list)):
        return labels(out, name)
    width = len(out[0])
    for i, row in enumerate(out):
        if not isinstance(row, (tuple, list)) or len(row) != width or not row:
            raise FairmtError(
                f"{name}[{i}] is {row!r}: intersectional groups need one tuple of {width} values per example"
            )
        labels(list(row), f"{name}[{i}]")
    return [tuple(r) for r in out]


def _length(value: Any) -> int:
    """Examples in a checked value (a dict of columns: the length of a column)."""
    return len(next(iter(value.values()))) if isinstance(value, dict) else len(value)


def finite_array(value: Any, name: str) -> np.ndarray:
    """A numeric array of finite values (any shape); the first bad entry is named."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise FairmtError(f"{name} must be numbers of one shape (a list of equal-length vectors)") from None
    if not np.isfinite(arr).all():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise FairmtError(f"{name}{list(where)} is {arr[where]}: the values must be finite numbers")
    return arr


# what each evaluate module's compute() takes, checked before `evaluate` casts the inputs to its features
_MODULE_INPUTS: dict[str, dict[str, str]] = {
    "classification_fairness": {
        "predictions": "labels",
        "references": "labels",
        "groups": "protected?",
        "hidden": "matrix?",
        "logits": "scores?",
        "train_hidden": "matrix?",
        "train_logits": "scores?",
        "train_preds": "labels?",
        "train_groups": "protected?",
        "scores": "scores?",
    },
    "mt_geneval": {"predictions": "texts", "references": "texts", "counterfactual_references": "texts?"},
    "winomt": {"predictions": "texts", "references": "texts", "sources": "texts?"},
    "flores": {"predictions": "texts", "references": "texts"},
    "cced": {"predictions": "matrix", "references": "groups"},
}


def module_inputs(module: str, *, rows: int | None = None, **kwargs: Any) -> dict[str, Any]:
    """Check the arguments of fairmt's ``evaluate`` module ``module`` (``compute(predictions=..., ...)``) and return
    them read once (:func:`sequence`): the module passes these on, so a generator is not consumed by the check and
    a pandas Series with any index is taken by position. ``rows``: the predictions and references were added before
    (``add``/``add_batch``), ``rows`` of them: they are not checked here and the other per-example inputs must
    have ``rows`` entries."""
    spec = _MODULE_INPUTS[module]
    out = dict(kwargs)
    n = rows
    for arg, kind in spec.items():
        optional = kind.endswith("?")
        kind = kind.rstrip("?")
        value = kwargs.get(arg)
        if value is None and (optional or (rows is not None and arg in ("predictions", "references"))):
            continue
        where = f"{module}: {arg}"
        got: Any  # the value read, as the kind reads it (list, {attribute: list}, array)
        if kind == "labels":
            got = labels(value, where)
        elif kind == "protected":
            got = groups(value, where)
        elif kind == "texts":
            got = texts(value, where)
        elif kind == "matrix":
            got = matrix(value, where, nonzero=bool(kwargs.get("normalize")) and module == "cced")
        elif kind == "scores":
            got = sequence(value, where)
            if got and isinstance(got[0], (list, tuple, np.ndarray)):
                matrix(got, where)
            else:
                finite_array(got, where)
        else:  # cced references: per example, one vector per group
            got = sequence(value, where)
            for i, per_group in enumerate(got):
                matrix(per_group, f"{where}[{i}]", nonzero=bool(kwargs.get("normalize")))
        # predictions/references go through `evaluate`'s feature cast: lists; the rest reach _compute as checked
        out[arg] = got.tolist() if isinstance(got, np.ndarray) and arg in ("predictions", "references") else got
        if arg in ("predictions", "references") and n is None:
            n = len(got)
        elif (
            arg in ("references", "groups", "counterfactual_references", "hidden", "logits", "scores", "sources")
            and _length(got) != n
            and n is not None
        ):
            raise FairmtError(
                f"{module}: {arg} has {_length(got)} entries but predictions has {n}; give one per example"
            )
    return out


__all__ = ["finite_array", "groups", "labels", "matrix", "module_inputs", "sequence", "texts"]
