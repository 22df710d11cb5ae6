"""The ``ccd`` family's registration (:mod:`fairmt.recipes`): CCD and the CCD paper's two baselines."""

from typing import Any

from fairmt.eval.reporting.formats import WORD_DEBIAS_RESULTS
from fairmt.recipes._family import Family

_CHECKS = "fairmt.recipes.ccd.checks"
# the run folder and the training seed: output_dir and seed (training.output_dir and training.seed, the older places,
# still read; a sweep sets both)
_SHARED: dict[str, Any] = dict(
    folder="ccd",
    output_key="output_dir",
    also_output_keys=("training.output_dir",),
    seed_key="seed",
    also_seed_keys=("training.seed",),
    results_key="results",
    results_format=WORD_DEBIAS_RESULTS,
    report_table="embeddings",
    model_dirs=("final",),
    needs=f"{_CHECKS}:needs",
    preflight=f"{_CHECKS}:findings",
)

FAMILIES = (
    Family(
        method="ccd",
        schema="fairmt.recipes.ccd.schema:CcdRecipe",
        runner="fairmt.recipes.ccd.runner",
        summary="CCD debiasing of a sentence encoder, with embedding-bias measurements before and after",
        results_file="ccd_results.json",
        dry_summary=f"{_CHECKS}:summarize",
        metrics="fairmt.recipes.ccd.results:ccd_metric_patterns",
        **_SHARED,
    ),
    Family(
        method="dpce",
        schema="fairmt.recipes.ccd.schema:DpceRecipe",
        runner="fairmt.recipes.ccd.dpce",
        summary="DPCE debiasing of a sentence encoder (the CCD paper's baseline)",
        results_file="dpce_results.json",
        metrics="fairmt.recipes.ccd.results:baseline_metric_patterns",
        **_SHARED,
    ),
    Family(
        method="adept",
        schema="fairmt.recipes.ccd.schema:AdeptRecipe",
        runner="fairmt.recipes.ccd.adept",
        summary="ADEPT-F debiasing of a sentence encoder (the CCD paper's baseline)",
        results_file="adept_results.json",
        metrics="fairmt.recipes.ccd.results:baseline_metric_patterns",
        **_SHARED,
    ),
)
