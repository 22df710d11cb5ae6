"""The ``classification`` family's registration (:mod:`fairmt.recipes`)."""

from fairmt.recipes._family import Family

FAMILIES = (
    Family(method="classification", folder="classification",
           schema="fairmt.recipes.classification.schema:ClassificationRecipe",
           runner="fairmt.recipes.classification.runner",
           summary="fair text classification: CSCL, FCL, fairness-driven sampling, adversarial and INLP baselines"),
)
