"""Recipe entry point for fair text classification: ``fairmt train recipes/classification/X.yaml [key=value ...]``.

``main(config)`` receives the recipe as a dict (``method: classification``) and runs one of

=====================  =================================================================================
``objective``          what runs
=====================  =================================================================================
``ce``                 cross-entropy baseline (:class:`~fairmt.trainers.fair_contrastive.FairContrastiveTrainer`)
``cscl``               one-stage CSCL ``(1−γ)·CE + γ·L_sup + λ·L_CS`` (Chi et al., 2022)
``cscl_two_stage``     ``L_sup + λ·L_CS`` on the encoder, then the head on the fixed encoder
``fcl``                ``α·CE + β·(L_scl − L_fcl)`` (Shen et al., 2022, Con*)
``fcl_two_stage``      ``L_scl − L_fcl`` on the encoder, then the head (Con*^ft)
``sampling``           ``CE + μ·NT-Xent`` with fairness-driven sampling on K-means subgroups (no group labels)
``adversarial``        gradient-reversal adversaries (:mod:`fairmt.trainers.adversarial`)
``inlp``               CE encoder, then INLP on its frozen representations and a logistic-regression head
=====================  =================================================================================

on one of the data sets (``data.dataset``): ``bios`` — the 280-row Bias-in-Bios sample with a random split (tests);
``bios_split`` — Bias-in-Bios with its published split (``data.source: local``: Ravfogel et al.'s 255,710 / 39,369 /
98,344 as CSCL, or ``hub``: LabHC/bias_in_bios); ``jigsaw`` — Civil Comments, WILDS split, race (CSCL); ``moji`` —
DeepMoji features, fairlib's split (Shen et al.); ``hatespeech`` — Huang et al. 2020, token ids (``data.language``,
``data.attribute``: one protected attribute, or a list of them — ``[gender, age]`` — for intersectional groups,
every metric then over the cross-product groups). ``data.root`` points a loader at a folder (default: under ``FAIRMT_DATA``); see
:mod:`fairmt.data.fair_datasets`. With one encoder (``model.type``):

* ``frozen_embedder``: a sentence encoder (``model.name_or_path``; ``minilm`` = the packaged all-MiniLM-L6-v2) embeds
  every text once (``model.pooling``: ``cls`` — the raw ``[CLS]`` state, Ravfogel et al.'s and Shen et al.'s BERT
  features — or ``mean`` — the masked mean, L2-normalised unless ``model.normalize: false``; cached under
  ``model.cache_dir``), and a 2-layer MLP encoder (width ``model.hidden_dim``, Shen et al.'s Enc) + head is trained on
  the fixed vectors;
* ``features``: the same MLP on a data set's own fixed features (Moji);
* ``gru_features``: Shen et al.'s hate-speech Embed — a bidirectional GRU (cell ``model.gru_hidden`` = 200, so 400-d)
  is first trained with CE (``model.embed_epochs``, ``model.embed_learning_rate``; the epoch with the lowest dev loss
  kept), then fixed; its representations of every split are the features of the same MLP;
* ``finetune``: :class:`~fairmt.models.encoder_classifier.TransformerClassifier` on ``model.name_or_path``: the pooled
  encoder output ``z`` (``model.pooling``) is the representation, the head ``g`` an MLP of ``model.head_layers``
  layers (2: CSCL's classifier), trained end to end;
* ``gru`` / ``embedding_bag``: token-id encoders for the hate-speech set.

Contrastive terms, the head and leakage@h always see one representation (the head's input). With
``model.type: finetune``, ``data.augment`` gives every training (and dev) row a second view for
``objective_args.views: augment``: ``eda`` (four copies per row, ``data.eda_num_aug``, of which each batch draws one),
``clm_insert`` / ``clm_substitute`` (a masked LM, ``data.clm_model``, rate ``data.clm_rate``) or ``backtranslate``
(``data.backtranslate_model``, ``data.pivot_lang``).

Options: ``training`` holds ``TrainingArguments`` fields shared by every objective (and stage 1 of two-stage ones);
``objective_args`` the fields of the objective's own Config (``gamma``, ``cs_lambda``, ``temperature``, ``views`` for
CSCL; ``fcl_alpha``, ``fcl_beta``, ``fcl_scl_weight``, ``fcl_fcl_weight``, ``fcl_variant``, ``fcl_group_term`` for FCL;
``n_clusters``, ``epsilon``, ``sampling_weight``, ``cluster_refresh_steps`` for sampling; ``adv_lambda``,
``n_adversaries``, ``diff_lambda``, ``adv_conditional``, ``adv_weighting`` for the adversarial baseline); ``stage2``
the training options of the head stage of two-stage objectives (trained on the fixed encoder's features computed
once, ``cache_stage2_features``); ``inlp`` the INLP options; ``metrics`` the reporting conventions (``eo_classes``:
``positive`` or ``all``; ``positive_class``).

Model selection and early stopping use the dev split only, evaluated every epoch: ``selection`` — ``loss`` (lowest
dev CE), ``dto`` (distance of (accuracy, 1 − GAP) to (1, 1)), ``accuracy``, or ``accuracy_then_gap`` (Shen et al.:
the best dev accuracy, then the lowest GAP within ``selection_tolerance``; for these two, never an epoch whose dev
accuracy is below ``selection_accuracy_floor`` × the best dev accuracy, default 0.8: a near-constant model has
GAP ≈ 0 and wins DTO otherwise, and the run warns, once, when the floor changed the choice or when the chosen
model is below it) — with ``patience`` (stop once that many
epochs followed the chosen one: CSCL 3, Shen et al. 5; and, with ``patience_waits_for_dev_loss`` (default true), the
lowest dev loss too — set it false for the papers' rule alone); the first stage of a two-stage objective is selected and
early-stopped on its own dev objective (``stage1_patience``), as the CSCL release does. The test split is scored once,
at the end: ``results.json`` (dev and test :class:`~fairmt.eval.classification.ClassificationResult`, leakage SVMs
trained on the training split as Shen et al., and the metric conventions used) and ``predictions.jsonl``
(``label``, ``pred``, ``score`` — class probabilities, ``group``, ``hidden``; readable by ``fairmt eval
classification``) are written to the run's folder: ``output_dir`` (or ``training.output_dir``; default
``outputs/<recipe name>``), refused when it holds an earlier run unless ``--overwrite``. ``resolve_config`` resolves
every value, including each stage's training Config (``stages``), which ``fairmt train RECIPE --dry-run`` prints
without loading a model. ``main`` returns the results dict.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.recipes._output import prepare_output_dir

TWO_STAGE = {"cscl_two_stage": "cscl_pretrain", "fcl_two_stage": "fcl_pretrain"}

def resolve_config(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe resolved by its schema (:func:`fairmt.recipes._schema.resolve_recipe`: every default, the
    ones that depend on other keys, the run folder; an unknown value names its key and the allowed ones), as a dict,
    plus each stage's training Config (``stages``: every field of the Config the Trainer will get, e.g. ``views``,
    ``temperature`` and ``normalize`` as resolved). The runner reads nothing else."""
    from fairmt.recipes._schema import resolve_recipe

    if config.get("method", "classification") != "classification":
        raise FairmtError(f"recipe method must be 'classification' for this entry point, got {config.get('method')!r}")
    resolved = resolve_recipe({**{k: v for k, v in config.items() if k != "stages"}, "method": "classification"})
    cfg = resolved.model_dump(exclude={"method", "recipe_path", "overwrite"})
    cfg["stages"] = {name: _config_fields(cls(**kw)) for name, (cls, kw) in _stage_configs(cfg).items()}
    return cfg


def defaults() -> dict[str, Any]:
    """The resolved recipe of an empty classification recipe (every default the schema holds)."""
    return {k: v for k, v in resolve_config({"method": "classification"}).items() if k not in ("stages", "output_dir")}


def _config_fields(args) -> dict[str, Any]:
    return json.loads(args.to_json_string())


# ---------------------------------------------------------------------------------------------- data + models
def load_data(dcfg: dict[str, Any]):
    """The :class:`~fairmt.data.classification.ClassificationData` the recipe names (``data.label_subset``: only those
    task labels)."""
    data = _load_data(dcfg)
    return keep_labels(data, dcfg["label_subset"]) if dcfg.get("label_subset") else data


def _load_data(dcfg: dict[str, Any]):
    from fairmt.data import fair_datasets as fd
    from fairmt.data.classification import read_bios, read_hatespeech

    name, max_rows = dcfg["dataset"], dcfg["max_rows"]
    if name == "bios_split":
        return fd.read_bios_split(dcfg["root"], dcfg["source"], max_rows)
    if name == "jigsaw":
        return fd.read_jigsaw(dcfg["root"], max_rows=max_rows)
    if name == "bios":
        data = read_bios(dcfg.get("files"), tuple(dcfg["fractions"]), dcfg["split_seed"])
    elif name == "moji":
        data = fd.read_moji(dcfg["root"], tuple(dcfg["moji_split_sizes"]), dcfg["moji_n_train"])
    else:
        data = read_hatespeech(dcfg["language"], dcfg["attribute"], dcfg["root"])
    if max_rows:  # the first rows of each split, as the Bias-in-Bios and Jigsaw loaders do (quick runs)
        data.splits = {k: split.subset(list(range(min(max_rows, len(split.labels)))))
                       for k, split in data.splits.items()}
    return data


def keep_labels(data, names: list[str]):
    """The rows of ``data`` whose task label is one of ``names``, labels re-indexed in that order (``data.label_subset``:
    Shen et al.'s Table 2 trains a binary nurse-vs-surgeon classifier on those two professions of Bias-in-Bios)."""
    unknown = [n for n in names if n not in data.label_names]
    if unknown or len(set(names)) != len(names):
        raise FairmtError(f"data.label_subset {names}: " + (f"{unknown} not among the data set's labels "
                          f"({', '.join(data.label_names)})" if unknown else "a label is named twice"))
    new = {data.label_names.index(n): i for i, n in enumerate(names)}
    for name, split in data.splits.items():
        kept = split.subset([i for i, y in enumerate(split.labels) if y in new])
        kept.labels = [new[y] for y in kept.labels]
        if not kept.labels:
            raise FairmtError(f"data.label_subset {names} leaves no row in the {name} split")
        data.splits[name] = kept
    data.label_names = list(names)
    data.notes = [*data.notes, f"task labels kept: {', '.join(names)} (data.label_subset), re-indexed 0.."
                               f"{len(names) - 1}"]
    return data


def _model_path(name: str) -> str:
    from fairmt.hub import require_model, resolve_model_ref

    return require_model(resolve_model_ref(name), "encoder")


def embed_texts(texts: list[str], name_or_path: str, max_length: int = 128, batch_size: int = 32,
                cache_dir: str | None = None, pooling: str = "mean", normalize: bool = True) -> np.ndarray:
    """Fixed sentence embeddings of a frozen encoder, cached on disk by content: ``mean`` — the masked mean of the
    last hidden state (the all-MiniLM-L6-v2 recipe), ``cls`` — the ``[CLS]`` state (the BERT features of Ravfogel et
    al. and Shen et al.); L2-normalised when ``normalize``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from fairmt.models.pooling import pool

    path = _model_path(name_or_path)
    key = hashlib.sha256(json.dumps([path, max_length, pooling, normalize, texts]).encode()).hexdigest()[:16]
    cache = Path(cache_dir) / f"emb-{key}.npy" if cache_dir else None
    if cache is not None and cache.exists():
        return load_embedding_cache(cache, len(texts))
    from fairmt.hub import loading

    with loading(path, "encoder"):
        tok = AutoTokenizer.from_pretrained(path)
        enc = AutoModel.from_pretrained(path).eval()
    out = []
    with torch.no_grad():
        for s in range(0, len(texts), batch_size):
            b = tok(texts[s : s + batch_size], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            h = pool(enc(**b).last_hidden_state, b["attention_mask"], pooling)
            out.append((torch.nn.functional.normalize(h, dim=-1) if normalize else h).numpy())
    X = np.concatenate(out).astype(np.float32)
    if cache is not None:  # through a temporary file and a rename: two runs sharing the cache never tear it
        cache.parent.mkdir(parents=True, exist_ok=True)
        from fairmt.outputs import writing

        with writing(cache, what="the embedding cache", binary=True) as fh:
            np.save(fh, X)
    return X


def load_embedding_cache(cache: Path, n: int) -> np.ndarray:
    """A cached embedding matrix of ``n`` rows; a damaged file is named, with what to do."""
    try:
        X = np.load(cache, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise FairmtError(f"{cache}: damaged embedding cache ({' '.join(str(err).split())[:160]}); delete it and run "
                          "again (the embeddings are computed again)") from None
    if X.ndim != 2 or X.shape[0] != n or not np.isfinite(X).all():
        raise FairmtError(f"{cache}: damaged embedding cache (shape {X.shape}{', non-finite values' if X.ndim == 2 and X.shape[0] == n else ''}, "
                          f"expected {n} finite rows); delete it and run again")
    return X


def _columns(split, group_column: str = "group") -> dict[str, Any]:
    cols: dict[str, Any] = {"labels": list(split.labels), group_column: list(split.groups)}
    if split.texts is not None:
        cols["text"] = list(split.texts)
    if split.input_ids is not None:
        cols["input_ids"] = list(split.input_ids)
    if split.features is not None:
        cols["features"] = np.asarray(split.features, dtype=np.float32)
    return cols


def build_datasets(cfg: dict[str, Any], data, out: str | None = None) -> tuple[dict[str, Any], Any, Any]:
    """``datasets.Dataset`` per split, the collator and a factory building a fresh model (``out``: where the
    ``gru_features`` embedder is trained)."""
    from datasets import Dataset

    from fairmt.data.classification import ClassificationCollator, vocab_size, with_array_features
    from fairmt.models import text_classifiers as tc

    m = cfg["model"]
    k = data.num_labels
    names = [str(n) for n in data.label_names]
    cols = {name: _columns(split) for name, split in data.splits.items()}
    collator = ClassificationCollator(max_length=m["max_length"], seed=cfg["seed"])
    has_features = all(split.features is not None for split in data.splits.values())
    if m["type"] == "gru_features":
        if data.splits["train"].input_ids is None:
            raise FairmtError("model.type gru_features needs token ids (data.dataset: hatespeech)")
        feats = _gru_features(cfg, data, {n: Dataset.from_dict(c) for n, c in cols.items()}, collator,
                              out or cfg["output_dir"])
        for name in cols:
            cols[name].pop("input_ids", None)
            cols[name]["features"] = feats[name]
    if m["type"] in ("frozen_embedder", "features", "gru_features"):
        if m["type"] == "features" and not has_features:
            raise FairmtError("model.type features needs a data set with fixed features (data.dataset: moji); "
                              "embed texts with model.type frozen_embedder")
        if m["type"] == "frozen_embedder":
            if has_features:
                raise FairmtError(f"data.dataset {cfg['data']['dataset']} holds fixed features already: use "
                                  "model.type features")
            if any(split.texts is None for split in data.splits.values()):
                raise FairmtError("model.type frozen_embedder needs a text data set (bios, bios_split, jigsaw)")
            # embed the sorted set of all texts once: the cache key does not depend on the split
            unique = sorted({t for split in data.splits.values() for t in split.texts})
            X = embed_texts(unique, m["name_or_path"], m["max_length"], m["embed_batch_size"], m["cache_dir"],
                            m["pooling"], m["normalize"])
            row_of = {t: i for i, t in enumerate(unique)}
            for name, split in data.splits.items():
                cols[name].pop("text", None)
                cols[name]["features"] = X[[row_of[t] for t in split.texts]]
        dim = int(cols["train"]["features"].shape[1])

        def factory():
            return tc.MLPClassifier(dim, k, hidden_dim=m["hidden_dim"], num_layers=m["num_layers"], dropout=m["dropout"],
                                    labels=names, head_layers=m["head_layers"])

    elif m["type"] == "finetune":
        from transformers import AutoTokenizer

        from fairmt.models.encoder_classifier import TransformerClassifier

        if any(split.texts is None for split in data.splits.values()):
            raise FairmtError("model.type finetune needs a text data set (bios, bios_split, jigsaw)")
        for name in ("train", "dev"):
            add_views(cfg, data.splits[name].texts, cols[name])
        path = _model_path(m["name_or_path"])
        collator = ClassificationCollator(AutoTokenizer.from_pretrained(path), max_length=m["max_length"],
                                          seed=cfg["seed"])

        def factory():
            return TransformerClassifier.from_encoder(path, k, pooling=m["pooling"], head_layers=m["head_layers"],
                                                      head_dropout=m["dropout"], labels=names)

    else:
        if data.splits["train"].input_ids is None:
            raise FairmtError(f"model.type {m['type']} needs token ids (data.dataset: hatespeech)")
        vs = vocab_size(data)

        def factory():
            cls = tc.GRUClassifier if m["type"] == "gru" else tc.EmbeddingBagClassifier
            return cls(vs, k, embed_dim=m["embed_dim"], hidden_dim=m["hidden_dim"], dropout=m["dropout"], labels=names)

    if cfg["data"].get("augment") and m["type"] != "finetune":
        raise FairmtError("data.augment makes second text views: it needs model.type finetune")
    # fixed features are read as numpy arrays (a batch is one slice, not B × d Python floats)
    return {name: with_array_features(Dataset.from_dict(c)) for name, c in cols.items()}, collator, factory


def _gru_features(cfg, data, datasets, collator, out: str) -> dict[str, np.ndarray]:
    """Shen et al.'s hate-speech Embed: a CE-trained bidirectional GRU (selected on dev loss), then fixed; its
    representations (the max-pooled 2·cell states) of every split."""
    import torch

    from fairmt.data.classification import vocab_size
    from fairmt.models.text_classifiers import GRUClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    m = cfg["model"]
    torch.manual_seed(cfg["seed"])
    gru = GRUClassifier(vocab_size(data), data.num_labels, embed_dim=m["embed_dim"], hidden_dim=m["gru_hidden"],
                        dropout=m["dropout"])
    train = {**_batch_options(cfg), "num_train_epochs": m["embed_epochs"], "learning_rate": m["embed_learning_rate"]}
    kwargs = _base_args(cfg, os.path.join(out, "embedder"), train, {"objective": "ce"}, FairContrastiveConfig)
    _fit(cfg, FairContrastiveTrainer, FairContrastiveConfig, kwargs, gru, datasets["train"], datasets["dev"], collator,
         criterion="loss", patience=None, compute_metrics=None)
    return _split_features(gru, datasets, collator, int(kwargs.get("per_device_eval_batch_size", 128)))


def add_views(cfg: dict[str, Any], texts: list[str], cols: dict[str, Any]) -> None:
    """Give a split's rows their augmented views (``data.augment``): EDA's ``text_views`` (``eda_num_aug`` copies,
    one drawn per batch), or one ``text_view`` (CLM insert / substitute, back-translation)."""
    d = cfg["data"]
    kind = d.get("augment")
    if not kind:
        return
    if kind == "eda":
        from fairmt.data.augment.eda import EDA

        eda = EDA(alpha=d["eda_alpha"], seed=cfg["seed"], require_all=True)  # all four operations, or stop
        cols["text_views"] = eda.copies(texts, d["eda_num_aug"])
        return
    if kind in ("clm_insert", "clm_substitute"):
        from fairmt.data.augment.clm import ContextualAugmenter

        aug = ContextualAugmenter(_model_path(d["clm_model"]), action=kind.split("_", 1)[1], rate=d["clm_rate"],
                                  seed=cfg["seed"])
        views = aug(texts)
    else:
        from fairmt.data.augment.backtranslate import backtranslate
        from fairmt.models import load_translation_model

        if not d.get("backtranslate_model"):
            raise FairmtError("data.augment=backtranslate needs data.backtranslate_model (a seq2seq MT model path)")
        mt = load_translation_model(d["backtranslate_model"], src_lang="en", tgt_lang=d["pivot_lang"])
        views = backtranslate(texts, mt, pivot_lang=d["pivot_lang"], source_lang="en")
    cols["text_view"] = list(views)


# ---------------------------------------------------------------------------------------------- training
def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _batch_options(cfg: dict[str, Any]) -> dict[str, Any]:
    """The recipe's batch sizes and logging interval, which a later stage (or the GRU embedder) shares."""
    return {k: v for k, v in cfg["training"].items()
            if k in ("per_device_train_batch_size", "per_device_eval_batch_size", "logging_steps")}


def _base_args(cfg: dict[str, Any], out: str, train: dict[str, Any], extra: dict[str, Any], config_cls) -> dict:
    names = {f.name for f in fields(config_cls)}
    merged = {**train, **extra}
    unknown = sorted(set(merged) - names)
    if unknown:
        raise FairmtError(f"unknown training option(s) {unknown} for {config_cls.__name__}")
    base = dict(
        output_dir=out, seed=cfg["seed"], report_to=[], use_cpu=not _cuda(), disable_tqdm=True,
        eval_strategy="epoch", save_strategy="epoch", save_only_model=True, load_best_model_at_end=False,
        save_total_limit=None,
    )
    base.update(merged)
    return base


def _stage_configs(cfg: dict[str, Any]) -> dict[str, tuple[type, dict[str, Any]]]:
    """``{stage: (Config class, keyword arguments)}`` of every training stage the recipe runs."""
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig

    obj, out = cfg["objective"], cfg["output_dir"]
    oargs = dict(cfg.get("objective_args") or {})
    if obj in TWO_STAGE:
        stage2 = {**_batch_options(cfg), **cfg["stage2"]}
        given = cfg["training"].get("resume_from_checkpoint")
        if given and str(given).lower() != "true" and Path(str(given)).parent.resolve() != Path(out, "stage1").resolve():
            raise FairmtError(f"training.resume_from_checkpoint={given}: a two-stage objective ({obj}) resumes its "
                              f"first stage only, from a checkpoint in {out}/stage1 (or give true for its last one); "
                              "the second stage is short and starts again")
        return {
            "stage1": (FairContrastiveConfig, _base_args(cfg, out + "/stage1", cfg["training"],
                                                         {**oargs, "objective": TWO_STAGE[obj]}, FairContrastiveConfig)),
            "stage2": (FairContrastiveConfig, _base_args(cfg, out, stage2, {"objective": "ce"}, FairContrastiveConfig)),
        }
    if obj == "sampling":
        from fairmt.trainers.sampling import FairnessSamplingConfig

        extra = {**oargs, "objective": "sampling", "pooling": "cls" if cfg["model"]["pooling"] == "cls" else "mean"}
        return {"train": (FairnessSamplingConfig, _base_args(cfg, out, cfg["training"], extra, FairnessSamplingConfig))}
    if obj == "adversarial":
        from fairmt.trainers.adversarial import AdversarialConfig

        return {"train": (AdversarialConfig, _base_args(cfg, out, cfg["training"], oargs, AdversarialConfig))}
    extra = {**oargs, "objective": "ce" if obj == "inlp" else obj}
    stages = {"train": (FairContrastiveConfig, _base_args(cfg, out, cfg["training"], extra, FairContrastiveConfig))}
    if obj == "inlp" and cfg["inlp"]["head"] == "finetune":  # the model's head fine-tuned on the guarded features
        head = {**_batch_options(cfg), **cfg["stage2"]}
        stages["stage2"] = (FairContrastiveConfig, _base_args(cfg, out + "/inlp_head", head, {"objective": "ce"},
                                                              FairContrastiveConfig))
    return stages


def _fit(cfg, trainer_cls, config_cls, kwargs, model, train_ds, dev_ds, collator, *, criterion, patience,
         compute_metrics):
    """One Trainer run with dev evaluation every epoch, the selection rule's early stopping, and the chosen
    checkpoint loaded at the end. Returns ``(trainer, selection callback)``."""
    from fairmt.eval.selection import FairnessSelectionCallback

    last = criterion == "last"  # the final epoch, as the CSCL release reports (dev still evaluated and logged)
    callback = FairnessSelectionCallback("loss" if last else criterion, normalise=False, tolerance=cfg["selection_tolerance"],
                                         patience=patience, prune=True, copy_best=False, percent=True,
                                         accuracy_floor=cfg["selection_accuracy_floor"],
                                         patience_waits_for_loss=cfg["patience_waits_for_dev_loss"],
                                         warn=False)  # the run's summary prints the note, once
    trainer = trainer_cls(model=model, args=config_cls(**kwargs), train_dataset=train_ds, eval_dataset=dev_ds,
                          data_collator=collator, compute_metrics=compute_metrics, callbacks=[callback])
    if compute_metrics is not None:  # the starting model on dev: the "before" of the run's before → after table
        start = _measure_without_rng(lambda: trainer.predict(dev_ds, metric_key_prefix="start").metrics)
        callback.start_dev = {k: round(float(start[f"start_{k}"]), 4) for k in ("accuracy", "gap", "delta_eo")
                              if start.get(f"start_{k}") is not None}
    trainer.train()
    callback.keep_last = last
    if callback.best_checkpoint and not last:
        trainer._load_from_checkpoint(callback.best_checkpoint)
    return trainer, callback


def _measure_without_rng(measure):
    """``measure()`` (a prediction, which no selection callback sees) with every random generator put back after
    it: measuring the starting model leaves the run's training exactly as without the measurement."""
    import random

    import numpy as np
    import torch

    states = (random.getstate(), np.random.get_state(), torch.get_rng_state(),
              torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
    try:
        return measure()
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if states[3] is not None:
            torch.cuda.set_rng_state_all(states[3])


def _selection_info(cb, steps_per_epoch: int | None = None) -> dict[str, Any]:
    """The choice made on dev and why: the rule, the chosen evaluation (step, epoch, dev numbers in percent), the
    accuracy floor and its note (see :func:`fairmt.eval.selection.degenerate_choice`)."""
    last = getattr(cb, "keep_last", False)
    best = cb.records[-1] if last and cb.records else cb.best
    info = {"criterion": "last" if last else cb.criterion, "best_step": None if best is None else best.step,
            "best_checkpoint": None if last else cb.best_checkpoint, "evaluations": len(cb.records),
            "stopped_early_at_step": cb.stopped_early_at, "patience": cb.patience,
            "accuracy_floor": cb.accuracy_floor, "note": cb.note}
    if best is not None:
        if steps_per_epoch:
            info["best_epoch"] = round(best.step / steps_per_epoch)
        info["best_dev"] = {k: round(100 * v, 4) for k in ("accuracy", "gap", "dto")
                            if (v := getattr(best, k)) is not None}
        if best.loss is not None:
            info["best_dev"]["loss"] = best.loss
    if getattr(cb, "start_dev", None):  # the model before this training (pretrained encoder, untrained head)
        info["start_dev"] = cb.start_dev
    if cb.records:  # the first evaluation of the run (kept: early stopping, the learning curve)
        first = cb.records[0]
        info["first_dev"] = {k: round(100 * v, 4) for k in ("accuracy", "gap", "delta_eo")
                             if (v := getattr(first, k)) is not None}
        if steps_per_epoch:
            info["first_dev"]["epoch"] = round(first.step / steps_per_epoch)
    return info


def before_after(results: dict[str, Any]) -> list[str]:
    """The run's before → after table (:func:`fairmt.eval.report.before_after_lines`, every recipe's printer) on
    the dev set: INLP — the CE encoder → the model after INLP; the others — the starting model (``start_dev``: the
    pretrained encoder, or a two-stage run's stage-1 encoder, with its untrained head, scored before training) → the
    model the run reports (the checkpoint selected); never a first-epoch model. ΔEO per class
    (:func:`eo_per_class`). A results file without ``start_dev`` (an older fairmt) gives no table."""
    from fairmt.eval.report import before_after_lines

    info = results.get("info") or {}
    inlp = info.get("inlp") or {}
    if "final_dev" in inlp:
        before, after, names = inlp.get("encoder_dev") or {}, inlp["final_dev"], ("the CE encoder", "after INLP")
    else:
        sel = info.get("selection") or {}
        before, after = sel.get("start_dev") or {}, results.get("dev") or {}
        names = ("starting model (untrained head)", "the model reported")
    k = eo_classes_summed(results)
    rows = [("accuracy ↑", before.get("accuracy"), after.get("accuracy"), ".2f", "higher"),
            ("GAP ↓", before.get("gap"), after.get("gap"), ".2f", "lower"),
            ("ΔEO/class ↓" if k > 1 else "ΔEO ↓", _per(before.get("delta_eo"), k), _per(after.get("delta_eo"), k),
             ".2f", "lower")]
    return before_after_lines(f"what {results.get('objective')} changed (dev, %)", rows, *names)


def _per(v: Any, k: int) -> Any:
    return v / k if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def eo_classes_summed(results: dict[str, Any]) -> int:
    """How many classes a results file's ΔEO is summed over: the number of labels under the ``all`` convention (ΔEO
    is then shown divided by it, a mean per class a reader can place; 28 Bios classes summed read "680 %"), else 1."""
    dev = results.get("dev") or results.get("test") or {}
    if dev.get("eo_classes") != "all":
        return 1
    return max(1, len(results.get("labels") or []) or int((results.get("test_full") or {}).get("n_classes") or 1))


def _steps_per_epoch(trainer) -> int | None:
    state = trainer.state
    return round(state.global_step / state.epoch) if state.epoch else None


def _predict(trainer, dataset) -> tuple[np.ndarray, np.ndarray]:
    pred = trainer.predict(dataset, metric_key_prefix="predict")
    logits, hidden = pred.predictions
    return np.asarray(logits), np.asarray(hidden)


def _train(cfg, data, datasets, collator, factory, out: str):
    """Train per the objective; returns ``{split: (logits, hidden)}`` for train/dev/test and extra info."""
    import torch

    from fairmt.eval.selection import fairness_compute_metrics
    from fairmt.trainers.fair_contrastive import FairContrastiveTrainer, freeze_encoder

    obj = cfg["objective"]
    metrics = fairness_compute_metrics(num_classes=data.num_labels, eo_classes=cfg["metrics"]["eo_classes"],
                                       positive_class=cfg["metrics"]["positive_class"], percent=True)
    torch.manual_seed(cfg["seed"])
    model = factory()
    stages = _stage_configs(cfg)
    info: dict[str, Any] = {}
    trainer_cls: Any = FairContrastiveTrainer
    if obj == "sampling":
        from fairmt.trainers.sampling import FairnessSamplingTrainer

        trainer_cls = FairnessSamplingTrainer
    elif obj == "adversarial":
        from fairmt.trainers.adversarial import AdversarialTrainer

        trainer_cls = AdversarialTrainer
        stages["train"][1].setdefault("num_groups", len(data.group_names))
    train_fit = balance_train(cfg, datasets["train"], info)  # the rows the Trainers see; predictions use all
    if obj in TWO_STAGE:
        cls1, kw1 = stages["stage1"]
        s1, cb1 = _fit(cfg, FairContrastiveTrainer, cls1, kw1, model, train_fit, datasets["dev"], collator,
                       criterion="loss", patience=cfg["stage1_patience"], compute_metrics=None)
        info["stage1"] = {"selection": _selection_info(cb1), "log": [h for h in s1.state.log_history if "loss" in h][-1:]}
        freeze_encoder(model)
        cls2, kw2 = stages["stage2"]
        if cfg["cache_stage2_features"] and hasattr(model, "head_forward"):
            from fairmt.data.classification import ClassificationCollator
            from fairmt.trainers.fair_contrastive import HeadOnFeatures

            datasets = _cached_feature_datasets(model, datasets, collator, kw2)
            trainer, cb = _fit(cfg, FairContrastiveTrainer, cls2, kw2, HeadOnFeatures(model),
                               balance_train(cfg, datasets["train"]),
                               datasets["dev"], ClassificationCollator(), criterion=cfg["selection"],
                               patience=cfg["patience"], compute_metrics=metrics)
            info["stage2_features"] = "cached (fixed encoder in eval mode, computed once)"
        else:
            trainer, cb = _fit(cfg, FairContrastiveTrainer, cls2, kw2, model, train_fit, datasets["dev"],
                               collator, criterion=cfg["selection"], patience=cfg["patience"], compute_metrics=metrics)
            info["stage2_features"] = "recomputed each step (frozen modules in eval mode)"
    else:
        cls, kw = stages["train"]
        trainer, cb = _fit(cfg, trainer_cls, cls, kw, model, train_fit, datasets["dev"], collator,
                           criterion=cfg["selection"], patience=cfg["patience"], compute_metrics=metrics)
    info["selection"] = _selection_info(cb, _steps_per_epoch(trainer))
    info["best_checkpoint"] = info["selection"]["best_checkpoint"]
    info["train_log"] = [h for h in trainer.state.log_history if "loss" in h][-1:]
    info["model_dir"] = _save_final(trainer, collator, os.path.join(out, "model"), model)
    outputs = {name: _predict(trainer, datasets[name]) for name in ("train", "dev", "test")}
    if obj == "inlp":
        outputs, inlp_info = _apply_inlp(cfg, data, outputs)
        info["inlp"] = inlp_info
        if cfg["inlp"]["head"] == "finetune":
            outputs, head_cb = _inlp_finetune_head(cfg, model, stages["stage2"], outputs, datasets, metrics)
            info["inlp"]["head"] = "the model's head fine-tuned on the guarded representations (stage2 options)"
            info["inlp"]["head_selection"] = _selection_info(head_cb)
    return outputs, info


def balance_train(cfg: dict[str, Any], ds, info: dict[str, Any] | None = None):
    """The training set as the recipe's ``balance`` asks (:mod:`fairmt.data.balanced`): an ``instance_weight``
    column (``reweight``) or the resampled / downsampled rows (seeded by ``seed``); unchanged without ``balance``.
    ``info`` receives the sizes, the (label, group) counts before and after, and the weight of each cell."""
    from fairmt.data.balanced import balanced_indices, balanced_weights, cell_counts

    method, target = cfg["balance"]["method"], cfg["balance"]["target"]
    if method is None:
        return ds
    labels, groups = ds["labels"], ds["group"]
    weights = None
    if method == "reweight":
        weights = balanced_weights(labels, groups, target)
        out = ds.add_column("instance_weight", weights.tolist())
    else:
        out = ds.select(balanced_indices(labels, groups, target, method, cfg["seed"]).tolist())
    if info is not None:
        def counts(y, g):
            return {f"{a}|{b}": c for (a, b), c in sorted(cell_counts(y, g, "joint").items(), key=str)}

        info["balance"] = {"method": method, "target": target, "n_before": len(ds), "n_after": len(out),
                           "cells": "label|group", "counts_before": counts(labels, groups),
                           "counts_after": counts(out["labels"], out["group"])}
        if weights is not None:
            info["balance"]["weights"] = {f"{a}|{b}": float(w) for a, b, w in zip(labels, groups, weights)}
    return out


def _inlp_finetune_head(cfg, model, stage, outputs, datasets, metrics):
    """Chi et al.'s INLP baseline: the model's own classifier head, fine-tuned (CE, the ``stage2`` options, selected
    by ``selection``) on the guarded representations of the fixed encoder; returns its outputs on every split and
    its selection callback."""
    from datasets import Dataset

    from fairmt.data.classification import ClassificationCollator
    from fairmt.trainers.fair_contrastive import FairContrastiveTrainer, HeadOnFeatures

    feats = {name: Dataset.from_dict({"features": np.asarray(outputs[name][1], dtype=np.float32),
                                      "labels": datasets[name]["labels"], "group": datasets[name]["group"]})
             for name in ("train", "dev", "test")}
    cls, kwargs = stage
    trainer, cb = _fit(cfg, FairContrastiveTrainer, cls, kwargs, HeadOnFeatures(model), feats["train"], feats["dev"],
                      ClassificationCollator(), criterion=cfg["selection"], patience=cfg["patience"],
                      compute_metrics=metrics)
    return {name: _predict(trainer, feats[name]) for name in ("train", "dev", "test")}, cb


def _split_features(model, datasets, collator, batch_size: int) -> dict[str, np.ndarray]:
    """A fixed encoder's representations of every split, computed once in eval mode (``encoder_features``)."""
    from fairmt.trainers.fair_contrastive import encoder_features

    device = "cuda" if _cuda() else "cpu"
    model.to(device)
    out = {}
    for name, ds in datasets.items():
        batches = (collator([ds[j] for j in range(i, min(i + batch_size, len(ds)))])
                   for i in range(0, len(ds), batch_size))
        out[name] = encoder_features(model, batches, device=device)
    return out


def _cached_feature_datasets(model, datasets, collator, kwargs) -> dict[str, Any]:
    """The fixed encoder's representations of every split as feature data sets (the second stage's input)."""
    from datasets import Dataset

    from fairmt.data.classification import with_array_features

    feats = _split_features(model, datasets, collator, int(kwargs.get("per_device_eval_batch_size", 128)))
    return {name: with_array_features(Dataset.from_dict({"features": feats[name], "labels": ds["labels"],
                                                         "group": ds["group"]}))
            for name, ds in datasets.items()}


def _save_final(trainer, collator, path: str, model=None) -> str | None:
    """The selected model with its config (and tokenizer), reloadable with ``from_pretrained`` and pushable: a
    transformers model, or one of fairmt's classifiers (``PyTorchModelHubMixin``). The Trainer alone saves the
    latter as bare weights. ``model``: the full model when the Trainer trained its head alone."""
    if not trainer.is_world_process_zero():
        return None
    model = model if model is not None else trainer.accelerator.unwrap_model(trainer.model)
    from fairmt.outputs import save_folder

    def save(folder: str) -> None:
        model.save_pretrained(folder)
        if getattr(collator, "tokenizer", None) is not None:
            collator.tokenizer.save_pretrained(folder)

    save_folder(path, save, what="the trained model")  # whole, or one line naming the folder and the free space
    return path


def _apply_inlp(cfg, data, outputs):
    """INLP on the CE encoder's frozen representations, then a logistic-regression head on the guarded ones (with
    ``inlp.head: finetune`` the caller replaces that head's logits by the fine-tuned model head's)."""
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


def _probs(logits: np.ndarray) -> np.ndarray:
    z = np.nan_to_num(np.asarray(logits, dtype=np.float64), neginf=-1e9)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _score(cfg, data, outputs, split: str):
    from fairmt.eval.classification import classification_metrics

    s, t = data.splits[split], data.splits["train"]
    logits, hidden = outputs[split]
    tlogits, thidden = outputs["train"]
    return classification_metrics(  # intersectional groups: one column per attribute (the cross-product groups)
        s.labels, logits.argmax(-1).tolist(), data.group_columns(split), hidden=hidden,
        logits=np.nan_to_num(logits, neginf=-1e9), train_hidden=thidden,
        train_logits=np.nan_to_num(tlogits, neginf=-1e9), train_groups=data.group_columns("train"),
        num_classes=data.num_labels, seed=cfg["seed"], scores=_probs(logits),
        eo_classes=cfg["metrics"]["eo_classes"], positive_class=cfg["metrics"]["positive_class"],
    )


def _conventions(cfg, result, data) -> dict[str, Any]:
    """The metric conventions a results file reports, in words (what a paper comparison needs to know)."""
    from fairmt.eval.classification import TRADEOFF_DEFINITION

    pos = result.positive_class
    f1 = (f"positive-class F1 (positive class {data.label_names[int(pos)] if str(pos).isdigit() else pos}) and "
          "macro-F1") if pos is not None else "macro-F1 and micro-F1 (no positive class: more than two classes)"
    eo = ("ΔEO summed over every class (the CSCL release's convention; 2x the positive-class one for two classes)"
          if result.eo_classes == "all" else "ΔEO of the positive class (the formula CSCL prints)")
    sel = {"loss": "lowest dev CE", "dto": "distance of dev (accuracy, 1-GAP) to (1, 1)", "accuracy": "best dev "
           "accuracy", "accuracy_then_gap": f"best dev accuracy, then the lowest dev GAP within "
           f"{cfg['selection_tolerance']:g} of it (Shen et al.)",
           "last": "the final epoch (the CSCL release)"}[cfg["selection"]]
    if cfg["patience"]:
        sel += f"; early stopping after {cfg['patience']} epochs without a new choice" + (
            " and without a lower dev loss" if cfg["patience_waits_for_dev_loss"] else "")
    if cfg["selection"] in ("dto", "accuracy_then_gap") and cfg["selection_accuracy_floor"]:
        sel += f"; never an epoch below {cfg['selection_accuracy_floor']:g} × the best dev accuracy"
    return {"f1": f1, "delta_eo": eo, "auc": "roc_auc_score on softmax probabilities"
            + (" (one-vs-rest, macro)" if pos is None else " of the positive class"),
            "gap": "sqrt(mean_y GAP_y^2), GAP_y = sum_a |TPR_a,y - TPR_y| (Shen et al. Eq. 4, fairlib)",
            "tradeoff": f"{TRADEOFF_DEFINITION}: a score relative to the compared models, so not in one run's "
                        "results — `fairmt sweep`'s report gives it for every setting (dev.tradeoff, test.tradeoff)",
            "selection": sel, "signature": result.signature}


def _dev_loss(logits: np.ndarray, labels) -> float:
    """Mean cross-entropy of the final model's dev predictions (what ``dev.loss`` reports: the model as scored,
    after INLP where the objective applies it)."""
    p = _probs(logits)
    y = np.asarray(labels, dtype=int)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-12, None))))


def _selection_line(info: dict[str, Any], warnings: list[str] = ()) -> str:
    """Which checkpoint the run kept and why, in one line (dev numbers in percent)."""
    sel = info.get("selection") or {}
    if sel.get("best_step") is None:
        return "  selected: the last model (no dev evaluation)"
    dev = sel.get("best_dev") or {}
    nums = ", ".join(f"{k if k == 'accuracy' else 'GAP'} {v:.2f}" for k, v in dev.items() if k in ("accuracy", "gap"))
    rule = {"dto": "the smallest DTO (distance of dev (accuracy, 1 − GAP) to (1, 1))",
            "accuracy_then_gap": "the best dev accuracy, then the lowest GAP", "accuracy": "the best dev accuracy",
            "loss": "the lowest dev loss", "last": "the final epoch (no selection)"}.get(sel["criterion"], sel["criterion"])
    epoch = f"epoch {sel['best_epoch']} " if sel.get("best_epoch") is not None else ""
    floor = (f", dev accuracy ≥ {sel['accuracy_floor']:g} × the best" if sel.get("accuracy_floor")
             and sel["criterion"] in ("dto", "accuracy_then_gap") else "")
    inlp_info = info.get("inlp") or {}
    what = "the CE encoder at " if "final_dev" in inlp_info else ""
    line = (f"  selected: {what}{epoch}(step {sel['best_step']}; {sel['evaluations']} dev evaluations) by {rule}{floor}"
            + (f" (dev {nums} %)" if nums else ""))
    if "final_dev" in inlp_info:  # what the run reports: the model after INLP
        fin = inlp_info["final_dev"]
        line += (f"\n  after INLP ({inlp_info.get('n_iterations')} rounds, the model scored): dev accuracy "
                 f"{fin['accuracy']:.2f}, GAP {fin['gap']:.2f} % (majority-class rate "
                 f"{inlp_info['dev_majority_class_rate']:.2f})" + (" — AT CHANCE" if inlp_info.get("at_chance") else ""))
    line += f"\n  warning: {sel['note']}" if sel.get("note") else ""
    return line + "".join(f"\n  warning: {w}" for w in warnings)


def _gap_coverage(result) -> str:
    """How many classes the GAP covers, and why the others are left out (the metrics' own warnings, counted by
    reason): empty when it covers every class."""
    n, covered = result.n_classes, len(result.gap_by_class)
    if covered >= n:
        return ""
    reasons: dict[str, int] = {}
    for w in result.warnings:
        if "left out of GAP" in w and w.startswith("class "):
            why = w.split(" has ", 1)[-1].split(":", 1)[0].replace(" in this split", "")
            reasons[why] = reasons.get(why, 0) + 1
    why = "; ".join(f"{k}: {v}" for k, v in reasons.items()) or "no TPR for two groups"
    return f" over {covered} of {n} classes ({n - covered} left out — {why} in the test split)"


def _inlp_final(cfg, info: dict[str, Any], dev: dict[str, Any], labels) -> list[str]:
    """INLP: record the final (guarded) model's dev numbers beside the CE encoder's the selection chose
    (``info.inlp.encoder_dev`` → ``info.inlp.final_dev``, percent), and flag a final model at chance with the rule
    fairmt flags near-constant models by elsewhere (:func:`fairmt.eval.selection.degenerate_choice`: dev accuracy
    below ``selection_accuracy_floor`` — default ``ACCURACY_FLOOR`` — × the best dev accuracy, here the encoder's).
    Returns the warning, if any (``results.json`` ``warnings``; ``info.inlp.at_chance``)."""
    from fairmt.eval.selection import ACCURACY_FLOOR

    inlp_info = info.setdefault("inlp", {})
    encoder = dict((info.get("selection") or {}).get("best_dev") or {})
    final = {k: dev[k] for k in ("accuracy", "gap") if dev.get(k) is not None}
    y = np.asarray(labels, dtype=int)
    chance = 100.0 * float(np.bincount(y).max()) / max(len(y), 1)
    inlp_info.update(encoder_dev=encoder, final_dev=final, dev_majority_class_rate=chance)
    ratio = cfg.get("selection_accuracy_floor") or ACCURACY_FLOOR
    at_chance = bool(encoder.get("accuracy") and final["accuracy"] < ratio * encoder["accuracy"])
    inlp_info["at_chance"] = at_chance
    if not at_chance:
        return []
    return [f"after {inlp_info.get('n_iterations', '?')} INLP rounds the model's dev accuracy {final['accuracy']:.2f} "
            f"is below {ratio:g} × the CE encoder's {encoder['accuracy']:.2f} (majority-class rate {chance:.2f}): a "
            "model at chance, whose small GAP is no fairness — fewer inlp.n_iterations, or another baseline"]


def _eo_label(t: dict[str, Any], n_classes: int) -> str:
    if t.get("eo_classes") == "all" and n_classes > 2:
        return f"summed over the {n_classes} classes"
    return "all classes" if t.get("eo_classes") == "all" else "positive class"


def _eo_shown(t: dict[str, Any], n_classes: int) -> str:
    """ΔEO as the run's summary line prints it: per class (the sum ÷ K) under the all-classes convention."""
    if t.get("eo_classes") == "all" and n_classes > 1:
        return f"ΔEO/class ↓ {t['delta_eo'] / n_classes:.2f} (the sum over the {n_classes} classes ÷ {n_classes})"
    return f"ΔEO ↓ {t['delta_eo']:.2f} ({_eo_label(t, n_classes)})"


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Run one classification recipe (see the module docstring); returns and writes ``results.json``. Each caveat
    of the metrics is warned about once per run (:func:`fairmt.eval.classification.caveats_once`)."""
    from fairmt.eval.classification import caveats_once

    with caveats_once():
        return _main(config)


def _main(config: dict[str, Any]) -> dict[str, Any]:
    cfg = resolve_config(config)
    out = str(prepare_output_dir(cfg["output_dir"], config))
    data = load_data(cfg["data"])
    datasets, collator, factory = build_datasets(cfg, data, out)
    outputs, info = _train(cfg, data, datasets, collator, factory, out)
    dev = _score(cfg, data, outputs, "dev")
    test = _score(cfg, data, outputs, "test")
    dev_summary = dev.summary(percent=True)  # percent, as every fairmt report and the per-epoch logs
    dev_summary["loss"] = _dev_loss(outputs["dev"][0], data.splits["dev"].labels)
    warnings_out: list[str] = []
    if cfg["objective"] == "inlp":  # the selection chose the CE encoder; the model scored is the one after INLP
        warnings_out += _inlp_final(cfg, info, dev_summary, data.splits["dev"].labels)
    from fairmt.eval.reporting.formats import CLASSIFICATION_RESULTS

    results = {
        "format": CLASSIFICATION_RESULTS,
        "objective": cfg["objective"],
        "dataset": cfg["data"]["dataset"],
        "model": cfg["model"]["type"],
        "seed": cfg["seed"],
        "selection": cfg["selection"] + " (dev set)",
        "metric_conventions": _conventions(cfg, test, data),
        "dev": dev_summary,
        "test": test.summary(percent=True),
        "test_full": test.to_percent_dict(),
        "labels": data.label_names,
        "groups": data.group_names,
        "group_attributes": data.group_attributes,
        "data_notes": data.notes,
        "info": json.loads(json.dumps(info, default=str)),
        "config": cfg,
    }
    if warnings_out:
        results["warnings"] = warnings_out
    from fairmt.outputs import write_json, writing

    if cfg["save_predictions"]:  # written before results.json: a run whose results exist wrote everything
        logits, hidden = outputs["test"]
        probs = _probs(logits)
        s = data.splits["test"]
        # intersectional groups: each attribute's value too (`fairmt eval classification --group-columns a,b`)
        attrs = data.group_columns("test") if data.group_attributes else {}
        with writing(os.path.join(out, "predictions.jsonl"), what="the test predictions") as fh:
            for i in range(len(s)):
                fh.write(json.dumps({"label": s.labels[i], "pred": int(logits[i].argmax()), "group": s.groups[i],
                                     **{a: v[i] for a, v in attrs.items()},
                                     "score": [round(float(v), 6) for v in probs[i]],
                                     "hidden": [round(float(v), 5) for v in hidden[i]]}) + "\n")
    write_json(os.path.join(out, "results.json"), results, what="the run's results")
    t = results["test"]
    f1 = f"F1 ↑ {t['f1']:.2f}" if "f1" in t else f"macro-F1 ↑ {t['macro_f1']:.2f}"
    leak = "".join(f", {name} ↓ {t[k]:.2f}" for k, name in (("leakage_h", "leakage@h"), ("leakage_yhat", "leakage@ŷ"))
                   if t.get(k) is not None)  # Shen et al.'s Table 1 columns
    print(f"fairmt: {cfg['objective']} on {cfg['data']['dataset']} (test): accuracy ↑ {t['accuracy']:.2f}, {f1}, "
          f"GAP ↓ {t['gap']:.2f}{_gap_coverage(test)}, {_eo_shown(t, data.num_labels)}"
          f"{leak} (%)"
          f"\n{_selection_line(results['info'], warnings_out)}"
          f"\n  results: {os.path.join(out, 'results.json')}"
          + (f"\n  model: {info['model_dir']}" if info.get("model_dir") else "")
          + "".join(f"\n{line}" for line in before_after(results)))
    return results
