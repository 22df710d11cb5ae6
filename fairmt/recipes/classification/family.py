"""The ``classification`` family's registration (:mod:`fairmt.recipes`)."""

from fairmt.eval.reporting.formats import CLASSIFICATION_RESULTS
from fairmt.recipes._family import Family

FAMILIES = (
    Family(
        method="classification",
        folder="classification",
        schema="fairmt.recipes.classification.schema:ClassificationRecipe",
        runner="fairmt.recipes.classification.runner",
        summary="fair text classification: CSCL, FCL, fairness-driven sampling, adversarial and INLP baselines",
        # the run's folder and seed are top-level keys; training.output_dir names the same folder
        output_key="output_dir",
        also_output_keys=("training.output_dir",),
        seed_key="seed",
        results_format=CLASSIFICATION_RESULTS,
        report_table="classification",
        model_dirs=("model",),
        objectives=(("dev.accuracy", "maximize"), ("dev.gap", "minimize")),
        needs="fairmt.recipes.classification.checks:needs",
        preflight="fairmt.recipes.classification.checks:findings",
        metrics="fairmt.recipes.classification.results:metric_patterns",
        sweep_reference="fairmt.recipes.classification.results:reference_config",
        chance="fairmt.recipes.classification.results:at_chance",
        cites="fairmt.recipes.classification.results:cited_method",
    ),
)
