"""Fairness-driven sampling (Martin & Ogbuokiri, "Reducing Representation Bias through Fairness-Driven Sampling in
Contrastive Learning") and its SimCLR baseline, for image and text encoders alike.

One Trainer, four objectives (``FairnessSamplingConfig.objective``):

=====================  ===========================================================================================
``simclr``             SimCLR with random sampling: two views of each sample (kornia augmentations for images,
                       dropout for text), NT-Xent over **all** in-batch candidates (:func:`fairmt.losses.nt_xent_loss`);
                       the paper's phase 1 and its baseline
``sampling_pretrain``  Algorithm 1: NT-Xent with (anchor, nearest same-cluster neighbour over the whole set, ``m``
                       negatives drawn from other clusters); the paper's phase 2, self-supervised. ``pair_loss``:
                       ``batch`` (default, the paper's Eq. 2.1 over the ``2N`` views with the drawn negatives added:
                       :func:`fairmt.losses.fair_batch_nt_xent`) or ``pairs`` (an interpretation: only the
                       ``1 + m`` candidates in a denominator, :func:`fairmt.losses.fair_pair_nt_xent`)
``sampling``           ``CE + μ·L_Algorithm-1`` on a labelled classifier (the text extension: hate speech + GRU)
``ce``                 cross-entropy only
=====================  ===========================================================================================

How Algorithm 1 runs (``sampling_pretrain`` / ``sampling``):

* **one vector space**: ``z`` = the L2-normalised projection (:class:`fairmt.models.vision.SimCLRModel`) or, for a
  classifier without a projection head, its pooled representation. Clusters, positives, negatives and the loss all
  use it.
* **latent subgroups**: by default (``cluster_refit="once"``) the K-means fit given to the Trainer
  (``latent_subgroups=``, the recipe fits it on the stage-1 model over the whole training set) or, when none is
  given, one fit on the model at the start of training; labels and ``p(c) = N_c/N`` (over the full set) then stay
  fixed. ``cluster_refit="every_n_steps"`` refits K-means on the current model every ``cluster_refresh_steps``
  optimizer steps (fairmt's earlier text variant).
* **the index**: ``Z`` holds the embedding of every training sample (clean images, eval mode); it is recomputed every
  ``index_refresh_steps`` optimizer steps (default 0: never, Algorithm 1 builds P and N once from the initial ``Z``;
  ``None``: once per epoch, a fairmt extension). At
  each refresh every sample's positive is recomputed (scikit-learn ``NearestNeighbors`` per cluster, over all of
  ``Z``) — :class:`fairmt.data.sampling.PairIndex`.
* **batches**: :class:`fairmt.data.sampling.FairPairBatchSampler` yields ``[anchors | positives | negatives]``;
  with ``negative_source="encode"`` (default) all three are augmented and encoded in one forward, so gradients reach
  every image (a step encodes ``(2 + m)·N`` images against SimCLR's ``2N``). ``negative_source="bank"`` encodes
  anchors and positives only and takes the negatives' embeddings from ``Z`` (no gradient through them; as stale as
  the last refresh) — cheaper, a departure from a plain NT-Xent over the pairs.
* ``num_negatives`` defaults to 1, as published; more (independent draws) is an extension.

The protected attribute is never read in training; a ``group`` column is carried for evaluation only. Each training
log holds ``loss_ntxent`` (and ``loss_ce``), the dominance ratio and entropy of the current clusters, and the share of
drawn negatives per cluster since the last log (``neg_share_c{k}``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from transformers import Trainer, TrainingArguments

from fairmt.data.sampling import (
    FairPairBatchSampler,
    IndexedCollator,
    IndexedDataset,
    LatentSubgroups,
    PairIndex,
    fit_latent_subgroups,
)
from fairmt.distributed import world_size
from fairmt.errors import COUNT, GROUPS, POSITIVE, SIZE, WEIGHT, FairmtError, Range, check_ranges
from fairmt.losses import fair_batch_nt_xent, fair_pair_nt_xent, gather_with_grad, nt_xent_loss
from fairmt.losses.weighted import WEIGHT_COLUMN, weighted_cross_entropy
from fairmt.models.pooling import representation_and_logits
from fairmt.models.vision import contrastive_features
from fairmt.trainers.faults import FaultGuardMixin
from fairmt.trainers.sharding import ShardingMixin
from fairmt.trainers.term_logging import LossTermLogMixin

SAMPLING_OBJECTIVES = ("simclr", "sampling_pretrain", "sampling", "ce")
CLUSTER_REFIT = ("once", "every_n_steps")
NEGATIVE_SOURCES = ("encode", "bank")
PAIR_LOSSES = ("batch", "pairs")
NEGATIVE_DRAWS = ("two_stage", "product")


@dataclass
class FairnessSamplingConfig(TrainingArguments):
    """Arguments of :class:`FairnessSamplingTrainer` (defaults: the paper's K = 4, τ = 0.5, ε = 0.1, one negative).

    Args:
        objective: ``simclr``, ``sampling_pretrain``, ``sampling`` or ``ce`` (module docstring).
        n_clusters: K of K-means (latent subgroups), when the Trainer fits them.
        kmeans_n_init: K-means restarts (scikit-learn ``n_init``).
        epsilon: ε, the floor weight of every other cluster in ``w(c) = max(0, 1/C − p(c)) + ε``.
        num_negatives: negatives per anchor (1 as published; more is an extension).
        sampling_temperature: τ of the NT-Xent (both objectives).
        sampling_weight: μ, weight of the NT-Xent next to CE in ``objective="sampling"``.
        cluster_refit: ``once`` (fixed latent subgroups) or ``every_n_steps``.
        cluster_refresh_steps: the refit interval of ``every_n_steps``, in optimizer steps (default 50); refused with
            ``once``, where it would do nothing (fairmt's earlier text variant refitted by default).
        index_refresh_steps: recompute ``Z`` (and the positives) every this many optimizer steps; ``0`` (default):
            never, as Algorithm 1; ``None``: once per epoch (an extension).
        pair_loss: ``batch`` (default: Eq. 2.1 over the batch's ``2N`` views, NN positive, drawn negatives added)
            or ``pairs`` (only the positive and the ``m`` drawn negatives in an anchor's denominator).
        negative_draw: ``two_stage`` (default: a cluster by normalised ``w(c)``, then a member ∝ distance) or
            ``product`` (``P(k) ∝ w(c_k)·‖z_i − z_k‖``).
        negative_source: ``encode`` (negatives encoded with the anchors, with gradient) or ``bank`` (their ``Z``
            rows).
        pooling: ``cls`` or ``mean`` pooling for text classifiers returning 3-D hidden states.
        group_column: batch key of the protected attribute (carried for evaluation, never trained on).
    """

    RANGES: ClassVar[dict[str, Range]] = {  # each numeric field's range (fairmt.errors.check_ranges)
        "n_clusters": GROUPS,
        "kmeans_n_init": COUNT,
        "epsilon": WEIGHT,
        "num_negatives": COUNT,
        "sampling_temperature": POSITIVE,
        "sampling_weight": WEIGHT,
        "cluster_refresh_steps": COUNT,
        "index_refresh_steps": SIZE,
    }
    objective: str = field(default="sampling_pretrain", metadata={"help": "simclr | sampling_pretrain | sampling | ce"})
    n_clusters: int = field(default=4, metadata={"help": "K of K-means"})
    kmeans_n_init: int = field(default=10, metadata={"help": "K-means restarts"})
    epsilon: float = field(default=0.1, metadata={"help": "ε floor weight"})
    num_negatives: int = field(default=1, metadata={"help": "negatives per anchor (1 as published)"})
    sampling_temperature: float = field(default=0.5, metadata={"help": "τ of the NT-Xent"})
    sampling_weight: float = field(default=0.1, metadata={"help": "μ: weight of the NT-Xent next to CE"})
    cluster_refit: str = field(default="once", metadata={"help": "once | every_n_steps"})
    cluster_refresh_steps: int | None = field(default=None, metadata={"help": "refit interval of every_n_steps (50)"})
    index_refresh_steps: int | None = field(
        default=0, metadata={"help": "Z refresh interval (0: never; None: each epoch)"}
    )
    pair_loss: str = field(default="batch", metadata={"help": "batch | pairs (the stage-2 NT-Xent's denominator)"})
    negative_draw: str = field(default="two_stage", metadata={"help": "two_stage | product (Algorithm 1 line 13)"})
    negative_source: str = field(default="encode", metadata={"help": "encode | bank"})
    pooling: str = field(default="cls", metadata={"help": "cls | mean (3-D hidden states of text classifiers)"})
    group_column: str = field(default="group", metadata={"help": "batch key of the protected attribute"})
    remove_unused_columns: bool = field(default=False, metadata={"help": "keep the image/group columns"})

    def __post_init__(self):
        check_ranges(self)  # each numeric field's declared range, TrainingArguments' too (as the recipes),
        super().__post_init__()  # before transformers' own checks, which name no range (or raise later)
        if self.objective not in SAMPLING_OBJECTIVES:
            raise FairmtError(f"objective must be one of {SAMPLING_OBJECTIVES}, got {self.objective!r}")
        if self.n_clusters < 2:
            raise FairmtError(f"n_clusters must be >= 2, got {self.n_clusters}")
        if self.num_negatives < 1:
            raise FairmtError(f"num_negatives must be >= 1, got {self.num_negatives}")
        if self.sampling_temperature <= 0:
            raise FairmtError(f"sampling_temperature must be > 0, got {self.sampling_temperature}")
        if self.cluster_refit not in CLUSTER_REFIT:
            raise FairmtError(f"cluster_refit must be one of {CLUSTER_REFIT}, got {self.cluster_refit!r}")
        if self.cluster_refit == "once" and self.cluster_refresh_steps is not None:
            raise FairmtError(
                f"cluster_refresh_steps={self.cluster_refresh_steps} does nothing with cluster_refit='once' "
                "(clusters fitted once, as published); set cluster_refit='every_n_steps' to refit them"
            )
        if self.cluster_refit == "every_n_steps" and self.cluster_refresh_steps is None:
            self.cluster_refresh_steps = 50
        if self.cluster_refresh_steps is not None and self.cluster_refresh_steps < 1:
            raise FairmtError(f"cluster_refresh_steps must be >= 1, got {self.cluster_refresh_steps}")
        if self.index_refresh_steps is not None and self.index_refresh_steps < 0:
            raise FairmtError(
                f"index_refresh_steps must be >= 0 (0: never) or None (each epoch), got {self.index_refresh_steps}"
            )
        if self.pair_loss not in PAIR_LOSSES:
            raise FairmtError(f"pair_loss must be one of {PAIR_LOSSES}, got {self.pair_loss!r}")
        if self.negative_draw not in NEGATIVE_DRAWS:
            raise FairmtError(f"negative_draw must be one of {NEGATIVE_DRAWS}, got {self.negative_draw!r}")
        if self.negative_source not in NEGATIVE_SOURCES:
            raise FairmtError(f"negative_source must be one of {NEGATIVE_SOURCES}, got {self.negative_source!r}")
        if self.pooling not in ("cls", "mean"):
            raise FairmtError(f"pooling must be cls or mean, got {self.pooling!r}")
        if self.remove_unused_columns:
            raise FairmtError("remove_unused_columns=True drops the image and group columns; set it to False")

    @classmethod
    def allowed_objectives(cls) -> tuple[str, ...]:
        return SAMPLING_OBJECTIVES


def _concat(batches: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        k: torch.cat([b[k] for b in batches]) if isinstance(batches[0][k], torch.Tensor) else batches[0][k]
        for k in batches[0]
    }


class FairnessSamplingTrainer(FaultGuardMixin, ShardingMixin, LossTermLogMixin, Trainer):
    """Trainer for SimCLR and fairness-driven sampling (module docstring, :class:`FairnessSamplingConfig`).

    Extra arguments:
        augmentation: a :class:`fairmt.data.images.SimCLRAugmentation` (images: the views of ``pixel_values``;
            without it image batches are taken as already normalised and ``simclr`` is refused).
        latent_subgroups: a :class:`fairmt.data.sampling.LatentSubgroups` fitted on the training set (same row
            order); without it the Trainer fits K-means itself at the start.
        index_embeddings: the ``(N, d)`` normalised embeddings ``latent_subgroups`` was fitted on — the initial
            ``Z``, saving one embedding pass.

    Example (``simclr_model``: :func:`fairmt.models.vision.build_simclr_model`; ``images``: a dataset of images;
    ``processor``: its image processor, whose mean ``m`` and std ``s`` the augmentation uses; ``run/clusters``: the
    K-means of the baseline SimCLR embeddings, saved; runs as a test, ``tests/project/test_docstring_examples.py``)::

        >>> from fairmt.data.sampling import LatentSubgroups
        >>> from fairmt.data.images import ImageCollator, SimCLRAugmentation
        >>> args = FairnessSamplingConfig(output_dir="out", objective="sampling_pretrain", per_device_train_batch_size=256)
        >>> trainer = FairnessSamplingTrainer(model=simclr_model, args=args, train_dataset=images,
        ...                                   data_collator=ImageCollator(processor), augmentation=SimCLRAugmentation(m, s),
        ...                                   latent_subgroups=LatentSubgroups.load("run/clusters"))
        >>> result = trainer.train()
        >>> result.global_step > 0
        True
    """

    loss_is_scaled_for_ga = False  # every term is a per-batch mean

    def __init__(
        self,
        *args: Any,
        augmentation: Any = None,
        latent_subgroups: LatentSubgroups | None = None,
        index_embeddings: np.ndarray | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, FairnessSamplingConfig):
            raise FairmtError("FairnessSamplingTrainer needs FairnessSamplingConfig arguments")
        if not self.label_names or self.label_names == ["labels"]:
            self.label_names = ["labels", self.args.group_column]
        self.augmentation = augmentation
        self.latent_subgroups = latent_subgroups
        self._initial_z = index_embeddings
        if (
            latent_subgroups is not None
            and self.train_dataset is not None
            and len(latent_subgroups.labels) != len(self.train_dataset)
        ):
            raise FairmtError(
                f"latent_subgroups label {len(latent_subgroups.labels)} samples but the training set "
                f"holds {len(self.train_dataset)}; fit them on the same rows"
            )
        self.pair_index: PairIndex | None = None
        self.cluster_history: list[dict[str, Any]] = []
        self._fitted_at: int | None = None
        self._refreshed_at: int | None = None
        self._steps_per_epoch = 1
        self._neg_counts = np.zeros(max(self.args.n_clusters, 1), dtype=np.int64)
        self._generator = torch.Generator().manual_seed(self.args.seed)

    # ------------------------------------------------------------------ inputs and views
    def _split(self, inputs: dict[str, Any]) -> tuple[dict[str, Any], Any, Any]:
        inputs = dict(inputs)
        labels = inputs.pop("labels", None)
        inputs.pop(self.args.group_column, None)
        inputs.pop(WEIGHT_COLUMN, None)  # balanced training's instance weights: objective_terms reads them
        index = inputs.pop("sample_index", None)
        return inputs, labels, index

    def _view(self, model_inputs: dict[str, Any], augment: bool) -> dict[str, Any]:
        """Images: an augmented view (``augment``) or the normalised image; other inputs as they are."""
        if "pixel_values" not in model_inputs or self.augmentation is None:
            return model_inputs
        pv = model_inputs["pixel_values"]
        return {**model_inputs, "pixel_values": self.augmentation(pv) if augment else self.augmentation.clean(pv)}

    def _features(self, model, model_inputs):
        return contrastive_features(model, model_inputs, self.args.pooling)

    # ------------------------------------------------------------------ the index over the whole training set
    @torch.no_grad()
    def embed_dataset(
        self, model: torch.nn.Module | None = None, dataset: Any = None, with_features: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """L2-normalised ``z`` of every row of ``dataset`` (default: the training set) in order — clean images, eval
        mode; with ``with_features`` also the backbone features ``h``."""
        model = self.model if model is None else model
        dataset = self.train_dataset if dataset is None else dataset
        loader = DataLoader(
            dataset,
            batch_size=self.args.per_device_eval_batch_size,
            shuffle=False,
            collate_fn=self.data_collator,
            num_workers=self.args.dataloader_num_workers,
        )
        was_training = model.training
        model.eval()
        zs, hs = [], []
        try:
            for batch in loader:
                batch = self._prepare_inputs(batch)
                model_inputs, _, _ = self._split(batch)
                h, z, _ = self._features(model, self._view(model_inputs, augment=False))
                zs.append(F.normalize(z.float(), dim=-1).cpu())
                if with_features:
                    hs.append(h.float().cpu())
        finally:
            model.train(was_training)
        z = torch.cat(zs).numpy()
        return (z, torch.cat(hs).numpy()) if with_features else z

    def _fit(self, z: np.ndarray) -> LatentSubgroups:
        a = self.args
        sub = fit_latent_subgroups(z, a.n_clusters, a.seed, a.kmeans_n_init, space="normalised projection")
        self._fitted_at = self.state.global_step
        return sub

    def _record_clusters(self, labels: np.ndarray, k: int, event: str) -> None:
        sizes = np.bincount(labels, minlength=k)
        p = sizes / sizes.sum()
        nz = p[p > 0]
        self.cluster_history.append(
            {
                "step": self.state.global_step,
                "event": event,
                "cluster_sizes": sizes.tolist(),
                "cluster_dominance_ratio": float(p.max()),
                "representation_entropy": float(-(nz * np.log2(nz)).sum()),
            }
        )

    def build_index(self, model: torch.nn.Module | None = None) -> PairIndex:
        """The initial :class:`PairIndex`: the given latent subgroups (and ``Z``) or a K-means fit on ``model``."""
        if self.train_dataset is None:
            raise FairmtError("fairness-driven sampling needs a train_dataset to build the latent subgroups on")
        a = self.args
        z = self._initial_z if self._initial_z is not None else self.embed_dataset(model)
        if len(z) != len(self.train_dataset):
            raise FairmtError(f"index_embeddings has {len(z)} rows for {len(self.train_dataset)} training samples")
        if self.latent_subgroups is None:
            self.latent_subgroups = self._fit(z)
            event = "fit"
        else:
            event = "given"
            self._fitted_at = self.state.global_step
        sub = self.latent_subgroups
        self.pair_index = PairIndex(z, sub.labels, sub.n_clusters, sub.probs, a.epsilon, draw=a.negative_draw)
        self._refreshed_at = self.state.global_step
        if len(self._neg_counts) != sub.n_clusters:
            self._neg_counts = np.zeros(sub.n_clusters, dtype=np.int64)
        self._record_clusters(sub.labels, sub.n_clusters, event)
        return self.pair_index

    def refresh_index(self, model: torch.nn.Module, refit: bool = False) -> None:
        """Recompute ``Z`` with ``model`` (and, with ``refit``, K-means and ``p(c)``); recompute every positive."""
        z = self.embed_dataset(model)
        if refit:
            self.latent_subgroups = self._fit(z)
            sub = self.latent_subgroups
            self.pair_index.update(z, sub.labels, sub.n_clusters, sub.probs)
            self._record_clusters(sub.labels, sub.n_clusters, "refit")
        else:
            self.pair_index.update(z)
        self._refreshed_at = self.state.global_step

    def _maybe_refresh(self, model: torch.nn.Module) -> None:
        a, step = self.args, self.state.global_step
        if self.pair_index is None:
            self.build_index(model)
            return
        if a.cluster_refit == "every_n_steps" and step - self._fitted_at >= a.cluster_refresh_steps:
            self.refresh_index(model, refit=True)
            return
        every = self._steps_per_epoch if a.index_refresh_steps is None else a.index_refresh_steps
        if every and step - self._refreshed_at >= every:
            self.refresh_index(model)

    # ------------------------------------------------------------------ data
    def get_train_dataloader(self) -> DataLoader:
        """Algorithm 1's batches (``[anchors | positives | negatives]``) for the sampling objectives."""
        if self.args.objective in ("simclr", "ce"):
            return super().get_train_dataloader()
        if self.pair_index is None:
            self.build_index(self.model)
        a = self.args
        sampler = FairPairBatchSampler(
            self.pair_index,
            a.per_device_train_batch_size,
            a.num_negatives,
            drop_last=a.dataloader_drop_last,
            seed=a.seed,
            with_negatives=a.negative_source == "encode",
        )
        loader = DataLoader(
            IndexedDataset(self.train_dataset),
            batch_sampler=sampler,
            collate_fn=IndexedCollator(self.data_collator),
            num_workers=a.dataloader_num_workers,
            pin_memory=a.dataloader_pin_memory,
        )
        loader = self.accelerator.prepare(loader)
        self._steps_per_epoch = max(1, len(loader) // max(a.gradient_accumulation_steps, 1))
        return loader

    # ------------------------------------------------------------------ objective
    def _ce(self, logits, labels, weights=None):
        if logits is None:
            raise FairmtError(
                f"objective {self.args.objective!r} needs a classifier with logits (a model with a classification head)"
            )
        if labels is None:
            raise FairmtError(
                "the batch has no 'labels' column: CE needs task labels (sampling_pretrain and simclr do not)"
            )
        return weighted_cross_entropy(logits, labels, weights)

    def objective_terms(self, model, inputs: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Total training loss and its terms for one batch."""
        a = self.args
        model_inputs, labels, index = self._split(inputs)
        terms: dict[str, torch.Tensor] = {}
        if a.objective == "ce":
            _, _, logits = self._features(model, self._view(model_inputs, augment=True))
            terms["ce"] = self._ce(logits, labels, inputs.get(WEIGHT_COLUMN))
            return terms["ce"], terms
        if a.objective == "simclr":
            if "pixel_values" in model_inputs and self.augmentation is None:
                raise FairmtError(
                    "simclr on images needs an augmentation (SimCLRAugmentation): two identical views teach nothing"
                )
            both = _concat([self._view(model_inputs, True), self._view(model_inputs, True)])
            _, z, _ = self._features(model, both)
            z1, z2 = z.chunk(2)
            if world_size() > 1:  # every process's views are candidates (dataloader_drop_last=True)
                z1, z2 = gather_with_grad(z1), gather_with_grad(z2)
            terms["ntxent"] = nt_xent_loss(z1, z2, a.sampling_temperature)
            return terms["ntxent"], terms
        rows = next(v.shape[0] for v in model_inputs.values() if isinstance(v, torch.Tensor))
        m = a.num_negatives
        per = 2 + m if a.negative_source == "encode" else 2
        n = rows // per
        if n * per != rows or index is None:
            raise FairmtError(
                f"objective {a.objective!r} expects batches of [anchors | positives | negatives] from "
                "FairnessSamplingTrainer's own dataloader (get_train_dataloader)"
            )
        _, z, logits = self._features(model, self._view(model_inputs, augment=True))
        anchors, positives = z[:n], z[n : 2 * n]
        if a.negative_source == "encode":
            negatives = z[2 * n :].reshape(n, m, -1)
            neg_index = index[2 * n :].cpu().numpy()
        else:
            neg_index = self.pair_index.negatives(index[:n].cpu().numpy(), m, self._generator).reshape(-1)
            negatives = torch.from_numpy(self.pair_index.Z[neg_index]).to(z.device, z.dtype).reshape(n, m, -1)
        self._neg_counts += np.bincount(self.pair_index.labels[neg_index], minlength=len(self._neg_counts))
        loss_fn = fair_batch_nt_xent if a.pair_loss == "batch" else fair_pair_nt_xent
        terms["ntxent"] = loss_fn(anchors, positives, negatives, a.sampling_temperature)
        if a.objective == "sampling_pretrain":
            return terms["ntxent"], terms
        w = inputs.get(WEIGHT_COLUMN)
        terms["ce"] = self._ce(
            None if logits is None else logits[:n], None if labels is None else labels[:n], None if w is None else w[:n]
        )
        return terms["ce"] + a.sampling_weight * terms["ntxent"], terms

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """The objective on training batches; CE with ``logits``/``hidden`` outputs in evaluation (classifiers)."""
        if not model.training:
            model_inputs, labels, _ = self._split(inputs)
            rep, logits = representation_and_logits(model, model_inputs, self.args.pooling)
            if labels is None:
                raise FairmtError("the evaluation batch has no 'labels' column")
            loss = F.cross_entropy(logits.float(), labels.long())
            return (loss, {"logits": logits, "hidden": rep}) if return_outputs else loss
        loss, terms = self.objective_terms(model, inputs)
        self._record_terms(terms, prefix="loss_")
        return (loss, {}) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        """Refresh ``Z`` / refit the clusters when due, then the usual step."""
        if self.args.objective in ("sampling", "sampling_pretrain"):
            self._maybe_refresh(self.accelerator.unwrap_model(model))
        return super().training_step(model, inputs, num_items_in_batch)

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """Also log the balance of the current latent subgroups and where the negatives came from."""
        if "loss" in logs and self.cluster_history:
            last = self.cluster_history[-1]
            logs["cluster_dominance_ratio"] = round(last["cluster_dominance_ratio"], 6)
            logs["representation_entropy"] = round(last["representation_entropy"], 6)
            logs["max_entropy"] = round(math.log2(len(last["cluster_sizes"])), 6)
            total = int(self._neg_counts.sum())
            if total:
                for c, k in enumerate(self._neg_counts):
                    logs[f"neg_share_c{c}"] = round(float(k) / total, 6)
                self._neg_counts[:] = 0
        super().log(logs, *args, **kwargs)
