"""Logging each loss term of a composite objective beside the Trainer's total ``loss``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any


class LossTermLogMixin:
    """Mix into a ``Trainer`` subclass (before ``Trainer``): :meth:`_record_terms` accumulates per-step term values,
    and every training log gets the mean of each term since the previous one."""

    def _record_terms(self, terms: dict[str, Any], prefix: str = "") -> None:
        sums = self.__dict__.setdefault("_term_sums", defaultdict(float))
        counts = self.__dict__.setdefault("_term_counts", defaultdict(int))
        for k, v in terms.items():
            sums[prefix + k] += float(v.detach())
            counts[prefix + k] += 1

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """Add the mean of each loss term since the last training log."""
        counts = self.__dict__.get("_term_counts")
        if "loss" in logs and counts:
            sums = self.__dict__["_term_sums"]
            for k, total in sums.items():
                logs[k] = round(total / max(counts[k], 1), 6)
            sums.clear()
            counts.clear()
        super().log(logs, *args, **kwargs)


class SplitTermLogMixin:
    """Mix into a ``Trainer`` subclass (before ``Trainer``) whose loss has two named terms (``term_names``) and no
    labels or logits (CCD, DPCE, ADEPT-F): :meth:`_add_terms` accumulates per-step values, separately for training
    and evaluation; every training log gets ``loss_<term>`` (the mean since the last log) and every evaluation
    ``<prefix>_loss_<term>``, both summed over processes first, so a multi-process run logs the global means."""

    term_names: tuple[str, str] = ("bias", "rep")

    def _split_term_sums(self) -> dict:
        import torch

        return self.__dict__.setdefault("_split_terms", {"train": torch.zeros(3), "eval": torch.zeros(3)})

    def _add_terms(self, training: bool, a, b) -> None:
        import torch

        self._split_term_sums()["train" if training else "eval"] += torch.tensor(
            [float(a.detach()), float(b.detach()), 1.0]
        )

    def _mean_terms(self, split: str) -> dict[str, float] | None:
        import torch

        sums = self._split_term_sums()
        acc = sums[split]
        sums[split] = torch.zeros(3)
        if self.accelerator.num_processes > 1:
            acc = self.accelerator.reduce(acc.to(self.args.device), reduction="sum").cpu()
        if acc[2] <= 0:
            return None
        return {self.term_names[0]: float(acc[0] / acc[2]), self.term_names[1]: float(acc[1] / acc[2])}

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        """Validation: the loss only (there are no labels or logits)."""
        import torch

        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """Add the mean of each loss term since the last training log."""
        if "loss" in logs and not any(k.startswith("eval_") for k in logs):
            for k, v in (self._mean_terms("train") or {}).items():
                logs[f"loss_{k}"] = round(v, 8)
            self._extra_train_log(logs)
        super().log(logs, *args, **kwargs)

    def _extra_train_log(self, logs: dict[str, float]) -> None:
        """Hook for a subclass to add its own values to a training log."""

    def evaluation_loop(
        self, dataloader, description, prediction_loss_only=None, ignore_keys=None, metric_key_prefix="eval"
    ):
        """Trainer's evaluation loop, plus ``<prefix>_loss_<term>`` for both terms."""
        import torch

        self._split_term_sums()["eval"] = torch.zeros(3)
        output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys, metric_key_prefix)
        for k, v in (self._mean_terms("eval") or {}).items():
            output.metrics[f"{metric_key_prefix}_loss_{k}"] = v
        return output


def shown_logs(logs: dict[str, Any]) -> dict[str, Any]:
    """A training/evaluation log as the progress stream shows it: floats rounded to 4 significant digits and kept as
    numbers (transformers' ``ProgressCallback`` turns them into strings, ``{'loss': '2.779'}``), ``total_flos``
    left out."""
    return {k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in logs.items() if k != "total_flos"}


class _Number:
    """A logged float as ``ProgressCallback`` should print it: its repr is the number's (no quotes)."""

    __slots__ = ("value",)

    def __init__(self, value: float):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def numbers_in_progress(trainer) -> None:
    """Swap the Trainer's ``ProgressCallback`` (progress bars) or ``PrinterCallback`` (``disable_tqdm``,
    ``--no-progress``) for a subclass that hands it each log with numbers that print as numbers (:func:`shown_logs`):
    both turn floats into strings (``{'loss': '2.779'}``) before printing the dict."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    handler = trainer.callback_handler
    for i, cb in enumerate(handler.callbacks):
        base = type(cb)
        if base not in (ProgressCallback, PrinterCallback):
            continue
        fresh = _NUMBER_CALLBACKS.setdefault(
            base, type(f"Number{base.__name__}", (base,), {"on_log": _number_on_log})
        )()
        fresh.__dict__.update(cb.__dict__)
        handler.callbacks[i] = fresh


def _number_on_log(self, args, state, control, logs=None, **kwargs):
    """``on_log`` of the swapped callbacks: the parent's, on logs whose floats print as numbers."""
    shown = {k: _Number(v) if isinstance(v, float) else v for k, v in shown_logs(logs or {}).items()}
    return super(type(self), self).on_log(args, state, control, logs=shown, **kwargs)


_NUMBER_CALLBACKS: dict[type, type] = {}
