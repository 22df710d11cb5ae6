"""Recipe entry point for fair text classification: ``fairmt train recipes/classification/X.yaml [key=value ...]``.

``main(config)`` receives the recipe as a dict (``method: classification``) and runs one of

=====================  =================================================================================
``objective``          what runs
=====================  =================================================================================
``ce``                 cross-entropy baseline (:class:`~fairmt.trainers.fair_contrastive.FairContrastiveTrainer`)
``cscl``               one-stage CSCL ``(1−γ)·CE + γ·L_sup + λ·L_CS`` (Chi et al., 2022)
``cscl_two_stage``     ``L_sup + λ·L_CS`` on the encoder, then a CE head on the frozen encoder
``fcl``                ``α·CE + β·(L_scl − L_fcl)`` (Shen et al., 2022, Con*)
``fcl_two_stage``      ``L_scl − L_fcl`` on the encoder, then a CE head (Con*^ft)
``sampling``           ``CE + μ·NT-Xent`` with fairness-driven sampling on K-means subgroups (no group labels)
``adversarial``        gradient-reversal adversaries (:mod:`fairmt.trainers.adversarial`)
``inlp``               CE encoder, then INLP on its frozen representations and a logistic-regression head
=====================  =================================================================================

on one of the data sets (``data.dataset``: ``bios`` — Bias-in-Bios, profession × gender; ``hatespeech`` — Huang et
al. 2020, label × gender/age, token ids) with one encoder (``model.type``):

* ``frozen_embedder``: a sentence encoder (``model.name_or_path``; ``minilm`` = the packaged all-MiniLM-L6-v2) embeds
  every text once (mean pooling, L2-normalised, cached under ``model.cache_dir``), and a 2-layer MLP encoder + head
  is trained on the fixed vectors (Shen et al.'s setting);
* ``finetune``: ``AutoModelForSequenceClassification`` from ``model.name_or_path``, trained end to end;
* ``gru`` / ``embedding_bag``: token-id encoders for the hate-speech set.

With ``model.type: finetune``, ``data.augment: eda`` (``data.eda_alpha``) or ``backtranslate``
(``data.backtranslate_model``, ``data.pivot_lang``) gives every training row a second view for
``objective_args.views: augment``.

Options: ``training`` holds ``TrainingArguments`` fields shared by every objective; ``objective_args`` the fields of
the objective's own Config (``gamma``, ``cs_lambda``, ``temperature``, ``views`` for CSCL; ``fcl_alpha``,
``fcl_beta`` for FCL; ``n_clusters``, ``epsilon``, ``sampling_weight``, ``cluster_refresh_steps`` for sampling;
``adv_lambda``, ``n_adversaries``, ``diff_lambda``, ``adv_conditional`` for the adversarial baseline); ``stage2``
the training options of the head stage of two-stage objectives; ``inlp`` the INLP options.

Model selection uses the dev split only (``selection``: ``loss`` = lowest dev CE, or ``dto`` = distance of
(accuracy, 1 − GAP) to (1, 1), both through the Trainer's ``load_best_model_at_end``). The test split is scored once,
at the end: ``results.json`` (dev and test :class:`~fairmt.eval.classification.ClassificationResult`, leakage SVMs
trained on the training split as Shen et al.) and ``predictions.jsonl`` (``label``, ``pred``, ``group``, ``hidden``;
readable by ``fairmt eval classification``) are written to the run's folder: ``output_dir`` (or
``training.output_dir``; default ``outputs/<recipe name>``), refused when it holds an earlier run unless
``--overwrite``. ``main`` returns the results dict.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.scripts._output import prepare_output_dir

OBJECTIVES = ("ce", "cscl", "cscl_two_stage", "fcl", "fcl_two_stage", "sampling", "adversarial", "inlp")
MODEL_TYPES = ("frozen_embedder", "finetune", "gru", "embedding_bag")

DEFAULTS: dict[str, Any] = {
    "objective": "ce",
    "output_dir": None,  # default outputs/<recipe name>; training.output_dir names the same folder
    "seed": 0,
    "selection": "loss",
    "save_predictions": True,
    "data": {"dataset": "bios", "files": None, "split_seed": 0, "fractions": [0.5, 0.2, 0.3],
             "language": "Spanish", "attribute": "gender",
             "augment": None, "eda_alpha": 0.1, "backtranslate_model": None, "pivot_lang": "de"},
    "model": {"type": "frozen_embedder", "name_or_path": "minilm", "hidden_dim": 300, "num_layers": 2,
              "dropout": 0.1, "max_length": 128, "embed_batch_size": 32, "cache_dir": None,
              "embed_dim": 200, "pooling": "mean"},
    "training": {"num_train_epochs": 10, "per_device_train_batch_size": 64, "per_device_eval_batch_size": 128,
                 "learning_rate": 1e-3, "weight_decay": 0.0, "logging_steps": 10},
    "objective_args": {},
    "stage2": {"num_train_epochs": 10, "learning_rate": 1e-3},
    "inlp": {"n_iterations": 20, "by_class": True},
}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def resolve_config(config: dict[str, Any]) -> dict[str, Any]:
    """Recipe dict merged over :data:`DEFAULTS`, validated (unknown objective/model/dataset → FairmtError)."""
    if config.get("method", "classification") != "classification":
        raise FairmtError(f"recipe method must be 'classification' for this entry point, got {config.get('method')!r}")
    cfg = _merge(DEFAULTS, {k: v for k, v in config.items() if k != "method"})
    if cfg["objective"] not in OBJECTIVES:
        raise FairmtError(f"objective must be one of {OBJECTIVES}, got {cfg['objective']!r}")
    if cfg["model"]["type"] not in MODEL_TYPES:
        raise FairmtError(f"model.type must be one of {MODEL_TYPES}, got {cfg['model']['type']!r}")
    if cfg["data"]["dataset"] not in ("bios", "hatespeech"):
        raise FairmtError(f"data.dataset must be bios or hatespeech, got {cfg['data']['dataset']!r}")
    if cfg["selection"] not in ("loss", "dto"):
        raise FairmtError(f"selection must be loss or dto (dev set only), got {cfg['selection']!r}")
    # one folder per run: the trainer's checkpoints, results.json and predictions.jsonl all go to it
    run_dir = cfg["training"].pop("output_dir", None)
    if run_dir and cfg["output_dir"] and Path(run_dir) != Path(cfg["output_dir"]):
        raise FairmtError(f"output_dir ({cfg['output_dir']}) and training.output_dir ({run_dir}) differ: give one")
    cfg["output_dir"] = run_dir or cfg["output_dir"] or str(
        Path("outputs") / Path(config.get("recipe_path", "classification")).stem)
    return cfg


# ---------------------------------------------------------------------------------------------- data + models
def load_data(dcfg: dict[str, Any]):
    """The :class:`~fairmt.data.classification.ClassificationData` the recipe names."""
    from fairmt.data.classification import read_bios, read_hatespeech

    if dcfg["dataset"] == "bios":
        return read_bios(dcfg.get("files"), tuple(dcfg["fractions"]), dcfg["split_seed"])
    return read_hatespeech(dcfg["language"], dcfg["attribute"])


def _model_path(name: str) -> str:
    from fairmt.hub import require_model, resolve_model_ref

    return require_model(resolve_model_ref(name), "encoder")


def embed_texts(texts: list[str], name_or_path: str, max_length: int = 128, batch_size: int = 32,
                cache_dir: str | None = None) -> np.ndarray:
    """Mean-pooled, L2-normalised sentence embeddings (the all-MiniLM-L6-v2 recipe), cached on disk by content."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from fairmt.models.pooling import pool

    path = _model_path(name_or_path)
    key = hashlib.sha256(json.dumps([path, max_length, texts]).encode()).hexdigest()[:16]
    cache = Path(cache_dir) / f"emb-{key}.npy" if cache_dir else None
    if cache is not None and cache.exists():
        return np.load(cache)
    tok = AutoTokenizer.from_pretrained(path)
    enc = AutoModel.from_pretrained(path).eval()
    out = []
    with torch.no_grad():
        for s in range(0, len(texts), batch_size):
            b = tok(texts[s : s + batch_size], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            h = pool(enc(**b).last_hidden_state, b["attention_mask"], "mean")
            out.append(torch.nn.functional.normalize(h, dim=-1).numpy())
    X = np.concatenate(out).astype(np.float32)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(cache, X)
    return X


def build_datasets(cfg: dict[str, Any], data) -> tuple[dict[str, Any], Any, Any]:
    """``datasets.Dataset`` per split, the collator and a factory building a fresh model."""
    from datasets import Dataset

    from fairmt.data.classification import ClassificationCollator, vocab_size
    from fairmt.models import text_classifiers as tc

    m = cfg["model"]
    k = data.num_labels
    names = [str(n) for n in data.label_names]
    records = {name: split.records() for name, split in data.splits.items()}
    collator = ClassificationCollator(max_length=m["max_length"])
    if m["type"] == "frozen_embedder":
        if any(split.texts is None for split in data.splits.values()):
            raise FairmtError("model.type frozen_embedder needs a text data set (e.g. bios)")
        # embed the sorted set of all texts once: the cache key does not depend on the split
        unique = sorted({t for split in data.splits.values() for t in split.texts})
        X = embed_texts(unique, m["name_or_path"], m["max_length"], m["embed_batch_size"], m["cache_dir"])
        row_of = {t: i for i, t in enumerate(unique)}
        for name, split in data.splits.items():
            for r, t in zip(records[name], split.texts):
                r.pop("text", None)
                r["features"] = X[row_of[t]].tolist()
        dim = len(records["train"][0]["features"])

        def factory():
            return tc.MLPClassifier(dim, k, hidden_dim=m["hidden_dim"], num_layers=m["num_layers"], dropout=m["dropout"],
                                    labels=names)

    elif m["type"] == "finetune":
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        add_views(cfg, data, records["train"])
        path = _model_path(m["name_or_path"])
        collator = ClassificationCollator(AutoTokenizer.from_pretrained(path), max_length=m["max_length"])

        def factory():  # the data set's class names, not LABEL_0 ... in the saved config
            return AutoModelForSequenceClassification.from_pretrained(
                path, num_labels=k, id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})

    else:
        if data.splits["train"].input_ids is None:
            raise FairmtError(f"model.type {m['type']} needs token ids (e.g. the hate-speech set)")
        vs = vocab_size(data)

        def factory():
            cls = tc.GRUClassifier if m["type"] == "gru" else tc.EmbeddingBagClassifier
            return cls(vs, k, embed_dim=m["embed_dim"], hidden_dim=m["hidden_dim"], dropout=m["dropout"], labels=names)

    return {name: Dataset.from_list(rows) for name, rows in records.items()}, collator, factory


def add_views(cfg: dict[str, Any], data, rows: list[dict[str, Any]]) -> None:
    """Give the training rows a ``text_view`` (second view) when ``data.augment`` is ``eda`` or ``backtranslate``."""
    d = cfg["data"]
    kind = d.get("augment")
    if not kind:
        return
    texts = data.splits["train"].texts
    if texts is None:
        raise FairmtError("data.augment needs a text data set (token-id data has no text to augment)")
    if kind == "eda":
        from fairmt.data.augment.eda import EDA

        views = EDA(alpha=d["eda_alpha"], seed=cfg["seed"])(texts)
    elif kind == "backtranslate":
        from fairmt.data.augment.backtranslate import backtranslate
        from fairmt.models import load_translation_model

        if not d.get("backtranslate_model"):
            raise FairmtError("data.augment=backtranslate needs data.backtranslate_model (a seq2seq MT model path)")
        mt = load_translation_model(d["backtranslate_model"], src_lang="en", tgt_lang=d["pivot_lang"])
        views = backtranslate(texts, mt, pivot_lang=d["pivot_lang"], source_lang="en")
    else:
        raise FairmtError(f"data.augment must be eda or backtranslate, got {kind!r}")
    for r, v in zip(rows, views):
        r["text_view"] = v


# ---------------------------------------------------------------------------------------------- training
def _args(config_cls, cfg: dict[str, Any], out: str, extra: dict[str, Any], select: bool = True):
    names = {f.name for f in fields(config_cls)}
    train = {**cfg["training"], **cfg.get("objective_args", {}), **extra}
    unknown = sorted(set(train) - names)
    if unknown:
        raise FairmtError(f"unknown training option(s) {unknown} for {config_cls.__name__}")
    base = dict(
        output_dir=out, seed=cfg["seed"], report_to=[], use_cpu=not _cuda(), disable_tqdm=True,
        save_total_limit=1, eval_strategy="epoch" if select else "no", save_strategy="epoch" if select else "no",
        load_best_model_at_end=select, save_only_model=True,
    )
    if select:
        crit = cfg["selection"]
        base.update(metric_for_best_model="eval_loss" if crit == "loss" else "eval_dto", greater_is_better=False)
    base.update(train)
    return config_cls(**base)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _predict(trainer, dataset) -> tuple[np.ndarray, np.ndarray]:
    pred = trainer.predict(dataset, metric_key_prefix="predict")
    logits, hidden = pred.predictions
    return np.asarray(logits), np.asarray(hidden)


def _train(cfg, data, datasets, collator, factory, out: str):
    """Train per the objective; returns ``{split: (logits, hidden)}`` for train/dev/test and extra info."""
    import torch

    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer, freeze_encoder
    from fairmt.eval.selection import fairness_compute_metrics

    obj = cfg["objective"]
    metrics = fairness_compute_metrics(num_classes=data.num_labels)
    torch.manual_seed(cfg["seed"])
    model = factory()
    common = dict(train_dataset=datasets["train"], eval_dataset=datasets["dev"], data_collator=collator,
                  compute_metrics=metrics)
    pooling = {"pooling": "cls" if cfg["model"]["pooling"] == "cls" else "mean"}
    info: dict[str, Any] = {}
    if obj in ("ce", "cscl", "fcl", "inlp"):
        o = "ce" if obj == "inlp" else obj
        views = "none" if o in ("ce", "fcl") else cfg["objective_args"].get("views", "dropout")
        extra = {"objective": o, "views": views, **pooling}
        trainer = FairContrastiveTrainer(model=model, args=_args(FairContrastiveConfig, cfg, out, extra), **common)
    elif obj in ("cscl_two_stage", "fcl_two_stage"):
        o = "cscl_pretrain" if obj == "cscl_two_stage" else "fcl_pretrain"
        views = "none" if o == "fcl_pretrain" else cfg["objective_args"].get("views", "dropout")
        s1 = FairContrastiveTrainer(
            model=model, args=_args(FairContrastiveConfig, cfg, out + "/stage1", {"objective": o, "views": views, **pooling}, select=False),
            train_dataset=datasets["train"], data_collator=collator,
        )
        s1.train()
        info["stage1_log"] = [h for h in s1.state.log_history if "loss" in h][-1:]
        freeze_encoder(model)
        stage2 = {k: v for k, v in cfg["training"].items() if k in ("per_device_train_batch_size", "per_device_eval_batch_size", "logging_steps")}
        stage2.update(cfg["stage2"])
        cfg2 = {**cfg, "training": stage2, "objective_args": {}}
        trainer = FairContrastiveTrainer(model=model, args=_args(FairContrastiveConfig, cfg2, out, {"objective": "ce", "views": "none", **pooling}), **common)
    elif obj == "sampling":
        from fairmt.trainers.sampling import FairnessSamplingConfig, FairnessSamplingTrainer

        trainer = FairnessSamplingTrainer(model=model, args=_args(FairnessSamplingConfig, cfg, out, {"objective": "sampling", **pooling}), **common)
    elif obj == "adversarial":
        from fairmt.trainers.adversarial import AdversarialConfig, AdversarialTrainer

        extra = {"num_groups": len(data.group_names), **pooling}
        trainer = AdversarialTrainer(model=model, args=_args(AdversarialConfig, cfg, out, extra), **common)
    else:  # pragma: no cover - validated in resolve_config
        raise FairmtError(f"unknown objective {obj!r}")
    trainer.train()
    info["train_log"] = [h for h in trainer.state.log_history if "loss" in h][-1:]
    info["best_checkpoint"] = trainer.state.best_model_checkpoint
    info["model_dir"] = _save_final(trainer, collator, os.path.join(out, "model"))
    outputs = {name: _predict(trainer, datasets[name]) for name in ("train", "dev", "test")}
    if obj == "inlp":
        outputs, inlp_info = _apply_inlp(cfg, data, outputs)
        info["inlp"] = inlp_info
    return outputs, info


def _save_final(trainer, collator, path: str) -> str | None:
    """The selected model with its config (and tokenizer), reloadable with ``from_pretrained`` and pushable: a
    transformers model, or one of fairmt's small classifiers (``PyTorchModelHubMixin``). The Trainer alone saves the
    latter as bare weights."""
    if not trainer.is_world_process_zero():
        return None
    model = trainer.accelerator.unwrap_model(trainer.model)
    model.save_pretrained(path)
    if getattr(collator, "tokenizer", None) is not None:
        collator.tokenizer.save_pretrained(path)
    return path


def _apply_inlp(cfg, data, outputs):
    """INLP on the CE encoder's frozen representations, then a logistic-regression head on the guarded ones."""
    from sklearn.linear_model import LogisticRegression

    from fairmt.trainers.inlp import inlp

    tr, dv = data.splits["train"], data.splits["dev"]
    res = inlp(
        outputs["train"][1], tr.groups, n_iterations=cfg["inlp"]["n_iterations"], labels=tr.labels,
        by_class=cfg["inlp"]["by_class"], dev=(outputs["dev"][1], dv.groups, dv.labels), seed=cfg["seed"],
    )
    head = LogisticRegression(max_iter=2000, random_state=cfg["seed"])
    head.fit(res.transform(outputs["train"][1]), tr.labels)
    new = {}
    for name, (_, hidden) in outputs.items():
        guarded = res.transform(hidden)
        scores = head.predict_log_proba(guarded)
        # map the head's classes (those seen in training) back onto all label ids
        full = np.full((len(guarded), data.num_labels), -np.inf)
        full[:, head.classes_] = scores
        new[name] = (full, guarded)
    return new, {"n_iterations": res.n_iterations, "rank_removed": res.rank_removed}


def _score(data, outputs, split: str, seed: int):
    from fairmt.eval.classification import classification_metrics

    s, t = data.splits[split], data.splits["train"]
    logits, hidden = outputs[split]
    tlogits, thidden = outputs["train"]
    return classification_metrics(
        s.labels, logits.argmax(-1).tolist(), s.groups, hidden=hidden, logits=np.nan_to_num(logits, neginf=-1e9),
        train_hidden=thidden, train_logits=np.nan_to_num(tlogits, neginf=-1e9), train_groups=t.groups,
        num_classes=data.num_labels, seed=seed,
    )


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Run one classification recipe (see the module docstring); returns and writes ``results.json``."""
    cfg = resolve_config(config)
    out = str(prepare_output_dir(cfg["output_dir"], config))
    data = load_data(cfg["data"])
    datasets, collator, factory = build_datasets(cfg, data)
    outputs, info = _train(cfg, data, datasets, collator, factory, out)
    dev = _score(data, outputs, "dev", cfg["seed"])
    test = _score(data, outputs, "test", cfg["seed"])
    results = {
        "objective": cfg["objective"],
        "dataset": cfg["data"]["dataset"],
        "model": cfg["model"]["type"],
        "seed": cfg["seed"],
        "selection": cfg["selection"] + " (dev set)",
        "dev": dev.summary(percent=True),  # percent, as every fairmt report
        "test": test.summary(percent=True),
        "test_full": test.to_percent_dict(),
        "labels": data.label_names,
        "groups": data.group_names,
        "data_notes": data.notes,
        "info": json.loads(json.dumps(info, default=str)),
        "config": cfg,
    }
    with open(os.path.join(out, "results.json"), "w") as fh:
        json.dump(results, fh, indent=2, default=str)
    t = results["test"]
    print(f"fairmt: {cfg['objective']} on {cfg['data']['dataset']} (test): accuracy {t['accuracy']:.2f}, "
          f"GAP {t['gap']:.2f}, ΔEO {t['delta_eo']:.2f} (%)\n  results: {os.path.join(out, 'results.json')}"
          + (f"\n  model: {info['model_dir']}" if info.get("model_dir") else ""))
    if cfg["save_predictions"]:
        logits, hidden = outputs["test"]
        s = data.splits["test"]
        with open(os.path.join(out, "predictions.jsonl"), "w") as fh:
            for i in range(len(s)):
                fh.write(json.dumps({"label": s.labels[i], "pred": int(logits[i].argmax()), "group": s.groups[i],
                                     "hidden": [round(float(v), 5) for v in hidden[i]]}) + "\n")
    return results
