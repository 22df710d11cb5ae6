"""Fairness-aware contrastive losses for text classification, written with the masked core.

* :func:`cs_infonce_loss` — conditional supervised InfoNCE (Chi et al., 2022, "Conditional Supervised Contrastive
  Learning for Fair Text Classification", Eq. 2).
* :func:`fcl_loss` — fair supervised contrastive loss ``L_scl − L_fcl`` (Shen et al., AAAI 2022, "Contrastive
  Learning for Fair Representations", Eqs. 2–3), as published (``variant="paper"``) or as the authors' released
  code and fairlib compute it (``variant="released"``, :func:`released_supcon`), with fairlib's equalized-odds
  group term (``group_term="eo"``) as an option.

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
    per_anchor = masked_contrastive_loss(flat, flat, pos, neg, temperature, "mean", normalize, return_per_anchor=True)
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


FCL_VARIANTS = ("paper", "released")
FCL_GROUP_TERMS = ("g", "eo")
FCL_DEFAULT_TEMPERATURE = {"paper": 0.1, "released": 0.01}


def _single_view_supcon(
    h: torch.Tensor, labels: torch.Tensor, temperature: float, normalize: bool, on_no_positive: OnNoPositive
) -> torch.Tensor:
    n = h.shape[0]
    pos, neg = label_masks(labels, labels, self_index=torch.arange(n, device=h.device))
    return masked_contrastive_loss(h, h, pos, neg, temperature, "mean", normalize, on_no_positive)


def released_supcon(
    h: torch.Tensor, labels: torch.Tensor, temperature: float = 0.01, normalize: bool = False
) -> torch.Tensor:
    """The supervised contrastive term as the FCL authors' released code and fairlib compute it (one view).

    With ``s_ij = h_i·h_j / τ`` over *all* ``j`` (the anchor itself included) and ``c_i = max_j s_ij``::

        D_i = Σ_{k≠i} exp(s_ik − c_i) + N·10⁻²⁰              (10⁻²⁰ is added to each of the N row entries)
        ℓ_i = −1/(1 + |P(i)|) Σ_{p∈P(i)} (s_ip − c_i − log D_i),     P(i) = {p ≠ i : labels_p = labels_i}
        L   = mean over all N anchors                          (an anchor without a positive counts with 0)

    ``h`` is the raw representation (``normalize=False``, the released default). Differences from the published
    Eq. 2 (:func:`_single_view_supcon`): ``1 + |P(i)|`` instead of ``|P(i)|``, the ``10⁻²⁰`` (with raw features and
    τ = 0.01 every ``exp(s_ik − c_i)`` underflows once the anchor's self-similarity dominates its row, and the
    constant then sets the value), anchors without positives averaged in with 0, no L2 normalisation.
    """
    h = h.to(torch.float64 if h.dtype == torch.float64 else torch.float32)
    if normalize:
        h = torch.nn.functional.normalize(h, dim=-1)
    n = h.shape[0]
    s = h @ h.T / temperature
    logits = s - s.max(dim=1, keepdim=True).values.detach()
    not_self = ~torch.eye(n, dtype=torch.bool, device=h.device)
    exp = torch.exp(logits) * not_self + 1e-20
    log_prob = logits - torch.log(exp.sum(dim=1, keepdim=True))
    pos = (labels[:, None] == labels[None, :]) & not_self
    per_anchor = -(log_prob * pos).sum(dim=1) / (1 + pos.sum(dim=1))
    return per_anchor.mean()


def fcl_loss(
    hidden: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor,
    temperature: float | None = None,
    group_temperature: float | None = None,
    normalize: bool | None = None,
    on_no_positive: OnNoPositive = "ignore",
    variant: str = "paper",
    group_term: str = "g",
) -> FCLTerms:
    """Fair supervised contrastive loss ``L_scl − L_fcl`` (Shen et al., AAAI 2022, Eqs. 2–3).

    ``hidden`` is ``(N, d)`` (one representation ``h_i = Enc(Embed(x_i))`` per instance, as published) or
    ``(N, V, d)`` (views are then all anchors and candidates: each sample's other views become extra positives).
    ``variant="paper"`` (default), with ``h̃ = h/‖h‖`` (``normalize`` defaults to True)::

        L(labels) = mean_i  −1/|P(i)| Σ_{p∈P(i)} log( exp(h̃_i·h̃_p/τ) / Σ_{q≠i} exp(h̃_i·h̃_q/τ) ),
                    P(i) = {p ≠ i : labels_p = labels_i}
        L_scl = L(task labels),  L_fcl = L(protected groups)
        L_*   = α·CE + β·(L_scl − L_fcl)        (the CE part is added by the Trainer)

    Minimising ``−L_fcl`` pushes apart instances that share a protected attribute so that groups mix. The paper
    writes a sum over anchors; a mean is used so that β does not depend on the batch size. τ defaults to 0.1.

    ``variant="released"`` reproduces the authors' released code as carried into fairlib
    (``fairlib.src.networks.FairCL``, ``Contrastive_Loss``): each term is :func:`released_supcon` — raw
    (unnormalised) dot product (``normalize`` defaults to False), positives divided by ``1 + |P(i)|``, ``10⁻²⁰`` in
    the softmax denominator, anchors without a positive kept with loss 0 — and τ defaults to 0.01 (fairlib's
    ``fcl_temperature_y``/``_g``). Without the normalisation ``−L_fcl`` is unbounded below (growing the norm of
    same-group pairs' difference drives ``L_fcl`` to +∞), which is why the published form normalises.

    ``group_term="eo"`` is fairlib's ``FCLObj="EO"``: the group term is computed within each task class present in
    the batch and averaged over those classes, ``L_fcl = 1/|Y_B| Σ_{y∈Y_B} L({h_i : y_i = y}, groups)``, so only the
    group information that is not explained by the label is pushed apart (equalized odds rather than demographic
    parity). ``"g"`` (default) is the published term over the whole batch.

    Args:
        temperature: τ for ``L_scl``; ``group_temperature`` τ for ``L_fcl`` (defaults to ``temperature``).
        on_no_positive: (paper variant) anchors whose label (or group) is unique in the batch have no positive; see
            module docs. The released variant always keeps them with loss 0.

    Returns:
        :class:`FCLTerms` with ``loss``, ``scl`` and ``fcl``.

    Example::

        >>> h = torch.randn(16, 32, requires_grad=True)
        >>> terms = fcl_loss(h, torch.randint(0, 3, (16,)), torch.randint(0, 2, (16,)))
        >>> (terms.loss).backward()
        >>> fcl_loss(h, torch.randint(0, 3, (16,)), torch.randint(0, 2, (16,)), variant="released")  # fairlib's
    """
    if variant not in FCL_VARIANTS:
        raise FairmtError(f"FCL variant must be one of {FCL_VARIANTS}, got {variant!r}")
    if group_term not in FCL_GROUP_TERMS:
        raise FairmtError(f"FCL group_term must be one of {FCL_GROUP_TERMS} (fairlib's FCLObj), got {group_term!r}")
    tau = FCL_DEFAULT_TEMPERATURE[variant] if temperature is None else temperature
    tau_g = tau if group_temperature is None else group_temperature
    if tau <= 0 or tau_g <= 0:
        raise FairmtError(f"temperatures must be > 0, got {tau} and {tau_g}")
    norm = (variant == "paper") if normalize is None else normalize
    feats = _as_views(hidden, "hidden")
    n, v, _ = feats.shape
    labels = _check_labels(labels, n, "labels").to(feats.device)
    groups = _check_labels(groups, n, "groups").to(feats.device)
    flat = feats.transpose(0, 1).reshape(n * v, -1)
    lab, grp = labels.repeat(v), groups.repeat(v)

    def term(h: torch.Tensor, y: torch.Tensor, t: float) -> torch.Tensor:
        if variant == "released":
            return released_supcon(h, y, t, norm)
        return _single_view_supcon(h, y, t, norm, on_no_positive)

    scl = term(flat, lab, tau)
    if group_term == "g":
        fcl = term(flat, grp, tau_g)
    else:  # within each task class of the batch, averaged over the classes present
        parts = [term(flat[lab == c], grp[lab == c], tau_g) for c in torch.unique(lab)]
        fcl = torch.stack(parts).mean()
    return FCLTerms(loss=scl - fcl, scl=scl, fcl=fcl)
