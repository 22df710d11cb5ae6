"""Hugging Face ``evaluate`` metric modules shipped inside fairmt, loadable offline:

>>> import evaluate, fairmt
>>> winomt = evaluate.load(fairmt.evaluate_module("winomt"))

Each module's ``compute`` calls the same fairmt evaluator as the CLI and returns the same numbers and signature. As
every ``evaluate`` metric, each also takes ``add`` / ``add_batch`` then ``compute()``, with the same numbers as one
``compute`` on everything; the per-example inputs that are not ``evaluate`` features (``groups``, ``hidden``,
``logits``, ``scores`` of ``classification_fairness``, ``counterfactual_references`` of ``mt_geneval``, ``sources``
of ``winomt``) come with each batch (:mod:`fairmt.evaluate_modules._batches`).
"""

from __future__ import annotations

from pathlib import Path

MODULES = ("winomt", "mt_geneval", "flores", "cced", "classification_fairness")


def evaluate_module(name: str) -> str:
    """The local path of fairmt's ``evaluate`` module ``name`` (one of :data:`MODULES`), for ``evaluate.load``."""
    from fairmt.errors import FairmtError

    if name not in MODULES:
        raise FairmtError(f"unknown fairmt evaluate module {name!r}; choose one of {', '.join(MODULES)}")
    return str(Path(__file__).resolve().parent / name)
