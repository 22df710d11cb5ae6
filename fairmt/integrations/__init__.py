"""fairmt inside other libraries' training loops.

* sentence-transformers: :class:`SEATEvaluator`, :class:`CCEDEvaluator`, :class:`BiasIREvaluator` — subclasses of
  its ``SentenceEvaluator`` for ``SentenceTransformerTrainer(evaluator=...)`` or ``model.evaluate``; the numbers of
  ``fairmt eval embeddings`` on the same model and settings (:mod:`fairmt.integrations.st_evaluators`).
* sentence-transformers: :class:`CCDLoss` — a loss for ``SentenceTransformerTrainer(loss=...)`` that wraps the
  user's own loss and adds CCD's debiasing term on tuples (:mod:`fairmt.integrations.st_losses`), beside the Trainer
  swap :class:`fairmt.trainers.ccd.CCDTrainer`.
* transformers: :class:`GenEvalCallback` — MT-GenEval accuracy, explicit accuracy and ΔG on the dev split at every
  evaluation of any ``Seq2SeqTrainer``, in the Trainer's metrics (``metric_for_best_model``); it lives in
  :mod:`fairmt.model_eval.callbacks`.

The names import on first use (sentence-transformers or transformers only then).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "SEATEvaluator": "fairmt.integrations.st_evaluators",
    "CCEDEvaluator": "fairmt.integrations.st_evaluators",
    "BiasIREvaluator": "fairmt.integrations.st_evaluators",
    "CCDLoss": "fairmt.integrations.st_losses",
    "GenEvalCallback": "fairmt.model_eval.callbacks",
}

__all__ = sorted(_LAZY)

if TYPE_CHECKING:  # pragma: no cover - `X as X`: re-exported (PEP 484)
    from fairmt.integrations.st_evaluators import BiasIREvaluator as BiasIREvaluator
    from fairmt.integrations.st_evaluators import CCEDEvaluator as CCEDEvaluator
    from fairmt.integrations.st_evaluators import SEATEvaluator as SEATEvaluator
    from fairmt.integrations.st_losses import CCDLoss as CCDLoss
    from fairmt.model_eval.callbacks import GenEvalCallback as GenEvalCallback


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fairmt.integrations' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
