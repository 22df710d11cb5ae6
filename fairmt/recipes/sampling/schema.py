"""The schema of the ``sampling`` recipe family: fairness-driven sampling on images (Martin & Ogbuokiri); every
default of the family is here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from fairmt.errors import COUNT, GROUPS, FairmtError
from fairmt.recipes._schema import (
    SAMPLING_CONFIG,
    Count,
    D,
    Positive,
    Probability,
    Recipe,
    Section,
    Seed,
    Text,
    Unread,
    fed,
    given,
    merged_over,
    ranged,
    renamed_values,
    trainer_doc,
)

# integer keys that feed Config fields under other names, with those fields' Range (:func:`ranged`, a type built at
# run time; a type checker sees int)
if TYPE_CHECKING:
    FedCount = int
    FedGroups = int
else:
    FedCount = ranged(COUNT)
    FedGroups = ranged(GROUPS)

# ---------------------------------------------------------------------------------------------- sampling (images)


class SamplingData(Section):
    """The image data set: its probe targets and protected attributes."""

    dataset: Literal["celeba", "chexpert", "synthetic"] = D(
        "celeba",
        description="celeba (local official folder or source hub), chexpert (local official folder) or "
        "synthetic (coloured shapes, for tests)",
    )
    root: Text | None = D(None, description="the data set's local folder (null: under FAIRMT_DATA)")
    source: Literal["local", "hub"] = D("local", description="celeba: read the local folder or the Hub (hub_id)")
    hub_id: Text = D("flwrlabs/celeba", description="celeba with source hub: the Hub data set")
    splits: Text | list[Text] = D(
        "all",
        description="all (the set the paper clusters, its Table 3 total) or some of "
        "the official splits (CelebA train/valid/test; CheXpert train/"
        "valid)",
    )
    targets: list[Text] | None = D(
        None,
        description="the probe targets (null: celeba Attractive, Wavy_Hair; "
        "chexpert its five findings; synthetic shape)",
    )
    protected: list[Text] | None = D(
        None,
        description="the protected attributes, evaluation only (null: celeba Male, "
        "Young; chexpert Sex, Age; synthetic colour)",
    )
    uncertain: Literal["zeros", "ones", "ignore"] = D(
        "zeros", description="chexpert: what an uncertain finding label becomes"
    )
    frontal_only: bool = D(False, description="chexpert: keep frontal radiographs only")
    age_threshold: Count = D(60, description="chexpert: Age group 1 at or above this age, 0 below")
    max_samples: Count | None = D(None, description="keep the first N images of the chosen splits (null: all)")
    n: Count = D(300, description="synthetic: the number of images")
    minority_fraction: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = D(
        0.2, description="synthetic: the share of images in the minority colour family"
    )
    image_size: Count = D(32, description="synthetic: image side in pixels")


class SamplingModel(Section):
    """The SimCLR model: backbone and projection head."""

    backbone: Text = D("microsoft/resnet-50", description="the backbone architecture (a Hub id or folder)")
    pretrained: bool = D(
        False, description="load the backbone's weights (false: randomly initialised, SimCLR from scratch)"
    )
    projection_dim: FedCount = fed(("sampling", "model", "projection_dim"), 128)
    projection_hidden_dim: FedCount | None = fed(("sampling", "model", "projection_hidden_dim"), None)


Pair = Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=2, max_length=2)]


class SamplingAugment(Section):
    """The SimCLR views (kornia); by default the paper's three augmentations: colour jitter, crop, greyscale."""

    crop_scale: Pair = D([0.08, 1.0], description="area range of the random resized crop (output size = input size)")
    flip_p: Probability = D(0.0, description="probability of a horizontal flip (0: off, as the paper)")
    jitter: Annotated[list[Annotated[float, Field(ge=0, allow_inf_nan=False)]], Field(min_length=4, max_length=4)] = D(
        [0.8, 0.8, 0.8, 0.2], description="colour jitter strengths: brightness, contrast, saturation, hue"
    )
    jitter_p: Probability = D(0.8, description="probability of the colour jitter")
    grayscale_p: Probability = D(0.2, description="probability of greyscale")
    blur_p: Probability = D(0.0, description="probability of a Gaussian blur (0: off, as the paper)")
    blur_sigma: Pair = D([0.1, 2.0], description="range of the blur's sigma")
    blur_kernel_fraction: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = D(
        0.1, description="the blur kernel's size as a fraction of the shorter image side (odd, at least 3)"
    )


class SamplingClusters(Section):
    """K-means, once, on the stage-1 ``z`` of the whole set."""

    n_clusters: FedGroups = fed(("sampling", "clusters", "n_clusters"), 4)
    seed: Seed = D(0, description="the K-means seed (recorded)")
    n_init: FedCount = fed(("sampling", "clusters", "n_init"), 10)


class SamplingProbe(Section):
    """The linear probe per target (fairmt.eval.linear_probe) on each stage's embeddings."""

    features: Literal["backbone", "projection"] = D(
        "projection", description="probe z (projection, the paper's embeddings) or the backbone's h"
    )
    test_fraction: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = D(
        0.2, description="the share of images held out to test the probe (seeded 80/20 split)"
    )
    seed: Seed = D(0, description="the seed of the probe's split")
    standardize: bool = D(True, description="standardise the features before the probe")
    C: Positive = D(
        1.0, description="inverse L2 strength of the logistic regression (optimizer sgd: alpha = 1/(C·n_train))"
    )
    max_iter: Count = D(1000, description="optimizer lbfgs: iterations to convergence at most")
    optimizer: Literal["lbfgs", "sgd"] = D(
        "lbfgs",
        description="lbfgs: logistic regression to convergence; sgd: the "
        "paper's gradient probe (learning_rate, epochs)",
    )
    learning_rate: Positive = D(1e-4, description="optimizer sgd: the constant learning rate")
    epochs: Count = D(100, description="optimizer sgd: passes over the training rows")


DEFAULT_TARGETS = {
    "celeba": ["Attractive", "Wavy_Hair"],
    "chexpert": ["Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Pleural Effusion"],
    "synthetic": ["shape"],
}
"""The probe targets of each data set when ``data.targets`` is null."""
DEFAULT_PROTECTED = {"celeba": ["Male", "Young"], "chexpert": ["Sex", "Age"], "synthetic": ["colour"]}
"""The protected attributes of each data set when ``data.protected`` is null."""

SAMPLING_TRAINING = {
    "per_device_train_batch_size": 256,
    "per_device_eval_batch_size": 256,
    "learning_rate": 3e-4,
    "weight_decay": 1e-4,
    "logging_steps": 50,
    "dataloader_num_workers": 4,
    "dataloader_drop_last": True,
    "save_strategy": "epoch",
    "save_total_limit": 1,
}
"""The ``training`` a sampling recipe starts from, shared by both training stages (not given in the paper: Adam as
common SimCLR re-implementations use it); its keys override these one by one."""
SAMPLING_STAGE1 = {"num_train_epochs": 30, "sampling_temperature": 0.5}
"""The ``stage1`` (SimCLR pre-training) a sampling recipe starts from."""
SAMPLING_STAGE2 = {
    "init": "stage1",
    "num_train_epochs": 30,
    "sampling_temperature": 0.5,
    "epsilon": 0.1,
    "num_negatives": 1,
    "cluster_refit": "once",
    "index_refresh_steps": 0,
    "negative_source": "encode",
    "pair_loss": "batch",
    "negative_draw": "two_stage",
}
"""The ``stage2`` (Algorithm 1, or SimCLR for the baseline) a sampling recipe starts from."""

STAGE_KEYS = {"stage2": {"init"}}
"""Keys of the stage sections that are not training arguments."""
FIXED_ARGS = {"output_dir", "objective", "seed", "n_clusters", "kmeans_n_init", "report_to"}
"""Training arguments the recipe sets itself: a stage section may not set them."""
FIXED_BY = {
    "objective": "objective",
    "seed": "seed",
    "n_clusters": "clusters.n_clusters",
    "kmeans_n_init": "clusters.n_init",
}
"""The :data:`FIXED_ARGS` a recipe key sets in both stages' Trainer Config → that key (``output_dir``: bookkeeping;
``report_to``: none)."""
SAMPLING_ONLY = (
    "epsilon",
    "num_negatives",
    "cluster_refit",
    "index_refresh_steps",
    "negative_source",
    "pair_loss",
    "negative_draw",
)
"""FairnessSamplingConfig fields only Algorithm 1 reads: the SimCLR stages (stage 1, and stage 2 of ``objective:
simclr``) do not get them."""


def check_stages(config: dict) -> None:
    """The stage sections (``training``, ``stage1``, ``stage2``) as written: Trainer arguments of
    FairnessSamplingConfig (``stage2.init`` apart), none the recipe sets itself, no checkpoint by path."""
    from fairmt.recipes._checks import check_training
    from fairmt.trainers.sampling import FairnessSamplingConfig

    for section in ("training", "stage1", "stage2"):
        sec = config.get(section)
        if sec is None:
            continue
        if not isinstance(sec, dict):
            raise FairmtError(f"recipe key {section} must be a mapping")
        if "resume_from_checkpoint" in sec:
            raise FairmtError(
                f"recipe key {section}.resume_from_checkpoint: a sampling run resumes by itself — run "
                "the same command again and each stage continues from its last complete checkpoint "
                "in the run's folder (a checkpoint given by path is not supported)"
            )
        fixed = sorted(set(sec) & FIXED_ARGS)
        if fixed:
            raise FairmtError(
                f"recipe key(s) {', '.join(f'{section}.{k}' for k in fixed)} are set by the recipe "
                "itself (use objective, seed, output_dir, clusters.*)"
            )
        check_training(
            {k: v for k, v in sec.items() if k not in STAGE_KEYS.get(section, set())}, [FairnessSamplingConfig], section
        )


PROBE_KEYS = {"max_iter": "lbfgs", "learning_rate": "sgd", "epochs": "sgd"}
"""``probe.*`` keys → the ``probe.optimizer`` that reads them."""
DATA_KEYS: dict[str, tuple[str, ...]] = {
    "root": ("celeba", "chexpert"),
    "source": ("celeba",),
    "hub_id": ("celeba",),
    "splits": ("celeba", "chexpert"),
    "uncertain": ("chexpert",),
    "frontal_only": ("chexpert",),
    "age_threshold": ("chexpert",),
    "max_samples": ("celeba", "chexpert"),
    "n": ("synthetic",),
    "minority_fraction": ("synthetic",),
    "image_size": ("synthetic",),
}
"""``data.*`` keys → the ``data.dataset`` values that read them (the others: every data set)."""

RENAMED_OBJECTIVES = {"sampling": "sampling_pretrain"}
"""Older recipe spellings of an objective → its name, the Config's (``FairnessSamplingConfig.objective`` of stage 2;
the Config's own ``sampling`` is CE + μ·NT-Xent on a classifier, which a ``method: classification`` recipe names); the
old spelling is read as the new one with a ``FutureWarning`` until fairmt 0.2."""


class SamplingRecipe(Recipe):
    """Fairness-driven sampling on images (Martin & Ogbuokiri): SimCLR, K-means, Algorithm 1, probes. Every default
    of the family is here (the runner, ``--dry-run`` and the paper cards read this object;
    :func:`fairmt.recipes.sampling.runner.resolve_config` adds only each stage's Trainer Config, ``resolved``)."""

    method: Literal["sampling"] = D("sampling", description="sampling")
    objective: Literal["sampling_pretrain", "simclr"] = D(
        "sampling_pretrain",
        description="the stage-2 sampler: sampling_pretrain (Algorithm 1) or simclr (the random-sampling baseline); "
        "the FairnessSamplingConfig objective of stage 2 (sampling is the older spelling of sampling_pretrain)",
    )
    seed: Seed = D(0, description="the training seed of both stages (TrainingArguments.seed)")
    output_dir: Text | None = D(None, description="the run's folder (null: outputs/<recipe name>)")
    stage1_from: Text | None = D(
        None, description="take stages 1-2 (SimCLR model, clusters) from another run's folder (null: train them)"
    )
    data: SamplingData = D(default_factory=SamplingData, description="the image data set")
    model: SamplingModel = D(default_factory=SamplingModel, description="the SimCLR model")
    augment: SamplingAugment = D(default_factory=SamplingAugment, description="the SimCLR views")
    training: dict = D(
        default_factory=lambda: dict(SAMPLING_TRAINING),
        description=trainer_doc(SAMPLING_CONFIG, "Trainer arguments shared by both training stages"),
    )
    stage1: dict = D(
        default_factory=lambda: dict(SAMPLING_STAGE1),
        description=trainer_doc(SAMPLING_CONFIG, "Trainer arguments of stage 1 (SimCLR pre-training)"),
    )
    clusters: SamplingClusters = D(default_factory=SamplingClusters, description="K-means on the stage-1 embeddings")
    stage2: dict = D(
        default_factory=lambda: dict(SAMPLING_STAGE2),
        description=trainer_doc(SAMPLING_CONFIG, "Trainer arguments of stage 2 (init: stage1 or scratch)"),
    )
    probe: SamplingProbe = D(default_factory=SamplingProbe, description="the linear probes")

    _training_defaults = field_validator("training", mode="before")(merged_over(SAMPLING_TRAINING))
    _stage1_defaults = field_validator("stage1", mode="before")(merged_over(SAMPLING_STAGE1))
    _stage2_defaults = field_validator("stage2", mode="before")(merged_over(SAMPLING_STAGE2))

    _renamed_objective = field_validator("objective", mode="before")(renamed_values("objective", RENAMED_OBJECTIVES))

    @field_validator("data", "model", "augment", "clusters", "probe", mode="before")
    @classmethod
    def _none_is_default(cls, value):
        return {} if value is None else value

    @model_validator(mode="before")
    @classmethod
    def _stage_rules(cls, data: Any) -> Any:
        if isinstance(data, dict):
            check_stages(data)  # the stage sections' Trainer arguments and the keys the recipe sets itself
        return data

    @model_validator(mode="after")
    def _resolved(self):
        """The values that depend on other keys: the data set's targets and protected attributes, the run folder."""
        from pathlib import Path

        if self.stage2["init"] not in ("stage1", "scratch"):
            raise FairmtError(f"stage2.init must be stage1 or scratch, got {self.stage2['init']!r}")
        d = self.data
        d.targets = list(d.targets or DEFAULT_TARGETS[d.dataset])
        d.protected = list(d.protected if d.protected is not None else DEFAULT_PROTECTED[d.dataset])
        self.output_dir = self.output_dir or str(Path("outputs") / Path(self.recipe_path or "sampling").stem)
        return self

    def unread(self, config: dict) -> list[Unread]:
        """The keys ``config`` sets that this run would not read (:class:`~fairmt.recipes._schema.Unread`): a
        ``training`` key both stages set again (shadowed); the options of Algorithm 1 on a SimCLR stage, the options of
        another data set or probe optimizer (inert: refused when not their default)."""
        out: list[Unread] = []
        s1, s2 = given(config, "stage1"), given(config, "stage2")
        for key in given(config, "training"):
            if key in s1 and key in s2:
                out.append(
                    Unread(
                        f"training.{key}",
                        f"stage1.{key}",
                        f"stage1.{key} ({s1[key]}) and stage2.{key} ({s2[key]}) set it for both stages; set those",
                    )
                )
        for section, keys in (("training", given(config, "training")), ("stage1", s1), ("stage2", s2)):
            for key, value in keys.items():
                if (
                    key in SAMPLING_ONLY
                    and (section == "stage1" or self.objective == "simclr")
                    and value != SAMPLING_STAGE2[key]
                ):  # inert: its default asks for nothing
                    what = (
                        "stage 1 trains SimCLR"
                        if section == "stage1"
                        else "objective simclr trains SimCLR in both stages"
                    )
                    out.append(
                        Unread(
                            f"{section}.{key}",
                            "objective" if section != "stage1" else "stage2." + key,
                            f"{what}, which reads no option of Algorithm 1 (set stage2.{key} with objective sampling_pretrain)",
                        )
                    )
        for key, value in given(config, "data").items():
            readers = DATA_KEYS.get(key)
            if readers and self.data.dataset not in readers and value != SamplingData.model_fields[key].default:
                out.append(
                    Unread(
                        f"data.{key}",
                        "data.dataset",
                        f"data.dataset {self.data.dataset} does not read it (only {', '.join(readers)} do)",
                    )
                )
        for key, value in given(config, "probe").items():
            if (
                key in PROBE_KEYS
                and PROBE_KEYS[key] != self.probe.optimizer
                and value != SamplingProbe.model_fields[key].default
            ):
                out.append(
                    Unread(
                        f"probe.{key}",
                        "probe.optimizer",
                        f"probe.optimizer {self.probe.optimizer} does not read it (only {PROBE_KEYS[key]} does)",
                    )
                )
        return out

    @classmethod
    def typed_key(cls, key: str, config: dict) -> str:
        """``resolved.<stage>.<field>`` (each stage's Trainer Config) as a user types it: ``<stage>.<field>``, or the
        key the recipe sets it from (:data:`FIXED_BY`: ``resolved.stage1.seed`` is ``seed``)."""
        parts = key.split(".")
        if parts[0] != "resolved" or len(parts) < 3:
            return key
        if len(parts) == 3 and parts[2] in FIXED_BY:
            return key if (parts[1], parts[2]) == ("stage1", "objective") else FIXED_BY[parts[2]]  # stage 1: simclr
        return ".".join(parts[1:])
