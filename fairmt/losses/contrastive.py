"""One masked supervised-contrastive core, and the contrastive losses written in terms of it.

Every contrastive objective in fairmt (GACL, SupCon, CS-InfoNCE, FCL) is this core with different positive and
negative masks::

    s_ik = cos(a_i, c_k) / τ
    L_i  = - agg_{p ∈ P(i)} log( exp(s_ip) / Σ_{k ∈ P(i) ∪ N(i)} exp(s_ik) )
    L    = mean over anchors i with P(i) ≠ ∅

where ``agg`` is a sum (``positive_reduction="sum"``, GACL as printed in Lee et al. 2023, Eq. 1) or a mean
(``"mean"``, Khosla et al. 2020's L_out). Candidates outside ``P(i) ∪ N(i)`` (the anchor itself, say) take no part.
No transformers import here (layer 1).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

from fairmt.errors import FairmtError

Reduction = Literal["mean", "sum"]


def masked_contrastive_loss(
    anchors: torch.Tensor,
    candidates: torch.Tensor,
    positive_mask: torch.Tensor,
    negative_mask: torch.Tensor,
    temperature: float = 0.1,
    positive_reduction: Reduction = "mean",
    normalize: bool = True,
    on_no_positive: Literal["ignore", "error"] = "ignore",
    return_per_anchor: bool = False,
    check_masks: bool = True,
) -> torch.Tensor:
    """Masked supervised contrastive loss (see module docstring for the formula).

    Args:
        anchors: ``(N, d)`` anchor representations.
        candidates: ``(M, d)`` candidate representations (may include the anchors themselves).
        positive_mask, negative_mask: ``(N, M)`` boolean masks; they must not overlap.
        temperature: τ > 0.
        positive_reduction: ``"mean"`` (SupCon L_out) or ``"sum"`` over an anchor's positives.
        normalize: L2-normalise both sides first, so the similarity is the cosine.
        on_no_positive: anchors without any positive are left out of the mean (``"ignore"``) or raise.
        return_per_anchor: return the ``(N,)`` per-anchor losses (NaN for anchors without positives).
        check_masks: refuse overlapping masks (reads a value back from the device; a caller whose masks are
            disjoint by construction passes False, so the loss runs without a host synchronisation).

    Returns:
        The mean loss over anchors that have at least one positive; ``0`` (still attached to the graph) if none has.

    Example::

        >>> h = torch.randn(4, 8); g = torch.tensor([0, 0, 1, 1])
        >>> pos = (g[:, None] == g[None]) & ~torch.eye(4, dtype=torch.bool)
        >>> loss = masked_contrastive_loss(h, h, pos, ~pos & ~torch.eye(4, dtype=torch.bool))
    """
    if temperature <= 0:
        raise FairmtError(f"temperature must be > 0, got {temperature}")
    if anchors.dim() != 2 or candidates.dim() != 2 or anchors.shape[1] != candidates.shape[1]:
        raise FairmtError(
            f"anchors {tuple(anchors.shape)} and candidates {tuple(candidates.shape)} must be (N, d), (M, d)"
        )
    shape = (anchors.shape[0], candidates.shape[0])
    if tuple(positive_mask.shape) != shape or tuple(negative_mask.shape) != shape:
        raise FairmtError(
            f"masks must have shape {shape}, got {tuple(positive_mask.shape)} and {tuple(negative_mask.shape)}"
        )
    pos = positive_mask.to(device=anchors.device, dtype=torch.bool)
    neg = negative_mask.to(device=anchors.device, dtype=torch.bool)
    if check_masks and bool((pos & neg).any()):
        raise FairmtError("a candidate is both a positive and a negative for the same anchor")
    if positive_reduction not in ("mean", "sum"):
        raise FairmtError(f"positive_reduction must be 'mean' or 'sum', got {positive_reduction!r}")

    # Similarities in float32 even for bf16/fp16 inputs (exp/log of low-precision logits loses the signal); float64
    # stays float64, so loop-reference tests can be tight.
    dtype = torch.float64 if torch.float64 in (anchors.dtype, candidates.dtype) else torch.float32
    a = anchors.to(dtype)
    c = candidates.to(dtype)
    if normalize:
        a = F.normalize(a, dim=-1)
        c = F.normalize(c, dim=-1)
    logits = a @ c.T / temperature
    in_denominator = pos | neg
    log_denominator = torch.logsumexp(logits.masked_fill(~in_denominator, float("-inf")), dim=1, keepdim=True)
    log_prob = torch.where(pos, logits - log_denominator, torch.zeros_like(logits))
    n_pos = pos.sum(dim=1)
    per_anchor = -log_prob.sum(dim=1)
    if positive_reduction == "mean":
        per_anchor = per_anchor / n_pos.clamp(min=1)
    has_pos = n_pos > 0
    if on_no_positive == "error" and not bool(has_pos.all()):
        missing = torch.nonzero(~has_pos).flatten().tolist()
        raise FairmtError(f"anchors {missing} have no positive candidate in this batch")
    if return_per_anchor:
        return torch.where(has_pos, per_anchor, torch.full_like(per_anchor, float("nan")))
    # the mean over anchors with positives (0, attached to the graph, when none has), without a host sync
    return torch.where(has_pos, per_anchor, torch.zeros_like(per_anchor)).sum() / has_pos.sum().clamp(min=1)


def label_masks(anchor_labels: torch.Tensor, candidate_labels: torch.Tensor, self_index: torch.Tensor | None = None):
    """Positive (same label) and negative (other label) masks, excluding each anchor's own position.

    ``self_index[i]`` is the column of anchor ``i`` among the candidates (``None``: anchors are not candidates).
    """
    same = anchor_labels[:, None] == candidate_labels[None, :]
    not_self = torch.ones_like(same)
    if self_index is not None:
        not_self[torch.arange(len(anchor_labels), device=same.device), self_index] = False
    return same & not_self, ~same & not_self


def supcon_loss(
    features: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 0.1,
    normalize: bool = True,
) -> torch.Tensor:
    """Supervised contrastive loss (Khosla et al., NeurIPS 2020, L_out).

    ``features`` is ``(N, V, d)`` (V views per sample, e.g. two dropout views) or ``(N, d)``; every view is an
    anchor, its positives are all other views with the same label, its negatives all views with another label::

        L = mean_i  -1/|P(i)| Σ_{p∈P(i)} log( exp(z_i·z_p/τ) / Σ_{k≠i} exp(z_i·z_k/τ) )
    """
    if features.dim() == 2:
        features = features[:, None]
    n, v, _ = features.shape
    flat = features.transpose(0, 1).reshape(n * v, -1)  # view-major, as SupCon's reference code
    lab = labels.reshape(-1).repeat(v)
    pos, neg = label_masks(lab, lab, self_index=torch.arange(n * v, device=flat.device))
    return masked_contrastive_loss(flat, flat, pos, neg, temperature, "mean", normalize)
