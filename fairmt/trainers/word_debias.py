"""Shared machinery of the word-level debiasing baselines DPCE (:mod:`fairmt.trainers.dpce`) and ADEPT-F
(:mod:`fairmt.trainers.adept`): a ``transformers.Trainer`` over attribute/target sentence rows
(:mod:`fairmt.data.word_sentences`) that

* fixes the attribute vectors (per group and layer) from the frozen original encoder before training,
* runs ONE forward of the trained encoder per step on the flat batch (attribute and target rows together, so DDP
  sees every parameter used once), with ``output_hidden_states=True`` — every layer, the embedding output first,
* runs the frozen original (a deep copy made at construction, or for a PEFT model the same model with its
  adapters disabled, as :class:`fairmt.trainers.ccd.CCDTrainer`) on the attribute rows only, without gradient,
* logs the two loss terms (``loss_<a>``, ``loss_<b>``, and ``eval_loss_<a>``/``eval_loss_<b>``).

The released implementations alternate pure attribute batches and pure target batches; here a batch holds both
kinds in the proportion of the data (the same objective in expectation; a batch without rows of one kind gives 0
for that term). The encoder may be any ``AutoModel`` or ``*ForMaskedLM`` (kept whole, so the debiased checkpoint can
be scored by CrowS-Pairs and StereoSet, as the papers do) — not a ``SentenceTransformer``: the methods work on token
states; load the folder's transformer with ``AutoModel`` instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from transformers import Trainer, TrainingArguments

from fairmt.data.augment.tuples import GENDER_GROUPS
from fairmt.data.word_sentences import WordSentenceCollator
from fairmt.errors import COUNT, POSITIVE, SEED, WEIGHT, FairmtError, Range, check_ranges
from fairmt.losses.dpce import DEBIAS_LAYERS, LOSS_TARGETS
from fairmt.models.precision import (
    DEFAULT_TEACHER_DTYPE,
    TEACHER_DTYPE_HELP,
    TeacherDtype,
    apply_teacher_dtype,
    teacher_dtype_option,
)
from fairmt.trainers.ccd import _is_peft, is_sentence_transformer
from fairmt.trainers.faults import FaultGuardMixin
from fairmt.trainers.sharding import ShardingMixin, check_not_zero3_partitioned, frozen_copy
from fairmt.trainers.term_logging import SplitTermLogMixin

logger = logging.getLogger(__name__)

_MODEL_KEYS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass
class WordDebiasConfig(TrainingArguments):
    """Fields shared by :class:`~fairmt.trainers.dpce.DPCEConfig` and :class:`~fairmt.trainers.adept.ADEPTConfig`.

    Parameters (besides those of ``transformers.TrainingArguments``):
        alpha: weight of the debiasing term.
        beta: weight of the representation-preserving term.
        debias_layer: ``"all"`` (embedding output + every layer; the released default), ``"first"`` (the embedding
            output) or ``"last"`` layer for the debiasing term.
        loss_target: ``"token"`` (the marked word's embedding; the released default) or ``"sentence"``.
        groups: the protected groups, in order (default male, female): the ``group`` values of attribute rows.
        max_length: truncation length (the released scripts' ``block_size`` 128).
        attribute_max_sentences: read at most this many attribute rows to fix the attribute vectors (default
            ``None``: all of the training set's).
        disable_dropout: set every dropout probability of the trained encoder to 0 (default ``False``, as the
            released code, which trains in train mode).
        teacher_dtype: the dtype of the frozen reference encoder θ_pre when it is a separate model (a frozen copy, or
            ``reference_model``; a PEFT model's disabled adapters are the trained model itself and keep its dtype):
            ``"auto"`` (default: bfloat16 where the device runs it fast — CUDA with bf16 support, a CPU with
            ``avx512_bf16``/``amx_bf16`` —, float32 otherwise), ``"bf16"`` (half the memory; warns once where it is
            slow) or ``"fp32"`` (:mod:`fairmt.models.precision`). Its outputs are used in float32; a bf16
            reference rounds them to about 3 significant digits.
    """

    RANGES: ClassVar[dict[str, Range]] = {  # each numeric field's range (fairmt.errors.check_ranges)
        "alpha": WEIGHT,
        "beta": WEIGHT,
        "max_length": COUNT,
        "attribute_max_sentences": COUNT,
        "learning_rate": POSITIVE,
        "seed": SEED,
    }
    alpha: float = field(default=1.0, metadata={"help": "weight of the debiasing term"})
    beta: float = field(default=1.0, metadata={"help": "weight of the representation term"})
    debias_layer: str = field(default="all", metadata={"help": "all|first|last"})
    loss_target: str = field(default="token", metadata={"help": "token|sentence"})
    groups: list[str] = field(default_factory=lambda: list(GENDER_GROUPS), metadata={"help": "group names"})
    max_length: int = field(default=128, metadata={"help": "truncation length (released: block_size 128)"})
    attribute_max_sentences: int | None = field(default=None, metadata={"help": "attribute rows read (None: all)"})
    disable_dropout: bool = field(default=False, metadata={"help": "train the encoder without dropout"})
    learning_rate: float = field(default=5e-5, metadata={"help": "released: 5e-5"})
    seed: int = field(default=42, metadata={"help": "released: 42 (the CCD paper keeps it)"})
    remove_unused_columns: bool = field(default=False, metadata={"help": "keep the row columns"})
    teacher_dtype: TeacherDtype | str = field(default=DEFAULT_TEACHER_DTYPE, metadata={"help": TEACHER_DTYPE_HELP})

    def __post_init__(self):
        check_ranges(self)  # each numeric field's declared range, TrainingArguments' too (as the recipes),
        super().__post_init__()  # before transformers' own checks, which name no range (or raise later)
        if self.debias_layer not in DEBIAS_LAYERS:
            raise FairmtError(f"unknown debias_layer {self.debias_layer!r}; choose one of {DEBIAS_LAYERS}")
        if self.loss_target not in LOSS_TARGETS:
            raise FairmtError(f"unknown loss_target {self.loss_target!r}; choose one of {LOSS_TARGETS}")
        if self.alpha < 0 or self.beta < 0:
            raise FairmtError(f"alpha and beta must be ≥ 0, got {self.alpha}, {self.beta}")
        if len(self.groups) < 2 or len(set(self.groups)) != len(self.groups):
            raise FairmtError(f"need at least two distinct groups, got {self.groups}")
        if self.attribute_max_sentences is not None and self.attribute_max_sentences < 1:
            raise FairmtError(f"attribute_max_sentences must be ≥ 1 (or None), got {self.attribute_max_sentences}")
        self.teacher_dtype = teacher_dtype_option(self, type(self).__name__)
        if self.remove_unused_columns:
            raise FairmtError("DPCE/ADEPT need remove_unused_columns=False: the row columns are not model arguments")


def hidden_state_stack(model: torch.nn.Module, features: dict) -> torch.Tensor:
    """``(B, T, L+1, d)``: every hidden layer of ``model`` (embedding output first) for a tokenised batch."""
    feats = {k: features[k] for k in _MODEL_KEYS if k in features}
    out = model(**feats, output_hidden_states=True)
    hs = getattr(out, "hidden_states", None)
    if hs is None:
        raise FairmtError(f"{type(model).__name__} returned no hidden_states: give a transformers encoder")
    return torch.stack(tuple(hs), dim=2)


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the token axis of ``(n, T, L, d)`` states where ``mask`` ``(n, T)`` is 1 → ``(n, L, d)``."""
    m = mask.to(states.dtype)[:, :, None, None]
    return (states * m).sum(1) / m.sum(1).clamp_min(1.0)


class WordDebiasTrainer(SplitTermLogMixin, FaultGuardMixin, ShardingMixin, Trainer):
    """Base class; see the module docstring. Subclasses set ``method``, ``term_names``, ``config_class``,
    ``attribute_pooling`` and implement :meth:`loss_terms`."""

    method = "word-debias"
    term_names: tuple[str, str] = ("bias", "rep")
    config_class: type = WordDebiasConfig
    attribute_pooling = "word"  # "word": attribute vectors from the marked words; "sentence": sentence means
    loss_is_scaled_for_ga = False  # the terms are batch means

    def __init__(self, model=None, args=None, *, reference_model=None, **kwargs):
        name = type(self).__name__
        if args is None or not isinstance(args, self.config_class):
            raise FairmtError(f"{name} needs args={self.config_class.__name__}(...)")
        if model is None:
            raise FairmtError(f"{name} needs a model (the encoder to debias)")
        if is_sentence_transformer(model):
            raise FairmtError(
                f"{name} works on token states: give the transformer itself (AutoModel / *ForMaskedLM loaded from the "
                "sentence-transformers folder), not a SentenceTransformer"
            )
        if kwargs.get("data_collator") is None:
            tok = kwargs.get("processing_class")
            if tok is None:
                raise FairmtError(f"{name} needs processing_class=<fast tokenizer> (or a data_collator)")
            kwargs["data_collator"] = WordSentenceCollator(tok, args.groups, max_length=args.max_length)
        if args.disable_dropout:
            for module in model.modules():
                if isinstance(module, torch.nn.Dropout):
                    module.p = 0.0
        super().__init__(model=model, args=args, **kwargs)
        self._use_disabled_adapter = reference_model is None and _is_peft(model)
        if reference_model is None and not self._use_disabled_adapter:
            reference_model = frozen_copy(model)
        if reference_model is not None:
            check_not_zero3_partitioned(reference_model, "frozen original encoder")
            reference_model.eval()
            reference_model.requires_grad_(False)
            reference_model.to(self.args.device)
            apply_teacher_dtype(reference_model, args.teacher_dtype, self.args.device)
        self.reference_model = reference_model
        self.attribute_vectors: torch.Tensor | None = None  # (G, L+1, d), original model

    # ------------------------------------------------------------------ original-model states

    @torch.no_grad()
    def reference_states(self, features: dict) -> torch.Tensor:
        """``(B, T, L+1, d)`` hidden states of the frozen original encoder (no gradient)."""
        if self.reference_model is not None:
            return hidden_state_stack(self.reference_model, features).float()
        peft_model = self.accelerator.unwrap_model(self.model)
        was_training = peft_model.training
        peft_model.eval()
        try:
            with peft_model.disable_adapter():
                return hidden_state_stack(peft_model, features)
        finally:
            peft_model.train(was_training)

    def _pool_rows(
        self, states: torch.Tensor, attention_mask: torch.Tensor, word_mask: torch.Tensor, how: str
    ) -> torch.Tensor:
        """``(n, L, d)`` per row: the marked word's sub-token mean (``"word"``; rows without one dropped) or the
        sentence mean over its tokens (``"sentence"``)."""
        if how == "sentence":
            return masked_mean(states, attention_mask)
        keep = word_mask.sum(1) > 0
        return masked_mean(states[keep], word_mask[keep])

    @torch.no_grad()
    def compute_attribute_vectors(self, dataset=None) -> torch.Tensor:
        """Per group and layer, the original encoder's mean embedding over the attribute rows (``(G, L+1, d)``)."""
        dataset = dataset if dataset is not None else self.train_dataset
        if dataset is None:
            raise FairmtError("no train_dataset to compute the attribute vectors from")
        idx = [i for i, role in enumerate(dataset["role"]) if role == "attribute"]
        if self.args.attribute_max_sentences is not None:
            idx = idx[: self.args.attribute_max_sentences]
        bs = max(1, self.args.per_device_eval_batch_size)
        g = len(self.args.groups)
        sums, counts = None, torch.zeros(g)
        for start in range(0, len(idx), bs):
            batch = self.data_collator([dataset[i] for i in idx[start : start + bs]])
            batch = {k: v.to(self.args.device) for k, v in batch.items() if torch.is_tensor(v)}
            hs = self.reference_states(batch).float()
            keep = (
                batch["word_mask"].sum(1) > 0
                if self.attribute_pooling == "word"
                else torch.ones_like(batch["group_index"], dtype=torch.bool)
            )
            vec = self._pool_rows(hs, batch["attention_mask"], batch["word_mask"], self.attribute_pooling)
            grp = batch["group_index"][keep]
            if sums is None:
                sums = torch.zeros(g, *vec.shape[1:], device=vec.device)
            sums.index_add_(0, grp, vec)
            counts += torch.bincount(grp.cpu(), minlength=g).float()
        missing = [self.args.groups[i] for i in range(g) if counts[i] == 0]
        if sums is None or missing:
            raise FairmtError(
                f"{self.method}: no attribute sentence for group(s) {missing or self.args.groups} in the "
                "training data: the attribute vectors cannot be computed"
            )
        vectors = sums / counts.to(sums.device)[:, None, None]
        self.attribute_stats = {
            f"{self.method}_attribute_rows_{grp}": float(counts[i]) for i, grp in enumerate(self.args.groups)
        }
        return vectors

    def _prepare(self) -> None:
        """Fix what the loss needs from the original model before the first step (attribute vectors, ...)."""
        if self.attribute_vectors is None:
            self.attribute_vectors = self.compute_attribute_vectors()
            logger.info("%s: attribute vectors from %s", self.method, getattr(self, "attribute_stats", {}))

    def train(self, *args, **kwargs):
        """Fix the attribute vectors with the original model, then train as ``Trainer.train``."""
        self._prepare()
        return super().train(*args, **kwargs)

    # ------------------------------------------------------------------ loss

    def loss_terms(self, target_states, target_attention, target_word_mask, attr_states, attr_states_orig):
        """(loss, term_a, term_b) of a batch; implemented by the subclasses."""
        raise NotImplementedError

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """The method's loss over a flat batch of attribute and target rows (batch means)."""
        self._prepare()
        for key in ("word_mask", "is_target", "group_index"):
            if key not in inputs:
                raise FairmtError(
                    f"{self.method} batch has no {key!r}: use fairmt.data.word_sentences.WordSentenceCollator"
                )
        feats = {k: inputs[k] for k in _MODEL_KEYS if k in inputs}
        is_target = inputs["is_target"].bool()
        attention = inputs["attention_mask"]
        hs = hidden_state_stack(model, feats)  # (B, T, L+1, d)
        attr = ~is_target
        if attr.any():
            orig = self.reference_states({k: v[attr] for k, v in feats.items()})
            valid = attention[attr].bool()
            attr_states, attr_orig = hs[attr][valid], orig[valid].to(hs.dtype)  # (m, L+1, d)
        else:
            attr_states = attr_orig = hs.new_zeros((0, *hs.shape[2:]))
        loss, a, b = self.loss_terms(
            hs[is_target], attention[is_target], inputs["word_mask"][is_target], attr_states, attr_orig
        )
        self._add_terms(model.training, a, b)
        return (loss, {"hidden_states": hs}) if return_outputs else loss
