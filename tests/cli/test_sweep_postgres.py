"""`fairmt sweep --storage postgresql://…` on a real PostgreSQL server (tests/support/pg.py: a throwaway cluster on
127.0.0.1): two `--join` workers as two machines (each its own sweep folder and host name, no shared lock) run every
(setting, seed) exactly once; a worker killed with kill -9 in the middle of a run has that run retried once, by the
other worker, after `--grace-period` without a heartbeat; a different sweep under the same study name is refused;
the password is never printed.

The workers are real processes running the real sweep engine on the real server; what a run trains is a stand-in
(a results.json computed from the run's overrides, 0.3-0.6 s), as in tests/cli/test_sweep.py's engine tests: the
storage and the workers are under test here, `fairmt train` is tested elsewhere.
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
from pg import postgresql  # noqa: F401 - the session fixture
from sweep_helpers import fake_runner, standin_data_root, worker_args

optuna = pytest.importorskip("optuna")
pytest.importorskip("psutil")

REPO = Path(__file__).resolve().parents[2]
RECIPE = "classification/fcl"
CHEAP = ["data.dataset=hatespeech", "model.type=embedding_bag", "training.num_train_epochs=1"]

POINTS = {(x, seed) for x in range(5) for seed in (0, 1)}


def _database(server, name: str) -> str:
    """A fresh database on the server; its URL (with the password)."""
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.url_for(name)


def _worker(tmp: Path, url: str, host: str, hang_at: int = 0, seconds: float = 0.3, grace: float = 600):
    out = tmp / f"sweep-{host}"  # each machine its own folder: nothing shared but the database
    return procs.start(
        worker_args(out, tmp / f"ledger-{host}", url, "pg", 5, host, hang_at, seconds, grace),
        env=procs.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ledger(tmp: Path, host: str) -> list[tuple[int, int]]:
    path = tmp / f"ledger-{host}"
    return [tuple(map(int, ln.split()[:2])) for ln in path.read_text().splitlines()] if path.exists() else []


def _study(url: str):
    from fairmt.sweep.engine import open_storage

    return optuna.load_study(study_name="pg", storage=open_storage(url))


def test_two_join_workers_on_postgresql_run_every_run_once(postgresql, tmp_path):
    url = _database(postgresql, "two_workers")
    workers = [_worker(tmp_path, url, host) for host in ("machine-a", "machine-b")]
    outs = [procs.finish(w, timeout=300) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [o[1][-2000:] for o in outs]
    runs = _ledger(tmp_path, "machine-a") + _ledger(tmp_path, "machine-b")
    assert sorted(runs) == sorted(POINTS)  # every (setting, seed) exactly once
    assert _ledger(tmp_path, "machine-a") and _ledger(tmp_path, "machine-b")  # both took part
    study = _study(url)
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert len(complete) == len(POINTS) and {t.state.name for t in study.trials} <= {"COMPLETE", "PRUNED"}
    assert all(postgresql.password not in o[0] + o[1] for o in outs)


def test_a_worker_killed_mid_run_has_its_run_retried_once_after_the_grace_period(postgresql, tmp_path):
    """Machine A runs two runs, then is killed (kill -9, its whole process group) in the middle of its third; machine
    B, started then, runs every other run and, once A's trial has had no heartbeat for the grace period (3 s), fails
    it and runs it again: every (setting, seed) finishes exactly once, the killed one was started twice."""
    url = _database(postgresql, "killed")
    a = _worker(tmp_path, url, "machine-a", hang_at=3, seconds=0.3, grace=3)
    hanging = tmp_path / "ledger-machine-a.hanging"
    assert procs.wait_for(lambda: hanging.exists() or a.poll() is not None, timeout=240), "A never reached run 3"
    assert a.poll() is None, a.communicate()[1][-2000:]
    killed = tuple(map(int, hanging.read_text().split()))
    os.killpg(a.pid, signal.SIGKILL)
    procs.finish(a, timeout=30)
    t_kill = time.time()
    b = _worker(tmp_path, url, "machine-b", seconds=0.6, grace=3)  # 7 runs of 0.6 s: longer than the grace period
    out, err = procs.finish(b, timeout=300)
    assert b.returncode == 0, err[-2000:]
    runs_a, runs_b = _ledger(tmp_path, "machine-a"), _ledger(tmp_path, "machine-b")
    assert len(runs_a) == 3 and runs_a[-1] == killed
    assert sorted(runs_a[:2] + runs_b) == sorted(POINTS)  # the killed run: once more, by B; nothing else twice
    assert killed in runs_b
    study = _study(url)
    failed = [t for t in study.trials if t.state.name == "FAIL"]
    assert len(failed) == 1 and failed[0].user_attrs["seed"] == killed[1]
    retry = [t for t in study.trials if t.system_attrs.get("failed_trial") == failed[0].number]
    assert len(retry) == 1 and retry[0].state.name == "COMPLETE"
    # not before the grace period: with no heartbeat yet, the killed trial counts as alive for the grace period from
    # its own start (it was reaped 1.6 s after its start when the worker's process start stood in for the heartbeat)
    assert retry[0].datetime_start.timestamp() >= failed[0].datetime_start.timestamp() + 3
    assert retry[0].datetime_start.timestamp() >= t_kill - 0.5
    assert json.loads(out.strip().splitlines()[-1])["complete"]
    assert postgresql.password not in out + err


def test_the_command_on_postgresql_refuses_a_clash_and_never_prints_the_password(
    postgresql, tmp_path, capsys, monkeypatch
):
    """`fairmt sweep --storage postgresql://user:password@…` (the URL the README documents, driver from the sweep
    extra) runs, writes its report; another sweep under the same study name is refused; a wrong password is one
    line; the password appears in none of the output, the report or the error lines."""
    from fairmt.cli import main
    from fairmt.sweep import engine

    monkeypatch.setattr(engine, "run_subprocess", fake_runner)  # the runs: stand-ins (see the module docstring)
    standin_data_root(monkeypatch, tmp_path)
    url = _database(postgresql, "command")
    base = ["sweep", RECIPE, *CHEAP, "--storage", url, "--study-name", "shared-name"]
    assert (
        main(
            [
                *base,
                "--grid",
                "training.learning_rate=0.001,0.01",
                "--seeds",
                "2",
                "--output-dir",
                str(tmp_path / "first"),
            ]
        )
        == 0
    )
    first = capsys.readouterr()
    assert "[4/4]" in first.out
    report = json.loads((tmp_path / "first" / "sweep.json").read_text())
    assert report["study"]["trials"] == {"COMPLETE": 4}
    assert report["study"]["storage"].startswith("postgresql://fairmt:***@127.0.0.1:")

    assert main([*base, "--grid", "training.learning_rate=0.1", "--output-dir", str(tmp_path / "other")]) == 2
    clash = capsys.readouterr()
    assert "study 'shared-name' in postgresql://fairmt:***@" in clash.err and "holds another sweep (grid" in clash.err

    wrong = postgresql.url_for("command", password="not-the-password-" + postgresql.password[:4])
    assert (
        main(
            [
                "sweep",
                RECIPE,
                *CHEAP,
                "--grid",
                "training.learning_rate=0.1",
                "--storage",
                wrong,
                "--output-dir",
                str(tmp_path / "wrong"),
            ]
        )
        == 2
    )
    bad = capsys.readouterr()
    assert bad.err.startswith("fairmt: error: cannot open the study storage postgresql://fairmt:***@127.0.0.1:")
    assert "password authentication failed" in bad.err and len(bad.err.strip().splitlines()) == 1
    # the sweep folder keeps the URL without its password: the report reconnects with libpq's PGPASSWORD
    assert "fairmt@127.0.0.1" in (tmp_path / "first" / "sweep_spec.json").read_text()
    (tmp_path / "first" / "sweep.json").unlink()
    monkeypatch.setenv("PGPASSWORD", postgresql.password)
    assert main(["sweep", "report", str(tmp_path / "first")]) == 0
    assert json.loads((tmp_path / "first" / "sweep.json").read_text())["study"]["trials"] == {"COMPLETE": 4}
    report_out = capsys.readouterr()
    texts = [
        first.out,
        first.err,
        clash.out,
        clash.err,
        bad.out,
        bad.err,
        report_out.out,
        report_out.err,
        *(p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".json", ".md", ".log")),
    ]
    assert not any(postgresql.password in t or "not-the-password" in t for t in texts)
