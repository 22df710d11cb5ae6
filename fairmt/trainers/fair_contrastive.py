"""Fair contrastive fine-tuning of sequence classifiers: CSCL (Chi et al., 2022) and FCL (Shen et al., 2022).

``FairContrastiveTrainer`` is a :class:`transformers.Trainer` for any classifier that returns ``logits`` and, with
``output_hidden_states=True``, ``hidden_states`` — an ``AutoModelForSequenceClassification`` (the representation is
the pooled last hidden state: ``[CLS]`` or the mean over tokens) or one of
:mod:`fairmt.models.text_classifiers` (the representation is the encoder output fed to the head). Objectives
(``FairContrastiveConfig.objective``):

=================  ===============================================================  ==========================
objective          loss                                                             paper
=================  ===============================================================  ==========================
``ce``             ``CE``                                                           baseline; 2nd stage
``cscl``           ``(1−γ)·CE + γ·L_sup + λ·L_CS``                                  Chi et al. Eq. 4 (1-stage)
``cscl_pretrain``  ``L_sup + λ·L_CS`` (then freeze the encoder, train the head: ce)  Chi et al. Eq. 3 (2-stage)
``fcl``            ``α·CE + β·(L_scl − L_fcl)``                                     Shen et al. Eq. 3 (Con*)
``fcl_pretrain``   ``L_scl − L_fcl`` (then ce on a frozen encoder)                  Shen et al. (Con*^ft)
=================  ===============================================================  ==========================

Views for ``L_sup``/``L_CS`` come from dropout (two stochastic forwards of the same batch, ``views="dropout"``) or
from augmentation (``views="augment"``: the collator supplies ``view_input_ids``/``view_attention_mask`` — EDA or
back-translation outputs, see :mod:`fairmt.data.augment`). FCL uses one view by default (``views="none"``), as
published. The protected attribute comes in the ``group`` column (``group_column``), which the collator
(:class:`fairmt.data.classification.ClassificationCollator`) carries; hence ``remove_unused_columns=False``.

Under ``torch.distributed`` (``accelerate launch``) the contrastive terms use the candidates of every process
(:func:`fairmt.losses.gather_with_grad`; per-process batches must be equal: ``dataloader_drop_last=True``); CE stays
local. Large contrastive batches go through gradient caching (``gradcache_chunk_size``, :mod:`fairmt.trainers.gradcache`):
the gradient equals the plain full-batch step while only one chunk's activations are alive.

Each loss term is logged separately (``loss_ce``, ``loss_sup``, ``loss_cs``, ``loss_scl``, ``loss_fcl``), averaged
over the steps since the last log. The evaluation loss is the cross-entropy (the quantity a dev-set model selection
by loss uses); ``predict`` returns ``(logits, hidden)`` predictions and ``(labels, group)`` label ids so that
fairness metrics and leakage@h can be computed on the dev set (:mod:`fairmt.eval.selection`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from transformers import Trainer, TrainingArguments

from fairmt.errors import FairmtError
from fairmt.losses import cs_infonce_loss, fcl_loss, gather_nograd, gather_with_grad, supcon_loss
from fairmt.distributed import world_size
from fairmt.models.pooling import representation_and_logits
from fairmt.trainers.gradcache import cached_backward
from fairmt.trainers.faults import FaultGuardMixin
from fairmt.trainers.sharding import ShardingMixin
from fairmt.trainers.term_logging import LossTermLogMixin

OBJECTIVES = ("ce", "cscl", "cscl_pretrain", "fcl", "fcl_pretrain")
VIEW_PREFIX = "view_"


@dataclass
class FairContrastiveConfig(TrainingArguments):
    """Training arguments for :class:`FairContrastiveTrainer` (defaults: the papers' grids and settings).

    Args:
        objective: one of ``ce``, ``cscl``, ``cscl_pretrain``, ``fcl``, ``fcl_pretrain`` (see module docstring).
        gamma: γ, weight of ``L_sup`` against CE in one-stage CSCL (Chi et al. grid {0.1, 0.3, 0.7, 0.9}).
        cs_lambda: λ, weight of ``L_CS-InfoNCE`` (Chi et al. grid {0, 1, 5, 10} on Bias-in-Bios).
        cs_anchor_weighting: ``uniform`` (mean over anchors) or ``cell_size`` (Eq. 2's 1/(N_{a,y}−1)).
        fcl_alpha, fcl_beta: α (CE) and β (contrastive) weights of FCL; fairlib's default weight is 0.1.
        temperature: τ of ``L_sup``/``L_CS``/``L_scl`` (Chi et al. grid {0.1, 0.5, 1, 2}).
        group_temperature: τ of ``L_fcl`` (default: ``temperature``).
        normalize: L2-normalise representations before the dot product (the published forms; keep True).
        views: ``dropout``, ``augment`` or ``none`` (``none``: single view; CSCL then needs ``augment``/``dropout``).
        pooling: ``cls`` or ``mean`` pooling of 3-D hidden states (2-D hidden states are used as they are).
        group_column: batch key holding the protected attribute (int ids).
        gradcache_chunk_size: with a value smaller than the batch, use gradient caching with chunks of this size.
    """

    objective: str = field(default="cscl", metadata={"help": "ce | cscl | cscl_pretrain | fcl | fcl_pretrain"})
    gamma: float = field(default=0.1, metadata={"help": "γ: weight of L_sup in one-stage CSCL"})
    cs_lambda: float = field(default=1.0, metadata={"help": "λ: weight of CS-InfoNCE"})
    cs_anchor_weighting: str = field(default="uniform", metadata={"help": "uniform | cell_size"})
    fcl_alpha: float = field(default=1.0, metadata={"help": "α: weight of CE in FCL"})
    fcl_beta: float = field(default=0.1, metadata={"help": "β: weight of L_scl − L_fcl"})
    temperature: float = field(default=0.1, metadata={"help": "τ of the task-label contrastive terms"})
    group_temperature: float | None = field(default=None, metadata={"help": "τ of L_fcl (default: temperature)"})
    normalize: bool = field(default=True, metadata={"help": "L2-normalise representations"})
    views: str = field(default="dropout", metadata={"help": "dropout | augment | none"})
    pooling: str = field(default="cls", metadata={"help": "cls | mean (3-D hidden states)"})
    group_column: str = field(default="group", metadata={"help": "batch key of the protected attribute"})
    gradcache_chunk_size: int | None = field(default=None, metadata={"help": "gradient-cache chunk size"})
    remove_unused_columns: bool = field(default=False, metadata={"help": "keep the group/view columns"})

    def __post_init__(self):
        super().__post_init__()
        allowed = self.allowed_objectives()
        if self.objective not in allowed:
            raise FairmtError(f"objective must be one of {allowed}, got {self.objective!r}")
        if self.views not in ("dropout", "augment", "none"):
            raise FairmtError(f"views must be dropout, augment or none, got {self.views!r}")
        if self.objective.startswith("cscl") and self.views == "none":
            raise FairmtError("CSCL needs two views per sample: set views to 'dropout' or 'augment'")
        if self.pooling not in ("cls", "mean"):
            raise FairmtError(f"pooling must be cls or mean, got {self.pooling!r}")
        if self.cs_anchor_weighting not in ("uniform", "cell_size"):
            raise FairmtError(f"cs_anchor_weighting must be uniform or cell_size, got {self.cs_anchor_weighting!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise FairmtError(f"gamma must lie in [0, 1], got {self.gamma}")
        if self.remove_unused_columns:
            raise FairmtError(
                "remove_unused_columns=True drops the group and view columns the fair losses need; set it to False"
            )


    @classmethod
    def allowed_objectives(cls) -> tuple[str, ...]:
        """The ``objective`` values this config accepts."""
        return OBJECTIVES


def freeze_encoder(model: torch.nn.Module, head_prefixes: tuple[str, ...] = ("classifier", "score")) -> list[str]:
    """Freeze every parameter except the head's (names starting with one of ``head_prefixes``).

    Used for the second stage of two-stage CSCL / Con*^ft. Returns the names left trainable; raises if none is.
    """
    trainable = []
    for name, p in model.named_parameters():
        keep = name.startswith(head_prefixes)
        p.requires_grad_(keep)
        if keep:
            trainable.append(name)
    if not trainable:
        raise FairmtError(f"no parameter name starts with {head_prefixes}: cannot find the classification head")
    return trainable


class FairContrastiveTrainer(FaultGuardMixin, ShardingMixin, LossTermLogMixin, Trainer):
    """Trainer for CSCL (one- and two-stage) and FCL; see the module docstring and :class:`FairContrastiveConfig`.

    Example::

        args = FairContrastiveConfig(output_dir="out", objective="cscl", gamma=0.1, cs_lambda=5.0,
                                     per_device_train_batch_size=256, gradcache_chunk_size=32)
        trainer = FairContrastiveTrainer(model=model, args=args, train_dataset=train, eval_dataset=dev,
                                         data_collator=ClassificationCollator(tokenizer))
        trainer.train()
    """

    loss_is_scaled_for_ga = False  # every term is a per-batch mean

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, FairContrastiveConfig):
            raise FairmtError("FairContrastiveTrainer needs FairContrastiveConfig arguments")
        if not self.label_names or self.label_names == ["labels"]:
            self.label_names = ["labels", self.args.group_column]

    # ------------------------------------------------------------------ batch handling
    def _split_inputs(self, inputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, torch.Tensor, torch.Tensor | None]:
        inputs = dict(inputs)
        labels = inputs.pop("labels", None)
        groups = inputs.pop(self.args.group_column, None)
        view = {k[len(VIEW_PREFIX):]: inputs.pop(k) for k in list(inputs) if k.startswith(VIEW_PREFIX)}
        return inputs, (view or None), labels, groups

    def _needs_groups(self) -> bool:
        return self.args.objective in ("cscl", "cscl_pretrain", "fcl", "fcl_pretrain")

    def _n_views(self) -> int:
        if self.args.objective == "ce":
            return 1
        return 1 if self.args.views == "none" else 2

    def _view_batches(self, model_inputs: dict[str, Any], view: dict[str, Any] | None) -> list[dict[str, Any]]:
        if self._n_views() == 1:
            return [model_inputs]
        if self.args.views == "augment":
            if view is None:
                raise FairmtError(
                    "views='augment' but the batch has no view_input_ids: give the dataset a second-view text column "
                    "(EDA / back-translation) and let the collator tokenize it"
                )
            return [model_inputs, view]
        return [model_inputs, model_inputs]

    def representation_and_logits(self, model: torch.nn.Module, model_inputs: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """One forward: the pooled ``(N, d)`` representation and the ``(N, C)`` logits."""
        return representation_and_logits(model, model_inputs, self.args.pooling)

    # ------------------------------------------------------------------ objective
    def objective_terms(
        self, reps: list[torch.Tensor], logits: torch.Tensor, labels: torch.Tensor, groups: torch.Tensor | None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Total loss and its terms from per-view representations and the first view's logits."""
        a = self.args
        if labels is None:
            raise FairmtError("the batch has no 'labels' column: the fair classification losses need task labels")
        labels = labels.long()
        terms: dict[str, torch.Tensor] = {}
        if self._needs_groups() and groups is None:
            raise FairmtError(
                f"objective {a.objective!r} needs the protected attribute in the batch column {a.group_column!r}; "
                "add it to the dataset (ints) and keep remove_unused_columns=False"
            )
        if a.objective == "ce":
            terms["ce"] = F.cross_entropy(logits.float(), labels)
            return terms["ce"], terms
        ce_labels = labels
        feats = torch.stack(reps, dim=1)  # (N, V, d)
        if world_size() > 1:  # candidates from every process, gradients flow back (dataloader_drop_last=True)
            feats, labels, groups = gather_with_grad(feats), gather_nograd(labels), gather_nograd(groups)
        if a.objective in ("cscl", "cscl_pretrain"):
            terms["sup"] = supcon_loss(feats, labels, a.temperature, a.normalize)
            terms["cs"] = cs_infonce_loss(feats, labels, groups, a.temperature, a.normalize, a.cs_anchor_weighting)
            if a.objective == "cscl":
                terms["ce"] = F.cross_entropy(logits.float(), ce_labels)
                total = (1 - a.gamma) * terms["ce"] + a.gamma * terms["sup"] + a.cs_lambda * terms["cs"]
            else:
                total = terms["sup"] + a.cs_lambda * terms["cs"]
            return total, terms
        fcl = fcl_loss(feats, labels, groups, a.temperature, a.group_temperature, a.normalize)
        terms["scl"], terms["fcl"] = fcl.scl, fcl.fcl
        if a.objective == "fcl":
            terms["ce"] = F.cross_entropy(logits.float(), ce_labels)
            return a.fcl_alpha * terms["ce"] + a.fcl_beta * fcl.loss, terms
        return fcl.loss, terms

    def _record(self, terms: dict[str, torch.Tensor]) -> None:
        self._record_terms(terms, prefix="loss_")

    # ------------------------------------------------------------------ Trainer hooks
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """Objective on training batches; CE (with ``logits``/``hidden`` outputs) in evaluation."""
        model_inputs, view, labels, groups = self._split_inputs(inputs)
        if not model.training:
            rep, logits = self.representation_and_logits(model, model_inputs)
            if labels is None:
                raise FairmtError("the evaluation batch has no 'labels' column")
            loss = F.cross_entropy(logits.float(), labels.long())
            return (loss, {"logits": logits, "hidden": rep}) if return_outputs else loss
        batches = self._view_batches(model_inputs, view)
        reps, first_logits = [], None
        for b in batches:
            rep, logits = self.representation_and_logits(model, b)
            reps.append(rep)
            first_logits = logits if first_logits is None else first_logits
        loss, terms = self.objective_terms(reps, first_logits, labels, groups)
        self._record(terms)
        return (loss, {"logits": first_logits, "hidden": reps[0]}) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        """Plain step, or a gradient-cached one when ``gradcache_chunk_size`` is below the batch size."""
        chunk = self.args.gradcache_chunk_size
        n = next((v.shape[0] for v in inputs.values() if isinstance(v, torch.Tensor)), 0)
        if not chunk or chunk >= n:
            return super().training_step(model, inputs, num_items_in_batch)
        model.train()
        inputs = self._prepare_inputs(inputs)
        model_inputs, view, labels, groups = self._split_inputs(inputs)
        batches = self._view_batches(model_inputs, view)
        recorded: dict[str, torch.Tensor] = {}
        ga = getattr(self, "current_gradient_accumulation_steps", 1)

        def forward(b):
            return self.representation_and_logits(model, b)

        def loss_fn(outs):
            reps = outs[0::2]
            loss, terms = self.objective_terms(list(reps), outs[1], labels, groups)
            recorded.update(terms)
            return loss / ga

        with self.compute_loss_context_manager():
            loss = cached_backward(
                forward, batches, loss_fn, chunk,
                backward=self.accelerator.backward,
                no_sync=lambda: self.accelerator.no_sync(model),
            )
        self._record(recorded)
        return loss

