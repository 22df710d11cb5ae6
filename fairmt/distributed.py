"""Gathering in-batch candidates from every process, keeping gradients.

Contrastive losses use the whole global batch as candidates. ``gather_with_grad`` concatenates a tensor from
all ranks along dim 0 with an autograd-aware all-gather (``all_gather_tensor_autograd``; its backward sums the
incoming gradients back onto each rank), so the gradient of a rank's loss reaches the encoder of the rank that
produced a candidate. Combined with DDP's gradient averaging this gives exactly the gradient of the mean loss
over the concatenated batch (tested on 2 gloo processes). Per-rank batch sizes must be equal
(``dataloader_drop_last=True``). Outside ``torch.distributed`` both functions return their input.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from fairmt.errors import FairmtError


def _active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    return dist.get_world_size() if _active() else 1


def rank() -> int:
    return dist.get_rank() if _active() else 0


def _check_equal_sizes(x: torch.Tensor) -> None:
    size = torch.tensor([x.shape[0]], device=x.device)
    sizes = [torch.zeros_like(size) for _ in range(world_size())]
    dist.all_gather(sizes, size)
    if len({int(s) for s in sizes}) != 1:
        raise FairmtError(
            f"per-process batch sizes differ ({[int(s) for s in sizes]}); cross-process contrastive candidates need "
            "equal sizes: set dataloader_drop_last=True"
        )


def gather_with_grad(x: torch.Tensor, check_sizes: bool = True) -> torch.Tensor:
    """All-gather ``x`` (dim 0) from every process; gradients flow back to each process's slice."""
    if not _active():
        return x
    from torch.distributed._functional_collectives import all_gather_tensor_autograd, wait_tensor

    if check_sizes:
        _check_equal_sizes(x)
    out = all_gather_tensor_autograd(x.contiguous(), gather_dim=0, group=dist.group.WORLD)
    return wait_tensor(out)


def gather_nograd(x: torch.Tensor) -> torch.Tensor:
    """All-gather ``x`` (dim 0) without gradient (labels, genders)."""
    if not _active():
        return x
    parts = [torch.empty_like(x) for _ in range(world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, dim=0)
