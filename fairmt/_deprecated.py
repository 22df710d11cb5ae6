"""Old import paths kept for one release after a move, each with a ``DeprecationWarning`` naming the new path.

Three shapes: a whole module that moved (:func:`alias_module`: the old name becomes the new module object itself, so
``monkeypatch``, ``isinstance`` and private names behave as before) and single names that moved out of a module that
stays (:func:`moved_names`: a module ``__getattr__`` that imports the name from its new home on first use), and an
option (a Config field, a recipe key) that another replaces (:func:`renamed_option`: the old value mapped onto the
new option). Every old path and option here goes in fairmt 0.2.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

REMOVED_IN = "0.2"


def _stacklevel(shim: str) -> int:
    """``warnings.warn``'s stack level of the first frame outside the import machinery (``importlib``), this module
    and the shim module ``shim``: the line that used the old path. (``warnings`` itself does not count the frozen
    ``importlib._bootstrap`` frames.)"""
    frame, level = sys._getframe(1), 1  # warn_moved (level 1), then its callers
    while frame is not None:
        if not frame.f_code.co_filename.startswith("<frozen importlib"):
            if frame.f_code.co_filename != __file__ and frame.f_globals.get("__name__") not in (shim, "importlib"):
                return level
            level += 1
        frame = frame.f_back
    return 1


def warn_moved(old: str, new: str, shim: str = "") -> None:
    """``DeprecationWarning``: ``old`` is now ``new`` (attributed to the code that used the old path)."""
    warnings.warn(
        f"{old} is deprecated: import {new} instead (the old path goes in fairmt {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=_stacklevel(shim),
    )


def alias_module(old: str, new: str) -> None:
    """Make the module being imported as ``old`` the module ``new`` (warning once, at the import)."""
    warn_moved(old, new, shim=old)
    sys.modules[old] = importlib.import_module(new)


def moved_names(old: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old``: each name of ``names`` (name → new module, or ``module:new_name``) is
    imported from its new home on first access, with a warning naming it; other names raise ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        module, _, new_name = target.partition(":")
        new_name = new_name or name
        warn_moved(f"{old}.{name}", f"{module}.{new_name}", shim=old)
        value = getattr(importlib.import_module(module), new_name)
        setattr(sys.modules[old], name, value)  # warned once; later accesses skip __getattr__
        return value

    return __getattr__


def renamed_option(
    old: str,
    new: str,
    value: Any,
    mapping: dict[Any, Any],
    stacklevel: int = 3,
    category: type[Warning] = DeprecationWarning,
) -> Any:
    """``DeprecationWarning``: the option ``old`` (set to ``value``) is now ``new``; returns the value of ``new`` that
    means the same (``mapping[value]``). The caller checks that ``new`` was not also set to something else;
    ``stacklevel`` counts from the caller of this function (1); the default 3 is the code that built a dataclass
    whose ``__post_init__`` calls this. ``category=FutureWarning`` for what a user of the command line wrote (a
    recipe): Python shows it by default, where it hides a ``DeprecationWarning`` raised outside ``__main__``."""
    mapped = mapping[value]
    warnings.warn(
        f"{old} is deprecated: use {new}={mapped!r} instead (the old option goes in fairmt {REMOVED_IN})",
        category,
        stacklevel=stacklevel + 1,
    )
    return mapped
