"""A fairness term that never worked is not a run that worked: :class:`DeadTermCallback` watches the logged value
of a trainer's fairness term (CCD's ``loss_bias``, GACL's ``loss_gc``) and says when it is zero.

A term whose logged value is 0 has no gradient: CCD's kernel ``exp(-d²/2ρ²)`` saturates when ρ is far below the
group-to-neutral distances, and then ``L_bias`` and its gradient are 0 while ``L_rep`` trains the encoder alone. A
saturating kernel need not reach 0 exactly: the term decays to 1e-5 or so and stays there. The rule, per training log:

* **dead** when ``|term| < tol`` (absolute, default 1e-6: a term that is 0 from the first step), or
* ``|term| < rel × reference`` (relative, default ``rel`` = 1e-3), ``reference`` being the largest ``|term|`` of the
  first ``first_logs`` (default 3) training logs: a term that fell three orders of magnitude below its first steps'
  value. A term that works moves by far less (CCD's ``L_bias`` on MiniLM, ρ = median: within a factor of ~10 over an
  epoch; GACL's contrastive loss cannot fall below its in-batch floor). A term that was satisfied that well would
  be flagged too, and the warning says both readings. The callback logs ONE warning line in the progress stream the
  first time it sees a zero log, and at the end of training, when the term was zero in at least ``share`` of the
  training logs, a loud warning; its
:meth:`DeadTermCallback.summary` (``{"term", "logs", "zero_logs", "dead"}``) goes into the results JSON
(``results["train"]["fairness_term"]`` of the CCD recipes).
"""

from __future__ import annotations

import logging

from transformers import TrainerCallback

logger = logging.getLogger(__name__)


class DeadTermCallback(TrainerCallback):
    """Count the training logs in which the fairness term ``key`` was dead (0, or fallen under ``rel`` × its first
    steps' value: the module docstring's rule); warn once when the first one is seen and loudly at the end when at
    least ``share`` of them were. ``fix``: the remedy the warnings name."""

    def __init__(
        self, key: str, fix: str, tol: float = 1e-6, share: float = 0.5, rel: float = 1e-3, first_logs: int = 3
    ):
        self.key, self.fix, self.tol, self.share, self.rel, self.first_logs = key, fix, tol, share, rel, first_logs
        self.logs = 0
        self.zero_logs = 0
        self.reference = 0.0  # the largest |term| of the first `first_logs` training logs
        self._said = False

    def is_dead(self, value: float) -> str | None:
        """Why a logged value counts as dead (the module docstring's rule), or None."""
        v = abs(float(value))
        if v < self.tol:
            return "0"
        if v < self.rel * self.reference:
            return f"under {self.rel:g} × its first steps' value {self.reference:.3g}"
        return None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or self.key not in logs or any(k.startswith("eval_") for k in logs):
            return
        self.logs += 1
        value = float(logs[self.key])
        if self.logs <= self.first_logs:
            self.reference = max(self.reference, abs(value))
        why = self.is_dead(value)
        if why:
            self.zero_logs += 1
            if not self._said and state.is_world_process_zero:
                self._said = True
                logger.warning(
                    "%s = %g at step %d (%s): the fairness term has no gradient, or none left (training "
                    "goes on with the other terms only); %s",
                    self.key,
                    value,
                    state.global_step,
                    why,
                    self.fix,
                )

    @property
    def dead(self) -> bool:
        """True when the term was zero in at least ``share`` of the training logs."""
        return self.logs > 0 and self.zero_logs >= self.share * self.logs

    def summary(self) -> dict:
        """``{"term", "logs", "zero_logs", "dead"}`` (for a results JSON)."""
        return {"term": self.key, "logs": self.logs, "zero_logs": self.zero_logs, "dead": self.dead}

    def on_train_end(self, args, state, control, **kwargs):
        if self.dead and state.is_world_process_zero:
            logger.warning(
                "FAIRNESS TERM DEAD: %s was 0 (under %g, or under %g × its first steps' value %.3g) in "
                "%d of %d training logs, so this run did not debias (it trained the other terms only, or "
                "the term was satisfied from the first steps on); %s",
                self.key,
                self.tol,
                self.rel,
                self.reference,
                self.zero_logs,
                self.logs,
                self.fix,
            )


__all__ = ["DeadTermCallback"]
