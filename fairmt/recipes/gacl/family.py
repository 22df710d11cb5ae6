"""The ``gacl`` family's registration (:mod:`fairmt.recipes`)."""

from fairmt.recipes._family import Family

FAMILIES = (
    Family(method="gacl", folder="gacl", schema="fairmt.recipes.gacl.schema:GaclRecipe",
           runner="fairmt.recipes.gacl.runner",
           summary="GACL (+ KD) fine-tuning of a translation model (Lee et al. 2023)"),
)
