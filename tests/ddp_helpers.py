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
