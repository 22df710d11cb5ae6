"""The utility of a debiased encoder on GLUE (the recipe key ``utility``, :class:`fairmt.recipes.ccd.schema.Utility`):
fine-tune the trained model (and, with ``before: true``, the original) on SST-2, MRPC, RTE and WNLI and report GLUE's
validation scores (the CCD paper's Tables 4-5 utility columns), as every embedding-debiasing recipe runs it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes.ccd.schema import CcdRecipe, Utility, section


def parse_utility(value: Any) -> dict | None:
    """The recipe's ``utility`` key as the GLUE run uses it: None (absent), or ``glue`` / a mapping
    (:class:`~fairmt.recipes.ccd.schema.Utility`: ``tasks`` — null: SST-2, MRPC, RTE, WNLI —, ``learning_rate``,
    ``batch_size``, ``num_train_epochs``, ``max_length``, ``max_train_samples``, ``max_eval_samples``, ``seed``: null
    keeps :func:`fairmt.eval.glue.finetune_glue_task`'s default; ``before: true`` also fine-tunes the original model,
    for the comparison row) as a dict with the task names resolved. A plain value is checked first."""
    if value is None:
        return None
    if isinstance(value, str):
        if value != "glue":
            raise FairmtError(f"recipe key utility must be 'glue' or a mapping with name: glue, got {value!r}")
        value = Utility()
    u = section(CcdRecipe, "utility", Utility, value)
    from fairmt.eval.glue import PAPER_TASKS, task_name

    return {**u.model_dump(), "tasks": [task_name(t) for t in (u.tasks or PAPER_TASKS)]}


def run_utility(cfg: dict, model_dir: str | Path, out_dir: Path, use_cpu: bool = False) -> dict:
    """GLUE fine-tuning/evaluation of a saved model folder (:mod:`fairmt.eval.glue`); JSON-ready."""
    from fairmt.eval.glue import glue_evaluate, glue_summary

    kw = {
        k: cfg[k]
        for k in (
            "learning_rate",
            "batch_size",
            "num_train_epochs",
            "max_length",
            "max_train_samples",
            "max_eval_samples",
            "seed",
        )
        if cfg.get(k) is not None
    }
    return glue_summary(glue_evaluate(str(model_dir), cfg["tasks"], output_dir=out_dir, use_cpu=use_cpu, **kw))


def glue_model_dir(trained, tok, out_dir: Path, final_dir: Path, peft: bool) -> Path:
    """The folder GLUE fine-tunes from: the saved final model, or for a PEFT run the merged model saved beside it."""
    if not peft:
        return final_dir
    merged = out_dir / "final_merged"
    from fairmt.outputs import saving

    with saving(merged, what="the merged model for GLUE"):
        trained.save_pretrained(str(merged))
        tok.save_pretrained(str(merged))
    return merged


def glue_utility(
    utility: dict, trained, tok, out_dir: Path, model_path: str, peft: bool | dict | None, use_cpu: bool
) -> dict:
    """``{"glue", ["glue_before"], "time_glue_s"}``: GLUE fine-tuning/evaluation of the trained encoder (and of the
    original one when ``utility["before"]``), as every embedding-debiasing recipe runs it. ``peft``: the recipe's
    ``peft`` section (a LoRA run's merged model is saved for GLUE)."""
    t0 = time.time()
    out: dict[str, Any] = {
        "glue": run_utility(
            utility, glue_model_dir(trained, tok, out_dir, out_dir / "final", bool(peft)), out_dir / "glue", use_cpu
        )
    }
    if utility.get("before"):
        out["glue_before"] = run_utility(utility, model_path, out_dir / "glue_before", use_cpu)
    out["time_glue_s"] = time.time() - t0
    return out


__all__ = ["glue_model_dir", "glue_utility", "parse_utility", "run_utility"]
