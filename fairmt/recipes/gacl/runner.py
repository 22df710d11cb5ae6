"""Recipe entry point for ``method: gacl`` (``fairmt train recipes/gacl/*.yaml``).

Recipe keys (see ``recipes/gacl/small100_en-de.yaml`` for a documented example):

* ``model`` (Hub name or path), ``family`` (optional), ``src_lang``, ``tgt_lang``, ``output_dir`` (the run's
  folder; default ``outputs/<recipe name>``) and ``seed`` (the training seed) — ``training.output_dir`` and
  ``training.seed``, their older place, name the same two;
* ``data``: ``train`` (JSONL / TSV / HF dataset name), ``split``, ``max_train_samples``, ``balance``,
  ``max_length``, ``seed`` (draws the balancing subsample and the ``eval_fraction`` split; fixed while the
  training ``seed`` varies, so the seeds of a sweep are scored on one dev set), ``eval_fraction`` (held-out share of
  the prepared training data for the evaluation loss),
  ``eval`` (a plain parallel dev set, e.g. newstest: MT loss and generation metrics on all its rows, not only
  the gendered ones; replaces ``eval_fraction``), ``eval_split``, ``max_eval_samples``, and ``prepare``:

  - ``gacl`` (default): one-gender sources, balanced, with counterfactuals (Lee et al. 2023, §3.1);
  - ``gfst``: GFST's target-side filtering (Choubey et al. 2021) of pseudo-parallel data: pairs whose target
    marks exactly one gender (``data.target_gender_words`` ``{male: [...], female: [...]}``, default a German
    list for ``de``) and whose source does not disagree, balanced when ``balance``;
  - ``plain``: every pair as given (fine-tuning on a user-supplied set, e.g. Saunders & Byrne's handcrafted one);

* ``training``: any :class:`fairmt.trainers.gacl.GACLConfig` field;
* ``peft`` (optional): :class:`peft.LoraConfig` fields — trains a LoRA adapter instead of the full model;
* ``geneval`` (optional): early stopping on MT-GenEval dev: ``lang``, ``split`` (dev), ``max_pairs``,
  ``metric`` (``explicit_accuracy``, the released code's choice, or ``accuracy``), ``patience`` (10 evaluations,
  as the released code), ``num_beams`` (5, the paper's beam), ``max_new_tokens`` (128), ``batch_size``; the best
  checkpoint is restored at the end, then scored on MT-GenEval test with the same settings (``test: false`` skips
  it);
* ``results.json`` in ``output_dir`` (:func:`results`): ``dev`` (eval loss, MT-GenEval dev numbers of the
  selected model), ``test`` (MT-GenEval test), the selection made — what ``fairmt sweep`` reads;
* ``push_to_hub`` is a ``training`` field as in transformers; the teacher is never saved or pushed;
* ``tiny_model`` (optional; ``recipes/gacl/tiny_offline.yaml``): ``pretrain_steps``, ``seed`` — build ``model`` and
  ``data.train`` offline, like ``fairmt demo``'s stereotyped original and its balanced data, where they do not exist
  (:func:`fairmt.recipes.gacl.tiny.prepare_tiny_recipe`).

α = 0.4 and λ = 1.0 in the shipped recipes come from the authors' released script (``run_translation.sh``); the
paper does not print them.

The runner reads the typed recipe (:class:`~fairmt.recipes.gacl.schema.GaclRecipe`, resolved by
:func:`fairmt.recipes._schema.resolve_recipe`) and nothing else, and builds the Trainer's ``GACLConfig`` once per run
(:func:`trainer_config`): every default is the schema's or, for the ``training`` keys a recipe leaves out, the
Config's own field default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._output import prepare_output_dir
from fairmt.recipes.gacl.schema import DEFAULT_EVAL_FRACTION, GaclData, GaclGeneval, GaclRecipe, typed_recipe


def trainer_config(recipe: GaclRecipe):
    """The :class:`GACLConfig` the recipe trains with: ``training`` as the schema resolved it (the ``geneval``
    section's Trainer settings included) with the run's ``output_dir`` and ``seed``; the keys the recipe leaves out
    take the Config's defaults and the variant's presets. Loads no model."""
    from fairmt.recipes._trainer_args import parse_trainer_dict
    from fairmt.trainers.gacl import GACLConfig

    train_cfg = {**(recipe.training or {}), "output_dir": recipe.output_dir}
    if recipe.seed is not None:
        train_cfg["seed"] = recipe.seed
    try:
        args = parse_trainer_dict(GACLConfig, train_cfg)
    except ValueError as err:  # TrainingArguments' own checks (__post_init__): the recipe's values, one line
        if isinstance(err, FairmtError):
            raise
        raise FairmtError(
            f"the recipe's training settings are refused by the Trainer: {' '.join(str(err).split())}"
        ) from None
    return args


def resolve_config(config: Any):
    """The :class:`GACLConfig` the recipe trains with (:func:`trainer_config` of :func:`typed_recipe`)."""
    return trainer_config(typed_recipe(config))


def resolved_sections(config: Any) -> tuple[dict, dict | None]:
    """``data`` and ``geneval`` as the recipe schema resolves them, as plain mappings (every default filled in,
    ``geneval.lang`` defaulted to ``tgt_lang``; the paper card reads the same values)."""
    recipe = typed_recipe(config)
    return recipe.data.model_dump(), recipe.geneval.model_dump() if recipe.geneval is not None else None


def data_section(data: GaclData | dict) -> GaclData:
    """The typed ``data`` section: itself, or a mapping resolved by the schema (defaults filled in; ``train`` may be
    left out here)."""
    if isinstance(data, GaclData):
        return data
    return typed_recipe({"model": "-", "data": {"train": "-", **data}}).data


def prepare_data(pairs, data: GaclData | dict, tgt: str, seed: int):
    """The training rows of ``data.prepare`` (see the module docstring)."""
    from fairmt.data.gacl import balance_genders, filter_target_gender, prepare_gacl_pairs, target_gender_detector

    data = data_section(data)
    if data.prepare == "gacl":
        return prepare_gacl_pairs(pairs, balance=data.balance, seed=seed, lexicon=data.lexicon)
    if len(pairs) == 0:
        raise FairmtError("the training data is empty")
    if data.prepare == "gfst":
        words = dict(data.target_gender_words) if data.target_gender_words is not None else None
        ds = filter_target_gender(pairs, target_gender_detector(tgt, words))  # type: ignore[arg-type]
        return balance_genders(ds, seed) if data.balance else ds
    return pairs


def eval_fraction(data: GaclData | dict, evaluates: bool) -> float:
    """The held-out share of the prepared training data: ``data.eval_fraction``, else
    :data:`~fairmt.recipes.gacl.schema.DEFAULT_EVAL_FRACTION` when the run evaluates; 0 with ``data.eval``."""
    data = data_section(data)
    if data.eval:
        return 0.0
    if data.eval_fraction is not None:
        return data.eval_fraction
    return DEFAULT_EVAL_FRACTION if evaluates else 0.0


def split_data(pairs, data: GaclData | dict, tgt: str, evaluates: bool):
    """The training rows (``data.prepare``) and the held-out ``eval_fraction`` rows (None with ``data.eval`` or no
    held-out share; :func:`eval_fraction`). Both are drawn with ``data.seed``, never with the training seed: runs
    that differ only in the training ``seed`` train and are scored on the same rows."""
    data = data_section(data)
    if data.max_train_samples:
        pairs = pairs.select(range(min(len(pairs), data.max_train_samples)))
    prepared = prepare_data(pairs, data, tgt, data.seed)
    frac = eval_fraction(data, evaluates)
    if frac <= 0:
        return prepared, None
    split = prepared.train_test_split(test_size=frac, seed=data.seed, stratify_by_column=None)
    return split["train"], split["test"]


def key_aliases(src: str, tgt: str) -> dict[str, str]:
    """For NLLB-200's FLORES-200 codes (``eng_Latn``, ``deu_Latn``), the ISO codes (``en``, ``de``) that the
    M2M-100 / SMaLL-100 recipes' JSONL files use as keys: either spelling of a row is read."""
    from fairmt.models.languages import ISO_TO_NLLB

    to_iso = {v: k for k, v in ISO_TO_NLLB.items()}
    return {code: to_iso[code] for code in (src, tgt) if code in to_iso}


def build_trainer(recipe: GaclRecipe, args):
    """The GACLTrainer of the typed recipe with its Trainer Config ``args`` (:func:`trainer_config`), and the
    translation model."""
    from transformers import EarlyStoppingCallback

    from fairmt.data.gacl import GenderContrastiveCollator, tokenize_gacl
    from fairmt.data.parallel import read_parallel
    from fairmt.models import load_translation_model
    from fairmt.trainers.gacl import GACLTrainer

    data, geneval = recipe.data, recipe.geneval
    if data.prepare != "gacl" and args.gacl_lambda > 0:
        raise FairmtError(
            f"data.prepare={data.prepare!r} gives no counterfactuals/genders for GACL: set "
            "training.gacl_lambda=0 (plain fine-tuning baseline) or data.prepare=gacl"
        )

    src, tgt = recipe.src_lang, recipe.tgt_lang
    tm = load_translation_model(recipe.model, src, tgt, family=recipe.family)
    if recipe.peft:
        from peft import LoraConfig, TaskType, get_peft_model

        tm.model = get_peft_model(tm.model, LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, **recipe.peft))

    aliases = key_aliases(src, tgt)
    pairs = read_parallel(data.train, src, tgt, split=data.split, key_aliases=aliases)
    prepared, eval_ds = split_data(pairs, data, tgt, args.eval_strategy != "no")
    if data.eval:
        eval_ds = read_parallel(data.eval, src, tgt, split=data.eval_split, key_aliases=aliases)
        if data.max_eval_samples:
            eval_ds = eval_ds.select(range(min(len(eval_ds), data.max_eval_samples)))
    enc = lambda ds: tokenize_gacl(ds, tm.encode, max_length=data.max_length)  # noqa: E731
    train_ds = enc(prepared)
    eval_ds = enc(eval_ds) if eval_ds is not None else None

    trainer = GACLTrainer(
        model=tm.model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        data_collator=GenderContrastiveCollator(tm.tokenizer.pad_token_id),
        processing_class=tm.tokenizer,
    )
    if geneval is not None:
        trainer.add_callback(geneval_callback(tm, geneval))
        trainer.add_callback(EarlyStoppingCallback(early_stopping_patience=geneval.patience))
    return trainer, tm


def geneval_callback(tm, geneval: GaclGeneval, split: str | None = None):
    """The recipe's MT-GenEval scorer (``geneval`` section, resolved) on ``split`` (default: the section's, dev)."""
    from fairmt.model_eval.callbacks import GenEvalCallback

    return GenEvalCallback(
        tm,
        geneval.lang,
        split or geneval.split,
        geneval.max_pairs,
        batch_size=geneval.batch_size,
        num_beams=geneval.num_beams,
        max_new_tokens=geneval.max_new_tokens,
    )


def selected_evaluation(state) -> tuple[int | None, dict[str, float]]:
    """The step and the ``eval_*`` numbers (prefix removed) of the model the run ends with: the best checkpoint's
    evaluation when one was restored (``load_best_model_at_end``), else the last evaluation; ``(None, {})`` when the
    run never evaluated."""
    evals = [e for e in state.log_history if any(k.startswith("eval_") for k in e)]
    if not evals:
        return None, {}
    chosen = evals[-1]
    best = state.best_model_checkpoint
    if best:
        step = int(str(best).rstrip("/").rsplit("-", 1)[-1])
        chosen = next((e for e in evals if e.get("step") == step), chosen)
    numbers = {
        k[len("eval_") :]: float(v)
        for k, v in chosen.items()
        if k.startswith("eval_")
        and isinstance(v, (int, float))
        and not isinstance(v, bool)
        and k not in ("eval_runtime", "eval_samples_per_second", "eval_steps_per_second")
    }
    return chosen.get("step"), numbers


def run_kind(gacl_lambda: float, kd_alpha: float) -> str:
    """What a GACL-family run trains, by its loss weights, for the line it ends with: GACL + KD (gender-aware
    contrastive learning with knowledge distillation), one of the two alone, or — both weights 0 — the plain
    fine-tuning control (the MT loss alone on the same data, as ``fairmt demo``'s control)."""
    if gacl_lambda > 0 and kd_alpha > 0:
        return "GACL + KD (gender-aware contrastive learning + knowledge distillation)"
    if gacl_lambda > 0:
        return "GACL (gender-aware contrastive learning, no KD: kd_alpha 0)"
    if kd_alpha > 0:
        return "KD-only (knowledge distillation, no contrastive term: gacl_lambda 0)"
    return "plain fine-tuning control (MT loss only: gacl_lambda 0, kd_alpha 0)"


def results(trainer, config: Any, test: dict[str, float] | None) -> dict:
    """``results.json`` of a GACL run, in the shape the other families write (``fairmt sweep`` selects on
    ``dev.*`` and reports ``test.*``): ``dev`` holds the selected model's evaluation — ``loss`` (the held-out
    ``eval_loss``: the MT cross-entropy L_MT on ``data.eval`` or the ``eval_fraction`` split; ``loss_kd``,
    ``loss_gc`` and ``gc_batches`` beside it, see :mod:`fairmt.trainers.gacl`) and, when the
    ``geneval`` callback ran on MT-GenEval dev, ``geneval_accuracy``, ``geneval_explicit_accuracy`` and
    ``geneval_delta_g`` (percent, pair-level); ``test`` the same MT-GenEval measures of the final model on the
    test split (absent without a ``geneval`` section: the recipe scores no test set), with the per-pair data of that
    scoring in ``test_data.items`` (``fairmt report`` compares two runs' test numbers by a paired bootstrap on it).
    ``config``: the typed recipe (or its mapping)."""
    recipe = typed_recipe(config)
    step, numbers = selected_evaluation(trainer.state)
    geneval = recipe.geneval
    on_dev = {k: v for k, v in numbers.items() if not k.startswith("geneval_")}
    if geneval is None or geneval.split == "dev":
        on_dev.update({k: v for k, v in numbers.items() if k.startswith("geneval_")})
    args = trainer.args
    from fairmt.eval.reporting.formats import GACL_RESULTS

    out = {
        "format": GACL_RESULTS,
        "method": "gacl",
        "model": str(recipe.model),
        "seed": args.seed,
        "train": {
            "steps": trainer.state.global_step,
            "gacl_lambda": args.gacl_lambda,
            "kd_alpha": args.kd_alpha,
            "temperature": args.temperature,
        },
        "selection": {
            "evaluated_step": step,
            "best_checkpoint": trainer.state.best_model_checkpoint,
            "metric": args.metric_for_best_model if trainer.state.best_model_checkpoint else None,
            "rule": "best checkpoint restored (load_best_model_at_end)"
            if trainer.state.best_model_checkpoint
            else "the last step's model (no checkpoint selection)",
        },
        "dev": on_dev,
    }
    if test:
        out["test"] = {f"geneval_{k}": v for k, v in test.items()}
        out["test_data"] = {"geneval_split": "test", "geneval_pairs": test.get("n_pairs")}
        out["test"].pop("geneval_n_pairs", None)
        items = out["test"].pop("geneval_items", None)
        if items:  # per-pair data of the test scoring (fairmt.eval.significance): `fairmt report`'s paired bootstrap
            out["test_data"]["items"] = items
    if geneval is not None:
        out["geneval"] = {
            "lang": geneval.lang,
            "selection_split": geneval.split,
            "max_pairs": geneval.max_pairs,
            "num_beams": geneval.num_beams,
            "scale": "percent",
        }
    return {k: v for k, v in out.items() if v != {}}


def main(config: dict):
    recipe = typed_recipe(config)
    args = trainer_config(recipe)  # the run's one Trainer Config
    prepare_output_dir(args.output_dir, config)  # before the model loads
    if recipe.tiny_model is not None:
        from fairmt.recipes.gacl.tiny import prepare_tiny_recipe

        prepare_tiny_recipe(recipe)
    trainer, tm = build_trainer(recipe, args)
    test_cb = None
    if recipe.geneval is not None and recipe.geneval.test:  # read before training: fail early
        try:
            test_cb = geneval_callback(tm, recipe.geneval, split="test")
        except FairmtError as err:
            raise FairmtError(
                f"{err} (the recipe scores the final model on MT-GenEval test; set geneval.test=false "
                "to train without it)"
            ) from None
    trainer.train(resume_from_checkpoint=recipe.resume_from_checkpoint)
    from fairmt.outputs import saving

    with saving(args.output_dir, what="the trained model"):  # a full disk: one line, never exit 0
        trainer.save_model()
        if trainer.is_world_process_zero():
            tm.tokenizer.save_pretrained(args.output_dir)
    if args.push_to_hub:
        trainer.push_to_hub(commit_message="fairmt GACL training")
    test = None
    if test_cb is not None:  # every process: the translations are gathered
        test = dict(test_cb.score(trainer.model), n_pairs=test_cb.n, items=test_cb.last_items)
    if trainer.is_world_process_zero():
        from fairmt.eval.report import write_text_atomic
        from fairmt.outputs import json_text

        res = results(trainer, recipe, test)
        change = None
        if recipe.tiny_model is not None:  # the demo's held-out sentences: what the recipe exists to change
            from fairmt.recipes.gacl.tiny import tiny_before_after

            tm.model = trainer.accelerator.unwrap_model(trainer.model)
            change = tiny_before_after(recipe, tm)
            res["held_out_gender"] = change
        path = Path(args.output_dir) / "results.json"
        write_text_atomic(path, json_text(res) + "\n")
        best = trainer.state.best_model_checkpoint
        print(
            f"fairmt: {run_kind(args.gacl_lambda, args.kd_alpha)} model saved in "
            f"{args.output_dir} after {trainer.state.global_step} steps"
            + (
                f" (best checkpoint {best}, {args.metric_for_best_model} {trainer.state.best_metric:.2f})"
                if best and trainer.state.best_metric is not None
                else ""
            )
            + f"\n  results: {path}"
        )
        for line in gender_lines(res, change):
            print(line)
    return trainer


def gender_lines(res: dict, change: dict | None) -> list[str]:
    """The lines a GACL run ends with: the quantity it exists to change. A ``tiny_model`` recipe: held-out gender
    accuracy, ΔG, anti-stereotypical accuracy and chrF++ of the original → the trained model
    (:func:`fairmt.recipes.gacl.tiny.before_after_lines`); with a ``geneval`` section: the trained model's MT-GenEval
    test numbers (the original's are not measured by the run: ``fairmt eval mt-bias --model ORIGINAL``); else a line
    saying that the run measured no gender score."""
    if change is not None:
        from fairmt.recipes.gacl.tiny import before_after_lines

        return before_after_lines(change)
    test = res.get("test") or {}
    if test:
        shown = ", ".join(
            f"{label} {test[k]:.1f}"
            for k, label in (
                ("geneval_accuracy", "accuracy"),
                ("geneval_explicit_accuracy", "explicit accuracy"),
                ("geneval_delta_g", "ΔG"),
            )
            if test.get(k) is not None
        )
        return [
            f"  MT-GenEval test, trained model: {shown} (%; the original is not scored by the run — "
            "`fairmt eval mt-bias --model ORIGINAL` gives the before)"
        ]
    return [
        f"  no gender score measured (no geneval section): `fairmt eval mt-bias --model` on the original "
        f"({res.get('model')}) and on the trained model gives the before → after"
    ]
