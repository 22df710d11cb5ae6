"""CS-InfoNCE and FCL against slow loop references (the sampling losses: tests/losses/test_sampling_losses.py)."""

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
        sim = [(_cos(h[i], h[q]) if normalize else float(torch.dot(h[i], h[q]))) / tau for q in range(n)]
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
    # float64: the loss is a difference of two terms (L_scl − L_fcl), so float32 cancellation alone can move it 1e-5
    h = torch.randn(8, 4, dtype=torch.float64)
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
    assert terms.fcl.item() == pytest.approx(
        ref_supcon_single(h.detach(), a, 0.1), rel=1e-9
    )  # float64 stays float64: tight
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


# ---------------------------------------------------------------- FCL as released (fairlib's Contrastive_Loss)


def ref_released_supcon(h, labels, tau):
    """Loop transcription of the FCL authors' released ``Contrastive_Loss`` (as in fairlib): raw dot products, the
    row maximum taken over every column (the anchor's own included), 1e-20 added to each of the N entries of the
    denominator row (the masked self entry too), positives divided by 1 + |P(i)|, every anchor in the mean."""
    n = len(h)
    rows = [[float(sum(a * b for a, b in zip(h[i], h[j]))) / tau for j in range(n)] for i in range(n)]
    total = 0.0
    for i in range(n):
        c = max(rows[i])
        den = sum((math.exp(rows[i][k] - c) if k != i else 0.0) + 1e-20 for k in range(n))
        pos = [p for p in range(n) if p != i and labels[p] == labels[i]]
        total += -sum((rows[i][p] - c) - math.log(den) for p in pos) / (1 + len(pos))
    return total / n


def _released_case(scale, seed=3, n=14, d=7):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(n, d, generator=g, dtype=torch.float64) * scale
    y = torch.randint(0, 3, (n,), generator=g)
    a = torch.randint(0, 2, (n,), generator=g)
    return h, y, a


@pytest.mark.parametrize("scale", [0.05, 1.0, 3.0])
def test_fcl_released_matches_loop_transcription_float64(scale):
    """τ = 0.01 on raw features: at scale 0.05 every entry counts; at 1 and 3 the self-similarity dominates the rows,
    most exp(s − max) underflow to 0 and the 1e-20 constant sets the value — still equal to 1e-6."""
    h, y, a = _released_case(scale)
    hl = h.tolist()
    terms = fcl_loss(h, y, a, variant="released")  # defaults: τ = 0.01, no normalisation
    want_scl = ref_released_supcon(hl, y.tolist(), 0.01)
    want_fcl = ref_released_supcon(hl, a.tolist(), 0.01)
    assert terms.scl.dtype == torch.float64
    assert float(terms.scl) == pytest.approx(want_scl, rel=1e-6, abs=1e-9)
    assert float(terms.fcl) == pytest.approx(want_fcl, rel=1e-6, abs=1e-9)
    assert float(terms.loss) == pytest.approx(want_scl - want_fcl, rel=1e-6, abs=1e-9)
    if scale == 3.0:  # the regime where the constant decides: log(1e-20·N) dominates the per-anchor terms
        assert float(terms.scl) > 20.0


def test_fcl_released_eo_group_term_matches_loop_transcription():
    """fairlib's FCLObj="EO": the group term within each task class of the batch, averaged over the classes."""
    h, y, a = _released_case(0.2, seed=5, n=16)
    terms = fcl_loss(h, y, a, variant="released", temperature=0.05, group_temperature=0.02, group_term="eo")
    hl, yl, al = h.tolist(), y.tolist(), a.tolist()
    parts = []
    for c in sorted(set(yl)):
        idx = [i for i in range(len(yl)) if yl[i] == c]
        parts.append(ref_released_supcon([hl[i] for i in idx], [al[i] for i in idx], 0.02))
    assert float(terms.fcl) == pytest.approx(sum(parts) / len(parts), rel=1e-6)
    assert float(terms.scl) == pytest.approx(ref_released_supcon(hl, yl, 0.05), rel=1e-6)


def test_fcl_paper_eo_group_term_is_the_mean_of_per_class_terms():
    h, y, a = _released_case(1.0, seed=6, n=18)
    terms = fcl_loss(h, y, a, temperature=0.5, group_term="eo")
    parts = [ref_supcon_single(h[y == c], a[y == c], 0.5) for c in torch.unique(y)]
    assert float(terms.fcl) == pytest.approx(sum(parts) / len(parts), rel=1e-9)
    assert float(terms.fcl) != pytest.approx(float(fcl_loss(h, y, a, temperature=0.5).fcl), rel=1e-3)


def test_fcl_released_differs_from_paper_and_rejects_unknown_options():
    h, y, a = _released_case(1.0)
    paper = fcl_loss(h, y, a)
    released = fcl_loss(h, y, a, variant="released")
    assert float(paper.scl) != pytest.approx(float(released.scl), rel=1e-2)
    # normalised features and τ = 0.1 with the released reduction: still not the paper's (1 + |P| and every anchor)
    assert float(fcl_loss(h, y, a, variant="released", temperature=0.1, normalize=True).scl) != pytest.approx(
        float(paper.scl), rel=1e-3
    )
    with pytest.raises(FairmtError, match="variant must be one of"):
        fcl_loss(h, y, a, variant="fairlib")
    with pytest.raises(FairmtError, match="group_term must be one of"):
        fcl_loss(h, y, a, group_term="eodds")


def test_fcl_released_gradient_flows_and_keeps_lonely_anchors():
    h = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1), requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 3])  # only the last two anchors have a positive
    terms = fcl_loss(h, y, torch.tensor([0, 0, 1, 1, 0]), variant="released", temperature=0.5)
    assert float(terms.scl) == pytest.approx(ref_released_supcon(h.detach().tolist(), y.tolist(), 0.5), rel=1e-9)
    terms.loss.backward()
    assert h.grad is not None and bool(torch.isfinite(h.grad).all()) and float(h.grad.abs().sum()) > 0
