"""Embedding bias suite: SEAT, CrowS-Pairs, StereoSet, CCED and Bias-IR.

Evaluators (:mod:`.seat`, :mod:`.crows`, :mod:`.stereoset`, :mod:`.cced`, :mod:`.bias_ir`) work on texts,
embeddings and scores only; :mod:`.encode` holds the thin runners that load a model and produce them. Importing
this package imports neither torch nor transformers.
"""

from fairmt.eval.embedding.bias_ir import BiasIRResult, bias_ir_score, load_bias_ir
from fairmt.eval.embedding.cced import CCEDResult, cced_gap, cced_score, load_tuples
from fairmt.eval.embedding.crows import CrowsResult, crows_score, load_crows_pairs
from fairmt.eval.embedding.seat import SeatResult, load_seat_test, seat_score
from fairmt.eval.embedding.stereoset import StereoSetResult, load_predictions, load_stereoset, stereoset_score

__all__ = [
    "BiasIRResult",
    "CCEDResult",
    "CrowsResult",
    "SeatResult",
    "StereoSetResult",
    "bias_ir_score",
    "cced_gap",
    "cced_score",
    "crows_score",
    "load_bias_ir",
    "load_crows_pairs",
    "load_predictions",
    "load_seat_test",
    "load_stereoset",
    "load_tuples",
    "seat_score",
    "stereoset_score",
]
