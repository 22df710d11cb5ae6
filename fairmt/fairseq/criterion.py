"""fairseq criterion ``gacl_kd``: GACL + knowledge distillation (Lee et al., EMNLP 2023) for ``fairseq-train``.

    loss = (1 − α)·L_MT + α·L_KD + λ·L_GC

* ``L_MT``: fairseq's label-smoothed cross-entropy (this class subclasses ``label_smoothed_cross_entropy``;
  ``--label-smoothing 0`` gives plain CE);
* ``L_KD``: token-level KL(teacher ‖ student), :func:`fairmt.losses.token_kl_loss` (the HF trainer's function);
* ``L_GC``: :func:`fairmt.losses.gacl_loss` on mean-pooled encoder states (the HF trainer's function), with the
  variant (``--gacl-variant paper|official``) and the four pair-set switches of :class:`fairmt.trainers.GACLConfig`;
  with ``--gacl-projection linear`` (the default for ``official``, as the HF trainer's preset) the pooled states of
  every view first pass the released code's head ``Dropout(model dropout) → Linear(d, d)``
  (:class:`fairmt.models.heads.LinearProjectionHead`, initialised from ``--seed``).

The projection head is part of training, unlike the teacher: it is a submodule of this criterion, so fairseq's
trainer hands it to the optimizer (``criterion.parameters()``), all-reduces its gradients under distributed training
and saves it in every checkpoint (``checkpoint["criterion"]``, restored by ``--restore-file``; a checkpoint without
one keeps the new head). ``--weight-decay`` applies to it as to the model (the HF trainer's own weight-decay group
for the head has no counterpart here). Its size comes from the model the task built (both fairmt tasks record it).

fairseq sums a criterion's loss over the batch and divides by the summed ``sample_size`` (target tokens, or
sentences with ``--sentence-avg``) of all processes. So the sums handed to fairseq are ``(1 − α)·(label-smoothed
CE summed over tokens) + α·(KL summed over tokens) + λ·L_GC·B_r·S/N``, where ``B_r`` is this process's number of
sentences and ``S``/``N`` the global sample size / number of sentences: after fairseq's division, one step optimises
``(1 − α)·L_MT + α·L_KD + λ·L_GC`` with L_MT/L_KD the global token means and L_GC the mean over all anchors of the
global batch, whatever the number of processes. Under ``--distributed-world-size K`` the in-batch candidates of
L_GC come from every process with gradients (:func:`fairmt.losses.gather_with_grad`); K processes then match one
process on the concatenated batch (use the task's ``--balanced-genders``, which cuts equal batches).

Logged beside fairseq's ``loss``/``nll_loss`` (bits): ``loss_mt``, ``loss_kd``, ``loss_gc`` (nats; with the default
``--sentence-avg`` off, ``loss · ln 2 = (1 − α)·loss_mt + α·loss_kd + λ·loss_gc``), ``gc_positives`` and
``gc_negatives`` (mean per anchor).

The teacher (α > 0) is held outside the criterion's modules, so it is neither trained, nor handed to the optimizer,
nor written into checkpoints. ``--teacher-path CKPT`` loads a fairseq checkpoint; without it the teacher is a frozen
copy of the model as it is at the first forward (the starting model, after
``--restore-file``/``--finetune-from-model``), and its weights are kept in ``SAVE_DIR/gacl_teacher.safetensors`` so a
resumed run (``checkpoint_last.pt`` in the save dir) distils from the same teacher; a fresh run in that folder
overwrites it. Checkpoints are unpickled in full (fairseq
0.12 stores argparse objects; the plugin sets ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``): load trusted files only.
"""

import copy
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.distributed as dist
from fairseq import metrics
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)
from fairseq.dataclass import ChoiceEnum
from omegaconf import II

from fairmt._deprecated import renamed_option
from fairmt.distributed import world_size
from fairmt.errors import FairmtError, Range
from fairmt.losses import GACLPairs, gacl_loss, gacl_variant, token_kl_loss
from fairmt.losses.gacl import GACL_DEFAULTS, GACL_RANGES, VARIANT_DEFAULTS
from fairmt.models.heads import LinearProjectionHead
from fairmt.models.pooling import pool
from fairmt.models.precision import (
    DEFAULT_TEACHER_DTYPE,
    TEACHER_DTYPE_HELP,
    TEACHER_DTYPES,
    check_teacher_dtype,
    resolve_teacher_dtype,
)

logger = logging.getLogger(__name__)

TEACHER_FILE = "gacl_teacher.safetensors"
_SWITCHES = (
    "dropout_positive",
    "inbatch_positives",
    "counterfactual_negative",
    "inbatch_negatives",
    "detach_dropout_view",
)
_BOOL = {"true": True, "yes": True, "1": True, "on": True, "false": False, "no": False, "0": False, "off": False}


OPTION_OF = {
    "temperature": "gacl_temperature",
    "positive_reduction": "gacl_positive_reduction",
    "pooling": "gacl_pooling",
}
"""The criterion's option for each :class:`~fairmt.losses.gacl.GACLSettings` field (``GACLConfig``'s name) where
the two differ (``gather_across_processes`` is the switch ``gacl_no_gather``, its negation)."""

CRITERION_RANGES: dict[str, Range] = {OPTION_OF.get(k, k): rng for k, rng in GACL_RANGES.items()}
"""Each numeric option's range: GACLConfig's (:data:`fairmt.losses.gacl.GACL_RANGES`). Not a class attribute:
fairseq turns every annotated name of the dataclass into an option."""


@dataclass
class GACLKDCriterionConfig(LabelSmoothedCrossEntropyCriterionConfig):
    kd_alpha: float = field(
        default=GACL_DEFAULTS.kd_alpha, metadata={"help": "α: weight of L_KD; L_MT gets 1 − α (0: no teacher)"}
    )
    kd_temperature: float = field(
        default=GACL_DEFAULTS.kd_temperature, metadata={"help": "softmax temperature of the KD term"}
    )
    kd_normalization: Optional[str] = field(
        default=None,
        metadata={"help": "'token' or 'sentence' mean of the KL (default: sentence for official, token for paper)"},
    )
    gacl_lambda: float = field(
        default=GACL_DEFAULTS.gacl_lambda, metadata={"help": "λ: weight of the gender-aware contrastive loss"}
    )
    gacl_temperature: float = field(
        default=GACL_DEFAULTS.temperature, metadata={"help": "τ of the contrastive softmax"}
    )
    gacl_variant: ChoiceEnum(["paper", "official"]) = field(
        default=GACL_DEFAULTS.gacl_variant,
        metadata={"help": "'paper' (Eq. 1) or 'official' (the authors' released code)"},
    )
    gacl_positive_reduction: ChoiceEnum(["mean", "sum"]) = field(
        default=GACL_DEFAULTS.positive_reduction,
        metadata={"help": "'mean' over an anchor's positives (batch-size independent) or 'sum' (Eq. 1)"},
    )
    gacl_pooling: ChoiceEnum(["mean", "first"]) = field(
        default=GACL_DEFAULTS.pooling,
        metadata={"help": "encoder pooling: mean over non-pad tokens, or the first token"},
    )
    dropout_positive: Optional[str] = field(
        default=None, metadata={"help": "true/false: the dropout view as positive (default: the variant's)"}
    )
    inbatch_positives: Optional[str] = field(
        default=None, metadata={"help": "true/false: in-batch same-gender positives (default: the variant's)"}
    )
    counterfactual_negative: Optional[str] = field(
        default=None, metadata={"help": "true/false: the gender-swapped source as negative (default: the variant's)"}
    )
    inbatch_negatives: Optional[str] = field(
        default=None, metadata={"help": "true/false: in-batch other-gender negatives (default: the variant's)"}
    )
    detach_dropout_view: Optional[str] = field(
        default=None, metadata={"help": "true/false: no gradient through the dropout view (default: the variant's)"}
    )
    gacl_no_gather: bool = field(
        default=not GACL_DEFAULTS.gather_across_processes,
        metadata={"help": "in-batch candidates from this process only (default: from all processes)"},
    )
    teacher_path: Optional[str] = field(
        default=None,
        metadata={"help": "KD teacher: a fairseq checkpoint (trusted); default a frozen copy of the starting model"},
    )
    teacher_dtype: ChoiceEnum(list(TEACHER_DTYPES)) = field(  # type: ignore[valid-type]
        default=DEFAULT_TEACHER_DTYPE, metadata={"help": TEACHER_DTYPE_HELP}
    )
    teacher_bf16: bool = field(default=False, metadata={"help": "deprecated: --teacher-dtype bf16"})
    gacl_projection: Optional[str] = field(
        default=None,
        metadata={
            "help": "'linear': the released code's head Dropout(model dropout) → Linear(d, d) on "
            "the pooled states of L_GC (trained with the model, saved in checkpoints); "
            "'none': contrast the pooled states directly (default: linear for official, "
            "none for paper)"
        },
    )
    save_dir: str = II("checkpoint.save_dir")
    seed: int = II("common.seed")


def resolve_pairs(cfg) -> GACLPairs:
    """The variant's pair sets with the explicit switches (``true``/``false`` strings) and reduction applied."""
    base = gacl_variant(str(cfg.gacl_variant))
    overrides = {"positive_reduction": str(cfg.gacl_positive_reduction)}
    for name in _SWITCHES:
        v = getattr(cfg, name, None)
        if v is None:
            continue
        key = str(v).strip().lower()
        if key not in _BOOL:
            raise FairmtError(f"--{name.replace('_', '-')} must be true or false, got {v!r}")
        overrides[name] = _BOOL[key]
    return GACLPairs(**{**base.__dict__, **overrides})


def _unwrap(model):
    while hasattr(model, "module") and isinstance(model.module, torch.nn.Module):
        model = model.module
    return model


def _pad_width(tokens: torch.Tensor, width: int, pad: int, left: bool) -> torch.Tensor:
    extra = width - tokens.shape[1]
    if extra == 0:
        return tokens
    return torch.nn.functional.pad(tokens, (extra, 0) if left else (0, extra), value=pad)


def encoder_representation(encoder_out: dict, pooling: str) -> torch.Tensor:
    """``(B, C)`` pooled encoder states of a fairseq encoder output (``encoder_out`` is T×B×C)."""
    states = encoder_out["encoder_out"][0].transpose(0, 1)
    masks = encoder_out.get("encoder_padding_mask") or []
    keep = (~masks[0]).long() if masks and masks[0] is not None and masks[0].numel() else None
    return pool(states, keep, pooling)


@register_criterion("gacl_kd", dataclass=GACLKDCriterionConfig)
class GACLKDCriterion(LabelSmoothedCrossEntropyCriterion):
    """``(1 − α)·L_MT + α·L_KD + λ·L_GC`` (see the module docstring)."""

    def __init__(self, task, cfg: GACLKDCriterionConfig):
        super().__init__(
            task,
            cfg.sentence_avg,
            cfg.label_smoothing,
            ignore_prefix_size=cfg.ignore_prefix_size,
            report_accuracy=cfg.report_accuracy,
        )
        for name, rng in CRITERION_RANGES.items():  # the declared ranges (as GACLConfig's)
            rng.check(f"--{name.replace('_', '-')}", getattr(cfg, name, None))
        if cfg.teacher_path and not os.path.isfile(cfg.teacher_path):
            raise FairmtError(f"--teacher-path {cfg.teacher_path}: no such checkpoint file")
        self.cfg = cfg
        self.teacher_dtype = check_teacher_dtype(str(cfg.teacher_dtype), "--teacher-dtype")
        if cfg.teacher_bf16:  # the deprecated switch: --teacher-bf16 is --teacher-dtype bf16
            old = renamed_option("--teacher-bf16", "--teacher-dtype", True, {True: "bf16"}, stacklevel=2)
            if self.teacher_dtype not in (DEFAULT_TEACHER_DTYPE, old):
                raise FairmtError(
                    f"--teacher-bf16 (deprecated) contradicts --teacher-dtype {self.teacher_dtype}: "
                    "give --teacher-dtype alone"
                )
            self.teacher_dtype = old
        self.pairs = resolve_pairs(cfg)
        preset = VARIANT_DEFAULTS[str(cfg.gacl_variant)]  # what the variant takes for the options left unset
        self.kd_normalization = cfg.kd_normalization or preset["kd_normalization"]
        if self.kd_normalization not in ("token", "sentence"):
            raise FairmtError(f"--kd-normalization must be token or sentence, got {cfg.kd_normalization!r}")
        task_cfg = getattr(task, "cfg", None) or getattr(task, "args", None)
        self.left_pad_source = bool(getattr(task_cfg, "left_pad_source", True))
        self.projection = cfg.gacl_projection or preset["projection"]
        if self.projection not in ("linear", "none"):
            raise FairmtError(f"--gacl-projection must be linear or none, got {cfg.gacl_projection!r}")
        # the projection head is part of training: a submodule, so fairseq's optimizer trains it (the trainer hands
        # it criterion.parameters()) and its checkpoints hold it (checkpoint["criterion"])
        self.gacl_projection_head = None
        if self.projection == "linear" and cfg.gacl_lambda > 0:
            dims = getattr(task, "gacl_model_dims", None)
            if dims is None:
                raise FairmtError(
                    "--gacl-projection linear needs the encoder size: build the model before the criterion with "
                    "--task gacl_translation or gacl_multilingual_translation (fairseq-train does), or pass "
                    "--gacl-projection none"
                )
            with torch.random.fork_rng(devices=[]):  # the head's initial weights depend on the seed only
                torch.manual_seed(int(cfg.seed))
                self.gacl_projection_head = LinearProjectionHead(*dims)
        # the teacher lives outside nn.Module registration: no optimizer, no DDP wrap, no checkpoint entry
        object.__setattr__(self, "_teacher", None)

    @classmethod
    def build_criterion(cls, cfg, task):
        return cls(task, cfg)

    def load_state_dict(self, state_dict, strict=True, **kwargs):
        """A checkpoint without a head (a pretrained model, a run with ``--gacl-projection none``) keeps the freshly
        initialised head; one with a head loads it."""
        if self.gacl_projection_head is not None and not state_dict:
            logger.info("gacl_kd: the checkpoint holds no projection head; starting from a new one")
            return torch.nn.modules.module._IncompatibleKeys([], [])
        return super().load_state_dict(state_dict or {}, strict=strict, **kwargs)

    def project(self, h: torch.Tensor) -> torch.Tensor:
        """The pooled states as L_GC contrasts them: through the projection head when there is one."""
        return h if self.gacl_projection_head is None else self.gacl_projection_head(h)

    # ---- teacher ------------------------------------------------------------------------------------------------

    def teacher(self, model) -> torch.nn.Module:
        if self._teacher is not None:
            return self._teacher
        inner = _unwrap(model)
        param = next(inner.parameters())
        if self.cfg.teacher_path:
            from fairseq import checkpoint_utils

            models, _ = checkpoint_utils.load_model_ensemble([self.cfg.teacher_path], task=self.task)
            teacher = models[0]
            logger.info(f"gacl_kd: KD teacher loaded from {self.cfg.teacher_path}")
        else:
            teacher = copy.deepcopy(inner)
            saved = os.path.join(self.cfg.save_dir, TEACHER_FILE) if self.cfg.save_dir else None
            resumed = (
                saved
                and os.path.isfile(saved)
                and os.path.isfile(os.path.join(self.cfg.save_dir, "checkpoint_last.pt"))
            )
            if resumed:
                from safetensors.torch import load_file

                teacher.load_state_dict(load_file(saved, device="cpu"))
                logger.info(f"gacl_kd: resumed run, KD teacher = the starting model kept in {saved}")
            elif saved and (not dist.is_initialized() or dist.get_rank() == 0):
                os.makedirs(self.cfg.save_dir, exist_ok=True)
                from safetensors.torch import save_file

                tmp = f"{saved}.tmp"
                # cloned: fairseq ties embeddings (shared storage), which safetensors refuses to write as one tensor
                save_file({k: v.detach().cpu().clone().contiguous() for k, v in inner.state_dict().items()}, tmp)
                os.replace(tmp, saved)
                logger.info(f"gacl_kd: KD teacher = a frozen copy of the starting model (kept in {saved})")
        teacher.requires_grad_(False)
        teacher.eval()
        dtype, why = resolve_teacher_dtype(self.teacher_dtype, param.device)
        teacher.to(device=param.device, dtype=dtype)
        logger.info(f"gacl_kd: KD teacher in {str(dtype).replace('torch.', '')} ({why})")
        object.__setattr__(self, "_teacher", teacher)
        return teacher

    # ---- loss ---------------------------------------------------------------------------------------------------

    def forward(self, model, sample, reduce=True):
        if not reduce:
            raise FairmtError("gacl_kd computes batch sums only (reduce=True)")
        cfg, p = self.cfg, self.pairs
        inner = _unwrap(model)
        training = model.training
        use_gc = cfg.gacl_lambda > 0
        gacl = sample.get("gacl")
        if use_gc and gacl is None:
            raise FairmtError(
                "the batch has no gender labels: --criterion gacl_kd with --gacl-lambda > 0 needs --task "
                "gacl_translation or gacl_multilingual_translation (data made by `fairmt data fairseq-prep`)"
            )

        captured = {}
        handle = inner.encoder.register_forward_hook(lambda _m, _a, out: captured.setdefault("enc", out))
        try:
            net_output = model(**sample["net_input"])
        finally:
            handle.remove()
        loss_mt, nll_loss = self.compute_loss(model, net_output, sample, reduce=True)
        target = sample["target"]
        if self.ignore_prefix_size > 0:
            target = target[:, self.ignore_prefix_size :]
        n_tok = int(target.ne(self.padding_idx).sum())
        sample_size = sample["target"].size(0) if self.sentence_avg else sample["ntokens"]
        loss = (1.0 - cfg.kd_alpha) * loss_mt
        log = {}

        loss_kd = None
        if cfg.kd_alpha > 0:
            with torch.no_grad():
                t_logits = self.teacher(model)(**sample["net_input"])[0]
            s_logits = net_output[0]
            if self.ignore_prefix_size > 0:
                s_logits = s_logits[:, self.ignore_prefix_size :]
                t_logits = t_logits[:, self.ignore_prefix_size :]
            loss_kd = token_kl_loss(
                s_logits,
                t_logits,
                target,
                temperature=cfg.kd_temperature,
                ignore_index=self.padding_idx,
                normalization=self.kd_normalization,
            )
            loss = loss + cfg.kd_alpha * loss_kd * n_tok
            log["loss_kd"] = loss_kd.detach() * n_tok

        if use_gc:
            h = self.project(encoder_representation(captured["enc"], str(cfg.gacl_pooling)))
            b = h.shape[0]
            views = self._views(inner, sample, gacl, b)
            gather = training and not cfg.gacl_no_gather
            try:
                loss_gc, n_pos, n_neg = gacl_loss(
                    h,
                    gacl["gender"],
                    temperature=cfg.gacl_temperature,
                    pairs=p,
                    gather=gather,
                    return_counts=True,
                    on_single_gender="error" if training else "skip",
                    **views,
                )
            except FairmtError as err:
                raise FairmtError(f"{err} [fairseq: {_fairseq_hint(str(err))}]") from None
            if loss_gc is not None:
                scale = float(sample_size)
                if gather and world_size() > 1:  # λ·(mean over the anchors of the global batch) after fairseq's /S
                    tot = torch.tensor([float(sample_size), float(b)], dtype=torch.float64, device=h.device)
                    dist.all_reduce(tot)
                    scale = float(tot[0]) * b / float(tot[1])
                loss = loss + cfg.gacl_lambda * loss_gc * scale
                log.update(loss_gc=loss_gc.detach() * b, gc_sentences=b, gc_positives=n_pos * b, gc_negatives=n_neg * b)

        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "loss_mt": loss_mt.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
            **{k: (v.data if torch.is_tensor(v) else v) for k, v in log.items()},
        }
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = utils_item(n_correct)
            logging_output["total"] = utils_item(total)
        return loss, sample_size, logging_output

    def _views(self, inner, sample, gacl, b) -> dict[str, torch.Tensor]:
        """The dropout view and the counterfactual, pooled: views with gradient in ONE encoder call."""
        p, net = self.pairs, sample["net_input"]
        todo = []  # (name, tokens, lengths, with_grad)
        if p.dropout_positive:
            todo.append(("h_dropout", net["src_tokens"], net["src_lengths"], not p.detach_dropout_view))
        if p.counterfactual_negative:
            todo.append(("h_counterfactual", gacl["cf_src_tokens"], gacl["cf_src_lengths"], True))
        out = {}
        pad = self.task.source_dictionary.pad()
        for grad in (True, False):
            group = [v for v in todo if v[3] == grad]
            if not group:
                continue
            width = max(v[1].shape[1] for v in group)
            tokens = torch.cat([_pad_width(v[1], width, pad, self.left_pad_source) for v in group])
            lengths = torch.cat([v[2] for v in group])
            with torch.set_grad_enabled(torch.is_grad_enabled() and grad):
                enc = inner.encoder(tokens, src_lengths=lengths)
                h = self.project(encoder_representation(enc, str(self.cfg.gacl_pooling)))
            out.update(zip([v[0] for v in group], h.split(b)))
        return out

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        LabelSmoothedCrossEntropyCriterion.reduce_metrics(logging_outputs)

        def total(key):
            return sum(float(log.get(key, 0)) for log in logging_outputs)

        sample_size = total("sample_size")
        if sample_size > 0:
            metrics.log_scalar("loss_mt", total("loss_mt") / sample_size, sample_size, round=4)
            if any("loss_kd" in log for log in logging_outputs):
                metrics.log_scalar("loss_kd", total("loss_kd") / sample_size, sample_size, round=4)
        n_gc = total("gc_sentences")
        if n_gc > 0:
            metrics.log_scalar("loss_gc", total("loss_gc") / n_gc, n_gc, round=4)
            metrics.log_scalar("gc_positives", total("gc_positives") / n_gc, n_gc, round=2)
            metrics.log_scalar("gc_negatives", total("gc_negatives") / n_gc, n_gc, round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


def utils_item(x):
    return x.item() if torch.is_tensor(x) else x


def _fairseq_hint(message: str) -> str:
    if "one gender" in message:
        return (
            "train with --task gacl_translation (or gacl_multilingual_translation) --balanced-genders and an "
            "even --batch-size, or switch in-batch negatives off with --inbatch-negatives false"
        )
    if "batch sizes differ" in message:
        return (
            "cross-process candidates need equal per-process batches: use --task gacl_translation "
            "--balanced-genders --batch-size N, or --gacl-no-gather"
        )
    return "see the gacl_kd options (fairseq-train --criterion gacl_kd --help)"
