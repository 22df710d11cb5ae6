"""Fairness-driven sampling without demographic labels (Martin & Ogbuokiri, "Reducing Representation Bias through
Fairness-Driven Sampling in Contrastive Learning").

Latent subgroups replace demographic labels: K-means (scikit-learn, K = 4 as in the paper) is fitted on the
model's *current* representations of the training set, and refitted every ``cluster_refresh_steps`` optimizer
steps. Inside each batch, samples are assigned to the nearest centroid of the current fit; each anchor's positive
is its nearest same-cluster neighbour and its negatives are drawn from other clusters with weight
``max(0, 1/C − p(c)) + ε`` and favouring distant samples (:func:`fairmt.losses.fairness_sampling_nt_xent`), where
``p(c)`` is the cluster's share of the training set at the last fit.

Objectives:

* ``sampling``: ``CE + μ·L_NT-Xent-fds`` (classification fine-tuning; μ = ``sampling_weight``);
* ``sampling_pretrain``: ``L_NT-Xent-fds`` alone (self-supervised, as the paper's SimCLR setting; then train a
  head on the frozen encoder with ``objective="ce"``).

The protected attribute is never used for training; a ``group`` column, when present, is only carried for
evaluation. After each fit the trainer logs the cluster dominance ratio (largest cluster share) and the
representation entropy, the paper's balance measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from fairmt.errors import FairmtError
from fairmt.losses import fairness_sampling_nt_xent
from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

SAMPLING_OBJECTIVES = ("sampling", "sampling_pretrain", "ce")


@dataclass
class FairnessSamplingConfig(FairContrastiveConfig):
    """Arguments of :class:`FairnessSamplingTrainer` (paper defaults: K = 4, τ = 0.5, ε = 0.1).

    Args:
        n_clusters: K of K-means (latent subgroups).
        epsilon: ε, the floor weight of every other cluster.
        num_negatives: negatives drawn per anchor (without replacement; all eligible ones if fewer).
        sampling_temperature: τ of the NT-Xent.
        sampling_weight: μ, weight of the NT-Xent next to CE in ``objective="sampling"``.
        cluster_refresh_steps: refit K-means every this many optimizer steps (and before the first step).
        cluster_fit_samples: at most this many training samples (a fixed random subset) are embedded for a fit.
    """

    objective: str = field(default="sampling", metadata={"help": "sampling | sampling_pretrain | ce"})
    views: str = field(default="none", metadata={"help": "single view: positives are nearest neighbours"})
    n_clusters: int = field(default=4, metadata={"help": "K of K-means"})
    epsilon: float = field(default=0.1, metadata={"help": "ε floor weight"})
    num_negatives: int = field(default=16, metadata={"help": "negatives per anchor"})
    sampling_temperature: float = field(default=0.5, metadata={"help": "τ of the NT-Xent"})
    sampling_weight: float = field(default=0.1, metadata={"help": "μ: weight of the NT-Xent next to CE"})
    cluster_refresh_steps: int = field(default=50, metadata={"help": "refit K-means every N steps"})
    cluster_fit_samples: int = field(default=4096, metadata={"help": "max samples embedded per fit"})

    @classmethod
    def allowed_objectives(cls) -> tuple[str, ...]:
        return SAMPLING_OBJECTIVES

    def __post_init__(self):
        super().__post_init__()
        if self.n_clusters < 2:
            raise FairmtError(f"n_clusters must be >= 2, got {self.n_clusters}")
        if self.cluster_refresh_steps < 1:
            raise FairmtError(f"cluster_refresh_steps must be >= 1, got {self.cluster_refresh_steps}")


class FairnessSamplingTrainer(FairContrastiveTrainer):
    """Trainer with fairness-driven NT-Xent on latent K-means subgroups; see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, FairnessSamplingConfig):
            raise FairmtError("FairnessSamplingTrainer needs FairnessSamplingConfig arguments")
        self.centroids: torch.Tensor | None = None
        self.cluster_probs: torch.Tensor | None = None
        self._fitted_at: int | None = None
        self._generator = torch.Generator().manual_seed(self.args.seed)
        self.cluster_history: list[dict[str, Any]] = []

    def _needs_groups(self) -> bool:
        return False

    def _n_views(self) -> int:
        return 1

    # ------------------------------------------------------------------ clustering
    @torch.no_grad()
    def embed_dataset(self, model: torch.nn.Module, dataset: Any) -> np.ndarray:
        """Current representations of (a fixed subset of) ``dataset``, in eval mode."""
        n = len(dataset)
        limit = self.args.cluster_fit_samples
        if n > limit:
            rng = np.random.default_rng(self.args.seed)
            dataset = dataset.select(sorted(rng.choice(n, limit, replace=False).tolist()))
        loader = DataLoader(dataset, batch_size=self.args.per_device_eval_batch_size, collate_fn=self.data_collator)
        was_training = model.training
        model.eval()
        out = []
        try:
            for batch in loader:
                batch = self._prepare_inputs(batch)
                model_inputs, _, _, _ = self._split_inputs(batch)
                rep, _ = self.representation_and_logits(model, model_inputs)
                out.append(F.normalize(rep.float(), dim=-1).cpu())
        finally:
            model.train(was_training)
        return torch.cat(out).numpy()

    def refresh_clusters(self, model: torch.nn.Module) -> None:
        """Fit K-means on the current training-set representations; store centroids and ``p(c)``."""
        from sklearn.cluster import KMeans

        if self.train_dataset is None:
            raise FairmtError("fairness-driven sampling needs a train_dataset to fit the latent subgroups on")
        X = self.embed_dataset(model, self.train_dataset)
        k = self.args.n_clusters
        if len(X) < k:
            raise FairmtError(f"K-means with K={k} needs at least {k} training samples, got {len(X)}")
        km = KMeans(n_clusters=k, n_init=4, random_state=self.args.seed).fit(X)
        sizes = np.bincount(km.labels_, minlength=k)
        p = sizes / sizes.sum()
        self.centroids = torch.tensor(km.cluster_centers_, dtype=torch.float32)
        self.cluster_probs = torch.tensor(p, dtype=torch.float64)
        self._fitted_at = self.state.global_step
        nz = p[p > 0]
        record = {
            "step": self.state.global_step,
            "cluster_sizes": sizes.tolist(),
            "cluster_dominance_ratio": float(p.max()),
            "representation_entropy": float(-(nz * np.log2(nz)).sum()),
        }
        self.cluster_history.append(record)

    def assign_clusters(self, reps: torch.Tensor) -> torch.Tensor:
        """Nearest-centroid cluster of each (L2-normalised) representation."""
        assert self.centroids is not None
        z = F.normalize(reps.detach().float(), dim=-1)
        return torch.cdist(z, self.centroids.to(z.device)).argmin(dim=1)

    def _maybe_refresh(self, model: torch.nn.Module) -> None:
        step = self.state.global_step
        if self._fitted_at is None or step - self._fitted_at >= self.args.cluster_refresh_steps:
            self.refresh_clusters(model)

    # ------------------------------------------------------------------ objective
    def objective_terms(self, reps, logits, labels, groups):
        """``CE + μ·NT-Xent`` (``sampling``), ``NT-Xent`` (``sampling_pretrain``) or CE."""
        a = self.args
        terms: dict[str, torch.Tensor] = {}
        if a.objective != "sampling_pretrain" and labels is None:
            raise FairmtError("the batch has no 'labels' column: CE needs task labels (sampling_pretrain does not)")
        if a.objective == "ce":
            terms["ce"] = F.cross_entropy(logits.float(), labels.long())
            return terms["ce"], terms
        z = reps[0]
        clusters = self.assign_clusters(z)
        terms["ntxent"] = fairness_sampling_nt_xent(
            z, clusters, self.cluster_probs, a.num_negatives, a.sampling_temperature, a.epsilon, self._generator
        )
        if a.objective == "sampling_pretrain":
            return terms["ntxent"], terms
        terms["ce"] = F.cross_entropy(logits.float(), labels.long())
        return terms["ce"] + a.sampling_weight * terms["ntxent"], terms

    def training_step(self, model, inputs, num_items_in_batch=None):
        """Refit the latent subgroups when due, then the usual (optionally gradient-cached) step."""
        if self.args.objective != "ce":
            self._maybe_refresh(model)
        return super().training_step(model, inputs, num_items_in_batch)

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """Also log the balance of the last K-means fit."""
        if "loss" in logs and self.cluster_history:
            last = self.cluster_history[-1]
            logs["cluster_dominance_ratio"] = round(last["cluster_dominance_ratio"], 6)
            logs["representation_entropy"] = round(last["representation_entropy"], 6)
            logs["max_entropy"] = round(math.log2(self.args.n_clusters), 6)
        super().log(logs, *args, **kwargs)
