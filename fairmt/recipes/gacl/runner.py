"""Recipe entry point for ``method: gacl`` (``fairmt train recipes/gacl/*.yaml``).

Recipe keys (see ``recipes/gacl/small100_en-de.yaml`` for a documented example):

* ``model`` (Hub name or path), ``family`` (optional), ``src_lang``, ``tgt_lang``;
* ``data``: ``train`` (JSONL / TSV / HF dataset name), ``split``, ``max_train_samples``, ``balance``,
  ``max_length``, ``seed`` (draws the balancing subsample and the ``eval_fraction`` split; fixed while
  ``training.seed`` varies, so the seeds of a sweep are scored on one dev set), ``eval_fraction`` (held-out share of the prepared training data for the evaluation loss),
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
  as the released code), ``num_beams`` (5, the paper's beam), ``batch_size``; the best checkpoint is restored at
  the end, then scored on MT-GenEval test with the same settings (``test: false`` skips it);
* ``results.json`` in ``training.output_dir`` (:func:`results`): ``dev`` (eval loss, MT-GenEval dev numbers of the
  selected model), ``test`` (MT-GenEval test), the selection made — what ``fairmt sweep`` reads;
* ``push_to_hub`` is a ``training`` field as in transformers; the teacher is never saved or pushed;
* ``tiny_model`` (optional; ``recipes/gacl/tiny_offline.yaml``): ``pretrain_steps``, ``seed`` — build ``model`` and
  ``data.train`` offline, like ``fairmt demo``'s stereotyped original and its balanced data, where they do not exist
  (:func:`fairmt.demo.prepare_tiny_recipe`).

α = 0.4 and λ = 1.0 in the shipped recipes come from the authors' released script (``run_translation.sh``); the
paper does not print them.
"""

from __future__ import annotations

from pathlib import Path

from fairmt.errors import FairmtError
from fairmt.recipes._output import prepare_output_dir

PREPARE = ("gacl", "gfst", "plain")
GENEVAL_METRICS = ("explicit_accuracy", "accuracy")


def resolve_config(config: dict):
    """The :class:`GACLConfig` the recipe trains with (defaults and variant presets applied); loads no model."""
    from transformers import HfArgumentParser

    from fairmt.trainers.gacl import GACLConfig

    train_cfg = dict(config.get("training") or {})
    train_cfg.setdefault("output_dir", str(Path("outputs") / Path(config.get("recipe_path", "gacl")).stem))
    geneval = config.get("geneval")
    if geneval:
        metric = geneval.get("metric", "explicit_accuracy")
        if metric not in GENEVAL_METRICS:
            raise FairmtError(f"geneval.metric must be one of {GENEVAL_METRICS}, got {metric!r}")
        train_cfg.setdefault("eval_strategy", "steps")
        train_cfg.setdefault("eval_steps", 100)
        train_cfg.setdefault("save_steps", train_cfg["eval_steps"])
        train_cfg.setdefault("metric_for_best_model", f"geneval_{metric}")
        train_cfg.setdefault("greater_is_better", True)
        train_cfg.setdefault("load_best_model_at_end", True)
    (args,) = HfArgumentParser(GACLConfig).parse_dict(train_cfg, allow_extra_keys=False)
    return args


def resolved_sections(config: dict) -> tuple[dict, dict | None]:
    """``data`` and ``geneval`` as the recipe schema resolves them (every default filled in, the paper card reads the
    same values: :func:`fairmt.recipes._schema.resolve_recipe`); ``geneval.lang`` defaults to ``tgt_lang``."""
    from fairmt.recipes._schema import resolve_recipe

    schema = resolve_recipe({**config, "method": "gacl"})
    data_cfg = schema.data.model_dump()
    geneval = schema.geneval.model_dump() if schema.geneval is not None else None
    if geneval is not None and geneval["lang"] is None:
        geneval["lang"] = schema.tgt_lang
    return data_cfg, geneval


def prepare_data(pairs, data_cfg: dict, tgt: str, seed: int):
    """The training rows of ``data.prepare`` (see the module docstring)."""
    from fairmt.data.gacl import balance_genders, filter_target_gender, prepare_gacl_pairs, target_gender_detector

    how = data_cfg.get("prepare", "gacl")
    if how not in PREPARE:
        raise FairmtError(f"data.prepare must be one of {PREPARE}, got {how!r}")
    if how == "gacl":
        return prepare_gacl_pairs(pairs, balance=data_cfg.get("balance", True), seed=seed,
                                  lexicon=data_cfg.get("lexicon", "fairmt"))
    if len(pairs) == 0:
        raise FairmtError("the training data is empty")
    if how == "gfst":
        ds = filter_target_gender(pairs, target_gender_detector(tgt, data_cfg.get("target_gender_words")))
        return balance_genders(ds, seed) if data_cfg.get("balance", True) else ds
    return pairs


def split_data(pairs, data_cfg: dict, tgt: str, evaluates: bool):
    """The training rows (``data.prepare``) and the held-out ``eval_fraction`` rows (None with ``data.eval`` or no
    held-out share; default 0.05 when the run evaluates). Both are drawn with ``data.seed``, never with the training
    seed: runs that differ only in ``training.seed`` train and are scored on the same rows."""
    seed = int(data_cfg.get("seed", 42))
    if data_cfg.get("max_train_samples"):
        pairs = pairs.select(range(min(len(pairs), int(data_cfg["max_train_samples"]))))
    prepared = prepare_data(pairs, data_cfg, tgt, seed)
    if data_cfg.get("eval"):
        return prepared, None
    frac = data_cfg.get("eval_fraction")
    frac = float(frac if frac is not None else 0.05 if evaluates else 0.0)
    if frac <= 0:
        return prepared, None
    split = prepared.train_test_split(test_size=frac, seed=seed, stratify_by_column=None)
    return split["train"], split["test"]


def key_aliases(src: str, tgt: str) -> dict[str, str]:
    """For NLLB-200's FLORES-200 codes (``eng_Latn``, ``deu_Latn``), the ISO codes (``en``, ``de``) that the
    M2M-100 / SMaLL-100 recipes' JSONL files use as keys: either spelling of a row is read."""
    from fairmt.models.languages import ISO_TO_NLLB

    to_iso = {v: k for k, v in ISO_TO_NLLB.items()}
    return {code: to_iso[code] for code in (src, tgt) if code in to_iso}


def build_trainer(config: dict):
    from transformers import EarlyStoppingCallback

    from fairmt.data.gacl import GenderContrastiveCollator, tokenize_gacl
    from fairmt.data.parallel import read_parallel
    from fairmt.models import load_translation_model
    from fairmt.trainers.gacl import GACLTrainer

    if "model" not in config:
        raise FairmtError("the GACL recipe needs a 'model' (Hub name or local path)")
    if "train" not in (config.get("data") or {}):
        raise FairmtError("the GACL recipe needs data.train (a JSONL/TSV file or a Hugging Face dataset name)")
    data_cfg, geneval = resolved_sections(config)
    args = resolve_config(config)
    if data_cfg.get("prepare", "gacl") != "gacl" and args.gacl_lambda > 0:
        raise FairmtError(
            f"data.prepare={data_cfg['prepare']!r} gives no counterfactuals/genders for GACL: set "
            "training.gacl_lambda=0 (plain fine-tuning baseline) or data.prepare=gacl"
        )

    src, tgt = config.get("src_lang", "en"), config.get("tgt_lang", "de")
    tm = load_translation_model(config["model"], src, tgt, family=config.get("family"))
    if config.get("peft"):
        from peft import LoraConfig, TaskType, get_peft_model

        tm.model = get_peft_model(tm.model, LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, **config["peft"]))

    aliases = key_aliases(src, tgt)
    pairs = read_parallel(data_cfg["train"], src, tgt, split=data_cfg.get("split", "train"), key_aliases=aliases)
    prepared, eval_ds = split_data(pairs, data_cfg, tgt, args.eval_strategy != "no")
    if data_cfg.get("eval"):
        eval_ds = read_parallel(data_cfg["eval"], src, tgt, split=data_cfg.get("eval_split", "validation"),
                                key_aliases=aliases)
        if data_cfg.get("max_eval_samples"):
            eval_ds = eval_ds.select(range(min(len(eval_ds), int(data_cfg["max_eval_samples"]))))
    enc = lambda ds: tokenize_gacl(ds, tm.encode, max_length=int(data_cfg.get("max_length", 128)))  # noqa: E731
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
    if geneval:
        trainer.add_callback(geneval_callback(tm, geneval, tgt))
        trainer.add_callback(EarlyStoppingCallback(early_stopping_patience=int(geneval.get("patience", 10))))
    return trainer, tm


def geneval_callback(tm, geneval: dict, tgt: str, split: str | None = None):
    """The recipe's MT-GenEval scorer (``geneval`` section) on ``split`` (default: the section's, dev)."""
    from fairmt.model_eval.callbacks import GenEvalCallback

    return GenEvalCallback(tm, geneval.get("lang", tgt), split or geneval.get("split", "dev"), geneval.get("max_pairs"),
                           batch_size=int(geneval.get("batch_size", 16)), num_beams=int(geneval.get("num_beams", 5)))


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
    numbers = {k[len("eval_"):]: float(v) for k, v in chosen.items()
               if k.startswith("eval_") and isinstance(v, (int, float)) and not isinstance(v, bool)
               and k not in ("eval_runtime", "eval_samples_per_second", "eval_steps_per_second")}
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


def results(trainer, config: dict, test: dict[str, float] | None) -> dict:
    """``results.json`` of a GACL run, in the shape the other families write (``fairmt sweep`` selects on
    ``dev.*`` and reports ``test.*``): ``dev`` holds the selected model's evaluation — ``loss`` (the held-out
    ``eval_loss``: the MT cross-entropy L_MT on ``data.eval`` or the ``eval_fraction`` split; ``loss_kd``,
    ``loss_gc`` and ``gc_batches`` beside it, see :mod:`fairmt.trainers.gacl`) and, when the
    ``geneval`` callback ran on MT-GenEval dev, ``geneval_accuracy``, ``geneval_explicit_accuracy`` and
    ``geneval_delta_g`` (percent, pair-level); ``test`` the same MT-GenEval measures of the final model on the
    test split (absent without a ``geneval`` section: the recipe scores no test set), with the per-pair data of that
    scoring in ``test_data.items`` (``fairmt report`` compares two runs' test numbers by a paired bootstrap on it)."""
    step, numbers = selected_evaluation(trainer.state)
    geneval = config.get("geneval") or {}
    on_dev = {k: v for k, v in numbers.items() if not k.startswith("geneval_")}
    if geneval.get("split", "dev") == "dev":
        on_dev.update({k: v for k, v in numbers.items() if k.startswith("geneval_")})
    args = trainer.args
    from fairmt.eval.reporting.formats import GACL_RESULTS

    out = {
        "format": GACL_RESULTS, "method": "gacl", "model": str(config.get("model")), "seed": args.seed,
        "train": {"steps": trainer.state.global_step, "gacl_lambda": args.gacl_lambda, "kd_alpha": args.kd_alpha,
                  "temperature": args.temperature},
        "selection": {"evaluated_step": step, "best_checkpoint": trainer.state.best_model_checkpoint,
                      "metric": args.metric_for_best_model if trainer.state.best_model_checkpoint else None,
                      "rule": "best checkpoint restored (load_best_model_at_end)" if trainer.state.best_model_checkpoint
                      else "the last step's model (no checkpoint selection)"},
        "dev": on_dev,
    }
    if test:
        out["test"] = {f"geneval_{k}": v for k, v in test.items()}
        out["test_data"] = {"geneval_split": "test", "geneval_pairs": test.get("n_pairs")}
        out["test"].pop("geneval_n_pairs", None)
        items = out["test"].pop("geneval_items", None)
        if items:  # per-pair data of the test scoring (fairmt.eval.significance): `fairmt report`'s paired bootstrap
            out["test_data"]["items"] = items
    if geneval:
        out["geneval"] = {"lang": geneval.get("lang", config.get("tgt_lang", "de")),
                          "selection_split": geneval.get("split", "dev"), "max_pairs": geneval.get("max_pairs"),
                          "num_beams": int(geneval.get("num_beams", 5)), "scale": "percent"}
    return {k: v for k, v in out.items() if v != {}}


def main(config: dict):
    prepare_output_dir(resolve_config(config).output_dir, config)  # before the model loads
    if config.get("tiny_model"):
        from fairmt.demo import prepare_tiny_recipe

        prepare_tiny_recipe(config)
    trainer, tm = build_trainer(config)
    test_cb = None
    if config.get("geneval") and config["geneval"].get("test", True):  # read before training: fail early
        try:
            test_cb = geneval_callback(tm, config["geneval"], config.get("tgt_lang", "de"), split="test")
        except FairmtError as err:
            raise FairmtError(f"{err} (the recipe scores the final model on MT-GenEval test; set geneval.test=false "
                              "to train without it)") from None
    trainer.train(resume_from_checkpoint=config.get("resume_from_checkpoint"))
    from fairmt.outputs import saving

    with saving(trainer.args.output_dir, what="the trained model"):  # a full disk: one line, never exit 0
        trainer.save_model()
        if trainer.is_world_process_zero():
            tm.tokenizer.save_pretrained(trainer.args.output_dir)
    if trainer.args.push_to_hub:
        trainer.push_to_hub(commit_message="fairmt GACL training")
    test = None
    if test_cb is not None:  # every process: the translations are gathered
        test = dict(test_cb.score(trainer.model), n_pairs=test_cb.n, items=test_cb.last_items)
    if trainer.is_world_process_zero():
        from fairmt.eval.report import write_text_atomic
        from fairmt.outputs import json_text

        res = results(trainer, config, test)
        change = None
        if config.get("tiny_model"):  # the demo's held-out sentences: what the recipe exists to change
            from fairmt.demo import tiny_before_after

            tm.model = trainer.accelerator.unwrap_model(trainer.model)
            change = tiny_before_after(config, tm)
            res["held_out_gender"] = change
        path = Path(trainer.args.output_dir) / "results.json"
        write_text_atomic(path, json_text(res) + "\n")
        best = trainer.state.best_model_checkpoint
        print(f"fairmt: {run_kind(trainer.args.gacl_lambda, trainer.args.kd_alpha)} model saved in "
              f"{trainer.args.output_dir} after {trainer.state.global_step} steps"
              + (f" (best checkpoint {best}, {trainer.args.metric_for_best_model} {trainer.state.best_metric:.2f})"
                 if best and trainer.state.best_metric is not None else "")
              + f"\n  results: {path}")
        for line in gender_lines(res, change):
            print(line)
    return trainer


def gender_lines(res: dict, change: dict | None) -> list[str]:
    """The lines a GACL run ends with: the quantity it exists to change. A ``tiny_model`` recipe: held-out gender
    accuracy, ΔG, anti-stereotypical accuracy and chrF++ of the original → the trained model
    (:func:`fairmt.demo.before_after_lines`); with a ``geneval`` section: the trained model's MT-GenEval test numbers
    (the original's are not measured by the run: ``fairmt eval mt-bias --model ORIGINAL``); else a line saying that
    the run measured no gender score."""
    if change is not None:
        from fairmt.demo import before_after_lines

        return before_after_lines(change)
    test = res.get("test") or {}
    if test:
        shown = ", ".join(f"{label} {test[k]:.1f}" for k, label in (
            ("geneval_accuracy", "accuracy"), ("geneval_explicit_accuracy", "explicit accuracy"),
            ("geneval_delta_g", "ΔG")) if test.get(k) is not None)
        return [f"  MT-GenEval test, trained model: {shown} (%; the original is not scored by the run — "
                "`fairmt eval mt-bias --model ORIGINAL` gives the before)"]
    return [f"  no gender score measured (no geneval section): `fairmt eval mt-bias --model` on the original "
            f"({res.get('model')}) and on the trained model gives the before → after"]
