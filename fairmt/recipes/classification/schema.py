"""The schema of the ``classification`` recipe family: CSCL, FCL, fairness-driven sampling on text, the adversarial and
INLP baselines; every default of the family is here."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from fairmt.errors import FairmtError
from fairmt.recipes._schema import (
    CLASSIFICATION_CONFIGS,
    Count,
    D,
    Positive,
    Recipe,
    Section,
    Seed,
    Share,
    Text,
    _must,
    _trainer_section,
    merged_over,
    renamed_values,
    trainer_doc,
)

# ---------------------------------------------------------------------------------------------- classification


class ClassificationData(Section):
    """The classification data set, its split and its augmentation."""

    dataset: Literal["bios", "bios_split", "jigsaw", "moji", "hatespeech"] = D(
        "bios",
        description="bios: the 280-row Bias-in-Bios sample, random split (tests); bios_split: Bias-in-Bios "
        "with its published split; jigsaw: Civil Comments, WILDS split, race (CSCL); moji: "
        "DeepMoji features, fairlib's split (Shen et al.); hatespeech: Huang et al. 2020",
    )
    files: list[Text] | None = D(
        None,
        description="the Bias-in-Bios CSV files of dataset bios (null: bios/bios_28prof_x10.csv under the data root)",
    )
    split_seed: Seed = D(
        0, description="the seed of dataset bios's train/dev/test split (stratified by profession × gender)"
    )
    fractions: Annotated[
        list[Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]], Field(min_length=3, max_length=3)
    ] = D([0.5, 0.2, 0.3], description="the train / dev / test shares of dataset bios's split (adding up to 1)")
    root: Text | None = D(None, description="the folder the loader reads (null: under FAIRMT_DATA)")
    source: Literal["local", "hub"] = D(
        "local", description="bios_split: local (Ravfogel et al.'s split as CSCL) or hub (LabHC/bias_in_bios)"
    )
    max_rows: Count | None = D(None, description="keep the first N rows of each split (quick runs; null: all)")
    language: Text = D("Spanish", description="the language of the hate-speech set (dataset hatespeech)")
    attribute: Text | Annotated[list[Text], Field(min_length=1)] = D(
        "gender",
        description="the protected attribute of the hate-speech set (gender, age, ethnicity, country), or a "
        "list of them — [gender, age] — for intersectional groups: a row's group is the "
        "combination of its values (rows with any unknown value dropped, and counted), every "
        "metric is computed over the cross-product groups (a combination with no example "
        "skipped with a warning), and the Trainers' group ids are the combinations",
    )
    moji_split_sizes: Annotated[list[Count], Field(min_length=3, max_length=3)] = D(
        [40000, 2000, 2000],
        description="rows of each raw Moji file cut into train / dev / test (fairlib's Moji.data_splits)",
    )
    moji_n_train: Count = D(
        100000,
        description="Moji training rows kept (fairlib's n_train: 40/10/10/40 % over the sentiment × dialect cells)",
    )
    augment: Literal["eda", "backtranslate", "clm_insert", "clm_substitute"] | None = D(
        None,
        description="a second view of every training (and dev) row for objective_args.views: augment "
        "(model.type finetune; null: none)",
    )
    eda_alpha: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = D(
        0.1, description="augment eda: the share of words changed per operation"
    )
    eda_num_aug: Count = D(4, description="augment eda: copies per row, of which each batch draws one")
    clm_model: Text = D("roberta-base", description="augment clm_insert / clm_substitute: the masked LM")
    clm_rate: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = D(
        0.1, description="augment clm_insert / clm_substitute: the share of tokens inserted or substituted"
    )
    backtranslate_model: Text | None = D(None, description="augment backtranslate: the translation model")
    pivot_lang: Text = D("de", description="augment backtranslate: the pivot language")
    label_subset: Annotated[list[Text], Field(min_length=2)] | None = D(
        None,
        description="the task labels kept (every split), re-indexed in this order: Shen et al.'s Table 2 is "
        "[nurse, surgeon] of Bias-in-Bios",
    )

    @model_validator(mode="after")
    def _attributes(self):
        if isinstance(self.attribute, list):
            if len(set(self.attribute)) != len(self.attribute):
                raise ValueError(f"data.attribute names an attribute twice: {self.attribute}")
            if self.dataset != "hatespeech":
                raise ValueError(
                    f"data.attribute as a list (intersectional groups) needs data.dataset hatespeech, "
                    f"the data set with several protected attributes; got {self.dataset}"
                )
            if len(self.attribute) == 1:
                self.attribute = self.attribute[0]
        return self

    @field_validator("fractions")
    @classmethod
    def _sum_to_one(cls, v):
        if abs(sum(v) - 1.0) > 1e-6:
            raise ValueError(f"the train/dev/test fractions must add up to 1, got {v} (sum {sum(v):g})")
        return v


class ClassificationModel(Section):
    """The encoder and the classifier head."""

    type: Literal["frozen_embedder", "finetune", "features", "gru_features", "gru", "embedding_bag"] = D(
        "frozen_embedder",
        description="frozen_embedder: a fixed sentence encoder + trained MLP; finetune: a "
        "Transformer trained end to end; features: the MLP on the data set's own "
        "features (Moji); gru_features: Shen et al.'s hate-speech GRU Embed, then the "
        "MLP; gru / embedding_bag: token-id encoders (hate speech)",
    )
    name_or_path: Text = D(
        "minilm",
        description="the Transformer (frozen_embedder, finetune): a folder, a Hub id, or "
        "minilm (the packaged all-MiniLM-L6-v2)",
    )
    hidden_dim: Count = D(300, description="width of the MLP encoder (Shen et al.'s Enc) or of the token-id encoder")
    num_layers: Count = D(2, description="hidden layers of the MLP encoder")
    dropout: Share = D(0.1, description="dropout rate of the encoder and head (0: none)")
    max_length: Count = D(128, description="tokens kept per text (longer ones truncated)")
    embed_batch_size: Count = D(32, description="texts embedded per batch by frozen_embedder")
    cache_dir: Text | None = D(None, description="where frozen_embedder caches the embeddings (null: no cache)")
    embed_dim: Count = D(200, description="token-embedding width of the gru / embedding_bag encoders")
    pooling: Literal["cls", "mean"] = D(
        "mean",
        description="cls: the raw [CLS] state (Ravfogel et al.'s and Shen "
        "et al.'s BERT features); mean: the masked mean",
    )
    normalize: bool | None = D(
        None,
        description="L2-normalise the pooled embedding (null: true for mean pooling)",
        json_schema_extra=_must("true or false (default: true for mean pooling)"),
    )
    head_layers: Literal[1, 2] | None = D(
        None,
        description="layers of the head MLP (null: 2 for finetune, CSCL's classifier, else 1)",
        json_schema_extra=_must("1 or 2 (default: 2 for finetune, else 1)"),
    )
    gru_hidden: Count = D(200, description="gru_features: the GRU cell size (bidirectional, so 400-d features)")
    embed_epochs: Count = D(5, description="gru_features: CE epochs of the GRU Embed (lowest dev loss kept)")
    embed_learning_rate: Positive = D(1e-3, description="gru_features: learning rate of the GRU Embed")

    @model_validator(mode="after")
    def _derived(self):
        if self.head_layers is None:
            self.head_layers = 2 if self.type == "finetune" else 1
        if self.normalize is None:
            self.normalize = self.pooling == "mean"
        return self


class ClassificationMetrics(Section):
    """The reporting conventions of the fairness metrics."""

    eo_classes: Literal["positive", "all"] = D(
        "positive", description="ΔEO over the positive class (the formula CSCL prints) or over all classes"
    )
    positive_class: int | Text | None = D(
        None, description="the positive class of a two-class task, for F1 and ΔEO (null: the larger label)"
    )


class Inlp(Section):
    """The INLP baseline (``objective: inlp``)."""

    n_iterations: Count = D(
        20, description="INLP iterations: linear group classifiers whose null space is projected out, one per round"
    )
    by_class: bool = D(
        True,
        description="each round fits the group classifier on the examples of one task class "
        "only (equalized odds; Ravfogel et al.'s by_class)",
    )
    head: Literal["logistic_regression", "finetune"] = D(
        "logistic_regression",
        description="the head on the guarded representations: a logistic regression, or the "
        "model's own head fine-tuned on them with the stage2 options (Chi et al.)",
    )


class ClassificationBalance(Section):
    """Balanced training of the training split (fairlib's BT / BTObj; :mod:`fairmt.data.balanced`)."""

    method: Literal["reweight", "resample", "downsample"] | None = D(
        None, description="null: off; reweight the loss, resample or downsample the (label, group) cells"
    )
    target: Literal["joint", "y", "g", "eo"] = D(
        "joint", description="what is balanced: the (y, g) cells, y, g, or g within each y (equal opportunity)"
    )


RENAMED_OBJECTIVES = {"cscl_two_stage": "cscl_pretrain", "fcl_two_stage": "fcl_pretrain"}
"""Older recipe spellings of an objective → its name, the Config's (``FairContrastiveConfig.objective``); the old
spelling is read as the new one with a ``FutureWarning`` until fairmt 0.2."""

CLASSIFICATION_TRAINING = {
    "num_train_epochs": 10,
    "per_device_train_batch_size": 64,
    "per_device_eval_batch_size": 128,
    "learning_rate": 1e-3,
    "weight_decay": 0.0,
    "logging_steps": 10,
}
"""The ``training`` a classification recipe starts from (its keys override these, one by one)."""
CLASSIFICATION_STAGE2 = {"num_train_epochs": 10, "learning_rate": 1e-3}
"""The ``stage2`` (head stage of two-stage objectives) a classification recipe starts from."""


class ClassificationRecipe(Recipe):
    """The classification family, resolved: every default is here (the runner, ``--dry-run`` and the paper cards read
    this object; :func:`fairmt.recipes.classification.runner.resolve_config` adds only the Trainer Configs, ``stages``)."""

    method: Literal["classification"] = D("classification", description="classification")
    objective: Literal["ce", "cscl", "cscl_pretrain", "fcl", "fcl_pretrain", "sampling", "adversarial", "inlp"] = D(
        "ce",
        description="what is trained: ce (baseline), cscl / cscl_pretrain (Chi et al. 2022), fcl / "
        "fcl_pretrain (Shen et al. 2022), sampling (fairness-driven sampling), adversarial, inlp; each the "
        "FairContrastiveConfig objective of the same name, *_pretrain: the encoder alone, then the head on it "
        "(stage2; cscl_two_stage and fcl_two_stage are the older spellings)",
    )
    output_dir: Text | None = D(
        None,
        description="the run's folder (null: outputs/<recipe name>)",
        json_schema_extra=_must("a folder (default: outputs/<recipe name>)"),
    )
    seed: Seed = D(0, description="the run's seed: training, the collator, EDA, balancing, INLP and its head")
    selection: Literal["loss", "dto", "accuracy", "accuracy_then_gap", "last"] = D(
        "loss",
        description="the dev rule that picks the epoch kept: loss (lowest dev CE), dto (distance of "
        "(accuracy, 1 − GAP) to (1, 1)), accuracy, accuracy_then_gap (Shen et al.), last",
    )
    selection_tolerance: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] = D(
        0.01,
        description="accuracy_then_gap: the fraction of the best dev accuracy within which the lowest GAP wins",
        json_schema_extra=_must("a fraction of accuracy in [0, 1)"),
    )
    selection_accuracy_floor: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] = D(
        0.8,
        description="dto / accuracy_then_gap never keep an epoch below this ratio of the best dev accuracy (a "
        "near-constant model has GAP ≈ 0)",
        json_schema_extra=_must("a ratio in [0, 1) of the best dev accuracy"),
    )
    patience_waits_for_dev_loss: bool = D(
        True, description="early stopping also waits for the lowest dev loss (false: the papers' rule alone)"
    )
    patience: Count | None = D(
        None,
        description="stop once this many epochs followed the chosen one (CSCL 3, Shen "
        "et al. 5; null: no early stopping)",
        json_schema_extra=_must("a positive number of epochs or null"),
    )
    stage1_patience: Count | None = D(
        None,
        description="the same for the first stage of a two-stage objective, on its own dev objective (null: none)",
        json_schema_extra=_must("a positive number of epochs or null"),
    )
    cache_stage2_features: bool = D(
        True, description="compute the fixed encoder's features once for the head stage of two-stage objectives"
    )
    save_predictions: bool = D(
        True, description="write predictions.jsonl (label, pred, score, group, hidden) to the run's folder"
    )
    sweep_selection: Literal["dto", "accuracy_then_gap", "accuracy", "loss"] | None = D(
        None, description="the rule `fairmt sweep` selects this recipe's settings by (default: dto, or --select)"
    )
    metrics: ClassificationMetrics = D(
        default_factory=ClassificationMetrics, description="the reporting conventions of the fairness metrics"
    )
    data: ClassificationData = D(default_factory=ClassificationData, description="the data set and its split")
    model: ClassificationModel = D(default_factory=ClassificationModel, description="the encoder and the head")
    training: dict = D(
        default_factory=lambda: dict(CLASSIFICATION_TRAINING),
        description=trainer_doc(
            CLASSIFICATION_CONFIGS, "TrainingArguments shared by every objective (and stage 1 of two-stage ones)"
        ),
    )
    objective_args: dict = D(
        default_factory=dict,
        description=trainer_doc(
            CLASSIFICATION_CONFIGS,
            "the objective's own Config fields (gamma, cs_lambda, fcl_alpha, n_clusters, adv_lambda, ...)",
        ),
    )
    stage2: dict = D(
        default_factory=lambda: dict(CLASSIFICATION_STAGE2),
        description=trainer_doc(CLASSIFICATION_CONFIGS, "training options of the head stage of two-stage objectives"),
    )
    inlp: Inlp = D(default_factory=Inlp, description="the INLP options (objective inlp)")
    balance: ClassificationBalance = D(
        default_factory=ClassificationBalance, description="balanced training of the training split (fairlib's BT)"
    )

    _training_defaults = field_validator("training", mode="before")(merged_over(CLASSIFICATION_TRAINING))
    _stage2_defaults = field_validator("stage2", mode="before")(merged_over(CLASSIFICATION_STAGE2))
    _objective_args_default = field_validator("objective_args", mode="before")(merged_over({}))
    _args = field_validator("training", "objective_args", "stage2")(_trainer_section(CLASSIFICATION_CONFIGS))

    _renamed_objective = field_validator("objective", mode="before")(renamed_values("objective", RENAMED_OBJECTIVES))

    @field_validator("metrics", "data", "model", "inlp", mode="before")
    @classmethod
    def _none_is_default(cls, value, info):
        return {} if value is None else value

    def unread(self, config: dict) -> list:
        """The keys ``config`` sets that this run would not read (:mod:`fairmt.recipes.classification.unread`)."""
        from fairmt.recipes.classification.unread import unread

        return unread(self, config, CLASSIFICATION_STAGE2)

    @classmethod
    def typed_key(cls, key: str, config: dict) -> str:
        from fairmt.recipes.classification.unread import typed_key

        return typed_key(key, config)

    @model_validator(mode="after")
    def _run_folder(self):
        """One folder per run: ``output_dir`` or ``training.output_dir`` (the same folder; default
        ``outputs/<recipe name>``), kept in ``output_dir`` alone."""
        from pathlib import Path

        run_dir = self.training.pop("output_dir", None)
        if run_dir and self.output_dir and Path(run_dir) != Path(self.output_dir):
            raise FairmtError(f"output_dir ({self.output_dir}) and training.output_dir ({run_dir}) differ: give one")
        self.output_dir = (
            run_dir or self.output_dir or str(Path("outputs") / Path(self.recipe_path or "classification").stem)
        )
        return self
