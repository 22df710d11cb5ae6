"""Process-group helpers for every layer: losses, trainers, translation, commands and recipes.

Two views of "the processes of this run", kept apart because they answer different questions:

* **the launch** — ``torchrun`` / ``accelerate launch`` give every process ``WORLD_SIZE``, ``RANK`` and
  ``LOCAL_RANK`` before any process group exists: :func:`launch_world_size`, :func:`is_main_process`
  (the process that prints and writes reports), :func:`local_device`, and
  :func:`init_from_launch` (a gloo group from that environment, for code that shards work itself, such as
  :func:`fairmt.translate.generate_translations`). These never import torch.
* **the live process group** (``torch.distributed`` initialised, by the Trainer/accelerate, fairseq or
  :func:`init_from_launch`): :func:`world_size`, :func:`rank`, and the gathers of contrastive losses —
  :func:`gather_with_grad` concatenates a tensor from all ranks along dim 0 with an autograd-aware all-gather
  (``all_gather_tensor_autograd``; its backward sums the incoming gradients back onto each rank), so the gradient of
  a rank's loss reaches the encoder of the rank that produced a candidate. Combined with DDP's gradient averaging
  this gives exactly the gradient of the mean loss over the concatenated batch (tested on 2 gloo processes).
  Per-rank batch sizes must be equal (``dataloader_drop_last=True``). Outside a process group of several processes
  they return their input (``world_size() == 1``, ``rank() == 0``). torch is not imported to find out: without it
  there is no process group.

:func:`replicated_shard` says whether a Trainer's model is replicated (DDP: each process may take a share of an
evaluation) or sharded (FSDP/DeepSpeed: every process must run every forward pass).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from fairmt.errors import FairmtError

if TYPE_CHECKING:  # pragma: no cover
    import torch

# ------------------------------------------------------------------------------------------------- the launch


def launch_world_size() -> int:
    """The number of processes of a ``torchrun`` / ``accelerate launch`` run (``WORLD_SIZE``; 1 otherwise)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def is_main_process() -> bool:
    """True on rank 0 of a multi-process run (and in a plain run): the process that prints and writes reports."""
    return launch_world_size() == 1 or os.environ.get("RANK", "0") == "0"


def local_device(device: str | None) -> str | None:
    """``cuda`` in one of several processes (torchrun / accelerate launch) is that process's GPU,
    ``cuda:$LOCAL_RANK``; anything else is kept."""
    if device == "cuda" and launch_world_size() > 1 and os.environ.get("LOCAL_RANK", "").isdigit():
        return f"cuda:{os.environ['LOCAL_RANK']}"
    return device


def init_from_launch():
    """``torch.distributed`` when this is one process of several (``WORLD_SIZE`` > 1), initialising a gloo process
    group from the launcher's environment if nobody has; ``None`` in a plain run."""
    if launch_world_size() == 1:
        return None
    import torch.distributed as dist

    if not dist.is_available():
        raise FairmtError("WORLD_SIZE > 1 but this torch has no torch.distributed; run one process")
    if not dist.is_initialized():
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "RANK") if v not in os.environ]
        if missing:
            raise FairmtError(
                f"WORLD_SIZE={os.environ['WORLD_SIZE']} but {', '.join(missing)} unset: launch with "
                "torchrun or accelerate launch, or unset WORLD_SIZE"
            )
        dist.init_process_group("gloo")
    return dist


# ------------------------------------------------------------------------------------------------ the end of a run
#
# The rule (torch 2.13, gloo; STACK-NOTES "Multi-process teardown"): never let a C++ destructor of the process group
# run in a rank of a multi-process fairmt run. Two ways it goes wrong, both after the work is done:
#   * ``~ProcessGroupGloo`` joins gloo's worker threads (``std::thread::join``). When the last reference to the
#     group is dropped with the GIL held — the DDP ``Reducer`` (the Trainer's wrapped model) freed *after*
#     ``destroy_process_group()`` removed the group from torch's registry, which is what ``fairmt train`` did until
#     issue 36 (the recipe's Trainer was dropped by ``train._run`` after ``run_recipe`` had destroyed the group) — a
#     worker that still needs the GIL can never finish: one rank blocks forever (3 runs of 3 in the report).
#   * A process that reaches interpreter finalisation with the group alive aborts in about one run of five
#     ("terminate called without an active exception", exit -6): a joinable gloo thread is destroyed.
# So the command line does neither: every rank meets the others at a barrier (no peer is still inside a collective
# when the connections close; a rank that failed skips it and leaves at once, so the others fail instead of waiting),
# flushes its logs and leaves with ``os._exit`` — no Reducer, group, gloo context or thread is destroyed at all, so
# there is nothing to join and nothing to abort. This is the one exit of every multi-process entry that goes through
# the ``fairmt`` command (``accelerate launch``/``torchrun -m fairmt train``, the runs of ``fairmt sweep --launcher
# accelerate``, sharded translation in ``torchrun -m fairmt eval ...``): :func:`fairmt.cli.main` calls
# :func:`leave_if_distributed` whatever the command. Python code that ran fairmt under a launcher uses
# :func:`end_process_group` (objects holding the group freed first, then the group).


def _live_group():
    """``torch.distributed`` when this process belongs to a live process group of several processes, else ``None``
    (torch not imported: no group)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    try:
        return dist if dist.get_world_size() > 1 else None
    except Exception:  # noqa: BLE001 - a group torch no longer answers for: treat it as live
        return dist


def leave_if_distributed(exit_code: int) -> None:
    """End a ``fairmt`` command that ran as one process of several: on success wait for every rank at a barrier,
    then flush and ``os._exit(exit_code)`` without tearing anything down (see the rule above). Returns when no
    multi-process group is live (a plain run keeps its ordinary exit)."""
    dist = _live_group()
    if dist is None:
        return
    import logging

    if exit_code == 0:
        try:
            dist.barrier()
        except Exception as err:  # noqa: BLE001 - a peer that failed and left: its own exit code tells the launcher
            print(
                f"fairmt: warning: rank {dist.get_rank()} finished its work but another process left early "
                f"({type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''})",
                file=sys.stderr,
            )
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(exit_code)


def end_process_group() -> None:
    """For Python code run under ``torchrun`` / ``accelerate launch`` (a script that called
    :func:`fairmt.commands.train.run_recipe` or a Trainer): end the process group in the order that never blocks.
    Drop every object that holds the group first — the Trainer and its DDP-wrapped model (its ``Reducer``), the
    accelerator — then call this: it collects them while the group is still registered, waits for every rank, and
    destroys the group, so that no Reducer is left to drop its last reference later. A Trainer still referenced
    afterwards would do exactly that (the hang the rule above describes): :func:`fairmt.cli.main` avoids the question
    by not destroying anything. No-op without a group."""
    import gc

    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    gc.collect()  # the DDP Reducer (its reference to the group) goes while the group is still registered
    if dist.get_world_size() > 1:
        dist.barrier()
    dist.destroy_process_group()


# ---------------------------------------------------------------------------------------- the live process group


def _dist():
    """``torch.distributed`` when a process group of several processes is live, else ``None``."""
    dist = sys.modules.get("torch.distributed")  # not imported: no process group
    if dist is not None and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


def world_size() -> int:
    """The size of the live process group (1 without one)."""
    dist = _dist()
    return dist.get_world_size() if dist else 1


def rank() -> int:
    """This process's rank in the live process group (0 without one)."""
    dist = _dist()
    return dist.get_rank() if dist else 0


def _check_equal_sizes(dist, x: torch.Tensor) -> None:
    import torch

    size = torch.tensor([x.shape[0]], device=x.device)
    sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, size)
    if len({int(s) for s in sizes}) != 1:
        raise FairmtError(
            f"per-process batch sizes differ ({[int(s) for s in sizes]}); cross-process contrastive candidates need "
            "equal sizes: set dataloader_drop_last=True"
        )


def gather_with_grad(x: torch.Tensor, check_sizes: bool = True) -> torch.Tensor:
    """All-gather ``x`` (dim 0) from every process; gradients flow back to each process's slice."""
    dist = _dist()
    if dist is None:
        return x
    from torch.distributed._functional_collectives import all_gather_tensor_autograd, wait_tensor

    if check_sizes:
        _check_equal_sizes(dist, x)
    out = all_gather_tensor_autograd(x.contiguous(), gather_dim=0, group=dist.group.WORLD)
    return wait_tensor(out)


def gather_nograd(x: torch.Tensor) -> torch.Tensor:
    """All-gather ``x`` (dim 0) without gradient (labels, genders)."""
    dist = _dist()
    if dist is None:
        return x
    import torch

    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, dim=0)


def replicated_shard() -> tuple[int, int]:
    """(process index, number of processes) when accelerate replicates the weights (DDP), else (0, 1)."""
    from accelerate import PartialState
    from accelerate.utils import DistributedType

    state = PartialState()
    replicated = {DistributedType.MULTI_CPU, DistributedType.MULTI_GPU, DistributedType.MULTI_NPU,
                  DistributedType.MULTI_XPU, DistributedType.MULTI_MLU, DistributedType.MULTI_MUSA,
                  DistributedType.MULTI_HPU}  # fmt: skip
    if state.num_processes > 1 and state.distributed_type in replicated:
        return state.process_index, state.num_processes
    return 0, 1


__all__ = [
    "end_process_group", "gather_nograd", "gather_with_grad", "init_from_launch", "is_main_process",
    "launch_world_size", "leave_if_distributed", "local_device", "rank", "replicated_shard", "world_size",
]  # fmt: skip
