"""CS-InfoNCE and FCL against slow loop references (the sampling losses: tests/test_sampling_losses.py)."""

import math

import pytest
import torch

from fairmt.errors import FairmtError
from fairmt.losses import (
    cs_infonce_loss,
    fcl_loss,
    supcon_loss,
)


def _cos(a, b):
    return float(torch.dot(a, b) / (a.norm() * b.norm()))


# ---------------------------------------------------------------- CS-InfoNCE


def ref_cs_infonce(feats, labels, groups, tau, weighting="uniform"):
    n, v, _ = feats.shape
    views = [(j, k) for k in range(v) for j in range(n)]  # view-major order
    losses, weights = [], []
    for ai, (j, k) in enumerate(views):
        z = feats[j, k]
        denom = 0.0
        cell = 0
        for bi, (j2, k2) in enumerate(views):
            if bi == ai:
                continue
            if labels[j2] == labels[j] and groups[j2] == groups[j]:
                denom += math.exp(_cos(z, feats[j2, k2]) / tau)
                cell += 1
        terms = []
        for k2 in range(v):
            if k2 != k:
                terms.append(-(_cos(z, feats[j, k2]) / tau - math.log(denom)))
        losses.append(sum(terms) / len(terms))
        weights.append(1.0 / cell)
    if weighting == "uniform":
        return sum(losses) / len(losses)
    return sum(lo * w for lo, w in zip(losses, weights)) / len(losses)


@pytest.mark.parametrize("v", [2, 3])
@pytest.mark.parametrize("weighting", ["uniform", "cell_size"])
def test_cs_infonce_matches_loop_reference(v, weighting):
    g = torch.Generator().manual_seed(0)
    n = 10
    feats = torch.randn(n, v, 6, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 2, (n,), generator=g)
    groups = torch.randint(0, 2, (n,), generator=g)
    got = cs_infonce_loss(feats, labels, groups, temperature=0.3, anchor_weighting=weighting)
    want = ref_cs_infonce(feats, labels, groups, 0.3, weighting)
    assert float(got) == pytest.approx(want, rel=1e-5)


def test_cs_infonce_denominator_ignores_other_cells():
    """Moving a sample of another (label, group) cell must not change the loss; moving a same-cell one must."""
    g = torch.Generator().manual_seed(1)
    feats = torch.randn(4, 2, 5, generator=g)
    labels = torch.tensor([0, 0, 1, 0])
    groups = torch.tensor([0, 0, 0, 1])
    base = cs_infonce_loss(feats, labels, groups)
    moved = feats.clone()
    moved[2] = torch.randn(2, 5, generator=g)  # label 1: another cell for every other anchor
    moved[3] = torch.randn(2, 5, generator=g)  # group 1: another cell too
    # samples 2 and 3 are alone in their cells: their own loss is 0 whatever their features
    assert float(cs_infonce_loss(moved, labels, groups)) == pytest.approx(float(base), rel=1e-6)
    moved[1] = torch.randn(2, 5, generator=g)
    assert float(cs_infonce_loss(moved, labels, groups)) != pytest.approx(float(base), rel=1e-6)


def test_cs_infonce_needs_two_views():
    with pytest.raises(FairmtError, match="two views"):
        cs_infonce_loss(torch.randn(4, 8), torch.zeros(4), torch.zeros(4))
    with pytest.raises(FairmtError, match="labels has 3"):
        cs_infonce_loss(torch.randn(4, 2, 8), torch.zeros(3), torch.zeros(4))


def test_cs_infonce_gradient_flows():
    feats = torch.randn(6, 2, 4, requires_grad=True)
    cs_infonce_loss(feats, torch.tensor([0, 0, 0, 1, 1, 1]), torch.tensor([0, 0, 1, 1, 0, 0])).backward()
    assert feats.grad is not None and feats.grad.abs().sum() > 0


# ---------------------------------------------------------------- FCL


def ref_supcon_single(h, labels, tau, normalize=True):
    n = h.shape[0]
    total, count = 0.0, 0
    for i in range(n):
        sim = [
            (_cos(h[i], h[q]) if normalize else float(torch.dot(h[i], h[q]))) / tau for q in range(n)
        ]
        denom = sum(math.exp(sim[q]) for q in range(n) if q != i)
        pos = [p for p in range(n) if p != i and labels[p] == labels[i]]
        if not pos:
            continue  # documented: anchors without positives are left out
        total += -sum(sim[p] - math.log(denom) for p in pos) / len(pos)
        count += 1
    return total / count if count else 0.0


@pytest.mark.parametrize("normalize", [True, False])
def test_fcl_matches_loop_reference(normalize):
    g = torch.Generator().manual_seed(2)
    h = torch.randn(12, 7, generator=g, dtype=torch.float64)
    if not normalize:
        h = h * 0.3
    y = torch.randint(0, 3, (12,), generator=g)
    a = torch.randint(0, 2, (12,), generator=g)
    terms = fcl_loss(h, y, a, temperature=0.5, group_temperature=0.7, normalize=normalize)
    scl = ref_supcon_single(h, y, 0.5, normalize)
    fcl = ref_supcon_single(h, a, 0.7, normalize)
    assert float(terms.scl) == pytest.approx(scl, rel=1e-6)
    assert float(terms.fcl) == pytest.approx(fcl, rel=1e-6)
    assert float(terms.loss) == pytest.approx(scl - fcl, abs=1e-5)  # the core computes in float32


def test_fcl_scl_equals_supcon_single_view():
    h = torch.randn(9, 5)
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2])
    assert float(fcl_loss(h, y, torch.zeros(9, dtype=torch.long)).scl) == pytest.approx(
        float(supcon_loss(h, y)), rel=1e-6
    )


def test_fcl_is_scale_invariant_only_when_normalised():
    h = torch.randn(8, 4)
    y = torch.tensor([0, 0, 1, 1, 0, 0, 1, 1])
    a = torch.tensor([0, 1, 0, 1, 1, 0, 1, 0])
    assert float(fcl_loss(h * 10, y, a).loss) == pytest.approx(float(fcl_loss(h, y, a).loss), rel=1e-5)
    assert float(fcl_loss(h * 10, y, a, normalize=False).loss) != pytest.approx(
        float(fcl_loss(h, y, a, normalize=False).loss), rel=1e-3
    )


def test_fcl_no_positive_anchor_behaviour():
    """Labels unique in the batch give anchors without positives: ignored by default, an error on request."""
    h = torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    y = torch.tensor([0, 1, 2, 3])  # no anchor has a same-label partner
    a = torch.tensor([0, 0, 1, 1])
    terms = fcl_loss(h, y, a)
    assert terms.scl.item() == 0.0
    assert terms.fcl.item() == pytest.approx(ref_supcon_single(h.detach(), a, 0.1), rel=1e-9)  # float64 stays float64: tight
    terms.loss.backward()  # still attached to the graph
    with pytest.raises(FairmtError, match="no positive"):
        fcl_loss(h, y, a, on_no_positive="error")


def test_float64_inputs_stay_float64_and_half_inputs_compute_in_float32():
    import torch

    from fairmt.losses.contrastive import masked_contrastive_loss

    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 8, generator=g, dtype=torch.float64)
    pos = torch.eye(6, dtype=torch.bool).roll(1, 1)
    neg = ~torch.eye(6, dtype=torch.bool) & ~pos
    assert masked_contrastive_loss(x, x, pos, neg).dtype == torch.float64
    low = masked_contrastive_loss(x.bfloat16(), x.bfloat16(), pos, neg)
    assert low.dtype == torch.float32
