"""Recipe families and recipe loading: the one registry of what ``method:`` a recipe may name.

Each family is one folder here, beside that family's YAML recipes and paper cards:
``fairmt/recipes/<family>/{schema.py, runner.py, family.py}`` (+ the family's data preparation and measurement
modules). ``family.py`` declares the family's methods (:class:`~fairmt.recipes._family.Family`); :func:`families`
collects them, and everything outside the family folders asks :func:`family` instead of branching on a method's name.

Loading: :func:`load_recipe` reads a recipe (a file, or a built-in recipe's name such as ``gacl/small100_en-de``),
applies ``key=value`` overrides (:func:`apply_overrides`) and checks it against its family's schema; :func:`run_recipe`
runs it. Importing this package imports neither torch nor transformers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._family import Family
from fairmt.recipes._registry import FAMILY_FOLDERS, available_methods, families, family, registered


def apply_overrides(config: dict, overrides: list[str]) -> dict:
    """Set ``a.b.c=value`` overrides (values parsed as YAML, :func:`~fairmt.data.inputs.parse_yaml`) in a nested
    dict, in place."""
    from fairmt.data.inputs import parse_yaml

    for item in overrides:
        if "=" not in item:
            raise FairmtError(f"override {item!r} is not of the form key=value")
        key, raw = item.split("=", 1)
        if raw.strip() == "~":  # YAML's null: the key would silently fall back to its default (a default folder)
            raise FairmtError(
                f"override {item!r}: YAML reads a bare ~ as null (no value), not as your home folder; "
                f"write {key}=null to unset it, or the folder itself ({key}=$HOME/..., {key}=~/...)"
            )
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise FairmtError(f"override {item!r}: {part!r} is not a mapping in the recipe")
        node[parts[-1]] = _value(parse_yaml(raw, f"override {item!r}", "value"))
    return config


def _value(v: Any) -> Any:
    """YAML 1.1 reads ``2e-5`` (no dot) as a string; a user means the number."""
    if isinstance(v, str):
        try:
            return float(v) if any(c in v for c in ".eE") else int(v)
        except ValueError:
            return v
    return v


def builtin_recipes_dir() -> Path:
    """The recipes shipped inside the package (``fairmt/recipes``; ``recipes/`` in a clone points there)."""
    return Path(__file__).resolve().parent


RECIPE_ALIASES: dict[str, str] = {"classification/sampling": "sampling/hatespeech_gru"}
"""Second names of built-in recipes: the name a user may type -> the built-in recipe it runs (the same file, the same
paper card). ``classification/sampling``: fairness-driven sampling's text variant is a ``method: classification``
recipe, kept with the rest of its method in ``sampling/``; a classification user finds it under their family's name.
``fairmt recipes`` lists each recipe once and its aliases below the table."""


def recipe_aliases(path: Path) -> list[str]:
    """The aliases (:data:`RECIPE_ALIASES`) that name the built-in recipe at ``path``."""
    recipes = builtin_recipes()
    return [alias for alias, name in RECIPE_ALIASES.items() if recipes.get(name) == path]


def builtin_recipes() -> dict[str, Path]:
    """Built-in training recipes by name (``gacl/small100_en-de``), each once (its aliases: :data:`RECIPE_ALIASES`),
    accelerate configs excluded."""
    from fairmt.recipes._files import recipe_files

    return recipe_files(builtin_recipes_dir())


def resolve_recipe_path(path: str | Path) -> Path:
    """A recipe file: the path itself when it exists, else a built-in recipe of that name or alias
    (``gacl/small100_en-de``, ``classification/sampling``; with or without ``.yaml``, optionally prefixed
    ``recipes/``)."""
    p = Path(path)
    if p.is_file():
        return p
    name = p.as_posix().removesuffix(".yaml").removeprefix("recipes/")
    found = builtin_recipes().get(RECIPE_ALIASES.get(name, name))
    if found is None:
        raise FairmtError(f"recipe {p} not found: not a file, nor a built-in recipe (`fairmt recipes` lists them)")
    return found


def load_recipe(path: str | Path, overrides: list[str] | None = None, *, validate: bool = True) -> dict:
    """The recipe at ``path`` (a file or a built-in name) with ``overrides`` applied, checked against its family's
    schema unless ``validate`` is false."""
    from fairmt.data.inputs import read_text
    from fairmt.recipes._files import parse_yaml_text

    p = resolve_recipe_path(path)
    config = parse_yaml_text(read_text(p, "recipe"), f"recipe {p}", "recipe") or {}
    if not isinstance(config, dict):
        raise FairmtError(f"recipe {p} must be a YAML mapping")
    config = apply_overrides(config, overrides or [])
    config.setdefault("recipe_path", str(p.resolve()))
    if "method" not in config:
        raise FairmtError(f"recipe {p} has no 'method' key: {registered()}")
    family(config["method"])  # an unknown method: one line, before anything else
    if validate:  # (validation imports the trainers, torch with them: seconds)
        from fairmt.recipes._schema import validate_recipe

        validate_recipe(config)
    return config


def run_recipe(config: dict) -> Any:
    """Run a loaded recipe with its family's runner."""
    fam = family(config.get("method"))
    try:
        return fam.run(config)
    finally:
        from fairmt.outputs import release_run_dir

        release_run_dir()  # the run is over: its folder is free (a process's end would free it too)
        # the process group of a multi-process run is NOT destroyed here: the returned Trainer still holds it (its
        # DDP Reducer), and freeing that after destroy_process_group() blocked a rank for ever (issue 36). The
        # `fairmt` command ends every multi-process run in one place (fairmt.distributed.leave_if_distributed, via
        # fairmt.cli.main); Python callers use fairmt.distributed.end_process_group() once the Trainer is dropped.


def resolve(config: dict) -> Any:
    """The runner's resolved Config for ``config`` (a TrainingArguments, or the merged dict of classification and
    sampling recipes); None for a method without ``resolve_config``."""
    module = family(config.get("method")).runner_module()
    if not hasattr(module, "resolve_config"):
        return None
    try:
        return module.resolve_config(config)
    except ValueError as err:  # TrainingArguments' own checks (__post_init__): the recipe's values, one line
        if isinstance(err, FairmtError):
            raise
        raise FairmtError(
            f"the recipe's training settings are refused by the Trainer: {' '.join(str(err).split())}"
        ) from None


def set_output_dir(config: dict, folder: str) -> None:
    """``fairmt train --output-dir DIR``: the recipe's own output key (its family's
    :attr:`~fairmt.recipes._family.Family.output_key`: ``training.output_dir``, or ``output_dir`` for the
    classification and sampling recipes)."""
    family(config.get("method")).set_output_dir(config, folder)


__all__ = [
    "FAMILY_FOLDERS",
    "RECIPE_ALIASES",
    "Family",
    "apply_overrides",
    "available_methods",
    "builtin_recipes",
    "builtin_recipes_dir",
    "families",
    "family",
    "load_recipe",
    "recipe_aliases",
    "resolve",
    "resolve_recipe_path",
    "run_recipe",
    "set_output_dir",
]
