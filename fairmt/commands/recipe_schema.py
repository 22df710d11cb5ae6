"""Validation of a recipe before any expensive work: unknown keys (with "did you mean"), the types and ranges of
``training.*`` (checked against the method's Config dataclass), so a typo fails in a second with the key named
instead of silently doing nothing or failing after the model has loaded. The checks themselves are
:mod:`fairmt.scripts.recipe_checks` (the recipe runners use them too); this module knows each method's schema."""

from __future__ import annotations

from fairmt.scripts.recipe_checks import COMMON_TOP, _check_keys, check_training

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
                 "utility_validation_size", "max_train_tuples", "eda"},
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
