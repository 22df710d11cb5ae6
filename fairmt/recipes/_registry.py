"""The one registry of recipe families (re-exported by :mod:`fairmt.recipes`): each family folder's ``family.py``
declares its methods; :func:`family` answers for a ``method:`` value."""

from __future__ import annotations

import functools
import importlib
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._family import Family

FAMILY_FOLDERS = ("gacl", "ccd", "classification", "sampling")
"""The family folders, each with a ``family.py`` declaring its methods."""


@functools.cache
def families() -> dict[str, Family]:
    """Every registered method's :class:`Family`, by ``method:`` value (in folder order)."""
    found: dict[str, Family] = {}
    for folder in FAMILY_FOLDERS:
        for fam in importlib.import_module(f"fairmt.recipes.{folder}.family").FAMILIES:
            if fam.method in found:
                raise FairmtError(f"recipe method {fam.method!r} is registered twice")
            found[fam.method] = fam
    return found


def available_methods() -> list[str]:
    """The ``method:`` values a recipe may name."""
    return sorted(families())


def registered() -> str:
    """The registered methods, as the errors list them (``the registered families are gacl, ccd, ...``)."""
    return f"the registered families are {', '.join(families())} (`fairmt recipes` lists their recipes)"


def family(method: Any) -> Family:
    """The registered family of ``method``; an unknown one is one line listing the families."""
    fam = families().get(method) if isinstance(method, str) else None
    if fam is None:
        raise FairmtError(f"unknown method {method!r} in the recipe: {registered()}")
    return fam
