"""The declared schema of every recipe family, checked before anything loads (``fairmt train``, ``--dry-run`` and
``fairmt sweep``, which loads every grid value through :func:`fairmt.commands.train.load_recipe`).

One pydantic model per family (:data:`SCHEMAS`): ``gacl``, ``ccd``, ``dpce`` / ``adept`` (the CCD paper's
baselines), ``classification`` (CSCL, FCL, fairness-driven sampling on text, the adversarial and INLP baselines)
and ``sampling`` (fairness-driven sampling on images). Every key of every section is declared with its type and
range; ``training`` and the other Trainer-argument sections (``stage1``, ``stage2``, ``objective_args``, ``peft``)
are checked against the method's Config dataclasses (:func:`fairmt.scripts.recipe_checks.check_training`: each
field's type, finite numbers, ranges, the allowed values of ``lr_scheduler_type`` and the other enumerations).

A failure is one :class:`~fairmt.errors.FairmtError` naming the key, what it must be and what it got
(``recipe key data.max_length must be int ≥ 1, got 'abc'``); an unknown key gets a "did you mean".

One place for defaults: :func:`resolve_recipe` returns the typed, resolved recipe of a family whose schema holds
every default (``classification``: the runner, ``fairmt train --dry-run``, the paper-card check
(:mod:`fairmt.scripts.cards`) and the generated docs all read that object; the runner adds only what depends on the
Trainer Configs, ``stages``). The sampling runner still keeps its own ``DEFAULTS`` (``tests/test_recipe_schema.py``
keeps those in step with the declarations here) until its family moves over.

This module lives beside the runners (floor 10) so that they can read it; ``fairmt.commands.recipe_schema`` re-exports
it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fairmt.errors import COUNT, GROUPS, FairmtError, Range
from fairmt.scripts.recipe_checks import COMMON_TOP, _check_keys, check_training

# ---------------------------------------------------------------------------------------------- value types

Count = Annotated[int, Field(ge=1)]
"""A positive number of things (steps, rows, epochs)."""
Size = Annotated[int, Field(ge=0)]
"""A number of held-out items where 0 means none."""
Seed = Annotated[int, Field(ge=0, lt=2**32)]
Share = Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)]
"""A share in [0, 1): 0 means none."""
Probability = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
Text = Annotated[str, Field(min_length=1)]


def ranged(rng: Range) -> Any:
    """The pydantic type of a recipe key that feeds a Config field under another name: the field's own
    :class:`~fairmt.errors.Range` (one declaration; the Range rides along in the metadata for the guard test)."""
    kw: dict[str, Any] = {}
    if rng.low is not None:
        kw["gt" if rng.low_open else "ge"] = rng.low
    if rng.high is not None:
        kw["lt" if rng.high_open else "le"] = rng.high
    if not rng.integer:
        kw["allow_inf_nan"] = False
    return Annotated[int if rng.integer else float, Field(**kw), rng]


class Section(BaseModel):
    """A recipe section: its keys as declared, values of their declared type (YAML already types them: a string is
    not a number here), nothing else."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _trainer_section(classes: str):
    """A validator for a section of Trainer / Config arguments: ``classes`` names the Config dataclasses
    (``module:Class`` strings, imported when a recipe is checked)."""

    def check(value: Any, info) -> Any:
        if value is None:
            return value
        import importlib

        resolved = []
        for spec in classes.split(","):
            module, _, name = spec.strip().partition(":")
            resolved.append(getattr(importlib.import_module(module), name))
        check_training(value, resolved, info.field_name)
        return value

    return check


GACL_CONFIG = "fairmt.trainers.gacl:GACLConfig"
CCD_CONFIG = "fairmt.trainers.ccd:CCDConfig"
CLASSIFICATION_CONFIGS = ("fairmt.trainers.fair_contrastive:FairContrastiveConfig,"
                          "fairmt.trainers.sampling:FairnessSamplingConfig,"
                          "fairmt.trainers.adversarial:AdversarialConfig")
SAMPLING_CONFIG = "fairmt.trainers.sampling:FairnessSamplingConfig"
LORA_CONFIG = "peft:LoraConfig"

CONFIG_FEEDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("sampling", "clusters", "n_clusters"): (SAMPLING_CONFIG, "n_clusters"),
    ("sampling", "clusters", "n_init"): (SAMPLING_CONFIG, "kmeans_n_init"),
}
"""Recipe keys outside the Trainer sections that become a Config field (family, section, key) → (Config, field):
their type is :func:`ranged` over the field's Range (``tests/test_config_ranges.py`` holds them to it). The
Trainer sections (``training``, ``objective_args``, ``stage1``, ``stage2``) use the Config fields' Ranges directly
(:func:`fairmt.scripts.recipe_checks.check_training`)."""


class Recipe(Section):
    """What every recipe has: its method, and what ``fairmt train`` adds (the file, ``--overwrite``)."""

    method: str
    recipe_path: str | None = None
    overwrite: bool | None = None


# ---------------------------------------------------------------------------------------------- gacl


class GaclData(Section):
    train: Text
    eval: Text | None = None
    split: Text = "train"
    eval_split: Text = "validation"
    max_length: Count = 128
    balance: bool = True
    max_train_samples: Count | None = None
    max_eval_samples: Count | None = None
    eval_fraction: Share | None = None
    prepare: Literal["gacl", "gfst", "plain"] = "gacl"
    target_gender_words: dict[Literal["male", "female"], list[Text]] | None = None
    seed: Seed = Field(42, description="an integer in [0, 2**32): the seed of the balancing subsample and of the "
                                       "eval_fraction split — not training.seed, so a sweep's seeds share one dev set "
                                       "(default 42, transformers' default training seed)")


class GaclGeneval(Section):
    lang: Text | None = None
    split: Literal["dev", "test"] = "dev"
    max_pairs: Count | None = None
    metric: Literal["explicit_accuracy", "accuracy"] = "explicit_accuracy"
    num_beams: Count = 5
    patience: Count = 10
    batch_size: Count = 16
    test: bool = True  # score the final model on MT-GenEval test into results.json


class TinyModel(Section):
    pretrain_steps: Count = 400
    seed: Seed = 0


class GaclRecipe(Recipe):
    model: Text
    src_lang: Text = "en"
    tgt_lang: Text = "de"
    family: Literal["small100", "nllb", "m2m100"] | None = None
    data: GaclData
    training: dict | None = None
    peft: dict | None = None
    geneval: GaclGeneval | None = None
    resume_from_checkpoint: bool | Text | None = None
    tiny_model: TinyModel | None = None

    _training = field_validator("training")(_trainer_section(GACL_CONFIG))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))


# ---------------------------------------------------------------------------------------------- ccd / dpce / adept


class CorpusFile(Section):
    path: Text
    field: Text | None = None


class CdaSource(CorpusFile):
    """One ``data.cda_source`` of a CCD recipe (fairmt.scripts.ccd.read_source_texts)."""

    sentences: bool = False
    max_texts: Count | None = None


class Eda(Section):
    num_aug: Count = 1
    alpha: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] = 0.1


class Utility(Section):
    name: Literal["glue"] = "glue"
    tasks: list[Text] | None = None
    learning_rate: Positive | None = None
    batch_size: Count | None = None
    num_train_epochs: Positive | None = None
    max_length: Count | None = None
    max_train_samples: Count | None = None
    max_eval_samples: Count | None = None
    seed: Seed | None = None
    before: bool | None = None


Suite = Literal["seat", "cced", "bias_ir", "bias-ir"]
SeatTest = Literal["6", "6b", "7", "7b", "8", "8b"]


class CcdData(Section):
    tuples: Text | None = None
    cda_source: CdaSource | Annotated[list[CdaSource], Field(min_length=1)] | None = None
    groups: Annotated[list[Text], Field(min_length=2)] | None = None
    seed: Seed = 42
    eval_size: Size = 0
    test_size: Size = 0
    utility_size: Size = 300
    utility_validation_size: Size = 0
    max_train_tuples: Count | None = None
    eda: Eda | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if bool(self.tuples) == bool(self.cda_source):
            raise ValueError("give exactly one of data.tuples (a tuple file) and data.cda_source (sentences for CDA)")
        if self.groups is not None and len(set(self.groups)) != len(self.groups):
            raise ValueError(f"data.groups names a group twice: {self.groups}")
        return self


class CcdEvaluation(Section):
    suites: list[Literal["seat", "cced", "bias_ir", "bias-ir", "utility"]] | None = None
    seat_n_samples: Count = 10_000
    seat_tests: list[SeatTest] | None = None
    batch_size: Count = 64
    validation: bool = False
    bias_ir_validation: Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)] = 0.5
    split_seed: Seed = 0
    probe_n_samples: Count = 1000


class CcdRecipe(Recipe):
    model: Text
    data: CcdData
    training: dict | None = None
    peft: dict | None = None
    evaluation: CcdEvaluation | None = None
    results: Text | None = None
    utility: Literal["glue"] | Utility | None = None

    _training = field_validator("training")(_trainer_section(CCD_CONFIG))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))


class WordData(Section):
    corpus: CorpusFile
    lexicon: Text | None = None
    words: dict[Literal["male", "female", "target"], Text] | None = None
    max_per_word: Count | None = None
    max_sentences: Count | None = None
    eval_size: Size = 0
    test_size: Size = 0
    seed: Seed = 42


class WordEvaluation(Section):
    suites: list[Suite] | None = None
    pooling: Literal["mean", "cls", "first", "max"] = "mean"
    normalize: bool = False
    seat_tests: list[SeatTest] | None = None
    seat_n_samples: Count = 10_000
    batch_size: Count = 64


class DpceRecipe(Recipe):
    model: Text
    data: WordData
    training: dict | None = None
    peft: dict | None = None
    evaluation: WordEvaluation | None = None
    results: Text | None = None
    utility: Literal["glue"] | Utility | None = None

    _training = field_validator("training")(_trainer_section("fairmt.trainers.dpce:DPCEConfig"))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))


class AdeptRecipe(DpceRecipe):
    _training = field_validator("training")(_trainer_section("fairmt.trainers.adept:ADEPTConfig"))


# ---------------------------------------------------------------------------------------------- classification


class ClassificationData(Section):
    dataset: Literal["bios", "bios_split", "jigsaw", "moji", "hatespeech"] = "bios"
    files: list[Text] | None = None
    split_seed: Seed = 0
    fractions: Annotated[list[Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]],
                         Field(min_length=3, max_length=3)] = [0.5, 0.2, 0.3]
    root: Text | None = None
    source: Literal["local", "hub"] = "local"
    max_rows: Count | None = None
    language: Text = "Spanish"
    attribute: Text | Annotated[list[Text], Field(min_length=1)] = Field(
        "gender", description="the protected attribute of the hate-speech set (gender, age, ethnicity, country), or a "
                              "list of them — [gender, age] — for intersectional groups: a row's group is the "
                              "combination of its values (rows with any unknown value dropped, and counted), every "
                              "metric is computed over the cross-product groups (a combination with no example "
                              "skipped with a warning), and the Trainers' group ids are the combinations")
    moji_split_sizes: Annotated[list[Count], Field(min_length=3, max_length=3)] = [40000, 2000, 2000]
    moji_n_train: Count = 100000
    augment: Literal["eda", "backtranslate", "clm_insert", "clm_substitute"] | None = None
    eda_alpha: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.1
    eda_num_aug: Count = 4
    clm_model: Text = "roberta-base"
    clm_rate: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.1
    backtranslate_model: Text | None = None
    pivot_lang: Text = "de"
    label_subset: Annotated[list[Text], Field(min_length=2)] | None = Field(
        None, description="the task labels kept (every split), re-indexed in this order: Shen et al.'s Table 2 is "
                          "[nurse, surgeon] of Bias-in-Bios")

    @model_validator(mode="after")
    def _attributes(self):
        if isinstance(self.attribute, list):
            if len(set(self.attribute)) != len(self.attribute):
                raise ValueError(f"data.attribute names an attribute twice: {self.attribute}")
            if self.dataset != "hatespeech":
                raise ValueError(f"data.attribute as a list (intersectional groups) needs data.dataset hatespeech, "
                                 f"the data set with several protected attributes; got {self.dataset}")
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
    type: Literal["frozen_embedder", "finetune", "features", "gru_features", "gru", "embedding_bag"] = \
        "frozen_embedder"
    name_or_path: Text = "minilm"
    hidden_dim: Count = 300
    num_layers: Count = 2
    dropout: Share = 0.1
    max_length: Count = 128
    embed_batch_size: Count = 32
    cache_dir: Text | None = None
    embed_dim: Count = 200
    pooling: Literal["cls", "mean"] = "mean"
    normalize: bool | None = Field(None, description="true or false (default: true for mean pooling)")
    head_layers: Literal[1, 2] | None = Field(None, description="1 or 2 (default: 2 for finetune, else 1)")
    gru_hidden: Count = 200
    embed_epochs: Count = 5
    embed_learning_rate: Positive = 1e-3

    @model_validator(mode="after")
    def _derived(self):
        if self.head_layers is None:
            self.head_layers = 2 if self.type == "finetune" else 1
        if self.normalize is None:
            self.normalize = self.pooling == "mean"
        return self


class ClassificationMetrics(Section):
    eo_classes: Literal["positive", "all"] = "positive"
    positive_class: int | Text | None = None


class Inlp(Section):
    n_iterations: Count = 20
    by_class: bool = True
    head: Literal["logistic_regression", "finetune"] = Field(
        "logistic_regression", description="the head on the guarded representations: a logistic regression, or the "
                                           "model's own head fine-tuned on them with the stage2 options (Chi et al.)")


class ClassificationBalance(Section):
    """Balanced training of the training split (fairlib's BT / BTObj; :mod:`fairmt.data.balanced`)."""

    method: Literal["reweight", "resample", "downsample"] | None = Field(
        None, description="null: off; reweight the loss, resample or downsample the (label, group) cells")
    target: Literal["joint", "y", "g", "eo"] = Field(
        "joint", description="what is balanced: the (y, g) cells, y, g, or g within each y (equal opportunity)")


def _merged_over(defaults: dict):
    """A ``mode="before"`` validator of a free-form section: the recipe's keys over the family's defaults."""

    def merge(value: Any) -> Any:
        if value is None:
            return dict(defaults)
        return {**defaults, **value} if isinstance(value, dict) else value

    return merge


CLASSIFICATION_TRAINING = {"num_train_epochs": 10, "per_device_train_batch_size": 64,
                           "per_device_eval_batch_size": 128, "learning_rate": 1e-3, "weight_decay": 0.0,
                           "logging_steps": 10}
"""The ``training`` a classification recipe starts from (its keys override these, one by one)."""
CLASSIFICATION_STAGE2 = {"num_train_epochs": 10, "learning_rate": 1e-3}
"""The ``stage2`` (head stage of two-stage objectives) a classification recipe starts from."""


class ClassificationRecipe(Recipe):
    """The classification family, resolved: every default is here (the runner, ``--dry-run`` and the paper cards read
    this object; :func:`fairmt.scripts.classification.resolve_config` adds only the Trainer Configs, ``stages``)."""

    method: Literal["classification"] = "classification"
    objective: Literal["ce", "cscl", "cscl_two_stage", "fcl", "fcl_two_stage", "sampling", "adversarial",
                       "inlp"] = "ce"
    output_dir: Text | None = Field(None, description="a folder (default: outputs/<recipe name>)")
    seed: Seed = 0
    selection: Literal["loss", "dto", "accuracy", "accuracy_then_gap", "last"] = "loss"
    selection_tolerance: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False,
                                                description="a fraction of accuracy in [0, 1)")] = 0.01
    selection_accuracy_floor: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False,
                                                     description="a ratio in [0, 1) of the best dev accuracy")] = 0.8
    patience_waits_for_dev_loss: bool = True
    patience: Count | None = Field(None, description="a positive number of epochs or null")
    stage1_patience: Count | None = Field(None, description="a positive number of epochs or null")
    cache_stage2_features: bool = True
    save_predictions: bool = True
    sweep_selection: Literal["dto", "accuracy_then_gap", "accuracy", "loss"] | None = Field(
        None, description="the rule `fairmt sweep` selects this recipe's settings by (default: dto, or --select)")
    metrics: ClassificationMetrics = Field(default_factory=ClassificationMetrics)
    data: ClassificationData = Field(default_factory=ClassificationData)
    model: ClassificationModel = Field(default_factory=ClassificationModel)
    training: dict = Field(default_factory=lambda: dict(CLASSIFICATION_TRAINING))
    objective_args: dict = Field(default_factory=dict)
    stage2: dict = Field(default_factory=lambda: dict(CLASSIFICATION_STAGE2))
    inlp: Inlp = Field(default_factory=Inlp)
    balance: ClassificationBalance = Field(default_factory=ClassificationBalance)

    _training_defaults = field_validator("training", mode="before")(_merged_over(CLASSIFICATION_TRAINING))
    _stage2_defaults = field_validator("stage2", mode="before")(_merged_over(CLASSIFICATION_STAGE2))
    _objective_args_default = field_validator("objective_args", mode="before")(_merged_over({}))
    _args = field_validator("training", "objective_args", "stage2")(_trainer_section(CLASSIFICATION_CONFIGS))

    @field_validator("metrics", "data", "model", "inlp", mode="before")
    @classmethod
    def _none_is_default(cls, value, info):
        return {} if value is None else value

    @model_validator(mode="after")
    def _run_folder(self):
        """One folder per run: ``output_dir`` or ``training.output_dir`` (the same folder; default
        ``outputs/<recipe name>``), kept in ``output_dir`` alone."""
        from pathlib import Path

        run_dir = self.training.pop("output_dir", None)
        if run_dir and self.output_dir and Path(run_dir) != Path(self.output_dir):
            raise FairmtError(f"output_dir ({self.output_dir}) and training.output_dir ({run_dir}) differ: give one")
        self.output_dir = run_dir or self.output_dir or str(
            Path("outputs") / Path(self.recipe_path or "classification").stem)
        return self


# ---------------------------------------------------------------------------------------------- sampling (images)


class SamplingData(Section):
    dataset: Literal["celeba", "chexpert", "synthetic"] = "celeba"
    root: Text | None = None
    source: Literal["local", "hub"] = "local"
    hub_id: Text = "flwrlabs/celeba"
    splits: Text | list[Text] = "all"
    targets: list[Text] | None = None
    protected: list[Text] | None = None
    uncertain: Literal["zeros", "ones", "ignore"] = "zeros"
    frontal_only: bool = False
    age_threshold: Count = 60
    max_samples: Count | None = None
    n: Count = 300
    minority_fraction: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 0.2
    image_size: Count = 32


class SamplingModel(Section):
    backbone: Text = "microsoft/resnet-50"
    pretrained: bool = False
    projection_dim: Count = 128
    projection_hidden_dim: Count | None = None


Pair = Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=2, max_length=2)]


class SamplingAugment(Section):
    crop_scale: Pair = [0.08, 1.0]
    flip_p: Probability = 0.0  # the paper's three augmentations by default: jitter, crop, greyscale
    jitter: Annotated[list[Annotated[float, Field(ge=0, allow_inf_nan=False)]], Field(min_length=4, max_length=4)] = \
        [0.8, 0.8, 0.8, 0.2]
    jitter_p: Probability = 0.8
    grayscale_p: Probability = 0.2
    blur_p: Probability = 0.0
    blur_sigma: Pair = [0.1, 2.0]
    blur_kernel_fraction: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.1


class SamplingClusters(Section):
    n_clusters: ranged(GROUPS) = 4  # FairnessSamplingConfig.n_clusters
    seed: Seed = 0
    n_init: ranged(COUNT) = 10  # FairnessSamplingConfig.kmeans_n_init


class SamplingProbe(Section):
    features: Literal["backbone", "projection"] = "projection"
    test_fraction: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 0.2
    seed: Seed = 0
    standardize: bool = True
    C: Positive = 1.0
    max_iter: Count = 1000
    optimizer: Literal["lbfgs", "sgd"] = "lbfgs"
    learning_rate: Positive = 1e-4
    epochs: Count = 100


class SamplingRecipe(Recipe):
    objective: Literal["sampling", "simclr"] = "sampling"
    seed: Seed = 0
    output_dir: Text | None = None
    stage1_from: Text | None = None
    data: SamplingData | None = None
    model: SamplingModel | None = None
    augment: SamplingAugment | None = None
    training: dict | None = None
    stage1: dict | None = None
    clusters: SamplingClusters | None = None
    stage2: dict | None = None
    probe: SamplingProbe | None = None

    @model_validator(mode="before")
    @classmethod
    def _runner_rules(cls, data: Any) -> Any:
        from fairmt.scripts.sampling import validate

        if isinstance(data, dict):
            validate(data)  # the runner's own rules: the stage sections' Trainer arguments and the keys it sets itself
        return data


# ---------------------------------------------------------------------------------------------- the families

SCHEMAS: dict[str, type[Recipe]] = {
    "gacl": GaclRecipe,
    "ccd": CcdRecipe,
    "dpce": DpceRecipe,
    "adept": AdeptRecipe,
    "classification": ClassificationRecipe,
    "sampling": SamplingRecipe,
}


def _known(model: type[BaseModel], loc: tuple) -> set[str] | None:
    """The declared keys of the section at ``loc`` (None: free-form or not a declared section)."""
    import typing

    cls: Any = model
    for part in loc:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or part not in cls.model_fields:
            return None
        hint = cls.model_fields[part].annotation
        options = [a for a in (typing.get_args(hint) or (hint,)) if isinstance(a, type) and issubclass(a, BaseModel)]
        cls = options[0] if options else None
    return set(cls.model_fields) if isinstance(cls, type) and issubclass(cls, BaseModel) else None


def _unknown_keys(model: type[BaseModel], data: Any, loc: tuple = ()) -> None:
    """Unknown keys first, with a "did you mean" (pydantic would only say "extra inputs are not permitted")."""
    if not isinstance(data, dict):
        return
    known = _known(model, loc)
    if known is None:
        return
    if not loc:
        known = known | COMMON_TOP
    _check_keys(data, known, "".join(f"{p}." for p in loc))
    for key, value in data.items():
        if isinstance(value, dict):
            _unknown_keys(model, value, (*loc, key))


_WHAT = {
    "int_type": "int", "int_parsing": "int", "int_from_float": "int", "float_type": "float", "float_parsing": "float",
    "bool_type": "true or false", "bool_parsing": "true or false", "string_type": "a string", "list_type": "a list",
    "dict_type": "a mapping (a section of keys)", "model_type": "a mapping (a section of keys)",
    "model_attributes_type": "a mapping (a section of keys)", "finite_number": "a finite number",
}


def _description(model: type[BaseModel], loc: tuple) -> str | None:
    """The ``description`` a field declares (what its values mean), if any."""
    import typing

    cls: Any = model
    field = None
    for part in loc:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or part not in cls.model_fields:
            return None
        field = cls.model_fields[part]
        options = [a for a in (typing.get_args(field.annotation) or (field.annotation,))
                   if isinstance(a, type) and issubclass(a, BaseModel)]
        cls = options[0] if options else None
    return field.description if field is not None else None


def _message(err: dict, model: type[BaseModel]) -> str:
    loc = [str(p) for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in ("list", "dict", "str",
                                                                                          "int", "float", "bool")))]
    key = ".".join(loc) or "(the recipe)"
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    shown = f"{got!r}" + (f" ({type(got).__name__})" if not isinstance(got, (dict, list)) else "")
    if kind == "missing":
        return f"recipe key {key} is required (see the recipe family's documented example)"
    if kind == "extra_forbidden":
        return f"unknown recipe key {key}"
    if kind == "literal_error":
        allowed = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return f"recipe key {key} must be one of {allowed}, got {got!r}"
    described = _description(model, err["loc"])
    if described and kind in ("greater_than_equal", "greater_than", "less_than", "less_than_equal", "int_type",
                              "int_parsing", "float_type", "float_parsing"):
        return f"recipe key {key} must be {described}, got {got!r}"
    bounds = {"greater_than_equal": "≥ {ge}", "greater_than": "> {gt}", "less_than_equal": "≤ {le}",
              "less_than": "< {lt}", "too_short": "at least {min_length} long", "too_long": "at most {max_length} long"}
    if kind in bounds:
        return f"recipe key {key} must be {bounds[kind].format(**ctx)}, got {shown}"
    if kind in _WHAT:
        return f"recipe key {key} must be {_WHAT[kind]}, got {shown}"
    msg = err.get("msg", "").removeprefix("Value error, ")
    if isinstance(err.get("ctx", {}).get("error"), FairmtError):
        return str(err["ctx"]["error"])
    return f"recipe key {key}: {msg}" if loc else msg


def resolve_recipe(config: dict) -> Recipe | None:
    """The recipe (overrides applied) checked against its family's declared schema and resolved: the typed object
    with every default filled in. A FairmtError names the first bad key. None for a method without a schema (a
    user's own script is left to its own ``main``)."""
    model = SCHEMAS.get(config.get("method"))
    if model is None:
        return None
    _unknown_keys(model, config)
    try:
        return model.model_validate(config)
    except ValidationError as err:
        errors = err.errors(include_url=False)  # a wrong value the recipe gives before a key it leaves out
        first = min(errors, key=lambda e: e["type"] == "missing")
        raise FairmtError(_message(first, model)) from None


def validate_recipe(config: dict) -> Recipe | None:
    """Check a loaded recipe against its family's schema (:func:`resolve_recipe`); returns the resolved recipe."""
    return resolve_recipe(config)


__all__ = ["SCHEMAS", "resolve_recipe", "validate_recipe"]
