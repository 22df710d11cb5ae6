"""Content-conditional debiasing (CCD) losses ("LLM-Assisted Content Conditional Debiasing for Fair Text
Embedding", 2024, Eqs. 2-4).

A training example is a tuple of texts with one content C: a neutral text S^n and one text per sensitive group
S^{a_1}, ..., S^{a_|A|} (for gender: male, female). With an encoder f, a frozen copy f_orig of the original encoder
and a bandwidth ρ::

    d(a, b)  = exp(-‖a - b‖² / (2ρ²))                                             (Gaussian kernel, Eq. 2)
    L_bias   = Σ_i Σ_{j≠i} | d(f(S^{a_i}), f(S^n)) - d(f(S^{a_j}), f(S^n)) |      (Eq. 2; ordered pairs i ≠ j)
    L_rep    = ‖ f(S^n) - f_orig(S^n) ‖                                           (Eq. 3; L2 norm, not squared)
    L_all    = L_bias + β · L_rep                                                  (Eq. 4; β = 1 in the paper)

Each term is averaged over the tuples of a batch. The sum runs over *ordered* pairs as printed, so with two groups
L_bias = 2·|d_m - d_f|. Any number of groups (≥ 2) is accepted.

ρ is fixed before training from the original model's distances ‖f_orig(S^{a_i}) - f_orig(S^n)‖ over the training
set (:func:`estimate_rho`), over every training tuple unless a subsample is declared (``rho_max_tuples``). Two
readings of the paper, neither of them "the paper's choice": §3.3 says ρ "is selected as the variance of the distance
over the training dataset" (reading ``"variance"``), while App. A.5 describes the kernel as "a Gaussian distribution
with a covariance matrix equal to ρ times the identity matrix" — under exp(-‖a-b‖²/2ρ²) the bandwidth that matches
the distances' spread is then their standard deviation (reading ``"std"``). The variance is not in the units of
a distance, so it only suits embeddings whose distances happen to be of order one or more (BERT/RoBERTa mean
pooling); the standard deviation (``"std"``) is scale-consistent; the median distance (``"median"``, the usual
bandwidth heuristic for Gaussian kernels) keeps ‖a-b‖/ρ ≈ 1 even when the distances are tightly concentrated.
Measured kernel values exp(-m²/2ρ²) at the median distance m: all-MiniLM-L6-v2 (unit-norm) on CDA tuples from
newstest2018, m = 0.317: variance 2e-25 (no gradient), std 0.18, median 0.61; a tiny random BERT (m = 0.71,
std 0.13): std 3e-7, median 0.61. The trainer warns when the estimate saturates the kernel.

ρ also decides HOW L_bias is reduced. ∂d/∂‖a-b‖ = -(‖a-b‖/ρ²)·d peaks at ‖a-b‖ = ρ: when ρ is below the
typical distance, the group text closer to the neutral one has the larger gradient, and the loss falls fastest
by pushing it away, so both distances grow towards the kernel's flat tail (a degenerate optimum that equalises
d without equalising the distances); when ρ is at or above the distances, the farther text is pulled in. On
all-MiniLM-L6-v2 (CDA tuples, one epoch): ρ = std (0.167) moved the held-out mean male/female-to-neutral
distances from 0.25/0.34 to 0.49/0.46 (CCED gap 0.095 → 0.071), ρ = median (0.350) to 0.23/0.24 (gap → 0.024).

Example::

    >>> neutral = torch.randn(8, 32)
    >>> groups = torch.randn(8, 2, 32)      # (batch, |A|, dim): male, female
    >>> out = ccd_loss(neutral, groups, neutral_orig=neutral.detach(), rho=1.0, beta=1.0)
    >>> out.loss, out.bias, out.rep
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from fairmt.errors import FairmtError

RhoEstimator = Literal["variance", "std", "median"]
RHO_ESTIMATORS = ("variance", "std", "median")


def ccd_kernel(a: torch.Tensor, b: torch.Tensor, rho: float) -> torch.Tensor:
    """d(a, b) = exp(-‖a - b‖² / (2ρ²)) over the last dimension (CCD paper, Eq. 2)."""
    if rho <= 0:
        raise FairmtError(f"rho must be positive, got {rho}")
    sq = (a - b).pow(2).sum(dim=-1)
    return torch.exp(-sq / (2.0 * rho * rho))


def _stack_groups(groups: torch.Tensor | Sequence[torch.Tensor], neutral: torch.Tensor) -> torch.Tensor:
    if not isinstance(groups, torch.Tensor):
        groups = torch.stack(list(groups), dim=1)
    if groups.dim() != 3 or groups.shape[0] != neutral.shape[0] or groups.shape[2] != neutral.shape[1]:
        raise FairmtError(
            f"group embeddings must have shape (batch={neutral.shape[0]}, groups, dim={neutral.shape[-1]}), "
            f"got {tuple(groups.shape)}"
        )
    if groups.shape[1] < 2:
        raise FairmtError(f"CCD needs at least two sensitive groups per tuple, got {groups.shape[1]}")
    return groups


def ccd_bias_loss(
    neutral: torch.Tensor,
    groups: torch.Tensor | Sequence[torch.Tensor],
    rho: float,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> torch.Tensor:
    """L_bias = Σ_i Σ_{j≠i} |d(f(S^{a_i}), f(S^n)) - d(f(S^{a_j}), f(S^n))| per tuple (CCD paper, Eq. 2).

    Args:
        neutral: ``(B, d)`` embeddings of the neutral texts f(S^n).
        groups: ``(B, G, d)`` embeddings of the group texts (or a sequence of G ``(B, d)`` tensors), G ≥ 2.
        rho: kernel bandwidth ρ.
        reduction: ``"mean"`` over tuples (default), ``"sum"`` or ``"none"`` (per-tuple ``(B,)``).
    """
    g = _stack_groups(groups, neutral)
    d = ccd_kernel(g, neutral[:, None, :], rho)  # (B, G)
    per_tuple = (d[:, :, None] - d[:, None, :]).abs().sum(dim=(1, 2))  # diagonal terms are 0
    return _reduce(per_tuple, reduction)


def ccd_rep_loss(
    neutral: torch.Tensor,
    neutral_orig: torch.Tensor,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> torch.Tensor:
    """L_rep = ‖f(S^n) - f_orig(S^n)‖ (L2 norm) per tuple (CCD paper, Eq. 3); ``neutral_orig`` gets no gradient."""
    if neutral.shape != neutral_orig.shape:
        raise FairmtError(
            f"neutral embeddings {tuple(neutral.shape)} and original-model embeddings {tuple(neutral_orig.shape)} "
            "differ in shape: the frozen copy must be the same encoder with the same pooling"
        )
    per_tuple = torch.linalg.vector_norm(neutral - neutral_orig.detach(), dim=-1)
    return _reduce(per_tuple, reduction)


def _reduce(x: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return x.mean()
    if reduction == "sum":
        return x.sum()
    if reduction == "none":
        return x
    raise FairmtError(f"unknown reduction {reduction!r}; choose 'mean', 'sum' or 'none'")


@dataclass
class CCDLossOutput:
    """The total CCD loss and its two terms (all scalar tensors; ``bias`` and ``rep`` carry gradients)."""

    loss: torch.Tensor
    bias: torch.Tensor
    rep: torch.Tensor


def ccd_loss(
    neutral: torch.Tensor,
    groups: torch.Tensor | Sequence[torch.Tensor],
    neutral_orig: torch.Tensor,
    rho: float,
    beta: float = 1.0,
) -> CCDLossOutput:
    """L_all = L_bias + β·L_rep (CCD paper, Eq. 4), batch means. See the module docstring for the formulas."""
    bias = ccd_bias_loss(neutral, groups, rho)
    rep = ccd_rep_loss(neutral, neutral_orig)
    return CCDLossOutput(loss=bias + beta * rep, bias=bias, rep=rep)


def tuple_distances(neutral: torch.Tensor, groups: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
    """‖f(S^{a_i}) - f(S^n)‖ for every tuple and group: ``(B, G)``."""
    g = _stack_groups(groups, neutral)
    return torch.linalg.vector_norm(g - neutral[:, None, :], dim=-1)


def estimate_rho(distances: torch.Tensor, estimator: RhoEstimator = "variance") -> float:
    """ρ from the original model's group-to-neutral distances over the training set.

    ``"variance"`` (reading of §3.3's words: "the variance of the distance over the training dataset") returns the
    sample variance (ddof=1) of the distances, ``"std"`` (reading of App. A.5's Gaussian kernel: the bandwidth in
    distance units) their standard deviation, ``"median"`` (fairmt's heuristic, in neither) their median. See the
    module docstring for when each one fits.
    """
    x = distances.detach().flatten().double()
    if x.numel() < 2:
        raise FairmtError(f"estimating rho needs at least two distances, got {x.numel()}: give more training tuples")
    if estimator == "variance":
        value = float(x.var(unbiased=True))
    elif estimator == "std":
        value = float(x.std(unbiased=True))
    elif estimator == "median":
        value = float(x.median())
    else:
        raise FairmtError(f"unknown rho estimator {estimator!r}; choose one of {RHO_ESTIMATORS}")
    if not value > 0:
        raise FairmtError(
            f"the original model's group-to-neutral distances give rho = {value} ({estimator}), "
            "so rho cannot be estimated: "
            "check that the tuples' group texts differ from the neutral texts, or set rho explicitly"
        )
    return value


class CCDLoss(torch.nn.Module):
    """:func:`ccd_loss` as a module with fixed ρ and β (sentence-transformers style).

    Example::

        >>> loss_fn = CCDLoss(rho=0.1, beta=1.0)
        >>> out = loss_fn(f_neutral, torch.stack([f_male, f_female], 1), f_orig_neutral)
    """

    def __init__(self, rho: float, beta: float = 1.0):
        super().__init__()
        if rho <= 0:
            raise FairmtError(f"rho must be positive, got {rho}")
        self.rho = float(rho)
        self.beta = float(beta)

    def forward(self, neutral, groups, neutral_orig) -> CCDLossOutput:  # noqa: D102 - see class docstring
        return ccd_loss(neutral, groups, neutral_orig, rho=self.rho, beta=self.beta)
