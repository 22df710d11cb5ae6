"""The declared ``format`` of every JSON fairmt writes, so ``fairmt report`` (and anything else) can tell them apart.

Each writer puts ``"format": <one of these>`` at the top of its JSON; the version after the slash changes when the
layout does. ``fairmt eval mt-bias`` wrote ``"format": 1`` before the others had one and keeps it
(:data:`MT_BIAS`, :data:`fairmt.eval.mtbias.FORMAT_VERSION`).
"""

from __future__ import annotations

MT_BIAS = 1  # `fairmt eval mt-bias --json` (fairmt.eval.mtbias.FORMAT_VERSION)
WINOMT = "fairmt-winomt/1"  # `fairmt eval winomt --json`
GENEVAL = "fairmt-geneval/1"  # `fairmt eval geneval --json`
TRANSLATION = "fairmt-translation/1"  # `fairmt eval flores --json` (spBLEU, chrF++)
EMBEDDINGS = "fairmt-embeddings/1"  # `fairmt eval embeddings --json`
STEREOSET = "fairmt-stereoset/1"  # `fairmt eval stereoset --json`
CLASSIFICATION = "fairmt-classification/1"  # `fairmt eval classification --json`
LINEAR_PROBE = "fairmt-linear-probe/1"  # `fairmt eval linear-probe --json`
GACL_RESULTS = "fairmt-gacl-results/1"  # results.json of a GACL recipe
WORD_DEBIAS_RESULTS = "fairmt-embedding-debias-results/1"  # <method>_results.json of a CCD, DPCE or ADEPT recipe
CLASSIFICATION_RESULTS = "fairmt-classification-results/1"  # results.json of a classification recipe
SAMPLING_RESULTS = "fairmt-sampling-results/1"  # results.json of a fairness-driven-sampling recipe
SWEEP = "fairmt-sweep/1"  # sweep.json of `fairmt sweep`

ALL = {
    WINOMT: "fairmt eval winomt --json",
    GENEVAL: "fairmt eval geneval --json",
    TRANSLATION: "fairmt eval flores --json",
    EMBEDDINGS: "fairmt eval embeddings --json",
    STEREOSET: "fairmt eval stereoset --json",
    CLASSIFICATION: "fairmt eval classification --json",
    LINEAR_PROBE: "fairmt eval linear-probe --json",
    GACL_RESULTS: "a GACL recipe's results.json",
    WORD_DEBIAS_RESULTS: "a CCD/DPCE/ADEPT recipe's results JSON",
    CLASSIFICATION_RESULTS: "a classification recipe's results.json",
    SAMPLING_RESULTS: "a sampling recipe's results.json",
    SWEEP: "fairmt sweep's sweep.json",
}
"""Every declared format (besides :data:`MT_BIAS`) and what writes it."""


def declared(data: dict, fmt: str) -> dict:
    """``data`` with ``"format": fmt`` first (the writers' one way of declaring it)."""
    return {"format": fmt, **{k: v for k, v in data.items() if k != "format"}}
