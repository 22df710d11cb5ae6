"""`fairmt sweep` survives what sweeps meet (issue 45): SIGTERM to the worker and Ctrl-C to its process group in
the middle of a run, then the same command resumes; an emptied ``done.json`` is rebuilt and a cut
``sweep_spec.json`` is one line (report) or rewritten (resume); a journal whose last record was cut by a killed
writer is repaired; a finished sweep whose ``trials/`` folder was deleted runs its runs again; a storage that exists
and is not an Optuna storage is refused before anything is written; seeds outside numpy's range and a sweep whose
every trial fails for one reason end in one line and exit 2.

The runs are stand-ins (a results file written where the recipe would write it, the real ``run_subprocess`` for the
signal test), so every case costs a sweep's bookkeeping only."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

import procs
from fairmt.cli import main

optuna = pytest.importorskip("optuna")
pytest.importorskip("psutil")

RECIPE = "classification/fcl"
CHEAP = ["data.dataset=hatespeech", "model.type=embedding_bag", "training.num_train_epochs=1"]
GRID = ["--grid", "training.learning_rate=0.001,0.02"]


def _overrides(cmd: list[str]) -> dict[str, str]:
    return dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))


def _fake_runner(cmd: list[str], log: Path) -> int:
    """A run that writes the recipe's results where the recipe would (its accuracy a function of lr and seed)."""
    over = _overrides(cmd)
    lr, seed = float(over["training.learning_rate"]), int(over["seed"])
    out = Path(json.loads(over["training.output_dir"]))
    out.mkdir(parents=True)
    acc = 60 - 3 * abs(math.log10(lr) + 2) + seed
    split = {"accuracy": acc, "gap": 2.0 + seed, "macro_f1": acc - 1, "scale": "percent"}
    (out / "results.json").write_text(json.dumps({"dev": split, "test": split, "seed": seed}))
    log.write_text("ok\n")
    return 0


@pytest.fixture
def fake_runs(monkeypatch, tmp_path):
    """`fairmt sweep` in-process with stand-in runs (and a stand-in data folder); the list holds the run folders
    trained, in order."""
    from fairmt.sweep import engine
    from sweep_helpers import standin_data_root

    standin_data_root(monkeypatch, tmp_path)

    trained: list[str] = []

    def runner(cmd, log):
        trained.append(json.loads(_overrides(cmd)["training.output_dir"]))
        return _fake_runner(cmd, log)

    monkeypatch.setattr(engine, "run_subprocess", runner)
    return trained


def _sweep(out: Path, *extra: str) -> int:
    return main(["sweep", RECIPE, *CHEAP, *GRID, "--output-dir", str(out), *extra])


def _one_error_line(capsys, *expected: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("fairmt: error: "), err
    for text in expected:
        assert text in err, err
    return err


# ------------------------------------------------------------------------------------------ signals, real processes
WORKER = r"""
import json, os, sys
from pathlib import Path
from fairmt.sweep.engine import SweepInterrupted, run_subprocess, run_sweep
from fairmt.sweep.spec import SweepSpec

CHILD = ("import os, sys, time; open(sys.argv[2], 'a').write(sys.argv[1] + chr(10)); time.sleep(60)")

def runner(cmd, log):  # the real subprocess runner, on a stand-in `fairmt train` that hangs
    run_dir = json.loads([a for a in cmd if a.startswith("training.output_dir=")][0].split("=", 1)[1])
    return run_subprocess([sys.executable, "-c", CHILD, str(Path(run_dir).parent), os.environ["LEDGER"]], log)

spec = SweepSpec.from_dict(json.loads(Path(sys.argv[1]).read_text()))
try:
    run_sweep(spec, runner=runner)
except (KeyboardInterrupt, SweepInterrupted):  # what `fairmt sweep` does with them (fairmt.commands.sweep)
    print("interrupted; run the same command again to resume", flush=True)
    sys.exit(130)
"""


def _started(ledger: Path, n: int, proc, timeout: float = 60) -> list[str]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        lines = ledger.read_text().splitlines() if ledger.is_file() else []
        if len(lines) >= n:
            return lines
        assert proc.poll() is None, procs.finish(proc)
        time.sleep(0.05)
    raise AssertionError(f"no run {n} started within {timeout} s")


def test_sigterm_to_the_worker_then_ctrl_c_to_its_group_then_the_same_command_resumes(tmp_path, capsys, fake_runs):
    """A scheduler's SIGTERM to a worker process in the middle of its first run (a real subprocess under the real
    runner), then a second worker of the same sweep with Ctrl-C (SIGINT) to its whole process group in the middle
    of the retried run: both exit 130 with the resume line, no traceback, no process left; then the same command
    finishes every run, the interrupted one once, the other once, and exits 0. (The workers run the engine on the
    command's spec: `fairmt sweep`'s import of the recipe machinery would cost seconds per process; the study is a
    journal file, whose storage a worker opens in a fraction of the ~3 s of CPU SQLite's schema set-up costs. The
    waits are generous: on a loaded machine a worker's start can take tens of seconds, and only a failure waits
    that long.)"""
    from fairmt.sweep.spec import build_spec

    out, ledger, spec_file = tmp_path / "s", tmp_path / "ledger.txt", tmp_path / "spec.json"
    journal = tmp_path / "study.journal"
    spec = build_spec(RECIPE, CHEAP, GRID[1:], [], "1", [], output_dir=str(out), storage=str(journal))
    spec_file.write_text(json.dumps(spec.to_dict()))
    env = procs.env({"LEDGER": str(ledger), "PYTHONUNBUFFERED": "1"})
    for n, (sig, group) in enumerate([(signal.SIGTERM, False), (signal.SIGINT, True)], start=1):
        worker = procs.start(
            procs.python("-c", WORKER, spec_file),
            env=env,
            stdout=procs.subprocess.PIPE,
            stderr=procs.subprocess.PIPE,
            text=True,
        )
        runs = _started(ledger, n, worker, timeout=300)
        time.sleep(0.2)  # the stand-in run is sleeping now
        os.killpg(worker.pid, sig) if group else os.kill(worker.pid, sig)
        stdout, stderr = procs.finish(worker, timeout=300)
        assert worker.returncode == 130 and "run the same command again" in stdout, stdout + stderr
        assert "Traceback" not in stderr, stderr
        assert not (Path(runs[-1]) / "done.json").exists()
    assert runs[0] == runs[1]  # the interrupted run was the one taken again
    assert _sweep(out, "--seeds", "1", "--storage", str(journal)) == 0
    shown = capsys.readouterr().out
    assert "queued again" in shown and "2 run(s) trained, 0 reused; 2/2 runs finished" in shown, shown
    trained = [str(Path(r).parent) for r in fake_runs]
    assert len(set(trained)) == 2 and trained[0] == runs[0]  # the interrupted run first, then the other; once each
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    study = optuna.load_study(study_name="s", storage=storage)
    assert sorted(t.state.name for t in study.trials) == ["COMPLETE", "COMPLETE", "FAIL", "FAIL"]


# ------------------------------------------------------------------------------------------------- cut files
def test_an_emptied_done_json_is_rebuilt_and_a_cut_spec_is_one_line_then_rewritten(tmp_path, capsys, fake_runs):
    out = tmp_path / "s"
    assert _sweep(out) == 0 and len(fake_runs) == 2
    before = json.loads((out / "sweep.json").read_text())
    done = Path(fake_runs[0]).parent / "done.json"
    kept = json.loads(done.read_text())
    done.write_text("")
    assert main(["sweep", "report", str(out)]) == 0
    rebuilt = json.loads(done.read_text())
    assert {k: rebuilt[k] for k in ("setting", "seed", "trial", "results")} == {
        k: kept[k] for k in ("setting", "seed", "trial", "results")
    }
    assert json.loads((out / "sweep.json").read_text())["settings"] == before["settings"]
    done.write_text("")
    assert _sweep(out) == 0 and len(fake_runs) == 2  # resumed: the run is whole, not trained again
    assert json.loads(done.read_text())["seed"] == kept["seed"]
    # done.json damaged and the run's results gone too: nothing to rebuild from, the run is trained again
    done.write_text("{")
    (Path(fake_runs[0]) / "results.json").unlink()
    assert _sweep(out) == 0 and fake_runs[2:] == fake_runs[:1]
    capsys.readouterr()

    spec = out / "sweep_spec.json"
    text = spec.read_text()
    spec.write_text(text[: len(text) // 2])
    assert main(["sweep", "report", str(out)]) == 2
    _one_error_line(capsys, "sweep_spec.json is damaged", "run the sweep command again")
    assert _sweep(out) == 0 and len(fake_runs) == 3  # the same command rewrites it; nothing is trained
    assert "sweep_spec.json was damaged (empty or cut): rewritten" in capsys.readouterr().out
    assert json.loads(spec.read_text()) == json.loads(text)
    # another sweep's command cannot claim a folder whose spec is damaged
    spec.write_text("")
    assert main(["sweep", RECIPE, *CHEAP, "--grid", "training.learning_rate=0.5", "--output-dir", str(out)]) == 2
    _one_error_line(capsys, "is damaged", "does not show this folder holds this sweep")
    assert spec.read_text() == ""


def test_a_journal_cut_by_a_killed_writer_is_repaired_and_the_sweep_resumes(tmp_path, capsys, fake_runs):
    journal = tmp_path / "journal.log"
    out = tmp_path / "s"
    assert _sweep(out, "--storage", str(journal), "--seeds", "1") == 0
    whole = journal.read_bytes()
    # the last record a killed writer left cut, then a run lost with it
    journal.write_bytes(whole + b'{"op_code":5,"worker_id":"x","trial_id":1,"user_att')
    (Path(fake_runs[1]).parent / "done.json").unlink()
    capsys.readouterr()
    assert _sweep(out, "--storage", str(journal), "--seeds", "1") == 0, capsys.readouterr()
    shown = capsys.readouterr().out
    assert "ended in a record cut by a killed writer" in shown and "2/2 runs finished" in shown
    assert fake_runs[2:] == fake_runs[1:2]  # the lost run trained again, the other reused
    assert journal.read_bytes().startswith(whole) and journal.read_bytes().endswith(b"\n")
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    assert sum(t.state.name == "COMPLETE" for t in optuna.load_study(study_name="s", storage=storage).trials) >= 2


def test_a_finished_sweep_whose_trials_were_deleted_runs_them_again(tmp_path, capsys, fake_runs):
    import shutil

    out = tmp_path / "s"
    assert _sweep(out) == 0 and len(fake_runs) == 2
    shutil.rmtree(out / "trials")
    capsys.readouterr()
    assert _sweep(out) == 0
    shown = capsys.readouterr().out
    assert "are complete in the study but their runs are gone" in shown and "2/2 runs finished" in shown
    assert sorted(fake_runs[2:]) == sorted(fake_runs[:2])
    assert len(list(out.glob("trials/*/seed-0/done.json"))) == 2
    assert _sweep(out) == 0 and len(fake_runs) == 4  # and now it is finished: nothing more


# ------------------------------------------------------------------------------------------ someone else's files
def test_a_storage_that_is_not_an_optuna_one_is_refused_before_anything_is_written(tmp_path, capsys, fake_runs):
    mine = tmp_path / "mine.db"
    con = sqlite3.connect(mine)
    con.execute("CREATE TABLE patients (id INTEGER, name TEXT)")
    con.execute("INSERT INTO patients VALUES (1, 'x')")
    con.commit()
    con.close()
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\nsecond line\n")
    single = tmp_path / "one-line.txt"
    single.write_bytes(b"no line end")
    cases = [
        (f"sqlite:///{mine}", mine, "is a SQLite database that is not an Optuna storage (tables patients)"),
        (f"sqlite:///{notes}", notes, "is not a SQLite database"),
        (str(notes), notes, "is not an Optuna journal file"),
        (str(single), single, "is not an Optuna journal file"),
    ]
    for storage, path, expected in cases:
        before = path.read_bytes()
        assert _sweep(tmp_path / "s", "--storage", storage) == 2
        _one_error_line(capsys, expected)
        assert path.read_bytes() == before, storage  # byte-identical
        assert not (tmp_path / "s").exists() and not fake_runs
        assert not list(tmp_path.glob("*.lock")) and not list(tmp_path.glob("*.rename"))


def test_a_sqlite_study_another_worker_is_creating_is_waited_for_not_refused(tmp_path):
    """Two ``--join`` workers started together on a new SQLite study: one reads the file while the other's Optuna is
    making the tables (SQLite shows each table as it is made). Some of Optuna's tables and nothing else: the check
    waits for the core ones (here a thread finishes the schema with Optuna itself 0.5 s later); a schema left half
    made is refused after the wait, naming it so; one foreign table is refused at once."""
    import threading

    from optuna.storages._rdb import models
    from sqlalchemy import create_engine

    from fairmt.errors import FairmtError
    from fairmt.sweep.engine import _check_sqlite_file, _optuna_tables

    def half_made(path: Path, *extra: str) -> None:
        engine = create_engine(f"sqlite:///{path}")
        for name in ("studies", "study_directions", "version_info"):  # as Optuna makes them, before `trials`
            models.BaseModel.metadata.tables[name].create(engine)
        engine.dispose()
        with sqlite3.connect(path) as con:
            for name in extra:
                con.execute(f"CREATE TABLE {name} (id INTEGER)")
        con.close()

    assert {"studies", "study_directions", "version_info"} < _optuna_tables()
    racing = tmp_path / "racing.db"
    half_made(racing)
    finish = threading.Timer(0.5, lambda: optuna.storages.RDBStorage(f"sqlite:///{racing}").engine.dispose())
    finish.start()
    start = time.monotonic()
    try:
        _check_sqlite_file(racing, "sqlite:///racing.db", wait_s=60)
    finally:
        finish.join()
    assert time.monotonic() - start >= 0.5  # it waited for the other worker, and accepted the storage it made
    con = sqlite3.connect(racing)
    assert _optuna_tables() <= {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()

    stuck = tmp_path / "stuck.db"
    half_made(stuck)
    with pytest.raises(
        FairmtError,
        match=r"holds only some of an Optuna storage's tables \(studies, study_directions, "
        r"version_info\) and no more came in 0.3 s: its creation was interrupted",
    ):
        _check_sqlite_file(stuck, "sqlite:///stuck.db", wait_s=0.3)

    foreign = tmp_path / "foreign.db"
    half_made(foreign, "patients")
    start = time.monotonic()
    with pytest.raises(FairmtError, match=r"is a SQLite database that is not an Optuna storage \(tables patients, "):
        _check_sqlite_file(foreign, "sqlite:///foreign.db", wait_s=60)
    assert time.monotonic() - start < 5  # not waited for


@pytest.mark.parametrize(
    "form",
    [
        "sqlite+pysqlite:///{}",
        "sqlite:///{}?timeout=5",
        "SQLite:///{}",
        "sqlite+pysqlite:///file:{}?uri=true&mode=rw",
        "sqlite:///{}?check_same_thread=0",
    ],
)
def test_every_sqlite_url_form_is_checked_the_same_way(tmp_path, capsys, fake_runs, form):
    """Issue 52: the check reads the URL with SQLAlchemy's make_url, not a prefix: every form naming a user's own
    SQLite file is refused and leaves it byte-identical (same inode)."""
    mine = tmp_path / "mine.db"
    con = sqlite3.connect(mine)
    con.execute("CREATE TABLE patients (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    before, ino = mine.read_bytes(), mine.stat().st_ino
    assert _sweep(tmp_path / "s", "--storage", form.format(mine)) == 2
    _one_error_line(capsys, "is a SQLite database that is not an Optuna storage (tables patients)")
    assert mine.read_bytes() == before and mine.stat().st_ino == ino and not fake_runs


def test_an_in_memory_sqlite_study_is_refused(tmp_path, capsys, fake_runs):
    for url in ("sqlite://", "sqlite:///:memory:", "sqlite+pysqlite:///file:x?mode=memory&uri=true"):
        assert _sweep(tmp_path / "s", "--storage", url) == 2
        _one_error_line(capsys, "is a SQLite database in memory")
    assert not fake_runs


@pytest.mark.parametrize(
    "seeds,expected",
    [("1,-1", "seed -1 is outside [0, 2^32)"), ("0,4294967296", "seed 4294967296 is outside [0, 2^32)")],
)
def test_seeds_outside_numpys_range_are_one_line(tmp_path, capsys, seeds, expected):
    assert _sweep(tmp_path / "s", "--seeds", seeds) == 2
    _one_error_line(capsys, expected)
    assert not (tmp_path / "s").exists()


def test_a_sweep_whose_every_trial_fails_for_one_reason_exits_2_with_the_reason(tmp_path, capsys, monkeypatch):
    from fairmt.sweep import engine
    from sweep_helpers import standin_data_root

    def broken(cmd, log):
        log.write_text("Traceback ...\nValueError: model.type 'embedding_bag' needs token ids\n")
        return 1

    monkeypatch.setattr(engine, "run_subprocess", broken)
    standin_data_root(monkeypatch, tmp_path)
    assert _sweep(tmp_path / "s", "--max-failures", "2") == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(
        "fairmt: error: every trial of the sweep failed for the same reason"
    ), err
    assert "fairmt train exited with 1" in err and "needs token ids" in err
