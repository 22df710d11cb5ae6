"""ADEPT-F losses: Yang, Yu, Fung, Li & Ji (2023), "ADEPT: A DEbiasing PrompT Framework" (AAAI 2023), the
fine-tuning variant that the CCD paper compares with as "ADEPT-F" (CCD paper Section 4, "Backbone and Baseline
Methods"; Tables 2-6; its related work, Section 2, calls it the "distance-based method" that "constructs embeddings
for sensitive groups and equalizes distances to text embeddings across these groups").

Word lists: attribute words per group (``adept_{male,female}.txt``) and neutral words (``adept_neutral.txt``).
With e(w, x; θ) the contextual embedding of word w in sentence x (the hidden states of the chosen layers, flattened
into one vector: all layers by default, as the released script), θ trained and θ_orig frozen:

    p_a        = mean of e(w, x; θ_orig) over the occurrences of group a's words in their sentences   (prototypes)
    P_a(j)     = exp(-‖p_a - n_j‖² / 2ρ²) / Σ_k exp(-‖p_a - n_k‖² / 2ρ²)     over the neutral embeddings n_j of a batch
    L_bias     = mean over pairs a < b of JS(P_a ‖ P_b)                          (JS divergence, in bits: log base 2)
    L_rep      = mean over the attribute sentences' tokens t and layers i of KL( σ(h_i^orig(t)) ‖ σ(h_i(t)) )
    L          = α · L_bias + β · L_rep     (α = 0.3, β = 0.7, ρ = 15: the authors' released script)

P_a is the SNE-style (Hinton & Roweis 2002) neighbourhood distribution of the prototype of group a over the neutral
words; equal distributions for every group make the neutral words equally close to every group — the CCD paper's
Eq. 12 uses the same Gaussian conditional probability, and its CCED definition follows Yang et al. (2023).

Assumptions (stated because neither the CCD paper nor this module's sources give them unambiguously):

* The representation term is a KL divergence between the original and the debiased model's hidden states (the
  ADEPT paper's wording). A KL needs distributions; the released code applies p·log₂(p/q) to raw hidden states,
  which is undefined for their negative entries. Here each token's state at each layer is turned into a
  distribution over the hidden dimension with a softmax (σ above), and the KL is averaged over tokens and layers.
  ``representation="mse"`` (squared L2, as DPCE's regulariser) is the alternative.
* The released code divides each JS by the number of neutral embeddings in the batch; this module returns the JS
  itself (a scale change absorbed by α).
* ρ (the released script's ``perplexity`` argument, which is used directly as the kernel bandwidth) is 15 for
  BERT-large's 25 concatenated layers; for other encoders the distances differ by orders of magnitude, so the
  trainer can estimate ρ as the median prototype-to-neutral distance of the original model (``rho=None``).
* Token level (the released default ``loss_target=token``) embeds a word as the mean of its sub-word tokens;
  sentence level uses the mean over the sentence's tokens.

Example::

    >>> protos = torch.randn(2, 48)              # male, female prototypes (layers × dim flattened)
    >>> neutral = torch.randn(16, 48, requires_grad=True)
    >>> out = adept_loss(neutral, protos, torch.randn(30, 3, 16), torch.randn(30, 3, 16), rho=5.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from fairmt.errors import FairmtError

REPRESENTATION_LOSSES = ("kl", "mse")
_LN2 = math.log(2.0)


def prototype_distributions(neutral: torch.Tensor, prototypes: torch.Tensor, rho: float) -> torch.Tensor:
    """log P_a(j): ``(G, n)`` log-probabilities of each prototype's Gaussian neighbourhood over the n neutral
    embeddings (softmax over j of -‖p_a - n_j‖²/2ρ²)."""
    if not rho > 0:
        raise FairmtError(f"rho must be positive, got {rho}")
    if neutral.dim() != 2 or prototypes.dim() != 2 or neutral.shape[1] != prototypes.shape[1]:
        raise FairmtError(
            f"neutral embeddings (n, D) and prototypes (groups, D) must share D, got {tuple(neutral.shape)} and "
            f"{tuple(prototypes.shape)}"
        )
    protos = prototypes.detach().to(neutral.dtype)
    sq = (protos[:, None, :] - neutral[None, :, :]).pow(2).sum(-1)  # (G, n)
    return torch.log_softmax(-sq / (2.0 * rho * rho), dim=1)


def js_divergence(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """JS(P ‖ Q) in bits over the last dimension, from log-probabilities (natural log)."""
    log_m = torch.logsumexp(torch.stack([log_p, log_q]), dim=0) - _LN2
    kl_pm = (log_p.exp() * (log_p - log_m)).sum(-1)
    kl_qm = (log_q.exp() * (log_q - log_m)).sum(-1)
    return 0.5 * (kl_pm + kl_qm) / _LN2


def adept_bias_loss(neutral: torch.Tensor, prototypes: torch.Tensor, rho: float) -> torch.Tensor:
    """L_bias: mean over group pairs a < b of JS(P_a ‖ P_b) (0 when the batch holds fewer than 2 neutral words)."""
    if prototypes.dim() != 2 or prototypes.shape[0] < 2:
        raise FairmtError(f"ADEPT needs at least two attribute prototypes, got shape {tuple(prototypes.shape)}")
    if neutral.shape[0] < 2:
        return neutral.sum() * 0.0  # one neutral word: every distribution is [1]
    log_p = prototype_distributions(neutral, prototypes, rho)
    g = log_p.shape[0]
    pairs = [js_divergence(log_p[a], log_p[b]) for a in range(g) for b in range(a + 1, g)]
    return torch.stack(pairs).mean()


def adept_representation_loss(states: torch.Tensor, states_orig: torch.Tensor, kind: str = "kl") -> torch.Tensor:
    """L_rep over ``(m, L, d)`` token states of the attribute sentences (trained / original, padding removed).

    ``"kl"``: mean over tokens and layers of KL(softmax(h_orig) ‖ softmax(h)) over the hidden dimension, in bits;
    ``"mse"``: mean of ‖h - h_orig‖². ``states_orig`` gets no gradient; m = 0 gives 0.
    """
    if states.shape != states_orig.shape:
        raise FairmtError(
            f"trained {tuple(states.shape)} and original {tuple(states_orig.shape)} token states differ in shape"
        )
    if kind not in REPRESENTATION_LOSSES:
        raise FairmtError(f"unknown representation loss {kind!r}; choose one of {REPRESENTATION_LOSSES}")
    if states.shape[0] == 0:
        return states.sum() * 0.0
    orig = states_orig.detach().to(states.dtype)
    if kind == "mse":
        return (states - orig).pow(2).sum(-1).mean()
    log_p = F.log_softmax(orig, dim=-1)
    log_q = F.log_softmax(states, dim=-1)
    return ((log_p.exp() * (log_p - log_q)).sum(-1) / _LN2).mean()


@dataclass
class ADEPTLossOutput:
    """Total loss and its terms (scalar tensors)."""

    loss: torch.Tensor
    bias: torch.Tensor
    rep: torch.Tensor


def adept_loss(
    neutral: torch.Tensor,
    prototypes: torch.Tensor,
    states: torch.Tensor,
    states_orig: torch.Tensor,
    rho: float = 15.0,
    alpha: float = 0.3,
    beta: float = 0.7,
    representation: str = "kl",
) -> ADEPTLossOutput:
    """α·L_bias + β·L_rep (see the module docstring)."""
    bias = adept_bias_loss(neutral, prototypes, rho)
    rep = adept_representation_loss(states, states_orig, representation)
    return ADEPTLossOutput(loss=alpha * bias + beta * rep, bias=bias, rep=rep)
