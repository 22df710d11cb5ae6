"""The ``sampling`` family's registration (:mod:`fairmt.recipes`)."""

from fairmt.eval.reporting.formats import SAMPLING_RESULTS
from fairmt.recipes._family import Family

FAMILIES = (
    Family(
        method="sampling",
        folder="sampling",
        schema="fairmt.recipes.sampling.schema:SamplingRecipe",
        runner="fairmt.recipes.sampling.runner",
        summary="fairness-driven sampling on images (Martin & Ogbuokiri): SimCLR, K-means, Algorithm 1, probes",
        # the seed and the run folder are top-level keys (the stage sections refuse them); the sweep's objective
        # is the stage-2 summary the runner writes at the top of results.json
        output_key="output_dir",
        seed_key="seed",
        results_format=SAMPLING_RESULTS,
        report_table="probe",
        model_dirs=("stage2/model",),
        objectives=(("dominance", "minimize"),),
        needs="fairmt.recipes.sampling.checks:needs",
        preflight="fairmt.recipes.sampling.checks:findings",
        metrics="fairmt.recipes.sampling.results:metric_patterns",
        cites="fairmt.recipes.sampling.results:cited_method",
    ),
)
