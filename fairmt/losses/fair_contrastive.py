"""Fairness-aware contrastive losses for text classification, written with the masked core.

* :func:`cs_infonce_loss` — conditional supervised InfoNCE (Chi et al., 2022, "Conditional Supervised Contrastive
  Learning for Fair Text Classification", Eq. 2).
* :func:`fcl_loss` — fair supervised contrastive loss ``L_scl − L_fcl`` (Shen et al., AAAI 2022, "Contrastive
  Learning for Fair Representations", Eqs. 2–3).

Both are :func:`fairmt.losses.contrastive.masked_contrastive_loss` with particular positive/negative masks; the
NT-Xent of SimCLR and of fairness-driven sampling (Martin & Ogbuokiri) are in :mod:`fairmt.losses.sampling`.

Anchors without positives (bad batches)
---------------------------------------
An anchor that has no positive in the batch (a task label or group that occurs once in a single-view batch)
contributes nothing: it is left out of the mean (``on_no_positive="ignore"``, the default), and a batch where no
anchor has a positive gives a loss of exactly 0 that is still attached to the graph.
``on_no_positive="error"`` raises :class:`~fairmt.errors.FairmtError` naming the anchors instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from fairmt.errors import FairmtError
from fairmt.losses.contrastive import label_masks, masked_contrastive_loss

OnNoPositive = Literal["ignore", "error"]


def _as_views(features: torch.Tensor, name: str = "features") -> torch.Tensor:
    if features.dim() == 2:
        return features[:, None]
    if features.dim() != 3:
        raise FairmtError(f"{name} must be (N, d) or (N, V, d), got shape {tuple(features.shape)}")
    return features


def _check_labels(labels: torch.Tensor, n: int, name: str) -> torch.Tensor:
    labels = torch.as_tensor(labels).reshape(-1)
    if labels.shape[0] != n:
        raise FairmtError(f"{name} has {labels.shape[0]} entries but the batch holds {n} samples")
    return labels


def cs_infonce_loss(
    features: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor,
    temperature: float = 0.1,
    normalize: bool = True,
    anchor_weighting: Literal["uniform", "cell_size"] = "uniform",
) -> torch.Tensor:
    """Conditional supervised InfoNCE, ``L_CS-InfoNCE`` (Chi et al., 2022, Eq. 2).

    ``features`` is ``(N, V, d)`` with ``V ≥ 2`` views per sample (dropout or augmentation views). Every view ``i``
    is an anchor; its only positive is the other view(s) of the same sample, and the denominator holds only the
    views ``k ≠ i`` that share both the task label and the protected group of the anchor::

        ℓ_i = exp(z_i·z'_i/τ) / Σ_{k≠i, y_k=y_i, a_k=a_i} exp(z_i·z_k/τ)
        L_CS = mean_i  −log ℓ_i                               (anchor_weighting="uniform", default)
        L_CS = 1/(NV) Σ_i  −log ℓ_i / (N_{a_i,y_i} − 1)       (anchor_weighting="cell_size", Eq. 2 as printed,
                                                               N_{a,y} = number of views with that label and group)

    ``z`` is L2-normalised when ``normalize`` (cosine similarity; the paper writes the dot product of BERT features).
    With ``V > 2`` the positives of an anchor are all its other views (mean over them, as SupCon's ``L_out``).
    Since an anchor's own other view is always in the batch, no anchor lacks a positive; an anchor whose
    (label, group) cell holds only its own views has ``ℓ_i = 1`` and contributes 0.

    Minimising ``L_sup + λ·L_CS`` (two-stage) or ``(1−γ)·CE + γ·L_sup + λ·L_CS`` (one-stage) approximately minimises
    ``I(Z; A | Y)`` and so targets equalized odds.

    Example::

        >>> z = torch.randn(8, 2, 16)                  # 8 samples, 2 dropout views
        >>> y = torch.tensor([0, 0, 1, 1, 0, 0, 1, 1]); a = torch.tensor([0, 1, 0, 1, 0, 1, 0, 1])
        >>> loss = cs_infonce_loss(z, y, a, temperature=0.1)
    """
    features = _as_views(features)
    n, v, _ = features.shape
    if v < 2:
        raise FairmtError(
            f"CS-InfoNCE needs at least two views per sample (features of shape (N, V>=2, d)), got V={v}; "
            "produce a second view with dropout or augmentation"
        )
    labels = _check_labels(labels, n, "labels").to(features.device)
    groups = _check_labels(groups, n, "groups").to(features.device)
    flat = features.transpose(0, 1).reshape(n * v, -1)  # view-major: row k*N + j is view k of sample j
    sample = torch.arange(n, device=features.device).repeat(v)
    lab = labels.repeat(v)
    grp = groups.repeat(v)
    not_self = ~torch.eye(n * v, dtype=torch.bool, device=features.device)
    same_sample = (sample[:, None] == sample[None, :]) & not_self
    same_cell = (lab[:, None] == lab[None, :]) & (grp[:, None] == grp[None, :]) & not_self
    pos = same_sample
    neg = same_cell & ~same_sample
    per_anchor = masked_contrastive_loss(
        flat, flat, pos, neg, temperature, "mean", normalize, return_per_anchor=True
    )
    if anchor_weighting == "uniform":
        return per_anchor.mean()
    if anchor_weighting == "cell_size":
        cell = same_cell.sum(dim=1).to(per_anchor.dtype)  # = N_{a_i,y_i} − 1 (views, anchor excluded)
        return (per_anchor / cell.clamp(min=1)).mean()
    raise FairmtError(f"anchor_weighting must be 'uniform' or 'cell_size', got {anchor_weighting!r}")


@dataclass
class FCLTerms:
    """The two contrastive terms of FCL and their combination ``loss = L_scl − L_fcl``."""

    loss: torch.Tensor
    scl: torch.Tensor
    fcl: torch.Tensor


def _single_view_supcon(
    h: torch.Tensor, labels: torch.Tensor, temperature: float, normalize: bool, on_no_positive: OnNoPositive
) -> torch.Tensor:
    n = h.shape[0]
    pos, neg = label_masks(labels, labels, self_index=torch.arange(n, device=h.device))
    return masked_contrastive_loss(h, h, pos, neg, temperature, "mean", normalize, on_no_positive)


def fcl_loss(
    hidden: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor,
    temperature: float = 0.1,
    group_temperature: float | None = None,
    normalize: bool = True,
    on_no_positive: OnNoPositive = "ignore",
) -> FCLTerms:
    """Fair supervised contrastive loss ``L_scl − L_fcl`` (Shen et al., AAAI 2022, Eqs. 2–3).

    ``hidden`` is ``(N, d)`` (one representation ``h_i = Enc(Embed(x_i))`` per instance) or ``(N, V, d)`` (views are
    then all anchors and candidates). With ``h̃ = h/‖h‖`` (``normalize=True``, the published form)::

        L(labels) = mean_i  −1/|P(i)| Σ_{p∈P(i)} log( exp(h̃_i·h̃_p/τ) / Σ_{q≠i} exp(h̃_i·h̃_q/τ) ),
                    P(i) = {p ≠ i : labels_p = labels_i}
        L_scl = L(task labels),  L_fcl = L(protected groups)
        L_*   = α·CE + β·(L_scl − L_fcl)        (the CE part is added by the Trainer)

    Minimising ``−L_fcl`` pushes apart instances that share a protected attribute so that groups mix. The paper
    writes a sum over anchors; a mean is used so that β does not depend on the batch size.

    Difference from the fairlib toolkit (``fairlib.src.networks.FairCL``, v0.1.0): there the dot product is taken on
    the raw, *un-normalised* hidden states, each anchor's positive log-probabilities are divided by ``1 + |P(i)|``
    instead of ``|P(i)|``, anchors without positives still count in the mean (with 0), the default temperature is
    0.01, and ``1e-20`` is added to the softmax denominator — negligible with normalised features, but with raw,
    large-norm features and τ = 0.01 the exponentials under- or overflow in float32 and that constant decides the
    value (log(1e-20) ≈ −46). Without the normalisation, ``−L_fcl`` is unbounded below (growing the norm of same-group pairs' difference
    drives ``L_fcl`` to +∞), which is why the published form normalises. ``normalize=False`` gives the un-normalised
    dot product for comparison; the other two differences are not reproduced.

    Args:
        temperature: τ for ``L_scl``; ``group_temperature`` τ for ``L_fcl`` (defaults to ``temperature``).
        on_no_positive: anchors whose label (or group) is unique in the batch have no positive; see module docs.

    Returns:
        :class:`FCLTerms` with ``loss``, ``scl`` and ``fcl``.

    Example::

        >>> h = torch.randn(16, 32, requires_grad=True)
        >>> terms = fcl_loss(h, torch.randint(0, 3, (16,)), torch.randint(0, 2, (16,)))
        >>> (terms.loss).backward()
    """
    feats = _as_views(hidden, "hidden")
    n, v, _ = feats.shape
    labels = _check_labels(labels, n, "labels").to(feats.device)
    groups = _check_labels(groups, n, "groups").to(feats.device)
    flat = feats.transpose(0, 1).reshape(n * v, -1)
    scl = _single_view_supcon(flat, labels.repeat(v), temperature, normalize, on_no_positive)
    tau_g = temperature if group_temperature is None else group_temperature
    fcl = _single_view_supcon(flat, groups.repeat(v), tau_g, normalize, on_no_positive)
    return FCLTerms(loss=scl - fcl, scl=scl, fcl=fcl)
