"""Gradient caching for large contrastive batches (Gao et al., 2021, "Scaling Deep Contrastive Learning Batch Size
under Memory Limited Setup").

A contrastive loss couples every sample of the batch, so the batch cannot simply be split into gradient-accumulation
micro-batches. Gradient caching computes the exact full-batch gradient with the activation memory of one chunk:

1. forward every chunk **without** autograd, keep only the outputs (representations, logits) and the RNG state
   each chunk started from;
2. turn the concatenated outputs into leaf tensors, compute the full-batch loss on them and back-propagate to get
   ``∂L/∂outputs`` (cheap: no encoder graph);
3. re-forward each chunk **with** autograd, replaying its RNG state so that dropout draws the same masks, and
   back-propagate the cached output gradients through it (``Σ ⟨outputs, ∂L/∂outputs⟩`` as a surrogate), one chunk
   at a time, so only one chunk's activations are alive.

The result equals the gradient of the plain full-batch step (tested in ``tests/trainers/test_gradcache.py``). This is the
scheme of sentence-transformers' ``CachedMultipleNegativesRankingLoss``, whose ``RandContext`` the class below
mirrors; it is re-written here so the Trainers do not depend on sentence-transformers (an optional extra).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import torch
from torch.utils.checkpoint import get_device_states, set_device_states

from fairmt.errors import FairmtError


class RandContext:
    """Capture the CPU/accelerator RNG state now; ``with ctx:`` replays it (and restores the outer state after)."""

    def __init__(self, *tensors: torch.Tensor) -> None:
        self.cpu_state = torch.get_rng_state()
        self.devices, self.device_states = get_device_states(*tensors)
        self._fork = None

    def __enter__(self) -> None:
        self._fork = torch.random.fork_rng(devices=self.devices, enabled=True)
        self._fork.__enter__()
        torch.set_rng_state(self.cpu_state)
        set_device_states(self.devices, self.device_states)

    def __exit__(self, *exc: Any) -> None:
        assert self._fork is not None
        self._fork.__exit__(*exc)
        self._fork = None


def _tensors_of(batch: Mapping[str, Any]) -> list[torch.Tensor]:
    return [v for v in batch.values() if isinstance(v, torch.Tensor)]


def split_batch(batch: Mapping[str, Any], chunk_size: int) -> list[dict[str, Any]]:
    """Split every tensor of ``batch`` along dim 0 into chunks of ``chunk_size`` (other values are shared)."""
    if chunk_size < 1:
        raise FairmtError(f"gradient-cache chunk size must be >= 1, got {chunk_size}")
    sizes = {v.shape[0] for v in _tensors_of(batch)}
    if len(sizes) != 1:
        raise FairmtError(f"all batch tensors must share dim 0 to be split into chunks, got sizes {sorted(sizes)}")
    n = sizes.pop()
    out = []
    for start in range(0, n, chunk_size):
        out.append({k: (v[start : start + chunk_size] if isinstance(v, torch.Tensor) else v) for k, v in batch.items()})
    return out


ForwardFn = Callable[[Mapping[str, Any]], Sequence[torch.Tensor]]
LossFn = Callable[[list[torch.Tensor]], torch.Tensor]


def cached_backward(
    forward: ForwardFn,
    batches: Sequence[Mapping[str, Any]],
    loss_fn: LossFn,
    chunk_size: int,
    backward: Callable[[torch.Tensor], None] | None = None,
    no_sync: Callable[[], Any] | None = None,
) -> torch.Tensor:
    """Gradient-cached ``loss_fn(forward(batch) for batch in batches).backward()``.

    Args:
        forward: maps one (chunk of a) batch to a tuple of output tensors, each ``(n_chunk, ...)``; the number of
            outputs must be the same for every call. Outputs that need no gradient may be returned anyway.
        batches: the model inputs of each *view* (e.g. ``[inputs, inputs]`` for two dropout views, or
            ``[inputs, augmented_inputs]``); each is split into chunks of ``chunk_size``.
        loss_fn: receives, per view and per output, the concatenated full-batch tensors, flattened into one list
            ``[view0_out0, view0_out1, ..., view1_out0, ...]``, and returns the scalar loss.
        backward: how to back-propagate a scalar (default ``Tensor.backward``; Trainers pass
            ``accelerator.backward``).
        no_sync: context factory that suppresses gradient synchronisation (DDP) for all but the last chunk.

    Returns:
        The detached loss value.
    """
    backward = backward or (lambda t: t.backward())
    chunked = [split_batch(b, chunk_size) for b in batches]
    # 1. forward without autograd, recording RNG states
    states: list[list[RandContext]] = []
    cached: list[list[tuple[torch.Tensor, ...]]] = []
    for view_chunks in chunked:
        s_view, c_view = [], []
        for chunk in view_chunks:
            s_view.append(RandContext(*_tensors_of(chunk)))
            with torch.no_grad():
                outs = tuple(forward(chunk))
            c_view.append(tuple(o.detach() for o in outs))
        states.append(s_view)
        cached.append(c_view)
    n_out = len(cached[0][0])
    # 2. loss on leaf copies of the concatenated outputs
    leaves: list[torch.Tensor] = []
    for c_view in cached:
        for j in range(n_out):
            full = torch.cat([c[j] for c in c_view], dim=0)
            leaves.append(full.requires_grad_(full.is_floating_point()))
    loss = loss_fn(leaves)
    leaf_grads = torch.autograd.grad(loss, [t for t in leaves if t.requires_grad], allow_unused=True)
    grads_iter: Iterator[torch.Tensor | None] = iter(leaf_grads)
    grads = [next(grads_iter) if t.requires_grad else None for t in leaves]
    # 3. chunked re-forward with autograd, replaying RNG, back-propagating cached gradients
    total_chunks = sum(len(v) for v in chunked)
    done = 0
    for vi, view_chunks in enumerate(chunked):
        offset = 0
        for ci, chunk in enumerate(view_chunks):
            done += 1
            with states[vi][ci]:
                outs = tuple(forward(chunk))
            n = outs[0].shape[0]
            surrogate = None
            for j, o in enumerate(outs):
                g = grads[vi * n_out + j]
                if g is None or not o.requires_grad:
                    continue
                term = (o * g[offset : offset + n].to(o.dtype)).sum()
                surrogate = term if surrogate is None else surrogate + term
            offset += n
            if surrogate is None:
                continue
            ctx = no_sync() if (no_sync is not None and done < total_chunks) else nullcontext()
            with ctx:
                backward(surrogate)
    return loss.detach()
