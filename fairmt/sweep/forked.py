"""Trials forked from a copy of the sweep worker instead of started as fresh interpreters.

A fresh ``python -m fairmt train`` spends about 10 s of CPU on imports (torch, transformers, the recipe's modules)
before its first step. So ``fairmt sweep`` first imports transformers' Trainer (the bulk of it) and forks a *trial
server*: a copy of the worker that waits on a pipe. Before the first trial the worker, which has checked the
recipe by then (and so imported what a run of it imports), sends it the names of its modules, and the server
imports those it lacks, once. For each run the server forks once more, and that child runs the trial's ``fairmt
train`` command line as ``python -m fairmt`` does (:func:`runpy.run_module`). It gets what a fresh interpreter
would get from :func:`fairmt.sweep.engine.run_subprocess`:

* the worker's environment and working folder at the time the run starts;
* stdout and stderr into the run's log (the worker opens it and passes the descriptor), stdin from /dev/null;
* SIGINT and SIGTERM at their defaults, numpy's global generator seeded anew;
* the interpreter's exit steps (non-daemon threads joined, ``atexit`` handlers), then its exit status.

``ps`` shows the server and a trial with the sweep's command line; their names (``ps -o comm``, ``top``) are
``fairmt-trials`` and ``fairmt-trial``.

The server is forked before the worker checks the recipe, which asks CUDA how many GPUs there are: a process that
has initialised the CUDA driver cannot hand it to a fork. The server only imports. It is used only where forking is
safe (:func:`fairmt.forking.why_not`): on Linux, where ``PR_SET_PDEATHSIG`` keeps kill -9 of the worker alone
orphan-free (the server dies with the worker, a trial with the server); with one Python thread; with CUDA not
initialised and no NVIDIA device file open (checked in the worker before the fork and in the server after its
imports; a server that fails the check ends, and the trials start fresh). Trials under ``accelerate launch``, and
every trial of ``fairmt sweep --no-fork``, start a fresh interpreter as before.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import sys
import threading
import traceback
from multiprocessing.connection import Connection, Pipe
from multiprocessing.reduction import recv_handle, send_handle

from fairmt.forking import attach_stdio, die_with, exit_code, ready_to_fork, set_name, why_not

TRAIN = ["-m", "fairmt", "train"]
"""A trial command the server runs: ``[python, *TRAIN, ...]`` (``engine.train_command`` without a launcher)."""


class TrialServer:
    """The worker's end: :meth:`run` is a :data:`fairmt.sweep.engine.Runner` for ``fairmt train`` commands."""

    def __init__(self, pid: int, conn: Connection) -> None:
        self.pid, self.conn, self.alive, self.warm = pid, conn, True, False

    @classmethod
    def start(cls, entry: str = "fairmt") -> TrialServer | None:
        """Fork the server (None where :func:`fairmt.forking.ready_to_fork` says no); ``entry``: the module a trial
        runs as ``python -m ENTRY`` would (the tests give another)."""
        if ready_to_fork() is not None:
            return None
        ours, theirs = Pipe(duplex=True)
        for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice by a copy
            with contextlib.suppress(Exception):
                stream.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the server process (exercised by tests through a worker)
            code = 0
            try:
                ours.close()
                _serve(theirs, parent, entry)
            except BaseException:  # noqa: BLE001 - a server that cannot serve ends; the worker sees EOF
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        return cls(pid, ours)

    def run(self, cmd: list[str], log) -> int | None:
        """Run one trial (``cmd``: ``[python, -m, fairmt, train, ...]``) with stdout and stderr into the open file
        ``log``; its exit status (``-N``: killed by signal N), or None when the server is gone before the trial
        started (the caller starts it another way). An interruption here (SIGTERM, Ctrl-C) stops the trial
        (SIGTERM, then SIGKILL after 30 s) before it propagates."""
        trial = None
        try:
            if not self.warm:  # what this process imported checking the recipe is what a run of it imports
                self.conn.send(("import", sorted(name for name, mod in sys.modules.items() if mod is not None)))
                self.warm = True
            self.conn.send(("run", cmd[len(TRAIN) :], dict(os.environ, PYTHONUNBUFFERED="1"), os.getcwd()))
            send_handle(self.conn, log.fileno(), self.pid)
            _, trial = self.conn.recv()
            _, status = self.conn.recv()
        except (EOFError, OSError):
            self.alive = False
            if trial is None:
                return None
            log.write(b"fairmt sweep: the trial server process is gone: the trial did not finish\n")
            log.flush()
            return 1
        except BaseException:
            _stop(trial, self.conn)
            raise
        return int(status)

    def close(self) -> None:
        """End the server (it exits when its end of the pipe closes) and reap it."""
        with contextlib.suppress(OSError):
            self.conn.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _stop(trial: int | None, conn: Connection) -> None:
    """SIGTERM to the trial, SIGKILL when it has not exited 30 s later; its exit message is read either way (the
    trial's pid first, where the interruption came before it)."""
    try:
        if trial is None:
            if not conn.poll(30):
                return
            _, trial = conn.recv()
        with contextlib.suppress(ProcessLookupError):
            os.kill(trial, signal.SIGTERM)
        if conn.poll(30):
            conn.recv()
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(trial, signal.SIGKILL)
        if conn.poll(30):
            conn.recv()
    except (EOFError, OSError):
        pass


def _serve(conn: Connection, worker: int, entry: str) -> None:  # pragma: no cover - in the server
    die_with(worker)
    set_name(b"fairmt-trials")
    for sig in (signal.SIGINT, signal.SIGTERM):  # the worker decides when a trial stops; EOF ends the server
        signal.signal(sig, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)  # what its imports print is no line of the sweep's (a trial has its log)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    me = os.getpid()
    while True:
        try:
            request = conn.recv()
            if request[0] == "import":
                _import(request[1])
                if why_not() is not None:  # an import asked CUDA or started a thread: a fork of this is unsafe
                    return
                continue
            _, argv, env, cwd = request
            log = recv_handle(conn)
        except (EOFError, OSError):
            return
        pid = os.fork()
        if pid == 0:
            _trial(conn, me, entry, argv, env, cwd, log)
        os.close(log)
        conn.send(("started", pid))
        _, status = os.waitpid(pid, 0)
        conn.send(("exited", os.waitstatus_to_exitcode(status)))


def _import(names: list[str]) -> None:  # pragma: no cover - in the server
    """Import each module (one that fails is left to the trial, which imports what it needs)."""
    import importlib

    for name in names:
        if name not in sys.modules and not name.startswith("__"):
            with contextlib.suppress(BaseException):
                importlib.import_module(name)


def _trial(
    conn: Connection, server: int, entry: str, argv: list[str], env: dict, cwd: str, log: int
) -> None:  # pragma: no cover
    """The trial process: ``python -m ENTRY ARGV`` as a fresh interpreter would run it; never returns."""
    code = 1
    try:
        conn.close()
        die_with(server)
        set_name(b"fairmt-trial")
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        attach_stdio(log, log)
        os.close(log)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()  # as a fresh interpreter's: from the system's entropy, not the server's state
        sys.argv = [entry, *argv]  # runpy puts the module's file first, as `python -m` does
        try:
            runpy.run_module(entry, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exit_code(exc.code)
        except KeyboardInterrupt:
            traceback.print_exc()
            code = 128 + signal.SIGINT
        except BaseException:  # noqa: BLE001 - what an interpreter does with an uncaught exception
            traceback.print_exc()
            code = 1
        finally:
            for thread in threading.enumerate():  # the interpreter's exit: non-daemon threads, then atexit
                if thread is not threading.current_thread() and not thread.daemon:
                    thread.join()
            import atexit

            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
    except BaseException:  # noqa: BLE001 - the setup failed (a working folder gone): its traceback, exit 1
        with contextlib.suppress(BaseException):
            traceback.print_exc()
            sys.stderr.flush()
    finally:
        os._exit(code if isinstance(code, int) else 1)
