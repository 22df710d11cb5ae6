"""What a GACL run's ``results.json`` holds, by name, before any run (``fairmt sweep`` checks its ``--objective``
against these; :attr:`fairmt.recipes.Family.metrics`)."""

from __future__ import annotations

from typing import Any


def metric_patterns(config: dict[str, Any]) -> list[str]:
    """:func:`fairmt.recipes.gacl.runner.results`: the eval loss always, MT-GenEval where the recipe scores it (read
    from the typed recipe, as the runner reads it)."""
    from fairmt.recipes.gacl.schema import typed_recipe

    recipe = typed_recipe(config)
    out = ["dev.loss", "dev.loss_*", "dev.gc_*", "train.*", "selection.*"]
    geneval = recipe.geneval
    measures = ("accuracy", "explicit_accuracy", "delta_g")
    if geneval is not None and geneval.split == "dev":
        out += [f"dev.geneval_{m}" for m in measures]
    if geneval is not None and geneval.test:
        out += [f"test.geneval_{m}" for m in measures] + ["test_data.*", "geneval.*"]
    if recipe.tiny_model is not None:  # tiny_before_after (fairmt.recipes.gacl.tiny): the original's and the trained
        out += ["held_out_gender.n", "held_out_gender.before.*", "held_out_gender.after.*"]  # model's scores
    return out
