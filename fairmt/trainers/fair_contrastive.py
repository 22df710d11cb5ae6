"""Fair contrastive fine-tuning of sequence classifiers: CSCL (Chi et al., 2022) and FCL (Shen et al., 2022).

``FairContrastiveTrainer`` is a :class:`transformers.Trainer` for any classifier that returns ``logits``. The
representation ``h`` on which the contrastive terms act is, by default (``pooling="head"``), the input of the
classification head — the one vector the classifier consumes and leakage@h is measured on, as in the papers'
``f(x) → z → g`` (Chi et al.) and ``h = Enc(Embed(x))`` (Shen et al.): the last hidden state of fairmt's classifiers
(:mod:`fairmt.models.text_classifiers`, :class:`fairmt.models.encoder_classifier.TransformerClassifier`, whose
two-layer head is CSCL's g), or the captured input of an ``AutoModelForSequenceClassification``'s head
(``dropout(pooler([CLS]))`` for BERT). ``pooling="cls"``/``"mean"`` pool the last hidden state instead (for a stock
``*ForSequenceClassification`` model a different vector from the one its head reads). Objectives
(``FairContrastiveConfig.objective``):

=================  ===============================================================  ==========================
objective          loss                                                             paper
=================  ===============================================================  ==========================
``ce``             ``CE``                                                           baseline; 2nd stage
``cscl``           ``(1−γ)·CE + γ·L_sup + λ·L_CS``                                  Chi et al. Eq. 4 (1-stage)
``cscl_pretrain``  ``L_sup + λ·L_CS`` (then freeze the encoder, train the head: ce)  Chi et al. Eq. 3 (2-stage)
``fcl``            ``α·CE + β·(w_scl·L_scl − w_fcl·L_fcl)``                         Shen et al. Eq. 3 (Con*)
``fcl_pretrain``   ``w_scl·L_scl − w_fcl·L_fcl`` (then ce on a frozen encoder)      Shen et al. (Con*^ft)
=================  ===============================================================  ==========================

Views for ``L_sup``/``L_CS`` come from dropout (two stochastic forwards of the same batch, ``views="dropout"``) or
from augmentation (``views="augment"``: the collator supplies ``view_input_ids``/``view_attention_mask`` — EDA,
CLM insert/substitute or back-translation outputs, see :mod:`fairmt.data.augment`). Leaving ``views`` unset means
the published setting of the objective: two dropout views for ``cscl*``, one view (``"none"``) for ``fcl*`` — a
second view would make each sample's copy an extra positive in both FCL terms and change the loss (Eq. 2 is
single-view). An explicit value is honoured. ``w_scl``/``w_fcl`` (``fcl_scl_weight``/``fcl_fcl_weight``) give Shen et
al.'s Fig. 3 ablations: CE+SCL (``w_fcl = 0``) and CE−FCL (``w_scl = 0``). ``fcl_variant="released"`` computes both
FCL terms as the authors' released code and fairlib (:func:`fairmt.losses.fair_contrastive.released_supcon`: raw dot
product, τ = 0.01, ...); ``fcl_group_term="eo"`` is fairlib's per-class group term. The protected attribute comes in
the ``group`` column (``group_column``), which the collator (:class:`fairmt.data.classification.ClassificationCollator`)
carries; hence ``remove_unused_columns=False``.

Two-stage training (``cscl_pretrain`` / ``fcl_pretrain``, then ``ce`` after :func:`freeze_encoder`): the papers fix
the encoder in the second stage. A frozen module is put in eval mode at every training step
(``frozen_modules_eval=True``), so encoder dropout is off while the head is fitted, as at evaluation (the CSCL
release leaves the frozen BERT in train mode; that is not what the paper describes). The frozen encoder's features
may also be computed once (:func:`encoder_features`) and the head trained on them alone (:class:`HeadOnFeatures`).
In the first stage the dev loss is the stage's own objective (``eval_objective``, default on for the ``*_pretrain``
objectives; dropout stays active for dropout views, as the CSCL release evaluates), so early stopping on it works.

Under ``torch.distributed`` (``accelerate launch``) the contrastive terms use the candidates of every process
(:func:`fairmt.losses.gather_with_grad`; per-process batches must be equal: ``dataloader_drop_last=True``); CE stays
local. Large contrastive batches go through gradient caching (``gradcache_chunk_size``,
:mod:`fairmt.trainers.gradcache`): the gradient equals the plain full-batch step while only one chunk's activations are
alive.

Each loss term is logged separately (``loss_ce``, ``loss_sup``, ``loss_cs``, ``loss_scl``, ``loss_fcl``), averaged
over the steps since the last log. The evaluation loss is the cross-entropy (the quantity a dev-set model selection
by loss uses); ``predict`` returns ``(logits, hidden)`` predictions and ``(labels, group)`` label ids so that
fairness metrics and leakage@h can be computed on the dev set (:mod:`fairmt.eval.selection`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from transformers import Trainer, TrainingArguments

from fairmt.distributed import world_size
from fairmt.errors import COUNT, POSITIVE, PROBABILITY, WEIGHT, FairmtError, Range, check_ranges
from fairmt.losses import cs_infonce_loss, fcl_loss, gather_nograd, gather_with_grad, supcon_loss
from fairmt.losses.fair_contrastive import FCL_DEFAULT_TEMPERATURE, FCL_GROUP_TERMS, FCL_VARIANTS
from fairmt.losses.weighted import WEIGHT_COLUMN, weighted_cross_entropy
from fairmt.models.pooling import REPRESENTATIONS, representation_and_logits
from fairmt.trainers.fairbatch import FairBatchMixin
from fairmt.trainers.faults import FaultGuardMixin
from fairmt.trainers.gradcache import cached_backward
from fairmt.trainers.overhead import LeanTrainMixin
from fairmt.trainers.sharding import ShardingMixin
from fairmt.trainers.term_logging import LossTermLogMixin

OBJECTIVES = ("ce", "cscl", "cscl_pretrain", "fcl", "fcl_pretrain")
PRETRAIN_OBJECTIVES = ("cscl_pretrain", "fcl_pretrain")
VIEWS = ("dropout", "augment", "none")
VIEW_PREFIX = "view_"


def default_views(objective: str) -> str:
    """The views an objective uses when ``views`` is left unset: two dropout views for CSCL (Chi et al. contrast an
    example with its augmented view), one view for FCL (Shen et al., Eq. 2) and CE."""
    return "dropout" if objective.startswith("cscl") else "none"


@dataclass
class FairContrastiveConfig(TrainingArguments):
    """Training arguments for :class:`FairContrastiveTrainer` (defaults: the papers' grids and settings).

    Args:
        objective: one of ``ce``, ``cscl``, ``cscl_pretrain``, ``fcl``, ``fcl_pretrain`` (see module docstring).
        gamma: γ, weight of ``L_sup`` against CE in one-stage CSCL (Chi et al. grid {0.1, 0.3, 0.7, 0.9}).
        cs_lambda: λ, weight of ``L_CS-InfoNCE`` (Chi et al. grid {0, 1, 5, 10} on Bias-in-Bios).
        cs_anchor_weighting: ``uniform`` (mean over anchors) or ``cell_size`` (Eq. 2's 1/(N_{a,y}−1)).
        fcl_alpha, fcl_beta: α (CE) and β (contrastive) weights of FCL; fairlib's default weight is 0.1.
        fcl_scl_weight, fcl_fcl_weight: weights of ``L_scl`` and ``L_fcl`` inside β's bracket (1, 1 = Eq. 3;
            ``fcl_fcl_weight=0``: Shen et al.'s CE+SCL ablation; ``fcl_scl_weight=0``: CE−FCL).
        fcl_variant: ``paper`` (Eq. 2 as published, default) or ``released`` (the authors' code and fairlib).
        fcl_group_term: ``g`` (the published group term) or ``eo`` (fairlib's FCLObj=EO: within each task class).
        temperature: τ of ``L_sup``/``L_CS``/``L_scl`` (Chi et al. grid {0.1, 0.5, 1, 2}); unset: 0.1, or 0.01 for
            ``fcl_variant="released"`` (fairlib's default).
        group_temperature: τ of ``L_fcl`` (default: ``temperature``).
        normalize: L2-normalise representations before the dot product (cosine similarity); unset: False for CSCL
            (Chi et al. contrast "the inner (dot) product" of the raw features, as their release does at τ = 2),
            True for FCL as published (Shen et al.'s L2-normalised representations), False for
            ``fcl_variant="released"`` (raw dot product, as released).
        views: ``dropout``, ``augment`` or ``none``; unset: ``dropout`` for CSCL, ``none`` (one view) for FCL/CE.
        pooling: the representation the losses act on: ``head`` (default: the classification head's input) or
            ``cls``/``mean`` pooling of the last hidden state.
        frozen_modules_eval: keep modules whose parameters are all frozen in eval mode while training (the fixed
            encoder of a second stage: no dropout in it).
        eval_objective: the dev loss is the training objective (``*_pretrain`` default) instead of CE.
        group_column: batch key holding the protected attribute (int ids).
        fairbatch: draw the training batches with FairBatch (Roh et al. 2021, as fairlib: each group's share within
            each class adapted every epoch from the groups' mean training CE; :mod:`fairmt.data.fairbatch`); one
            process only.
        fairbatch_alpha: FairBatch's step α (fairlib's ``DyBTalpha``, 0.1).
        gradcache_chunk_size: with a value smaller than the batch, use gradient caching with chunks of this size.
    """

    RANGES: ClassVar[dict[str, Range]] = {  # each numeric field's range (fairmt.errors.check_ranges)
        "gamma": PROBABILITY,
        "cs_lambda": WEIGHT,
        "fcl_alpha": WEIGHT,
        "fcl_beta": WEIGHT,
        "fcl_scl_weight": WEIGHT,
        "fcl_fcl_weight": WEIGHT,
        "temperature": POSITIVE,
        "group_temperature": POSITIVE,
        "gradcache_chunk_size": COUNT,
        "fairbatch_alpha": Range(0.0, 1.0, low_open=True),
    }
    objective: str = field(default="cscl", metadata={"help": "ce | cscl | cscl_pretrain | fcl | fcl_pretrain"})
    gamma: float = field(default=0.1, metadata={"help": "γ: weight of L_sup in one-stage CSCL"})
    cs_lambda: float = field(default=1.0, metadata={"help": "λ: weight of CS-InfoNCE"})
    cs_anchor_weighting: str = field(default="uniform", metadata={"help": "uniform | cell_size"})
    fcl_alpha: float = field(default=1.0, metadata={"help": "α: weight of CE in FCL"})
    fcl_beta: float = field(default=0.1, metadata={"help": "β: weight of L_scl − L_fcl"})
    fcl_scl_weight: float = field(default=1.0, metadata={"help": "weight of L_scl inside β (0: CE−FCL ablation)"})
    fcl_fcl_weight: float = field(default=1.0, metadata={"help": "weight of L_fcl inside β (0: CE+SCL ablation)"})
    fcl_variant: str = field(default="paper", metadata={"help": "paper | released (authors' code / fairlib)"})
    fcl_group_term: str = field(default="g", metadata={"help": "g | eo (fairlib's per-class group term)"})
    temperature: float | None = field(default=None, metadata={"help": "τ (unset: 0.1; 0.01 for released FCL)"})
    group_temperature: float | None = field(default=None, metadata={"help": "τ of L_fcl (default: temperature)"})
    normalize: bool | None = field(
        default=None, metadata={"help": "L2-normalise (unset: False for CSCL, True for FCL, False for released FCL)"}
    )
    views: str | None = field(
        default=None, metadata={"help": "dropout | augment | none (unset: dropout for CSCL, none for FCL)"}
    )
    pooling: str = field(default="head", metadata={"help": "head (the classifier's input) | cls | mean"})
    frozen_modules_eval: bool = field(default=True, metadata={"help": "frozen modules in eval mode while training"})
    eval_objective: bool | None = field(
        default=None, metadata={"help": "dev loss = training objective (unset: on for *_pretrain)"}
    )
    group_column: str = field(default="group", metadata={"help": "batch key of the protected attribute"})
    gradcache_chunk_size: int | None = field(default=None, metadata={"help": "gradient-cache chunk size"})
    fairbatch: bool = field(default=False, metadata={"help": "FairBatch batches (Roh et al. 2021, fairlib's EO)"})
    fairbatch_alpha: float = field(default=0.1, metadata={"help": "FairBatch step α (fairlib's DyBTalpha)"})
    remove_unused_columns: bool = field(default=False, metadata={"help": "keep the group/view columns"})

    def __post_init__(self):
        check_ranges(self)  # each numeric field's declared range, TrainingArguments' too (as the recipes),
        super().__post_init__()  # before transformers' own checks, which name no range (or raise later)
        allowed = self.allowed_objectives()
        if self.objective not in allowed:
            raise FairmtError(f"objective must be one of {allowed}, got {self.objective!r}")
        if self.views is None:
            self.views = default_views(self.objective)
        if self.views not in VIEWS:
            raise FairmtError(f"views must be one of {', '.join(VIEWS)}, got {self.views!r}")
        if self.objective.startswith("cscl") and self.views == "none":
            raise FairmtError("CSCL needs two views per sample: set views to 'dropout' or 'augment'")
        if self.pooling not in REPRESENTATIONS:
            raise FairmtError(f"pooling must be one of {', '.join(REPRESENTATIONS)}, got {self.pooling!r}")
        if self.fcl_variant not in FCL_VARIANTS:
            raise FairmtError(f"fcl_variant must be one of {', '.join(FCL_VARIANTS)}, got {self.fcl_variant!r}")
        if self.fcl_group_term not in FCL_GROUP_TERMS:
            raise FairmtError(
                f"fcl_group_term must be one of {', '.join(FCL_GROUP_TERMS)}, got {self.fcl_group_term!r}"
            )
        released = self.objective.startswith("fcl") and self.fcl_variant == "released"
        if self.temperature is None:
            self.temperature = FCL_DEFAULT_TEMPERATURE["released" if released else "paper"]
        if self.normalize is None:
            self.normalize = not released and not self.objective.startswith("cscl")
        if self.eval_objective is None:
            self.eval_objective = self.objective in PRETRAIN_OBJECTIVES
        if self.temperature <= 0 or (self.group_temperature is not None and self.group_temperature <= 0):
            raise FairmtError(f"temperatures must be > 0, got {self.temperature} and {self.group_temperature}")
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


@dataclass
class CSCLConfig(FairContrastiveConfig):
    """:class:`FairContrastiveConfig` for CSCL (Chi et al., 2022): ``objective`` ``cscl`` (one stage, the default)
    or ``cscl_pretrain`` (the encoder stage of two-stage CSCL); every other field and default is the shared one."""

    objective: str = field(default="cscl", metadata={"help": "cscl | cscl_pretrain"})

    @classmethod
    def allowed_objectives(cls) -> tuple[str, ...]:
        return ("cscl", "cscl_pretrain")


@dataclass
class FCLConfig(FairContrastiveConfig):
    """:class:`FairContrastiveConfig` for FCL / Con* (Shen et al., 2022): ``objective`` ``fcl`` (one stage, the
    default) or ``fcl_pretrain`` (the encoder stage of Con*^ft); every other field and default is the shared one."""

    objective: str = field(default="fcl", metadata={"help": "fcl | fcl_pretrain"})

    @classmethod
    def allowed_objectives(cls) -> tuple[str, ...]:
        return ("fcl", "fcl_pretrain")


def freeze_encoder(model: torch.nn.Module, head_prefixes: tuple[str, ...] = ("classifier", "score")) -> list[str]:
    """Freeze every parameter except the head's (names starting with one of ``head_prefixes``).

    Used for the second stage of two-stage CSCL / Con*^ft. Returns the names left trainable; raises if none is. With
    ``frozen_modules_eval`` (the default) the Trainer then keeps the frozen modules in eval mode while it trains the
    head; :func:`eval_frozen_modules` does the same for a hand-written loop.
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


def eval_frozen_modules(module: torch.nn.Module) -> None:
    """Put every maximal sub-module whose parameters are all frozen in eval mode (dropout off, batch-norm statistics
    fixed); modules holding a trainable parameter, and parameter-free modules such as a head's dropout, are left as
    they are. Call it after ``model.train()``."""
    params = list(module.parameters())
    if not params:
        return
    if not any(p.requires_grad for p in params):
        module.eval()
        return
    for child in module.children():
        eval_frozen_modules(child)


class HeadOnFeatures(torch.nn.Module):
    """The classification head of ``model`` alone, on cached representations: ``forward(features)`` returns
    ``model.head_forward(features)`` as logits and the features as the representation. Only the head
    (``model.classifier``) is a sub-module — the same module object as the model's, so training (and checkpointing)
    this trains and saves the full model's head and nothing else (second stage on a fixed encoder)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        if not hasattr(model, "head_forward") or not isinstance(getattr(model, "classifier", None), torch.nn.Module):
            raise FairmtError(
                f"{type(model).__name__} has no head_forward(h) and classifier head: features cannot be "
                "cached for its head"
            )
        self.classifier = model.classifier
        object.__setattr__(self, "_full_model", model)  # not a sub-module: its encoder is not trained or saved here
        self.num_labels = getattr(model, "num_labels", None)

    def forward(self, features: torch.Tensor, labels: torch.Tensor | None = None, **_: object):
        from transformers.modeling_outputs import SequenceClassifierOutput

        h = features.float()
        model = self._full_model
        was = model.training
        model.train(self.training)  # the head's own dropout follows this module's mode
        try:
            logits = model.head_forward(h)
        finally:
            model.train(was)
        return SequenceClassifierOutput(logits=logits, hidden_states=(h,))


@torch.no_grad()
def encoder_features(model: torch.nn.Module, batches, pooling: str = "head", device: torch.device | str | None = None):
    """``(N, d)`` representations of a frozen encoder over ``batches`` (an iterable of collated batches), computed
    once in eval mode (no dropout: the fixed encoder of a second stage) — the input of :class:`HeadOnFeatures`."""
    was_training = model.training
    model.eval()
    out = []
    try:
        for batch in batches:
            inputs = {k: v for k, v in batch.items() if k not in ("labels", "group") and not k.startswith(VIEW_PREFIX)}
            if device is not None:
                inputs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
            rep, _ = representation_and_logits(model, inputs, pooling)
            out.append(rep.float().cpu())
    finally:
        model.train(was_training)
    return torch.cat(out).numpy()


class FairContrastiveTrainer(LeanTrainMixin, FairBatchMixin, FaultGuardMixin, ShardingMixin, LossTermLogMixin, Trainer):
    """Trainer for CSCL (one- and two-stage) and FCL; see the module docstring and :class:`FairContrastiveConfig`.

    Example (``train``/``dev``: rows with ``text``, ``labels`` and ``group``; runs as a test,
    ``tests/project/test_docstring_examples.py``)::

        >>> from fairmt.data.classification import ClassificationCollator
        >>> args = FairContrastiveConfig(output_dir="out", objective="cscl", gamma=0.1, cs_lambda=5.0,
        ...                              per_device_train_batch_size=256, gradcache_chunk_size=32)
        >>> trainer = FairContrastiveTrainer(model=model, args=args, train_dataset=train, eval_dataset=dev,
        ...                                  data_collator=ClassificationCollator(tokenizer))
        >>> result = trainer.train()
        >>> result.global_step > 0
        True
    """

    loss_is_scaled_for_ga = False  # every term is a per-batch mean

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, FairContrastiveConfig):
            raise FairmtError("FairContrastiveTrainer needs FairContrastiveConfig arguments")
        if not self.label_names or self.label_names == ["labels"]:
            self.label_names = ["labels", self.args.group_column]

    # ------------------------------------------------------------------ batch handling
    def _split_inputs(
        self, inputs: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any] | None, torch.Tensor, torch.Tensor | None]:
        inputs = dict(inputs)
        labels = inputs.pop("labels", None)
        groups = inputs.pop(self.args.group_column, None)
        inputs.pop(WEIGHT_COLUMN, None)  # balanced training: read by compute_loss / training_step, not the model's
        view = {k[len(VIEW_PREFIX) :]: inputs.pop(k) for k in list(inputs) if k.startswith(VIEW_PREFIX)}
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

    def representation_and_logits(
        self, model: torch.nn.Module, model_inputs: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One forward: the ``(N, d)`` representation (see ``pooling``) and the ``(N, C)`` logits."""
        return representation_and_logits(model, model_inputs, self.args.pooling)

    # ------------------------------------------------------------------ objective
    def objective_terms(
        self,
        reps: list[torch.Tensor],
        logits: torch.Tensor,
        labels: torch.Tensor,
        groups: torch.Tensor | None,
        gather: bool = True,
        weights: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Total loss and its terms from per-view representations and the first view's logits (``gather``: with the
        candidates of every process, in training; ``weights``: balanced training's instance weights of the CE term,
        :func:`fairmt.losses.weighted.weighted_cross_entropy`)."""
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
            terms["ce"] = weighted_cross_entropy(logits, labels, weights)
            return terms["ce"], terms
        ce_labels = labels
        feats = torch.stack(reps, dim=1)  # (N, V, d)
        if gather and world_size() > 1:  # candidates from every process, gradients flow back (drop_last=True)
            feats, labels, groups = gather_with_grad(feats), gather_nograd(labels), gather_nograd(groups)
        if a.objective in ("cscl", "cscl_pretrain"):
            terms["sup"] = supcon_loss(feats, labels, a.temperature, a.normalize)
            terms["cs"] = cs_infonce_loss(feats, labels, groups, a.temperature, a.normalize, a.cs_anchor_weighting)
            if a.objective == "cscl":
                terms["ce"] = weighted_cross_entropy(logits, ce_labels, weights)
                total = (1 - a.gamma) * terms["ce"] + a.gamma * terms["sup"] + a.cs_lambda * terms["cs"]
            else:
                total = terms["sup"] + a.cs_lambda * terms["cs"]
            return total, terms
        fcl = fcl_loss(
            feats,
            labels,
            groups,
            a.temperature,
            a.group_temperature,
            a.normalize,
            variant=a.fcl_variant,
            group_term=a.fcl_group_term,
        )
        terms["scl"], terms["fcl"] = fcl.scl, fcl.fcl
        contrastive = a.fcl_scl_weight * fcl.scl - a.fcl_fcl_weight * fcl.fcl
        if a.objective == "fcl":
            terms["ce"] = weighted_cross_entropy(logits, ce_labels, weights)
            return a.fcl_alpha * terms["ce"] + a.fcl_beta * contrastive, terms
        return contrastive, terms

    def _objective_in_eval(self, model, model_inputs, view, labels, groups) -> torch.Tensor:
        """The training objective on a dev batch. Dropout views need dropout: the dropout modules are switched on for
        these forwards (as the CSCL release's ``set_cl_eval_mode``) and switched off again."""
        dropouts = (
            [m for m in model.modules() if isinstance(m, torch.nn.Dropout)] if self.args.views == "dropout" else []
        )
        for m in dropouts:
            m.train()
        try:
            reps, first_logits = [], None
            for b in self._view_batches(model_inputs, view):
                rep, logits = self.representation_and_logits(model, b)
                reps.append(rep)
                first_logits = logits if first_logits is None else first_logits
            loss, _ = self.objective_terms(reps, first_logits, labels, groups, gather=False)  # per process on dev
        finally:
            for m in dropouts:
                m.eval()
        return loss.detach()

    def _record(self, terms: dict[str, torch.Tensor]) -> None:
        self._record_terms(terms, prefix="loss_")

    # ------------------------------------------------------------------ Trainer hooks
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """Objective on training batches; in evaluation CE (or the objective itself with ``eval_objective``), with
        ``logits``/``hidden`` outputs of the eval-mode forward."""
        model_inputs, view, labels, groups = self._split_inputs(inputs)
        if not model.training:
            rep, logits = self.representation_and_logits(model, model_inputs)
            if labels is None:
                raise FairmtError("the evaluation batch has no 'labels' column")
            if self.args.eval_objective and self.args.objective != "ce":
                loss = self._objective_in_eval(model, model_inputs, view, labels, groups)
            else:
                loss = F.cross_entropy(logits.float(), labels.long())
            return (loss, {"logits": logits, "hidden": rep}) if return_outputs else loss
        if self.args.frozen_modules_eval:
            eval_frozen_modules(model)
        batches = self._view_batches(model_inputs, view)
        reps, first_logits = [], None
        for b in batches:
            rep, logits = self.representation_and_logits(model, b)
            reps.append(rep)
            first_logits = logits if first_logits is None else first_logits
        loss, terms = self.objective_terms(reps, first_logits, labels, groups, weights=inputs.get(WEIGHT_COLUMN))
        self._record(terms)
        return (loss, {"logits": first_logits, "hidden": reps[0]}) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        """Plain step, or a gradient-cached one when ``gradcache_chunk_size`` is below the batch size."""
        chunk = self.args.gradcache_chunk_size
        n = next((v.shape[0] for v in inputs.values() if isinstance(v, torch.Tensor)), 0)
        if not chunk or chunk >= n:
            return super().training_step(model, inputs, num_items_in_batch)
        model.train()
        if self.args.frozen_modules_eval:
            eval_frozen_modules(model)
        inputs = self._prepare_inputs(inputs)
        model_inputs, view, labels, groups = self._split_inputs(inputs)
        batches = self._view_batches(model_inputs, view)
        recorded: dict[str, torch.Tensor] = {}
        ga = getattr(self, "current_gradient_accumulation_steps", 1)

        def forward(b):
            return self.representation_and_logits(model, b)

        def loss_fn(outs):
            reps = outs[0::2]
            loss, terms = self.objective_terms(list(reps), outs[1], labels, groups, weights=inputs.get(WEIGHT_COLUMN))
            recorded.update(terms)
            return loss / ga

        with self.compute_loss_context_manager():
            loss = cached_backward(
                forward,
                batches,
                loss_fn,
                chunk,
                backward=self.accelerator.backward,
                no_sync=lambda: self.accelerator.no_sync(model),
            )
        self._record(recorded)
        return loss
