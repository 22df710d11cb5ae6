"""Gender-aware contrastive loss (GACL; Lee, Koh, Lee, Zhang, Kim & Jung, EMNLP 2023, Eq. 1).

For anchor i with encoder representation h_i and gender g_i::

    L_GC^(i) = - Σ_{h+ ∈ H_i^+} log( exp(cos(h_i, h+)/τ) / Σ_{h* ∈ H_i^+ ∪ H_i^-} exp(cos(h_i, h*)/τ) )
    H_i^+ = {h'_i} ∪ {h_j : g_j = g_i, j ≠ i}        (dropout view, in-batch same gender)
    H_i^- = {h~_i} ∪ {h_k : g_k ≠ g_i}               (gender-swapped counterfactual, in-batch other gender)

Each of the four sets can be switched off (the paper's Table 5 ablation). Two named variants:

* ``"paper"``: all four sets, the dropout view and the counterfactual carry gradients, sum over positives
  (as Eq. 1 is printed).
* ``"official"``: what the authors' released code runs: no counterfactual negative, the dropout view is a
  second encoder pass computed without gradient (the caller detaches it), mean over positives.

Scale. With the sum over positives (Eq. 1 as printed) the loss grows with the number of same-gender candidates,
i.e. with the per-device batch size and, when candidates are gathered, with the number of processes (8.8 / 22.7 /
56.1 at batch 8 / 16 / 32 at the first step of a tiny run), so a λ tuned at one scale means another at the next.
``positive_reduction="mean"`` divides each anchor's sum by its number of positives, which removes that growth
(only the log of the denominator still grows, slowly, with the number of candidates); :class:`GACLConfig` uses it
by default for both variants. The temperature τ is not stated in the paper; the released code trains with its
default τ = 1.0, which is this function's default.

Under ``torch.distributed`` the in-batch candidates come from every process (:mod:`fairmt.distributed`).

Example::

    >>> h, h_drop, h_cf = torch.randn(3, 8, 16).unbind(0)
    >>> g = torch.tensor([0, 1] * 4)
    >>> loss = gacl_loss(h, g, h_dropout=h_drop, h_counterfactual=h_cf, temperature=1.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairmt.distributed import gather_nograd, gather_with_grad, rank
from fairmt.errors import POSITIVE, PROBABILITY, WEIGHT, FairmtError, Range
from fairmt.losses.contrastive import Reduction, masked_contrastive_loss


@dataclass(frozen=True)
class GACLSettings:
    """GACL's hyper-parameters that both of fairmt's GACL trainers take: the Hugging Face one
    (:class:`fairmt.trainers.gacl.GACLConfig`) and the fairseq criterion ``gacl_kd``
    (:class:`fairmt.fairseq.criterion.GACLKDCriterionConfig`, which may not import a Trainer). Their defaults are
    defined here once (:data:`GACL_DEFAULTS`): both Configs' field defaults read them, and the recipes, the demo and
    the docs read ``GACLConfig``'s (``tests/recipes/test_gacl_defaults.py`` holds every reader to it). α = 0.4 and λ = 1.0 are
    the authors' released script's (``run_translation.sh``: ``--kd_lambda``, ``--gc_lambda``; the paper prints no
    value), τ = 1.0 its code's default (the script sets no ``--gc_loss_temp``)."""

    kd_alpha: float = 0.4
    gacl_lambda: float = 1.0
    temperature: float = 1.0
    kd_temperature: float = 1.0
    positive_reduction: Reduction = "mean"
    pooling: str = "mean"
    gacl_variant: str = "paper"
    gather_across_processes: bool = True


GACL_DEFAULTS = GACLSettings()
"""The one place of the defaults of :class:`GACLSettings`."""

GACL_RANGES: dict[str, Range] = {
    "kd_alpha": PROBABILITY,
    "gacl_lambda": WEIGHT,
    "temperature": POSITIVE,
    "kd_temperature": POSITIVE,
}
"""The range of each numeric GACL hyper-parameter (both Configs check it: ``GACLConfig.RANGES``, the criterion's
``CRITERION_RANGES``)."""


@dataclass(frozen=True)
class GACLPairs:
    """Which contrastive pairs GACL uses (Table 5 of the paper)."""

    dropout_positive: bool = True
    inbatch_positives: bool = True
    counterfactual_negative: bool = True
    inbatch_negatives: bool = True
    positive_reduction: Reduction = "sum"
    detach_dropout_view: bool = False


GACL_VARIANTS: dict[str, GACLPairs] = {
    "paper": GACLPairs(),
    "official": GACLPairs(counterfactual_negative=False, positive_reduction="mean", detach_dropout_view=True),
}


VARIANT_DEFAULTS: dict[str, dict[str, object]] = {
    "paper": {"kd_normalization": "token", "projection": "none", "warmup_init_lr_ratio": 0.0},
    "official": {"kd_normalization": "sentence", "projection": "linear", "warmup_init_lr_ratio": 0.1},
}
"""What each variant takes for the trainers' options left unset (None): the KL's normalisation (``official``: per
sentence, as the released code), the projection head on the pooled states (``official``: the released code's
``Dropout → Linear(d, d)``; the HF trainer's ``paper`` default is ``mlp`` where ``projection_dim`` is set) and the
warm-up's starting share of the learning rate (``official``: fairseq's ``warmup_init_lr``, 0.1; the fairseq criterion
leaves warm-up to fairseq's own options). Read by :class:`fairmt.trainers.gacl.GACLConfig` and the fairseq
criterion ``gacl_kd``."""


def gacl_variant(name: str) -> GACLPairs:
    try:
        return GACL_VARIANTS[name]
    except KeyError:
        raise FairmtError(f"unknown GACL variant {name!r}; choose one of {sorted(GACL_VARIANTS)}") from None


SINGLE_GENDER_HINT = "use a gender-balanced sampler (fairmt.data.GenderBalancedSampler) or a larger batch"


def single_gender_batch(genders: torch.Tensor, gather: bool = True) -> torch.Tensor:
    """A 0-dim bool tensor, True when the batch (every process's, with ``gather``) holds one gender only: GACL's
    in-batch negatives are then empty. Computed on the device, never read back here (no host sync): a trainer
    reads it together with the loss (:meth:`fairmt.trainers.faults.FaultGuardMixin.defer_check`)."""
    g = gather_nograd(genders) if gather else genders
    return (g != g[:1]).any().logical_not()


def gacl_loss(
    h: torch.Tensor,
    genders: torch.Tensor,
    h_dropout: torch.Tensor | None = None,
    h_counterfactual: torch.Tensor | None = None,
    temperature: float = GACL_DEFAULTS.temperature,
    pairs: GACLPairs | str = GACL_DEFAULTS.gacl_variant,
    gather: bool = True,
    return_counts: bool = False,
    on_single_gender: str = "error",
):
    """GACL loss of a (local) batch. See the module docstring for the formula.

    Args:
        h: ``(B, d)`` pooled encoder representations of the source sentences.
        genders: ``(B,)`` integer gender labels (0 = male, 1 = female by fairmt's convention).
        h_dropout: ``(B, d)`` a second, independently dropped-out encoding of the same sentences.
        h_counterfactual: ``(B, d)`` encodings of the gender-swapped sources.
        pairs: a :class:`GACLPairs` or a variant name (``"paper"``, ``"official"``).
        gather: take in-batch candidates from all processes when running distributed.
        return_counts: also return the mean number of positives and of negatives per anchor (for logging):
            ``(loss, n_positives, n_negatives)``.
        on_single_gender: a batch (all processes together when gathering) of one gender has no in-batch negative:
            ``"error"`` (default, training) or ``"skip"`` (return ``None`` instead of a loss, for evaluation,
            where L_GC is undefined on such a batch), both of which read a value back from the device; or
            ``"defer"``: no check here, so the loss needs no host synchronisation, and the caller checks
            :func:`single_gender_batch` itself (:class:`fairmt.trainers.GACLTrainer` reads it together with the
            loss's finiteness, in one read per step).
    """
    p = gacl_variant(pairs) if isinstance(pairs, str) else pairs
    b = h.shape[0]
    if genders.shape != (b,):
        raise FairmtError(f"genders must have shape ({b},), got {tuple(genders.shape)}")
    if p.dropout_positive and h_dropout is None:
        raise FairmtError("GACL with dropout positives needs h_dropout (a second dropout view of the batch)")
    if p.counterfactual_negative and h_counterfactual is None:
        raise FairmtError("GACL with counterfactual negatives needs h_counterfactual (gender-swapped sources)")
    genders = genders.to(h.device)

    if gather:
        all_h = gather_with_grad(h)
        all_g = gather_nograd(genders)
        offset = rank() * b
    else:
        all_h, all_g, offset = h, genders, 0
    if on_single_gender not in ("error", "skip", "defer"):
        raise FairmtError(f"on_single_gender must be 'error', 'skip' or 'defer', got {on_single_gender!r}")
    if p.inbatch_negatives and on_single_gender != "defer" and bool(single_gender_batch(all_g, gather=False)):
        if on_single_gender == "skip":
            return (None, None, None) if return_counts else None
        raise FairmtError(
            f"this batch holds one gender only (all {int(all_g[0])}), but GACL uses in-batch negatives: "
            + SINGLE_GENDER_HINT
        )

    arange = torch.arange(b, device=h.device)
    same = genders[:, None] == all_g[None, :]
    not_self = torch.ones_like(same)
    not_self[arange, arange + offset] = False
    blocks_c, blocks_pos, blocks_neg = [all_h], [same & not_self & p.inbatch_positives], [~same & p.inbatch_negatives]
    eye = torch.eye(b, dtype=torch.bool, device=h.device)
    none = torch.zeros_like(eye)
    if p.dropout_positive and h_dropout is not None:  # None refused above
        blocks_c.append(h_dropout.detach() if p.detach_dropout_view else h_dropout)
        blocks_pos.append(eye)
        blocks_neg.append(none)
    if p.counterfactual_negative and h_counterfactual is not None:  # None refused above
        blocks_c.append(h_counterfactual)
        blocks_pos.append(none)
        blocks_neg.append(eye)
    pos, neg = torch.cat(blocks_pos, dim=1), torch.cat(blocks_neg, dim=1)
    loss = masked_contrastive_loss(  # the blocks above are disjoint by construction: no overlap check
        h,
        torch.cat(blocks_c, dim=0),
        pos,
        neg,
        temperature=temperature,
        positive_reduction=p.positive_reduction,
        check_masks=False,
    )
    if return_counts:
        return loss, pos.sum(1).float().mean().detach(), neg.sum(1).float().mean().detach()
    return loss
