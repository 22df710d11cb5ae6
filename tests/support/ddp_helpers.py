"""Shared by the torchrun test scripts (ddp_*_script.py)."""

import json

import torch


def write_run_report(trainer, out: str, log_key: str, **extra) -> None:
    """On the main process, write the training logs that carry ``log_key``, the world size and every replica's
    parameter checksum (gathered from all processes) to ``out`` as JSON."""
    checksum = float(sum(p.detach().double().sum() for p in trainer.model.parameters()))
    gathered = [checksum]
    if trainer.args.world_size > 1:
        gathered = [None] * trainer.args.world_size
        torch.distributed.all_gather_object(gathered, checksum)
    if trainer.is_world_process_zero():
        logs = [h for h in trainer.state.log_history if log_key in h]
        with open(out, "w") as f:
            json.dump({"logs": logs, "world_size": trainer.args.world_size, "checksums": gathered, **extra}, f)


def full_parameters(model) -> torch.Tensor:
    """Every parameter of ``model`` flattened into one float64 vector, whole on every process (FSDP2 shards
    parameters as DTensors: they are gathered)."""
    parts = []
    for p in model.parameters():
        t = p.detach()
        if hasattr(t, "full_tensor"):
            t = t.full_tensor()
        parts.append(t.double().reshape(-1))
    return torch.cat(parts)


def fcl_rows(n: int = 64, dim: int = 16) -> list[dict]:
    """Seeded 3-class, 2-group feature rows (a group direction added to class centres) for the FCL runs."""
    g = torch.Generator().manual_seed(0)
    centers, gdir = torch.randn(3, dim, generator=g) * 2, torch.randn(dim, generator=g)
    rows = []
    for i in range(n):
        y, a = i % 3, (i // 3) % 2
        x = centers[y] + (a - 0.5) * gdir + 0.5 * torch.randn(dim, generator=g)
        rows.append({"features": x.tolist(), "labels": y, "group": a})
    return rows


def teardown() -> None:
    """Destroy the process group and leave without interpreter finalisation: with torch 2.13 + gloo a process that
    exits with the group alive aborts ("terminate called without an active exception", exit -6) in about one run of
    five, and, rarely, one that destroyed it still does while C++ statics are torn down.

    In the test suite's torchrun pool (``FAIRMT_TEST_POOL=1``, tests/support/torchrun_pool.py) the processes run the next
    job in the same process group: the ranks only wait for each other here."""
    import os
    import sys

    if torch.distributed.is_initialized() and os.environ.get("FAIRMT_TEST_POOL") == "1":
        torch.distributed.barrier()
        return
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
