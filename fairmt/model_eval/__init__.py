"""Scoring a model: the one place where translating (:mod:`fairmt.translate`) and scoring (:mod:`fairmt.eval`)
meet. The ``fairmt eval`` commands given a ``--model`` and ``fairmt eval mt-bias`` go through
:mod:`fairmt.model_eval.benchmarks`; the recipes' early stopping through :mod:`fairmt.model_eval.callbacks`
(imported on its own: it needs transformers)."""

from fairmt.model_eval.benchmarks import (
    evaluate_flores,
    evaluate_geneval,
    translate_geneval,
    translate_geneval_context,
    translate_suite,
    translate_winomt,
)

__all__ = [
    "evaluate_flores", "evaluate_geneval", "translate_geneval", "translate_geneval_context", "translate_suite",
    "translate_winomt",
]  # fmt: skip
