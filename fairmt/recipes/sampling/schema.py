"""The schema of the ``sampling`` recipe family: fairness-driven sampling on images (Martin & Ogbuokiri)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from fairmt.errors import COUNT, GROUPS
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
    fed,
    ranged,
    trainer_doc,
)

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
        from fairmt.recipes.sampling.runner import validate

        if isinstance(data, dict):
            validate(data)  # the runner's own rules: the stage sections' Trainer arguments and the keys it sets itself
        return data
