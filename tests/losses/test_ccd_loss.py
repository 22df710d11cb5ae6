"""CCD losses against slow loop-based references written straight from the paper's Eqs. 2-4."""

import math

import pytest
import torch

from fairmt.errors import FairmtError
from fairmt.losses import (
    CCDLoss,
    ccd_bias_loss,
    ccd_kernel,
    ccd_loss,
    ccd_rep_loss,
    estimate_rho,
    tuple_distances,
)


def _ref_dist(a, b, rho):
    sq = 0.0
    for x, y in zip(a.tolist(), b.tolist()):
        sq += (x - y) ** 2
    return math.exp(-sq / (2 * rho**2))


def _ref_bias(neutral, groups, rho):
    """Eq. 2 with explicit loops, averaged over tuples."""
    total = 0.0
    for b in range(neutral.shape[0]):
        s = 0.0
        n_groups = groups.shape[1]
        for i in range(n_groups):
            for j in range(n_groups):
                if j == i:
                    continue
                s += abs(_ref_dist(groups[b, i], neutral[b], rho) - _ref_dist(groups[b, j], neutral[b], rho))
        total += s
    return total / neutral.shape[0]


def _ref_rep(neutral, orig):
    total = 0.0
    for b in range(neutral.shape[0]):
        total += math.sqrt(sum((x - y) ** 2 for x, y in zip(neutral[b].tolist(), orig[b].tolist())))
    return total / neutral.shape[0]


@pytest.mark.parametrize("n_groups", [2, 3, 5])
@pytest.mark.parametrize("rho", [0.5, 1.0, 3.0])
def test_bias_loss_matches_loop_reference(n_groups, rho):
    g = torch.Generator().manual_seed(n_groups * 10 + int(rho * 10))
    neutral = torch.randn(6, 7, generator=g, dtype=torch.float64)
    groups = neutral[:, None, :] + 0.8 * torch.randn(6, n_groups, 7, generator=g, dtype=torch.float64)
    got = ccd_bias_loss(neutral, groups, rho)
    assert got.item() == pytest.approx(_ref_bias(neutral, groups, rho), rel=1e-10, abs=1e-12)
    # a sequence of (B, d) tensors is the same as the stacked (B, G, d) tensor
    assert ccd_bias_loss(neutral, list(groups.unbind(1)), rho).item() == pytest.approx(got.item(), rel=1e-12)


def test_rep_and_total_match_reference():
    g = torch.Generator().manual_seed(3)
    neutral = torch.randn(5, 4, generator=g, dtype=torch.float64)
    orig = torch.randn(5, 4, generator=g, dtype=torch.float64)
    groups = torch.randn(5, 2, 4, generator=g, dtype=torch.float64)
    assert ccd_rep_loss(neutral, orig).item() == pytest.approx(_ref_rep(neutral, orig), rel=1e-10)
    out = ccd_loss(neutral, groups, orig, rho=1.3, beta=0.7)
    ref = _ref_bias(neutral, groups, 1.3) + 0.7 * _ref_rep(neutral, orig)
    assert out.loss.item() == pytest.approx(ref, rel=1e-10)
    assert out.bias.item() == pytest.approx(_ref_bias(neutral, groups, 1.3), rel=1e-10)
    mod = CCDLoss(rho=1.3, beta=0.7)(neutral, groups, orig)
    assert mod.loss.item() == pytest.approx(ref, rel=1e-10)


def test_kernel_values_and_two_group_identity():
    a = torch.tensor([[0.0, 0.0]])
    b = torch.tensor([[3.0, 4.0]])  # distance 5
    assert ccd_kernel(a, b, rho=5.0).item() == pytest.approx(math.exp(-0.5))
    # with two groups the ordered-pair sum is twice |d_m - d_f|
    neutral = torch.zeros(1, 2)
    groups = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
    expected = 2 * abs(math.exp(-1 / 2) - math.exp(-4 / 2))
    assert ccd_bias_loss(neutral, groups, rho=1.0).item() == pytest.approx(expected, rel=1e-6)


def test_equidistant_tuple_has_zero_bias_and_gradient_flows():
    neutral = torch.zeros(2, 3, requires_grad=True)
    # male and female at the same distance from the neutral text: CCED-fair, L_bias = 0
    groups = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0.0, 0.0, 2.0], [2.0, 0.0, 0.0]]])
    assert ccd_bias_loss(neutral, groups, rho=1.0).item() == pytest.approx(0.0, abs=1e-7)
    groups = groups.clone()
    groups[0, 0] *= 0.5
    groups.requires_grad_(True)
    orig = torch.randn(2, 3, requires_grad=True)
    out = ccd_loss(neutral, groups, orig, rho=1.0)
    out.loss.backward()
    assert groups.grad.abs().sum() > 0 and neutral.grad.abs().sum() > 0
    assert orig.grad is None  # the frozen model's embeddings are detached


def test_rep_loss_gradient_is_finite_at_zero():
    x = torch.zeros(3, 4, requires_grad=True)
    ccd_rep_loss(x, x.detach().clone()).backward()
    assert torch.isfinite(x.grad).all()


def test_estimate_rho_variance_and_std():
    neutral = torch.zeros(4, 2)
    groups = torch.tensor(
        [[[1.0, 0.0], [2.0, 0.0]], [[3.0, 0.0], [4.0, 0.0]], [[5.0, 0.0], [6.0, 0.0]], [[7.0, 0.0], [8.0, 0.0]]]
    )
    dist = tuple_distances(neutral, groups)
    assert dist.tolist() == [[1, 2], [3, 4], [5, 6], [7, 8]]
    values = list(range(1, 9))
    mean = sum(values) / 8
    var = sum((v - mean) ** 2 for v in values) / 7
    assert estimate_rho(dist, "variance") == pytest.approx(var)
    assert estimate_rho(dist, "std") == pytest.approx(math.sqrt(var))
    assert estimate_rho(dist, "median") == pytest.approx(4.0)  # torch's lower median of 1..8


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(FairmtError, match="at least two sensitive groups"):
        ccd_bias_loss(torch.zeros(2, 3), torch.zeros(2, 1, 3), rho=1.0)
    with pytest.raises(FairmtError, match="shape"):
        ccd_bias_loss(torch.zeros(2, 3), torch.zeros(3, 2, 3), rho=1.0)
    with pytest.raises(FairmtError, match="positive"):
        ccd_kernel(torch.zeros(1, 2), torch.zeros(1, 2), rho=0.0)
    with pytest.raises(FairmtError, match="cannot be estimated"):
        estimate_rho(torch.ones(5), "std")
    with pytest.raises(FairmtError, match="estimator"):
        estimate_rho(torch.arange(5.0), "mad")
