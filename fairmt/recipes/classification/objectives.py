"""The classification family's objectives: the Trainer Config of each stage an objective runs
(:func:`_stage_configs`), one Trainer run with the dev selection (:func:`_fit`), and the training of every objective
(:func:`_train`: one stage; two stages — the encoder, then the head on it; INLP on the CE encoder), balanced training."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.recipes.classification.encoders import _cached_feature_datasets, _cuda

TWO_STAGE = ("cscl_pretrain", "fcl_pretrain")
"""The two-stage objectives: the first stage trains the encoder with the Config objective of the same name, the second
the head with CE."""


def _batch_options(cfg: dict[str, Any]) -> dict[str, Any]:
    """The recipe's batch sizes and logging interval, which a later stage (or the GRU embedder) shares."""
    return {
        k: v
        for k, v in cfg["training"].items()
        if k in ("per_device_train_batch_size", "per_device_eval_batch_size", "logging_steps")
    }


def _base_args(cfg: dict[str, Any], out: str, train: dict[str, Any], extra: dict[str, Any], config_cls) -> dict:
    names = {f.name for f in fields(config_cls)}
    merged = {**train, **extra}
    unknown = sorted(set(merged) - names)
    if unknown:
        raise FairmtError(f"unknown training option(s) {unknown} for {config_cls.__name__}")
    base = dict(
        output_dir=out,
        seed=cfg["seed"],
        report_to=[],
        use_cpu=not _cuda(),
        disable_tqdm=True,
        eval_strategy="epoch",
        save_strategy="epoch",
        save_only_model=True,
        load_best_model_at_end=False,
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
        if (
            given
            and str(given).lower() != "true"
            and Path(str(given)).parent.resolve() != Path(out, "stage1").resolve()
        ):
            raise FairmtError(
                f"training.resume_from_checkpoint={given}: a two-stage objective ({obj}) resumes its "
                f"first stage only, from a checkpoint in {out}/stage1 (or give true for its last one); "
                "the second stage is short and starts again"
            )
        return {
            "stage1": (
                FairContrastiveConfig,
                _base_args(cfg, out + "/stage1", cfg["training"], {**oargs, "objective": obj}, FairContrastiveConfig),
            ),
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
    stages: dict[str, tuple[type, dict[str, Any]]] = {
        "train": (FairContrastiveConfig, _base_args(cfg, out, cfg["training"], extra, FairContrastiveConfig))
    }
    if obj == "inlp" and cfg["inlp"]["head"] == "finetune":  # the model's head fine-tuned on the guarded features
        head = {**_batch_options(cfg), **cfg["stage2"]}
        stages["stage2"] = (
            FairContrastiveConfig,
            _base_args(cfg, out + "/inlp_head", head, {"objective": "ce"}, FairContrastiveConfig),
        )
    return stages


@dataclass
class _Selection:
    """A run's dev selection: the :class:`~fairmt.eval.selection.FairnessSelectionCallback` that chose, with what
    the run adds to it: whether the final epoch is kept instead (``criterion: last``) and the starting model's dev
    numbers (``start_dev``)."""

    callback: Any
    keep_last: bool = False
    start_dev: dict[str, float] | None = None


def _fit(
    cfg, trainer_cls, config_cls, kwargs, model, train_ds, dev_ds, collator, *, criterion, patience, compute_metrics
):
    """One Trainer run with dev evaluation every epoch, the selection rule's early stopping, and the chosen
    checkpoint loaded at the end. Returns ``(trainer, selection)``."""
    from fairmt.eval.selection import FairnessSelectionCallback

    last = criterion == "last"  # the final epoch, as the CSCL release reports (dev still evaluated and logged)
    callback = FairnessSelectionCallback(
        "loss" if last else criterion,
        normalise=False,
        tolerance=cfg["selection_tolerance"],
        patience=patience,
        prune=True,
        copy_best=False,
        percent=True,
        accuracy_floor=cfg["selection_accuracy_floor"],
        patience_waits_for_loss=cfg["patience_waits_for_dev_loss"],
        warn=False,
    )  # the run's summary prints the note, once
    trainer = trainer_cls(
        model=model,
        args=config_cls(**kwargs),
        train_dataset=train_ds,
        eval_dataset=dev_ds,
        data_collator=collator,
        compute_metrics=compute_metrics,
        callbacks=[callback],
    )
    selection = _Selection(callback, keep_last=last)
    if compute_metrics is not None:  # the starting model on dev: the "before" of the run's before → after table
        start = _measure_without_rng(lambda: trainer.predict(dev_ds, metric_key_prefix="start").metrics)
        selection.start_dev = {
            k: round(float(start[f"start_{k}"]), 4)
            for k in ("accuracy", "gap", "delta_eo")
            if start.get(f"start_{k}") is not None
        }
    trainer.train()
    if callback.best_checkpoint and not last:
        trainer._load_from_checkpoint(callback.best_checkpoint)
    return trainer, selection


def _measure_without_rng(measure):
    """``measure()`` (a prediction, which no selection callback sees) with every random generator put back after
    it: measuring the starting model leaves the run's training exactly as without the measurement."""
    import random

    import numpy as np
    import torch

    states = (
        random.getstate(),
        np.random.get_state(),
        torch.get_rng_state(),
        torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    )
    try:
        return measure()
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if states[3] is not None:
            torch.cuda.set_rng_state_all(states[3])


def _selection_info(selection: _Selection, steps_per_epoch: int | None = None) -> dict[str, Any]:
    """The choice made on dev and why: the rule, the chosen evaluation (step, epoch, dev numbers in percent), the
    accuracy floor and its note (see :func:`fairmt.eval.selection.degenerate_choice`)."""
    cb, last = selection.callback, selection.keep_last
    best = cb.records[-1] if last and cb.records else cb.best
    info = {
        "criterion": "last" if last else cb.criterion,
        "best_step": None if best is None else best.step,
        "best_checkpoint": None if last else cb.best_checkpoint,
        "evaluations": len(cb.records),
        "stopped_early_at_step": cb.stopped_early_at,
        "patience": cb.patience,
        "accuracy_floor": cb.accuracy_floor,
        "note": cb.note,
    }
    if best is not None:
        if steps_per_epoch:
            info["best_epoch"] = round(best.step / steps_per_epoch)
        info["best_dev"] = {
            k: round(100 * v, 4) for k in ("accuracy", "gap", "dto") if (v := getattr(best, k)) is not None
        }
        if best.loss is not None:
            info["best_dev"]["loss"] = best.loss
    if selection.start_dev:  # the model before this training (pretrained encoder, untrained head)
        info["start_dev"] = selection.start_dev
    if cb.records:  # the first evaluation of the run (kept: early stopping, the learning curve)
        first = cb.records[0]
        info["first_dev"] = {
            k: round(100 * v, 4) for k in ("accuracy", "gap", "delta_eo") if (v := getattr(first, k)) is not None
        }
        if steps_per_epoch:
            info["first_dev"]["epoch"] = round(first.step / steps_per_epoch)
    return info


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
    metrics = fairness_compute_metrics(
        num_classes=data.num_labels,
        eo_classes=cfg["metrics"]["eo_classes"],
        positive_class=cfg["metrics"]["positive_class"],
        percent=True,
    )
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
        s1, cb1 = _fit(
            cfg,
            FairContrastiveTrainer,
            cls1,
            kw1,
            model,
            train_fit,
            datasets["dev"],
            collator,
            criterion="loss",
            patience=cfg["stage1_patience"],
            compute_metrics=None,
        )
        info["stage1"] = {
            "selection": _selection_info(cb1),
            "log": [h for h in s1.state.log_history if "loss" in h][-1:],
        }
        freeze_encoder(model)
        cls2, kw2 = stages["stage2"]
        if cfg["cache_stage2_features"] and hasattr(model, "head_forward"):
            from fairmt.data.classification import ClassificationCollator
            from fairmt.trainers.fair_contrastive import HeadOnFeatures

            datasets = _cached_feature_datasets(model, datasets, collator, kw2)
            trainer, cb = _fit(
                cfg,
                FairContrastiveTrainer,
                cls2,
                kw2,
                HeadOnFeatures(model),
                balance_train(cfg, datasets["train"]),
                datasets["dev"],
                ClassificationCollator(),
                criterion=cfg["selection"],
                patience=cfg["patience"],
                compute_metrics=metrics,
            )
            info["stage2_features"] = "cached (fixed encoder in eval mode, computed once)"
        else:
            trainer, cb = _fit(
                cfg,
                FairContrastiveTrainer,
                cls2,
                kw2,
                model,
                train_fit,
                datasets["dev"],
                collator,
                criterion=cfg["selection"],
                patience=cfg["patience"],
                compute_metrics=metrics,
            )
            info["stage2_features"] = "recomputed each step (frozen modules in eval mode)"
    else:
        cls, kw = stages["train"]
        trainer, cb = _fit(
            cfg,
            trainer_cls,
            cls,
            kw,
            model,
            train_fit,
            datasets["dev"],
            collator,
            criterion=cfg["selection"],
            patience=cfg["patience"],
            compute_metrics=metrics,
        )
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

        info["balance"] = {
            "method": method,
            "target": target,
            "n_before": len(ds),
            "n_after": len(out),
            "cells": "label|group",
            "counts_before": counts(labels, groups),
            "counts_after": counts(out["labels"], out["group"]),
        }
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

    feats = {
        name: Dataset.from_dict(
            {
                "features": np.asarray(outputs[name][1], dtype=np.float32),
                "labels": datasets[name]["labels"],
                "group": datasets[name]["group"],
            }
        )
        for name in ("train", "dev", "test")
    }
    cls, kwargs = stage
    trainer, cb = _fit(
        cfg,
        FairContrastiveTrainer,
        cls,
        kwargs,
        HeadOnFeatures(model),
        feats["train"],
        feats["dev"],
        ClassificationCollator(),
        criterion=cfg["selection"],
        patience=cfg["patience"],
        compute_metrics=metrics,
    )
    return {name: _predict(trainer, feats[name]) for name in ("train", "dev", "test")}, cb


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
        outputs["train"][1],
        tr.groups,
        n_iterations=cfg["inlp"]["n_iterations"],
        labels=tr.labels,
        by_class=cfg["inlp"]["by_class"],
        dev=(outputs["dev"][1], dv.groups, dv.labels),
        seed=cfg["seed"],
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
