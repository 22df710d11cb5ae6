"""What a recipe family is: the one object the CLI, the dry run, the preflight, ``fairmt push``, ``fairmt sweep`` and
``fairmt report`` ask about a recipe (:func:`fairmt.recipes.family`), so that no module outside
``fairmt/recipes/<family>/`` branches on a method's name.

Each family folder declares its methods in ``family.py`` (``FAMILIES``: one :class:`Family` per ``method:`` value it
runs). A family object imports nothing heavy: its schema, runner and hooks are named by module path (``module`` or
``module:function``) and imported on use, so ``fairmt recipes`` and the registry stay free of torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fairmt.recipes._schema import Recipe


def _function(ref: str) -> Callable[..., Any]:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


TRAINER_OUTPUT_KEY = "training.output_dir"
"""Where the Trainer's own output folder goes in a recipe (the default :attr:`Family.output_key`)."""


@dataclass(frozen=True)
class Family:
    """One ``method:`` value of a recipe and everything the code outside its folder asks about it."""

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
    output_key: str = TRAINER_OUTPUT_KEY
    """The recipe key naming the run's folder (``fairmt train --output-dir``, the folder-in-use check)."""
    also_output_keys: tuple[str, ...] = ()
    """Other recipe keys a sweep sets to each trial's folder too (a key the schema accepts for the same folder)."""
    seed_key: str = "training.seed"
    """The recipe key of the training seed (``fairmt sweep --seeds`` sets it)."""
    also_seed_keys: tuple[str, ...] = ()
    """Other recipe keys a sweep sets to each trial's seed too (an older place the schema accepts for the same seed,
    so a recipe that names either place is swept alike)."""
    results_file: str = "results.json"
    """The results file the run writes in its folder."""
    results_key: str | None = None
    """The recipe key naming the results file, where the recipe has one (a sweep gives each trial its own)."""
    results_format: str = ""
    """The ``format`` its results file declares (:mod:`fairmt.eval.reporting.formats`; ``fairmt report`` reads it)."""
    report_table: str = ""
    """The ``fairmt report`` table its trained model's row lands in (:data:`fairmt.eval.reporting.FAMILIES`)."""
    model_dirs: tuple[str, ...] = ()
    """Sub-folders of the run folder holding the saved model, the first found wins (``fairmt sweep``'s selection)."""
    objectives: tuple[tuple[str, str], ...] = ()
    """``fairmt sweep``'s default objectives, ``(metric, direction)``; none: the user names them."""
    needs: str = ""
    """``module:function``: ``(model, local)`` of a raw recipe mapping: the model reference it loads (None: none to
    fetch) and the local data it reads, described (``fairmt recipes``' status column, :func:`recipe_needs`)."""
    preflight: str = ""
    """``module:function``: the dry run's findings ``[(fatal, text) | None]`` of ``(config, resolved)`` (the inputs
    that do not exist, models that cannot be had, mixed precision without a GPU, an output folder in use)."""
    dry_summary: str = ""
    """``module:function``: ``(lines, findings)`` of ``(config, resolved)``: the data after the recipe's preparation,
    steps per epoch, parameters (none: the dry run says nothing more for this method)."""
    metrics: str = ""
    """``module:function``: the metric names (``fnmatch`` patterns) its results hold, from the recipe, before any run
    (``fairmt sweep`` checks ``--objective`` against them); none: checked against the first finished run."""
    sweep_reference: str = ""
    """``module:function``: the recipe with the method's defaults merged in, against which ``fairmt sweep`` checks a
    grid value's type (none: the recipe itself)."""
    cites: str = ""
    """``module:function``: the method whose paper a model card of a run cites, from the run's results (none: the
    results' ``method`` where :data:`fairmt.citations.METHOD_PAPERS` has a paper for it); None for a baseline."""
    chance: str = ""
    """``module:function``: whether a run's results (the mapping its results file holds) say its final model
    collapsed to chance, so that its small gap is no fairness (``fairmt sweep`` flags the setting; none: never)."""

    def schema_class(self) -> type[Recipe]:
        return _function(self.schema)  # type: ignore[return-value]

    def runner_module(self) -> ModuleType:
        return importlib.import_module(self.runner)

    def run(self, config: dict[str, Any]) -> Any:
        """Run the recipe (``main(config)`` of its runner)."""
        return self.runner_module().main(config)

    @property
    def seed_keys(self) -> tuple[str, ...]:
        """Every recipe key naming the training seed (a sweep sets them all to the trial's seed)."""
        return (self.seed_key, *self.also_seed_keys)

    # ---------------------------------------------------------------------------------------- the run's folder
    @property
    def output_keys(self) -> tuple[str, ...]:
        """Every recipe key naming the run's folder (a sweep sets them all to the trial's folder)."""
        return (self.output_key, *self.also_output_keys)

    def output_dir(self, config: dict[str, Any]) -> Any:
        """The run folder the recipe names under any of its :attr:`output_keys` (None where it names none: the
        runner's default applies)."""
        for key in self.output_keys:
            node: Any = config
            for part in key.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is not None:
                return node
        return None

    def set_output_dir(self, config: dict[str, Any], folder: str) -> None:
        """Name ``folder`` as the run's folder under :attr:`output_key`; where that is not the Trainer's own
        ``training.output_dir``, a ``training.output_dir`` the recipe gives is dropped (the recipe then names one
        folder)."""
        if self.output_key != TRAINER_OUTPUT_KEY and isinstance(config.get("training"), dict):
            config["training"].pop("output_dir", None)
        *parents, last = self.output_key.split(".")
        node = config
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[last] = folder

    # ---------------------------------------------------------------------------------------- the hooks
    def recipe_needs(self, config: dict[str, Any]) -> tuple[Any, list[str]]:
        """``(model, local)``: see :attr:`needs`."""
        return _function(self.needs)(config) if self.needs else (None, [])

    def findings(self, config: dict[str, Any], resolved: Any) -> list:
        """The dry run's findings (see :attr:`preflight`), Nones left in (the caller drops them)."""
        return list(_function(self.preflight)(config, resolved)) if self.preflight else []

    def summarize(self, config: dict[str, Any], resolved: Any) -> tuple[list[str], list] | None:
        """The dry run's summary lines and sufficiency findings (see :attr:`dry_summary`); None without one."""
        return _function(self.dry_summary)(config, resolved) if self.dry_summary else None

    def metric_patterns(self, config: dict[str, Any]) -> list[str] | None:
        """The metric names its results hold (see :attr:`metrics`); None when fairmt does not know them."""
        return _function(self.metrics)(config) if self.metrics else None

    def cited_method(self, results: dict[str, Any]) -> str | None:
        """The method whose paper a model card of the run cites (see :attr:`cites`)."""
        if self.cites:
            return _function(self.cites)(results)
        from fairmt.citations import METHOD_PAPERS

        method = str(results.get("method") or "")
        return method if method in METHOD_PAPERS else None

    def at_chance(self, results: dict[str, Any]) -> bool:
        """Whether ``results`` say the run's final model collapsed to chance (see :attr:`chance`)."""
        return bool(_function(self.chance)(results)) if self.chance else False

    def reference_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The recipe with the method's defaults merged in (see :attr:`sweep_reference`)."""
        return _function(self.sweep_reference)(config) if self.sweep_reference else config
