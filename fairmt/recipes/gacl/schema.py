"""The schema of the ``gacl`` recipe family: GACL (+ KD) fine-tuning of a translation model (Lee et al. 2023)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator, model_validator

from fairmt.errors import FairmtError
from fairmt.eval.geneval import GENEVAL_MAX_NEW_TOKENS
from fairmt.recipes._schema import (
    GACL_CONFIG,
    LORA_CONFIG,
    Count,
    D,
    Recipe,
    Section,
    Seed,
    Share,
    Text,
    _must,
    _trainer_section,
    trainer_doc,
)

DEFAULT_EVAL_FRACTION = 0.05
"""The held-out share of a run that evaluates and names neither ``data.eval`` nor ``data.eval_fraction``."""

GENEVAL_TRAINING: dict[str, Any] = {
    "eval_strategy": "steps",
    "eval_steps": 100,
    "greater_is_better": True,
    "load_best_model_at_end": True,
}
"""The Trainer settings a ``geneval`` section brings where ``training`` leaves them out: evaluate every 100 steps,
keep the best checkpoint by the MT-GenEval measure and restore it at the end (``save_steps`` defaults to
``eval_steps``, ``metric_for_best_model`` to ``geneval_<geneval.metric>``)."""

# ---------------------------------------------------------------------------------------------- gacl


class GaclData(Section):
    """The parallel data of a GACL run and how it is prepared."""

    train: Text = D(description="the training pairs: a JSONL / TSV file or a Hugging Face dataset name")
    eval: Text | None = D(
        None,
        description="a plain parallel dev set (e.g. newstest): MT loss and generation metrics "
        "on all its rows; replaces eval_fraction (null: none)",
    )
    split: Text = D("train", description="the split of data.train read when it is a dataset")
    eval_split: Text = D("validation", description="the split of data.eval read when it is a dataset")
    max_length: Count = D(128, description="tokens kept per source / target sentence (longer ones are truncated)")
    balance: bool = D(True, description="balance the genders of the prepared pairs (prepare gacl / gfst)")
    max_train_samples: Count | None = D(
        None, description="keep the first N training pairs before preparing them (null: all)"
    )
    max_eval_samples: Count | None = D(None, description="keep the first N rows of data.eval (null: all)")
    eval_fraction: Share | None = D(
        None,
        description="held-out share of the prepared training data for the "
        "evaluation loss (0: none; null: "
        f"{DEFAULT_EVAL_FRACTION} when the run evaluates, else none)",
    )
    prepare: Literal["gacl", "gfst", "plain"] = D(
        "gacl",
        description="gacl: one-gender sources, balanced, with counterfactuals (Lee et al. 2023, §3.1); gfst: "
        "GFST's target-side gender filtering (Choubey et al. 2021); plain: every pair as given",
    )
    lexicon: Literal["fairmt", "zhao2018"] = D(
        "fairmt",
        description="whose English word list finds one-gender sources and swaps them for prepare: gacl: "
        "fairmt (its own lexicon, fairmt.data.lexicon) or zhao2018 (Zhao et al. 2018's WinoBias "
        "lists, the GACL paper's; `fairmt data download lexicons`)",
    )
    target_gender_words: dict[Literal["male", "female"], list[Text]] | None = D(
        None,
        description="the target-language words that mark a gender for prepare: gfst, {male: [...], female: "
        "[...]} (null: the built-in German list for de)",
    )
    seed: Seed = D(
        42,
        description="the seed of the balancing subsample and of the eval_fraction split — not "
        "training.seed, so a sweep's seeds share one dev set (default 42, transformers' "
        "default training seed)",
        json_schema_extra=_must(
            "an integer in [0, 2**32): the seed of the balancing subsample and of the "
            "eval_fraction split — not training.seed, so a sweep's seeds share one "
            "dev set (default 42, transformers' default training seed)"
        ),
    )


class GaclGeneval(Section):
    """Early stopping on MT-GenEval dev (the best checkpoint restored at the end), then a score on its test split."""

    lang: Text | None = D(None, description="the MT-GenEval target language (null: tgt_lang)")
    split: Literal["dev", "test"] = D("dev", description="the MT-GenEval split checkpoints are selected on")
    max_pairs: Count | None = D(None, description="score only the first N MT-GenEval pairs (null: all)")
    metric: Literal["explicit_accuracy", "accuracy"] = D(
        "explicit_accuracy",
        description="the MT-GenEval measure checkpoints are selected by (explicit_accuracy: "
        "the released code's choice)",
    )
    num_beams: Count = D(5, description="beam size of the MT-GenEval translations (5: the paper's beam)")
    max_new_tokens: Count = D(
        GENEVAL_MAX_NEW_TOKENS,
        description="tokens generated at most per MT-GenEval translation (one still going is cut there)",
    )
    patience: Count = D(10, description="stop after this many evaluations without improvement (10: the released code)")
    batch_size: Count = D(16, description="sentences translated per batch while scoring MT-GenEval")
    test: bool = D(True, description="score the final model on MT-GenEval test into results.json (false: skip)")


class TinyModel(Section):
    """Build ``model`` and ``data.train`` offline where they do not exist, as ``fairmt demo`` does."""

    pretrain_steps: Count = D(400, description="training steps of the tiny stereotyped original model")
    seed: Seed = D(0, description="the seed of the tiny model and its data")


class GaclRecipe(Recipe):
    """GACL (+ KD) fine-tuning of a translation model (Lee et al. 2023). The runner
    (:mod:`fairmt.recipes.gacl.runner`) reads this object, resolved, and nothing else: every default of the recipe
    is here or a field default of ``GACLConfig`` (``training``: the keys the recipe leaves out take the Config's
    own default)."""

    output_dir: Text | None = D(
        None,
        description="the run's folder (null: outputs/<recipe name>); "
        "training.output_dir, the older place, names the same folder",
        json_schema_extra=_must("a folder (default: outputs/<recipe name>)"),
    )
    seed: Seed | None = D(
        None,
        description="the training seed: initialisation, dropout and batch order (null: "
        "TrainingArguments' default); training.seed, the older place, is the "
        "same key — data.seed draws the data",
    )
    model: Text = D(description="the translation model: a Hub name or a local folder")
    src_lang: Text = D("en", description="the source language code")
    tgt_lang: Text = D("de", description="the target language code")
    family: Literal["small100", "nllb", "m2m100"] | None = D(
        None,
        description="the model family (its language-code and generation conventions); null: read from the "
        "checkpoint's own files, else its name",
    )
    data: GaclData = D(description="the training (and dev) data")
    training: dict | None = D(None, description=trainer_doc(GACL_CONFIG, "Trainer arguments"))
    peft: dict | None = D(
        None,
        description=trainer_doc(LORA_CONFIG, "train a LoRA adapter instead of the full model (null: full fine-tuning)"),
    )
    geneval: GaclGeneval | None = D(None, description="early stopping on MT-GenEval dev and a test score (null: none)")
    resume_from_checkpoint: bool | Text | None = D(
        None,
        description="resume training: true for the last checkpoint in the output folder, or a checkpoint "
        "folder (null: start afresh)",
    )
    tiny_model: TinyModel | None = D(None, description="build a tiny model and its data offline (null: off)")

    _training = field_validator("training")(_trainer_section(GACL_CONFIG))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))

    @model_validator(mode="after")
    def _resolved(self):
        """The run's folder and seed at the top (one recipe shape across the families; ``training.output_dir`` and
        ``training.seed`` name the same two and are moved up — a recipe that gives both places different values is
        refused), ``output_dir`` defaulted, ``geneval.lang`` defaulted to ``tgt_lang``, and the Trainer settings a
        ``geneval`` section brings (:data:`GENEVAL_TRAINING`) where ``training`` leaves them out."""
        from pathlib import Path

        training = dict(self.training or {})
        folder = training.pop("output_dir", None)
        if folder is not None and self.output_dir is not None and Path(folder) != Path(self.output_dir):
            raise FairmtError(
                f"output_dir ({self.output_dir}) and training.output_dir ({folder}) differ: give one (output_dir)"
            )
        self.output_dir = self.output_dir or folder or str(Path("outputs") / Path(self.recipe_path or "gacl").stem)
        seed = training.pop("seed", None)
        if seed is not None and self.seed is not None and seed != self.seed:
            raise FairmtError(f"seed ({self.seed}) and training.seed ({seed}) differ: give one (seed)")
        if self.seed is None:  # training.seed is checked as a Trainer argument (its Range: SEED, as Seed's)
            self.seed = seed
        if self.geneval is not None:
            if self.geneval.lang is None:
                self.geneval.lang = self.tgt_lang
            for key, value in GENEVAL_TRAINING.items():
                training.setdefault(key, value)
            training.setdefault("save_steps", training["eval_steps"])
            training.setdefault("metric_for_best_model", f"geneval_{self.geneval.metric}")
        self.training = training
        return self


def typed_recipe(config: Any) -> GaclRecipe:
    """The typed, resolved GACL recipe of ``config`` (a recipe mapping, overrides applied; or the typed recipe
    itself): what the runner, the tiny model's support and the dry run read."""
    if isinstance(config, GaclRecipe):
        return config
    from fairmt.recipes._schema import resolve_recipe

    return resolve_recipe({**config, "method": "gacl"})  # type: ignore[return-value]
