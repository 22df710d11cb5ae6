"""GACL + knowledge distillation for multilingual seq2seq MT (Lee et al., EMNLP 2023; fairmt.citations).

    L = (1 − α)·L_MT + α·L_KD + λ·L_GC

``L_MT`` is the model's token cross-entropy, ``L_KD`` the token-level KL(teacher ‖ student) to a frozen teacher
(:func:`fairmt.losses.token_kl_loss`), ``L_GC`` the gender-aware contrastive loss on mean-pooled encoder states
(:func:`fairmt.losses.gacl_loss`). ``GACLTrainer`` is a drop-in ``Seq2SeqTrainer`` (``ds``:
:func:`fairmt.data.gacl.tokenize_gacl` of :func:`~fairmt.data.gacl.prepare_gacl_pairs`; ``collator``:
:class:`~fairmt.data.gacl.GenderContrastiveCollator`; runs as a test, ``tests/project/test_docstring_examples.py``)::

    >>> args = GACLConfig(output_dir="out", per_device_train_batch_size=8, learning_rate=4e-6)
    >>> trainer = GACLTrainer(model=model, args=args, train_dataset=ds, data_collator=collator,
    ...                       processing_class=tokenizer)
    >>> result = trainer.train()
    >>> result.global_step > 0
    True

How the extra encoder views are computed. The contrastive views (a dropout view, the counterfactual sources) need
extra *encoder* passes, never a decoder pass. To stay inside one forward of the wrapped model — DDP accepts each
parameter's gradient once per forward, so a separate ``get_encoder()`` call fails under DDP — the trainer passes
the extra inputs as keyword arguments to the model call, and hooks on the underlying transformers model take them
out before the model sees them: views with gradient are encoded in ONE batched encoder call together with the
batch itself (``[x; x; x_cf]``; the decoder then reads the first rows through ``encoder_outputs``), views
without gradient (the official code's dropout view) in a separate no-grad encoder call. So per training step the
student's encoder runs ONCE for the ``paper`` variant (on the 3B rows ``[x; x; x_cf]``) and TWICE for ``official``
(``x`` with gradient, its dropout view without), and the teacher runs once, without gradient (in the dtype of
``teacher_dtype``: :mod:`fairmt.models.precision`); ``tests/project/test_perf_guards.py`` holds the trainer to these
counts. The pooled states travel beside the output. The hooks run inside DDP/FSDP/DeepSpeed's forward and work
through PEFT. With a KD teacher at temperature 1, ``(1 − α)·L_MT + α·L_KD`` is one fused loss
(:func:`fairmt.losses.mt_kd_loss`): one log-softmax of the student's logits, and the gradient built in place, so the
vocabulary-sized work is two buffers, not a dozen.
Nothing in the training loss is read back from the device: a step's one host read is the fault guard's
(:class:`fairmt.trainers.faults.FaultGuardMixin`: the loss is finite), which also reads whether the batch held
both genders (:func:`fairmt.losses.gacl.single_gender_batch`).

Evaluation. ``eval_loss`` is always the MT cross-entropy L_MT (token mean over the labels), with or without
``predict_with_generate``, so it is comparable across runs, variants and plain fine-tuning. Beside it,
``eval_loss_mt`` (the same), ``eval_loss_kd`` (where a teacher is used) and ``eval_loss_gc`` are reported.
``eval_loss_gc`` is the mean of L_GC over the evaluation batches on which it is defined (the batch carries
``gender`` — and counterfactuals where the variant uses them — and holds both genders);
``eval_gc_batches`` says on how many. A batch of one gender never fails an evaluation. Plain evaluation sets
(``input_ids``/``attention_mask``/``labels`` only, e.g. a whole dev set tokenised with
:meth:`fairmt.models.TranslationModel.encode`) are accepted: they give L_MT (and L_KD) and generation metrics.
"""

from __future__ import annotations

import copy
import functools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import ClassVar

import torch
import torch.nn as nn
from transformers import PreTrainedModel, Seq2SeqTrainer, Seq2SeqTrainingArguments

from fairmt.errors import COUNT, PROBABILITY, WEIGHT, FairmtError, Range, check_ranges
from fairmt.losses import GACLPairs, gacl_loss, gacl_variant, mt_kd_loss, token_kl_loss
from fairmt.losses.gacl import GACL_DEFAULTS, GACL_RANGES, SINGLE_GENDER_HINT, VARIANT_DEFAULTS, single_gender_batch
from fairmt.models.heads import LinearProjectionHead, ProjectionHead
from fairmt.models.pooling import pool
from fairmt.models.precision import (
    DEFAULT_TEACHER_DTYPE,
    TEACHER_DTYPE_HELP,
    TeacherDtype,
    apply_teacher_dtype,
    teacher_dtype_option,
)
from fairmt.trainers.faults import FaultGuardMixin
from fairmt.trainers.sharding import ShardingMixin, check_not_zero3_partitioned, frozen_copy, outside_zero3_init

_EXTRA = "fairmt_extra"


@dataclass
class GACLConfig(Seq2SeqTrainingArguments):
    r"""Training arguments for :class:`GACLTrainer`; defaults follow Lee et al. (2023) where the paper gives them,
    the authors' released code (``run_translation.sh``/``run_translation.py``) where it does not.

    Parameters:
        kd_alpha (`float`, defaults to `0.4`): α, weight of L_KD; L_MT gets 1 − α. 0 disables the teacher. The
            paper prints no value; 0.4 is the released script's ``--kd_lambda``.
        gacl_lambda (`float`, defaults to `1.0`): λ, weight of L_GC. 0 disables the contrastive term (plain
            fine-tuning: the Balanced/GFST/Handcrafted baselines). The paper prints no value; 1.0 is the released
            script's ``--gc_lambda``.
        temperature (`float`, defaults to `1.0`): τ of the contrastive softmax. The paper does not state τ; the
            authors' released script (``run_translation.sh``) sets no ``--gc_loss_temp`` and so trains with its
            default 1.0, the only evidence of what they ran.
        positive_reduction (`str`, defaults to `"mean"`): how an anchor's log-probabilities over its positives are
            combined: ``"mean"`` (divide by the number of positives: the scale of L_GC, hence the meaning of λ,
            does not grow with the per-device batch size or the number of processes) or ``"sum"`` (Eq. 1 as
            printed, whose value grows about linearly with the batch: 8.8 / 22.7 / 56.1 at batch 8 / 16 / 32 at the
            first step of a tiny run). ``None`` takes the variant's choice (sum for ``paper``).
        gather_across_processes (`bool`, defaults to `True`): under DDP, take in-batch candidates from every
            process (with gradient), as the released code's ``accelerator.gather``; False: per-process batches.
        exclude_mt_loss (`bool`, defaults to `False`): drop L_MT (the paper's Table 3 "with L_GC only", the released
            code's ``--exclude_mt_loss``): the loss is ``L_KD + λ·L_GC`` with a teacher (α > 0; L_KD then at weight
            1, as that code does), ``λ·L_GC`` without.
        gacl_variant (`str`, defaults to `"paper"`): ``"paper"`` (Eq. 1 as printed: dropout view + in-batch same
            gender as positives, counterfactual + in-batch other gender as negatives, sum over positives) or
            ``"official"`` (the released code: no counterfactual, dropout view without gradient, mean over
            positives).
        dropout_positive / inbatch_positives / counterfactual_negative / inbatch_negatives (`bool`, optional):
            override the variant's choice of each pair set (the paper's Table 5 ablation).
        detach_dropout_view (`bool`, optional): override whether the dropout view is computed without gradient
            (the official code does; it saves the view's encoder backward pass).
        pooling (`str`, defaults to `"mean"`): encoder pooling: ``"mean"`` over non-pad tokens, or ``"first"``.
        projection (`str`, optional): a head on the pooled states for the contrastive term only: ``"linear"``
            (the released code's ``Dropout(model dropout) → Linear(d, d)``), ``"mlp"`` (SimCSE's
            ``Linear → Tanh → Linear``, output ``projection_dim``, default d) or ``"none"``. Default: ``"linear"``
            for the ``official`` variant, ``"mlp"`` if ``projection_dim`` is set, else none. The head is saved
            beside checkpoints (``gacl_projection_head.safetensors``), never inside the model weights.
        projection_dim (`int`, optional): output size of the ``"mlp"`` head.
        projection_weight_decay (`float`, defaults to `1.0`): weight decay of the head's parameters, in their own
            optimizer group (the released code trains its head with 1.0; the rest uses ``weight_decay``, biases and
            LayerNorms 0).
        kd_normalization (`str`, optional): ``"token"`` (mean KL over all target tokens of the batch) or
            ``"sentence"`` (mean per sentence, then over sentences, as the released code). Default: ``"sentence"``
            for ``official``, ``"token"`` for ``paper``.
        warmup_init_lr_ratio (`float`, optional): fairseq-style warm-up start: the learning rate rises linearly
            from ``ratio · learning_rate`` (fairseq's ``warmup_init_lr``) instead of 0 during the warm-up steps; the
            schedule after warm-up is unchanged. Default 0.1 for ``official`` (the released inverse-square-root
            schedule), 0 for ``paper`` (transformers' schedules).
        teacher_model_name_or_path (`str`, optional): the KD teacher; default a frozen copy of the starting model.
        teacher_dtype (`str`, defaults to `"auto"`): the teacher's dtype: ``"auto"`` (bfloat16 where the device runs
            it fast — CUDA with bf16 support, a CPU with ``avx512_bf16``/``amx_bf16`` —, float32 otherwise: on a CPU
            without them a bf16 teacher is several times slower), ``"bf16"`` (halves its memory; warns once where it
            is slow) or ``"fp32"`` (:mod:`fairmt.models.precision`).
        teacher_bf16 (`bool`, optional): deprecated (goes in fairmt 0.2): ``True`` is ``teacher_dtype="bf16"``,
            ``False`` ``teacher_dtype="fp32"``.
        kd_temperature (`float`, defaults to `1.0`): softmax temperature of the KD term.
        balanced_batches (`bool`, defaults to `True`): sample so that every per-device batch is half male, half
            female (:class:`fairmt.data.gacl.GenderBalancedSampler`).
    """

    RANGES: ClassVar[dict[str, Range]] = {  # each numeric field's range (fairmt.errors.check_ranges; the loss
        **GACL_RANGES,
        "projection_weight_decay": WEIGHT,  # hyper-parameters' are the fairseq criterion's too)
        "warmup_init_lr_ratio": PROBABILITY,
        "projection_dim": COUNT,
    }
    # the defaults shared with the fairseq criterion live in fairmt.losses.gacl.GACL_DEFAULTS (read here)
    kd_alpha: float = field(
        default=GACL_DEFAULTS.kd_alpha, metadata={"help": "α: weight of the KD loss; L_MT gets 1 − α."}
    )
    gacl_lambda: float = field(
        default=GACL_DEFAULTS.gacl_lambda, metadata={"help": "λ: weight of the gender-aware contrastive loss."}
    )
    temperature: float = field(
        default=GACL_DEFAULTS.temperature, metadata={"help": "τ of the contrastive loss (released code: 1.0)."}
    )
    positive_reduction: str | None = field(
        default=GACL_DEFAULTS.positive_reduction,
        metadata={"help": "'mean' over positives (scale independent of batch size) or 'sum' (Eq. 1)."},
    )
    gather_across_processes: bool = field(
        default=GACL_DEFAULTS.gather_across_processes, metadata={"help": "In-batch candidates from all processes."}
    )
    exclude_mt_loss: bool = field(default=False, metadata={"help": "Drop L_MT (Table 3 'L_GC only')."})
    projection: str | None = field(default=None, metadata={"help": "'linear', 'mlp' or 'none' (default by variant)."})
    projection_weight_decay: float = field(default=1.0, metadata={"help": "Weight decay of the projection head."})
    kd_normalization: str | None = field(default=None, metadata={"help": "'token' or 'sentence' (default by variant)."})
    warmup_init_lr_ratio: float | None = field(
        default=None,
        metadata={"help": "Warm-up starts at this fraction of the learning rate (fairseq warmup_init_lr)."},
    )
    gacl_variant: str = field(
        default=GACL_DEFAULTS.gacl_variant, metadata={"help": "'paper' or 'official' (the released code)."}
    )
    dropout_positive: bool | None = field(default=None, metadata={"help": "Override: dropout view as positive."})
    inbatch_positives: bool | None = field(default=None, metadata={"help": "Override: in-batch same gender positives."})
    counterfactual_negative: bool | None = field(default=None, metadata={"help": "Override: swapped source negative."})
    inbatch_negatives: bool | None = field(
        default=None, metadata={"help": "Override: in-batch other gender negatives."}
    )
    detach_dropout_view: bool | None = field(
        default=None, metadata={"help": "Override: no gradient through the dropout view."}
    )
    pooling: str = field(
        default=GACL_DEFAULTS.pooling, metadata={"help": "'mean' over non-pad encoder tokens or 'first'."}
    )
    projection_dim: int | None = field(default=None, metadata={"help": "Output size of the 'mlp' head."})
    teacher_model_name_or_path: str | None = field(
        default=None, metadata={"help": "KD teacher (default: frozen copy)."}
    )
    teacher_dtype: TeacherDtype | str = field(default=DEFAULT_TEACHER_DTYPE, metadata={"help": TEACHER_DTYPE_HELP})
    teacher_bf16: bool | None = field(
        default=None, metadata={"help": "Deprecated: teacher_dtype 'bf16' (true) or 'fp32' (false)."}
    )
    kd_temperature: float = field(
        default=GACL_DEFAULTS.kd_temperature, metadata={"help": "Softmax temperature of the KD term."}
    )
    balanced_batches: bool = field(default=True, metadata={"help": "Gender-balanced per-device batches."})
    remove_unused_columns: bool = field(
        default=False, metadata={"help": "Must stay False: the gender and counterfactual columns are not model inputs."}
    )

    def __post_init__(self):
        check_ranges(self)  # each numeric field's declared range, TrainingArguments' too (as the recipes),
        super().__post_init__()  # before transformers' own checks, which name no range (or raise later)
        if self.remove_unused_columns:
            raise FairmtError(
                "GACLConfig needs remove_unused_columns=False: with True the Trainer silently drops the 'gender' and "
                "counterfactual columns and the contrastive term vanishes"
            )
        if self.pooling not in ("mean", "first"):
            raise FairmtError(f"pooling must be 'mean' or 'first', got {self.pooling!r}")
        gacl_variant(self.gacl_variant)  # validates the name
        official = self.gacl_variant == "official"
        preset = VARIANT_DEFAULTS[self.gacl_variant]  # what the variant takes for the options left unset
        if self.projection is None:
            self.projection = "mlp" if self.projection_dim and not official else preset["projection"]
        if self.projection not in ("none", "linear", "mlp"):
            raise FairmtError(f"projection must be 'none', 'linear' or 'mlp', got {self.projection!r}")
        if self.projection == "linear" and self.projection_dim:
            raise FairmtError("projection='linear' is d → d (the released head): unset projection_dim or use 'mlp'")
        if self.kd_normalization is None:
            self.kd_normalization = preset["kd_normalization"]
        if self.kd_normalization not in ("token", "sentence"):
            raise FairmtError(f"kd_normalization must be 'token' or 'sentence', got {self.kd_normalization!r}")
        if self.warmup_init_lr_ratio is None:
            self.warmup_init_lr_ratio = preset["warmup_init_lr_ratio"]
        if self.positive_reduction not in (None, "mean", "sum"):
            raise FairmtError(f"positive_reduction must be 'mean' or 'sum', got {self.positive_reduction!r}")
        self.teacher_dtype = teacher_dtype_option(self, "GACLConfig")
        if self.label_smoothing_factor:
            raise FairmtError(
                "GACLTrainer computes L_MT itself (sharing its log-softmax with L_KD) and does not apply label "
                "smoothing: set label_smoothing_factor=0"
            )

    def pairs(self) -> GACLPairs:
        """The contrastive pair sets in use: the variant, with the explicit overrides applied."""
        base = gacl_variant(self.gacl_variant)
        overrides = {
            k: getattr(self, k)
            for k in (
                "dropout_positive",
                "inbatch_positives",
                "counterfactual_negative",
                "inbatch_negatives",
                "detach_dropout_view",
                "positive_reduction",
            )
            if getattr(self, k) is not None
        }
        return GACLPairs(**{**base.__dict__, **overrides})


def make_projection_head(args: GACLConfig, config) -> nn.Module | None:
    if args.projection == "linear":
        return LinearProjectionHead(config.d_model, float(getattr(config, "dropout", 0.0) or 0.0))
    if args.projection == "mlp":
        return ProjectionHead(config.d_model, args.projection_dim or config.d_model)
    return None


def _base_model(model: nn.Module) -> PreTrainedModel:
    """The transformers model under PEFT (and any other) wrapping."""
    m = model
    if hasattr(m, "get_base_model"):
        m = m.get_base_model()
    if not isinstance(m, PreTrainedModel) or not hasattr(m, "get_encoder"):
        raise FairmtError(f"GACL needs an encoder-decoder transformers model, got {type(model).__name__}")
    return m


def _pre_hook(module, args, kwargs):
    extra = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith(_EXTRA)}
    module._fairmt_pending = extra or None
    ids = extra.get(f"{_EXTRA}_grad_input_ids")
    if ids is None or not torch.is_grad_enabled() or "encoder_outputs" in kwargs:
        return args, kwargs
    # Views with gradient: ONE batched encoder call on [x; views] (one embedding backward, bigger matrix products);
    # the model then decodes from the first rows through `encoder_outputs`.
    from transformers.modeling_outputs import BaseModelOutput

    main_ids, main_mask = kwargs["input_ids"], kwargs["attention_mask"]
    b, t = main_ids.shape
    width = max(t, ids.shape[1])
    pad = module.config.pad_token_id
    states = module.get_encoder()(
        input_ids=torch.cat([_pad_to(main_ids, width, pad), _pad_to(ids, width, pad)]),
        attention_mask=torch.cat(
            [_pad_to(main_mask, width, 0), _pad_to(extra[f"{_EXTRA}_grad_attention_mask"], width, 0)]
        ),
    ).last_hidden_state
    kwargs["encoder_outputs"] = BaseModelOutput(last_hidden_state=states[:b, :t])
    extra[f"{_EXTRA}_grad_states"] = states[b:, : ids.shape[1]]
    return args, kwargs


def _post_hook(module, args, kwargs, output):
    extra = getattr(module, "_fairmt_pending", None)
    module._fairmt_pending = None
    if not extra:
        return output
    how = extra[f"{_EXTRA}_pooling"]
    head = getattr(module, "gacl_projection_head", None)

    def represent(states, mask):
        h = pool(states, mask, how)
        return head(h) if head is not None else h

    result = {"h": represent(output.encoder_last_hidden_state, kwargs["attention_mask"])}
    for kind, grad in (("grad", True), ("nograd", False)):
        ids = extra.get(f"{_EXTRA}_{kind}_input_ids")
        if ids is None:
            continue
        mask = extra[f"{_EXTRA}_{kind}_attention_mask"]
        states = extra.get(f"{_EXTRA}_{kind}_states")
        if states is None:  # no-grad views (a dropout view as in the official code), or evaluation
            with torch.set_grad_enabled(torch.is_grad_enabled() and grad):
                states = module.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
        with torch.set_grad_enabled(torch.is_grad_enabled() and grad):
            result[kind] = represent(states, mask)
    # The representations travel beside the output (DDP rebuilds output dataclasses and rejects new keys). A zero
    # term ties them into a returned tensor, so DDP's search for unused parameters finds the projection head.
    if torch.is_grad_enabled() and any(t.requires_grad for t in result.values()):
        tie = 0.0 * sum(t.sum() for t in result.values() if t.requires_grad)
        output.encoder_last_hidden_state = output.encoder_last_hidden_state + tie
    module._fairmt_result = result
    return output


def install_extra_encoder_hooks(model: nn.Module) -> None:
    """Let ``model(..., fairmt_extra_pooling="mean", fairmt_extra_grad_input_ids=..., ...)`` also return the pooled
    (and projected) encoder representation of the batch and of extra sources, computed inside the same forward."""
    base = _base_model(model)
    if getattr(base, "_fairmt_hooks", False):
        return
    base.register_forward_pre_hook(_pre_hook, with_kwargs=True)
    base.register_forward_hook(_post_hook, with_kwargs=True)
    base._fairmt_hooks = True


class GACLTrainer(FaultGuardMixin, ShardingMixin, Seq2SeqTrainer):
    """``Seq2SeqTrainer`` with the GACL + KD objective (see module docstring). Logs ``loss_mt``, ``loss_kd``,
    ``loss_gc`` beside the total ``loss``. The teacher is held by the trainer, never saved or pushed."""

    # compute_loss returns a per-batch mean; the Trainer must divide it for gradient accumulation itself.
    loss_is_scaled_for_ga = False
    HEAD_FILE = "gacl_projection_head.safetensors"
    LEGACY_HEAD_FILE = "gacl_projection_head.pt"  # fairmt < 0.2 wrote the head with torch.save

    def __init__(self, model=None, args: GACLConfig | None = None, teacher_model: nn.Module | None = None, **kwargs):
        if args is None:
            raise FairmtError("GACLTrainer needs a GACLConfig")
        if not isinstance(args, GACLConfig):
            raise FairmtError(f"GACLTrainer needs a GACLConfig, got {type(args).__name__}")
        if model is None:
            raise FairmtError("GACLTrainer needs a model")
        self.pairs = args.pairs()
        self._gacl_args = args  # self.args exists only after Trainer.__init__
        train_dataset = kwargs.get("train_dataset")
        if train_dataset is not None:
            self._check_dataset(train_dataset, "train_dataset")
        install_extra_encoder_hooks(model)
        base = _base_model(model)
        head = None
        if args.gacl_lambda > 0:
            with torch.random.fork_rng(devices=[]):  # the head's initial weights depend on the seed only
                torch.manual_seed(args.seed)
                head = make_projection_head(args, base.config)
        if head is not None:  # a submodule of the transformers model, so DDP/optimizer see it; kept out of saves
            base.gacl_projection_head = head
            # ... also out of a direct model.save_pretrained() (transformers drops these keys when saving)
            base._keys_to_ignore_on_save = set(base._keys_to_ignore_on_save or ()) | {
                f"gacl_projection_head.{k}" for k in head.state_dict()
            }
        self.teacher = None
        if args.kd_alpha > 0:
            self.teacher = self._make_teacher(model, args, teacher_model)
        eval_dataset = kwargs.get("eval_dataset")
        if isinstance(eval_dataset, dict):
            for k, v in eval_dataset.items():
                self._check_eval_dataset(v, f"eval_dataset[{k!r}]")
        elif eval_dataset is not None:
            self._check_eval_dataset(eval_dataset, "eval_dataset")
        super().__init__(model=model, args=args, **kwargs)
        self.dead_term = None
        if args.gacl_lambda > 0:  # a contrastive term logged as 0 has no gradient: said once, and loudly at the end
            from fairmt.trainers.dead_term import DeadTermCallback

            self.dead_term = DeadTermCallback(
                "loss_gc",
                fix="check that the batches carry gendered pairs (the counterfactual columns) and the temperature",
            )
            self.add_callback(self.dead_term)
        if self.teacher is not None:
            self.teacher.to(self.args.device)
        self._terms: dict[str, list[torch.Tensor]] = defaultdict(list)
        self._eval_terms: dict[str, list[torch.Tensor]] = defaultdict(list)

    # ---- set-up -------------------------------------------------------------------------------------------------

    @staticmethod
    def _columns(ds, name: str) -> list[str] | None:
        """The dataset's columns (None when it has no length or no column names); an empty dataset is an error."""
        try:
            n = len(ds)
        except TypeError:
            return None
        if n == 0:
            raise FairmtError(f"{name} is empty")
        return getattr(ds, "column_names", None)

    def _check_dataset(self, ds, name: str) -> None:
        cols = self._columns(ds, name)
        if cols is not None and self._gacl_args.gacl_lambda > 0:
            if "gender" not in cols:
                raise FairmtError(
                    f"{name} has no 'gender' column (columns: {cols}); prepare it with "
                    "fairmt.data.gacl.prepare_gacl_pairs + tokenize_gacl"
                )
            if self.pairs.counterfactual_negative and "cf_input_ids" not in cols:
                raise FairmtError(
                    f"{name} has no 'cf_input_ids' column but the GACL variant uses counterfactual negatives; add "
                    "them with fairmt.data.gacl.add_counterfactuals or set counterfactual_negative=False"
                )

    def _check_eval_dataset(self, ds, name: str) -> None:
        """An evaluation set is either plain (``input_ids``, ``attention_mask``, ``labels``: L_MT, L_KD and
        generation metrics) or GACL-prepared (also ``gender``, and counterfactuals for the variant: L_GC too)."""
        cols = self._columns(ds, name)
        if cols is None:
            return
        missing = [c for c in ("input_ids", "attention_mask", "labels") if c not in cols]
        if missing:
            raise FairmtError(
                f"{name} lacks {missing} (columns: {cols}): tokenise it with TranslationModel.encode(sources, targets) "
                "or fairmt.data.gacl.tokenize_gacl"
            )

    @staticmethod
    def _make_teacher(model, args: GACLConfig, teacher_model):
        if teacher_model is None and args.teacher_model_name_or_path:
            from transformers import AutoModelForSeq2SeqLM

            from fairmt.hub import require_model

            require_model(args.teacher_model_name_or_path, "KD teacher")
            with outside_zero3_init():  # the teacher is never managed by DeepSpeed: keep it whole
                teacher_model = AutoModelForSeq2SeqLM.from_pretrained(args.teacher_model_name_or_path)
        if teacher_model is None:
            base = _base_model(model)
            if hasattr(model, "peft_config"):  # the frozen starting point is the base model without adapters
                with model.disable_adapter():
                    teacher_model = copy.deepcopy(base)
                teacher_model = _strip_peft(teacher_model)
            else:
                teacher_model = frozen_copy(base)  # gathered whole if ZeRO-3 partitioned the student
        check_not_zero3_partitioned(teacher_model, "KD teacher")
        teacher_model.eval()
        teacher_model.requires_grad_(False)
        apply_teacher_dtype(teacher_model, args.teacher_dtype, args.device)
        return teacher_model

    def _get_train_sampler(self, train_dataset=None):
        ds = train_dataset if train_dataset is not None else self.train_dataset
        if self.args.balanced_batches and hasattr(ds, "column_names") and "gender" in ds.column_names:
            from fairmt.data.gacl import GenderBalancedSampler

            return GenderBalancedSampler(list(ds["gender"]), seed=self.args.seed)
        return super()._get_train_sampler(train_dataset)

    # ---- optimisation -------------------------------------------------------------------------------------------

    def create_optimizer(self, model=None):
        """The stock parameter groups, plus the projection head in its own group with ``projection_weight_decay``."""
        opt_model = self.model if model is None else model
        head = getattr(_base_model(self.accelerator.unwrap_model(opt_model)), "gacl_projection_head", None)
        if self.optimizer is not None or head is None:
            return super().create_optimizer(model)
        head_ids = {id(p) for p in head.parameters()}
        decay = set(self.get_decay_parameter_names(opt_model))
        rest = [(n, p) for n, p in opt_model.named_parameters() if p.requires_grad and id(p) not in head_ids]
        groups = [
            {"params": [p for n, p in rest if n in decay], "weight_decay": self.args.weight_decay},
            {"params": [p for n, p in rest if n not in decay], "weight_decay": 0.0},
            {
                "params": [p for p in head.parameters() if p.requires_grad],
                "weight_decay": self.args.projection_weight_decay,
            },
        ]
        if self.optimizer_cls_and_kwargs is not None:
            optimizer_cls, optimizer_kwargs = self.optimizer_cls_and_kwargs
        else:
            optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
        self.optimizer = optimizer_cls([g for g in groups if g["params"]], **optimizer_kwargs)
        return self.optimizer

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        """The configured schedule; with ``warmup_init_lr_ratio = r > 0`` its warm-up starts at ``r·lr`` (fairseq's
        ``warmup_init_lr``): factor ``r + (1 − r)·f(step)`` during the warm-up steps, ``f(step)`` after."""
        created = self.lr_scheduler is None
        sched = super().create_scheduler(num_training_steps, optimizer)
        r = self.args.warmup_init_lr_ratio
        warmup = self.args.get_warmup_steps(num_training_steps)
        if created and r > 0 and warmup > 0:
            if not isinstance(sched, torch.optim.lr_scheduler.LambdaLR):
                raise FairmtError(
                    f"warmup_init_lr_ratio needs a LambdaLR schedule; lr_scheduler_type={self.args.lr_scheduler_type!r} "
                    "is not one: set warmup_init_lr_ratio=0"
                )
            fns = [functools.partial(_warmup_from, base=f, start=r, warmup=warmup) for f in sched.lr_lambdas]
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(sched.optimizer, fns)
        return self.lr_scheduler

    # ---- the loss -----------------------------------------------------------------------------------------------

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        inputs = dict(inputs)
        training = model.training
        genders = inputs.pop("gender", None)
        cf_ids = inputs.pop("cf_input_ids", None)
        cf_mask = inputs.pop("cf_attention_mask", None)
        p, args = self.pairs, self.args
        use_gc = args.gacl_lambda > 0
        if use_gc and genders is None:
            if training:
                raise FairmtError(
                    "the training batch has no 'gender': use fairmt.data.gacl.GenderContrastiveCollator and "
                    "remove_unused_columns=False"
                )
            use_gc = False  # a plain evaluation set: L_MT (and L_KD) only
        if use_gc and p.counterfactual_negative and cf_ids is None:
            if training:
                raise FairmtError("the batch has no 'cf_input_ids' but GACL uses counterfactual negatives")
            use_gc = False
        ids, mask = inputs["input_ids"], inputs["attention_mask"]

        # extra encoder views: (name, ids, mask, with_gradient)
        views_in = []
        if use_gc and p.dropout_positive:
            views_in.append(("h_dropout", ids, mask, not p.detach_dropout_view))
        if use_gc and p.counterfactual_negative:
            views_in.append(("h_counterfactual", cf_ids, cf_mask, True))
        call = dict(inputs)
        if use_gc:
            call[f"{_EXTRA}_pooling"] = args.pooling
        pad = _base_model(self.accelerator.unwrap_model(model)).config.pad_token_id
        for kind, grad in (("grad", True), ("nograd", False)):
            group = [v for v in views_in if v[3] == grad]
            if group:
                width = max(v[1].shape[1] for v in group)
                call[f"{_EXTRA}_{kind}_input_ids"] = torch.cat([_pad_to(v[1], width, pad) for v in group])
                call[f"{_EXTRA}_{kind}_attention_mask"] = torch.cat([_pad_to(v[2], width, 0) for v in group])
        has_labels = "labels" in inputs
        kd_alpha = 1.0 if args.exclude_mt_loss else args.kd_alpha  # without L_MT, L_KD at weight 1 (released code)
        shared_softmax = self.teacher is not None and has_labels and args.kd_temperature == 1.0
        if shared_softmax:
            # L_MT and L_KD from one log-softmax of the student's logits (the model would compute its own for L_MT)
            call["decoder_input_ids"] = self._shift_right(call.pop("labels"))
        outputs = model(**call)
        reps = (
            _base_model(self.accelerator.unwrap_model(model)).__dict__.pop("_fairmt_result", None) if use_gc else None
        )
        if shared_softmax:  # fused: one log-softmax of the student's logits, gradient built in place
            loss, loss_mt, loss_kd = mt_kd_loss(
                outputs.logits,
                self._teacher_logits(inputs),
                inputs["labels"],
                kd_alpha,
                kd_normalization=args.kd_normalization,
            )
        else:
            loss_mt = outputs.loss
            loss_kd = self._kd_loss(outputs.logits, inputs) if self.teacher is not None and has_labels else None
            loss = (1.0 - kd_alpha) * loss_mt if loss_mt is not None else None
            if loss_kd is not None:
                loss = kd_alpha * loss_kd if loss is None else loss + kd_alpha * loss_kd
        if args.exclude_mt_loss and self.teacher is None and loss is not None:
            loss = loss * 0.0  # no L_MT and no L_KD: λ·L_GC alone
        terms = {}
        if loss_mt is not None:
            terms["loss_mt"] = loss_mt.detach()
        if loss_kd is not None:
            terms["loss_kd"] = loss_kd.detach()

        if use_gc:
            views = {}
            for kind, grad in (("grad", True), ("nograd", False)):
                names = [v[0] for v in views_in if v[3] == grad]
                if names:
                    views.update(zip(names, reps[kind].split(ids.shape[0])))
            # evaluation batches are not gender-balanced: L_GC only where defined, and per process (no collective
            # that a process skipping its batch would leave waiting)
            gather = args.gather_across_processes and training
            if training and p.inbatch_negatives:  # read with the loss, in the step's one read from the device
                self.defer_check(
                    single_gender_batch(genders, gather=gather),
                    f"the batch holds one gender only, but GACL uses in-batch negatives: {SINGLE_GENDER_HINT}",
                )
            loss_gc, n_pos, n_neg = gacl_loss(
                reps["h"],
                genders,
                temperature=args.temperature,
                pairs=p,
                gather=gather,
                return_counts=True,
                on_single_gender="defer" if training else "skip",
                **views,
            )
            if loss_gc is not None:
                loss = args.gacl_lambda * loss_gc if loss is None else loss + args.gacl_lambda * loss_gc
                terms["loss_gc"] = loss_gc.detach()
                terms["gc_positives"] = n_pos
                terms["gc_negatives"] = n_neg
        if loss is None:
            raise FairmtError("nothing to train on: the batch has no 'labels' and the contrastive term is off")

        if training:
            for k, v in terms.items():
                self._terms[k].append(v)
        else:
            for k, v in terms.items():
                self._eval_terms[k].append(v)
            if loss_mt is not None:  # eval_loss is L_MT, with or without predict_with_generate
                loss = loss_mt.detach()
        return (loss, outputs) if return_outputs else loss

    def _shift_right(self, labels):
        from transformers.models.m2m_100.modeling_m2m_100 import shift_tokens_right

        cfg = self.teacher.config
        return shift_tokens_right(labels, cfg.pad_token_id, cfg.decoder_start_token_id)

    def _teacher_logits(self, inputs):
        with torch.no_grad():
            return self.teacher(
                input_ids=inputs["input_ids"],
                attention_mask=inputs["attention_mask"],
                decoder_input_ids=self._shift_right(inputs["labels"]),
            ).logits

    def _kd_loss(self, student_logits, inputs):
        return token_kl_loss(
            student_logits,
            self._teacher_logits(inputs),
            inputs["labels"],
            temperature=self.args.kd_temperature,
            normalization=self.args.kd_normalization,
        )

    # ---- logging, evaluation, saving ----------------------------------------------------------------------------

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self._terms and "loss" in logs:  # a training log: add the mean of each term since the last one
            for k, vals in self._terms.items():
                mean = torch.stack(vals).mean()
                logs[k] = round(float(self.accelerator.reduce(mean, reduction="mean")), 6)
            self._terms.clear()
        super().log(logs, start_time)

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None, **gen_kwargs):
        if not (self.args.predict_with_generate and not prediction_loss_only):
            # Trainer.prediction_step → compute_loss: records the eval terms, returns L_MT as the loss
            return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys, **gen_kwargs)
        inputs = self._prepare_inputs(inputs)
        loss = None
        if "labels" in inputs:
            with torch.no_grad(), self.compute_loss_context_manager():
                loss = self.compute_loss(model, inputs)  # records eval_loss_mt/kd/gc; L_MT
        plain = {k: v for k, v in inputs.items() if k not in ("gender", "cf_input_ids", "cf_attention_mask")}
        _, generated, labels = super().prediction_step(
            model, plain, prediction_loss_only, ignore_keys=ignore_keys, **gen_kwargs
        )
        return (loss.detach() if loss is not None else None), generated, labels

    _EVAL_TERMS = ("loss_mt", "loss_kd", "loss_gc", "gc_positives", "gc_negatives")

    def evaluation_loop(
        self, dataloader, description, prediction_loss_only=None, ignore_keys=None, metric_key_prefix="eval"
    ):
        """Adds ``{prefix}_loss_mt``/``_loss_kd``/``_loss_gc`` (means over the batches where each is defined, over
        all processes), ``{prefix}_gc_batches`` and the mean positives/negatives per anchor to the metrics."""
        self._eval_terms.clear()
        out = super().evaluation_loop(
            dataloader,
            description,
            prediction_loss_only=prediction_loss_only,
            ignore_keys=ignore_keys,
            metric_key_prefix=metric_key_prefix,
        )
        device = self.args.device
        sums = torch.stack(
            [
                torch.stack(self._eval_terms[k]).float().sum()
                if self._eval_terms.get(k)
                else torch.zeros((), device=device)
                for k in self._EVAL_TERMS
            ]
        ).to(device)
        counts = torch.tensor([float(len(self._eval_terms.get(k, []))) for k in self._EVAL_TERMS], device=device)
        if self.accelerator.num_processes > 1:
            sums, counts = self.accelerator.reduce(sums, "sum"), self.accelerator.reduce(counts, "sum")
        for k, total, n in zip(self._EVAL_TERMS, sums.tolist(), counts.tolist()):
            if n > 0:
                out.metrics[f"{metric_key_prefix}_{k}"] = total / n
        out.metrics[f"{metric_key_prefix}_gc_batches"] = int(counts[self._EVAL_TERMS.index("loss_gc")])
        self._eval_terms.clear()
        return out

    def create_model_card(self, *args, **kwargs) -> None:
        """The stock card (written by ``push_to_hub``), plus the GACL settings of this run and the paper's BibTeX."""
        import os

        super().create_model_card(*args, **kwargs)
        path = os.path.join(self.args.output_dir, "README.md")
        if self.is_world_process_zero() and os.path.isfile(path):
            from fairmt.outputs import append_text

            append_text(path, gacl_card_section(self.args), what="the model card's GACL section")

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        import os

        output_dir = output_dir or self.args.output_dir
        model = _base_model(self.accelerator.unwrap_model(self.model))
        head = getattr(model, "gacl_projection_head", None)
        if head is None:
            return super()._save(output_dir, state_dict)
        if state_dict is not None:
            state_dict = {k: v for k, v in state_dict.items() if "gacl_projection_head" not in k}
        del model.gacl_projection_head  # keep it out of the model's weights and config
        try:
            super()._save(output_dir, state_dict)
        finally:
            model.gacl_projection_head = head
        os.makedirs(output_dir, exist_ok=True)
        from safetensors.torch import save_file

        save_file(
            {k: v.detach().contiguous().cpu() for k, v in head.state_dict().items()},
            os.path.join(output_dir, self.HEAD_FILE),
        )

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        import os

        super()._load_from_checkpoint(resume_from_checkpoint, model)
        target = model if model is not None else self.model
        head = getattr(_base_model(self.accelerator.unwrap_model(target)), "gacl_projection_head", None)
        if head is None:
            return
        path = os.path.join(resume_from_checkpoint, self.HEAD_FILE)
        legacy = os.path.join(resume_from_checkpoint, self.LEGACY_HEAD_FILE)
        if os.path.isfile(path):
            from safetensors.torch import load_file

            head.load_state_dict(load_file(path, device="cpu"))
        elif os.path.isfile(legacy):
            head.load_state_dict(torch.load(legacy, map_location="cpu", weights_only=True))


def gacl_card_section(args: GACLConfig) -> str:
    """Markdown for a model card: the GACL + KD settings a run used, and the method's citation."""
    from fairmt.citations import citations_for

    pairs = args.pairs()
    rows = [
        ("variant", args.gacl_variant),
        ("L_KD weight α", args.kd_alpha),
        ("L_GC weight λ", args.gacl_lambda),
        ("temperature τ", args.temperature),
        ("positives", pairs.positive_reduction),
        ("projection", args.projection),
        ("KD normalisation", args.kd_normalization),
        ("L_MT dropped", args.exclude_mt_loss),
        ("dropout view positive", pairs.dropout_positive),
        ("in-batch positives", pairs.inbatch_positives),
        ("counterfactual negative", pairs.counterfactual_negative),
        ("in-batch negatives", pairs.inbatch_negatives),
        ("teacher", args.teacher_model_name_or_path or "frozen copy of the starting model"),
        ("learning rate", args.learning_rate),
        ("batch size per device", args.per_device_train_batch_size),
    ]
    table = "\n".join(f"| {k} | {v} |" for k, v in rows)
    return (
        f"\n## GACL + KD training (fairmt)\n\n| setting | value |\n|---|---|\n{table}\n\n"
        f"### Citation\n\n```bibtex\n{citations_for('gacl')}\n```\n"
    )


def _warmup_from(step: int, base, start: float, warmup: int) -> float:
    return start + (1.0 - start) * base(step) if step < warmup else base(step)


def _pad_to(t: torch.Tensor, width: int, value: int) -> torch.Tensor:
    if t.shape[1] == width:
        return t
    return torch.nn.functional.pad(t, (0, width - t.shape[1]), value=value)


def _strip_peft(model):
    """A plain copy of a PEFT-injected transformers model, adapters removed (the teacher must be adapter-free)."""
    try:
        from peft.tuners.tuners_utils import BaseTunerLayer
    except ImportError:  # pragma: no cover
        return model
    for name, module in list(model.named_modules()):
        if isinstance(module, BaseTunerLayer):
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, module.get_base_layer())
    return model
