"""The classification family's data: the data set a recipe names (:mod:`fairmt.data.fair_datasets`, the 280-row
Bias-in-Bios sample, hate speech), its task-label subset, its augmented views, and the ``datasets.Dataset`` per split
with the collator and the model factory of ``model.type`` (:func:`build_datasets`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.recipes.classification.encoders import (
    _model_path,
    _split_features,
    embed_texts,
)
from fairmt.recipes.classification.objectives import _base_args, _batch_options, _fit


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
        data.splits = {
            k: split.subset(list(range(min(max_rows, len(split.labels))))) for k, split in data.splits.items()
        }
    return data


def keep_labels(data, names: list[str]):
    """The rows of ``data`` whose task label is one of ``names``, labels re-indexed in that order (``data.label_subset``:
    Shen et al.'s Table 2 trains a binary nurse-vs-surgeon classifier on those two professions of Bias-in-Bios)."""
    unknown = [n for n in names if n not in data.label_names]
    if unknown or len(set(names)) != len(names):
        raise FairmtError(
            f"data.label_subset {names}: "
            + (
                f"{unknown} not among the data set's labels ({', '.join(data.label_names)})"
                if unknown
                else "a label is named twice"
            )
        )
    new = {data.label_names.index(n): i for i, n in enumerate(names)}
    for name, split in data.splits.items():
        kept = split.subset([i for i, y in enumerate(split.labels) if y in new])
        kept.labels = [new[y] for y in kept.labels]
        if not kept.labels:
            raise FairmtError(f"data.label_subset {names} leaves no row in the {name} split")
        data.splits[name] = kept
    data.label_names = list(names)
    data.notes = [
        *data.notes,
        f"task labels kept: {', '.join(names)} (data.label_subset), re-indexed 0..{len(names) - 1}",
    ]
    return data


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

    from fairmt.data.classification import (
        ClassificationCollator,
        vocab_size,
        with_array_features,
    )
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
        feats = _gru_features(
            cfg, data, {n: Dataset.from_dict(c) for n, c in cols.items()}, collator, out or cfg["output_dir"]
        )
        for name in cols:
            cols[name].pop("input_ids", None)
            cols[name]["features"] = feats[name]
    if m["type"] in ("frozen_embedder", "features", "gru_features"):
        if m["type"] == "features" and not has_features:
            raise FairmtError(
                "model.type features needs a data set with fixed features (data.dataset: moji); "
                "embed texts with model.type frozen_embedder"
            )
        if m["type"] == "frozen_embedder":
            if has_features:
                raise FairmtError(
                    f"data.dataset {cfg['data']['dataset']} holds fixed features already: use model.type features"
                )
            if any(split.texts is None for split in data.splits.values()):
                raise FairmtError("model.type frozen_embedder needs a text data set (bios, bios_split, jigsaw)")
            # embed the sorted set of all texts once: the cache key does not depend on the split
            unique = sorted({t for split in data.splits.values() for t in split.texts})
            X = embed_texts(
                unique,
                m["name_or_path"],
                m["max_length"],
                m["embed_batch_size"],
                m["cache_dir"],
                m["pooling"],
                m["normalize"],
            )
            row_of = {t: i for i, t in enumerate(unique)}
            for name, split in data.splits.items():
                cols[name].pop("text", None)
                cols[name]["features"] = X[[row_of[t] for t in split.texts]]
        dim = int(cols["train"]["features"].shape[1])

        def factory():
            return tc.MLPClassifier(
                dim,
                k,
                hidden_dim=m["hidden_dim"],
                num_layers=m["num_layers"],
                dropout=m["dropout"],
                labels=names,
                head_layers=m["head_layers"],
            )

    elif m["type"] == "finetune":
        from transformers import AutoTokenizer

        from fairmt.models.encoder_classifier import TransformerClassifier

        if any(split.texts is None for split in data.splits.values()):
            raise FairmtError("model.type finetune needs a text data set (bios, bios_split, jigsaw)")
        for name in ("train", "dev"):
            add_views(cfg, data.splits[name].texts, cols[name])
        path = _model_path(m["name_or_path"])
        collator = ClassificationCollator(
            AutoTokenizer.from_pretrained(path), max_length=m["max_length"], seed=cfg["seed"]
        )

        def factory():
            return TransformerClassifier.from_encoder(
                path, k, pooling=m["pooling"], head_layers=m["head_layers"], head_dropout=m["dropout"], labels=names
            )

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
    from fairmt.trainers.fair_contrastive import (
        FairContrastiveConfig,
        FairContrastiveTrainer,
    )

    m = cfg["model"]
    torch.manual_seed(cfg["seed"])
    gru = GRUClassifier(
        vocab_size(data), data.num_labels, embed_dim=m["embed_dim"], hidden_dim=m["gru_hidden"], dropout=m["dropout"]
    )
    train = {**_batch_options(cfg), "num_train_epochs": m["embed_epochs"], "learning_rate": m["embed_learning_rate"]}
    kwargs = _base_args(cfg, os.path.join(out, "embedder"), train, {"objective": "ce"}, FairContrastiveConfig)
    _fit(
        cfg,
        FairContrastiveTrainer,
        FairContrastiveConfig,
        kwargs,
        gru,
        datasets["train"],
        datasets["dev"],
        collator,
        criterion="loss",
        patience=None,
        compute_metrics=None,
    )
    return _split_features(gru, datasets, collator, int(kwargs["per_device_eval_batch_size"]))


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

        aug = ContextualAugmenter(
            _model_path(d["clm_model"]), action=kind.split("_", 1)[1], rate=d["clm_rate"], seed=cfg["seed"]
        )
        views = aug(texts)
    else:
        from fairmt.data.augment.backtranslate import backtranslate
        from fairmt.models import load_translation_model

        if not d.get("backtranslate_model"):
            raise FairmtError("data.augment=backtranslate needs data.backtranslate_model (a seq2seq MT model path)")
        mt = load_translation_model(d["backtranslate_model"], src_lang="en", tgt_lang=d["pivot_lang"])
        # TranslationModel.translate takes its options by name, not as **kwargs as the Translator protocol declares
        views = backtranslate(texts, mt, pivot_lang=d["pivot_lang"], source_lang="en")  # type: ignore[arg-type]
    cols["text_view"] = list(views)
