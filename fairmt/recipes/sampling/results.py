"""What a sampling run's ``results.json`` holds, by name, before any run (``fairmt sweep`` checks its
``--objective`` against these; :attr:`fairmt.recipes.Family.metrics`), and whose paper its model card cites
(:attr:`fairmt.recipes.Family.cites`)."""

from __future__ import annotations

from typing import Any


def metric_patterns(config: dict[str, Any]) -> list[str]:
    """:mod:`fairmt.recipes.sampling.runner`: the stage-2 summary, then every stage's full results."""
    probe = [f"probe.*.{m}" for m in ("accuracy", "f1", "auc_roc", "gap", "delta_eo")]
    return ["dominance", "entropy", "separation", *probe, "stages.*", "n", "clusters.*", "stage_info.*"]


def cited_method(results: dict[str, Any]) -> str | None:
    """``sampling`` for a fairness-driven run; None for the SimCLR baseline (random sampling is not the method)."""
    return None if results.get("objective") in (None, "simclr") else "sampling"
