"""What a sweep reads from a run: the results as flat dotted metric names, and the names a family reports (checked
before any trial starts; where each family writes its results and what it reports is its
:class:`~fairmt.recipes.Family`'s to say).

Flattening: every numeric leaf of the results JSON (bools and strings excepted) under its dotted path —
``{"dev": {"accuracy": 53.8}}`` gives ``dev.accuracy``; lists (training logs, label names) and the recipe echo
(``config``) are left out. The split keys of the classification recipes (``dev``, ``test``) become the first
component, so the dev metric a sweep selects on and the test metric it reports differ only by that prefix.
"""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

SKIP_TOP = ("config", "seed")  # the recipe echo and the run's own seed: settings, not results


def flatten(results: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a results mapping as ``{dotted.name: float}`` (see the module docstring)."""
    out: dict[str, float] = {}
    if not isinstance(results, dict):
        return out
    for key, value in results.items():
        if not prefix and key in SKIP_TOP:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[name] = float(value)
    return out


def read_results(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FairmtError(f"{p} not found: the run wrote no results file") from None
    except json.JSONDecodeError as err:
        raise FairmtError(f"{p} is not valid JSON ({err}): the run was interrupted while writing it?") from None
    if not isinstance(data, dict):
        raise FairmtError(f"{p}: expected a JSON object of results")
    return data


def percent_splits(results: dict[str, Any]) -> set[str]:
    """Top-level sections that say ``"scale": "percent"`` (the classification recipes' dev/test summaries)."""
    return {k for k, v in results.items() if isinstance(v, dict) and v.get("scale") == "percent"}


# ------------------------------------------------------------------------------------------ names before any run
def metric_patterns(method: str, config: dict[str, Any]) -> list[str] | None:
    """The metric names (``fnmatch`` patterns where a name depends on the data, e.g. a SEAT test or a Bias-IR
    category) a recipe's results hold, known before any run (its family's, :attr:`fairmt.recipes.Family.metrics`);
    ``None`` when fairmt does not know them (the names are then checked against the first finished run)."""
    from fairmt.recipes import family

    return family(method).metric_patterns(config)


def matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def read_done(root: str | Path, results_name: str | None) -> dict[str, Any] | None:
    """A finished run's ``done.json`` (``setting``, ``seed``, ``trial``, ``results``). One left empty or cut (a full
    disk, a copy interrupted) is rebuilt from the run's ``trial.json`` and its results file when both read back — the
    run did finish —, else None: the run counts as not finished (a sweep runs it again; a report leaves it out)."""
    root = Path(root)
    done = root / "done.json"
    try:
        info = json.loads(done.read_text(encoding="utf-8"))
        if isinstance(info, dict) and {"setting", "seed", "results"} <= set(info):
            return info
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        pass
    if not results_name:
        return None
    try:
        trial = json.loads((root / "trial.json").read_text(encoding="utf-8"))
        read_results(root / "run" / results_name)
        info = {
            "setting": trial["setting"],
            "seed": int(trial["seed"]),
            "trial": int(trial["trial"]),
            "results": f"run/{results_name}",
            "rebuilt": "done.json was damaged; rebuilt from trial.json",
        }
    except (OSError, ValueError, KeyError, TypeError, FairmtError):
        return None
    from fairmt.eval.report import write_text_atomic

    write_text_atomic(done, json.dumps(info, indent=2) + "\n")
    return info
