"""The ``ccd`` family's registration (:mod:`fairmt.recipes`): CCD and the CCD paper's two baselines."""

from fairmt.recipes._family import Family

FAMILIES = (
    Family(method="ccd", folder="ccd", schema="fairmt.recipes.ccd.schema:CcdRecipe",
           runner="fairmt.recipes.ccd.runner",
           summary="CCD debiasing of a sentence encoder, with embedding-bias measurements before and after"),
    Family(method="dpce", folder="ccd", schema="fairmt.recipes.ccd.schema:DpceRecipe",
           runner="fairmt.recipes.ccd.dpce", summary="DPCE debiasing of a sentence encoder (the CCD paper's baseline)"),
    Family(method="adept", folder="ccd", schema="fairmt.recipes.ccd.schema:AdeptRecipe",
           runner="fairmt.recipes.ccd.adept",
           summary="ADEPT-F debiasing of a sentence encoder (the CCD paper's baseline)"),
)
