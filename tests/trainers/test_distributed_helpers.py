"""fairmt.distributed's view of the launch (WORLD_SIZE/RANK/LOCAL_RANK) and of the live process group, without a
process group (the 2-process runs are in test_distributed_gather.py, test_backends.py and the DDP tests)."""

import sys

import pytest

import procs
from fairmt import distributed
from fairmt.errors import FairmtError

LAUNCH_VARS = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def env(monkeypatch):
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_a_plain_run_is_one_main_process(env):
    assert distributed.launch_world_size() == 1 and distributed.is_main_process()
    assert distributed.init_from_launch() is None
    assert distributed.local_device("cuda") == "cuda" and distributed.local_device(None) is None


@pytest.mark.parametrize(("world", "rank", "main"), [("2", "0", True), ("2", "1", False), ("4", "3", False)])
def test_the_launch_says_who_is_main(env, world, rank, main):
    env.setenv("WORLD_SIZE", world)
    env.setenv("RANK", rank)
    assert distributed.launch_world_size() == int(world)
    assert distributed.is_main_process() is main


def test_a_bad_world_size_counts_as_one_process(env):
    env.setenv("WORLD_SIZE", "two")
    env.setenv("RANK", "1")
    assert distributed.launch_world_size() == 1 and distributed.is_main_process()


def test_each_process_takes_its_own_gpu(env):
    env.setenv("WORLD_SIZE", "2")
    env.setenv("LOCAL_RANK", "1")
    assert distributed.local_device("cuda") == "cuda:1"
    assert distributed.local_device("cuda:0") == "cuda:0" and distributed.local_device("cpu") == "cpu"


def test_a_launch_without_a_rendezvous_is_refused_clearly(env):
    env.setenv("WORLD_SIZE", "2")
    with pytest.raises(FairmtError, match="WORLD_SIZE=2 but MASTER_ADDR, MASTER_PORT, RANK unset"):
        distributed.init_from_launch()


def test_without_a_process_group_the_group_helpers_are_the_identity_and_import_no_torch():
    code = "import sys; from fairmt import distributed as d; print(d.world_size(), d.rank(), 'torch' in sys.modules)"
    out = procs.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "0", "False"]
    import torch

    x = torch.arange(6.0).reshape(3, 2)
    assert distributed.gather_with_grad(x) is x and distributed.gather_nograd(x) is x


class _FakeGroup:
    """Stands in for ``torch.distributed`` with a live group of two processes; records what is called, in order. A
    DDP-like holder of the group (``holder``) records when it is freed."""

    def __init__(self, barrier_error=None):
        self.calls, self.barrier_error = [], barrier_error

    def is_available(self):
        return True

    def is_initialized(self):
        return "destroy_process_group" not in self.calls

    def get_world_size(self):
        return 2

    def get_rank(self):
        return 1

    def barrier(self):
        self.calls.append("barrier")
        if self.barrier_error:
            raise self.barrier_error

    def destroy_process_group(self):
        self.calls.append("destroy_process_group")


class _Holder:
    """A Trainer's DDP Reducer: holds the group, in a reference cycle (freed by the garbage collector only)."""

    def __init__(self, group):
        self.group, self.me = group, self

    def __del__(self):
        self.group.calls.append("reducer freed")


@pytest.mark.parametrize(
    ("rc", "error", "expected"),
    [
        (0, None, ["barrier", "exit 0"]),
        (0, RuntimeError("Connection closed by peer"), ["barrier", "exit 0"]),  # a peer that failed and left
        (2, None, ["exit 2"]),  # a failed rank does not wait for the others: they fail instead of hanging
    ],
)
def test_the_command_line_leaves_without_destroying_the_group(monkeypatch, capsys, rc, error, expected):
    """Issue 36's rule: after the barrier the process leaves with os._exit; the group (and whatever holds it, the
    DDP Reducer) is never destroyed, so no ~ProcessGroupGloo can block."""
    group = _FakeGroup(error)
    monkeypatch.setitem(sys.modules, "torch.distributed", group)

    def fake_exit(code):
        group.calls.append(f"exit {code}")
        raise SystemExit(code)

    monkeypatch.setattr(distributed.os, "_exit", fake_exit)
    with pytest.raises(SystemExit):
        distributed.leave_if_distributed(rc)
    assert group.calls == expected
    assert ("another process left early" in capsys.readouterr().err) == (error is not None)


def test_python_callers_free_what_holds_the_group_before_destroying_it(monkeypatch):
    group = _FakeGroup()
    monkeypatch.setitem(sys.modules, "torch.distributed", group)
    _Holder(group)  # dropped at once, alive until the garbage collector runs
    distributed.end_process_group()
    assert group.calls == ["reducer freed", "barrier", "destroy_process_group"]


def test_no_group_no_exit(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch.distributed", raising=False)
    assert distributed.leave_if_distributed(0) is None and distributed.end_process_group() is None
