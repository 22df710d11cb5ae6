"""What a GACL run's ``results.json`` holds, by name, before any run (``fairmt sweep`` checks its ``--objective``
against these; :attr:`fairmt.recipes.Family.metrics`)."""

from __future__ import annotations

from typing import Any


def metric_patterns(config: dict[str, Any]) -> list[str]:
    """:func:`fairmt.recipes.gacl.runner.results`: the eval loss always, MT-GenEval where the recipe scores it."""
    out = ["dev.loss", "dev.loss_*", "dev.gc_*", "train.*", "selection.*"]
    geneval = config.get("geneval") or {}
    measures = ("accuracy", "explicit_accuracy", "delta_g")
    if geneval and geneval.get("split", "dev") == "dev":
        out += [f"dev.geneval_{m}" for m in measures]
    if geneval and geneval.get("test", True):
        out += [f"test.geneval_{m}" for m in measures] + ["test_data.*", "geneval.*"]
    if config.get("tiny_model"):  # fairmt.demo.tiny_before_after: the original's and the trained model's scores
        out += ["held_out_gender.n", "held_out_gender.before.*", "held_out_gender.after.*"]
    return out
