"""Adversarial debiasing with gradient reversal: plain, conditional (equalized odds) and diverse adversaries.

An adversary ``D`` tries to predict the protected group ``a`` from the representation ``h`` of the classifier; a
gradient-reversal layer (GRL; Ganin & Lempitsky, 2015) between ``h`` and ``D`` makes the encoder *maximise* the
adversary's loss while the adversary minimises it (Elazar & Goldberg, 2018; Li et al., 2018):

    L = CE(f(h), y) + Σ_k CE(D_k(GRL_{λ/K}(h) [⊕ onehot(y)]), a)  +  λ_diff · L_diff     (adv_weighting="fairlib")
    L = CE(f(h), y) + Σ_k CE(D_k(GRL_λ(h) [⊕ onehot(y)]), a) / K  +  λ_diff · L_diff     (adv_weighting="mean")

* ``GRL_λ`` is the identity forward and multiplies the gradient by ``−λ`` backward (``adv_lambda``; CSCL's grid
  {0.1, 0.5, 1, 2}); the adversaries themselves receive the unscaled gradient of their loss.
* **Weighting of K adversaries** (``adv_weighting``). fairlib (Han et al.'s code, which Shen et al. and the CSCL
  release follow) trains the encoder on ``CE − (λ/K)·Σ_k CE_k`` and each discriminator ``k`` with its own optimizer
  on ``CE_k + λ_diff·Σ_{j≠k} Diff(h_k, h_j)``. ``"fairlib"`` (default) gives exactly these gradients in one joint step:
  every adversary's CE at full weight, the reversal at ``λ/K`` — so the papers' λ_adv / λ_diff grids carry over.
  ``"mean"`` (fairmt ≤ 0.2) averages the K adversaries' CE: the encoder gradient is the same, but each adversary's
  CE gradient is scaled by ``1/K`` against the penalty; it equals fairlib's run with ``λ_diff(mean) =
  λ_diff(fairlib)/K`` up to an overall factor ``1/K`` on the adversaries' gradient (immaterial to Adam; a learning-rate
  factor for SGD).
* **Update order** (``adv_update``). ``"joint"`` (default): one optimizer step for everything — the adversaries in
  their own parameter group (their Adam moments are their own), their gradients clipped to ``max_grad_norm``; the
  encoder's gradient comes from the adversaries *before* this step. ``"sequential"``: fairlib's order
  (``train_epoch`` → ``adv_train_batch``): on each batch, each discriminator ``k`` in turn takes one step of its own
  Adam (learning rate ``adv_learning_rate``, no weight decay, no clipping) on ``CE_k + λ_diff·Σ_{j≠k} Diff(h_k,
  h_j)`` over a detached ``h`` (the discriminators after ``k`` see ``k`` updated), then the encoder and head step on
  ``CE − (λ/K)·Σ_k CE_k`` against the *updated* discriminators (the Trainer's optimizer, which then holds the model
  only). The two differ measurably (first-step encoder gradients at cosine ≈ 0.77 at λ_diff 0.1; different final
  GAPs from the same weights): a recipe says which it uses. ``sequential`` ignores ``adv_weighting`` (fairlib's
  weighting is the one it runs; ``mean`` is refused). With gradient accumulation the discriminators step on every
  micro-batch; with several processes their gradients are averaged before each of their steps; their optimizer state
  is saved beside each checkpoint (``adversary_optimizers.pt``) and reloaded on resume.
* **Defaults for a Python user**: ``AdversarialConfig`` conditions the adversaries on the task label
  (``adv_conditional=True``, Chi et al.'s CSCL baselines, equalized odds), fairlib's are unconditional (Shen et al.'s
  recipes set ``adv_conditional: false``); and it updates jointly, fairlib sequentially.
* **Conditional adversary** (``adv_conditional``, for equalized odds; Madras et al., 2018; Zhao et al., 2019, as
  Chi et al.'s baselines): the adversary also sees the one-hot task label, so only the group information that is
  *not* explained by the label is penalised (``Ŷ ⊥ A | Y``) instead of all of it (demographic parity).
* **Diverse adversaries** (Han, Baldwin & Cohn, EACL 2021): ``K`` adversaries (``n_adversaries``, 3 in the paper)
  with an orthogonality penalty on their hidden layers, summed over the pairs of adversaries. With ``Ĥ`` the
  batch × hidden activations of an adversary's last hidden layer, each row L2-normalised (the norm a constant):

  - ``diff_orientation="batch"`` (default): ``L_diff = Σ_{i<j} mean((Ĥ_i Ĥ_jᵀ)²)`` over the batch × batch matrix —
    what the reference code runs (fairlib's ``DiffLoss`` and CSCL4FTC's ``adversarial_training/models.py``, from
    the Domain Separation Networks code), so it is the setting behind the published numbers;
  - ``diff_orientation="hidden"``: ``Σ_{i<j} mean((Ĥ_iᵀ Ĥ_j)²)`` over the hidden × hidden matrix — the formula as
    Han et al. (EACL 2021) and Bousmalis et al. (2016) write it (‖H_iᵀH_j‖²_F, up to the mean).

  The two differ in value (the mean runs over N² or d² entries, and the products are different matrices) and λ_diff
  must be tuned for the one used. The penalty trains the adversaries only: it is computed on a detached copy of
  ``h`` (``λ_diff`` = ``diff_lambda``; CSCL's grid {0, 100, 1000, 5000}).

``h`` is by default (``pooling="head"``) the input of the classification head: the encoder output of fairmt's
classifiers (:mod:`fairmt.models.text_classifiers`, :class:`~fairmt.models.encoder_classifier.TransformerClassifier`)
or the captured head input of an ``AutoModelForSequenceClassification`` — the same representation leakage@h and the
fair contrastive losses use. Shen et al. (2022) run Han et al.'s diverse adversaries *without* the label (three
discriminators, orthogonality penalty; ``adv_conditional=False``); Chi et al. (2022) condition them on the label.

The adversaries live in the Trainer (``trainer.adversary``), train in the same optimizer (an extra parameter group,
learning rate ``adv_learning_rate``; their gradients clipped to ``max_grad_norm`` and reset after every optimizer
step by an internal callback, since the stock Trainer only handles the model's), are saved as ``adversary.safetensors``
beside each checkpoint, and reloaded on resume.
Evaluation computes the task CE only and returns ``(logits, hidden)`` predictions with ``(labels, group)`` label ids
(for :func:`fairmt.eval.selection.fairness_compute_metrics`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments

from fairmt.errors import COUNT, DROPOUT, GROUPS, POSITIVE, WEIGHT, FairmtError, Range, check_ranges
from fairmt.losses.weighted import WEIGHT_COLUMN, weighted_cross_entropy
from fairmt.models.pooling import REPRESENTATIONS, representation_and_logits
from fairmt.trainers.fairbatch import FairBatchMixin
from fairmt.trainers.faults import FaultGuardMixin
from fairmt.trainers.overhead import LeanTrainMixin
from fairmt.trainers.sharding import ShardingMixin
from fairmt.trainers.term_logging import LossTermLogMixin

__all__ = [
    "AdversarialConfig",
    "AdversarialTrainer",
    "Adversary",
    "AdversaryEnsemble",
    "GradientReversal",
    "difference_loss",
    "grad_reverse",
]

ADVERSARY_FILE = "adversary.safetensors"
ADVERSARY_OPTIMIZERS_FILE = "adversary_optimizers.pt"  # adv_update="sequential": the discriminators' own Adam states
LEGACY_ADVERSARY_FILE = "adversary.pt"  # fairmt < 0.2 wrote it with torch.save


# ----------------------------------------------------------------------------------------- gradient reversal
class _GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, lambd: float) -> torch.Tensor:
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        return -ctx.lambd * grad_output, None


def grad_reverse(x: torch.Tensor, lambd: float = 1.0) -> torch.Tensor:
    """Gradient reversal (Ganin & Lempitsky, 2015): ``y = x`` forward, ``∂L/∂x = −λ · ∂L/∂y`` backward."""
    return _GradReverse.apply(x, float(lambd))


class GradientReversal(nn.Module):
    """``nn.Module`` form of :func:`grad_reverse` with a settable ``lambd``."""

    def __init__(self, lambd: float = 1.0):
        super().__init__()
        self.lambd = float(lambd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return grad_reverse(x, self.lambd)

    def extra_repr(self) -> str:
        return f"lambd={self.lambd}"


# ------------------------------------------------------------------------------------------------ adversaries
class Adversary(nn.Module):
    """MLP discriminator ``h [⊕ onehot(y)] → hidden (× n_layers, ReLU) → group logits``.

    ``forward`` returns ``(logits, last_hidden)``; ``last_hidden`` feeds the diverse-adversaries penalty.
    """

    def __init__(
        self,
        input_dim: int,
        num_groups: int,
        hidden_dim: int = 300,
        n_layers: int = 2,
        num_labels: int = 0,
        dropout: float = 0.0,
    ):
        super().__init__()
        if n_layers < 1:
            raise FairmtError(f"an adversary needs at least one hidden layer, got n_layers={n_layers}")
        self.num_labels = num_labels
        layers: list[nn.Module] = []
        dim = input_dim + num_labels
        for _ in range(n_layers):
            layers += [nn.Linear(dim, hidden_dim), nn.ReLU(), nn.Dropout(dropout)]
            dim = hidden_dim
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(dim, num_groups)

    def forward(self, h: torch.Tensor, labels: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if self.num_labels:
            if labels is None:
                raise FairmtError("a conditional adversary needs the task labels")
            h = torch.cat([h, F.one_hot(labels.long(), self.num_labels).to(h.dtype)], dim=-1)
        z = self.body(h)
        return self.head(z), z


DIFF_ORIENTATIONS = ("batch", "hidden")
ADV_WEIGHTINGS = ("fairlib", "mean")
ADV_UPDATES = ("joint", "sequential")


def difference_loss(hiddens: list[torch.Tensor], eps: float = 1e-6, orientation: str = "batch") -> torch.Tensor:
    """Orthogonality penalty between adversaries, summed over pairs ``i < j``: ``mean((Ĥ_i Ĥ_jᵀ)²)`` (``"batch"``,
    the reference code's) or ``mean((Ĥ_iᵀ Ĥ_j)²)`` (``"hidden"``, the paper's formula); ``Ĥ`` row-L2-normalised,
    the norm treated as a constant (as fairlib). Zero for one adversary."""
    if orientation not in DIFF_ORIENTATIONS:
        raise FairmtError(f"diff orientation must be one of {DIFF_ORIENTATIONS}, got {orientation!r}")
    if len(hiddens) < 2:
        return hiddens[0].new_zeros(()) if hiddens else torch.zeros(())
    normed = [h / (h.norm(dim=1, keepdim=True).detach() + eps) for h in hiddens]
    total = normed[0].new_zeros(())
    for i in range(len(normed)):
        for j in range(i + 1, len(normed)):
            prod = normed[i] @ normed[j].t() if orientation == "batch" else normed[i].t() @ normed[j]
            total = total + prod.pow(2).mean()
    return total


class AdversaryEnsemble(nn.Module):
    """``K`` independent :class:`Adversary` heads (K = 1: Elazar & Goldberg; K > 1: Han et al.'s diverse ones)."""

    def __init__(self, n_adversaries: int, **adversary_kwargs: Any):
        super().__init__()
        if n_adversaries < 1:
            raise FairmtError(f"n_adversaries must be ≥ 1, got {n_adversaries}")
        self.adversaries = nn.ModuleList(Adversary(**adversary_kwargs) for _ in range(n_adversaries))

    def forward(self, h: torch.Tensor, labels: torch.Tensor | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [adv(h, labels) for adv in self.adversaries]


# ----------------------------------------------------------------------------------------------------- config
@dataclass
class AdversarialConfig(TrainingArguments):
    """Training arguments for :class:`AdversarialTrainer`.

    Args:
        num_groups: number of protected-group ids (the ``group`` column holds ints in ``[0, num_groups)``).
        adv_lambda: λ, gradient-reversal strength (CSCL tunes {0.1, 0.5, 1, 2} on Bias-in-Bios).
        n_adversaries: K; 1 = standard adversarial training, 3 = Han et al.'s diverse adversaries.
        diff_lambda: λ_diff, weight of the orthogonality penalty between adversaries (Han et al./CSCL use 100–5000;
            0 disables it; ignored for K = 1).
        diff_orientation: ``batch`` (Ĥ_i Ĥ_jᵀ, the reference code's, default) or ``hidden`` (Ĥ_iᵀ Ĥ_j, the paper's
            formula); see the module docstring.
        adv_conditional: condition the adversaries on the task label (equalized odds; CSCL's baselines).
        adv_hidden_size: width of the adversaries' hidden layers (300, as Shen et al.'s encoder and fairlib).
        adv_n_layers: number of hidden layers per adversary (2).
        adv_dropout: dropout inside the adversaries.
        adv_weighting: ``fairlib`` (each adversary's CE at full weight, reversal λ/K: fairlib's gradients, default) or
            ``mean`` (the K adversaries' CE averaged, reversal λ); see the module docstring.
        adv_learning_rate: learning rate of the adversaries (default: ``learning_rate``).
        adv_update: ``joint`` (one optimizer step for encoder and adversaries, default) or ``sequential`` (fairlib's
            order: each discriminator steps first with its own Adam, then the encoder against the updated ones); see
            the module docstring.
        pooling: the representation ``h``: ``head`` (default: the classification head's input, the vector leakage@h
            and the fair contrastive losses use) or ``cls``/``mean`` pooling of the last hidden state.
        group_column: batch key holding the protected attribute.
        fairbatch: draw the training batches with FairBatch (Roh et al. 2021, as fairlib: each group's share within
            each class adapted every epoch from the groups' mean training CE; :mod:`fairmt.data.fairbatch`); one
            process only.
        fairbatch_alpha: FairBatch's step α (fairlib's ``DyBTalpha``, 0.1).
    """

    RANGES: ClassVar[dict[str, Range]] = {  # each numeric field's range (fairmt.errors.check_ranges)
        "num_groups": GROUPS,
        "adv_lambda": WEIGHT,
        "n_adversaries": COUNT,
        "diff_lambda": WEIGHT,
        "adv_hidden_size": COUNT,
        "adv_n_layers": COUNT,
        "adv_dropout": DROPOUT,
        "adv_learning_rate": POSITIVE,
        "fairbatch_alpha": Range(0.0, 1.0, low_open=True),
    }
    num_groups: int = field(default=2, metadata={"help": "number of protected groups"})
    adv_lambda: float = field(default=1.0, metadata={"help": "λ: gradient reversal strength"})
    n_adversaries: int = field(default=1, metadata={"help": "K adversaries (3 = diverse adversaries)"})
    diff_lambda: float = field(default=0.0, metadata={"help": "λ_diff: orthogonality penalty weight"})
    diff_orientation: str = field(default="batch", metadata={"help": "batch (reference code) | hidden (paper)"})
    adv_conditional: bool = field(default=True, metadata={"help": "condition adversaries on the task label (EO)"})
    adv_hidden_size: int = field(default=300, metadata={"help": "adversary hidden width"})
    adv_n_layers: int = field(default=2, metadata={"help": "adversary hidden layers"})
    adv_dropout: float = field(default=0.0, metadata={"help": "adversary dropout"})
    adv_learning_rate: float | None = field(default=None, metadata={"help": "adversary LR (default: learning_rate)"})
    adv_weighting: str = field(default="fairlib", metadata={"help": "fairlib | mean (weighting of K adversaries)"})
    adv_update: str = field(default="joint", metadata={"help": "joint | sequential (fairlib: discriminators first)"})
    pooling: str = field(default="head", metadata={"help": "head (the classifier's input) | cls | mean"})
    group_column: str = field(default="group", metadata={"help": "batch key of the protected attribute"})
    fairbatch: bool = field(default=False, metadata={"help": "FairBatch batches (Roh et al. 2021, fairlib's EO)"})
    fairbatch_alpha: float = field(default=0.1, metadata={"help": "FairBatch step α (fairlib's DyBTalpha)"})
    remove_unused_columns: bool = field(default=False, metadata={"help": "keep the group column"})

    def __post_init__(self):
        check_ranges(self)  # each numeric field's declared range, TrainingArguments' too (as the recipes),
        super().__post_init__()  # before transformers' own checks, which name no range (or raise later)
        if self.num_groups < 2:
            raise FairmtError(f"num_groups must be ≥ 2, got {self.num_groups}")
        if self.adv_lambda < 0 or self.diff_lambda < 0:
            raise FairmtError("adv_lambda and diff_lambda must be non-negative")
        if self.n_adversaries < 1:
            raise FairmtError(f"n_adversaries must be ≥ 1, got {self.n_adversaries}")
        if self.diff_orientation not in DIFF_ORIENTATIONS:
            raise FairmtError(f"diff_orientation must be one of {DIFF_ORIENTATIONS}, got {self.diff_orientation!r}")
        if self.pooling not in REPRESENTATIONS:
            raise FairmtError(f"pooling must be one of {', '.join(REPRESENTATIONS)}, got {self.pooling!r}")
        if self.adv_weighting not in ADV_WEIGHTINGS:
            raise FairmtError(f"adv_weighting must be one of {', '.join(ADV_WEIGHTINGS)}, got {self.adv_weighting!r}")
        if self.adv_update not in ADV_UPDATES:
            raise FairmtError(f"adv_update must be one of {', '.join(ADV_UPDATES)}, got {self.adv_update!r}")
        if self.adv_update == "sequential" and self.adv_weighting != "fairlib":
            raise FairmtError(
                "adv_update=sequential runs fairlib's weighting; adv_weighting=mean applies to adv_update=joint only"
            )
        if self.remove_unused_columns:
            raise FairmtError("remove_unused_columns=True drops the group column the adversary needs; set it to False")


# ---------------------------------------------------------------------------------------------------- trainer
class _AdversaryStepHooks(TrainerCallback):
    """The stock Trainer clips and zeroes the *model's* gradients only: clip the adversaries' before each optimizer
    step (same ``max_grad_norm``) and reset them after it, so that they do not accumulate over the whole run."""

    def __init__(self, adversary: nn.Module):
        self.adversary = adversary

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        if args.max_grad_norm and args.max_grad_norm > 0:
            params = [p for p in self.adversary.parameters() if p.grad is not None]
            if params:
                torch.nn.utils.clip_grad_norm_(params, args.max_grad_norm)

    def on_optimizer_step(self, args, state, control, **kwargs):
        self.adversary.zero_grad(set_to_none=True)


class AdversarialTrainer(LeanTrainMixin, FairBatchMixin, FaultGuardMixin, ShardingMixin, LossTermLogMixin, Trainer):
    """Sequence-classification Trainer with gradient-reversal adversaries (see the module docstring).

    Example (``train``/``dev``: rows with ``text``, ``labels`` and ``group``; runs as a test,
    ``tests/project/test_docstring_examples.py``)::

        >>> from fairmt.data.classification import ClassificationCollator
        >>> args = AdversarialConfig(output_dir="out", adv_lambda=1.0, n_adversaries=3, diff_lambda=100.0)
        >>> trainer = AdversarialTrainer(model=model, args=args, train_dataset=train, eval_dataset=dev,
        ...                              data_collator=ClassificationCollator(tokenizer))
        >>> result = trainer.train()
        >>> result.global_step > 0
        True

    ``hidden_size`` (the width of ``h``) is read from ``model.config.hidden_size`` or ``model.hidden_dim``, or
    passed as ``representation_dim=``. Logged terms: ``loss_ce``, ``loss_adv`` (mean adversary CE), ``adv_accuracy``
    and, with several adversaries, ``loss_diff``.
    """

    loss_is_scaled_for_ga = False  # every term is a per-batch mean

    def __init__(self, *args: Any, representation_dim: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, AdversarialConfig):
            raise FairmtError("AdversarialTrainer needs AdversarialConfig arguments")
        a = self.args
        dim = representation_dim or _hidden_dim(self.model)
        num_labels = _num_labels(self.model)
        self.adversary = AdversaryEnsemble(
            a.n_adversaries,
            input_dim=dim,
            num_groups=a.num_groups,
            hidden_dim=a.adv_hidden_size,
            n_layers=a.adv_n_layers,
            num_labels=num_labels if a.adv_conditional else 0,
            dropout=a.adv_dropout,
        ).to(a.device)
        if not self.label_names or self.label_names == ["labels"]:
            self.label_names = ["labels", a.group_column]
        self.add_callback(_AdversaryStepHooks(self.adversary))

    # ------------------------------------------------------------------ optimizer / checkpoints
    def create_optimizer(self, model=None):
        """The Trainer's optimizer plus one parameter group for the adversaries (no weight decay)."""
        optimizer = super().create_optimizer(model)
        if self.args.adv_update == "sequential":  # the discriminators have their own optimizers
            return optimizer
        params = list(self.adversary.parameters())
        present = {id(p) for g in optimizer.param_groups for p in g["params"]}
        if not any(id(p) in present for p in params):
            lr = self.args.adv_learning_rate or self.args.learning_rate
            optimizer.add_param_group({"params": params, "weight_decay": 0.0, "lr": lr})
        return optimizer

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        super()._save(output_dir, state_dict)
        output_dir = output_dir if output_dir is not None else self.args.output_dir
        if self.args.should_save:
            from safetensors.torch import save_file

            save_file(
                {k: v.detach().contiguous().cpu() for k, v in self.adversary.state_dict().items()},
                os.path.join(output_dir, ADVERSARY_FILE),
            )

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: nn.Module | None = None) -> None:
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        path = os.path.join(resume_from_checkpoint, ADVERSARY_FILE)
        legacy = os.path.join(resume_from_checkpoint, LEGACY_ADVERSARY_FILE)
        if os.path.isfile(path):
            from safetensors.torch import load_file

            self.adversary.load_state_dict(load_file(path, device=str(self.args.device)))
        elif os.path.isfile(legacy):
            self.adversary.load_state_dict(torch.load(legacy, map_location=self.args.device, weights_only=True))

    def adversary_optimizers(self) -> list[torch.optim.Optimizer]:
        """``adv_update="sequential"``: one Adam per discriminator (fairlib's ``BaseDiscriminator.optimizer``),
        learning rate ``adv_learning_rate`` (default ``learning_rate``), created on first use."""
        if getattr(self, "_adv_optimizers", None) is None:
            lr = self.args.adv_learning_rate or self.args.learning_rate
            self._adv_optimizers = [torch.optim.Adam(adv.parameters(), lr=lr) for adv in self.adversary.adversaries]
        return self._adv_optimizers

    def _save_optimizer_and_scheduler(self, output_dir: str) -> None:
        super()._save_optimizer_and_scheduler(output_dir)
        if self.args.adv_update == "sequential" and self.args.should_save:
            torch.save(
                [o.state_dict() for o in self.adversary_optimizers()],
                os.path.join(output_dir, ADVERSARY_OPTIMIZERS_FILE),
            )

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        path = os.path.join(checkpoint, ADVERSARY_OPTIMIZERS_FILE) if checkpoint else None
        if self.args.adv_update == "sequential" and path and os.path.isfile(path):
            states = torch.load(path, map_location=self.args.device, weights_only=True)
            for opt, state in zip(self.adversary_optimizers(), states):
                opt.load_state_dict(state)

    def discriminator_step(self, model: nn.Module, inputs: dict[str, Any]) -> dict[str, float]:
        """fairlib's ``adv_train_batch`` on one batch (``adv_update="sequential"``): ``h`` from the model (as it is,
        train mode, detached), then each discriminator ``k`` in order takes one step on ``CE_k + λ_diff·Σ_{j≠k}
        Diff(h_k, h_j)`` (the ``h_j`` of the discriminators as they are at that moment). Returns the mean loss."""
        a = self.args
        model_inputs, labels, groups = self._split(inputs)
        if groups is None:
            raise FairmtError(
                f"the batch has no {a.group_column!r} column: keep remove_unused_columns=False and use a "
                "collator that carries it (fairmt.data.classification.ClassificationCollator)"
            )
        groups = groups.long()
        with torch.no_grad():
            rep, _ = self.representation_and_logits(model, model_inputs)
        rep = rep.detach()
        cond = labels if a.adv_conditional else None
        advs = self.adversary.adversaries
        total = 0.0
        for k, (adv, opt) in enumerate(zip(advs, self.adversary_optimizers())):
            opt.zero_grad(set_to_none=True)
            logits_k, z_k = adv(rep, cond)
            loss = F.cross_entropy(logits_k.float(), groups)
            if len(advs) > 1 and a.diff_lambda > 0:
                for j, other in enumerate(advs):
                    if j != k:
                        z_j = other(rep, cond)[1]
                        loss = loss + a.diff_lambda * difference_loss([z_k, z_j], orientation=a.diff_orientation)
            loss.backward()
            if self.accelerator.num_processes > 1 and torch.distributed.is_initialized():
                world = torch.distributed.get_world_size()
                for p in adv.parameters():
                    if p.grad is not None:
                        torch.distributed.all_reduce(p.grad)
                        p.grad.div_(world)
            opt.step()
            opt.zero_grad(set_to_none=True)
            total += float(loss.detach())
        for other in advs:  # the Diff terms left gradients on the discriminators after k: none may linger
            other.zero_grad(set_to_none=True)
        return {"loss_disc": total / len(advs)}

    # ------------------------------------------------------------------ loss
    def _split(self, inputs: dict[str, Any]) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor | None]:
        inputs = dict(inputs)
        labels = inputs.pop("labels", None)
        if labels is None:
            raise FairmtError("the batch has no 'labels' column: adversarial training needs task labels")
        groups = inputs.pop(self.args.group_column, None)
        inputs.pop(WEIGHT_COLUMN, None)  # balanced training's instance weights: compute_loss reads them
        return inputs, labels, groups

    def representation_and_logits(
        self, model: nn.Module, model_inputs: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(h, logits)`` from one forward with ``output_hidden_states=True``."""
        return representation_and_logits(model, model_inputs, self.args.pooling)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """``CE + Σ_k CE_adv_k(GRL_{λ/K}(h)) + λ_diff·L_diff`` (or the ``mean`` weighting) in training; CE alone in
        evaluation. ``loss_adv`` logs the adversaries' mean CE."""
        a = self.args
        model_inputs, labels, groups = self._split(inputs)
        rep, logits = self.representation_and_logits(model, model_inputs)
        if not model.training:
            ce = F.cross_entropy(logits.float(), labels.long())
            return (ce, {"logits": logits, "hidden": rep}) if return_outputs else ce
        ce = weighted_cross_entropy(logits, labels, inputs.get(WEIGHT_COLUMN))
        if groups is None:
            raise FairmtError(
                f"the batch has no {a.group_column!r} column: keep remove_unused_columns=False and use a collator "
                "that carries it (fairmt.data.classification.ClassificationCollator)"
            )
        groups = groups.long()
        if groups.min() < 0 or groups.max() >= a.num_groups:
            raise FairmtError(f"group ids must lie in [0, {a.num_groups}); got {groups.unique().tolist()}")
        cond = labels if a.adv_conditional else None
        k = a.n_adversaries
        if a.adv_update == "sequential":  # fairlib: CE − (λ/K)·Σ_k CE_k against the (just updated) discriminators
            outs = self.adversary(rep, cond)
            adv_losses = [F.cross_entropy(lg.float(), groups) for lg, _ in outs]
            adv = torch.stack(adv_losses).mean()
            loss = ce - a.adv_lambda * adv
            terms = {"loss_ce": ce, "loss_adv": adv}
            with torch.no_grad():
                terms["adv_accuracy"] = torch.stack([(lg.argmax(-1) == groups).float().mean() for lg, _ in outs]).mean()
            self._record_terms(terms)
            return (loss, {"logits": logits, "hidden": rep}) if return_outputs else loss
        strength = a.adv_lambda / k if a.adv_weighting == "fairlib" else a.adv_lambda
        outs = self.adversary(grad_reverse(rep, strength), cond)
        adv_losses = [F.cross_entropy(lg.float(), groups) for lg, _ in outs]
        adv = torch.stack(adv_losses).mean()
        loss = ce + (adv * k if a.adv_weighting == "fairlib" else adv)
        terms = {"loss_ce": ce, "loss_adv": adv}
        with torch.no_grad():
            terms["adv_accuracy"] = torch.stack([(lg.argmax(-1) == groups).float().mean() for lg, _ in outs]).mean()
        if a.n_adversaries > 1 and a.diff_lambda > 0:
            # the penalty shapes the adversaries only: recompute their hidden layers on a detached h
            hid = [z for _, z in self.adversary(rep.detach(), cond)]
            diff = difference_loss(hid, orientation=a.diff_orientation)
            loss = loss + a.diff_lambda * diff
            terms["loss_diff"] = diff
        self._record_terms(terms)
        return (loss, {"logits": logits, "hidden": rep}) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        """The stock step; with several processes the adversaries' gradients are then averaged across them (they
        are not wrapped in DDP). With ``adv_update="sequential"`` the discriminators step first
        (:meth:`discriminator_step`), and take no gradient from the encoder's step."""
        if self.args.adv_update == "sequential":
            model.train()
            prepared = self._prepare_inputs(inputs)
            self._record_terms({"loss_disc": torch.tensor(self.discriminator_step(model, prepared)["loss_disc"])})
            params = list(self.adversary.parameters())
            for p in params:
                p.requires_grad_(False)
            try:
                return super().training_step(model, inputs, num_items_in_batch)
            finally:
                for p in params:
                    p.requires_grad_(True)
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self.accelerator.num_processes > 1 and torch.distributed.is_initialized():
            world = torch.distributed.get_world_size()
            for p in self.adversary.parameters():
                if p.grad is not None:
                    torch.distributed.all_reduce(p.grad)
                    p.grad.div_(world)
        return loss


def _hidden_dim(model: nn.Module) -> int:
    config = getattr(model, "config", None)
    for obj, name in ((config, "hidden_size"), (model, "hidden_dim"), (model, "representation_dim")):
        value = getattr(obj, name, None) if obj is not None else None
        if isinstance(value, int):
            return value
    head = getattr(model, "classifier", None)
    if isinstance(head, nn.Linear):  # fairmt.models.text_classifiers: h is the input of the linear head
        return head.in_features
    raise FairmtError(
        f"cannot tell the representation width of {type(model).__name__}: pass representation_dim= to the Trainer"
    )


def _num_labels(model: nn.Module) -> int:
    config = getattr(model, "config", None)
    value = getattr(config, "num_labels", None) if config is not None else None
    value = value or getattr(model, "num_labels", None)
    if not isinstance(value, int):
        raise FairmtError(f"cannot tell the number of task labels of {type(model).__name__}")
    return value
