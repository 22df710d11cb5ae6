"""WinoMT (Stanovsky, Smith & Zettlemoyer, ACL 2019): gender bias of MT systems on professions in coreference.

``evaluate_winomt(translations, "de", compat="acl2019")`` aligns the English source to the translation with a
NumPy re-implementation of fast_align (:mod:`.align`), finds the translated profession (:mod:`.profession`),
detects its grammatical gender with a per-language detector (:mod:`.detectors`, pluggable with
:func:`register_detector`) and scores it (:mod:`.metrics`): accuracy, ΔG (Acc_male − Acc_female), ΔG_F1, ΔS, ΔR,
per-gender precision/recall/F1.
"""

from fairmt.eval.winomt.align import Aligner, EflomalAligner, ExternalFastAlign, FastAlign, get_aligner
from fairmt.eval.winomt.detectors import (
    GenderDetector,
    SpacyDetector,
    StanzaDetector,
    available_languages,
    get_detector,
    register_detector,
)
from fairmt.eval.winomt.evaluate import WinoMTGold, WinoMTResult, evaluate_winomt, load_gold, predict_genders
from fairmt.eval.winomt.io import Gender, GoldEntry, read_2019_log, read_gold, read_translations
from fairmt.eval.winomt.metrics import score

__all__ = [
    "Aligner", "EflomalAligner", "ExternalFastAlign", "FastAlign", "Gender", "GenderDetector", "GoldEntry",
    "SpacyDetector", "StanzaDetector", "WinoMTGold", "WinoMTResult", "available_languages", "evaluate_winomt",
    "get_aligner", "get_detector", "load_gold", "predict_genders", "read_2019_log", "read_gold",
    "read_translations", "register_detector", "score",
]  # fmt: skip
