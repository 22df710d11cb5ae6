"""One rule for every recipe's output folder: a run owns it from its first moment, and results never overwrite an
earlier run's (:func:`fairmt.outputs.claim_run_dir`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# recipe keys that name what a run writes (or a place inside its own folder), not what it reads
OUTPUT_KEYS = {
    "output_dir",
    "logging_dir",
    "results",
    "resume_from_checkpoint",
    "cache_dir",
    "recipe_path",
    "overwrite",
    "hub_model_id",
}


def recipe_inputs(config: dict[str, Any]) -> list[Path]:
    """The existing files and folders a recipe names (its model, data files, ...), outputs left out."""
    from fairmt.outputs import input_paths

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in OUTPUT_KEYS}
        return node

    return input_paths([strip(config)])


def run_inputs(config: dict[str, Any]) -> list[Path]:
    """What a run reads, for the rule that its folder never holds (nor ``--overwrite`` clears) one of them: the
    recipe's inputs and the recipe file itself."""
    found = recipe_inputs(config)
    recipe = config.get("recipe_path")
    if recipe and Path(str(recipe)).is_file():
        found.append(Path(str(recipe)))
    return found


def resuming(config: dict[str, Any]) -> bool:
    return bool(config.get("resume_from_checkpoint") or (config.get("training") or {}).get("resume_from_checkpoint"))


def prepare_output_dir(
    path: str | os.PathLike, config: dict[str, Any], *, what: str = "output folder", flag: str = "training.output_dir"
) -> Path:
    """Make ``path`` this run's folder: locked against a second run (named when refused), refused when it holds an
    earlier run's files unless the recipe says ``overwrite: true`` (``fairmt train --overwrite``: what fairmt wrote
    there, checkpoints included, is removed first, and nothing else; see :mod:`fairmt.outputs`) or resumes from a
    checkpoint, and refused when it holds one of the recipe's inputs or the recipe itself. Claimed on the main
    process only (under ``accelerate launch`` every process runs the recipe; the others wait for nothing and see the
    main one's folder)."""
    from fairmt.outputs import claim_run_dir

    if os.environ.get("RANK", "0") != "0":
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        return out
    return claim_run_dir(
        path,
        what,
        overwrite=bool(config.get("overwrite")),
        resumable=resuming(config),
        inputs=run_inputs(config),
        flag=flag,
    )
