"""``fairmt train RECIPE.yaml [key=value ...]``: run a recipe.

A recipe is a YAML mapping with a ``method`` key naming a module of :mod:`fairmt.scripts` (``gacl``, ``ccd``,
``classification``, ...); that module's ``main(config)`` gets the mapping with the overrides applied. Overrides use
dotted keys and YAML values: ``training.learning_rate=1e-5 peft.r=8 train_data=my.jsonl``. Works the same under
``accelerate launch --config_file recipes/accelerate/ddp.yaml -m fairmt train RECIPE.yaml``.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from fairmt.errors import FairmtError


def available_methods() -> list[str]:
    import fairmt.scripts

    return sorted(m.name for m in pkgutil.iter_modules(fairmt.scripts.__path__) if not m.name.startswith("_"))


def apply_overrides(config: dict, overrides: list[str]) -> dict:
    """Set ``a.b.c=value`` overrides (values parsed as YAML) in a nested dict, in place."""
    import yaml

    for item in overrides:
        if "=" not in item:
            raise FairmtError(f"override {item!r} is not of the form key=value")
        key, raw = item.split("=", 1)
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise FairmtError(f"override {item!r}: {part!r} is not a mapping in the recipe")
        node[parts[-1]] = _value(yaml.safe_load(raw))
    return config


def _value(v):
    """YAML 1.1 reads ``2e-5`` (no dot) as a string; a user means the number."""
    if isinstance(v, str):
        try:
            return float(v) if any(c in v for c in ".eE") else int(v)
        except ValueError:
            return v
    return v


def builtin_recipes_dir() -> Path:
    """The recipes shipped inside the package (``fairmt/recipes``; ``recipes/`` in a clone points there)."""
    return Path(__file__).resolve().parents[1] / "recipes"


def builtin_recipes() -> dict[str, Path]:
    """Built-in training recipes by name (``gacl/small100_en-de``), accelerate configs excluded."""
    root = builtin_recipes_dir()
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in sorted(root.glob("*/*.yaml"))
            if p.parent.name != "accelerate"}


def resolve_recipe_path(path: str | Path) -> Path:
    """A recipe file: the path itself when it exists, else a built-in recipe of that name (``gacl/small100_en-de``,
    with or without ``.yaml``, optionally prefixed ``recipes/``)."""
    p = Path(path)
    if p.is_file():
        return p
    name = p.as_posix().removesuffix(".yaml").removeprefix("recipes/")
    found = builtin_recipes().get(name)
    if found is None:
        raise FairmtError(f"recipe {p} not found: not a file, nor a built-in recipe (`fairmt recipes` lists them)")
    return found


def load_recipe(path: str | Path, overrides: list[str] | None = None) -> dict:
    import yaml

    from fairmt.data.inputs import read_text

    p = resolve_recipe_path(path)
    try:
        config = yaml.safe_load(read_text(p, "recipe")) or {}
    except yaml.YAMLError as err:
        raise FairmtError(f"recipe {p} is not valid YAML: {err}") from None
    if not isinstance(config, dict):
        raise FairmtError(f"recipe {p} must be a YAML mapping")
    config = apply_overrides(config, overrides or [])
    config.setdefault("recipe_path", str(p.resolve()))
    if "method" not in config:
        raise FairmtError(f"recipe {p} has no 'method' key; choose one of {available_methods()}")
    from fairmt.commands.recipe_schema import validate_recipe

    validate_recipe(config)
    return config


def run_recipe(config: dict):
    method = config["method"]
    if method not in available_methods():
        raise FairmtError(f"unknown method {method!r} in the recipe; available: {available_methods()}")
    module = importlib.import_module(f"fairmt.scripts.{method}")
    try:
        return module.main(config)
    finally:
        from fairmt.outputs import release_run_dir

        release_run_dir()  # the run is over: its folder is free (a process's end would free it too)
        _teardown_distributed()


def _teardown_distributed() -> None:
    """Destroy the process group a multi-process run (accelerate launch, torchrun) created: with torch 2.13 + gloo a
    process that exits with it alive aborts ("terminate called without an active exception", exit code -6) in about
    one run of five, after the work is done — a scheduler would report the run as failed."""
    import sys

    dist = getattr(sys.modules.get("torch"), "distributed", None)  # only if the recipe imported torch
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
        global DISTRIBUTED_RUN_ENDED
        DISTRIBUTED_RUN_ENDED = True


DISTRIBUTED_RUN_ENDED = False
"""Set when a recipe ran under several processes: the ``fairmt`` command then exits without interpreter
finalisation (see :func:`fairmt.cli.main`)."""


def register(groups) -> None:
    p = groups["top"].add_parser("train", help="run a training recipe (YAML) with optional key=value overrides")
    p.add_argument("recipe", help="recipe YAML file, or a built-in recipe's name, e.g. gacl/small100_en-de")
    p.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. training.max_steps=100")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the results of an earlier run in the output folder (default: refuse)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the recipe (overrides applied) and the resolved training Config as JSON, and exit")
    p.set_defaults(handler=_run)
    r = groups["top"].add_parser("recipes", help="list the built-in training recipes (fairmt train NAME runs one)")
    r.set_defaults(handler=_list_recipes)


def _list_recipes(args) -> int:
    for name, path in builtin_recipes().items():
        first = next((line.lstrip("# ").strip() for line in path.read_text(encoding="utf-8").splitlines()
                      if line.startswith("#")), "")
        print(f"{name:34s} {first}")
    print(f"\naccelerate configs: {builtin_recipes_dir() / 'accelerate'}")
    return 0


def dry_run(config: dict) -> str:
    """JSON of the recipe and, for methods whose script has ``resolve_config``, the resolved training Config."""
    import json

    method = config["method"]
    if method not in available_methods():
        raise FairmtError(f"unknown method {method!r} in the recipe; available: {available_methods()}")
    module = importlib.import_module(f"fairmt.scripts.{method}")
    out = {"recipe": config}
    if hasattr(module, "resolve_config"):
        resolved = module.resolve_config(config)
        if isinstance(resolved, dict):  # a recipe-level config (classification)
            out["config"] = resolved
        else:  # a TrainingArguments subclass
            out["config"] = {"class": type(resolved).__name__, **json.loads(resolved.to_json_string())}
    return json.dumps(out, indent=2, default=str)


def _run(args) -> int:
    config = load_recipe(args.recipe, args.overrides)
    if getattr(args, "overwrite", False):
        config["overwrite"] = True
    if getattr(args, "dry_run", False):
        print(dry_run(config))
        return 0
    run_recipe(config)
    return 0
