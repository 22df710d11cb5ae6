"""One process of the test suite's torchrun pool (``tests/support/torchrun_pool.py``): started once by
``torchrun --standalone --nproc_per_node N torchrun_pool_worker.py QUEUE``, it runs the jobs the tests drop into
QUEUE, in order, each as ``python SCRIPT ARGS...`` would run it under torchrun (``runpy`` with ``__main__``, the
job's ``sys.argv`` and working directory), so the ~7 s of imports (torch, transformers, the trainers) are paid once
per test run instead of once per two-process test.

    QUEUE/jobN.json              {"script": ..., "argv": [...], "cwd": ...}, written by the test (atomically)
    QUEUE/jobN.rankR.log         the job's stdout and stderr on rank R
    QUEUE/jobN.rankR.status      {"ok": true} or {"ok": false, "error": traceback}, written when the job is over
    QUEUE/rankR.pid              {"pid": ...} of rank R, written at start (the pool kills its ranks by pid)
    QUEUE/stop                   leave (after destroying the process group)

A process also leaves when the torchrun agent or the pytest process that started the pool
(``FAIRMT_TEST_POOL_OWNER``) is gone, so a killed test run leaves no pool behind.

The process group the first job initialises (accelerate does it) stays up for the next jobs: ``ddp_helpers.teardown``
only synchronises the ranks in a pool (``FAIRMT_TEST_POOL=1``). Between jobs the environment variables, working
directory and ``sys.argv`` are restored and transformers' global DeepSpeed config is cleared, so a job sees what a
fresh torchrun process would, apart from the modules already imported and the live process group. A failed job
ends the pool's usefulness: the test side kills the pool and starts a fresh one for the next job.
"""

import gc
import json
import os
import sys
import time
import traceback
from pathlib import Path

import procs  # beside this script (the tests folder is on PYTHONPATH)

# seconds between two looks at the queue of an idle process: polling every 20 ms cost each rank 2 % of a core for the
# whole test run (a pytest process keeps a pool of two); a job waits at most this long to start
IDLE_POLL = 0.25


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _run_job(job: dict, log: Path) -> dict:
    saved_env = dict(os.environ)
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = os.dup(1), os.dup(2)
    with open(log, "w") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
    try:
        procs.in_process(job["script"], *job["argv"], cwd=job["cwd"])  # restores sys.argv and the directory
        status = {"ok": True}
    except SystemExit as exc:
        status = {"ok": True} if exc.code in (None, 0) else {"ok": False, "error": f"SystemExit({exc.code!r})"}
    except BaseException:  # noqa: BLE001 - reported to the test, which fails with it
        status = {"ok": False, "error": traceback.format_exc()}
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        for fd in saved_fds:
            os.close(fd)
        os.environ.clear()
        os.environ.update(saved_env)
        ds = sys.modules.get("transformers.integrations.deepspeed")
        if ds is not None:
            ds.unset_hf_deepspeed_config()
        gc.collect()  # the job's garbage; then what is left (imported modules, the process group) is frozen out of
        gc.freeze()  # the collector's sight, so the next job's collections walk that job's objects only
        from fairmt.trainers.faults import collector_managed_by_caller

        collector_managed_by_caller()  # and the trainers need not count the frozen objects to find that out
    return status


def main() -> None:
    queue, rank, owner = Path(sys.argv[1]), int(os.environ["RANK"]), int(os.environ["FAIRMT_TEST_POOL_OWNER"])
    os.environ["FAIRMT_TEST_POOL"] = "1"
    _write_json(queue / f"rank{rank}.pid", {"pid": os.getpid()})  # the pool kills its ranks by pid (own sessions)
    n = 0
    while True:
        job_file = queue / f"job{n}.json"
        wait = 0.01  # doubled up to IDLE_POLL while no job comes: a pool idles for minutes between a worker's tests
        while not job_file.exists():
            if (queue / "stop").exists() or os.getppid() == 1 or not procs.alive(owner):
                _leave()  # stopped, or the torchrun agent or the pytest process that owns the pool is gone
            time.sleep(wait)
            wait = min(2 * wait, IDLE_POLL)
        job = json.loads(job_file.read_text())
        status = _run_job(job, queue / f"job{n}.rank{rank}.log")
        _write_json(queue / f"job{n}.rank{rank}.status", status)
        if not status["ok"]:
            _leave(1)  # the process group may be broken: the test side starts a fresh pool
        n += 1


def _leave(code: int = 0) -> None:
    import torch

    if code == 0 and torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # see ddp_helpers.teardown: gloo may abort during interpreter finalisation


if __name__ == "__main__":
    main()
