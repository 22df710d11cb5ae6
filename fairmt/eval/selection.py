"""Model selection on the development set only: by a fairness–accuracy criterion or by loss.

Shen et al. (2022) select on the dev set and note the lack of a standard fairness-aware selection rule; Han et al.
(fairlib) select by the distance to the optimum (DTO) of (performance, fairness). This module gives:

* :func:`fairness_compute_metrics` — a ``compute_metrics`` for any Trainer: accuracy, macro-F1, GAP, ΔEO, the
  absolute DTO ``sqrt((1 − acc)² + GAP²)`` (the distance of (acc, 1 − GAP) to (1, 1)) and, optionally, leakage@h
  (cross-validated on the dev representations). Use ``metric_for_best_model="dto"`` with
  ``greater_is_better=False`` to let the Trainer's own ``load_best_model_at_end`` pick by it.
* :func:`select_checkpoint` — pick among evaluation records by ``dto`` (optionally normalised as Shen et al.'s
  trade-off: accuracy and 1−GAP divided by their maxima over the records, so the optimum is the best observed
  pair), ``loss`` (lowest dev loss), ``accuracy``, or ``accuracy_then_gap`` (Shen et al.'s protocol: among records
  within ``tolerance`` of the best dev accuracy, the lowest GAP).
* :class:`FairnessSelectionCallback` — a ``TrainerCallback`` that records the dev metrics of every evaluation during
  training, links each to the checkpoint saved at that step, keeps a copy of the best checkpoint under
  ``output_dir/best-<criterion>`` (or deletes, as it goes, the checkpoints that can no longer be chosen), stops
  training early when the chosen evaluation is ``patience`` evaluations old (CSCL: 3 epochs; Shen et al.: 5) and
  writes ``selection.json``. Any criterion works with early stopping, ``accuracy_then_gap`` included.

Dev only, never test: the callback reads only metrics whose keys start with the dev prefix (``eval_`` — the prefix
of the Trainer's evaluation on ``eval_dataset`` during training; ``eval_<name>_`` for a dict of eval sets). Evaluate
the test set with ``metric_key_prefix="test"``: the callback ignores it, and it refuses a dev prefix that names a
test set.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from transformers import TrainerCallback

from fairmt.errors import FairmtError
from fairmt.eval.classification import classification_metrics, distance_to_optimum, leakage

__all__ = [
    "ACCURACY_FLOOR",
    "CRITERIA",
    "EvalRecord",
    "FairnessSelectionCallback",
    "degenerate_choice",
    "fairness_compute_metrics",
    "select_checkpoint",
]

CRITERIA = ("dto", "loss", "accuracy", "accuracy_then_gap")
FAIRNESS_TRADEOFFS = ("dto", "accuracy_then_gap")  # the rules that can prefer a fair but useless model
ACCURACY_FLOOR = 0.8  # default floor of the classification recipes: dev accuracy ≥ 0.8 × the best dev accuracy


def degenerate_choice(
    records: Sequence[EvalRecord],
    chosen: EvalRecord,
    criterion: str,
    floor: float | None,
    *,
    unguarded: EvalRecord | None = None,
    scale: float = 1.0,
) -> str | None:
    """One line when a selection needs the reader's attention, else ``None``: the rule's own choice was set aside
    by the accuracy floor (``unguarded`` differs from ``chosen``), or the chosen record is below
    ``ACCURACY_FLOOR`` (``floor`` when given) × the best dev accuracy — a model degenerate on dev (e.g. one class
    for every input). ``scale``: 100 to print fractions as percentages."""
    if criterion not in FAIRNESS_TRADEOFFS or not records or chosen.accuracy is None:
        return None
    best = max(r.accuracy for r in records if r.accuracy is not None)
    ratio = floor or ACCURACY_FLOOR
    if unguarded is not None and unguarded.step != chosen.step:
        return (
            f"{criterion} alone would select step {unguarded.step} (dev accuracy "
            f"{_shown(unguarded.accuracy, scale)}, GAP {_shown(unguarded.gap, scale)}), below the accuracy floor "
            f"{ratio:g} × the best dev accuracy {best * scale:.2f}: a degenerate model; step {chosen.step} selected "
            f"instead (dev accuracy {chosen.accuracy * scale:.2f}, GAP {_shown(chosen.gap, scale)})"
        )
    if chosen.accuracy < ratio * best:
        return (
            f"the selected step {chosen.step} has dev accuracy {chosen.accuracy * scale:.2f}, below {ratio:g} × "
            f"the best dev accuracy {best * scale:.2f} (step "
            f"{max(records, key=lambda r: r.accuracy or -1).step}): a model degenerate on dev, selected by "
            f"{criterion} for its small GAP — set an accuracy floor (selection_accuracy_floor) to exclude it"
        )
    return None


def _shown(value: float | None, scale: float) -> str:
    return "n/a" if value is None else f"{value * scale:.2f}"


def _score(record: EvalRecord, key: str) -> float:
    """``record.<key>``, which the caller has checked is there (:func:`select_checkpoint` refuses a missing one)."""
    value = getattr(record, key)
    if value is None:
        raise FairmtError(f"evaluation at step {record.step} has no dev {key}")
    return float(value)


@dataclasses.dataclass
class EvalRecord:
    """Dev-set scores of one evaluation (fractions) and the checkpoint saved at that step, if any."""

    step: int
    loss: float | None = None
    accuracy: float | None = None
    gap: float | None = None
    macro_f1: float | None = None
    delta_eo: float | None = None
    dto: float | None = None
    checkpoint: str | None = None


def _unpack(eval_pred: Any) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray | None]:
    preds = eval_pred.predictions if hasattr(eval_pred, "predictions") else eval_pred[0]
    label_ids = eval_pred.label_ids if hasattr(eval_pred, "label_ids") else eval_pred[1]
    hidden = None
    if isinstance(preds, (tuple, list)):
        preds, hidden = preds[0], (preds[1] if len(preds) > 1 else None)
    groups = None
    if isinstance(label_ids, (tuple, list)):
        label_ids, groups = label_ids[0], (label_ids[1] if len(label_ids) > 1 else None)
    return np.asarray(preds), None if hidden is None else np.asarray(hidden), np.asarray(label_ids), groups


def fairness_compute_metrics(
    groups: Sequence | None = None,
    *,
    num_classes: int | None = None,
    with_leakage: bool = False,
    seed: int = 0,
    eo_classes: str = "positive",
    positive_class: Any = None,
    percent: bool = False,
) -> Callable[[Any], dict[str, float]]:
    """A ``compute_metrics`` function for ``transformers.Trainer`` that scores the dev set's fairness.

    It takes an ``EvalPrediction`` whose ``predictions`` are logits or ``(logits, hidden)`` and whose ``label_ids``
    are labels or ``(labels, group)`` (what the fairmt classification Trainers return). When the groups are not in
    the label ids, pass them here, in dev-set order (the Trainer evaluates sequentially, so the order is kept).

    Returns ``accuracy``, ``f1`` (positive class, two-class tasks) or ``micro_f1``, ``macro_f1``, ``auc`` (from the
    softmax of the logits), ``gap``, ``delta_eo`` (in the ``eo_classes`` convention), ``dto`` (absolute, lower is
    better) and, with ``with_leakage`` and hidden states, ``leakage_h`` (5-fold cross-validated on the dev
    representations). Fractions, or percentages with ``percent=True`` (the scale of fairmt's reports; give
    :class:`FairnessSelectionCallback` ``percent=True`` too).
    """
    from fairmt.eval.classification import EO_CLASSES

    if eo_classes not in EO_CLASSES:
        raise FairmtError(f"eo_classes must be one of {', '.join(EO_CLASSES)}, got {eo_classes!r}")
    fixed_groups = None if groups is None else np.asarray(groups)

    def compute(eval_pred: Any) -> dict[str, float]:
        logits, hidden, labels, batch_groups = _unpack(eval_pred)
        g = np.asarray(batch_groups) if batch_groups is not None else fixed_groups
        if g is None:
            raise FairmtError(
                "fairness_compute_metrics: the label ids carry no group column; pass groups= (in dev-set order)"
            )
        if len(g) != len(labels):
            raise FairmtError(f"{len(g)} groups for {len(labels)} dev predictions: pass the dev set's groups")
        preds = logits.argmax(-1) if logits.ndim == 2 else logits
        scores = None
        if logits.ndim == 2 and num_classes is not None and logits.shape[1] == num_classes:
            z = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
            scores = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        r = classification_metrics(
            labels.astype(int),
            preds.astype(int),
            g,
            num_classes=num_classes,
            scores=scores,
            eo_classes=eo_classes,
            positive_class=positive_class,
        )
        out = {"accuracy": r.accuracy}
        for key in ("f1", "micro_f1", "auc"):
            if getattr(r, key) is not None:
                out[key] = getattr(r, key)
        out.update(
            {
                "macro_f1": r.macro_f1,
                "gap": r.gap,
                "delta_eo": r.delta_eo,
                "dto": distance_to_optimum([r.accuracy], [r.gap])[0],
            }
        )
        if with_leakage and hidden is not None:
            out["leakage_h"] = leakage(hidden.reshape(len(hidden), -1), g, seed=seed)[0]
        return {k: 100.0 * v for k, v in out.items()} if percent else out

    return compute


def select_checkpoint(
    records: Sequence[EvalRecord],
    criterion: str = "dto",
    *,
    normalise: bool = True,
    tolerance: float = 0.01,
    accuracy_floor: float | None = None,
) -> EvalRecord:
    """The best record by ``criterion`` (see the module docstring); ties go to the earliest step.

    ``normalise`` applies to ``dto`` only; ``tolerance`` (a fraction of accuracy) to ``accuracy_then_gap`` only.
    ``accuracy_floor`` (a ratio in [0, 1]): for the fairness trade-offs (``dto``, ``accuracy_then_gap``), records
    whose dev accuracy is below ``accuracy_floor × the best dev accuracy`` cannot be chosen — a near-constant
    model has a GAP near 0 and can win DTO while being useless (see :func:`degenerate_choice`).
    """
    if criterion not in CRITERIA:
        raise FairmtError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    if not records:
        raise FairmtError("no dev-set evaluation to select from: set eval_strategy so that the Trainer evaluates")
    need = {
        "dto": ("accuracy", "gap"),
        "loss": ("loss",),
        "accuracy": ("accuracy",),
        "accuracy_then_gap": ("accuracy", "gap"),
    }[criterion]
    for r in records:
        for k in need:
            v = getattr(r, k)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                raise FairmtError(
                    f"evaluation at step {r.step} has no dev {k}: selection by {criterion} needs it "
                    "(use compute_metrics=fairness_compute_metrics(...))"
                )
    if accuracy_floor and criterion in FAIRNESS_TRADEOFFS:
        floor = accuracy_floor * max(_score(r, "accuracy") for r in records)
        records = [r for r in records if _score(r, "accuracy") >= floor]
    scores: list[float]
    if criterion == "loss":
        scores = [_score(r, "loss") for r in records]
    elif criterion == "accuracy":
        scores = [-_score(r, "accuracy") for r in records]
    elif criterion == "dto":
        scores = distance_to_optimum(
            [_score(r, "accuracy") for r in records], [_score(r, "gap") for r in records], normalise=normalise
        )
    else:
        best_acc = max(_score(r, "accuracy") for r in records)
        scores = [_score(r, "gap") if _score(r, "accuracy") >= best_acc - tolerance else math.inf for r in records]
    best = min(range(len(records)), key=lambda i: (scores[i], records[i].step))
    return records[best]


class FairnessSelectionCallback(TrainerCallback):
    """Keep the best checkpoint by a dev-set fairness–accuracy criterion (or by loss) while a Trainer runs.

    Args:
        criterion: ``dto`` (default), ``loss``, ``accuracy`` or ``accuracy_then_gap``.
        normalise: for ``dto``, normalise by the best observed accuracy and 1−GAP (Shen et al.'s N(·)).
        tolerance: for ``accuracy_then_gap``, how far below the best dev accuracy a record may be.
        dev_prefix: metric prefix of the dev evaluation (``eval``; ``eval_<name>`` for a dict of eval sets).
        copy_best: copy the best checkpoint to ``output_dir/best-<criterion>`` (kept even if checkpoint rotation
            deletes the original).
        patience: stop training once ``patience`` evaluations have followed the currently chosen one (early
            stopping on the selection rule itself; ``None`` never stops).
        patience_waits_for_loss: stop only once the lowest dev loss is ``patience`` evaluations old too (a
            conservative extension: never earlier than the rule's patience alone; on a small dev set an early, fair
            but weak epoch otherwise ends training while the dev loss still falls).
        accuracy_floor: for ``dto``/``accuracy_then_gap``, never choose a record whose dev accuracy is below this
            ratio of the best dev accuracy (see :func:`select_checkpoint`); ``note`` and ``selection.json`` say
            when it changed the choice, and a warning is issued once at the end of training (unless ``warn`` is
            false: the caller prints ``note``).
        percent: the dev metrics come in percent (``fairness_compute_metrics(percent=True)``); records are kept
            as fractions.
        prune: delete, after each save, the checkpoints that can no longer be chosen (all but the current best for
            ``loss``/``accuracy``/absolute ``dto``; those within ``tolerance`` of the best accuracy for
            ``accuracy_then_gap``; none for normalised ``dto``), except the latest one (a run can be resumed). Use
            it with the Trainer's ``save_total_limit`` unset, instead of ``copy_best``.

    The Trainer needs ``compute_metrics=fairness_compute_metrics(...)`` (for accuracy and GAP), an evaluation and a
    save at the same steps (``eval_strategy == save_strategy``, equal ``eval_steps``/``save_steps``). After
    training, ``callback.best`` is the chosen :class:`EvalRecord`, ``callback.best_checkpoint`` its directory, and
    ``output_dir/selection.json`` lists every record.

    With ``normalise=True`` the ranking can change as better points are observed, so the copy made during training
    is revised at the end; a checkpoint deleted by ``save_total_limit`` meanwhile cannot be chosen (keep the limit
    unset, or use the absolute DTO: ``normalise=False``).
    """

    def __init__(
        self,
        criterion: str = "dto",
        *,
        normalise: bool = True,
        tolerance: float = 0.01,
        dev_prefix: str = "eval",
        copy_best: bool = True,
        patience: int | None = None,
        prune: bool = False,
        accuracy_floor: float | None = None,
        percent: bool = False,
        patience_waits_for_loss: bool = False,
        warn: bool = True,
    ) -> None:
        if criterion not in CRITERIA:
            raise FairmtError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
        if "test" in dev_prefix.lower():
            raise FairmtError(f"dev_prefix {dev_prefix!r} names a test set: select on the development set only")
        self.criterion = criterion
        self.normalise = normalise
        self.tolerance = tolerance
        self.prefix = dev_prefix.rstrip("_") + "_"
        self.copy_best = copy_best
        if patience is not None and patience < 1:
            raise FairmtError(f"patience must be a positive number of evaluations, got {patience}")
        self.patience = patience
        self.prune = prune
        if accuracy_floor is not None and not 0 <= accuracy_floor <= 1:
            raise FairmtError(
                f"accuracy_floor must be a ratio in [0, 1] of the best dev accuracy, got {accuracy_floor}"
            )
        self.accuracy_floor = accuracy_floor
        self.patience_waits_for_loss = patience_waits_for_loss
        self.warn = warn  # False: the caller reports ``note`` itself
        self.scale = 100.0 if percent else 1.0
        self.note: str | None = None  # why the selection needs attention (see degenerate_choice), once per run
        self.stopped_early_at: int | None = None
        self.records: list[EvalRecord] = []
        self.best: EvalRecord | None = None
        self.best_checkpoint: str | None = None
        self._copied_step: int | None = None

    # ------------------------------------------------------------------ helpers
    def _best_dir(self, args: Any) -> str:
        return os.path.join(args.output_dir, f"best-{self.criterion}")

    def _available(self, record: EvalRecord) -> bool:
        """The checkpoint of ``record`` still exists, or is the one kept in ``best-<criterion>``."""
        return bool(record.checkpoint and os.path.isdir(record.checkpoint)) or record.step == self._copied_step

    def _choose(self, only_saved: bool) -> EvalRecord | None:
        pool = [r for r in self.records if not only_saved or self._available(r)]
        if not pool:
            return None
        return select_checkpoint(
            pool, self.criterion, normalise=self.normalise, tolerance=self.tolerance, accuracy_floor=self.accuracy_floor
        )

    def _copy(self, args: Any, record: EvalRecord) -> None:
        if not self.copy_best or record.checkpoint is None or not os.path.isdir(record.checkpoint):
            return
        if self._copied_step == record.step:
            return
        from fairmt.outputs import save_folder

        dest = self._best_dir(args)  # whole or the earlier copy (the one writer's rename); a full disk: one line
        save_folder(
            dest,
            lambda tmp: shutil.copytree(record.checkpoint, tmp, dirs_exist_ok=True),
            what=f"the copy of the best checkpoint (step {record.step})",
        )
        self._copied_step = record.step

    # ------------------------------------------------------------------ callback events
    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        """Record the dev metrics of this evaluation (other prefixes, e.g. ``test_``, are ignored)."""
        if not metrics or not any(k.startswith(self.prefix) for k in metrics):
            return
        m = {k[len(self.prefix) :]: v for k, v in metrics.items() if k.startswith(self.prefix)}
        if any(k.startswith("test_") for k in m):  # eval_test_*: a test set inside a dict of eval sets
            return
        frac = lambda key: None if m.get(key) is None else float(m[key]) / self.scale  # noqa: E731
        rec = EvalRecord(
            step=int(state.global_step),
            loss=_float(m.get("loss")),
            accuracy=frac("accuracy"),
            gap=frac("gap"),
            macro_f1=frac("macro_f1"),
            delta_eo=frac("delta_eo"),
        )
        if rec.accuracy is not None and rec.gap is not None:
            rec.dto = distance_to_optimum([rec.accuracy], [rec.gap])[0]
        if self.criterion != "loss" and (rec.accuracy is None or rec.gap is None):
            raise FairmtError(
                f"dev evaluation at step {rec.step} has no {self.prefix}accuracy/{self.prefix}gap: give the Trainer "
                "compute_metrics=fairmt.eval.selection.fairness_compute_metrics(...)"
            )
        self.records = [r for r in self.records if r.step != rec.step] + [rec]
        if self.patience is not None:
            best = self._choose(only_saved=False)  # not None: self.records holds rec
            since = sum(1 for r in self.records if best is not None and r.step > best.step)
            if self.patience_waits_for_loss and all(r.loss is not None for r in self.records):
                # a model still learning (its dev loss still falling) is not stopped by an early, fair but weak
                # choice: both the rule's choice and the lowest dev loss must be `patience` evaluations old
                lowest = min(self.records, key=lambda r: (r.loss, r.step))
                since = min(since, sum(1 for r in self.records if r.step > lowest.step))
            if since >= self.patience:
                control.should_training_stop = True
                self.stopped_early_at = rec.step

    def _can_still_be_chosen(self, record: EvalRecord) -> bool:
        if self.criterion == "dto" and self.normalise:
            return True
        if self.criterion == "dto" and self.accuracy_floor:
            # the floor rises with the best accuracy and may exclude today's choice: a record can still be chosen
            # while it is above today's floor and no record at least as accurate has a smaller DTO
            best_acc = max(_score(r, "accuracy") for r in self.records)
            acc = _score(record, "accuracy")
            rivals = [r for r in self.records if _score(r, "accuracy") >= acc and r.step != record.step]
            return acc >= self.accuracy_floor * best_acc and all(
                (_score(record, "dto"), record.step) <= (_score(r, "dto"), r.step) for r in rivals
            )
        if self.criterion == "accuracy_then_gap":
            best_acc = max(_score(r, "accuracy") for r in self.records)
            return _score(record, "accuracy") >= best_acc - self.tolerance
        chosen = self._choose(only_saved=False)
        return chosen is not None and record.step == chosen.step

    def _prune(self, state) -> None:
        latest = max((r.step for r in self.records if r.checkpoint), default=None)
        for r in self.records:
            if r.checkpoint and r.step != latest and os.path.isdir(r.checkpoint) and not self._can_still_be_chosen(r):
                shutil.rmtree(r.checkpoint, ignore_errors=True)

    def on_save(self, args, state, control, **kwargs):
        """Link the checkpoint just written to the evaluation of the same step; copy it if it is the best so far."""
        path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        for r in self.records:
            if r.step == state.global_step and os.path.isdir(path):
                r.checkpoint = path
        if args.should_save:
            if self.prune and self.records:
                self._prune(state)
            best = self._choose(only_saved=True)
            if best is not None:
                self._copy(args, best)

    def on_train_end(self, args, state, control, **kwargs):
        """Final choice among the saved checkpoints; write ``selection.json``."""
        best = self._choose(only_saved=True)
        if best is None:
            best = self._choose(only_saved=False)
        self.best = best
        if best is not None:
            # the rule alone over every evaluation (its checkpoint may be pruned: it is named, not loaded)
            unguarded = select_checkpoint(
                self.records, self.criterion, normalise=self.normalise, tolerance=self.tolerance
            )
            self.note = degenerate_choice(
                self.records, best, self.criterion, self.accuracy_floor, unguarded=unguarded, scale=self.scale
            )
            if self.note and self.warn and args.should_save:
                import warnings

                warnings.warn(f"model selection: {self.note}", stacklevel=2)
        if best is not None and args.should_save:
            self._copy(args, best)
            if self.copy_best and self._copied_step == best.step:
                self.best_checkpoint = self._best_dir(args)
            else:
                self.best_checkpoint = best.checkpoint
            report = {
                "criterion": self.criterion,
                "normalise": self.normalise,
                "tolerance": self.tolerance,
                "patience": self.patience,
                "stopped_early_at_step": self.stopped_early_at,
                "dev_prefix": self.prefix,
                "accuracy_floor": self.accuracy_floor,
                "patience_waits_for_loss": self.patience_waits_for_loss,
                "note": self.note,
                "best": dataclasses.asdict(best),
                "best_checkpoint": self.best_checkpoint,
                "records": [dataclasses.asdict(r) for r in self.records],
            }
            os.makedirs(args.output_dir, exist_ok=True)
            from fairmt.outputs import write_file

            write_file(
                os.path.join(args.output_dir, "selection.json"),
                json.dumps(report, indent=2),
                what="the checkpoint selection",
            )


def _float(v: Any) -> float | None:
    return None if v is None else float(v)
