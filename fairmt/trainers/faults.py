"""Training faults every fairmt trainer handles the same way (:class:`FaultGuardMixin`, before ``Trainer`` in the
bases):

* a loss that becomes NaN or infinite stops the run at that step with a :class:`~fairmt.errors.FairmtError` naming
  the step and the loss terms (the stock Trainer's ``logging_nan_inf_filter`` hides such losses from the logs and
  goes on training on them); the error is raised before the optimizer step, so the weights and the last checkpoint
  stay as they were; a trainer's own per-step checks (:meth:`FaultGuardMixin.defer_check`, e.g. GACL's
  one-gender batch) are read in the same transfer, so a step reads one value set back from the device, not one
  per check;
* ``resume_from_checkpoint=True`` picks the last *complete* checkpoint — one whose ``trainer_state.json`` (written
  last by the Trainer) was saved whole — so a run killed while saving resumes from the one before instead of failing
  on the torn folder; a torn folder given by path is refused naming the last complete one.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_complete(path: str | os.PathLike) -> bool:
    """True when the checkpoint folder's ``trainer_state.json`` (the Trainer's last write) is there and whole."""
    state = Path(path) / "trainer_state.json"
    try:
        json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def last_complete_checkpoint(output_dir: str | os.PathLike) -> Path | None:
    """The highest-numbered complete ``checkpoint-N`` folder of ``output_dir`` (None when there is none)."""
    root = Path(output_dir)
    if not root.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := _CHECKPOINT.match(p.name))),
                   reverse=True)
    return next((p for _, p in found if checkpoint_complete(p)), None)


def _terms_text(trainer: Any) -> str:
    sums, counts = trainer.__dict__.get("_term_sums"), trainer.__dict__.get("_term_counts")
    if sums:
        return ", ".join(f"{k}={sums[k] / max(counts[k], 1):.4g}" for k in sums)
    split = trainer.__dict__.get("_split_terms")  # SplitTermLogMixin (CCD, DPCE, ADEPT-F): the training sums
    if split and float(split["train"][2]) > 0:
        acc, names = split["train"], getattr(trainer, "term_names", ("a", "b"))
        return ", ".join(f"{n}={float(acc[i] / acc[2]):.4g}" for i, n in enumerate(names))
    terms = trainer.__dict__.get("_terms")
    if terms:
        return ", ".join(f"{k}={float(v[-1]):.4g}" for k, v in terms.items() if len(v))
    return ""


class FaultGuardMixin:
    """Stop on a non-finite loss; resume from the last complete checkpoint (see the module docstring)."""

    def defer_check(self, failed: Any, message: str) -> None:
        """Stop this training step with ``message`` if ``failed`` (a 0-dim bool tensor on the device) is true. It is
        read together with the loss, after the backward pass and before the optimizer step, so a check inside the
        loss costs no device synchronisation of its own."""
        checks = self.__dict__.get("_deferred_checks")
        if checks is None:  # not inside a training step (e.g. compute_loss called directly): check now
            if bool(failed):
                raise FairmtError(message)
            return
        checks.append((failed, message))

    def training_step(self, model, inputs, num_items_in_batch=None):
        import torch

        self.__dict__["_deferred_checks"] = checks = []
        try:
            loss = super().training_step(model, inputs, num_items_in_batch)
        finally:
            del self.__dict__["_deferred_checks"]
        total = loss.detach().float().sum()
        # the step's one read from the device: the loss and every deferred check together
        flags = [f.to(total.device, torch.float32).reshape(()) for f, _ in checks]
        value, *failed = torch.stack([total, *flags]).tolist()
        for (_, message), bad in zip(checks, failed):
            if bad:
                raise FairmtError(f"training stopped at step {self.state.global_step + 1}: {message}")
        if not math.isfinite(value):
            terms = _terms_text(self)
            last = last_complete_checkpoint(self.args.output_dir)
            raise FairmtError(
                f"training stopped at step {self.state.global_step + 1}: the loss is {value}"
                + (f" (terms: {terms})" if terms else "")
                + "; lower the learning rate or check the data. "
                + (f"The last good checkpoint is {last}" if last else "No checkpoint was saved before it")
            )
        return loss

    def train(self, resume_from_checkpoint: str | bool | None = None, *args: Any, **kwargs: Any):
        if resume_from_checkpoint is True:
            last = last_complete_checkpoint(self.args.output_dir)
            if last is None:
                raise FairmtError(f"resume_from_checkpoint=True but {self.args.output_dir} holds no complete checkpoint")
            resume_from_checkpoint = str(last)
        elif isinstance(resume_from_checkpoint, (str, os.PathLike)) and not checkpoint_complete(resume_from_checkpoint):
            last = last_complete_checkpoint(Path(resume_from_checkpoint).parent)
            raise FairmtError(
                f"checkpoint {resume_from_checkpoint} is incomplete (no whole trainer_state.json: the run was "
                f"interrupted while saving it)" + (f"; resume from {last} instead" if last else "")
            )
        return super().train(resume_from_checkpoint, *args, **kwargs)
