"""GACL, the masked contrastive core, SupCon and token KD against slow, loop-based references."""

import math

import pytest
import torch
import torch.nn.functional as F

from fairmt.errors import FairmtError
from fairmt.losses import GACLPairs, gacl_loss, masked_contrastive_loss, supcon_loss, token_kl_loss


def cos(a, b):
    return float(torch.dot(a, b) / (a.norm() * b.norm()))


def ref_core(anchors, cands, pos, neg, tau, reduction):
    losses = []
    for i in range(len(anchors)):
        P = [k for k in range(len(cands)) if pos[i][k]]
        D = [k for k in range(len(cands)) if pos[i][k] or neg[i][k]]
        if not P:
            continue
        denom = sum(math.exp(cos(anchors[i], cands[k]) / tau) for k in D)
        terms = [-math.log(math.exp(cos(anchors[i], cands[p]) / tau) / denom) for p in P]
        losses.append(sum(terms) / (len(terms) if reduction == "mean" else 1))
    return sum(losses) / len(losses)


def ref_gacl(h, g, hd, hc, tau, pairs: GACLPairs):
    """Eq. 1 of Lee et al. (2023), written out per anchor."""
    out = []
    for i in range(len(h)):
        positives, negatives = [], []
        if pairs.dropout_positive:
            positives.append(hd[i])
        if pairs.inbatch_positives:
            positives += [h[j] for j in range(len(h)) if j != i and g[j] == g[i]]
        if pairs.counterfactual_negative:
            negatives.append(hc[i])
        if pairs.inbatch_negatives:
            negatives += [h[k] for k in range(len(h)) if g[k] != g[i]]
        if not positives:
            continue
        denom = sum(math.exp(cos(h[i], x) / tau) for x in positives + negatives)
        terms = [-math.log(math.exp(cos(h[i], p) / tau) / denom) for p in positives]
        out.append(sum(terms) / (len(terms) if pairs.positive_reduction == "mean" else 1))
    return sum(out) / len(out)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_core_matches_reference(reduction):
    torch.manual_seed(0)
    a, c = torch.randn(5, 7), torch.randn(9, 7)
    pos = torch.rand(5, 9) < 0.3
    neg = ~pos & (torch.rand(5, 9) < 0.6)
    pos[0] = False  # an anchor without positives is left out
    got = masked_contrastive_loss(a, c, pos, neg, temperature=0.3, positive_reduction=reduction)
    assert got.item() == pytest.approx(ref_core(a, c, pos.tolist(), neg.tolist(), 0.3, reduction), rel=1e-5)


def test_core_errors_and_no_positive():
    a = torch.randn(3, 4, requires_grad=True)
    eye = torch.eye(3, dtype=torch.bool)
    with pytest.raises(FairmtError, match="both a positive and a negative"):
        masked_contrastive_loss(a, a, eye, eye)
    with pytest.raises(FairmtError, match="no positive"):
        masked_contrastive_loss(a, a, torch.zeros(3, 3, dtype=torch.bool), ~eye, on_no_positive="error")
    zero = masked_contrastive_loss(a, a, torch.zeros(3, 3, dtype=torch.bool), ~eye)
    assert zero.item() == 0.0
    zero.backward()  # still attached to the graph
    per = masked_contrastive_loss(a, a, torch.zeros(3, 3, dtype=torch.bool), ~eye, return_per_anchor=True)
    assert torch.isnan(per).all()
    with pytest.raises(FairmtError, match="temperature"):
        masked_contrastive_loss(a, a, eye, ~eye, temperature=0)


ABLATIONS = [
    GACLPairs(),  # paper: B:B
    GACLPairs(inbatch_positives=False, inbatch_negatives=False),  # dropout + aug (1:1)
    GACLPairs(dropout_positive=False, inbatch_negatives=False),  # B-1:1
    GACLPairs(dropout_positive=False),  # B-1:B
    GACLPairs(counterfactual_negative=False, positive_reduction="mean", detach_dropout_view=True),  # official
]


@pytest.mark.parametrize("pairs", ABLATIONS)
def test_gacl_matches_reference(pairs):
    torch.manual_seed(1)
    h, hd, hc = torch.randn(3, 8, 16).unbind(0)
    g = torch.tensor([0, 1, 1, 0, 0, 1, 0, 1])
    got = gacl_loss(h, g, h_dropout=hd, h_counterfactual=hc, temperature=0.2, pairs=pairs)
    assert got.item() == pytest.approx(ref_gacl(h, g.tolist(), hd, hc, 0.2, pairs), rel=1e-5)


def test_gacl_official_variant_detaches_dropout_view():
    torch.manual_seed(2)
    h = torch.randn(6, 8, requires_grad=True)
    hd = torch.randn(6, 8, requires_grad=True)
    g = torch.tensor([0, 1] * 3)
    gacl_loss(h, g, h_dropout=hd, pairs="official").backward()
    assert hd.grad is None and h.grad is not None and h.grad.abs().sum() > 0
    gacl_loss(h, g, h_dropout=hd, h_counterfactual=torch.randn(6, 8), pairs="paper").backward()
    assert hd.grad is not None and hd.grad.abs().sum() > 0


def test_gacl_bad_input():
    h = torch.randn(4, 8)
    with pytest.raises(FairmtError, match="one gender only"):
        gacl_loss(h, torch.zeros(4, dtype=torch.long), h_dropout=h, h_counterfactual=h)
    with pytest.raises(FairmtError, match="h_counterfactual"):
        gacl_loss(h, torch.tensor([0, 1, 0, 1]), h_dropout=h)
    with pytest.raises(FairmtError, match="unknown GACL variant"):
        gacl_loss(h, torch.tensor([0, 1, 0, 1]), h_dropout=h, pairs="nope")
    with pytest.raises(FairmtError, match="shape"):
        gacl_loss(h, torch.tensor([0, 1]), h_dropout=h, h_counterfactual=h)


def ref_supcon(feats, labels, tau):
    n, v, _ = feats.shape
    flat = [feats[i, k] for k in range(v) for i in range(n)]
    lab = [labels[i] for k in range(v) for i in range(n)]
    total = []
    for a in range(len(flat)):
        others = [k for k in range(len(flat)) if k != a]
        P = [k for k in others if lab[k] == lab[a]]
        denom = sum(math.exp(cos(flat[a], flat[k]) / tau) for k in others)
        total.append(sum(-math.log(math.exp(cos(flat[a], flat[p]) / tau) / denom) for p in P) / len(P))
    return sum(total) / len(total)


def test_supcon_matches_reference():
    torch.manual_seed(3)
    f = torch.randn(6, 2, 5)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    assert supcon_loss(f, y, temperature=0.5).item() == pytest.approx(ref_supcon(f, y.tolist(), 0.5), rel=1e-5)


def test_token_kl_matches_reference():
    torch.manual_seed(4)
    s, t = torch.randn(2, 3, 11), torch.randn(2, 3, 11)
    labels = torch.tensor([[5, 2, -100], [1, -100, -100]])
    for temp in (1.0, 2.0):
        ref, n = 0.0, 0
        for b in range(2):
            for j in range(3):
                if labels[b, j] == -100:
                    continue
                p = F.softmax(t[b, j] / temp, -1)
                q = F.softmax(s[b, j] / temp, -1)
                ref += float((p * (p.log() - q.log())).sum()) * temp**2
                n += 1
        assert token_kl_loss(s, t, labels, temperature=temp).item() == pytest.approx(ref / n, rel=1e-5)
    assert token_kl_loss(s, s, labels).item() == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(FairmtError, match="vocabulary"):
        token_kl_loss(s, torch.randn(2, 3, 12), labels)


def _ref_mt_kd(s, t, labels, alpha):
    """Loop reference: (1 − α)·mean token NLL + α·mean token KL(teacher ‖ student), over non-ignored tokens."""
    nll, kl, n = 0.0, 0.0, 0
    for b in range(labels.shape[0]):
        for j in range(labels.shape[1]):
            y = int(labels[b, j])
            if y == -100:
                continue
            ps, pt = F.softmax(s[b, j].double(), -1), F.softmax(t[b, j].double(), -1)
            nll -= math.log(ps[y])
            kl += float((pt * (pt.log() - ps.log())).sum())
            n += 1
    return (1 - alpha) * nll / n + alpha * kl / n, nll / n, kl / n


@pytest.mark.parametrize("alpha", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("teacher_dtype", [torch.float32, torch.bfloat16])
def test_fused_mt_kd_matches_reference_value_and_gradient(alpha, padded, teacher_dtype):
    from fairmt.losses import mt_kd_loss

    torch.manual_seed(5)
    s = torch.randn(2, 4, 13, requires_grad=True)
    t = torch.randn(2, 4, 13).to(teacher_dtype)
    labels = (
        torch.tensor([[5, 2, 0, -100], [1, 12, -100, -100]]) if padded else torch.tensor([[5, 2, 0, 7], [1, 12, 3, 3]])
    )
    total, mt, kd = mt_kd_loss(s, t, labels, alpha)
    ref_total, ref_mt, ref_kd = _ref_mt_kd(s.detach(), t.float(), labels, alpha)
    assert (total.item(), mt.item(), kd.item()) == pytest.approx((ref_total, ref_mt, ref_kd), rel=1e-5, abs=1e-6)
    assert not mt.requires_grad and not kd.requires_grad
    (3.0 * total).backward()  # a scaled loss, as under gradient accumulation or a loss scaler
    # the unfused composition of the library's own pieces, differentiated by autograd
    s2 = s.detach().clone().requires_grad_(True)
    log_p = F.log_softmax(s2, -1)
    unfused = (1 - alpha) * F.nll_loss(log_p.flatten(0, 1), labels.flatten()) + alpha * token_kl_loss(s2, t, labels)
    (3.0 * unfused).backward()
    assert torch.allclose(s.grad, s2.grad, atol=1e-6)
    if padded:  # ignored positions get no gradient
        assert s.grad[labels == -100].abs().max() == 0


def test_fused_mt_kd_edge_cases():
    from fairmt.losses import mt_kd_loss

    s = torch.randn(1, 2, 5, requires_grad=True)
    total, mt, kd = mt_kd_loss(s, s.detach(), torch.full((1, 2), -100), 0.4)  # nothing to learn from
    assert total.item() == 0.0 and total.requires_grad
    total, _, kd = mt_kd_loss(s, s.detach(), torch.tensor([[1, 2]]), 0.4)
    assert kd.item() == pytest.approx(0.0, abs=1e-6)  # student = teacher
    total.backward()
    with pytest.raises(RuntimeError, match="twice"):
        total.backward()
    with torch.no_grad():  # evaluation: no gradient buffer is built
        assert mt_kd_loss(s, s, torch.tensor([[1, 2]]), 0.4)[0].item() == pytest.approx(total.item())
    with pytest.raises(FairmtError, match="vocabulary"):
        mt_kd_loss(s, torch.randn(1, 2, 6), torch.tensor([[1, 2]]), 0.4)
    with pytest.raises(FairmtError, match="labels"):
        mt_kd_loss(s, s, torch.tensor([1, 2]), 0.4)
    with pytest.raises(FairmtError, match="alpha"):
        mt_kd_loss(s, s, torch.tensor([[1, 2]]), 1.5)


def test_gacl_counts_single_gender_skip_and_default_temperature():
    torch.manual_seed(3)
    h, hd, hc = torch.randn(3, 8, 16).unbind(0)
    g = torch.tensor([0, 1, 1, 0, 0, 1, 0, 1])
    loss, n_pos, n_neg = gacl_loss(h, g, h_dropout=hd, h_counterfactual=hc, pairs="paper", return_counts=True)
    # 4 per gender: 3 in-batch same gender + the dropout view; 4 other gender + the counterfactual
    assert (n_pos.item(), n_neg.item()) == (4.0, 5.0)
    # τ defaults to 1.0, the released code's value
    assert loss.item() == pytest.approx(ref_gacl(h, g.tolist(), hd, hc, 1.0, GACLPairs()), rel=1e-5)
    _, n_pos, n_neg = gacl_loss(h, g, h_dropout=hd, pairs="official", return_counts=True)
    assert (n_pos.item(), n_neg.item()) == (4.0, 4.0)
    one = torch.zeros(8, dtype=torch.long)
    assert gacl_loss(h, one, h_dropout=hd, h_counterfactual=hc, on_single_gender="skip") is None
    assert gacl_loss(h, one, h_dropout=hd, h_counterfactual=hc, on_single_gender="skip", return_counts=True) == (
        None,
        None,
        None,
    )


def test_gacl_mean_over_positives_does_not_grow_with_batch_size():
    """The sum over positives (Eq. 1) grows about linearly with the batch; the mean only by the log of the growth
    of the denominator (log 4 from batch 8 to 32 for random representations at τ = 1)."""
    torch.manual_seed(6)
    means, sums = [], []
    for b in (8, 16, 32):
        h, hd, hc = torch.randn(3, b, 16).unbind(0)
        g = torch.tensor([0, 1] * (b // 2))
        sums.append(gacl_loss(h, g, h_dropout=hd, h_counterfactual=hc, pairs="paper").item())
        mean_pairs = GACLPairs(positive_reduction="mean")
        means.append(gacl_loss(h, g, h_dropout=hd, h_counterfactual=hc, pairs=mean_pairs).item())
    assert sums[2] / sums[0] > 3.0
    assert means[2] - means[0] == pytest.approx(math.log(4), abs=0.25)


def _ref_kd_sentence(s, t, labels):
    """Loop reference of the released code's KD: mean token KL per sentence, then mean over sentences."""
    per_sentence = []
    for b in range(labels.shape[0]):
        kls = []
        for j in range(labels.shape[1]):
            if int(labels[b, j]) == -100:
                continue
            ps, pt = F.softmax(s[b, j], -1), F.softmax(t[b, j], -1)
            kls.append((pt * (pt.log() - ps.log())).sum())
        if kls:
            per_sentence.append(torch.stack(kls).mean())
    return torch.stack(per_sentence).mean()


@pytest.mark.parametrize("alpha", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("padded", [False, True])
def test_kd_sentence_normalization_matches_loop_reference(alpha, padded):
    from fairmt.losses import mt_kd_loss

    torch.manual_seed(7)
    s = torch.randn(3, 5, 13, dtype=torch.float64)
    t = torch.randn(3, 5, 13)
    full = torch.tensor([[5, 2, 0, 7, 1], [1, 12, 3, 3, 4], [2, 2, 9, 8, 6]])
    # padded: sentences of 4, 1 and 0 label tokens (the empty one takes no part in the sentence mean)
    labels = torch.tensor([[5, 2, 0, 7, -100], [1, -100, -100, -100, -100], [-100] * 5]) if padded else full
    s_ref = s.clone().requires_grad_(True)
    kd_ref = _ref_kd_sentence(s_ref, t.double(), labels)
    mask = labels != -100
    nll_ref = -F.log_softmax(s_ref, -1)[mask].gather(1, labels[mask].unsqueeze(1)).mean()
    (2.0 * ((1 - alpha) * nll_ref + alpha * kd_ref)).backward()
    if padded:  # the sentence mean differs from the token mean here
        assert abs(kd_ref.item() - token_kl_loss(s.float(), t, labels).item()) > 1e-3

    s32 = s.float().requires_grad_(True)
    total, mt, kd = mt_kd_loss(s32, t, labels, alpha, kd_normalization="sentence")
    assert (mt.item(), kd.item()) == pytest.approx((nll_ref.item(), kd_ref.item()), rel=1e-5)
    (2.0 * total).backward()
    assert torch.allclose(s32.grad.double(), s_ref.grad, atol=1e-6)
    s2 = s.float().requires_grad_(True)
    kd2 = token_kl_loss(s2, t, labels, normalization="sentence")
    assert kd2.item() == pytest.approx(kd_ref.item(), rel=1e-5)
    with pytest.raises(FairmtError, match="normalization"):
        mt_kd_loss(s32, t, labels, alpha, kd_normalization="batch")
