"""What a sweep reads from a run: where each recipe family writes its results, the results as flat dotted metric
names, and the names a family reports (checked before any trial starts).

Flattening: every numeric leaf of the results JSON (bools and strings excepted) under its dotted path —
``{"dev": {"accuracy": 53.8}}`` gives ``dev.accuracy``; lists (training logs, label names) and the recipe echo
(``config``) are left out. The split keys of the classification recipes (``dev``, ``test``) become the first
component, so the dev metric a sweep selects on and the test metric it reports differ only by that prefix.
"""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

SKIP_TOP = ("config", "seed")  # the recipe echo and the run's own seed: settings, not results


@dataclass(frozen=True)
class Family:
    """How the sweep drives and reads one recipe method."""

    results: str | None  # file name in the run folder (None: the method writes no results file)
    seed_key: str  # recipe key of the training seed
    output_keys: tuple[str, ...]  # recipe keys naming the run folder (all set to the trial's folder)
    results_key: str | None = None  # recipe key naming the results file, set so trials never share one
    model_dirs: tuple[str, ...] = ()  # sub-folders holding the saved model, first found wins
    objectives: tuple[tuple[str, str], ...] = ()  # default objectives (metric, direction)
    note: str = ""


FAMILIES: dict[str, Family] = {
    "classification": Family("results.json", "seed", ("output_dir", "training.output_dir"), model_dirs=("model",),
                             objectives=(("dev.accuracy", "maximize"), ("dev.gap", "minimize"))),
    "ccd": Family("ccd_results.json", "training.seed", ("training.output_dir",), "results", ("final",)),
    "dpce": Family("dpce_results.json", "training.seed", ("training.output_dir",), "results", ("final",)),
    "adept": Family("adept_results.json", "training.seed", ("training.output_dir",), "results", ("final",)),
    "gacl": Family("results.json", "training.seed", ("training.output_dir",), model_dirs=(".",)),
    # fairness-driven sampling on images: the seed and the run folder are top-level keys (the stage sections refuse
    # them); the objectives are the stage-2 summary fairmt.recipes.sampling.runner writes at the top of results.json
    "sampling": Family("results.json", "seed", ("output_dir",), model_dirs=("stage2/model",),
                       objectives=(("dominance", "minimize"),)),
}
DEFAULT_FAMILY = Family("results.json", "training.seed", ("training.output_dir",))


def family(method: str) -> Family:
    return FAMILIES.get(method, DEFAULT_FAMILY)


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
def _classification_summary_keys() -> list[str]:
    """The numeric keys of :meth:`ClassificationResult.summary` (what the recipe writes as ``dev``/``test``), from
    the evaluator itself on a four-example stand-in, leakage included as the recipe computes it."""
    import numpy as np

    from fairmt.eval.classification import classification_metrics

    labels, groups = [0, 1, 0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 0, 0, 1, 1]
    hidden = np.eye(8, 4, dtype=np.float32)
    logits = np.eye(8, 2, dtype=np.float32)
    r = classification_metrics(labels, labels, groups, hidden=hidden, logits=logits, train_hidden=hidden,
                               train_logits=logits, train_groups=groups, num_classes=2, seed=0)
    return sorted(k for k, v in r.summary(percent=True).items() if isinstance(v, float))


def metric_patterns(method: str, config: dict[str, Any]) -> list[str] | None:
    """The metric names (``fnmatch`` patterns where a name depends on the data, e.g. a SEAT test or a Bias-IR
    category) a recipe's results hold, known before any run; ``None`` when fairmt does not know them (the names are
    then checked against the first finished run)."""
    if method == "classification":
        keys = _classification_summary_keys()
        return [f"{split}.{k}" for split in ("dev", "test") for k in keys] + ["dev.loss", "test_full.*", "info.*"]
    if method in ("ccd", "dpce", "adept"):
        ev = config.get("evaluation") or {}
        suites = [str(s).replace("-", "_") for s in ev.get("suites", ("seat", "cced", "bias_ir", "utility")) if s]
        out = []
        for when in ("before", "after"):
            if "seat" in suites:
                out += [f"{when}.seat_avg_abs_effect_size", f"{when}.seat_avg_abs",  # the old name too, until 0.2
                        f"{when}.seat.*.effect_size", f"{when}.seat.*.p_value"]
            if "cced" in suites:
                out += [f"{when}.cced.gap", f"{when}.cced.n", f"{when}.cced.mean_distance.*", f"{when}.cced.pair_*"]
            if "bias_ir" in suites:
                out += [f"{when}.bias_ir.avg_dev", f"{when}.bias_ir.male_ratio_all", f"{when}.bias_ir.male_ratio.*"]
        if method == "ccd" and "utility" in suites:
            out += ["utility.*", "utility_validation.*"]
        if method == "ccd":  # fairmt.recipes.ccd.runner: validation split, test-half Bias-IR, flat dev/test summaries
            # (fairmt.recipes.ccd.runner.summary_sections: exact names, so a mistyped dev.* objective fails before any trial)
            dev = ["cced_gap", "probe_avg_abs", "bias_ir_avg_dev", "utility_spearman", "utility_nn1"]
            out += [f"dev.{n}" for n in dev] + [f"test.{n}" for n in (*dev, "seat_avg_abs_effect_size", "seat_avg_abs",
                                                                       "bias_ir_avg_dev_all_queries")]
            out += [f"validation.{when}.{m}" for when in ("before", "after")
                    for m in ("cced.*", "probe_avg_abs", "probe.*", "bias_ir.*")]
            out += ["before.bias_ir_all.*", "after.bias_ir_all.*",
                    "bias_ir_split.*", "before.bias_ir.n_queries", "after.bias_ir.n_queries"]
        if config.get("utility"):
            out += ["glue.avg", "glue.tasks.*", "glue_before.*", "time_glue_s"]
        return out + ["train.*", "data.*", "time_*"]
    if method == "gacl":  # fairmt.recipes.gacl.runner.results: the eval loss always, MT-GenEval where the recipe scores it
        out = ["dev.loss", "dev.loss_*", "dev.gc_*", "train.*", "selection.*"]
        geneval = config.get("geneval") or {}
        measures = ("accuracy", "explicit_accuracy", "delta_g")
        if geneval and geneval.get("split", "dev") == "dev":
            out += [f"dev.geneval_{m}" for m in measures]
        if geneval and geneval.get("test", True):
            out += [f"test.geneval_{m}" for m in measures] + ["test_data.*", "geneval.*"]
        if config.get("tiny_model"):  # fairmt.demo.tiny_before_after: the original's and the trained model's scores
            out += ["held_out_gender.n", "held_out_gender.before.*", "held_out_gender.after.*"]
        return out
    if method == "sampling":  # fairmt.recipes.sampling.runner: the stage-2 summary, then every stage's full results
        probe = [f"probe.*.{m}" for m in ("accuracy", "f1", "auc_roc", "gap", "delta_eo")]
        return ["dominance", "entropy", "separation", *probe, "stages.*", "n", "clusters.*", "stage_info.*"]
    return None


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
        info = {"setting": trial["setting"], "seed": int(trial["seed"]), "trial": int(trial["trial"]),
                "results": f"run/{results_name}", "rebuilt": "done.json was damaged; rebuilt from trial.json"}
    except (OSError, ValueError, KeyError, TypeError, FairmtError):
        return None
    from fairmt.eval.report import write_text_atomic

    write_text_atomic(done, json.dumps(info, indent=2) + "\n")
    return info
