"""Evaluators: they score strings (translations, predictions) and vectors (embeddings) and never load a model.

Translations are made by :mod:`fairmt.translate`; translating a benchmark with a model and scoring it is
:mod:`fairmt.model_eval`. The embedding suites' encoder runners (:mod:`fairmt.eval.embedding.encode`) are the one
part of this package that runs a model: they turn a given encoder into the vectors the suites score.
"""
