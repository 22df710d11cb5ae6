"""DPCE losses: Kaneko & Bollegala (2021), "Debiasing Pre-trained Contextualised Embeddings" (EACL 2021), the
baseline "DPCE" of the CCD paper (Section 4, "Backbone and Baseline Methods"; Tables 2-6).

Word lists: attribute words V_a, one list per protected group (male, female), and stereotype words V_t
(``dpce_{male,female,stereotype}.txt`` in the data folder). Sentences of a corpus that hold a word of V_a form Ω(a),
those that hold a stereotype word form Ω(t). With E_i(w, x; θ) the contextual embedding of word w in sentence x at
layer i of an encoder with parameters θ (θ_e trained, θ_pre the frozen original):

    v_i(a)  = mean over the occurrences of group a's words in Ω(a) of E_i(w, x; θ_pre)       (attribute vectors)
    L_orth  = Σ_{t∈V_t} Σ_{x∈Ω(t)} Σ_{a} Σ_{i∈layers} ( v_i(a)ᵀ E_i(t, x; θ_e) )²                  (paper Eq. 2)
    L_reg   = Σ_{x∈Ω(a)} Σ_{w∈x} Σ_{i∈all layers} ‖ E_i(w, x; θ_e) - E_i(w, x; θ_pre) ‖²             (paper Eq. 3)
    L       = α · L_orth + β · L_reg            (α = 0.2, β = 0.8: the authors' released training script)

Here each Σ over embeddings is a **mean** (over debiased embeddings × layers for L_orth, over the attribute
sentences' tokens × layers for L_reg), so the value does not grow with the batch; Σ over the groups a stays a sum.
The released code (``context-debias``, and ADEPT's re-implementation) differs in two reductions, which we do not
copy: it squares the *batch mean* of the inner products instead of averaging the squares, and its regulariser is
an MSE (mean over the hidden dimension too) instead of a squared L2 norm; both change only the effective α/β scale.

Variants (the paper's Section 3 / Table 1): *token* level debiases the stereotype word's own embedding, *sentence*
level every token of a sentence in Ω(t); the layers are *all* (embedding output + every layer), *first* (the
embedding output, ``hidden_states[0]``, as the released code indexes it) or *last*. The CCD paper gives no layer or
pooling for its DPCE rows; it says it uses the original hyperparameters (Section 4, "Hyperparameters"), i.e. the
released default: token level, all layers. The regulariser always uses all layers (Eq. 3).

This module works on gathered vectors; :class:`fairmt.trainers.dpce.DPCETrainer` turns hidden states into them.

Example::

    >>> attr = torch.randn(2, 3, 16)          # (groups, layers, dim): v_i(male), v_i(female)
    >>> target = torch.randn(10, 3, 16)       # 10 stereotype-word embeddings at the same 3 layers
    >>> h, h0 = torch.randn(40, 3, 16), torch.randn(40, 3, 16)   # attribute sentences' tokens, trained/original
    >>> out = dpce_loss(target, attr, h, h0, alpha=0.2, beta=0.8)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairmt.errors import FairmtError

DEBIAS_LAYERS = ("all", "first", "last")
LOSS_TARGETS = ("token", "sentence")


def select_layers(states: torch.Tensor, debias_layer: str) -> torch.Tensor:
    """Pick the debiased layers of ``(..., L, d)`` states: ``all`` (every layer, embedding output first),
    ``first`` (index 0, the embedding output) or ``last``; the layer axis is kept."""
    if debias_layer == "all":
        return states
    if debias_layer == "first":
        return states[..., :1, :]
    if debias_layer == "last":
        return states[..., -1:, :]
    raise FairmtError(f"unknown debias_layer {debias_layer!r}; choose one of {DEBIAS_LAYERS}")


def _check(target: torch.Tensor, attributes: torch.Tensor) -> None:
    if attributes.dim() != 3:
        raise FairmtError(f"attribute vectors must have shape (groups, layers, dim), got {tuple(attributes.shape)}")
    if target.dim() != 3 or target.shape[1:] != attributes.shape[1:]:
        raise FairmtError(
            f"target embeddings must have shape (n, layers={attributes.shape[1]}, dim={attributes.shape[2]}) like the "
            f"attribute vectors, got {tuple(target.shape)}"
        )


def dpce_orthogonality_loss(target: torch.Tensor, attributes: torch.Tensor) -> torch.Tensor:
    """L_orth: mean over the n debiased embeddings and the layers of Σ_a (v_i(a)ᵀ E_i)².

    Args:
        target: ``(n, L, d)`` embeddings E_i(t, x; θ_e) of the trained encoder (n may be 0: the loss is 0).
        attributes: ``(G, L, d)`` attribute vectors v_i(a) of the original encoder (no gradient).
    """
    _check(target, attributes)
    if target.shape[0] == 0:
        return target.sum() * 0.0
    ip = torch.einsum("nld,gld->nlg", target, attributes.detach().to(target.dtype))
    return ip.pow(2).sum(-1).mean()


def dpce_regulariser(states: torch.Tensor, states_orig: torch.Tensor) -> torch.Tensor:
    """L_reg: mean over tokens and layers of ‖E_i(w, x; θ_e) - E_i(w, x; θ_pre)‖² (squared L2 over the hidden dim).

    ``states`` / ``states_orig``: ``(m, L, d)`` token states of the attribute sentences (padding removed); m may be
    0. ``states_orig`` gets no gradient.
    """
    if states.shape != states_orig.shape:
        raise FairmtError(
            f"trained {tuple(states.shape)} and original {tuple(states_orig.shape)} token states differ in shape"
        )
    if states.shape[0] == 0:
        return states.sum() * 0.0
    return (states - states_orig.detach().to(states.dtype)).pow(2).sum(-1).mean()


@dataclass
class DPCELossOutput:
    """Total loss and its terms (scalar tensors)."""

    loss: torch.Tensor
    orth: torch.Tensor
    reg: torch.Tensor


def dpce_loss(
    target: torch.Tensor,
    attributes: torch.Tensor,
    states: torch.Tensor,
    states_orig: torch.Tensor,
    alpha: float = 0.2,
    beta: float = 0.8,
) -> DPCELossOutput:
    """α·L_orth + β·L_reg (see the module docstring)."""
    orth = dpce_orthogonality_loss(target, attributes)
    reg = dpce_regulariser(states, states_orig)
    return DPCELossOutput(loss=alpha * orth + beta * reg, orth=orth, reg=reg)
