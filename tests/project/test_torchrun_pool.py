"""The test suite's torchrun pool (tests/support/torchrun_pool.py): jobs run on both ranks of one launch in turn, in one
process group; a failing or hanging job fails the test naming it and leaves no process behind; the next job gets a
fresh pool."""

import ast
import json
from pathlib import Path

import pytest

import procs
import sources
from pytest_standins import CollectedItem
from torchrun_pool import FILES, POOL_MARK, TorchrunPool, mark_pool_users_slow

JOB = """
import json, os, sys
import torch
import torch.distributed as dist

if not dist.is_initialized():
    dist.init_process_group("gloo")
t = torch.tensor([float(os.environ["RANK"]) + 1])
dist.all_reduce(t)
open(f"{sys.argv[1]}.{os.environ['RANK']}", "w").write(json.dumps(
    {"world": int(os.environ["WORLD_SIZE"]), "sum": float(t), "pid": os.getpid(), "cwd": os.getcwd(),
     "argv": sys.argv[1:]}))
from ddp_helpers import teardown
teardown()
"""


@pytest.mark.slow
def test_jobs_share_one_launch_and_failures_restart_it(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nif os.environ['RANK'] == '1':\n    raise ValueError('rank one broke')\n")
    hang = tmp_path / "hang.py"
    hang.write_text("import time\ntime.sleep(600)\n")
    pool = TorchrunPool(tmp_path / "pool")
    try:
        for n in (1, 2):
            pool.run(script, tmp_path / f"out{n}", "x y", cwd=tmp_path)
        runs = {(n, r): json.loads((tmp_path / f"out{n}.{r}").read_text()) for n in (1, 2) for r in (0, 1)}
        # both ranks, one process group (1 + 2 summed), the script's argv and working directory
        assert all(v["world"] == 2 and v["sum"] == 3.0 and v["cwd"] == str(tmp_path) for v in runs.values())
        assert runs[1, 0]["argv"] == [str(tmp_path / "out1"), "x y"]
        # the second job ran in the same two processes: one launch
        assert {runs[1, r]["pid"] for r in (0, 1)} == {runs[2, r]["pid"] for r in (0, 1)} and pool.launches == 1

        with pytest.raises(pytest.fail.Exception, match=r"(?s)two-process job failed: bad\.py.*rank one broke"):
            pool.run(bad, cwd=tmp_path)
        # the broken pool was killed (both ranks: torchrun starts them in sessions of their own)
        assert procs.wait_for(lambda: not any(procs.alive(runs[1, r]["pid"]) for r in (0, 1)), timeout=10)
        pool.run(script, tmp_path / "out3", cwd=tmp_path)  # and the next job starts a fresh one
        assert pool.launches == 2 and json.loads((tmp_path / "out3.0").read_text())["sum"] == 3.0

        ranks = [json.loads((tmp_path / f"out3.{r}").read_text())["pid"] for r in (0, 1)]
        with pytest.raises(pytest.fail.Exception, match=r"two-process job did not finish in 1 s .*hang\.py"):
            pool.run(hang, cwd=tmp_path, timeout=1)
        assert procs.wait_for(lambda: not any(procs.alive(pid) for pid in ranks), timeout=10)  # killed, both ranks
    finally:
        pool.close()
    assert pool.proc is None


def test_the_files_that_use_the_pool_are_scheduled_together():
    """torchrun_pool.FILES (one xdist work unit, one pool) names exactly the test files with a test or fixture that
    asks for the ``torchrun_pool`` fixture."""
    users = set()
    for path in (Path(__file__).resolve().parents[1]).rglob("test_*.py"):
        for node in sources.nodes(path):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(a.arg == "torchrun_pool" for a in node.args.args + node.args.kwonlyargs):
                    users.add(path.name)
    assert users == FILES, (
        f"missing from torchrun_pool.FILES: {users - FILES}; listed but not using it: {FILES - users}"
    )


def test_a_test_that_asks_for_the_pool_is_slow(request):
    """The inner loop (``-m "not slow"``) starts no pool: a test that asks for the ``torchrun_pool`` fixture, itself or
    through another fixture (pytest's ``fixturenames`` holds the whole closure), gets the ``slow`` mark at collection;
    one that has it already, or does not ask, is left as it is."""
    items = [
        CollectedItem("a", ["runs", "work", "torchrun_pool"]),
        CollectedItem("b", ["torchrun_pool"], "slow"),
        CollectedItem("c", ["tmp_path"]),
    ]
    assert mark_pool_users_slow(items) == 1
    assert [[m.name for m in i.marks] for i in items] == [["slow", POOL_MARK], ["slow"], []]
    # and in this run (tests/conftest.py's collection hook): no test selected asks for the pool without the mark
    unmarked = [
        i.nodeid
        for i in request.session.items
        if "torchrun_pool" in i.fixturenames and not i.get_closest_marker("slow")
    ]
    assert not unmarked, unmarked
