"""Gender-aware contrastive loss (GACL; Lee, Lee, Bang & Oh, EMNLP 2023 Findings, Eq. 1).

For anchor i with encoder representation h_i and gender g_i::

    L_GC^(i) = - Σ_{h+ ∈ H_i^+} log( exp(cos(h_i, h+)/τ) / Σ_{h* ∈ H_i^+ ∪ H_i^-} exp(cos(h_i, h*)/τ) )
    H_i^+ = {h'_i} ∪ {h_j : g_j = g_i, j ≠ i}        (dropout view, in-batch same gender)
    H_i^- = {h~_i} ∪ {h_k : g_k ≠ g_i}               (gender-swapped counterfactual, in-batch other gender)

Each of the four sets can be switched off (the paper's Table 5 ablation). Two named variants:

* ``"paper"``: all four sets, the dropout view and the counterfactual carry gradients, sum over positives
  (as Eq. 1 is printed).
* ``"official"``: what the authors' released code runs: no counterfactual negative, the dropout view is a
  second encoder pass computed without gradient (the caller detaches it), mean over positives.

Under ``torch.distributed`` the in-batch candidates come from every process (:mod:`fairmt.losses.distributed`).

Example::

    >>> h, h_drop, h_cf = torch.randn(3, 8, 16).unbind(0)
    >>> g = torch.tensor([0, 1] * 4)
    >>> loss = gacl_loss(h, g, h_dropout=h_drop, h_counterfactual=h_cf, temperature=0.1)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairmt.errors import FairmtError
from fairmt.losses.contrastive import Reduction, masked_contrastive_loss
from fairmt.losses.distributed import gather_nograd, gather_with_grad, rank


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


def gacl_variant(name: str) -> GACLPairs:
    try:
        return GACL_VARIANTS[name]
    except KeyError:
        raise FairmtError(f"unknown GACL variant {name!r}; choose one of {sorted(GACL_VARIANTS)}") from None


def gacl_loss(
    h: torch.Tensor,
    genders: torch.Tensor,
    h_dropout: torch.Tensor | None = None,
    h_counterfactual: torch.Tensor | None = None,
    temperature: float = 0.1,
    pairs: GACLPairs | str = "paper",
    gather: bool = True,
) -> torch.Tensor:
    """GACL loss of a (local) batch. See the module docstring for the formula.

    Args:
        h: ``(B, d)`` pooled encoder representations of the source sentences.
        genders: ``(B,)`` integer gender labels (0 = male, 1 = female by fairmt's convention).
        h_dropout: ``(B, d)`` a second, independently dropped-out encoding of the same sentences.
        h_counterfactual: ``(B, d)`` encodings of the gender-swapped sources.
        pairs: a :class:`GACLPairs` or a variant name (``"paper"``, ``"official"``).
        gather: take in-batch candidates from all processes when running distributed.
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
    if p.inbatch_negatives and not bool((all_g != all_g[0]).any()):
        raise FairmtError(
            f"this batch holds one gender only (all {int(all_g[0])}), but GACL uses in-batch negatives: use a "
            "gender-balanced sampler (fairmt.data.GenderBalancedSampler) or a larger batch"
        )

    arange = torch.arange(b, device=h.device)
    same = genders[:, None] == all_g[None, :]
    not_self = torch.ones_like(same)
    not_self[arange, arange + offset] = False
    blocks_c, blocks_pos, blocks_neg = [all_h], [same & not_self & p.inbatch_positives], [~same & p.inbatch_negatives]
    eye = torch.eye(b, dtype=torch.bool, device=h.device)
    none = torch.zeros_like(eye)
    if p.dropout_positive:
        blocks_c.append(h_dropout.detach() if p.detach_dropout_view else h_dropout)
        blocks_pos.append(eye)
        blocks_neg.append(none)
    if p.counterfactual_negative:
        blocks_c.append(h_counterfactual)
        blocks_pos.append(none)
        blocks_neg.append(eye)
    return masked_contrastive_loss(
        h,
        torch.cat(blocks_c, dim=0),
        torch.cat(blocks_pos, dim=1),
        torch.cat(blocks_neg, dim=1),
        temperature=temperature,
        positive_reduction=p.positive_reduction,
    )
