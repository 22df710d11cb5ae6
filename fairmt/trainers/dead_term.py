"""A fairness term that never worked is not a run that worked: :class:`DeadTermCallback` watches the logged value
of a trainer's fairness term (CCD's ``loss_bias``, GACL's ``loss_gc``) and says when it is zero.

A term whose logged value is 0 (below ``tol``) has no gradient: CCD's kernel ``exp(-d²/2ρ²)`` saturates when ρ is
far below the group-to-neutral distances, and then ``L_bias`` and its gradient are 0 while ``L_rep`` trains the
encoder alone. The callback logs ONE warning line in the progress stream the first time it sees a zero log, and at
the end of training, when the term was zero in at least ``share`` of the training logs, a loud warning; its
:meth:`DeadTermCallback.summary` (``{"term", "logs", "zero_logs", "dead"}``) goes into the results JSON
(``results["train"]["fairness_term"]`` of the CCD recipes).
"""

from __future__ import annotations

import logging

from transformers import TrainerCallback

logger = logging.getLogger(__name__)


class DeadTermCallback(TrainerCallback):
    """Count the training logs in which the fairness term ``key`` was (numerically) zero; warn once when the first
    one is seen and loudly at the end when at least ``share`` of them were. ``fix``: the remedy the warnings name."""

    def __init__(self, key: str, fix: str, tol: float = 1e-6, share: float = 0.5):
        self.key, self.fix, self.tol, self.share = key, fix, tol, share
        self.logs = 0
        self.zero_logs = 0
        self._said = False

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or self.key not in logs or any(k.startswith("eval_") for k in logs):
            return
        self.logs += 1
        if abs(float(logs[self.key])) < self.tol:
            self.zero_logs += 1
            if not self._said and state.is_world_process_zero:
                self._said = True
                logger.warning("%s = %g at step %d: the fairness term has no gradient (training goes on with the "
                               "other terms only); %s", self.key, float(logs[self.key]), state.global_step, self.fix)

    @property
    def dead(self) -> bool:
        """True when the term was zero in at least ``share`` of the training logs."""
        return self.logs > 0 and self.zero_logs >= self.share * self.logs

    def summary(self) -> dict:
        """``{"term", "logs", "zero_logs", "dead"}`` (for a results JSON)."""
        return {"term": self.key, "logs": self.logs, "zero_logs": self.zero_logs, "dead": self.dead}

    def on_train_end(self, args, state, control, **kwargs):
        if self.dead and state.is_world_process_zero:
            logger.warning("FAIRNESS TERM DEAD: %s was 0 in %d of %d training logs, so this run did not debias "
                           "(it trained the other terms only); %s", self.key, self.zero_logs, self.logs, self.fix)


__all__ = ["DeadTermCallback"]
