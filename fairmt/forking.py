"""A forked copy of this process in place of a fresh interpreter, where forking is safe.

A fresh interpreter pays for its imports again: torch alone is about 3 s of CPU here, fairseq about 9 s, transformers'
Trainer about 10 s. A fork starts with everything this process has imported. Two parts of fairmt use that:

* ``fairmt sweep`` forks each trial from a *trial server* (:mod:`fairmt.sweep.forked`);
* ``fairmt data fairseq-prep`` runs ``fairseq-preprocess`` in a forked child (:func:`run_forked`;
  :mod:`fairmt.fairseq.prep`): fairseq, which the command imports to check that it is installed, is not imported a
  second time in a fresh interpreter.

Forking is safe here only where :func:`why_not` finds no reason against it:

* **Linux**: ``PR_SET_PDEATHSIG`` makes a child die with its parent, so a kill -9 of the parent leaves no orphan;
* **one Python thread**: a fork copies only the thread that calls it, and a lock another thread held stays locked in
  the child for ever;
* **no CUDA**: a process that has initialised the CUDA driver (even through ``torch.cuda.is_available()``, which
  torch does not count as initialised; it shows as an open ``/dev/nvidia*``) cannot hand it to a fork.

Where :func:`why_not` gives a reason, the callers start a fresh interpreter as before. :func:`ready_to_fork` first
stops the one helper thread a fairmt command has by then: tqdm's stall monitor, which the first progress bar starts
and the next one starts again.

This module imports neither torch nor anything else outside the standard library.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable

_PR_SET_NAME, _PR_SET_PDEATHSIG = 15, 1


def why_not() -> str | None:
    """Why this process cannot fork a child that runs fairmt code now (None: it can)."""
    if not sys.platform.startswith("linux"):
        return "not Linux (no PR_SET_PDEATHSIG)"
    if threading.current_thread() is not threading.main_thread():
        return f"called from a thread other than the main one ({threading.current_thread().name})"
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if others:
        return f"more than one Python thread runs (also: {', '.join(others)})"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA is initialised in this process"
    if nvidia_open():
        return "this process has opened the NVIDIA driver (/dev/nvidia*): a fork cannot use CUDA"
    return None


def ready_to_fork() -> str | None:
    """:func:`why_not`, after stopping tqdm's stall monitors (``tqdm._monitor.TMonitor``: a thread that wakes every
    10 s to look at the open progress bars; tqdm starts a new one with the next bar). A fairmt command has shown a
    progress bar by the time it forks (``fairmt data fairseq-prep`` detects genders under one), and that thread alone
    made :func:`why_not` refuse the fork."""
    monitor = sys.modules.get("tqdm._monitor")
    if monitor is not None:
        for thread in threading.enumerate():
            if isinstance(thread, monitor.TMonitor):
                with contextlib.suppress(Exception):
                    thread.exit()  # wakes it and joins it
    return why_not()


def nvidia_open() -> bool:
    """Whether a descriptor of this process is an NVIDIA device file (the CUDA driver was initialised here, by
    torch or by anything that asked it how many GPUs there are)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}").startswith("/dev/nvidia"):
                return True
    return False


def prctl(option: int, arg) -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)


def set_name(name: bytes) -> None:
    """The process's name as ``ps -o comm`` and ``top`` show it (at most 15 bytes)."""
    prctl(_PR_SET_NAME, name)


def die_with(parent: int) -> None:
    """SIGKILL when the parent dies; exit at once when it already has (the fork raced its death)."""
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def attach_stdio(out: int, err: int) -> None:
    """In a forked child: stdout onto descriptor ``out`` and stderr onto ``err`` (the same one may serve both), stdin
    from /dev/null, and ``sys.stdin``/``sys.stdout``/``sys.stderr`` (and their ``sys.__*__``) anew on descriptors 0,
    1 and 2, unbuffered as ``PYTHONUNBUFFERED=1`` makes them in a fresh interpreter (the parent's stream objects may
    hold buffered text, or write somewhere else altogether: pytest's captures)."""
    os.dup2(out, 1)
    os.dup2(err, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    encoding = getattr(sys.__stdout__, "encoding", None) or "utf-8"
    sys.stdin = sys.__stdin__ = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = _text_stream(1, encoding, "strict")
    sys.stderr = sys.__stderr__ = _text_stream(2, encoding, "backslashreplace")


def _text_stream(fd: int, encoding: str, errors: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(
        open(fd, "wb", buffering=0, closefd=False),  # noqa: SIM115
        encoding=encoding,
        errors=errors,
        write_through=True,
    )


def exit_code(code) -> int:
    """The exit status an interpreter gives ``SystemExit(code)`` (a message: printed to stderr, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_forked(target: Callable[[], int | None], name: bytes = b"fairmt-child") -> tuple[int, str, str]:
    """``target()`` in a forked child; returns its exit status (``-N``: killed by signal N) and what it wrote to
    stdout and to stderr. Call it only where :func:`why_not` is None.

    The child gets what a fresh interpreter running the same code would get from ``subprocess.run(...,
    capture_output=True)``: stdout and stderr of its own (unbuffered), stdin from /dev/null, SIGINT and SIGTERM at
    their defaults, the root logger without handlers at level WARNING, and an exit status: ``target``'s return value,
    ``SystemExit``'s code, or 1 with the traceback on stderr for any other exception. It also runs torch (where this
    process has imported it) on one thread, as torch's own DataLoader workers do after a fork: OpenMP's thread pool
    does not survive one. It leaves by ``os._exit``: this process's ``atexit`` handlers and buffered output are not
    the child's to run or write. The child dies with this process; an interruption here (Ctrl-C) kills it before it
    propagates."""
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice by the copy
        with contextlib.suppress(Exception):
            stream.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        parent, pid = os.getpid(), 0
        # Ctrl-C and SIGTERM wait while the fork happens: in the child until it has its own handlers, here until
        # the child's pid is known (and so can be stopped)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
        try:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child (its effects are what the tests check)
                _child(target, name, parent, out.fileno(), err.fileno(), blocked)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            _, status = os.waitpid(pid, 0)
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            if pid > 0:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            raise
        texts = []
        for fh in (out, err):
            fh.seek(0)
            texts.append(fh.read().decode("utf-8", "backslashreplace"))
    return os.waitstatus_to_exitcode(status), texts[0], texts[1]


_DEFERRED = {signal.SIGINT, signal.SIGTERM}


def _child(target, name: bytes, parent: int, out: int, err: int, mask) -> None:  # pragma: no cover - in the child
    code = 1
    try:
        die_with(parent)
        set_name(name)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        attach_stdio(out, err)
        root = logging.getLogger()
        for handler in list(root.handlers):  # removed, not closed: they are this process's parent's
            root.removeHandler(handler)
        root.setLevel(logging.WARNING)
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(1)
        code = target()
        code = 0 if code is None else code
    except SystemExit as exc:
        code = exit_code(exc.code)
    except BaseException:  # noqa: BLE001 - what an interpreter does with an uncaught exception
        with contextlib.suppress(BaseException):
            traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code if isinstance(code, int) else 1)
