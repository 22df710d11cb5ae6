"""SimCLR's NT-Xent and the pair construction of fairness-driven sampling (Martin & Ogbuokiri, "Reducing
Representation Bias through Fairness-Driven Sampling in Contrastive Learning", Algorithm 1).

* :func:`nt_xent_loss` — the plain SimCLR objective (Chen et al., 2020, Eq. 1; the paper's Eq. 2.1): two views of
  every sample, the other view is the positive and **every** other in-batch view a negative. This is the
  random-sampling baseline of the paper.
* :func:`cluster_weights` — ``w(c) = max(0, q(c) − p(c)) + ε`` with ``q(c) = 1/C`` (Algorithm 1, line 10).
* :func:`fairness_sampling_probs` — the exact distribution a negative is drawn from (Algorithm 1, lines 9–13), as a
  dense matrix: the reference the sampler is tested against.
* :func:`sample_fair_negatives` — draws negatives from that distribution over a whole embedding set ``Z`` in
  ``O(batch)`` expected time (two-stage: cluster by weight, then member by distance through rejection sampling).
* :func:`fair_batch_nt_xent` — the batch reading of the stage-2 loss (the default): the paper's Eq. 2.1 over the
  ``2N`` views of a batch of (anchor, nearest same-cluster positive) pairs, each view's denominator every other view
  of the batch plus its pair's ``m`` drawn negatives.
* :func:`fair_pair_nt_xent` — the pairs reading (an interpretation): NT-Xent on Algorithm 1's pairs alone, one
  positive and ``m`` drawn negatives per anchor in the denominator.

Two readings of Algorithm 1 line 13, "Sample z_k proportional to w(c) and ‖z_i − z_k‖" (``draw``):
``two_stage`` (the default: line 12 normalises ``w(c)`` into a distribution over clusters, then a member ∝ its
distance) and ``product`` (an interpretation: ``P(k) ∝ w(c_k)·‖z_i − z_k‖`` over every candidate outside the
anchor's cluster).

The nearest same-cluster positive over the whole set is found with scikit-learn in
:class:`fairmt.data.sampling.PairIndex` (layer 2); everything here is pure PyTorch (layer 1).
"""

from __future__ import annotations

import torch

from fairmt.errors import FairmtError
from fairmt.losses.contrastive import masked_contrastive_loss

DRAWS = ("two_stage", "product")
"""The two readings of Algorithm 1 line 13 (module docstring); ``two_stage`` is the default."""


def _check_draw(draw: str) -> None:
    if draw not in DRAWS:
        raise FairmtError(f"negative draw must be one of {DRAWS}, got {draw!r}")


def nt_xent_loss(
    view1: torch.Tensor, view2: torch.Tensor, temperature: float = 0.5, normalize: bool = True
) -> torch.Tensor:
    """SimCLR's NT-Xent over ``2N`` views (Chen et al., 2020, Eq. 1; Martin & Ogbuokiri, Eq. 2.1)::

        ℓ(i, j) = −log( exp(sim(z_i, z_j)/τ) / Σ_{k=1..2N, k≠i} exp(sim(z_i, z_k)/τ) )
        L       = 1/(2N) Σ_{k=1..N} [ ℓ(k, N+k) + ℓ(N+k, k) ]

    ``view1[k]`` and ``view2[k]`` are the two augmented views of sample ``k``; ``sim`` is the cosine when
    ``normalize`` (the published form). Every view is an anchor, its positive is the other view of its sample and all
    ``2N − 2`` remaining views of the batch are its negatives ("random sampling": no candidate is left out).

    Example::

        >>> z1, z2 = torch.randn(8, 128), torch.randn(8, 128)
        >>> loss = nt_xent_loss(z1, z2, temperature=0.5)
    """
    if view1.dim() != 2 or view1.shape != view2.shape:
        raise FairmtError(f"the two views must both be (N, d), got {tuple(view1.shape)} and {tuple(view2.shape)}")
    n = view1.shape[0]
    if n < 2:
        raise FairmtError(f"NT-Xent needs at least 2 samples per batch (negatives are the other samples), got {n}")
    z = torch.cat([view1, view2])
    rows = torch.arange(2 * n, device=z.device)
    pos = torch.zeros(2 * n, 2 * n, dtype=torch.bool, device=z.device)
    pos[rows, (rows + n) % (2 * n)] = True
    neg = ~pos & ~torch.eye(2 * n, dtype=torch.bool, device=z.device)
    return masked_contrastive_loss(z, z, pos, neg, temperature, "mean", normalize)


def fair_pair_nt_xent(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor,
    temperature: float = 0.5,
    normalize: bool = True,
) -> torch.Tensor:
    """NT-Xent on Algorithm 1's pairs (Martin & Ogbuokiri, Eq. 2.1 with the pairs of Algorithm 1)::

        ℓ_i = −log( exp(sim(a_i, p_i)/τ) / ( exp(sim(a_i, p_i)/τ) + Σ_{j=1..m} exp(sim(a_i, n_ij)/τ) ) )
        L   = mean_i ℓ_i

    ``anchors`` and ``positives`` are ``(N, d)`` (``positives[i]`` is the embedding of anchor ``i``'s nearest
    same-cluster neighbour), ``negatives`` is ``(N, m, d)`` or ``(N, d)`` for ``m = 1`` (the published setting: one
    negative per anchor drawn by :func:`sample_fair_negatives`). Only these ``1 + m`` candidates are in an anchor's
    denominator.

    Example::

        >>> a, p, n = torch.randn(8, 128), torch.randn(8, 128), torch.randn(8, 1, 128)
        >>> loss = fair_pair_nt_xent(a, p, n, temperature=0.5)
    """
    if negatives.dim() == 2:
        negatives = negatives[:, None]
    if (
        anchors.dim() != 2
        or positives.shape != anchors.shape
        or negatives.dim() != 3
        or negatives.shape[0] != anchors.shape[0]
        or negatives.shape[2] != anchors.shape[1]
    ):
        raise FairmtError(
            f"anchors (N, d), positives (N, d) and negatives (N, m, d) expected, got {tuple(anchors.shape)}, "
            f"{tuple(positives.shape)} and {tuple(negatives.shape)}"
        )
    n, m, d = negatives.shape
    candidates = torch.cat([positives, negatives.reshape(n * m, d)])
    rows = torch.arange(n, device=anchors.device)
    pos = torch.zeros(n, n + n * m, dtype=torch.bool, device=anchors.device)
    pos[rows, rows] = True
    neg = torch.zeros_like(pos)
    cols = n + rows[:, None] * m + torch.arange(m, device=anchors.device)[None, :]
    neg[rows[:, None].expand(n, m), cols] = True
    return masked_contrastive_loss(anchors, candidates, pos, neg, temperature, "mean", normalize)


def fair_batch_nt_xent(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor | None = None,
    temperature: float = 0.5,
    normalize: bool = True,
) -> torch.Tensor:
    """The batch reading of the stage-2 loss: the paper's Eq. 2.1 (SimCLR's NT-Xent, sum over ``k = 1..2N``) on the
    ``2N`` views ``[anchors | positives]``, the positive of anchor ``i`` its nearest same-cluster neighbour, with the
    pair's drawn negatives added to the denominator ("applies weights to negative samples according to their cluster
    membership", §2.1)::

        v = [a_1..a_N, p_1..p_N];   pos(r) = the other member of r's pair
        ℓ_r = −log( exp(s(v_r, v_pos(r))/τ) / ( Σ_{k≠r} exp(s(v_r, v_k)/τ) + Σ_{j=1..m} exp(s(v_r, n_{i(r) j})/τ) ) )
        L   = 1/(2N) Σ_r ℓ_r

    (``i(r)`` the pair of view ``r``; both views of a pair share its ``m`` negatives.) ``negatives`` is ``(N, m, d)``,
    ``(N, d)`` for ``m = 1``, or ``None``: then the loss is SimCLR's NT-Xent with the NN positive as the second view.

    Example::

        >>> a, p, n = torch.randn(8, 128), torch.randn(8, 128), torch.randn(8, 1, 128)
        >>> loss = fair_batch_nt_xent(a, p, n, temperature=0.5)
    """
    if anchors.dim() != 2 or positives.shape != anchors.shape:
        raise FairmtError(
            f"anchors and positives must both be (N, d), got {tuple(anchors.shape)} and {tuple(positives.shape)}"
        )
    n, d = anchors.shape
    if n < 1:
        raise FairmtError("the batch reading needs at least one (anchor, positive) pair")
    if negatives is None:
        negatives = anchors.new_zeros(n, 0, d)
    if negatives.dim() == 2:
        negatives = negatives[:, None]
    if negatives.dim() != 3 or negatives.shape[0] != n or negatives.shape[2] != d:
        raise FairmtError(f"negatives must be (N, m, d) for N = {n}, d = {d}, got {tuple(negatives.shape)}")
    m = negatives.shape[1]
    views = torch.cat([anchors, positives])
    candidates = torch.cat([views, negatives.reshape(n * m, d)])
    dev = anchors.device
    rows = torch.arange(2 * n, device=dev)
    pos = torch.zeros(2 * n, 2 * n + n * m, dtype=torch.bool, device=dev)
    pos[rows, (rows + n) % (2 * n)] = True
    neg = torch.zeros_like(pos)
    neg[:, : 2 * n] = ~torch.eye(2 * n, dtype=torch.bool, device=dev)
    neg &= ~pos
    if m:
        pair = rows % n
        cols = 2 * n + pair[:, None] * m + torch.arange(m, device=dev)[None, :]
        neg[rows[:, None].expand(2 * n, m), cols] = True
    return masked_contrastive_loss(views, candidates, pos, neg, temperature, "mean", normalize)


def cluster_weights(cluster_probs: torch.Tensor, epsilon: float = 0.1) -> torch.Tensor:
    """Per-cluster negative weights ``w(c) = max(0, q(c) − p(c)) + ε``, ``q(c) = 1/C`` (Algorithm 1, line 10).

    ``cluster_probs`` holds ``p(c) = N_c / N`` over the whole training set, length ``C``. Under-represented clusters
    (``p(c) < 1/C``) get their deficit plus ε; over-represented ones only ε (0.1 in the paper).
    """
    p = torch.as_tensor(cluster_probs, dtype=torch.float64).reshape(-1)
    if p.numel() == 0 or bool((p < 0).any()) or not bool(torch.isfinite(p).all()):
        raise FairmtError(f"cluster_probs must be a non-empty vector of proportions, got {p.tolist()}")
    if epsilon < 0:
        raise FairmtError(f"epsilon must be >= 0, got {epsilon}")
    return torch.clamp(1.0 / p.numel() - p, min=0.0) + epsilon


def _labels(x: torch.Tensor, n: int, name: str, n_clusters: int) -> torch.Tensor:
    x = torch.as_tensor(x).reshape(-1).long()
    if x.shape[0] != n:
        raise FairmtError(f"{name} has {x.shape[0]} entries for {n} embeddings")
    if x.numel() and (int(x.min()) < 0 or int(x.max()) >= n_clusters):
        raise FairmtError(
            f"cluster ids must lie in [0, {n_clusters - 1}] (len(cluster_probs)), got {sorted(set(x.tolist()))[:10]}"
        )
    return x


def _anchor_cluster_probs(anchor_clusters: torch.Tensor, present: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``(B, C)``: the normalised weights of the clusters an anchor may draw a negative from (non-empty, not its
    own). Raises when an anchor has none."""
    c = w.numel()
    allowed = present[None, :] & (torch.arange(c)[None, :] != anchor_clusters[:, None])
    cw = torch.where(allowed, w[None, :].expand(len(anchor_clusters), -1), torch.zeros(()).double())
    total = cw.sum(1, keepdim=True)
    if bool((total <= 0).any()):
        raise FairmtError(
            "an anchor has no other non-empty cluster to draw a negative from: the embeddings fall into "
            "a single latent subgroup (check the K-means fit)"
        )
    return cw / total


def fairness_sampling_probs(
    embeddings: torch.Tensor,
    clusters: torch.Tensor,
    cluster_probs: torch.Tensor,
    epsilon: float = 0.1,
    *,
    bank: torch.Tensor | None = None,
    bank_clusters: torch.Tensor | None = None,
    draw: str = "two_stage",
) -> torch.Tensor:
    """The distribution a negative is drawn from, for every anchor (Algorithm 1, lines 9–13). ``draw="product"``
    (the other reading): ``P_i(k) = w(c_k)·‖z_i − z_k‖ / Σ_{k' : c_k' ≠ c_i} w(c_k')·‖z_i − z_k'‖`` (uniform over
    the other clusters' members, each with its cluster's weight, when all those distances are 0). ``two_stage``::

        P_i(k) = w̃_i(c_k) · ‖z_i − z_k‖₂ / Σ_{k' : c_k' = c_k} ‖z_i − z_k'‖₂ ,   c_k ≠ c_i
        w̃_i(c) = w(c) / Σ_{c' ≠ c_i, N_c' > 0} w(c')

    i.e. a cluster other than the anchor's is chosen with its normalised weight, then a member of it with probability
    proportional to its distance from the anchor (farther samples are more likely). A cluster whose members all sit
    at distance 0 from the anchor is sampled uniformly. Candidates are ``bank`` (the whole embedding set ``Z`` with
    its ``bank_clusters``) or, when not given, the anchors themselves. Returns a dense ``(B, M)`` float64 matrix —
    the reference :func:`sample_fair_negatives` is checked against, not meant for large ``M``.
    """
    _check_draw(draw)
    if bank is not None and bank_clusters is None:
        raise FairmtError("bank needs bank_clusters: the latent subgroup of each bank row")
    z = embeddings.detach().double()
    w = cluster_weights(cluster_probs, epsilon)
    anchor_c = _labels(clusters, z.shape[0], "clusters", w.numel())
    cand = z if bank is None else bank.detach().double()
    cand_c = anchor_c
    if bank is not None and bank_clusters is not None:
        cand_c = _labels(bank_clusters, cand.shape[0], "bank_clusters", w.numel())
    if draw == "product":
        other = (anchor_c[:, None] != cand_c[None, :]).double()
        if bool((other.sum(1) == 0).any()):
            raise FairmtError(
                "an anchor has no other non-empty cluster to draw a negative from: the embeddings fall "
                "into a single latent subgroup (check the K-means fit)"
            )
        mass = w[cand_c][None, :] * torch.cdist(z, cand) * other
        flat = w[cand_c][None, :] * other
        total = mass.sum(1, keepdim=True)
        return torch.where(total > 0, mass / total.clamp(min=1e-300), flat / flat.sum(1, keepdim=True))
    onehot = torch.nn.functional.one_hot(cand_c, w.numel()).double()  # (M, C)
    present = onehot.sum(0) > 0
    cw = _anchor_cluster_probs(anchor_c, present, w)  # (B, C)
    dist = torch.cdist(z, cand)  # (B, M)
    mass = dist @ onehot  # (B, C): distance mass of each cluster seen from each anchor
    size = onehot.sum(0)
    k_mass = mass[:, cand_c]  # (B, M)
    within = torch.where(k_mass > 0, dist / k_mass.clamp(min=1e-300), 1.0 / size[cand_c][None, :])
    other = anchor_c[:, None] != cand_c[None, :]
    return cw[:, cand_c] * within * other


class FairNegativeSampler:
    """Draws negatives from a whole embedding set ``Z`` (Algorithm 1, lines 9–14) — exactly the distribution of
    :func:`fairness_sampling_probs`, without the ``(B, M)`` distance matrix.

    Built once per ``Z`` (cluster member lists, norms and weights are precomputed); :meth:`sample` then costs
    ``O(B · proposals · d)`` per call:

    1. each draw picks a cluster ``c ≠ c_i`` with probability ``w̃_i(c)`` (non-empty clusters only);
    2. a member ``k`` of ``c`` is proposed uniformly and accepted with probability ``‖z_i − z_k‖ / D_i(c)``,
       ``D_i(c) = ‖z_i‖ + max_{k∈c} ‖z_k‖`` (≥ every such distance, by the triangle inequality; 2 for unit vectors),
       so an accepted member has probability ∝ its distance. ``proposals`` members are tried per round; after
       ``max_rounds`` rounds the (rare) draws still open are made from the exact within-cluster distribution.

    ``draw="product"`` (the other reading, ``P(k) ∝ w(c_k)·‖z_i − z_k‖``): each proposal draws its cluster anew
    with probability ``∝ w(c)·N_c`` (``c ≠ c_i``), a member uniformly, and accepts it with probability
    ``‖z_i − z_k‖ / (‖z_i‖ + max_k ‖z_k‖)`` — one bound for all clusters, so the accepted member has probability
    ``∝ w(c_k)·‖z_i − z_k‖``; the rare draws still open after ``max_rounds`` are made from the exact distribution.

    Draws are independent (with replacement): one negative per anchor is the published setting; more is an
    extension. CPU tensors; ``generator`` is a CPU ``torch.Generator``.
    """

    def __init__(
        self,
        bank: torch.Tensor,
        bank_clusters: torch.Tensor,
        cluster_probs: torch.Tensor,
        epsilon: float = 0.1,
        proposals: int = 8,
        max_rounds: int = 16,
        draw: str = "two_stage",
    ):
        _check_draw(draw)
        self.draw = draw
        self.bank = bank.detach().float().cpu()
        self.weights = cluster_weights(cluster_probs, epsilon)
        self.n_clusters = self.weights.numel()
        self.clusters = _labels(bank_clusters, self.bank.shape[0], "bank_clusters", self.n_clusters).cpu()
        self.size = torch.bincount(self.clusters, minlength=self.n_clusters)
        self.order = torch.argsort(self.clusters, stable=True)
        self.start = torch.cumsum(self.size, 0) - self.size
        norms = self.bank.norm(dim=1)
        self.max_norm = torch.zeros(self.n_clusters).scatter_reduce(
            0, self.clusters, norms, reduce="amax", include_self=True
        )
        self.proposals, self.max_rounds = proposals, max_rounds

    def cluster_probs_for(self, anchor_clusters: torch.Tensor) -> torch.Tensor:
        """``(B, C)``: the probability of drawing from each cluster, per anchor (``w̃_i``)."""
        c_a = _labels(
            anchor_clusters, len(torch.as_tensor(anchor_clusters).reshape(-1)), "anchor_clusters", self.n_clusters
        ).cpu()
        return _anchor_cluster_probs(c_a, self.size > 0, self.weights)

    def sample(
        self,
        anchor_embeddings: torch.Tensor,
        anchor_clusters: torch.Tensor,
        num_negatives: int = 1,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """``(B, num_negatives)`` indices into the bank."""
        if num_negatives < 1:
            raise FairmtError(f"num_negatives must be >= 1, got {num_negatives}")
        z_a = anchor_embeddings.detach().float().cpu()
        if z_a.dim() != 2 or z_a.shape[1] != self.bank.shape[1]:
            raise FairmtError(f"anchors must be (B, {self.bank.shape[1]}), got {tuple(z_a.shape)}")
        cw = self.cluster_probs_for(anchor_clusters)
        b, m = z_a.shape[0], num_negatives
        if b == 0:
            return torch.zeros(0, m, dtype=torch.long)
        if self.draw == "product":
            return self._sample_product(z_a, torch.as_tensor(anchor_clusters).reshape(-1).long().cpu(), m, generator)
        cl = torch.multinomial(cw.float(), m, replacement=True, generator=generator).reshape(-1)  # (B·m,)
        anchor = torch.arange(b).repeat_interleave(m)
        bound = z_a.norm(dim=1)[anchor] + self.max_norm[cl]
        size, start, order = self.size[cl], self.start[cl], self.order
        out = torch.full((b * m,), -1, dtype=torch.long)
        open_rows = torch.arange(b * m)
        for _ in range(self.max_rounds):
            if open_rows.numel() == 0:
                break
            r = open_rows.numel()
            sz = size[open_rows][:, None]
            local = torch.minimum((torch.rand(r, self.proposals, generator=generator) * sz).long(), sz - 1)
            cand = order[start[open_rows][:, None] + local]  # (r, proposals), uniform members of the chosen cluster
            d = (self.bank[cand] - z_a[anchor[open_rows]][:, None, :]).norm(dim=-1)
            bnd = bound[open_rows][:, None]
            ratio = torch.where(bnd > 0, d / bnd.clamp(min=1e-30), torch.ones_like(d))
            accept = torch.rand(r, self.proposals, generator=generator) < ratio
            has = accept.any(1)
            first = accept.float().argmax(1)  # the first accepted proposal: i.i.d. proposals, so a valid draw
            out[open_rows[has]] = cand[has, first[has]]
            open_rows = open_rows[~has]
        for row in open_rows.tolist():  # exact fallback over all members of the chosen cluster
            c = int(cl[row])
            members = order[int(self.start[c]) : int(self.start[c] + self.size[c])]
            d = (self.bank[members] - z_a[anchor[row]]).norm(dim=-1).double()
            probs = d / d.sum() if float(d.sum()) > 0 else torch.full_like(d, 1.0 / len(d))
            out[row] = members[torch.multinomial(probs, 1, generator=generator)]
        return out.reshape(b, m)

    def _product_cluster_probs(self, anchor_clusters: torch.Tensor) -> torch.Tensor:
        """``(B, C)``: the proposal's cluster distribution of the product draw, ``∝ w(c)·N_c`` over ``c ≠ c_i``."""
        c = self.n_clusters
        allowed = (self.size > 0)[None, :] & (torch.arange(c)[None, :] != anchor_clusters[:, None])
        cw = torch.where(
            allowed,
            (self.weights * self.size.double())[None, :].expand(len(anchor_clusters), -1),
            torch.zeros(()).double(),
        )
        return cw / cw.sum(1, keepdim=True)

    def _sample_product(self, z_a: torch.Tensor, c_a: torch.Tensor, m: int, generator) -> torch.Tensor:
        b = z_a.shape[0]
        anchor = torch.arange(b).repeat_interleave(m)
        cw = self._product_cluster_probs(c_a).float()
        bound = z_a.norm(dim=1)[anchor] + self.max_norm.max()
        out = torch.full((b * m,), -1, dtype=torch.long)
        open_rows = torch.arange(b * m)
        for _ in range(self.max_rounds):
            if open_rows.numel() == 0:
                break
            r = open_rows.numel()
            cl = torch.multinomial(cw[anchor[open_rows]], self.proposals, replacement=True, generator=generator)
            sz = self.size[cl]
            local = torch.minimum((torch.rand(r, self.proposals, generator=generator) * sz).long(), sz - 1)
            cand = self.order[self.start[cl] + local]  # (r, proposals): a uniform member of each proposed cluster
            d = (self.bank[cand] - z_a[anchor[open_rows]][:, None, :]).norm(dim=-1)
            bnd = bound[open_rows][:, None]
            ratio = torch.where(bnd > 0, d / bnd.clamp(min=1e-30), torch.ones_like(d))
            accept = torch.rand(r, self.proposals, generator=generator) < ratio
            has = accept.any(1)
            first = accept.float().argmax(1)
            out[open_rows[has]] = cand[has, first[has]]
            open_rows = open_rows[~has]
        for row in open_rows.tolist():  # exact fallback over every candidate outside the anchor's cluster
            i = int(anchor[row])
            other = (self.clusters != c_a[i]).double()
            d = (self.bank - z_a[i]).norm(dim=-1).double()
            mass = self.weights[self.clusters] * other * d
            probs = (
                mass / mass.sum()
                if float(mass.sum()) > 0
                else self.weights[self.clusters] * other / (self.weights[self.clusters] * other).sum()
            )
            out[row] = torch.multinomial(probs, 1, generator=generator)
        return out.reshape(b, m)


def sample_fair_negatives(
    anchor_embeddings: torch.Tensor,
    anchor_clusters: torch.Tensor,
    bank: torch.Tensor,
    bank_clusters: torch.Tensor,
    cluster_probs: torch.Tensor,
    num_negatives: int = 1,
    epsilon: float = 0.1,
    generator: torch.Generator | None = None,
    draw: str = "two_stage",
) -> torch.Tensor:
    """Draw ``num_negatives`` negatives per anchor from the whole set ``bank`` (Algorithm 1, lines 9–14); see
    :class:`FairNegativeSampler` (build one and call :meth:`~FairNegativeSampler.sample` to draw repeatedly from the
    same ``Z``). Returns ``(B, num_negatives)`` indices into ``bank``.

    Example::

        >>> Z = torch.nn.functional.normalize(torch.randn(1000, 128), dim=-1); c = torch.randint(0, 4, (1000,))
        >>> p = torch.bincount(c, minlength=4) / 1000.0
        >>> neg = sample_fair_negatives(Z[:8], c[:8], Z, c, p)          # (8, 1)
    """
    sampler = FairNegativeSampler(bank, bank_clusters, cluster_probs, epsilon, draw=draw)
    return sampler.sample(anchor_embeddings, anchor_clusters, num_negatives, generator)
