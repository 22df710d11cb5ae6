"""GLUE utility of a (debiased) encoder: fine-tune it on SST-2, MRPC, RTE and WNLI and report the validation
scores, as the CCD paper does for its utility columns (Tables 4 and 5, "GLUE ↑"), following Kaneko & Bollegala (2021)
and Yang et al. (2023) in choosing these four small tasks (CCD paper Section 4, "Datasets").

Metrics are the ones GLUE reports for each task: accuracy for SST-2, RTE and WNLI; accuracy and F1 (of the
positive class, "equivalent") for MRPC. Scores are on the ``validation`` split (GLUE's test labels are hidden), in
percent, like the paper's tables. The CCD paper gives no fine-tuning hyperparameters for GLUE; the defaults here are
the usual BERT ones (learning rate 2e-5, batch 32, 3 epochs, max length 128, seed 42) and every one is a parameter.

Data come from ``datasets.load_dataset("nyu-mll/glue", task)`` (the Hub, or its local cache); offline and not cached
gives a :class:`FairmtError` saying so. Any ``datasets.Dataset`` with the GLUE column names (``sentence`` /
``sentence1``, ``sentence2``, ``label``) can be passed instead.

Example::

    >>> from fairmt.eval.glue import glue_evaluate
    >>> res = glue_evaluate("outputs/ccd/final", tasks=["sst2", "mrpc"])
    >>> res["mrpc"].accuracy, res["mrpc"].f1
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

logger = logging.getLogger(__name__)

GLUE_HUB_ID = "nyu-mll/glue"
# task -> (text columns, metrics GLUE reports)
GLUE_TASKS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "sst2": (("sentence",), ("accuracy",)),
    "mrpc": (("sentence1", "sentence2"), ("accuracy", "f1")),
    "rte": (("sentence1", "sentence2"), ("accuracy",)),
    "wnli": (("sentence1", "sentence2"), ("accuracy",)),
}
PAPER_TASKS = ("sst2", "mrpc", "rte", "wnli")
_ALIASES = {"sst-2": "sst2", "sst_2": "sst2"}


def task_name(task: str) -> str:
    t = _ALIASES.get(task.lower(), task.lower())
    if t not in GLUE_TASKS:
        raise FairmtError(f"unknown GLUE task {task!r}; choose from {list(GLUE_TASKS)}")
    return t


@dataclass
class GlueTaskResult:
    """Validation scores of one task (percent), with the sizes and settings that produced them."""

    task: str
    accuracy: float
    f1: float | None
    n_train: int
    n_eval: int
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def score(self) -> float:
        """GLUE's single number for the task: accuracy, or the mean of accuracy and F1 for MRPC."""
        return self.accuracy if self.f1 is None else (self.accuracy + self.f1) / 2


def glue_metrics(predictions: Sequence[int], labels: Sequence[int], task: str) -> dict[str, float]:
    """Accuracy (and F1 of class 1 for MRPC), in percent."""
    task = task_name(task)
    if len(predictions) != len(labels) or not labels:
        raise FairmtError(f"{task}: {len(predictions)} predictions for {len(labels)} labels")
    pairs = list(zip((int(p) for p in predictions), (int(y) for y in labels)))
    out = {"accuracy": 100.0 * sum(p == y for p, y in pairs) / len(pairs)}
    if "f1" in GLUE_TASKS[task][1]:
        tp = sum(p == 1 and y == 1 for p, y in pairs)
        fp = sum(p == 1 and y == 0 for p, y in pairs)
        fn = sum(p == 0 and y == 1 for p, y in pairs)
        out["f1"] = 100.0 * (2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return out


def load_glue(task: str, cache_dir: str | None = None):
    """The task's ``DatasetDict`` (train / validation / test) from the Hub or the local ``datasets`` cache."""
    task = task_name(task)
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a dependency
        raise FairmtError("GLUE needs the `datasets` package: pip install datasets") from None
    try:
        return datasets.load_dataset(GLUE_HUB_ID, task, cache_dir=cache_dir)
    except Exception as err:  # ConnectionError, OfflineModeIsEnabled, DatasetNotFoundError, ...
        offline = any(
            os.environ.get(k, "").lower() in ("1", "true", "yes") for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
        )
        raise FairmtError(
            f"GLUE {task}: cannot load {GLUE_HUB_ID!r} ({type(err).__name__}: {str(err)[:200]}). "
            + (
                "HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set and the dataset is not in the local cache: unset it on a "
                "machine with Hub access once to cache it, "
                if offline
                else "The Hub is not reachable and the dataset is not cached: run once with Hub access to cache it, "
            )
            + "or pass the splits yourself (datasets with the GLUE column names)."
        ) from None


def _check_split(ds, task: str, split: str) -> None:
    cols = (*GLUE_TASKS[task][0], "label")
    missing = [c for c in cols if c not in ds.column_names]
    if missing:
        raise FairmtError(f"GLUE {task} {split} split lacks column(s) {missing} (has {ds.column_names})")
    if len(ds) == 0:
        raise FairmtError(f"GLUE {task} {split} split is empty")


def finetune_glue_task(
    model_path: str | Path,
    task: str,
    train_dataset=None,
    eval_dataset=None,
    *,
    output_dir: str | Path | None = None,
    learning_rate: float = 2e-5,
    batch_size: int = 32,
    num_train_epochs: float = 3.0,
    max_length: int = 128,
    max_train_samples: int | None = None,
    max_eval_samples: int | None = None,
    seed: int = 42,
    use_cpu: bool = False,
    cache_dir: str | None = None,
    extra_args: Mapping[str, Any] | None = None,
) -> GlueTaskResult:
    """Fine-tune ``model_path`` (a saved encoder, ``*ForMaskedLM`` or sentence-transformers folder: its transformer
    gets a fresh classification head) on ``task`` and score it on the validation split.

    ``train_dataset`` / ``eval_dataset`` default to the task's GLUE ``train`` / ``validation`` splits
    (:func:`load_glue`).
    """
    import numpy as np
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    task = task_name(task)
    if train_dataset is None or eval_dataset is None:
        dd = load_glue(task, cache_dir)
        train_dataset = dd["train"] if train_dataset is None else train_dataset
        eval_dataset = dd["validation"] if eval_dataset is None else eval_dataset
    _check_split(train_dataset, task, "train")
    _check_split(eval_dataset, task, "validation")
    if max_train_samples:
        train_dataset = train_dataset.select(range(min(max_train_samples, len(train_dataset))))
    if max_eval_samples:
        eval_dataset = eval_dataset.select(range(min(max_eval_samples, len(eval_dataset))))
    cols = GLUE_TASKS[task][0]
    path = str(model_path)
    if not (Path(path) / "config.json").is_file():
        raise FairmtError(f"GLUE: {path} is not a saved model folder (no config.json)")
    tok = AutoTokenizer.from_pretrained(path)
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2)

    def tokenize(batch):
        return tok(*(batch[c] for c in cols), truncation=True, max_length=max_length)

    keep = ("label",)
    tr = train_dataset.map(
        tokenize, batched=True, remove_columns=[c for c in train_dataset.column_names if c not in keep]
    )
    ev = eval_dataset.map(
        tokenize, batched=True, remove_columns=[c for c in eval_dataset.column_names if c not in keep]
    )
    out = Path(output_dir) if output_dir else Path(path) / f"glue_{task}"
    args = TrainingArguments(
        output_dir=str(out),
        learning_rate=learning_rate,
        per_device_train_batch_size=batch_size,
        per_device_eval_batch_size=batch_size,
        num_train_epochs=num_train_epochs,
        seed=seed,
        save_strategy="no",
        report_to="none",
        use_cpu=use_cpu,
        disable_tqdm=True,
        logging_strategy="no",
        **dict(extra_args or {}),
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=tr,
        eval_dataset=ev,
        data_collator=DataCollatorWithPadding(tok),
        processing_class=tok,
    )
    trainer.train()
    pred = trainer.predict(ev)
    metrics = glue_metrics(np.argmax(pred.predictions, axis=-1).tolist(), list(ev["label"]), task)
    settings = {
        "learning_rate": learning_rate,
        "batch_size": batch_size,
        "num_train_epochs": num_train_epochs,
        "max_length": max_length,
        "seed": seed,
    }
    return GlueTaskResult(
        task=task,
        accuracy=metrics["accuracy"],
        f1=metrics.get("f1"),
        n_train=len(tr),
        n_eval=len(ev),
        settings=settings,
    )


def glue_evaluate(
    model_path: str | Path,
    tasks: Sequence[str] = PAPER_TASKS,
    datasets: Mapping[str, tuple[Any, Any]] | None = None,
    **kwargs: Any,
) -> dict[str, GlueTaskResult]:
    """:func:`finetune_glue_task` for each task (``datasets``: optional ``task -> (train, validation)`` stand-ins);
    each task starts again from ``model_path``; ``output_dir`` (optional) is the root of one folder per task."""
    out = {}
    root = kwargs.pop("output_dir", None)
    for t in tasks:
        t = task_name(t)
        train, dev = (datasets or {}).get(t, (None, None))
        out[t] = finetune_glue_task(model_path, t, train, dev, output_dir=Path(root) / t if root else None, **kwargs)
        logger.info("GLUE %s: %s", t, out[t])
    return out


def glue_summary(results: Mapping[str, GlueTaskResult]) -> dict[str, Any]:
    """JSON-ready results plus the average of the task scores (the paper's "AVG" column: it averages one number
    per task; for MRPC we use GLUE's mean of accuracy and F1 — the paper does not say which it shows)."""
    tasks = {t: asdict(r) | {"score": r.score} for t, r in results.items()}
    return {"tasks": tasks, "avg": sum(r.score for r in results.values()) / len(results) if results else None}
