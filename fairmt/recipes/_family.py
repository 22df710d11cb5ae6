"""What a recipe family is: the one object the CLI, the dry run, the preflight, ``fairmt push``, ``fairmt sweep`` and
``fairmt report`` ask about a recipe (:func:`fairmt.recipes.family`), so that no module outside
``fairmt/recipes/<family>/`` branches on a method's name.

Each family folder declares its methods in ``family.py`` (``FAMILIES``: one :class:`Family` per ``method:`` value it
runs). A family object imports nothing heavy: its schema and runner are named by module path and imported on use.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Family:
    """One ``method:`` value of a recipe and where its parts live."""

    method: str
    """The recipe's ``method:`` value."""
    folder: str
    """The folder under ``fairmt/recipes/`` that holds its schema, runner and built-in recipes."""
    schema: str
    """Its pydantic schema, ``module:Class`` (:mod:`fairmt.recipes._schema`'s :class:`Recipe` subclass)."""
    runner: str
    """The module whose ``main(config)`` runs a recipe of this method (and ``resolve_config(config)`` resolves it)."""
    summary: str
    """What the method trains, in one line (``fairmt recipes`` and the unknown-method error list it)."""

    def schema_class(self) -> type:
        module, _, name = self.schema.partition(":")
        return getattr(importlib.import_module(module), name)

    def runner_module(self) -> ModuleType:
        return importlib.import_module(self.runner)

    def run(self, config: dict[str, Any]) -> Any:
        """Run the recipe (``main(config)`` of its runner)."""
        return self.runner_module().main(config)
