"""CSCL contrasts the raw features at τ = 2, as the paper ("the inner (dot) product") and its release do: fairmt's
L_sup and L_CS-InfoNCE with ``normalize=False`` against a loop transcription of the release's ``SupConLoss`` and
``ConSupConLoss`` (JFChi/CSCL4FTC, models/contrastive_losses.py, contrast_mode "all", temperature = base temperature)
on unnormalised tanh features, and the dynamic range that cosine similarity at τ = 2 would lose."""

from __future__ import annotations

import math

import pytest
import torch

from fairmt.losses.contrastive import supcon_loss
from fairmt.losses.fair_contrastive import cs_infonce_loss

TAU = 2.0


def _batch(seed: int = 0, n: int = 12, d: int = 768):
    """tanh(W·[CLS])-like features: every coordinate in (−1, 1), norms around 20 (the release's ≤ 28)."""
    g = torch.Generator().manual_seed(seed)
    feats = torch.tanh(2.0 * torch.randn(n, 2, d, generator=g, dtype=torch.float64))
    labels = torch.tensor([0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 2, 2])[:n]
    groups = torch.tensor([0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 0])[:n]
    return feats, labels, groups


def _release_loop(feats, labels, groups=None):
    """The release's loss, one anchor at a time: views in view-major order (``torch.cat(torch.unbind(f, 1))``); the
    logits z_i·z_j/τ; SupConLoss: positives = other views with the same label, denominator = every other view;
    ConSupConLoss (``groups`` given): positives = the other views of the same example, denominator = the other views
    with the same label and group. Loss = −mean over anchors of the mean log-probability of the positives."""
    n, v, _ = feats.shape
    z = [feats[i, k] for k in range(v) for i in range(n)]
    ex = [i for k in range(v) for i in range(n)]
    total = 0.0
    for a in range(n * v):

        def logit(j, a=a):
            return float(z[a] @ z[j]) / TAU

        if groups is None:
            pos = [j for j in range(n * v) if j != a and labels[ex[j]] == labels[ex[a]]]
            den = [j for j in range(n * v) if j != a]
        else:
            pos = [j for j in range(n * v) if j != a and ex[j] == ex[a]]
            den = [
                j for j in range(n * v) if j != a and labels[ex[j]] == labels[ex[a]] and groups[ex[j]] == groups[ex[a]]
            ]
        log_den = math.log(sum(math.exp(logit(j) - 0.0) for j in den))
        total += -sum(logit(p) - log_den for p in pos) / len(pos)
    return total / (n * v)


@pytest.mark.parametrize("seed", [0, 1])
def test_l_sup_matches_the_release_on_raw_tanh_features_at_tau_2(seed):
    feats, labels, _ = _batch(seed)
    got = supcon_loss(feats, labels, TAU, normalize=False).item()
    assert got == pytest.approx(_release_loop(feats, labels), rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_l_cs_matches_the_release_on_raw_tanh_features_at_tau_2(seed):
    feats, labels, groups = _batch(seed)
    got = cs_infonce_loss(feats, labels, groups, TAU, normalize=False, anchor_weighting="uniform").item()
    assert got == pytest.approx(_release_loop(feats, labels, groups), rel=1e-9)


def test_the_dot_product_keeps_the_release_s_dynamic_range():
    """On the same batch: raw features at τ 2 give logits spread over tens of units (as the release's); cosines at τ 2
    stay in [−0.5, 0.5]. Two identical views: L_CS is ≈ 0 with the dot product, far from it with cosines."""
    feats, labels, groups = _batch(0)
    flat = feats.transpose(0, 1).reshape(-1, feats.shape[-1])
    raw = flat @ flat.T / TAU
    unit = torch.nn.functional.normalize(flat, dim=-1)
    cos = unit @ unit.T / TAU
    assert raw.max() - raw.min() > 100 and flat.norm(dim=-1).max() < 28
    assert cos.max() <= 0.5 + 1e-9 and cos.min() >= -0.5 - 1e-9
    same = torch.stack([feats[:, 0], feats[:, 0]], dim=1)
    assert cs_infonce_loss(same, labels, groups, TAU, normalize=False).item() < 1e-6
    assert cs_infonce_loss(same, labels, groups, TAU, normalize=True).item() > 0.3
    # L_sup: with cosines at τ 2 the softmax over the 23 other views stays near uniform (log 23 whatever the batch);
    # the dot product moves it far from there, as the release's loss does
    uniform = math.log(2 * len(labels) - 1)
    for s in range(3):
        batch = _batch(s)[0]
        assert abs(supcon_loss(batch, labels, TAU, normalize=True).item() - uniform) < 0.01
        assert abs(supcon_loss(batch, labels, TAU, normalize=False).item() - uniform) > 10


def test_cscl_config_defaults_to_the_dot_product():
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig

    for objective, normalize in (("cscl", False), ("cscl_pretrain", False), ("fcl", True)):
        args = FairContrastiveConfig(output_dir="unused", objective=objective, report_to=[])
        assert args.normalize is normalize, objective
