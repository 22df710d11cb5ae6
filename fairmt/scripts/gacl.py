"""Recipe entry point for ``method: gacl`` (``fairmt train recipes/gacl/*.yaml``).

Recipe keys (see ``recipes/gacl/small100_en-de.yaml`` for a documented example):

* ``model`` (Hub name or path), ``family`` (optional), ``src_lang``, ``tgt_lang``;
* ``data``: ``train`` (JSONL / TSV / HF dataset name), ``split``, ``max_train_samples``, ``balance``,
  ``max_length``, ``eval_fraction`` (held-out share of the filtered data for the evaluation loss);
* ``training``: any :class:`fairmt.trainers.gacl.GACLConfig` field;
* ``peft`` (optional): :class:`peft.LoraConfig` fields — trains a LoRA adapter instead of the full model;
* ``geneval`` (optional): ``lang``, ``split`` (dev), ``max_pairs``, ``patience`` — early stopping on MT-GenEval
  accuracy;
* ``push_to_hub`` is a ``training`` field as in transformers; the teacher is never saved or pushed.
"""

from __future__ import annotations

from pathlib import Path

from fairmt.errors import FairmtError


def build_trainer(config: dict):
    from transformers import EarlyStoppingCallback, HfArgumentParser

    from fairmt.data.gacl import GenderContrastiveCollator, prepare_gacl_pairs, tokenize_gacl
    from fairmt.data.parallel import read_parallel
    from fairmt.models import load_translation_model
    from fairmt.trainers.gacl import GACLConfig, GACLTrainer

    if "model" not in config:
        raise FairmtError("the GACL recipe needs a 'model' (Hub name or local path)")
    data_cfg = dict(config.get("data") or {})
    if "train" not in data_cfg:
        raise FairmtError("the GACL recipe needs data.train (a JSONL/TSV file or a Hugging Face dataset name)")
    train_cfg = dict(config.get("training") or {})
    train_cfg.setdefault("output_dir", str(Path("outputs") / Path(config.get("recipe_path", "gacl")).stem))
    geneval = config.get("geneval")
    if geneval:
        train_cfg.setdefault("eval_strategy", "steps")
        train_cfg.setdefault("metric_for_best_model", "geneval_accuracy")
        train_cfg.setdefault("greater_is_better", True)
        train_cfg.setdefault("load_best_model_at_end", True)
    (args,) = HfArgumentParser(GACLConfig).parse_dict(train_cfg, allow_extra_keys=False)

    src, tgt = config.get("src_lang", "en"), config.get("tgt_lang", "de")
    tm = load_translation_model(config["model"], src, tgt, family=config.get("family"))
    if config.get("peft"):
        from peft import LoraConfig, TaskType, get_peft_model

        tm.model = get_peft_model(tm.model, LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, **config["peft"]))

    pairs = read_parallel(data_cfg["train"], src, tgt, split=data_cfg.get("split", "train"))
    if data_cfg.get("max_train_samples"):
        pairs = pairs.select(range(min(len(pairs), int(data_cfg["max_train_samples"]))))
    prepared = prepare_gacl_pairs(pairs, balance=data_cfg.get("balance", True), seed=args.seed)
    eval_ds = None
    frac = float(data_cfg.get("eval_fraction", 0.05 if args.eval_strategy != "no" else 0.0))
    if frac > 0:
        split = prepared.train_test_split(test_size=frac, seed=args.seed, stratify_by_column=None)
        prepared, eval_ds = split["train"], split["test"]
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
        from fairmt.eval.callbacks import GenEvalCallback

        trainer.add_callback(
            GenEvalCallback(tm, geneval.get("lang", tgt), geneval.get("split", "dev"), geneval.get("max_pairs"))
        )
        trainer.add_callback(EarlyStoppingCallback(early_stopping_patience=int(geneval.get("patience", 3))))
    return trainer, tm


def main(config: dict):
    trainer, tm = build_trainer(config)
    trainer.train(resume_from_checkpoint=config.get("resume_from_checkpoint"))
    trainer.save_model()
    if trainer.is_world_process_zero():
        tm.tokenizer.save_pretrained(trainer.args.output_dir)
    if trainer.args.push_to_hub:
        trainer.push_to_hub(commit_message="fairmt GACL training")
    return trainer
