"""The ``gacl`` family's registration (:mod:`fairmt.recipes`)."""

from fairmt.eval.reporting.formats import GACL_RESULTS
from fairmt.recipes._family import Family

FAMILIES = (
    Family(
        method="gacl",
        folder="gacl",
        schema="fairmt.recipes.gacl.schema:GaclRecipe",
        runner="fairmt.recipes.gacl.runner",
        summary="GACL (+ KD) fine-tuning of a translation model (Lee et al. 2023)",
        output_key="output_dir",
        also_output_keys=("training.output_dir",),
        seed_key="seed",
        also_seed_keys=("training.seed",),
        results_format=GACL_RESULTS,
        report_table="mt",
        model_dirs=(".",),
        needs="fairmt.recipes.gacl.checks:needs",
        preflight="fairmt.recipes.gacl.checks:findings",
        dry_summary="fairmt.recipes.gacl.checks:summarize",
        metrics="fairmt.recipes.gacl.results:metric_patterns",
    ),
)
