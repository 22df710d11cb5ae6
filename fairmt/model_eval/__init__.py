"""Scoring a model: the one place where translating (:mod:`fairmt.translate`) and scoring (:mod:`fairmt.eval`)
meet. The ``fairmt eval`` commands given a ``--model`` and ``fairmt eval mt-bias`` go through
:mod:`fairmt.model_eval.benchmarks`; the recipes' early stopping through :mod:`fairmt.model_eval.callbacks`
(imported on its own: it needs transformers); the embedding bias suite on a model through
:mod:`fairmt.model_eval.embeddings` (``fairmt eval embeddings``, ``fairmt.evaluate_embeddings``, the
sentence-transformers evaluators of :mod:`fairmt.integrations`) and the GACL paper's whole evaluation through
:mod:`fairmt.model_eval.mt_bias` (``fairmt eval mt-bias``, ``fairmt.evaluate_mt_bias``)."""

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
