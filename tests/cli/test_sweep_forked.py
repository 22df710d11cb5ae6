"""The sweep's trial server (fairmt/sweep/forked.py): a trial forked from a copy of the worker gets what a fresh
``python -m fairmt train`` would (command line, environment and folder at the time of the run, log as stdout and
stderr, /dev/null as stdin, default signal handlers, the interpreter's exit steps, the exit status), an interrupted
worker stops its trial, and kill -9 of the worker alone leaves no process behind.

The worker here is a small script (the pytest process runs threads, where the server is refused), and the trial's
``main`` a stand-in (tests/support/forked_entry.py) that reports what it sees; the real ``fairmt train`` trials run
forked in tests/cli/test_sweep.py's kill -9 sweep."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

import procs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the trial server is Linux-only")

WORKER = r"""
import json, os, signal, sys
from fairmt.sweep.forked import TrialServer

work = sys.argv[1]
server = TrialServer.start(entry="forked_entry")
assert server is not None
import tabnanny  # the server imports what this process has imported by its first trial
os.environ["LATE"] = "set after the server started"
os.chdir(work)
cmd = [sys.executable, "-m", "fairmt", "train"]

class Stop(BaseException):
    pass

def stop(signum, frame):
    raise Stop()

signal.signal(signal.SIGTERM, stop)
results = {"server": server.pid}
for name, args in json.loads(sys.argv[2]):
    if name == "kill-server":  # the next trial finds it gone
        os.kill(server.pid, signal.SIGKILL)
        os.waitpid(server.pid, 0)
        continue
    with open(os.path.join(work, name + ".log"), "ab") as log:
        log.write(b"header\n")
        log.flush()
        try:
            results[name] = server.run(cmd + args, log)
        except Stop:
            results[name] = "stopped"
    print(json.dumps(results), flush=True)
server.close()
results["server_reaped"] = True
print(json.dumps(results), flush=True)
"""


def _worker(tmp_path: Path, jobs: list) -> list:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return procs.python(script, tmp_path, json.dumps(jobs))


def _sleeping_trial(tmp_path: Path, then: list):
    """A worker whose first trial sleeps (until a signal ends it), then runs the jobs ``then``: the worker's process
    and the sleeping trial's pid, once it sleeps."""
    ready = tmp_path / "sleeping"
    proc = procs.start(
        _worker(tmp_path, [["sleep", ["sleep", str(ready)]], *then]),
        env=procs.env(tests_on_path=True),
        stdout=procs.subprocess.PIPE,
        stderr=procs.subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    while not ready.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert ready.exists(), proc.stderr.read() if proc.poll() is not None else "the trial never started"
    return proc, int(ready.read_text())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_a_forked_trial_gets_what_a_fresh_interpreter_would(tmp_path):
    jobs = [
        ["report", ["report", "x"]],
        ["exit", ["exit", "7"]],
        ["raise", ["raise"]],
        ["steps", ["exit-steps", str(tmp_path)]],
        ["kill-server", []],
        ["gone", ["exit", "0"]],
    ]
    done = procs.run(_worker(tmp_path, jobs), env=procs.env(tests_on_path=True), timeout=120, check=True)
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert results["report"] == 0 and results["exit"] == 7 and results["raise"] == 1 and results["steps"] == 3
    assert results["gone"] is None  # not run: the caller (engine.run_subprocess) starts a fresh interpreter
    assert results["server_reaped"] and not _alive(results["server"])

    log = (tmp_path / "report.log").read_text().splitlines()
    assert log[0] == "header" and log[-1] == "to stderr"  # after what the worker wrote; stdout and stderr both
    seen = json.loads(log[1])
    assert seen["argv"] == ["train", "report", "x"]
    assert seen["sys_argv"][0].endswith("forked_entry.py") and seen["sys_argv"][1:] == seen["argv"]  # as python -m
    assert seen["cwd"] == str(tmp_path) and seen["late"] == "set after the server started"
    assert seen["unbuffered"] == "1" and seen["stdin"] == ""
    assert seen["ppid"] == results["server"] and seen["comm"] == "fairmt-trial"
    assert seen["preloaded"] and seen["sigint"] and seen["sigterm"]
    assert "RuntimeError: a bug in the trial" in (tmp_path / "raise.log").read_text()  # the traceback, as python's
    assert (tmp_path / "thread").read_text() == "joined" and (tmp_path / "atexit").read_text() == "ran"


@pytest.mark.slow
def test_sigterm_to_the_worker_stops_its_trial_and_the_worker_goes_on(tmp_path):
    proc, trial = _sleeping_trial(tmp_path, [["after", ["exit", "0"]]])
    proc.send_signal(signal.SIGTERM)
    out, err = procs.finish(proc, timeout=60)
    assert proc.returncode == 0, err
    results = json.loads(out.strip().splitlines()[-1])
    assert results["sleep"] == "stopped" and results["after"] == 0  # the next trial runs on the same server
    assert not _alive(trial)


@pytest.mark.slow
def test_kill_9_of_the_worker_alone_ends_the_server_and_the_trial(tmp_path):
    proc, trial = _sleeping_trial(tmp_path, [])
    server = int(Path(f"/proc/{trial}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(proc.pid, signal.SIGKILL)  # the worker only, not its group
    proc.wait(timeout=30)
    deadline = time.time() + 10
    while (_alive(server) or _alive(trial)) and time.time() < deadline:
        time.sleep(0.05)
    alive = [name for name, pid in (("server", server), ("trial", trial)) if _alive(pid)]
    procs.finish(proc, timeout=5)
    assert alive == []


def test_no_server_where_forking_is_unsafe(monkeypatch):
    from fairmt.sweep import forked

    assert threading.active_count() > 1 or forked.why_not() is None  # pytest-xdist runs an I/O thread here
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, name="helper-thread")
    helper.start()
    try:
        assert forked.why_not().startswith("more than one Python thread runs (also: ")
        assert "helper-thread" in forked.why_not()  # the refusal names the threads
        assert forked.TrialServer.start() is None
    finally:
        stop.set()
        helper.join()
    monkeypatch.setattr(sys, "platform", "darwin")
    assert forked.why_not() == "not Linux (no PR_SET_PDEATHSIG)"


AFTER_A_BAR = r"""
import os, sys, threading
import tqdm
from fairmt.sweep.forked import TrialServer

with open(os.devnull, "w") as null:
    for _ in tqdm.tqdm(range(2), file=null):
        pass
print(sorted(t.name for t in threading.enumerate()), flush=True)
server = TrialServer.start(entry="forked_entry")
print("server", server is not None, sorted(t.name for t in threading.enumerate()), flush=True)
server.close()
"""


def test_a_progress_bar_shown_before_does_not_cost_the_server(tmp_path):
    """A progress bar shown earlier in the process (a notebook that called ``fairmt.sweep`` after a training) left
    tqdm's stall monitor thread running: the server stops it (``fairmt.forking.ready_to_fork``) rather than giving
    every trial a fresh interpreter."""
    script = tmp_path / "after_a_bar.py"
    script.write_text(AFTER_A_BAR)
    proc = procs.run(
        procs.python(script), env=procs.env(tests_on_path=True), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    before, after = proc.stdout.splitlines()
    assert before == "['MainThread', 'tqdm_monitor']"
    assert after == "server True ['MainThread']"


@pytest.mark.parametrize("enabled", [True, False])
def test_a_trial_without_a_server_says_why_in_its_log(monkeypatch, tmp_path, enabled):
    """A process that cannot fork (here: another thread, stood in for) or ``--no-fork`` runs each ``fairmt train``
    as a fresh interpreter, and the trial's log says why (a sweep slower than it should be can be told from it)."""
    from fairmt.sweep import engine, forked

    monkeypatch.setattr(forked, "ready_to_fork", lambda: "more than one Python thread runs (also: Thread-6)")
    log = tmp_path / "train.log"
    with engine.trial_server(enabled) as server:
        assert server is None
        assert engine.run_subprocess([sys.executable, "-m", "fairmt", "train", "--help"], log) == 0
        engine.run_subprocess([sys.executable, "-c", "pass"], tmp_path / "other.log")  # not a trial: no line
    why = "more than one Python thread runs (also: Thread-6)" if enabled else "fairmt sweep --no-fork"
    assert log.read_text().splitlines()[1] == f"# a fresh interpreter: no trial server ({why})"
    assert "trial server" not in (tmp_path / "other.log").read_text()
    assert engine._NO_SERVER is None and engine._SERVER is None  # the block's end forgets it


def test_a_process_that_opened_the_nvidia_driver_forks_no_server(monkeypatch):
    """A CUDA driver initialised in the worker (by ``torch.cuda.is_available()`` even, which torch does not count
    as initialised) shows as an open /dev/nvidia* descriptor: no server then."""
    from fairmt import forking
    from fairmt.sweep import forked

    links = {"0": "/dev/null", "1": "pipe:[1]", "7": "/dev/nvidiactl"}
    monkeypatch.setattr(forked.os, "listdir", lambda path: list(links) if path == "/proc/self/fd" else [])
    monkeypatch.setattr(forked.os, "readlink", lambda path: links[path.rsplit("/", 1)[1]])
    assert forking.nvidia_open()
    monkeypatch.setattr(forked.threading, "enumerate", lambda: [forked.threading.main_thread()])
    monkeypatch.setattr(forked.threading, "current_thread", forked.threading.main_thread)
    assert "NVIDIA driver" in forked.why_not()
    del links["7"]
    assert not forking.nvidia_open() and forked.why_not() is None


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--no-fork"]])
def test_fairmt_sweep_forks_its_trials_unless_no_fork(monkeypatch, tmp_path, extra):
    """`fairmt sweep` starts a trial server after importing transformers' Trainer and before it checks the recipe
    (the real one needs one Python thread: stood in for here), runs the trials beside it, and closes it; `--no-fork`
    starts none. (Runs handed to the real server: the kill -9 sweep of tests/cli/test_sweep.py.)"""
    from fairmt.cli import main
    from fairmt.sweep import engine, forked, spec
    from sweep_helpers import fake_runner, standin_data_root

    standin_data_root(monkeypatch, tmp_path)
    calls = []

    class Server:
        @classmethod
        def start(cls, entry="fairmt"):
            calls.append(("start", "transformers.trainer" in sys.modules))
            return cls()

        def close(self):
            calls.append(("close",))

    def runner(cmd, log):
        calls.append(("run", isinstance(engine._SERVER, Server)))
        return fake_runner(cmd, log)

    checked = spec.build_spec
    monkeypatch.setattr(spec, "build_spec", lambda *a, **k: (calls.append(("check",)), checked(*a, **k))[1])
    monkeypatch.setattr(forked, "TrialServer", Server)
    monkeypatch.setattr(forked, "ready_to_fork", lambda: None)
    monkeypatch.setattr(engine, "run_subprocess", runner)
    out = tmp_path / "sweep"
    grid = ["--grid", "training.learning_rate=0.1"]
    rc = main(["sweep", "classification/fcl", "data.dataset=hatespeech", *grid, "--output-dir", str(out), *extra])
    assert rc == 0
    if extra:
        assert calls == [("check",), ("run", False)]
    else:
        assert calls == [("start", True), ("check",), ("run", True), ("close",)]
    assert (out / "sweep.json").is_file() and engine._SERVER is None
