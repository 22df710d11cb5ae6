"""Child processes for the tests: every one starts in a session (and process group) of its own, and the whole group
is killed when the test is done with it, fails or times out, so no training process outlives its test.

* :func:`run` — ``subprocess.run`` with that guarantee and a timeout that fails the test with a clear message (the
  command, the limit, the end of its output) after killing the group.
* :func:`start` — ``subprocess.Popen`` for tests that run several processes at once; :func:`finish` waits for one
  under the same rules. Groups started with :func:`start` and still alive when the test ends are killed by the
  autouse ``_no_orphan_processes`` fixture of ``tests/conftest.py`` (also when pytest-timeout stops the test).
* :func:`python` — the interpreter and environment a child Python needs (this checkout first on ``PYTHONPATH``,
  one thread).

No torch import here: import-checking tests use these helpers too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
REPO = TESTS.parent
LAYERS = sorted(
    p
    for p in TESTS.iterdir()
    if p.is_dir() and p.name not in ("fixtures", "support") and not p.name.startswith((".", "_"))
)
"""The tests' layer folders (tests/<layer>/): on the path of the tests and, with ``env(tests_on_path=True)``, of their
child processes, so a test or a job script imports another test module's helpers by name."""

_live: list[subprocess.Popen] = []  # started by start()/run(), not yet reaped


def env(extra: dict | None = None, *, tests_on_path: bool = False) -> dict:
    """``os.environ`` plus one thread per process, this checkout first on ``PYTHONPATH`` (so a child imports the
    ``fairmt`` under test) and, with ``tests_on_path``, the tests' helper folder (``tests/support``: ``ddp_helpers``,
    ...) and every layer folder (a job script may import a test module's helpers by name, as the tests do)."""
    paths = [str(REPO)] + ([str(SUPPORT), *map(str, LAYERS)] if tests_on_path else [])
    old = os.environ.get("PYTHONPATH")
    e = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(paths + ([old] if old else []))}
    e.update(extra or {})
    return e


def _descendants(pid: int) -> list[int]:
    """Every live process descended from ``pid`` (children, their children...), from /proc (Linux; empty
    elsewhere). torchrun starts each rank in a session of its own, so killing the launcher's group leaves the ranks
    running: they are found here, through their parent links, while the launcher is still alive."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group of ``proc`` (its session: the child and everything it started), the groups of its
    descendants that started sessions of their own (torchrun's ranks) and those descendants, then reap ``proc``."""
    descendants = _descendants(proc.pid) if proc.poll() is None else []
    groups = {proc.pid}
    for pid in descendants:
        try:
            groups.add(os.getpgid(pid))
        except (ProcessLookupError, PermissionError):
            pass
    groups.discard(os.getpgrp())  # never this test process's own group
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in descendants:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
        pass


def _sigint_at_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(cmd, **kw) -> subprocess.Popen:
    """``subprocess.Popen(cmd, **kw)`` in a new session; the group is killed when the test ends (see module doc).

    A child starts with SIGINT at its default, as a command typed at a terminal does, also when pytest itself was
    started with SIGINT ignored (``pytest ... &`` from a script: a shell ignores it in background jobs, and a child
    inherits that, so a Python child would never raise KeyboardInterrupt and the Ctrl-C tests would wait in vain)."""
    kw.setdefault("start_new_session", True)
    if not kw["start_new_session"]:
        raise ValueError("tests start children in a session of their own")
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        kw.setdefault("preexec_fn", _sigint_at_default)
    proc = subprocess.Popen(cmd, **kw)
    _live.append(proc)
    return proc


def _tail(text, n=3000) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return text[-n:]


def finish(proc: subprocess.Popen, timeout: float = 600, input=None) -> tuple:
    """``proc.communicate(input, timeout)``; on timeout the group is killed and the test fails naming the command,
    the limit and the end of its output. On any other interruption (a failing assertion elsewhere, pytest-timeout,
    Ctrl-C) the group is killed too. Once the child has exited, what is left of its group is killed."""
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        kill_group(proc)
        out, err = proc.communicate()
        cmd = " ".join(str(c) for c in proc.args) if isinstance(proc.args, (list, tuple)) else str(proc.args)
        pytest.fail(
            f"child process did not finish in {timeout:g} s (killed with its process group): {cmd[:300]}\n"
            f"--- stdout ---\n{_tail(out)}\n--- stderr ---\n{_tail(err)}",
            pytrace=False,
        )
        raise exc  # pragma: no cover - pytest.fail raises
    except BaseException:
        kill_group(proc)
        raise
    finally:
        if proc.returncode is not None:
            kill_group(proc)  # a leader that exited may leave children behind: none outlive it
            if proc in _live:
                _live.remove(proc)
    return out, err


def run(
    cmd, *, timeout: float = 600, input=None, check: bool = False, capture_output: bool = True, text: bool = True, **kw
) -> subprocess.CompletedProcess:
    """``subprocess.run`` in a new session with :func:`finish`'s rules; ``check=True`` fails the test (not a
    ``CalledProcessError``) with the end of the output when the exit status is not 0."""
    if capture_output:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
    if input is not None:
        kw.setdefault("stdin", subprocess.PIPE)
    proc = start(cmd, text=text, **kw)
    out, err = finish(proc, timeout=timeout, input=input)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check and done.returncode != 0:
        pytest.fail(
            f"exit status {done.returncode}: {' '.join(str(c) for c in cmd)[:300]}\n"
            f"--- stdout ---\n{_tail(out)}\n--- stderr ---\n{_tail(err)}",
            pytrace=False,
        )
    return done


def python(*args) -> list[str]:
    """``[sys.executable, *args]``."""
    return [sys.executable, *map(str, args)]


def reap() -> list[str]:
    """Kill the groups of every child started here that is still alive (or whose group still is); returns their
    command lines (for the fixture's message)."""
    killed = []
    while _live:
        proc = _live.pop()
        alive = proc.poll() is None
        try:
            os.killpg(proc.pid, 0)
            group_alive = True
        except (ProcessLookupError, PermissionError):
            group_alive = False
        if alive or group_alive:
            killed.append(
                " ".join(str(c) for c in proc.args)[:200]
                if isinstance(proc.args, (list, tuple))
                else str(proc.args)[:200]
            )
            kill_group(proc)
    return killed


def wait_for(predicate, timeout: float, interval: float = 0.1) -> bool:
    """Poll ``predicate()`` until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a killed process that nobody reaped yet counts as gone:
    a killed rank is reparented, and no init may reap it here)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def torchrun_command(script, *args, nproc: int = 2) -> list[str]:
    """``python -m torch.distributed.run --standalone --nproc_per_node NPROC SCRIPT ARGS...``."""
    return python("-m", "torch.distributed.run", "--standalone", "--nproc_per_node", nproc, script, *args)


def torchrun(script, *args, cwd, nproc: int = 2, timeout: float = 300) -> subprocess.CompletedProcess:
    """:func:`torchrun_command` (gloo on CPU processes, the tests folder on ``PYTHONPATH``) under :func:`run`'s rules;
    fails the test with the end of the output when it fails."""
    return run(
        torchrun_command(script, *args, nproc=nproc), cwd=cwd, env=env(tests_on_path=True), timeout=timeout, check=True
    )


def in_process(script, *args, cwd) -> None:
    """Run a test script as ``python SCRIPT ARGS...`` would on one process, but in this (pytest) process, where torch,
    transformers and the trainers are imported already (a fresh interpreter spends ~4 s of CPU importing them
    before a one-process reference run of two steps): ``sys.argv`` and the working directory are set for the
    script and restored after it."""
    import runpy

    saved_argv, saved_cwd = sys.argv, os.getcwd()
    sys.argv = [str(script), *map(str, args)]
    os.chdir(cwd)
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
