"""FairBatch (Roh, Lee, Whang & Suh, ICLR 2021), as fairlib runs it (``DyBT: FairBatch``, ``DyBTObj: stratified_y``
/ ``EO``): a batch sampler that adapts, every epoch, the share of each protected group within each class of the
batches so that the groups' training losses within a class move together (equal opportunity / equalized odds).

State: ``λ_{y,g}`` — the share of group ``g`` among the rows of class ``y`` in a batch, initially ``n_{y,g} / n_y``.
At the start of every epoch, from the per-example training losses ``ℓ_i`` of the current model (``loss_fn``):

1. ``L_{y,g}`` = mean loss of cell (y, g), ``L_y`` = mean loss of class y;
2. per class, the group ``g*`` with the largest ``|L_{y,g} − L_y|`` (ties: the last such group, as fairlib);
   ``a = +α`` if ``L_{y,g*} > L_y`` else ``−α``;
3. ``λ_{y,g*} += a``, every other group of the class ``λ_{y,g} −= a / (|G| − 1)`` (fairlib's
   ``+(1 + 1/(|G|−1))·a`` on ``g*`` then ``−a/(|G|−1)`` on every group: the same);
4. per class, shift so that the smallest ``λ`` is ≥ 0, then divide by the sum;
5. cell ``(y, g)`` contributes ``round(λ_{y,g} · B · n_y / N)`` rows to each of the ``⌊N / B⌋`` batches (``B`` the
   batch size), walked through a seeded permutation of the cell without replacement (wrapping around), and each
   batch is shuffled (each epoch walks a fresh permutation of every cell, as fairlib).

Departures from fairlib, each deliberate: draws from a seeded ``numpy`` generator (fairlib: the global ``random``);
the wrap-around of a cell's permutation continues where it left off (fairlib restarts at an offset equal to the
number of rows taken from the tail, a slip that repeats some rows and skips others); an empty (y, g) cell is a
:class:`~fairmt.errors.FairmtError` naming it (fairlib fails with an index error); one process only.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from fairmt.errors import FairmtError

__all__ = ["FairBatchSampler"]


class FairBatchSampler:
    """A ``torch.utils.data`` batch sampler (an iterable of index lists; ``len`` = batches per epoch).

    Args:
        labels, groups: the training rows' task labels and protected groups (ints).
        batch_size: ``B``.
        loss_fn: returns the current model's per-example training loss (shape ``(N,)``, row order of ``labels``);
            called at the start of every epoch.
        alpha: the step ``α`` of the λ update (fairlib's ``DyBTalpha``, default 0.1).
        seed: seeds the draws.
    """

    def __init__(
        self,
        labels: Sequence[int],
        groups: Sequence[int],
        batch_size: int,
        loss_fn: Callable[[], np.ndarray],
        alpha: float = 0.1,
        seed: int = 0,
    ):
        self.y = np.asarray(labels)
        self.g = np.asarray(groups)
        if self.y.shape != self.g.shape or self.y.ndim != 1:
            raise FairmtError("FairBatch needs one label and one group per training row")
        if batch_size < 1 or alpha <= 0:
            raise FairmtError(f"FairBatch needs a positive batch size and alpha, got {batch_size}, {alpha}")
        self.N, self.batch_size, self.alpha, self.loss_fn = len(self.y), int(batch_size), float(alpha), loss_fn
        self.batch_num = self.N // self.batch_size
        if self.batch_num < 1:
            raise FairmtError(f"FairBatch: {self.N} training rows are fewer than one batch of {self.batch_size}")
        self.y_items = sorted(set(self.y.tolist()))
        self.g_items = sorted(set(self.g.tolist()))
        if len(self.g_items) < 2:
            raise FairmtError("FairBatch needs at least two protected groups in the training set")
        self.index = {
            c: np.flatnonzero((self.y == c[0]) & (self.g == c[1]))
            for c in itertools.product(self.y_items, self.g_items)
        }
        empty = [c for c, idx in self.index.items() if len(idx) == 0]
        if empty:
            raise FairmtError(
                f"FairBatch: no training row in (label, group) cell(s) {empty[:5]}; every group needs "
                "examples of every class"
            )
        self.n_y = {y: int(np.sum(self.y == y)) for y in self.y_items}
        self.lam = {c: len(self.index[c]) / self.n_y[c[0]] for c in self.index}
        self.rng = np.random.default_rng(seed)
        self._order = {c: self.rng.permutation(idx) for c, idx in self.index.items()}
        self._pos = {c: 0 for c in self.index}
        self.history: list[dict[str, float]] = []

    def __len__(self) -> int:
        return self.batch_num

    def adjust(self, losses: np.ndarray) -> None:
        """One λ update from per-example losses (steps 1–4 of the module docstring)."""
        losses = np.asarray(losses, dtype=np.float64)
        if losses.shape != (self.N,) or not np.all(np.isfinite(losses)):
            raise FairmtError(f"FairBatch: expected {self.N} finite per-example losses, got shape {losses.shape}")
        n_groups = len(self.g_items)
        for y in self.y_items:
            l_y = float(losses[self.y == y].mean())
            l_yg = {g: float(losses[self.index[(y, g)]].mean()) for g in self.g_items}
            best, best_diff = None, 0.0
            for g in self.g_items:
                diff = abs(l_yg[g] - l_y)
                if diff >= best_diff:
                    best, best_diff = g, diff
            a = self.alpha if l_yg[best] > l_y else -self.alpha
            for g in self.g_items:
                self.lam[(y, g)] += a if g == best else -a / (n_groups - 1)
            low = min(self.lam[(y, g)] for g in self.g_items)
            if low < 0:
                for g in self.g_items:
                    self.lam[(y, g)] -= low
            total = sum(self.lam[(y, g)] for g in self.g_items)
            for g in self.g_items:
                self.lam[(y, g)] /= total
        self.history.append({f"{y}|{g}": v for (y, g), v in self.lam.items()})

    def cell_sizes(self) -> dict[tuple[int, int], int]:
        """Rows of each (label, group) cell in every batch: ``round(λ_{y,g} · B · n_y / N)``."""
        return {c: int(round(self.lam[c] * self.batch_size * self.n_y[c[0]] / self.N)) for c in self.index}

    def _take(self, cell: tuple[int, int], k: int) -> np.ndarray:
        order, out = self._order[cell], []
        while k > 0:
            if self._pos[cell] >= len(order):
                self._order[cell] = order = self.rng.permutation(self.index[cell])
                self._pos[cell] = 0
            step = min(k, len(order) - self._pos[cell])
            out.append(order[self._pos[cell] : self._pos[cell] + step])
            self._pos[cell] += step
            k -= step
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def __iter__(self) -> Iterator[list[int]]:
        self.adjust(self.loss_fn())
        sizes = self.cell_sizes()
        self._order = {c: self.rng.permutation(idx) for c, idx in self.index.items()}  # a fresh pass every epoch
        self._pos = {c: 0 for c in self.index}
        for _ in range(self.batch_num):
            batch = np.concatenate([self._take(c, sizes[c]) for c in self.index])
            self.rng.shuffle(batch)
            yield batch.tolist()
