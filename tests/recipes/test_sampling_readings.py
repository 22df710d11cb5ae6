"""The two readings of the stage-2 loss (Martin & Ogbuokiri Eq. 2.1 over the batch with the NN positive and the drawn
negatives added, vs the pairs-only NT-Xent) and of the negative draw (two-stage vs the product P(k) ∝ w(c_k)·‖z_i −
z_k‖), each against a brute-force loop on a fixed batch; the trainer uses the reading its Config names."""

import math

import pytest
import torch

from fairmt.errors import FairmtError
from fairmt.losses import (
    FairNegativeSampler,
    fair_batch_nt_xent,
    fair_pair_nt_xent,
    fairness_sampling_probs,
)


def _cos(a, b):
    return float(a.double() @ b.double() / (a.double().norm() * b.double().norm()))


def brute_batch(anchors, positives, negatives, tau):
    """Eq. 2.1 written out: 2N views [a | p]; view r's positive the other member of its pair; denominator every
    other view k ≠ r of the batch plus the m negatives of its pair."""
    n = anchors.shape[0]
    views = list(anchors) + list(positives)
    total = 0.0
    for r in range(2 * n):
        i, j = r % n, (r + n) % (2 * n)
        num = math.exp(_cos(views[r], views[j]) / tau)
        den = sum(math.exp(_cos(views[r], views[k]) / tau) for k in range(2 * n) if k != r)
        den += sum(math.exp(_cos(views[r], negatives[i, q]) / tau) for q in range(negatives.shape[1]))
        total += -math.log(num / den)
    return total / (2 * n)


def brute_pairs(anchors, positives, negatives, tau):
    n = anchors.shape[0]
    total = 0.0
    for i in range(n):
        num = math.exp(_cos(anchors[i], positives[i]) / tau)
        den = num + sum(math.exp(_cos(anchors[i], negatives[i, q]) / tau) for q in range(negatives.shape[1]))
        total += -math.log(num / den)
    return total / n


@pytest.mark.parametrize("m", [1, 3])
def test_both_stage2_losses_match_brute_force_on_a_fixed_batch(m):
    g = torch.Generator().manual_seed(3)
    a, p, neg = torch.randn(6, 5, generator=g), torch.randn(6, 5, generator=g), torch.randn(6, m, 5, generator=g)
    batch = float(fair_batch_nt_xent(a, p, neg, temperature=0.5))
    pairs = float(fair_pair_nt_xent(a, p, neg, temperature=0.5))
    assert batch == pytest.approx(brute_batch(a, p, neg, 0.5), rel=1e-5)
    assert pairs == pytest.approx(brute_pairs(a, p, neg, 0.5), rel=1e-5)
    assert abs(batch - pairs) > 1e-3  # two different readings, not one under two names
    # without drawn negatives the batch reading is SimCLR's NT-Xent with the NN positive as the second view
    from fairmt.losses import nt_xent_loss

    assert float(fair_batch_nt_xent(a, p, None, 0.5)) == pytest.approx(float(nt_xent_loss(a, p, 0.5)), rel=1e-6)
    with pytest.raises(FairmtError, match="negatives must be"):
        fair_batch_nt_xent(a, p, torch.randn(5, 1, 5))


def test_batch_loss_puts_every_in_batch_view_in_the_denominator():
    """Moving one other pair's positive changes anchor 0's batch loss, never its pairs loss."""
    g = torch.Generator().manual_seed(0)
    a, p, neg = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g), torch.randn(4, 1, 3, generator=g)
    a.requires_grad_(True)
    p2 = p.clone().requires_grad_(True)
    fair_batch_nt_xent(a, p2, neg).backward()
    assert float(p2.grad[3].abs().sum()) > 0
    p3 = p.clone().requires_grad_(True)
    per_anchor0 = fair_pair_nt_xent(a[:1], p3[:1], neg[:1])
    per_anchor0.backward()
    assert p3.grad[3].abs().sum() == 0


def _bank():
    g = torch.Generator().manual_seed(1)
    bank = torch.nn.functional.normalize(torch.randn(40, 4, generator=g), dim=-1)
    c = torch.tensor([0] * 20 + [1] * 10 + [2] * 6 + [3] * 4)
    p = torch.bincount(c, minlength=4).double() / 40
    return bank, c, p


def brute_probs(z_a, c_a, bank, c, p, eps, draw):
    w = [max(0.0, 1 / 4 - float(pc)) + eps for pc in p]
    out = []
    for i in range(len(z_a)):
        d = [float((z_a[i].double() - bank[k].double()).norm()) for k in range(len(bank))]
        if draw == "product":
            mass = [w[int(c[k])] * d[k] if int(c[k]) != int(c_a[i]) else 0.0 for k in range(len(bank))]
            out.append([x / sum(mass) for x in mass])
        else:
            others = [q for q in range(4) if q != int(c_a[i])]
            wt = {q: w[q] / sum(w[o] for o in others) for q in others}
            row = []
            for k in range(len(bank)):
                ck = int(c[k])
                if ck == int(c_a[i]):
                    row.append(0.0)
                else:
                    row.append(wt[ck] * d[k] / sum(d[j] for j in range(len(bank)) if int(c[j]) == ck))
            out.append(row)
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("draw", ["two_stage", "product"])
def test_both_draws_match_brute_force_probabilities(draw):
    bank, c, p = _bank()
    idx = torch.tensor([0, 25, 33, 38])
    got = fairness_sampling_probs(bank[idx], c[idx], p, 0.1, bank=bank, bank_clusters=c, draw=draw)
    want = brute_probs(bank[idx], c[idx], bank, c, p, 0.1, draw)
    assert torch.allclose(got, want, atol=1e-10)
    assert torch.allclose(got.sum(1), torch.ones(4, dtype=torch.float64))


def test_the_two_draws_give_different_cluster_shares():
    """The anchor's view of the clusters: two-stage gives each other cluster its normalised w(c); the product reading
    weights it by its size too (here the large cluster 0 gets far more under the product)."""
    bank, c, p = _bank()
    idx = torch.tensor([38])  # an anchor in cluster 3
    shares = {}
    for draw in ("two_stage", "product"):
        probs = fairness_sampling_probs(bank[idx], c[idx], p, 0.1, bank=bank, bank_clusters=c, draw=draw)[0]
        shares[draw] = [float(probs[c == q].sum()) for q in range(4)]
    assert shares["two_stage"][0] == pytest.approx(0.1 / (0.1 + 0.1 + 0.2), rel=1e-9)  # w = 0.1, 0.1, 0.2
    assert shares["product"][0] > shares["two_stage"][0] + 0.15


@pytest.mark.parametrize("draw,rounds", [("two_stage", 16), ("product", 16), ("product", 0)])
def test_sampler_draws_follow_each_reading(draw, rounds):
    """Counting over many draws: each member's share within binomial tolerance of the brute-force distribution;
    rounds=0 is the exact fallback of the product draw."""
    bank, c, p = _bank()
    idx = torch.tensor([0, 25, 33, 38])
    sampler = FairNegativeSampler(bank, c, p, epsilon=0.1, max_rounds=rounds, draw=draw)
    n = 4000
    neg = sampler.sample(bank[idx], c[idx], num_negatives=n, generator=torch.Generator().manual_seed(0))
    want = brute_probs(bank[idx], c[idx], bank, c, p, 0.1, draw)
    worst = 0.0
    for row in range(4):
        counts = torch.bincount(neg[row], minlength=len(bank)).double()
        q = want[row]
        z = (counts - n * q) / torch.sqrt(torch.clamp(n * q * (1 - q), min=1e-12))
        assert not bool((counts[q == 0] > 0).any()), "a negative from the anchor's own cluster"
        worst = max(worst, float(z[q > 0].abs().max()))
    assert worst < 4.5, worst
    with pytest.raises(FairmtError, match="negative draw"):
        FairNegativeSampler(bank, c, p, draw="cluster")


def test_gradient_probe_is_a_short_sgd_run_at_the_papers_learning_rate():
    """probe.optimizer=sgd: scikit-learn's SGD on the log loss at a constant learning rate for exactly `epochs`
    passes (the paper's "learning rate of 0.0001"); the signature says which probe ran."""
    import numpy as np

    from fairmt.eval.linear_probe import linear_probe

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    X = rng.normal(size=(400, 8)) + 1.5 * y[:, None]
    fast = linear_probe(X, y, optimizer="sgd", learning_rate=0.1, epochs=50, n_clusters=None)
    slow = linear_probe(X, y, optimizer="sgd", learning_rate=1e-4, epochs=1, n_clusters=None)
    lbfgs = linear_probe(X, y, n_clusters=None)
    assert "logreg:sgd:lr0.1:epochs50" in fast.signature and "logreg:lbfgs" in lbfgs.signature
    assert fast.accuracy > 0.9 and lbfgs.accuracy > 0.9
    assert "logreg:sgd:lr0.0001:epochs1" in slow.signature
    with pytest.raises(FairmtError, match="optimizer must be lbfgs or sgd"):
        linear_probe(X, y, optimizer="adam", n_clusters=None)


def test_the_trainer_config_defaults_to_the_papers_reading(tmp_path):
    from fairmt.trainers.sampling import FairnessSamplingConfig

    args = FairnessSamplingConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[])
    assert (args.pair_loss, args.negative_draw, args.index_refresh_steps) == ("batch", "two_stage", 0)
    for bad, match in (
        ({"pair_loss": "triplet"}, "pair_loss must be one of"),
        ({"negative_draw": "uniform"}, "negative_draw must be one of"),
    ):
        with pytest.raises(FairmtError, match=match):
            FairnessSamplingConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **bad)
