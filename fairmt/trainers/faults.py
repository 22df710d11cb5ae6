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
  on the torn folder; a torn folder given by path is refused naming the last complete one;
* ``train()`` runs with the objects alive at its start frozen out of the garbage collector (``gc.freeze``; unfrozen
  at the end): the Trainer calls ``accelerator.free_memory()`` → ``gc.collect()`` at the start of every training
  loop, and Python's own generation-2 collections walk the whole heap too — in a process holding torch,
  transformers, datasets and scikit-learn that walk measured 0.3–0.7 s per ``train()`` here, a tenth of a short run.
  The frozen objects (the model, the data, the imported modules) live through the run anyway; garbage made during
  the run is collected as before; nothing else changes. Where the collector is already managed (disabled, objects
  already frozen by the caller, or :func:`collector_managed_by_caller` said so) it is left alone.
"""

from __future__ import annotations

import gc
import math
import os
import re
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")

_caller_manages_collector = False


def collector_managed_by_caller(managed: bool = True) -> bool:
    """Tell every fairmt Trainer in this process that the caller manages the garbage collector itself (it freezes,
    collects or disables it, e.g. a server that freezes its heap before forking, or a test runner that freezes it
    before every test): ``train()`` then neither freezes nor unfreezes anything. Returns the previous setting.

    Without it, ``train()`` finds out itself whether the caller froze objects, with ``gc.get_freeze_count()``, which
    counts the frozen objects one by one (a linked list): 0.06 s with torch and transformers imported (436,000
    objects), 0.15 s in a test process after three test files (a million), each time ``train()`` is called."""
    global _caller_manages_collector
    previous, _caller_manages_collector = _caller_manages_collector, bool(managed)
    return previous


def checkpoint_problem(path: str | os.PathLike) -> str | None:
    """What makes a checkpoint folder unusable for resuming (None: nothing): no whole ``trainer_state.json`` (the
    Trainer's last write: the run was interrupted while saving), or a state file that is empty, cut off or not what
    its name says (``optimizer.pt``, ``scheduler.pt``, ``rng_state*.pth``, the weights)."""
    from fairmt.hub import json_file_problem, weights_problem

    folder = Path(path)
    state = folder / "trainer_state.json"
    if not state.is_file():
        return "no trainer_state.json (the run was interrupted while saving it)"
    why = json_file_problem(state)
    if why:
        return f"trainer_state.json is {why} (the run was interrupted while saving it)"
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.suffix in (".pt", ".pth", ".bin", ".safetensors"):
            why = weights_problem(f)
            if why:
                return f"{f.name} is {why}"
    return None


def checkpoint_complete(path: str | os.PathLike) -> bool:
    """True when the checkpoint folder can be resumed from (:func:`checkpoint_problem` finds nothing)."""
    return checkpoint_problem(path) is None


def last_complete_checkpoint(output_dir: str | os.PathLike) -> Path | None:
    """The highest-numbered complete ``checkpoint-N`` folder of ``output_dir`` (None when there is none)."""
    root = Path(output_dir)
    if not root.is_dir():
        return None
    return next((p for p in _checkpoints(root) if checkpoint_complete(p)), None)


def _checkpoints(root: Path) -> list[Path]:
    """The ``checkpoint-N`` folders of ``root``, newest (highest N) first."""
    found = []
    for p in root.iterdir():
        m = _CHECKPOINT.match(p.name)
        if m and p.is_dir():
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found, reverse=True)]


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

    def _save_checkpoint(self, model, trial, *args: Any, **kwargs: Any):
        # a full disk or a file-size limit while a checkpoint is written: one line naming the checkpoint and the free
        # space (the torn checkpoint is skipped by a resume: see checkpoint_problem), never a SafetensorError traceback
        from fairmt.outputs import record_new, write_error, write_failed

        try:
            saved = super()._save_checkpoint(model, trial, *args, **kwargs)
        except Exception as exc:
            if write_failed(exc):
                where = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
                raise write_error(where, f"the checkpoint of step {self.state.global_step}", exc) from None
            raise
        # the checkpoint (and what else the run made so far) recorded with its proof in the folder's manifest: a run
        # killed later leaves it removable by the next --overwrite (no-op in a process that did not claim the folder)
        try:
            record_new(self.args.output_dir)
        except FairmtError:  # the manifest could not be written (a full disk): the run's end records it again
            pass
        return saved

    def train(self, resume_from_checkpoint: str | bool | None = None, *args: Any, **kwargs: Any):
        from fairmt.trainers.term_logging import numbers_in_progress

        numbers_in_progress(self)  # every fairmt Trainer: log lines print numbers, not quoted strings
        if resume_from_checkpoint is None and getattr(self.args, "resume_from_checkpoint", None):
            # a recipe's ``training.resume_from_checkpoint`` lands on the arguments, which the Trainer never reads
            # (only Hugging Face's example scripts do): honour it here, so the key is never silently ignored
            given = self.args.resume_from_checkpoint
            resume_from_checkpoint = True if str(given).lower() == "true" else given
        if resume_from_checkpoint is True:
            last = last_complete_checkpoint(self.args.output_dir)
            if last is None:
                raise FairmtError(
                    f"resume_from_checkpoint=True but {self.args.output_dir} holds no complete checkpoint"
                )
            root = Path(self.args.output_dir)
            for newer in _checkpoints(root) if root.is_dir() else []:
                if newer == last:
                    break
                print(
                    f"fairmt: {newer} cannot be resumed from ({checkpoint_problem(newer)}); resuming from {last}, "
                    "the last complete checkpoint",
                    flush=True,
                )
            resume_from_checkpoint = str(last)
        elif isinstance(resume_from_checkpoint, (str, os.PathLike)) and not checkpoint_complete(resume_from_checkpoint):
            if not Path(resume_from_checkpoint).is_dir():
                raise FairmtError(f"resume_from_checkpoint={resume_from_checkpoint}: no such checkpoint folder")
            earlier = [
                p
                for p in _checkpoints(Path(resume_from_checkpoint).parent)
                if p != Path(resume_from_checkpoint) and checkpoint_complete(p)
            ]
            raise FairmtError(
                f"checkpoint {resume_from_checkpoint} cannot be resumed from: {checkpoint_problem(resume_from_checkpoint)}"
                + (
                    f"; resume from {earlier[0]}, the last complete one (resume_from_checkpoint={earlier[0]})"
                    if earlier
                    else "; no complete checkpoint is left in its folder"
                )
            )
        # somebody else manages the collector (the count is a walk over the frozen objects: asked last)
        managed = _caller_manages_collector or not gc.isenabled() or gc.get_freeze_count() > 0
        if not managed:
            gc.freeze()  # garbage among the frozen objects waits for the first collection after the run
        try:
            return super().train(resume_from_checkpoint, *args, **kwargs)
        finally:
            if not managed:
                gc.unfreeze()
