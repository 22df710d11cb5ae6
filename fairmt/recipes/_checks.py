"""The checks a recipe goes through before any work: unknown keys (with "did you mean"), and ``training.*``-like
sections against the fields, types and common ranges of the method's Config dataclasses. Used by
:mod:`fairmt.recipes._schema` (each method's schema) and by the recipe runners that validate their own
sections (:mod:`fairmt.recipes.sampling.runner`)."""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import math
import typing
from typing import Any

from fairmt.errors import FairmtError, Range, declared_ranges

COMMON_TOP = {"method", "recipe_path", "overwrite"}


def _suggest(key: str, known: set[str]) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _check_keys(section: dict, known: set[str], where: str) -> None:
    for key in section:
        if key not in known:
            raise FairmtError(f"unknown recipe key {where}{key}{_suggest(key, known)}")


def _type_ok(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(_type_ok(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True  # lists, dicts, enums, Literal...: left to the Config itself


def _hint_name(hint: Any) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args:
        return " or ".join(getattr(a, "__name__", str(a)) for a in args)
    return getattr(hint, "__name__", str(hint))


def _enums(hint: Any) -> list[type[enum.Enum]]:
    """The Enum classes a field's type hint admits (``Union[SchedulerType, str]`` → ``[SchedulerType]``)."""
    args = typing.get_args(hint) or (hint,)
    return [a for a in args if isinstance(a, type) and issubclass(a, enum.Enum)]


@functools.cache
def field_ranges(cls: type) -> dict[str, Range]:
    """The :class:`~fairmt.errors.Range` each dataclass field of ``cls`` declares (its ``RANGES``)."""
    return declared_ranges(cls)


@functools.cache
def _field_hints(cls: type) -> dict[str, Any]:
    """Every dataclass field of ``cls`` and its resolved type hint, worked out once per class (``get_type_hints``
    evaluates every annotation of the class and its bases: ~1 ms a call, and TrainingArguments has ~150 fields)."""
    resolved = typing.get_type_hints(cls)
    return {f.name: resolved.get(f.name, Any) for f in dataclasses.fields(cls)}


def check_training(training: Any, config_classes: list[type], section: str = "training") -> None:
    """``<section>.*`` keys (``training`` by default) exist in one of ``config_classes`` and have its field's type;
    numbers are finite, each field's declared range holds (:func:`fairmt.errors.declared_ranges`: the Config's own
    and ``TrainingArguments``' — ``max_steps`` is ≥ 1 or -1, the Trainer's "use the epochs": any other value ≤ 0
    would silently train for the epochs), and a field with a fixed set of values (``lr_scheduler_type``,
    ``eval_strategy``, ...) has one of them."""
    if not isinstance(training, dict):
        raise FairmtError(f"recipe key {section} must be a mapping (a section of keys), got {training!r}")
    hints: dict[str, Any] = {}
    ranges: dict[str, Any] = {}
    for cls in config_classes:
        for name, hint in _field_hints(cls).items():
            hints.setdefault(name, hint)
        for name, rng in field_ranges(cls).items():
            ranges.setdefault(name, rng)
    _check_keys(training, set(hints), f"{section}.")
    for key, value in training.items():
        if not _type_ok(value, hints[key]):
            raise FairmtError(
                f"recipe key {section}.{key} must be {_hint_name(hints[key])}, got {value!r} ({type(value).__name__})"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise FairmtError(f"recipe key {section}.{key} must be a finite number, got {value}")
        if key in ranges:  # the range the Config field declares, TrainingArguments' included (its __post_init__
            ranges[key].check(f"recipe key {section}.{key}", value)  # checks the same: fairmt.errors.check_ranges)
        for enum_cls in _enums(hints[key]):
            allowed = [e.value for e in enum_cls]
            if value is not None and not isinstance(value, enum_cls) and value not in allowed:
                yaml_hint = (
                    f" (YAML reads an unquoted {'no' if value is False else 'yes'} as {value}: write "
                    f'{section}.{key}: "{"no" if value is False else "yes"}")'
                    if isinstance(value, bool)
                    else ""
                )
                raise FairmtError(
                    f"recipe key {section}.{key} must be one of {', '.join(map(str, allowed))}, got "
                    f"{value!r}{yaml_hint}"
                )
