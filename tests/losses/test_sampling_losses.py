"""SimCLR's NT-Xent, Algorithm 1's pair NT-Xent and its negative sampler against slow, obviously-correct references
(loops in float64) and against counting over many draws."""

import math

import pytest
import torch

from fairmt.errors import FairmtError
from fairmt.losses import (
    FairNegativeSampler,
    cluster_weights,
    fair_pair_nt_xent,
    fairness_sampling_probs,
    nt_xent_loss,
    sample_fair_negatives,
)


def _cos(a, b):
    return float(a @ b / (a.norm() * b.norm()))


def _binomial_z(count, n, p):
    return (count - n * p) / math.sqrt(max(n * p * (1 - p), 1e-12))


# ---------------------------------------------------------------- SimCLR NT-Xent (the random-sampling baseline)
def ref_nt_xent(z1, z2, tau, left_out=None):
    """Chen et al. 2020, Eq. 1, literally: views 0..N-1 then N..2N-1, positive = the other view, denominator = every
    k != i of the 2N views (but view ``left_out``, where it is a negative)."""
    z = torch.cat([z1, z2])
    n2 = z.shape[0]
    n = n2 // 2
    total = 0.0
    for i in range(n2):
        j = (i + n) % n2
        num = math.exp(_cos(z[i], z[j]) / tau)
        den = sum(math.exp(_cos(z[i], z[k]) / tau) for k in range(n2) if k != i and (k != left_out or k == j))
        total += -math.log(num / den)
    return total / n2


@pytest.mark.parametrize("n", [2, 7])
def test_nt_xent_matches_loop_reference(n):
    g = torch.Generator().manual_seed(n)
    z1, z2 = torch.randn(n, 6, generator=g, dtype=torch.float64), torch.randn(n, 6, generator=g, dtype=torch.float64)
    assert float(nt_xent_loss(z1, z2, 0.5)) == pytest.approx(ref_nt_xent(z1, z2, 0.5), rel=1e-10)
    assert float(nt_xent_loss(z1, z2, 0.1)) == pytest.approx(ref_nt_xent(z1, z2, 0.1), rel=1e-10)


def test_nt_xent_uses_every_in_batch_candidate():
    """Random sampling = all 2N-2 other views are negatives: the loss equals the reference with every candidate in
    each denominator and differs from the reference with any one candidate left out."""
    g = torch.Generator().manual_seed(0)
    n = 6
    z1 = torch.randn(n, 5, generator=g, dtype=torch.float64)
    z2 = torch.randn(n, 5, generator=g, dtype=torch.float64)
    full = float(nt_xent_loss(z1, z2, 0.5))
    assert full == pytest.approx(ref_nt_xent(z1, z2, 0.5), rel=1e-10)
    for left_out in range(2 * n):
        assert abs(ref_nt_xent(z1, z2, 0.5, left_out) - full) > 1e-4


def test_nt_xent_bad_input():
    with pytest.raises(FairmtError, match="at least 2"):
        nt_xent_loss(torch.randn(1, 4), torch.randn(1, 4))
    with pytest.raises(FairmtError, match="views"):
        nt_xent_loss(torch.randn(3, 4), torch.randn(2, 4))


# ---------------------------------------------------------------- NT-Xent on Algorithm 1's pairs
def ref_pair_nt_xent(a, p, negs, tau):
    total = 0.0
    for i in range(a.shape[0]):
        sp = math.exp(_cos(a[i], p[i]) / tau)
        sn = sum(math.exp(_cos(a[i], negs[i, j]) / tau) for j in range(negs.shape[1]))
        total += -math.log(sp / (sp + sn))
    return total / a.shape[0]


@pytest.mark.parametrize("m", [1, 3])
def test_fair_pair_nt_xent_matches_loop_reference(m):
    g = torch.Generator().manual_seed(10 + m)
    a, p = torch.randn(9, 4, generator=g, dtype=torch.float64), torch.randn(9, 4, generator=g, dtype=torch.float64)
    negs = torch.randn(9, m, 4, generator=g, dtype=torch.float64)
    assert float(fair_pair_nt_xent(a, p, negs, 0.5)) == pytest.approx(ref_pair_nt_xent(a, p, negs, 0.5), rel=1e-10)
    if m == 1:  # (N, d) negatives mean one per anchor
        assert float(fair_pair_nt_xent(a, p, negs[:, 0], 0.5)) == pytest.approx(ref_pair_nt_xent(a, p, negs, 0.5))


def test_fair_pair_nt_xent_gradient_reaches_all_three():
    g = torch.Generator().manual_seed(1)
    a, p, n = (torch.randn(5, 3, generator=g, requires_grad=True) for _ in range(3))
    fair_pair_nt_xent(a, p, n[:, None]).backward()
    for t in (a, p, n):
        assert t.grad is not None and bool((t.grad.abs().sum(1) > 0).all())
    with pytest.raises(FairmtError, match="negatives"):
        fair_pair_nt_xent(a, p, torch.randn(4, 1, 3))


# ---------------------------------------------------------------- the cluster weights and the negative distribution
def test_cluster_weights_formula():
    w = cluster_weights(torch.tensor([0.5, 0.3, 0.15, 0.05]), epsilon=0.1)
    assert w.tolist() == pytest.approx([0.1, 0.1, 0.1 + 0.1, 0.1 + 0.2])
    p = torch.tensor([23371, 98267, 46026, 55984], dtype=torch.float64) / 223648
    # the paper's CheXpert baseline clusters (Table 3): clusters 0 (10.4 %) and 2 (20.6 %) are under-represented
    assert cluster_weights(p).tolist() == pytest.approx(
        [0.25 - 23371 / 223648 + 0.1, 0.1, 0.25 - 46026 / 223648 + 0.1, 0.1]
    )


def ref_probs(z, anchor_c, bank, bank_c, p, eps):
    C = len(p)
    w = [max(0.0, 1.0 / C - p[c]) + eps for c in range(C)]
    out = torch.zeros(len(z), len(bank), dtype=torch.float64)
    present = {int(c) for c in bank_c}
    for i in range(len(z)):
        others = sorted(present - {int(anchor_c[i])})
        tot = sum(w[c] for c in others)
        for c in others:
            members = [k for k in range(len(bank)) if bank_c[k] == c]
            d = [float((z[i] - bank[k]).norm()) for k in members]
            for k, dk in zip(members, d):
                out[i, k] = (w[c] / tot) * (dk / sum(d) if sum(d) > 0 else 1 / len(members))
    return out


def test_sampling_probs_match_loop_reference_in_batch_and_over_a_bank():
    g = torch.Generator().manual_seed(3)
    z = torch.randn(14, 5, generator=g, dtype=torch.float64)
    clusters = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 0])
    p = [0.55, 0.25, 0.15, 0.05]
    got = fairness_sampling_probs(z, clusters, torch.tensor(p), epsilon=0.1)
    assert torch.allclose(got, ref_probs(z, clusters, z, clusters, p, 0.1), atol=1e-12)
    assert torch.allclose(got.sum(1), torch.ones(14, dtype=torch.float64))
    bank = torch.randn(30, 5, generator=g, dtype=torch.float64)
    bank_c = torch.randint(0, 3, (30,), generator=g)  # cluster 3 is empty in the bank: never drawn
    got = fairness_sampling_probs(z, clusters, torch.tensor(p), 0.1, bank=bank, bank_clusters=bank_c)
    assert torch.allclose(got, ref_probs(z, clusters, bank, bank_c, p, 0.1), atol=1e-12)


def _setup(seed=5, n=60, d=4, normalise=True):
    g = torch.Generator().manual_seed(seed)
    bank = torch.randn(n, d, generator=g, dtype=torch.float64) * 2
    if normalise:
        bank = torch.nn.functional.normalize(bank, dim=-1)
    c = torch.tensor([0] * 33 + [1] * 15 + [2] * 9 + [3] * 3)  # 55 %, 25 %, 15 %, 5 %
    p = torch.bincount(c, minlength=4).double() / n
    return bank, c, p


@pytest.mark.parametrize("normalise,rounds", [(True, 16), (False, 16), (True, 0)])
def test_sampler_draws_exactly_one_negative_per_anchor_from_the_published_distribution(normalise, rounds):
    """Counting over many draws: the cluster marginals are w(c)/Σ_{c'≠c_i} w(c') (Algorithm 1, lines 10–12) and the
    members within a cluster ∝ distance (line 13), within binomial tolerance; never the anchor's own cluster.
    rounds=0 exercises the exact fallback path; normalise=False the norm bound of the rejection step."""
    bank, c, p = _setup(normalise=normalise)
    anchors = torch.tensor([0, 40, 50, 58])  # one anchor in each cluster
    sampler = FairNegativeSampler(bank, c, p, epsilon=0.1, max_rounds=rounds)
    g = torch.Generator().manual_seed(0)
    draws = 4000
    neg = sampler.sample(bank[anchors], c[anchors], num_negatives=draws, generator=g)
    assert neg.shape == (4, draws)
    want = fairness_sampling_probs(bank[anchors], c[anchors], p, 0.1, bank=bank, bank_clusters=c)
    w = [max(0.0, 0.25 - float(pc)) + 0.1 for pc in p]
    worst = 0.0
    for row, i in enumerate(anchors.tolist()):
        drawn_c = c[neg[row]]
        assert not bool((drawn_c == c[i]).any()), "a negative from the anchor's own cluster"
        others = [k for k in range(4) if k != int(c[i])]
        for k in others:  # published marginal cluster weights
            expect = w[k] / sum(w[o] for o in others)
            worst = max(worst, abs(_binomial_z(int((drawn_c == k).sum()), draws, expect)))
        counts = torch.bincount(neg[row], minlength=len(bank))
        for j in range(len(bank)):  # each member, ∝ its distance inside its cluster
            worst = max(worst, abs(_binomial_z(int(counts[j]), draws, float(want[row, j]))))
    assert worst < 4.5, worst


def test_sampler_favours_under_represented_and_distant_samples():
    bank, c, p = _setup()
    anchor = torch.tensor([0])  # in the majority cluster
    neg = sample_fair_negatives(
        bank[anchor], c[anchor], bank, c, p, num_negatives=6000, generator=torch.Generator().manual_seed(1)
    )[0]
    share = torch.bincount(c[neg], minlength=4).double() / 6000
    # w = (0.1, 0.1, 0.2, 0.3): cluster 3 (5 % of the data) gets 50 % of the negatives
    assert float(share[3]) == pytest.approx(0.3 / 0.6, abs=0.03) and float(share[1]) == pytest.approx(1 / 6, abs=0.03)
    members = torch.nonzero(c == 1).flatten()
    d = (bank[members] - bank[0]).norm(dim=1)
    counts = torch.bincount(neg, minlength=len(bank))[members].double()
    assert float(torch.corrcoef(torch.stack([d, counts]))[0, 1]) > 0.5  # farther members drawn more often


def test_sampler_zero_distances_and_bad_inputs():
    bank = torch.zeros(6, 3)
    c = torch.tensor([0, 0, 1, 1, 1, 2])
    p = torch.tensor([2 / 6, 3 / 6, 1 / 6])
    neg = sample_fair_negatives(
        torch.zeros(1, 3), torch.tensor([0]), bank, c, p, num_negatives=3000, generator=torch.Generator().manual_seed(2)
    )[0]
    counts = torch.bincount(neg, minlength=6)
    assert int(counts[:2].sum()) == 0 and int(counts[2:5].min()) > 250  # all at distance 0: uniform within cluster 1
    with pytest.raises(FairmtError, match="cluster ids"):
        sample_fair_negatives(bank[:1], torch.tensor([5]), bank, c, p)
    with pytest.raises(FairmtError, match="single latent subgroup"):
        sample_fair_negatives(bank[:1], torch.tensor([0]), bank, torch.zeros(6, dtype=torch.long), p)
    with pytest.raises(FairmtError, match="num_negatives"):
        sample_fair_negatives(bank[:1], torch.tensor([0]), bank, c, p, num_negatives=0)
    with pytest.raises(FairmtError, match="epsilon"):
        cluster_weights(p, epsilon=-1)
    with pytest.raises(FairmtError, match="bank needs bank_clusters"):  # was torch.as_tensor(None)'s TypeError
        fairness_sampling_probs(bank[:1], torch.tensor([0]), p, bank=bank)
