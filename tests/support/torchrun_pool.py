"""Two-process runs for the tests without paying torchrun's start-up for each: one ``torchrun --standalone
--nproc_per_node 2`` launch of ``torchrun_pool_worker.py`` serves every two-process DDP job of a pytest process (the
files in :data:`FILES` run on one xdist worker), in order (the ``torchrun_pool`` fixture of ``tests/conftest.py``).
A job is a script run as under torchrun:

    torchrun_pool.run(HERE / "ddp_ccd_script.py", model_dir, data, out, "4", cwd=tmp_path)

runs what ``torchrun --standalone --nproc_per_node 2 ddp_ccd_script.py MODEL_DIR DATA OUT 4`` runs, on the two
processes of the pool (same RANK/WORLD_SIZE/MASTER_ADDR environment, gloo), and fails the test with the job's
traceback and both ranks' output when it fails. A failed or timed-out job kills the pool's whole process group; the
next job starts a fresh pool. Each process starts with ``FAIRMT_TEST_POOL=1`` (``ddp_helpers.teardown`` then keeps
the process group for the next job).

Each launch of a two-process test used to cost ~8 s of wall time and ~15 s of CPU time before its first step
(torchrun, then torch + transformers + the trainer imported in both processes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import procs
from time_budget import mark_slow

WORKER = Path(__file__).resolve().parent / "torchrun_pool_worker.py"

# The test files that ask for the ``torchrun_pool`` fixture. Under ``-n 2 --dist loadfile`` tests/conftest.py hands them
# to one xdist worker as one unit, in turn, so that one pool serves them all: a second pool cost ~10-15 s of CPU more
# (torchrun and two ranks importing torch, transformers and the trainers). A file missing here still passes, with a pool
# of its own when it lands on the other worker; tests/project/test_torchrun_pool.py checks that the list is whole.
FILES = frozenset(
    {
        "test_adversarial.py",
        "test_backends.py",
        "test_ccd_trainer.py",
        "test_distributed_gather.py",
        "test_fair_contrastive_trainer.py",
        "test_fairseq_plugin.py",
        "test_gacl_ddp.py",
        "test_gacl_recipe.py",
        "test_sampling.py",
        "test_sharded_training.py",
    }
)

POOL_MARK = "starts_torchrun_pool"  # the keyword of a test marked slow because it asks for the pool


def mark_pool_users_slow(items: list) -> int:
    """Give the ``slow`` mark to every collected test that asks for the ``torchrun_pool`` fixture (itself or through
    another fixture) and has no ``slow`` mark yet; the number marked. The first such test of a run starts the pool (a
    torchrun launch whose two processes import torch, transformers and the trainers: 15-20 s of wall time on 2
    cores), so a pool user in the inner loop (``-m "not slow"``) would start one there."""
    return mark_slow(items, lambda item: "torchrun_pool" in getattr(item, "fixturenames", ()), POOL_MARK)


class TorchrunPool:
    def __init__(self, root: Path, nproc: int = 2):
        self.root, self.nproc = Path(root), nproc
        self.proc: subprocess.Popen | None = None
        self.queue: Path | None = None
        self.launches = 0
        self.n = 0

    def _start(self) -> None:
        self.launches += 1
        self.queue = self.root / f"pool{self.launches}"
        self.queue.mkdir(parents=True)
        self.n = 0
        log = open(self.queue / "pool.log", "w")
        env = procs.env({"FAIRMT_TEST_POOL": "1", "FAIRMT_TEST_POOL_OWNER": str(os.getpid())}, tests_on_path=True)
        self.proc = subprocess.Popen(
            procs.torchrun_command(WORKER, self.queue, nproc=self.nproc),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.queue,
            env=env,
            start_new_session=True,
        )
        log.close()

    def _alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self, polite: bool = True) -> None:
        """Stop the pool: ask its processes to leave (``polite``), then kill torchrun's process group and the ranks,
        which torchrun starts in sessions of their own (by the pids they wrote: torchrun may have exited already,
        leaving a rank it was still stopping)."""
        if self.proc is None:
            return
        if polite and self._alive():
            (self.queue / "stop").write_text("")
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        procs.kill_group(self.proc)
        for pid_file in self.queue.glob("rank*.pid"):
            try:
                pid = json.loads(pid_file.read_text())["pid"]
                if "torchrun_pool_worker" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError, KeyError):
                pass  # gone already (or no /proc: torchrun's group kill is what is left)
        self.proc = None

    def _logs(self, n: int) -> str:
        parts = []
        for r in range(self.nproc):
            log = self.queue / f"job{n}.rank{r}.log"
            if log.exists():
                parts.append(f"--- rank {r} output ---\n{log.read_text(errors='replace')[-3000:]}")
        pool_log = self.queue / "pool.log"
        if pool_log.exists():
            parts.append(f"--- torchrun ---\n{pool_log.read_text(errors='replace')[-2000:]}")
        return "\n".join(parts)

    def run(self, script, *args, cwd, timeout: float = 240) -> None:
        """Run ``script ARGS...`` on every process of the pool (cwd ``cwd``); returns when all ranks have finished
        it, fails the test (after killing the pool) when one fails, the pool dies or ``timeout`` seconds pass."""
        if not self._alive():
            self._start()
        n, self.n = self.n, self.n + 1
        job = {"script": str(script), "argv": [str(a) for a in args], "cwd": str(cwd)}
        tmp = self.queue / f"job{n}.json.tmp"
        tmp.write_text(json.dumps(job))
        os.replace(tmp, self.queue / f"job{n}.json")
        statuses = [self.queue / f"job{n}.rank{r}.status" for r in range(self.nproc)]
        deadline = time.monotonic() + timeout
        what = f"{Path(script).name} {' '.join(job['argv'])}"[:300]
        wait = 0.01
        try:
            while not all(s.exists() for s in statuses):
                failed = [s for s in statuses if s.exists() and not json.loads(s.read_text())["ok"]]
                if failed or not self._alive():
                    time.sleep(1)  # let the other rank and torchrun write their last lines
                    break
                if time.monotonic() > deadline:
                    self.close(polite=False)
                    pytest.fail(
                        f"two-process job did not finish in {timeout:g} s (the torchrun pool was killed "
                        f"with its process group): {what}\n{self._logs(n)}",
                        pytrace=False,
                    )
                time.sleep(wait)
                wait = min(2 * wait, 0.2)  # a job runs for seconds: no need to look 20 times a second
            errors = [json.loads(s.read_text()).get("error") for s in statuses if s.exists()]
            if len(errors) < self.nproc or any(errors):
                detail = "\n".join(e for e in errors if e)
                self.close(polite=False)
                pytest.fail(f"two-process job failed: {what}\n{detail}\n{self._logs(n)}", pytrace=False)
        except BaseException:
            if self._alive() and not all(s.exists() for s in statuses):
                self.close(polite=False)  # interrupted (pytest-timeout, Ctrl-C) with the job running: no orphans
            raise
