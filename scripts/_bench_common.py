"""What the benchmark scripts share (``scripts/bench_classification.py``, ``scripts/bench_sampling.py``, ...): this
checkout first on ``sys.path`` and torch on a fixed number of threads (:func:`bench_torch`), one temporary folder for
the Trainers' output folders that is removed at the end, with their log lines sent to stderr so that ``--json``
leaves the JSON line alone on stdout (:func:`trainer_folder`), the CPU time of finished child processes
(:func:`children_cpu`), and the result printed (:func:`print_result`).

Not a ``bench_*.py`` file: ``scripts/bench.py`` does not run it."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bench_torch(threads: int | None = None):
    """torch, imported with this checkout first on ``sys.path``, on ``threads`` threads (default: OMP_NUM_THREADS,
    else 1): the two sides of a ratio measured on the same cores."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import torch

    torch.set_num_threads(threads or int(os.environ.get("OMP_NUM_THREADS", "1")))
    return torch


@contextlib.contextmanager
def trainer_folder(prefix: str, quiet_stdout: bool = True) -> Iterator[str]:
    """A temporary folder for the Trainers' ``output_dir`` (removed at the end, also on an error); with
    ``quiet_stdout`` the Trainers' log lines go to stderr meanwhile."""
    with (
        tempfile.TemporaryDirectory(prefix=prefix) as tmp,
        contextlib.redirect_stdout(sys.stderr) if quiet_stdout else contextlib.nullcontext(),
    ):
        yield tmp


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes and theirs (unlike wall time, not inflated by
    other users' processes)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def print_result(out: dict, as_json: bool) -> dict:
    """The result: one JSON line with ``--json`` (what ``scripts/bench.py`` reads), else indented."""
    print(json.dumps(out) if as_json else json.dumps(out, indent=2))
    return out
