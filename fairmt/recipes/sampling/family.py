"""The ``sampling`` family's registration (:mod:`fairmt.recipes`)."""

from fairmt.recipes._family import Family

FAMILIES = (
    Family(method="sampling", folder="sampling", schema="fairmt.recipes.sampling.schema:SamplingRecipe",
           runner="fairmt.recipes.sampling.runner",
           summary="fairness-driven sampling on images (Martin & Ogbuokiri): SimCLR, K-means, Algorithm 1, probes"),
)
