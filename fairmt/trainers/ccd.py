"""Content-conditional debiasing (CCD) of sentence encoders: :class:`CCDConfig` and :class:`CCDTrainer`.

"LLM-Assisted Content Conditional Debiasing for Fair Text Embedding" (2024). The encoder f is trained on tuples
(neutral S^n, one text per sensitive group S^{a_i}) of one content with ``L_bias + β·L_rep``
(:mod:`fairmt.losses.ccd`): the group texts are pulled to equal Gaussian-kernel distance from their neutral text,
while the neutral embeddings are kept close to a frozen copy f_orig of the original encoder.

The encoder may be

* any ``transformers.AutoModel`` (BERT, RoBERTa, MiniLM, ...), pooled with :attr:`CCDConfig.pooling`
  (mean over the attention mask by default) and optionally L2-normalised;
* a ``sentence_transformers.SentenceTransformer``, whose own modules (pooling, normalisation) make the embedding;
* either of them wrapped by PEFT (LoRA): then f_orig is the same model with its adapters disabled, so no copy is
  made.

Each step runs ONE forward of the trained encoder on the flat batch ``[neutral; group_1; ...; group_G]`` made by
:class:`fairmt.data.augment.tuples.CCDTupleCollator` (one forward keeps DDP happy), plus one forward of f_orig on
the neutral texts without gradient. The two loss terms are logged as ``loss_bias`` and ``loss_rep`` (and
``eval_loss_bias``/``eval_loss_rep``); the validation loss ``eval_loss`` selects the checkpoint
(``metric_for_best_model="eval_loss"``, ``load_best_model_at_end=True``), as the paper does every 500 steps.

Example (``path``: an encoder folder such as all-MiniLM-L6-v2's; ``tuples``: a dataset of tuples,
:func:`fairmt.data.augment.tuples.tuples_to_dataset`; runs as a test, ``tests/project/test_docstring_examples.py``)::

    >>> from transformers import AutoModel, AutoTokenizer
    >>> args = CCDConfig(output_dir="out", per_device_train_batch_size=32, learning_rate=5e-5,
    ...                  rho_estimator="median")  # the paper's "variance" saturates the kernel on MiniLM's distances
    >>> trainer = CCDTrainer(model=AutoModel.from_pretrained(path), args=args, train_dataset=tuples,
    ...                      processing_class=AutoTokenizer.from_pretrained(path))
    >>> result = trainer.train()
    >>> result.global_step > 0
    True

``CCDConfig``'s defaults are the paper's (ρ = the variance of the original distances): on an encoder whose
group-to-neutral distances are of order one or less (MiniLM: median 3.9 unnormalised, 0.6 normalised) that ρ
makes the kernel flat — the trainer warns, naming the fix — so set ``rho_estimator="median"`` (as above and in
the MiniLM recipes) or ``"std"``.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from transformers import Trainer, TrainingArguments

from fairmt.data.augment.tuples import GENDER_GROUPS, CCDTupleCollator
from fairmt.errors import COUNT, POSITIVE, WEIGHT, FairmtError, Range, check_ranges
from fairmt.losses.ccd import RHO_ESTIMATORS, ccd_loss, estimate_rho, tuple_distances
from fairmt.models.pooling import pool
from fairmt.models.pooling_names import SENTENCE_POOLINGS as POOLING_MODES  # one set with `eval embeddings`
from fairmt.models.precision import (
    DEFAULT_TEACHER_DTYPE,
    TEACHER_DTYPE_HELP,
    TeacherDtype,
    apply_teacher_dtype,
    teacher_dtype_option,
)
from fairmt.trainers.faults import FaultGuardMixin
from fairmt.trainers.sharding import ShardingMixin, check_not_zero3_partitioned, frozen_copy
from fairmt.trainers.term_logging import SplitTermLogMixin

logger = logging.getLogger(__name__)

LIVE_KERNEL = 1e-6
"""A tuple's L_bias can move when one of its group-to-neutral kernel values exceeds this."""
DEAD_SHARE = 0.01
"""Under this share of live training tuples (at the original model), L_bias is dead from the first step."""
RHO_FIX = (
    "set rho_estimator='median' (training.rho_estimator=median; on all-MiniLM-L6-v2, the ccd/minilm_cda "
    "recipe for one epoch, it moved the held-out CCED gap 0.094 -> 0.041, where 'variance' gave 0.085) or "
    "'std', or give rho=..."
)

_MODEL_KEYS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass
class CCDConfig(TrainingArguments):
    """Training arguments for CCD. Defaults follow the paper (Adam, lr 5e-5, batch 32, β = 1, one epoch).

    Parameters (besides those of ``transformers.TrainingArguments``):
        beta: weight β of L_rep in ``L_bias + β·L_rep`` (paper: 1.0; its Table 7 ablates 0-1.5).
        rho: kernel bandwidth ρ. ``None`` (default) estimates it before training from the original model's
            group-to-neutral distances over the training tuples (all of them, as the paper; or the first
            ``rho_max_tuples``).
        rho_estimator: two readings of the paper — ``"variance"`` (§3.3's words: ρ = the variance of those
            distances) and ``"std"`` (App. A.5's Gaussian kernel: their standard deviation, in distance units) — or
            ``"median"`` (their median, the usual Gaussian-kernel bandwidth heuristic). The
            variance is not in distance units and suits only encoders whose distances are of order one or more;
            on L2-normalised all-MiniLM-L6-v2 it puts the kernel at 2e-25 at the median distance (no gradient),
            where ``"std"`` gives 0.18 and ``"median"`` 0.61. The trainer warns when the estimated ρ saturates
            the kernel (measurements in :mod:`fairmt.losses.ccd`).
        rho_max_tuples: read only this many training tuples for the ρ estimate (default ``None``: the whole
            training set, as the paper).
        groups: the sensitive-group columns of a tuple, in order (default ``["male", "female"]``); the neutral
            text is the ``neutral`` column. Any number ≥ 2.
        pooling: ``"auto"`` (a sentence-transformers model's own pooling, else ``"mean"``), ``"model"`` (the
            sentence-transformers model's own pooling; refused for a plain encoder), ``"mean"`` (over the attention
            mask), ``"cls"`` = ``"first"`` (first token), ``"max"`` or ``"pooler"`` (the model's pooler output) —
            the names of ``fairmt eval embeddings --pooling`` (:mod:`fairmt.models.pooling_names`).
            A sentence-transformers model with ``pooling="auto"`` and ``normalize=None`` makes its own embedding
            (its pooling and normalisation modules); any other choice pools its token embeddings as asked, e.g.
            ``normalize=False`` trains on the unnormalised mean-pooled embedding of all-MiniLM-L6-v2 (whose saved
            model still normalises: the cosine-based suites are unaffected, L2 distances are not).
        normalize: L2-normalise the pooled embedding. ``None``: a sentence-transformers model does what its
            modules do; a plain ``AutoModel`` is not normalised.
        max_length: truncation length of the tuple texts.
        disable_dropout: set every dropout probability of the trained encoder to 0 (as TRL's
            ``disable_dropout``). f_orig always runs without dropout, so with dropout on, L_rep measures dropout
            noise as much as drift: on all-MiniLM-L6-v2 (dropout 0.1) the training L_rep stays ≈ 0.32 while the
            dropout-free validation L_rep is 0.12-0.16. Default ``False`` (the paper does not say).
        teacher_dtype: the dtype of the frozen reference encoder f_orig when it is a separate model (a frozen copy, or
            ``reference_model``; a PEFT model's disabled adapters are the trained model itself and keep its dtype):
            ``"auto"`` (default: bfloat16 where the device runs it fast — CUDA with bf16 support, a CPU with
            ``avx512_bf16``/``amx_bf16`` —, float32 otherwise), ``"bf16"`` (half the memory; warns once where it is
            slow) or ``"fp32"`` (:mod:`fairmt.models.precision`). Its outputs are used in float32; a bf16
            reference rounds them to about 3 significant digits.
    """

    RANGES: ClassVar[dict[str, Range]] = {  # each numeric field's range (fairmt.errors.check_ranges)
        "beta": WEIGHT,
        "rho": POSITIVE,
        "rho_max_tuples": COUNT,
        "max_length": COUNT,
        "learning_rate": POSITIVE,
        "per_device_train_batch_size": COUNT,
        "num_train_epochs": POSITIVE,
    }
    beta: float = field(default=1.0, metadata={"help": "weight of L_rep (paper: 1.0)"})
    rho: float | None = field(default=None, metadata={"help": "kernel bandwidth; None = estimate from training set"})
    rho_estimator: str = field(
        default="variance", metadata={"help": "'variance' or 'std' (the paper's two readings) or 'median'"}
    )
    rho_max_tuples: int | None = field(default=None, metadata={"help": "tuples read to estimate rho (None: all)"})
    dead_bias: str = field(
        default="error",
        metadata={
            "help": "'error': stop before training when the estimated rho "
            "leaves L_bias no gradient on (almost) every training tuple; 'warn': train anyway"
        },
    )
    groups: list[str] = field(default_factory=lambda: list(GENDER_GROUPS), metadata={"help": "group columns"})
    pooling: str = field(default="auto", metadata={"help": "auto|model|mean|cls|first|max|pooler"})
    normalize: bool | None = field(default=None, metadata={"help": "L2-normalise embeddings (None = model's own)"})
    max_length: int = field(default=128, metadata={"help": "truncation length"})
    disable_dropout: bool = field(default=False, metadata={"help": "train the encoder without dropout"})
    learning_rate: float = field(default=5e-5, metadata={"help": "paper: 5e-5"})
    per_device_train_batch_size: int = field(default=32, metadata={"help": "paper: 32"})
    num_train_epochs: float = field(default=1.0, metadata={"help": "paper: one epoch"})
    remove_unused_columns: bool = field(default=False, metadata={"help": "keep the tuple columns"})
    teacher_dtype: TeacherDtype | str = field(default=DEFAULT_TEACHER_DTYPE, metadata={"help": TEACHER_DTYPE_HELP})

    def __post_init__(self):
        check_ranges(self)  # each numeric field's declared range, TrainingArguments' too (as the recipes),
        super().__post_init__()  # before transformers' own checks, which name no range (or raise later)
        if self.pooling not in POOLING_MODES:
            raise FairmtError(f"unknown pooling {self.pooling!r}; choose one of {POOLING_MODES}")
        if self.rho_estimator not in RHO_ESTIMATORS:
            raise FairmtError(f"unknown rho_estimator {self.rho_estimator!r}; choose one of {RHO_ESTIMATORS}")
        if self.rho is not None and not self.rho > 0:
            raise FairmtError(f"rho must be positive, got {self.rho}")
        if self.dead_bias not in ("error", "warn"):
            raise FairmtError(f"dead_bias must be 'error' or 'warn', got {self.dead_bias!r}")
        if self.rho_max_tuples is not None and self.rho_max_tuples < 1:
            raise FairmtError(
                f"rho_max_tuples must be ≥ 1 (or None for the whole training set), got {self.rho_max_tuples}"
            )
        if len(self.groups) < 2 or len(set(self.groups)) != len(self.groups):
            raise FairmtError(f"CCD needs at least two distinct groups, got {self.groups}")
        self.teacher_dtype = teacher_dtype_option(self, "CCDConfig")
        if self.remove_unused_columns:
            raise FairmtError("CCD needs remove_unused_columns=False: the tuple columns are not model arguments")


def is_sentence_transformer(model: torch.nn.Module) -> bool:
    """True for a ``sentence_transformers.SentenceTransformer`` (checked by class name, no import)."""
    return any(c.__name__ == "SentenceTransformer" for c in type(model).__mro__)


def st_features(model: torch.nn.Module, texts: list[str]) -> dict[str, torch.Tensor]:
    """A sentence-transformers model's own tokenisation of ``texts``, tensors only.

    sentence-transformers 6 renamed ``tokenize`` to ``preprocess`` and returns non-tensor entries beside the tensors
    (``modality``: ``"text"``); older releases have ``tokenize`` only. Both are accepted here."""
    prep = getattr(model, "preprocess", None) or model.tokenize
    return {k: v for k, v in prep(list(texts)).items() if isinstance(v, torch.Tensor)}


def _is_peft(model: torch.nn.Module) -> bool:
    return any(c.__name__ == "PeftModel" for c in type(model).__mro__)


def encode(model: torch.nn.Module, features: dict, pooling: str = "auto", normalize: bool | None = None):
    """Embed a tokenised batch with ``model`` (called as given, so DDP/PEFT wrappers run their forward).

    A sentence-transformers model (possibly wrapped) returns its own ``sentence_embedding``; any other encoder
    returns token states that are pooled with ``pooling``. ``normalize=True`` L2-normalises the result.
    """
    base = model
    while hasattr(base, "module") and isinstance(base.module, torch.nn.Module):  # DDP / DataParallel
        base = base.module
    feats = {k: features[k] for k in _MODEL_KEYS if k in features}
    if pooling == "model" and not is_sentence_transformer(base):
        raise FairmtError(
            "pooling='model' is a sentence-transformers model's own pooling; this encoder is a plain "
            f"{type(base).__name__}: use 'auto', 'mean', 'cls', 'max' or 'pooler'"
        )
    if is_sentence_transformer(base):
        out = model(feats)
        if pooling == "model" or (pooling == "auto" and normalize is None):
            emb = out["sentence_embedding"]
            return F.normalize(emb, dim=-1) if normalize else emb
        # another embedding than the model's own: pool its token embeddings as asked (mean for "auto")
        mode = "mean" if pooling == "auto" else pooling
        if mode == "pooler":
            raise FairmtError(
                "pooling='pooler' needs a plain AutoModel: a sentence-transformers model has no pooler output"
            )
        emb = pool(out["token_embeddings"], feats["attention_mask"], mode)
    else:
        # a head model (``*ForMaskedLM``, kept so StereoSet/CrowS-Pairs can score the debiased encoder) returns
        # vocabulary logits first: pool its last hidden layer, never the logits
        head_model = (
            not hasattr(base, "pooler")
            and hasattr(base, "get_output_embeddings")
            and base.get_output_embeddings() is not None
        )
        out = model(**feats, output_hidden_states=True) if head_model else model(**feats)
        if getattr(out, "last_hidden_state", None) is not None:
            hidden = out.last_hidden_state
        elif getattr(out, "hidden_states", None) is not None:
            hidden = out.hidden_states[-1]
        else:
            hidden = out[0]
        mode = "mean" if pooling == "auto" else pooling
        emb = pool(hidden, feats["attention_mask"], mode, getattr(out, "pooler_output", None))
    if normalize:
        emb = F.normalize(emb, dim=-1)
    return emb


class CCDTrainer(SplitTermLogMixin, FaultGuardMixin, ShardingMixin, Trainer):
    """``transformers.Trainer`` that trains a sentence encoder with the CCD loss (see the module docstring).

    Args:
        model: the encoder to debias (AutoModel, SentenceTransformer, or a PEFT-wrapped one).
        args: a :class:`CCDConfig`.
        train_dataset / eval_dataset: tuples with a ``neutral`` column and one column per ``args.groups``
            (:func:`fairmt.data.augment.tuples.tuples_to_dataset`).
        processing_class: the tokenizer (for a SentenceTransformer its own ``model.tokenizer`` by default).
        data_collator: defaults to :class:`CCDTupleCollator` over ``args.groups``.
        reference_model: f_orig. Default: a frozen deep copy of ``model`` made at construction, or for a PEFT
            model the same model with adapters disabled.
        validation_measures: optional ``fn(model) -> {name: float}`` run (model in eval mode) after every
            evaluation; each value is logged as ``eval_<name>`` and can select the checkpoint
            (``metric_for_best_model="eval_<name>"``). Every evaluation also logs ``eval_cced_gap``, the CCED gap of
            the evaluation tuples.
    """

    loss_is_scaled_for_ga = False  # L_bias and L_rep are per-batch means

    def __init__(
        self, model=None, args: CCDConfig | None = None, *, reference_model=None, validation_measures=None, **kwargs
    ):
        if args is None or not isinstance(args, CCDConfig):
            raise FairmtError("CCDTrainer needs args=CCDConfig(...) (fairmt.trainers.ccd.CCDConfig)")
        if model is None:
            raise FairmtError("CCDTrainer needs a model (the encoder to debias)")
        tok = kwargs.get("processing_class")
        if tok is None and is_sentence_transformer(model):
            tok = kwargs["processing_class"] = model.tokenizer
        if kwargs.get("data_collator") is None:
            if tok is None:
                raise FairmtError("CCDTrainer needs processing_class=<tokenizer> (or a data_collator)")
            max_len = args.max_length
            if is_sentence_transformer(model) and getattr(model, "max_seq_length", None):
                max_len = min(max_len, model.max_seq_length)
            kwargs["data_collator"] = CCDTupleCollator(tok, args.groups, max_length=max_len)
        if args.disable_dropout:
            for module in model.modules():
                if isinstance(module, torch.nn.Dropout):
                    module.p = 0.0
        super().__init__(model=model, args=args, **kwargs)
        self._use_disabled_adapter = reference_model is None and _is_peft(model)
        if reference_model is None and not self._use_disabled_adapter:
            reference_model = frozen_copy(model)  # gathered whole if ZeRO-3 partitioned the model
        if reference_model is not None:
            check_not_zero3_partitioned(reference_model, "frozen reference encoder (f_orig)")
            reference_model.eval()
            reference_model.requires_grad_(False)
            reference_model.to(self.args.device)
            apply_teacher_dtype(reference_model, args.teacher_dtype, self.args.device)
        self.reference_model = reference_model
        self.rho: float | None = args.rho
        self.rho_stats: dict[str, float] = {}
        self.validation_measures = validation_measures
        self._rho_logged = False
        from fairmt.trainers.dead_term import DeadTermCallback

        self.dead_term = DeadTermCallback("loss_bias", fix=RHO_FIX)
        self.add_callback(self.dead_term)

    # ------------------------------------------------------------------ embeddings

    def _embed(self, model, features):
        return encode(model, features, self.args.pooling, self.args.normalize)

    @torch.no_grad()
    def embed_reference(self, features: dict) -> torch.Tensor:
        """f_orig of a tokenised batch (no gradient)."""
        if self.reference_model is not None:
            return self._embed(self.reference_model, features).float()
        peft_model = self.accelerator.unwrap_model(self.model)
        was_training = peft_model.training
        peft_model.eval()
        try:
            with peft_model.disable_adapter():
                return self._embed(peft_model, features)
        finally:
            peft_model.train(was_training)

    # ------------------------------------------------------------------ rho

    @torch.no_grad()
    def estimate_rho(self, dataset=None) -> float:
        """Fix ρ from the original model's group-to-neutral distances over the training tuples (see CCDConfig)."""
        dataset = dataset if dataset is not None else self.train_dataset
        if dataset is None:
            raise FairmtError("rho is not set and there is no train_dataset to estimate it from: pass rho=...")
        n = len(dataset) if self.args.rho_max_tuples is None else min(len(dataset), self.args.rho_max_tuples)
        bs = max(1, self.args.per_device_eval_batch_size)
        dists = []
        for start in range(0, n, bs):
            rows = [dataset[i] for i in range(start, min(n, start + bs))]
            batch = self.data_collator(rows)
            g = int(batch.pop("ccd_groups"))
            batch = {k: v.to(self.args.device) for k, v in batch.items() if torch.is_tensor(v)}
            emb = self.embed_reference(batch)
            emb = emb.view(1 + g, len(rows), -1)
            dists.append(tuple_distances(emb[0], emb[1:].transpose(0, 1)).float().cpu())
        per_tuple = torch.cat(dists)  # (tuples, groups)
        d = per_tuple.flatten()
        rho = estimate_rho(d, self.args.rho_estimator)
        kernel = torch.exp(-(per_tuple.double() ** 2) / (2 * rho * rho))
        live = float((kernel.max(dim=1).values > LIVE_KERNEL).double().mean())  # tuples whose L_bias can move
        median = float(d.median())
        kernel_at_median = math.exp(-(median**2) / (2 * rho * rho))
        self.rho_stats = {
            "ccd_rho": rho,
            "ccd_rho_distance_mean": float(d.mean()),
            "ccd_rho_distance_std": float(d.std()),
            "ccd_rho_kernel_at_median": kernel_at_median,
            "ccd_rho_tuples": float(n),
            "ccd_rho_live_tuples": live,
        }
        if kernel_at_median < 1e-4:
            logger.warning(
                "CCD: rho=%.4g (%s of %d distances, median distance %.4g) makes the kernel exp(-d^2/2rho^2) "
                "%.2e at the median distance, so L_bias has almost no gradient; set rho_estimator='median' or rho=...",
                rho,
                self.args.rho_estimator,
                d.numel(),
                median,
                kernel_at_median,
            )
        return rho

    def _ensure_rho(self) -> float:
        if self.rho is None:
            self.rho = self.estimate_rho()
            logger.info("CCD: estimated rho = %.6g (%s)", self.rho, self.args.rho_estimator)
        return self.rho

    def train(self, *args, **kwargs):
        """Estimate ρ (unless given) with the original model, then train as ``Trainer.train``."""
        self._ensure_rho()
        live = self.rho_stats.get("ccd_rho_live_tuples")
        if live is not None and live < DEAD_SHARE:
            msg = (
                f"CCD: rho={self.rho:.4g} (the {self.args.rho_estimator} of the original group-to-neutral "
                f"distances, mean {self.rho_stats['ccd_rho_distance_mean']:.3g}) leaves the kernel above {LIVE_KERNEL:g} on "
                f"{100 * live:.2g} % of the training tuples, so L_bias has no gradient and the run would train "
                f"L_rep alone; {RHO_FIX}"
            )
            if self.args.dead_bias == "error":
                raise FairmtError(msg + " (or dead_bias='warn' to train anyway)")
            logger.warning(msg)
        return super().train(*args, **kwargs)

    # ------------------------------------------------------------------ loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """L_bias + β·L_rep of a flat tuple batch (``num_items_in_batch`` is not used: the terms are batch means)."""
        rho = self._ensure_rho()
        if "ccd_groups" not in inputs:
            raise FairmtError("CCD batch has no 'ccd_groups': use fairmt.data.augment.tuples.CCDTupleCollator")
        inputs = dict(inputs)
        g = int(inputs.pop("ccd_groups"))
        if g != len(self.args.groups):
            raise FairmtError(f"batch has {g} groups but CCDConfig.groups is {self.args.groups}")
        feats = {k: inputs[k] for k in _MODEL_KEYS if k in inputs}
        total = feats["input_ids"].shape[0]
        if total % (1 + g):
            raise FairmtError(f"flat CCD batch of {total} rows is not a multiple of 1 + {g} groups")
        b = total // (1 + g)
        emb = self._embed(model, feats).view(1 + g, b, -1)
        neutral, groups = emb[0], emb[1:].transpose(0, 1)
        orig = self.embed_reference({k: v[:b] for k, v in feats.items()})
        out = ccd_loss(neutral, groups, orig.to(neutral.dtype), rho=rho, beta=self.args.beta)
        self._add_terms(model.training, out.bias, out.rep)
        if not model.training:
            self._add_gap(neutral.detach(), groups.detach())
        if return_outputs:
            return out.loss, {"embeddings": emb}
        return out.loss

    # ------------------------------------------------------------------ validation measures

    def _add_gap(self, neutral: torch.Tensor, groups: torch.Tensor) -> None:
        """Accumulate the CCED gap of an evaluation batch: per tuple, the mean over group pairs i < j of
        | ‖f(S^{a_i}) − f(S^n)‖ − ‖f(S^{a_j}) − f(S^n)‖ | (as :func:`fairmt.eval.embedding.cced.cced_gap`)."""
        d = tuple_distances(neutral.float(), groups.float())  # (B, G)
        i, j = torch.triu_indices(d.shape[1], d.shape[1], 1)
        per_tuple = (d[:, i] - d[:, j]).abs().mean(dim=1)
        acc = self.__dict__.setdefault("_gap_sums", torch.zeros(2, dtype=torch.float64))
        acc += torch.tensor([float(per_tuple.sum()), float(per_tuple.numel())], dtype=torch.float64)

    def evaluation_loop(
        self, dataloader, description, prediction_loss_only=None, ignore_keys=None, metric_key_prefix="eval"
    ):
        """The Trainer's evaluation loop (with the loss terms), plus ``<prefix>_cced_gap`` — the CCED gap of the
        evaluation tuples, a validation bias measure that ``metric_for_best_model="eval_cced_gap"`` can select the
        checkpoint by — and whatever :attr:`validation_measures` returns (``<prefix>_<name>``)."""
        self._gap_sums = torch.zeros(2, dtype=torch.float64)
        output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys, metric_key_prefix)
        acc = self._gap_sums
        if self.accelerator.num_processes > 1:
            acc = self.accelerator.reduce(acc.to(self.args.device), reduction="sum").cpu()
        if acc[1] > 0:
            output.metrics[f"{metric_key_prefix}_cced_gap"] = float(acc[0] / acc[1])
        if self.validation_measures is not None:
            model = self.accelerator.unwrap_model(self.model)
            was_training = model.training
            model.eval()
            try:
                extra = self.validation_measures(model)
            finally:
                model.train(was_training)
            output.metrics.update({f"{metric_key_prefix}_{k}": float(v) for k, v in extra.items()})
        return output

    # ----------------------------------------------------------------- logging (SplitTermLogMixin: loss_bias, loss_rep)

    def _extra_train_log(self, logs: dict[str, float]) -> None:
        if self.rho is not None and not self._rho_logged:  # ρ once, in the first training log
            logs["ccd_rho"] = self.rho
            self._rho_logged = True

    # ------------------------------------------------------------------ saving sentence-transformers models

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        base = self.accelerator.unwrap_model(self.model)
        if not is_sentence_transformer(base):
            return super()._save(output_dir, state_dict)
        output_dir = output_dir if output_dir is not None else self.args.output_dir
        if not self.args.should_save:
            return None
        os.makedirs(output_dir, exist_ok=True)
        base.save(output_dir, create_model_card=False)
        torch.save(self.args, os.path.join(output_dir, "training_args.bin"))
        return None

    def _load_st_weights(self, checkpoint: str) -> None:
        base = self.accelerator.unwrap_model(self.model)
        loaded = type(base)(checkpoint, device="cpu")
        base.load_state_dict(loaded.state_dict(), strict=True)

    def _load_best_model(self) -> None:
        if is_sentence_transformer(self.accelerator.unwrap_model(self.model)):
            self._load_st_weights(self.state.best_model_checkpoint)
            return
        super()._load_best_model()

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model=None) -> None:
        if is_sentence_transformer(self.accelerator.unwrap_model(model or self.model)):
            self._load_st_weights(resume_from_checkpoint)
            return
        super()._load_from_checkpoint(resume_from_checkpoint, model)


def ccd_metrics_summary(trainer: CCDTrainer) -> dict[str, Any]:
    """ρ and its estimate's statistics, for reports."""
    return {
        "rho": trainer.rho,
        "rho_estimator": trainer.args.rho_estimator,
        **trainer.rho_stats,
        "fairness_term": trainer.dead_term.summary(),
    }
