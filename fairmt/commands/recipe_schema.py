"""Validation of a recipe before any expensive work: unknown keys (with "did you mean"), the types and ranges of
``training.*`` (checked against the method's Config dataclass), so a typo fails in a second with the key named
instead of silently doing nothing or failing after the model has loaded."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any

from fairmt.errors import FairmtError

COMMON_TOP = {"method", "recipe_path", "overwrite"}

# recipe-level keys per method (and the keys of their nested sections; None: free-form, e.g. PEFT's LoraConfig)
SCHEMAS: dict[str, dict[str, set[str] | None]] = {
    "gacl": {
        "top": {"model", "src_lang", "tgt_lang", "family", "data", "training", "peft", "geneval",
                "resume_from_checkpoint", "tiny_model"},
        "data": {"train", "eval", "split", "eval_split", "max_length", "balance", "max_train_samples",
                 "max_eval_samples", "eval_fraction", "prepare", "target_gender_words"},
        "geneval": {"lang", "split", "max_pairs", "metric", "num_beams", "patience", "batch_size"},
        "tiny_model": {"pretrain_steps", "seed"},
        "peft": None,
    },
    "ccd": {
        "top": {"model", "data", "training", "peft", "evaluation", "results", "utility"},
        "data": {"tuples", "cda_source", "groups", "seed", "eval_size", "test_size", "utility_size",
                 "max_train_tuples"},
        "peft": None,
        "evaluation": None,
    },
}
# the CCD paper's baselines DPCE and ADEPT-F (fairmt.scripts._word_debias)
for _m in ("dpce", "adept"):
    SCHEMAS[_m] = {
        "top": {"model", "data", "training", "peft", "evaluation", "results", "utility"},
        "data": {"corpus", "lexicon", "words", "max_per_word", "max_sentences", "eval_size", "test_size", "seed"},
        "evaluation": {"suites", "pooling", "normalize", "seat_tests", "seat_n_samples", "batch_size"},
        "peft": None,
    }

# lower bounds of common numeric training options (inclusive unless noted)
_RANGES = {
    "learning_rate": (0.0, False), "per_device_train_batch_size": (1, True), "per_device_eval_batch_size": (1, True),
    "gradient_accumulation_steps": (1, True), "num_train_epochs": (0.0, False), "warmup_steps": (0, True),
    "weight_decay": (0.0, True), "logging_steps": (0.0, False), "eval_steps": (0.0, False), "save_steps": (0.0, False),
}


def _suggest(key: str, known: set[str]) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _check_keys(section: dict, known: set[str], where: str) -> None:
    for key in section:
        if key not in known:
            raise FairmtError(f"unknown recipe key {where}{key}{_suggest(key, known)}")


def _type_ok(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(_type_ok(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True  # lists, dicts, enums, Literal...: left to the Config itself


def _hint_name(hint: Any) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args:
        return " or ".join(getattr(a, "__name__", str(a)) for a in args)
    return getattr(hint, "__name__", str(hint))


def check_training(training: dict, config_classes: list[type], section: str = "training") -> None:
    """``<section>.*`` keys (``training`` by default) exist in one of ``config_classes`` and have its field's type;
    common ranges hold."""
    hints: dict[str, Any] = {}
    for cls in config_classes:
        for f in dataclasses.fields(cls):
            hints.setdefault(f.name, typing.get_type_hints(cls).get(f.name, Any))
    _check_keys(training, set(hints), f"{section}.")
    for key, value in training.items():
        if not _type_ok(value, hints[key]):
            raise FairmtError(
                f"recipe key {section}.{key} must be {_hint_name(hints[key])}, got {value!r} ({type(value).__name__})")
        if key in _RANGES and isinstance(value, (int, float)) and not isinstance(value, bool):
            low, inclusive = _RANGES[key]
            if value < low or (value == low and not inclusive):
                raise FairmtError(f"recipe key {section}.{key} must be {'≥' if inclusive else '>'} {low}, got {value}")


def validate_recipe(config: dict) -> None:
    """Check a loaded recipe (overrides applied) against its method's schema; raise FairmtError naming the key."""
    method = config.get("method")
    if method == "gacl":
        from fairmt.trainers.gacl import GACLConfig

        classes = [GACLConfig]
    elif method == "ccd":
        from fairmt.trainers.ccd import CCDConfig

        classes = [CCDConfig]
    elif method == "dpce":
        from fairmt.trainers.dpce import DPCEConfig

        classes = [DPCEConfig]
    elif method == "adept":
        from fairmt.trainers.adept import ADEPTConfig

        classes = [ADEPTConfig]
    elif method == "classification":
        from fairmt.scripts.classification import DEFAULTS
        from fairmt.trainers.adversarial import AdversarialConfig
        from fairmt.trainers.fair_contrastive import FairContrastiveConfig
        from fairmt.trainers.sampling import FairnessSamplingConfig

        _check_keys(config, set(DEFAULTS) | COMMON_TOP, "")
        for section, defaults in DEFAULTS.items():
            if isinstance(defaults, dict) and section not in ("training", "objective_args", "stage2") and \
                    isinstance(config.get(section), dict):
                _check_keys(config[section], set(defaults), f"{section}.")
        classes = [FairContrastiveConfig, FairnessSamplingConfig, AdversarialConfig]
        for section in ("training", "stage2", "objective_args"):
            if isinstance(config.get(section), dict):
                check_training(config[section], classes, section)
        return
    elif method == "sampling":
        from fairmt.scripts.sampling import validate

        validate(config)
        return
    else:
        return  # a method without a schema: its own main() checks
    schema = SCHEMAS[method]
    _check_keys(config, schema["top"] | COMMON_TOP, "")
    for section, keys in schema.items():
        if section != "top" and keys is not None and isinstance(config.get(section), dict):
            _check_keys(config[section], keys, f"{section}.")
    if isinstance(config.get("training"), dict):
        check_training(config["training"], classes)
