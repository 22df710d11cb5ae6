"""What a classification run's ``results.json`` holds, by name, before any run (``fairmt sweep`` checks its
``--objective`` against these; :attr:`fairmt.recipes.Family.metrics`), and the recipe with the family's defaults
merged in (:attr:`fairmt.recipes.Family.sweep_reference`) whether a run's final model collapsed to chance
(:attr:`fairmt.recipes.Family.chance`) and whose paper its model card cites (:attr:`fairmt.recipes.Family.cites`)."""

from __future__ import annotations

import copy
from typing import Any


def _summary_keys() -> list[str]:
    """The numeric keys of :meth:`ClassificationResult.summary` (what the recipe writes as ``dev``/``test``), from
    the evaluator itself on a four-example stand-in, leakage included as the recipe computes it."""
    import numpy as np

    from fairmt.eval.classification import classification_metrics

    labels, groups = [0, 1, 0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 0, 0, 1, 1]
    hidden = np.eye(8, 4, dtype=np.float32)
    logits = np.eye(8, 2, dtype=np.float32)
    r = classification_metrics(
        labels,
        labels,
        groups,
        hidden=hidden,
        logits=logits,
        train_hidden=hidden,
        train_logits=logits,
        train_groups=groups,
        num_classes=2,
        seed=0,
    )
    return sorted(k for k, v in r.summary(percent=True).items() if isinstance(v, float))


def metric_patterns(config: dict[str, Any]) -> list[str]:
    """The dev/test summaries (:func:`fairmt.recipes.classification.runner`), the dev loss, the full test results
    and the run's information."""
    keys = _summary_keys()
    return [f"{split}.{k}" for split in ("dev", "test") for k in keys] + ["dev.loss", "test_full.*", "info.*"]


def reference_config(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe with the family's defaults merged in (the runner's ``resolve_config``, on a copy)."""
    from fairmt.recipes.classification.runner import resolve_config

    return resolve_config(copy.deepcopy(config))


def at_chance(results: dict[str, Any]) -> bool:
    """Whether a run's results say its final model collapsed to chance (the INLP baseline: ``info.inlp.at_chance``,
    :func:`fairmt.recipes.classification.runner._inlp_final`): its small gap is no fairness."""
    info = results.get("info")
    inlp = info.get("inlp") if isinstance(info, dict) else None
    return bool(isinstance(inlp, dict) and inlp.get("at_chance") is True)


def cited_method(results: dict[str, Any]) -> str | None:
    """The method whose paper a model card of the run cites: ``cscl`` or ``fcl`` by the run's objective (``cscl``,
    ``cscl_pretrain``, ``fcl``, ...); None for the baselines (CE, INLP, adversarial training, sampling's text
    variant, cited by its own recipe family)."""
    objective = str(results.get("objective") or "")
    return next((m for m in ("cscl", "fcl") if objective.startswith(m)), None)
