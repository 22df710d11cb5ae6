"""``fairmt.forking.run_forked``: a function run in a fork of this process gets what a fresh interpreter's run gives
its caller (``subprocess.run(..., capture_output=True)``): its own stdout and stderr, stdin from /dev/null, SIGINT and
SIGTERM at their defaults, a root logger without handlers, torch on one thread, an exit status; nothing of this
process is written twice or run at the child's exit, and an interruption here stops the child."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time

import pytest

from fairmt import forking

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fairmt forks on Linux only")


def _what_the_child_sees() -> int:
    import torch

    root = logging.getLogger()
    with open("/proc/self/comm") as fh:
        comm = fh.read().strip()
    print("to stdout")
    print("to stderr", file=sys.stderr)
    seen = {
        "stdin": sys.stdin.read(),
        "sigint": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
        "sigterm": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
        "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "handlers": len(root.handlers),
        "level": root.level,
        "threads": torch.get_num_threads(),
        "comm": comm,
        "ppid": os.getppid(),
    }
    print(json.dumps(seen))
    return 3


def test_the_child_gets_what_a_fresh_interpreter_would():
    import torch

    root = logging.getLogger()
    handler, level, threads = logging.StreamHandler(sys.stdout), root.level, torch.get_num_threads()
    root.addHandler(handler)  # the parent's logging set-up: not the child's
    root.setLevel(logging.DEBUG)
    torch.set_num_threads(2)
    try:
        code, out, err = forking.run_forked(_what_the_child_sees, name=b"fairmt-test")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        torch.set_num_threads(threads)
    assert code == 3
    first, line = out.splitlines()
    assert first == "to stdout" and err == "to stderr\n"
    assert json.loads(line) == {
        "stdin": "",
        "sigint": True,
        "sigterm": True,
        "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),  # the parent's mask, back
        "handlers": 0,
        "level": logging.WARNING,
        "threads": 1,
        "comm": "fairmt-test",
        "ppid": os.getpid(),
    }
    assert torch.get_num_threads() == threads and root.handlers.count(handler) == 0  # this process: as it was


def _exit_with_message():
    raise SystemExit("the run's last word")


def _raise():
    raise ValueError("a bug in the target")


def _killed():
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize(
    ("target", "code", "stderr"),
    [
        (lambda: None, 0, ""),
        (lambda: 7, 7, ""),
        (lambda: sys.exit(0), 0, ""),
        (_exit_with_message, 1, "the run's last word\n"),
        (_raise, 1, "ValueError: a bug in the target\n"),
        (_killed, -signal.SIGKILL, ""),
    ],
    ids=["none", "a status", "exit 0", "exit with a message", "an exception", "killed"],
)
def test_exit_status_as_an_interpreter_gives_it(target, code, stderr):
    got, out, err = forking.run_forked(target)
    assert (got, out) == (code, "")
    assert err.endswith(stderr) and (target is not _raise or err.startswith("Traceback (most recent call last):"))


def test_nothing_buffered_here_is_written_by_the_child(tmp_path):
    """The child leaves by ``os._exit``: a file this process has written to but not flushed is written once, by this
    process (an interpreter's normal exit in the child would flush its copy of the buffer too)."""
    path = tmp_path / "log.txt"
    with open(path, "w") as fh:
        fh.write("written once by the parent\n")
        assert forking.run_forked(lambda: print("child", file=fh) or 0)[0] == 0
    assert path.read_text() == "written once by the parent\n"


def test_an_interruption_while_the_child_runs_kills_it(tmp_path):
    pid_file = tmp_path / "child.pid"

    def sleeper():
        pid_file.write_text(str(os.getpid()))
        os.kill(os.getppid(), signal.SIGUSR1)  # the parent is interrupted while it waits
        time.sleep(60)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGUSR1, interrupt)
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            forking.run_forked(sleeper)
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert time.monotonic() - start < 30
    pid = int(pid_file.read_text())
    with pytest.raises(ChildProcessError):  # killed and reaped: no child of this process has that pid any more
        os.waitpid(pid, os.WNOHANG)


def test_ready_to_fork_stops_tqdms_monitor_thread_and_the_next_bar_starts_another():
    """A progress bar starts tqdm's stall monitor, a second thread: why_not() refuses to fork; ready_to_fork() stops
    the monitor first (and says yes where nothing else is against it); tqdm starts a new one with its next bar."""
    import threading

    import tqdm
    from tqdm._monitor import TMonitor

    def monitors():
        return [t for t in threading.enumerate() if isinstance(t, TMonitor)]

    interval = tqdm.tqdm.monitor_interval
    tqdm.tqdm.monitor_interval = 10
    null = open(os.devnull, "w")  # noqa: SIM115 - closed below
    try:
        for _ in tqdm.tqdm(range(2), file=null):
            pass
        assert monitors() and "tqdm_monitor" in forking.why_not()
        others = [t.name for t in threading.enumerate() if t is not threading.main_thread() and t not in monitors()]
        expected = f"more than one Python thread runs (also: {', '.join(others)})" if others else None
        assert forking.ready_to_fork() == expected
        assert monitors() == []
        for _ in tqdm.tqdm(range(2), file=null):
            pass
        assert len(monitors()) == 1  # tqdm's own watchdog is back for the next bars
    finally:
        for monitor in monitors():
            monitor.exit()
        tqdm.tqdm.monitor_interval = interval
        null.close()
