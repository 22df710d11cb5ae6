"""The sweep's workers: an Optuna study, one ordinary ``fairmt train`` process per run.

Study and samplers (Optuna's): a grid trial is one (setting, seed) run, so several workers share the seeds of a
setting: a worker queues the next run nobody has taken (``study.enqueue_trial`` with the setting as parameters and
the seed as the ``seed`` user attribute) and asks for the next queued trial; ``--search N`` samples N settings with
:class:`~optuna.samplers.TPESampler` (one objective) or :class:`~optuna.samplers.NSGAIISampler` (several; population
N/2, 2 to 50), one trial = one setting trained with every seed, its value the seed mean of each objective; a setting
proposed again reuses its finished runs. The seed is never a parameter (Optuna's parameter importance, and
optuna-dashboard's, would treat it as a hyper-parameter): each trial carries ``setting``, ``seed`` (grid) or ``seeds``
(search) and ``run_dir`` / ``run_dirs`` as user attributes, and the study names its objectives
(``study.set_metric_names``), so the dashboard shows them by name. The study lives in
``DIR/study.db`` (SQLite) unless ``--storage`` names an RDB URL or a journal file; every worker (``--join``) asks
the same study for its next trial.

Trials: on Linux each ``fairmt train`` is forked from the worker's trial server (:mod:`fairmt.sweep.forked`, which
saves the imports of a fresh interpreter) unless ``fairmt sweep --no-fork``; ``trial.json`` records the command
line either way.

Runs: ``DIR/trials/<setting>/seed-<s>/`` holds ``trial.json`` (the command), ``train.log`` and ``run/`` (the
recipe's own output folder: its ``results.json``, model, checkpoints); ``done.json`` is written, atomically, only
after the subprocess exited 0 and its results were read. A run folder with ``done.json`` is never rerun nor
rewritten; one without is deleted before its run starts again.

Interrupted trials: a worker records its host, pid and the pid's start time in the trial (user attribute
``fairmt:owner``) and a heartbeat every ``grace_period/4`` seconds (at most 60 s; ``fairmt:heartbeat``). A trial
left RUNNING by a process that is gone — on this host, a pid that no longer exists (immediately); on another host,
no heartbeat for ``grace_period`` — is failed and re-queued with its parameters by Optuna's
:class:`~optuna.storages.RetryHeartbeatStaleTrialCallback`. Optuna's own heartbeat exists for RDB storages only and
under ``study.optimize`` only; this one works for the journal file storage too. A run that fails (non-zero exit) is
retried when the sweep command runs again, not by the same process. With SQLite (one machine), workers take trials
under a file lock: SQLite has no row locks, so two workers could otherwise pop the same queued retry.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes import family
from fairmt.sweep.results import flatten, read_done, read_results
from fairmt.sweep.spec import SweepSpec, check_metrics, yaml_scalar

OWNER = "fairmt:owner"
HEARTBEAT = "fairmt:heartbeat"
RETRY_OF = "fairmt:retry_of"
SEED, SEEDS, SETTING, RUN_DIR, RUN_DIRS = "seed", "seeds", "setting", "run_dir", "run_dirs"  # trial user attributes
SPEC_FILE = "sweep_spec.json"
HOST = socket.gethostname()

Runner = Callable[[list[str], Path], int]


class TrialFailed(Exception):
    """A run exited non-zero or left no readable results."""


class SweepInterrupted(BaseException):
    """SIGTERM (a scheduler's time limit or preemption) while a trial runs."""


def require_optuna():
    """Optuna (and psutil, for the liveness of workers), or the extra to install."""
    try:
        import optuna
        import psutil  # noqa: F401
    except ImportError as err:
        raise FairmtError(f'fairmt sweep needs {err.name or "Optuna"}: pip install "fairmt[sweep]"') from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


# ------------------------------------------------------------------------------------------------- storage
def redact(url: str) -> str:
    """The storage URL with its password hidden."""
    if "://" not in url:
        return url
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not a URL sqlalchemy can parse: show it without credentials
        return re.sub(r"//[^@/]*@", "//***@", url)


def without_password(url: str) -> str:
    """The storage URL with its password removed (what the sweep folder keeps: ``fairmt sweep report`` reconnects
    with ``PGPASSWORD`` / ``~/.pgpass``, which libpq reads, or the server's other authentication)."""
    if "://" not in url:
        return url
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        return parsed._replace(password=None).render_as_string(hide_password=False) if parsed.password else url
    except Exception:  # noqa: BLE001 - not a URL sqlalchemy can parse: drop what could be credentials
        return re.sub(r"//([^:@/]*):[^@/]*@", r"//\1@", url)


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite storage URL, in every form SQLAlchemy accepts (``sqlite:///f.db``,
    ``sqlite+pysqlite:///f.db``, ``sqlite:///f.db?timeout=5``, ``sqlite:///file:f.db?uri=true``, any letter case),
    parsed by ``sqlalchemy.engine.make_url`` — never by matching a prefix, so every form gets the same checks. None:
    not a SQLite URL (another database, or a journal file's path). An in-memory database is refused: the study would
    vanish with the process, unseen by ``--join`` workers."""
    if "://" not in url:
        return None
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy can read: Optuna says so when it opens it
        return None
    if parsed.get_backend_name().lower() != "sqlite":
        return None
    db = parsed.database or ""
    uri = str(parsed.query.get("uri", "")).lower() in ("true", "1")
    if uri and db.startswith("file:"):
        db = db[len("file:") :]
    if db in ("", ":memory:") or (uri and str(parsed.query.get("mode", "")) == "memory"):
        raise FairmtError(
            f"the study storage {redact(url)} is a SQLite database in memory: the study would be lost "
            "when the sweep ends and unseen by --join workers; give a file (sqlite:///study.db)"
        )
    return Path(db)


OPTUNA_CORE_TABLES = frozenset({"studies", "trials", "version_info"})


def _optuna_tables() -> frozenset[str]:
    """Every table an Optuna RDB storage has (Optuna's own schema); the core three where it cannot be read."""
    try:
        from optuna.storages._rdb import models

        return frozenset(models.BaseModel.metadata.tables)
    except Exception:  # noqa: BLE001 - a private module of Optuna's: without it, only the core tables are known
        return OPTUNA_CORE_TABLES


def _sqlite_tables(path: Path, shown: str) -> set[str]:
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except sqlite3.Error as err:
        raise FairmtError(
            f"refusing the study storage {shown}: {path} exists and is not a SQLite database ({err}); "
            "give a new file or an Optuna storage"
        ) from None


def _check_sqlite_file(path: Path, shown: str, wait_s: float = 30.0) -> None:
    """An existing SQLite file given as the study storage must be an Optuna storage: read (read-only) before
    anything is written, so a user's own database or another file is never changed. A file holding some of Optuna's
    tables and nothing else is a storage that another worker is creating at this moment (``--join`` workers started
    together; SQLite shows each table as it is made): its core tables are waited for, up to ``wait_s`` seconds."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    tables, optuna_tables = _sqlite_tables(path, shown), _optuna_tables()
    deadline = time.monotonic() + wait_s
    while tables and not OPTUNA_CORE_TABLES <= tables and tables <= optuna_tables and time.monotonic() < deadline:
        time.sleep(0.1)
        tables = _sqlite_tables(path, shown)
    if tables and not OPTUNA_CORE_TABLES <= tables:
        shown_tables = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        if tables <= optuna_tables:
            raise FairmtError(
                f"refusing the study storage {shown}: {path} holds only some of an Optuna storage's tables "
                f"({shown_tables}) and no more came in {wait_s:g} s: its creation was interrupted; give a new file"
            )
        raise FairmtError(
            f"refusing the study storage {shown}: {path} is a SQLite database that is not an Optuna "
            f"storage (tables {shown_tables}); fairmt does not add tables to it: give a new file"
        )


def _check_journal_file(path: Path, shown: str) -> str | None:
    """An existing journal file must be an Optuna journal (its first line a JSON record with an ``op_code``); a last
    record cut by a killed writer (no line end) is cut off, under the journal's own lock, before the file is opened:
    Optuna's reader skips a torn tail, but the next record would be appended to it and make the journal unreadable.
    Returns a note when it repaired the file."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    with open(path, "rb") as fh:
        first = fh.readline(1 << 20)
    try:
        record = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        record = None
    if not (isinstance(record, dict) and "op_code" in record):
        torn_first = not first.endswith(b"\n") and first.startswith(b'{"op_code":')  # killed in its first write
        if not torn_first:
            raise FairmtError(
                f"refusing the study storage {shown}: {path} exists and is not an Optuna journal file "
                "(its first line is no journal record); give a new file or an RDB URL"
            )
    from optuna.storages.journal import JournalFileSymlinkLock
    from optuna.storages.journal._file import get_lock_file

    with get_lock_file(JournalFileSymlinkLock(str(path))):
        with open(path, "rb+") as fh:
            data = fh.read()
            if data.endswith(b"\n"):
                return None
            keep = data.rfind(b"\n") + 1
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
    return (
        f"the study journal {path} ended in a record cut by a killed writer ({len(data) - keep} bytes): "
        "removed; the trial it belonged to is run again"
    )


STORAGE_NOTES: list[str] = []  # repairs made while opening a storage, for the sweep to print


def open_storage(url: str):
    """An Optuna storage: an RDB URL (``sqlite:///FILE``, ``postgresql://…``, ``mysql+pymysql://…``) or the path of
    a journal file (``JournalFileBackend``, for several machines on a shared filesystem). An existing file that is
    not an Optuna storage is refused before anything is written to it; a journal's torn last record is removed."""
    optuna = require_optuna()
    shown = redact(url)
    db = sqlite_file(url)
    if db is not None:
        _check_sqlite_file(db, shown)
    try:
        if "://" in url:
            kwargs = {"connect_args": {"timeout": 60}} if db is not None else {}
            for attempt in range(5):
                try:
                    return optuna.storages.RDBStorage(url, engine_kwargs=kwargs)
                except Exception as err:  # noqa: BLE001
                    # workers starting together race to create the tables (SQLite: "already exists", "locked";
                    # PostgreSQL: a UniqueViolation on pg_type when both create the enum types): the loser sees them
                    # on a retry
                    racing = any(
                        m in str(err)
                        for m in (
                            "already exists",
                            "UNIQUE constraint",
                            "locked",
                            "UniqueViolation",
                            "duplicate key value",
                        )
                    )
                    if not (racing and attempt < 4):
                        raise
                    time.sleep(0.2 * (attempt + 1))
        path = Path(url)
        if path.is_dir():
            raise FairmtError(
                f"cannot open the study storage {shown}: it is a folder (give a journal file path or "
                "an RDB URL such as sqlite:///study.db)"
            )
        if not path.parent.is_dir():
            raise FairmtError(f"cannot open the study storage {shown}: folder {path.parent} does not exist")
        from optuna.storages.journal import JournalFileBackend

        note = _check_journal_file(path, shown)
        if note:
            STORAGE_NOTES.append(note)
        return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
    except FairmtError:
        raise
    except Exception as err:  # noqa: BLE001 - sqlalchemy/driver errors of every kind: one line naming the URL
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise FairmtError(f"cannot open the study storage {shown}: {type(err).__name__}: {first}") from None


def make_sampler(spec: SweepSpec):
    optuna = require_optuna()
    if spec.mode == "grid":  # every grid trial is queued with its values (run_sweep): the sampler never draws one
        return optuna.samplers.RandomSampler(seed=0)
    if len(spec.objectives) == 1:
        return optuna.samplers.TPESampler(seed=spec.sampler_seed)
    return optuna.samplers.NSGAIISampler(population_size=max(2, min(50, spec.search // 2)), seed=spec.sampler_seed)


def _normal(x: Any) -> Any:
    return json.loads(json.dumps(x))


def open_study(spec: SweepSpec, storage):
    """Create or load the study; a study of the same name holding another sweep is refused."""
    optuna = require_optuna()
    sampler = make_sampler(spec)
    study = optuna.create_study(
        storage=storage,
        study_name=spec.study_name,
        sampler=sampler,
        directions=[d for _, d in spec.objectives],
        load_if_exists=True,
    )
    mine = _normal(spec.identity())
    theirs = study.user_attrs.get("fairmt:sweep")
    if theirs is None:
        study.set_user_attr("fairmt:sweep", mine)
        study.set_user_attr("fairmt:recipe", spec.recipe)
        study.set_user_attr("fairmt:sampler", type(sampler).__name__)
    elif theirs != mine:
        diff = [k for k in mine if mine.get(k) != theirs.get(k)]
        raise FairmtError(
            f"study {spec.study_name!r} in {redact(spec.storage)} holds another sweep ({', '.join(diff)} "
            "differ): rerun with the same arguments, or choose another --study-name / --output-dir"
        )
    if [d.name.lower() for d in study.directions] != [d for _, d in spec.objectives]:
        raise FairmtError(f"study {spec.study_name!r} optimises other directions: choose another --study-name")
    names = [name for name, _ in spec.objectives]
    if study.metric_names != names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # marked experimental
            study.set_metric_names(names)  # optuna-dashboard shows the objectives by name
    return study


# ------------------------------------------------------------------------------------------------- settings
def setting_key(setting: dict[str, Any]) -> str:
    return json.dumps(setting, sort_keys=True)


def setting_slug(setting: dict[str, Any]) -> str:
    """A readable, unique folder name: ``key=value_key=value-<hash>``."""
    if not setting:
        return "default"
    text = "_".join(f"{k}={v}" for k, v in setting.items())
    safe = re.sub(r"[^A-Za-z0-9._=+-]", "-", text)[:80]
    return f"{safe}-{hashlib.sha1(setting_key(setting).encode()).hexdigest()[:6]}"


def run_root(spec: SweepSpec, setting: dict[str, Any], seed: int) -> Path:
    return Path(spec.output_dir) / "trials" / setting_slug(setting) / f"seed-{seed}"


def point(trial) -> dict[str, Any]:
    """What a trial stands for: its setting (its parameters) and, for a grid trial, its run's seed (the ``seed``
    user attribute)."""
    params = dict(trial.params)
    seed = trial.user_attrs.get(SEED)
    if seed is not None:
        params["seed"] = seed
    return params


def split_params(spec: SweepSpec, params: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """(setting in the spec's key order, seed or None)."""
    keys = [*spec.grid, *spec.ranges]
    return {k: params[k] for k in keys if k in params}, params.get("seed")


def train_command(spec: SweepSpec, setting: dict[str, Any], seed: int, run_dir: Path) -> list[str]:
    """``fairmt train RECIPE overrides… setting… seed output-folder`` (under ``accelerate launch`` if asked)."""
    fam = family(spec.method)
    overrides = [
        *spec.overrides,
        *(spec.override_for(k, v) for k, v in setting.items()),
        *(f"{k}={seed}" for k in fam.seed_keys),
    ]
    overrides += [f"{k}={yaml_scalar(str(run_dir))}" for k in fam.output_keys]
    if fam.results_key:
        overrides.append(f"{fam.results_key}={yaml_scalar(str(run_dir / fam.results_file))}")
    train = ["-m", "fairmt", "train", spec.recipe_path, *overrides]
    if spec.launcher == "accelerate":
        return [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            str(spec.accelerate_config),
            *train,
        ]
    return [sys.executable, *train]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the run gets SIGKILL when the worker dies (kill -9 of the worker alone leaves no orphan training)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the process group kill still reaches it
        pass


_SERVER: Any = None
"""The running sweep's :class:`fairmt.sweep.forked.TrialServer` (None: every trial starts a fresh interpreter)."""

_NO_SERVER: str | None = None
"""Why the running sweep has no trial server (``--no-fork``, or what :func:`fairmt.forking.ready_to_fork` said), for
each trial's log; None while it has one, or outside :func:`trial_server`."""


def run_subprocess(cmd: list[str], log_path: Path) -> int:
    """Run ``cmd`` with stdout and stderr into ``log_path``; a worker that stops (signal, error) stops it too. A
    ``fairmt train`` command is forked from the sweep's trial server where it has one (:mod:`fairmt.sweep.forked`),
    else started as a fresh interpreter."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    from fairmt.outputs import appending
    from fairmt.sweep.forked import TRAIN

    with appending(log_path, what="the trial's log", binary=True) as log:  # a full disk: the writer's one line
        log.write(("$ " + " ".join(cmd) + "\n").encode())
        server, trial = _SERVER, cmd[1 : 1 + len(TRAIN)] == TRAIN
        if server is not None and server.alive and trial:
            log.write(b"# forked from the sweep worker's trial server (fairmt sweep --no-fork: a fresh interpreter)\n")
            log.flush()
            rc = server.run(cmd, log)
            if rc is not None:
                return rc
            log.write(b"# the trial server is gone: a fresh interpreter\n")
        elif server is None and _NO_SERVER is not None and trial:
            log.write(f"# a fresh interpreter: no trial server ({_NO_SERVER})\n".encode())
        log.flush()
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        try:
            return proc.wait()
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _log_tail(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


@dataclass
class RunResult:
    metrics: dict[str, float]
    root: Path
    seconds: float
    reused: bool


def run_one(spec: SweepSpec, setting: dict[str, Any], seed: int, trial_number: int, runner: Runner) -> RunResult:
    """One run of the recipe: reused when its ``done.json`` exists, else (re)started in a clean folder."""
    from fairmt.eval.report import write_text_atomic

    fam = family(spec.method)
    root = run_root(spec, setting, seed)
    done = root / "done.json"
    info = read_done(root, fam.results_file)
    if info is not None:
        return RunResult(flatten(read_results(root / info["results"])), root, 0.0, True)
    if root.exists():
        shutil.rmtree(root)  # an interrupted or failed attempt: nothing finished in it
    root.mkdir(parents=True)
    run_dir = root / "run"
    cmd = train_command(spec, setting, seed, run_dir)
    write_text_atomic(
        root / "trial.json",
        json.dumps(
            {
                "setting": setting,
                "seed": seed,
                "trial": trial_number,
                "command": cmd,
                "cwd": os.getcwd(),
                "host": HOST,
                "pid": os.getpid(),
                "started": datetime.now().isoformat(timespec="seconds"),
            },
            indent=2,
        )
        + "\n",
    )
    t0 = time.time()
    rc = runner(cmd, root / "train.log")
    seconds = time.time() - t0
    where = root.relative_to(spec.output_dir)
    if rc != 0:
        log = root / "train.log"
        raise TrialFailed(f"{where}: fairmt train exited with {rc} (log {log}: {_log_tail(log)})")
    try:
        results = read_results(run_dir / fam.results_file)
    except FairmtError as err:
        raise TrialFailed(f"{where}: {err}") from None
    metrics = flatten(results)
    write_text_atomic(
        done,
        json.dumps(
            {
                "setting": setting,
                "seed": seed,
                "trial": trial_number,
                "results": f"run/{fam.results_file}",
                "seconds": round(seconds, 2),
                "finished": datetime.now().isoformat(timespec="seconds"),
            },
            indent=2,
        )
        + "\n",
    )
    return RunResult(metrics, root, seconds, False)


# ------------------------------------------------------------------------------------------------- liveness
def _pid_alive(pid: int, started: float) -> bool:
    import psutil

    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - started) < 1.0 and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _my_owner(number: int) -> dict[str, Any]:
    import psutil

    return {"host": HOST, "pid": os.getpid(), "pid_started": psutil.Process().create_time(), "trial": number}


def alive(trial, grace: float) -> bool:
    """Whether a RUNNING trial's worker still runs it (see the module docstring)."""
    now = time.time()
    owner = trial.user_attrs.get(OWNER)
    if not owner or owner.get("trial") != trial.number:  # just asked, or attributes copied from a retried trial
        start = trial.datetime_start.timestamp() if trial.datetime_start else now
        return now - start < grace
    if owner.get("host") == HOST:
        return _pid_alive(int(owner["pid"]), float(owner["pid_started"]))
    # before the first heartbeat (it comes grace/4 after the trial starts), the trial's own start: the worker's
    # process start would declare a trial dead at once when that worker had run other trials first
    start = trial.datetime_start.timestamp() if trial.datetime_start else now
    beat = float(trial.user_attrs.get(HEARTBEAT, max(start, float(owner.get("pid_started", 0)))))
    return now - beat < grace


def reap_stale(study, grace: float) -> list[int]:
    """Fail the RUNNING trials no worker runs any more and queue each again (Optuna's retry callback)."""
    optuna = require_optuna()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the callback is marked experimental
        retry_cls = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None)  # Optuna ≥ 4.9
        retry = (retry_cls or optuna.storages.RetryFailedTrialCallback)()
    reaped = []
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if alive(t, grace):
            continue
        try:
            _tell(study, t.number, state=optuna.trial.TrialState.FAIL)
        except (ValueError, RuntimeError, optuna.exceptions.UpdateFinishedTrialError):
            continue  # another worker failed it first
        retry(study, copy.deepcopy(t))  # the callback extends the trial's retry history in place
        reaped.append(t.number)
    return reaped


def _complete_params(spec: SweepSpec, params: dict[str, Any]) -> bool:
    names = {*spec.grid, *spec.ranges} | ({"seed"} if spec.mode == "grid" else set())
    return set(params) == names


def on_disk(spec: SweepSpec, trial) -> bool:
    """Whether every run of a trial has its ``done.json`` in the sweep folder (a COMPLETE trial whose runs were
    deleted is not finished any more: its runs are queued again). The folders are the spec's, not the recorded
    ``run_dir``, so a sweep folder moved elsewhere keeps its runs."""
    setting, seed = split_params(spec, point(trial))
    seeds = [seed] if spec.mode == "grid" else spec.seeds
    if seeds == [None]:
        return False
    return all(read_done(run_root(spec, setting, s), family(spec.method).results_file) is not None for s in seeds)


def _ours_to_check(spec: SweepSpec, trial) -> bool:
    """Whether a COMPLETE trial's runs should be in this sweep folder: it ran on this host into the folder the spec
    names now. A trial another machine (or another folder on this one, each with its own ``--output-dir`` copy)
    completed keeps its runs there: the study's word stands for it."""
    owner = trial.user_attrs.get(OWNER) or {}
    if owner.get("host") not in (None, HOST):
        return False
    recorded = trial.user_attrs.get(RUN_DIR) or (trial.user_attrs.get(RUN_DIRS) or [None])[0]
    if recorded is None:
        return True
    setting, seed = split_params(spec, point(trial))
    seeds = [seed] if spec.mode == "grid" else spec.seeds
    if seeds[0] is None:
        return True
    here = run_root(spec, setting, seeds[0])
    return os.path.realpath(str(recorded)) == os.path.realpath(str(here))


def _finished(spec: SweepSpec, trial) -> bool:
    optuna = require_optuna()
    if trial.state != optuna.trial.TrialState.COMPLETE:
        return False
    return on_disk(spec, trial) or not _ours_to_check(spec, trial)


def requeue_failed(study, spec: SweepSpec, lost: list[int] | None = None) -> list[int]:
    """At start: queue again every failed run/setting that has no complete, running or queued trial, and every
    complete one whose runs are gone from the sweep folder (their numbers are added to ``lost``)."""
    optuna = require_optuna()
    S = optuna.trial.TrialState
    trials = study.get_trials(deepcopy=False)
    finished = {t.number for t in trials if _finished(spec, t)}
    covered = {setting_key(point(t)) for t in trials if t.number in finished or t.state in (S.RUNNING, S.WAITING)}
    queued = []
    for t in trials:
        key = setting_key(point(t))
        gone = t.state == S.COMPLETE and t.number not in finished
        if (t.state == S.FAIL or gone) and key not in covered and _complete_params(spec, point(t)):
            if gone and lost is not None:
                lost.append(t.number)
            params = dict(t.params)
            if spec.mode == "grid":  # a study of fairmt < issue 36 kept the seed as a parameter
                seed = {SEED: t.user_attrs.get(SEED, params.pop("seed", None))}
            else:
                seed = {}
            study.enqueue_trial(params, user_attrs={RETRY_OF: t.number, **seed})
            covered.add(key)
            if not gone:
                queued.append(t.number)
    return queued


@dataclass
class Progress:
    total: int  # runs (grid) or settings (search) the sweep needs
    complete: int
    available: int  # what a worker may still take
    running_elsewhere: int
    workers: int
    failed: list[str] = field(default_factory=list)


def progress(study, spec: SweepSpec, me: int | None = None) -> Progress:
    optuna = require_optuna()
    S = optuna.trial.TrialState
    trials = study.get_trials(deepcopy=False)
    finished = [t for t in trials if _finished(spec, t)]
    done = {setting_key(point(t)) for t in finished}
    running = [t for t in trials if t.state == S.RUNNING and t.number != me and alive(t, spec.grace_period)]
    workers = {tuple((t.user_attrs.get(OWNER) or {}).get(k) for k in ("host", "pid")) for t in running}
    waiting = {setting_key(point(t)) for t in trials if t.state == S.WAITING}
    run_keys = {setting_key(point(t)) for t in running}
    if spec.mode == "grid":
        points = [setting_key({**s, "seed": seed}) for s in spec.settings() for seed in spec.seeds]
        touched = {setting_key(point(t)) for t in trials}
        fresh = [p for p in points if p not in touched]
        failed = [p for p in points if p in touched and p not in done | run_keys | waiting]
        available = len(fresh) + len(waiting - done - run_keys)
        return Progress(
            len(points), len(done & set(points)), available, len(run_keys - done), max(1, len(workers) + 1), failed
        )
    complete = len(finished)
    return Progress(
        spec.search, complete, spec.search - complete - len(running), len(running), max(1, len(workers) + 1)
    )


def _duplicate(study, spec: SweepSpec, number: int, params: dict[str, Any]):
    """An earlier claim on the same run (grid) or setting (search) that makes this trial unnecessary: a trial with a
    smaller number that is queued or running (alive), or (grid) a complete one. Two workers may get the same grid
    point once the grid's first pass is handed out (Optuna's GridSampler documents it), and two workers failing the
    same stale trial at once may both queue a retry; the smaller number wins. A smaller-numbered trial whose
    parameters are not all set yet (its worker is between ``ask`` and ``suggest``) is waited for, briefly."""
    optuna = require_optuna()
    S = optuna.trial.TrialState
    key = setting_key(params)
    for _ in range(20):
        pending = False
        for t in study.get_trials(deepcopy=False, states=(S.COMPLETE, S.RUNNING, S.WAITING)):
            if t.number == number:
                continue
            if (
                t.number < number
                and t.state == S.RUNNING
                and not _complete_params(spec, point(t))
                and alive(t, spec.grace_period)
            ):
                pending = True
                continue
            if setting_key(point(t)) != key:
                continue
            if t.state == S.COMPLETE and spec.mode == "grid" and on_disk(spec, t):
                return t
            if t.number < number and (t.state == S.WAITING or (t.state == S.RUNNING and alive(t, spec.grace_period))):
                return t
        if not pending:
            return None
        time.sleep(0.25)
    return None


@contextlib.contextmanager
def take_lock(spec: SweepSpec):
    """An exclusive lock for taking a trial, for SQLite storages (one machine): see the module docstring."""
    if sqlite_file(spec.storage) is None:
        yield
        return
    from fairmt.outputs import exclusive_lock

    with exclusive_lock(Path(spec.output_dir) / ".take.lock", what="the sweep's lock for taking a trial"):
        yield


class Heartbeat:
    """Records ``fairmt:heartbeat`` on a running trial every ``interval`` seconds."""

    def __init__(self, trial, interval: float) -> None:
        self.trial, self.interval = trial, interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while not self.stop.wait(self.interval):
            with contextlib.suppress(Exception):  # a storage hiccup must not kill the run; the next beat retries
                self.trial.set_user_attr(HEARTBEAT, time.time())

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


# ------------------------------------------------------------------------------------------------- workers
def _tell(study, trial, values=None, state=None) -> None:
    """``study.tell`` that tolerates GridSampler's ``Study.stop()`` after the last grid point: under ask-and-tell it
    raises RuntimeError once the trial is stored (Optuna documents it; optuna/optuna#4121)."""
    try:
        study.tell(trial, values, state=state)
    except RuntimeError as err:
        if "Study.stop" not in str(err):
            raise


def _suggest(trial, spec: SweepSpec) -> dict[str, Any] | None:
    """The trial's setting (and, grid, its run's seed); None for a grid trial that was not queued with a seed."""
    params: dict[str, Any] = {}
    for k, values in spec.grid.items():
        params[k] = trial.suggest_categorical(k, values)
    for k, r in spec.ranges.items():
        suggest = trial.suggest_int if r["int"] else trial.suggest_float
        params[k] = suggest(k, r["low"], r["high"], log=r["log"])
    if spec.mode == "grid":
        seed = trial.user_attrs.get(SEED)
        if seed is None:
            return None
        params["seed"] = seed
    return params


def _next_run(study, spec: SweepSpec) -> tuple[dict[str, Any], int] | None:
    """The first (setting, seed) of the grid that no trial stands for yet, or None."""
    touched = {setting_key(point(t)) for t in study.get_trials(deepcopy=False)}
    for setting in spec.settings():
        for seed in spec.seeds:
            if setting_key({**setting, "seed": seed}) not in touched:
                return setting, seed
    return None


def _fmt_time(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _describe(setting: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in setting.items()) or "(recipe as is)"


def _check_objectives(spec: SweepSpec, metrics: dict[str, float]) -> None:
    names = sorted(metrics)
    check_metrics([o[0] for o in spec.objectives], names)
    check_metrics([a[0] for a in spec.tradeoff], names, "--tradeoff metric")


def _values(spec: SweepSpec, setting: dict[str, Any], metric_sets: list[dict[str, float]]) -> list[float]:
    """The trial's objective values: the run's metrics (grid) or their seed means (search)."""
    import statistics

    for name, _ in spec.objectives:
        if any(name not in m for m in metric_sets):
            raise TrialFailed(f"{_describe(setting)}: a run reports no {name} (or a non-finite value)")
    return [statistics.fmean(m[name] for m in metric_sets) for name, _ in spec.objectives]


def _inside(storage: str, out: str) -> bool:
    """Whether the storage is a file in the sweep folder (the default SQLite file, or a journal put there)."""
    db = sqlite_file(storage)
    path = str(db) if db is not None else storage if "://" not in storage else ""
    return bool(path) and Path(path).resolve().parent == Path(out).resolve()


def _write_spec_file(spec: SweepSpec) -> None:
    from fairmt.eval.report import write_text_atomic

    kept = {**spec.to_dict(), "storage": without_password(spec.storage)}  # never a password in the folder
    write_text_atomic(
        Path(spec.output_dir) / SPEC_FILE, json.dumps({"identity": spec.identity(), "spec": kept}, indent=2) + "\n"
    )


def _repair_spec_file(spec: SweepSpec) -> str:
    """A damaged ``sweep_spec.json`` is rewritten when the folder's study says it holds this very sweep (its
    ``fairmt:sweep`` identity); otherwise nothing can tell whose folder it is: refused."""
    optuna = require_optuna()
    path = Path(spec.output_dir) / SPEC_FILE
    theirs = None
    db = sqlite_file(spec.storage)
    if db is None or db.is_file():
        try:
            study = optuna.load_study(study_name=spec.study_name, storage=open_storage(spec.storage))
            theirs = study.user_attrs.get("fairmt:sweep")
        except KeyError:  # no such study
            theirs = None
    if theirs is None or _normal(theirs) != _normal(spec.identity()):
        raise FairmtError(
            f"{path} is damaged (empty or cut) and the study {spec.study_name!r} does not show this "
            "folder holds this sweep: choose another --output-dir"
        )
    _write_spec_file(spec)
    return f"{path} was damaged (empty or cut): rewritten from this command (the study holds the same sweep)"


def prepare_folder(spec: SweepSpec) -> str | None:
    """Create the sweep folder and its ``sweep_spec.json``; a folder holding something else is refused. Returns a
    note when it repaired a damaged ``sweep_spec.json``."""
    out = Path(spec.output_dir)
    spec_file = out / SPEC_FILE
    if spec_file.is_file() and _read_spec_file(spec_file) is None:
        return _repair_spec_file(spec)
    if spec_file.is_file():
        theirs = _normal(_read_spec_file(spec_file).get("identity"))
        mine = _normal(spec.identity())
        if theirs != mine:
            diff = [k for k in mine if mine.get(k) != (theirs or {}).get(k)]
            raise FairmtError(
                f"{out} holds another sweep ({', '.join(diff)} differ): rerun it with its own "
                f"arguments (see {spec_file}) or choose another --output-dir"
            )
        return
    # what workers starting at the same moment may already have put there (the study, this file being written)
    ours = (SPEC_FILE, f".{SPEC_FILE}.", ".take.lock")
    if _inside(spec.storage, spec.output_dir):
        ours += ((sqlite_file(spec.storage) or Path(spec.storage)).name,)
    if out.is_dir() and any(not p.name.startswith(ours) for p in out.iterdir()):
        raise FairmtError(f"{out} exists and is not a sweep folder: choose another --output-dir")
    out.mkdir(parents=True, exist_ok=True)
    _write_spec_file(spec)
    return None


def _read_spec_file(path: Path) -> dict[str, Any] | None:
    """``sweep_spec.json`` as written, or None when it is damaged (empty, cut, not the expected object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and isinstance(data.get("spec"), dict) and isinstance(data.get("identity"), dict)):
        return None
    return data


def load_spec(out: str | Path) -> SweepSpec:
    path = Path(out) / SPEC_FILE
    if not path.is_file():
        raise FairmtError(f"{out} is not a sweep folder (no {SPEC_FILE})")
    data = _read_spec_file(path)
    if data is None:
        raise FairmtError(
            f"{path} is damaged (empty or cut): run the sweep command again with its arguments in this "
            "folder; it rewrites the file (the finished runs are kept)"
        )
    try:
        return SweepSpec.from_dict(data["spec"])
    except TypeError as err:
        raise FairmtError(f"{path} is damaged ({err}): run the sweep command again to rewrite it") from None


@dataclass
class Outcome:
    ran: int = 0
    reused: int = 0
    failed: list[str] = field(default_factory=list)
    complete: bool = False
    progress: Progress | None = None


WARM = ("transformers.trainer",)
"""Imported before the trial server is forked: the bulk of what every recipe family's run imports (~7 s of CPU),
imported once for the worker and its server; importing it asks CUDA nothing."""


@contextlib.contextmanager
def trial_server(enabled: bool = True):
    """While the block runs, :func:`run_subprocess` forks each ``fairmt train`` from a trial server
    (:mod:`fairmt.sweep.forked`) started here, after importing :data:`WARM`. ``fairmt sweep`` opens it first, before
    it checks the recipe: the server is a copy of a process that has imported, and not yet asked CUDA anything about
    the machine (checking a recipe does). Not ``enabled``, or a process :func:`fairmt.forking.ready_to_fork` refuses
    (after stopping tqdm's stall monitor, which a progress bar shown earlier in this process may have started): no
    server, and every trial starts a fresh interpreter, its log saying why."""
    global _SERVER, _NO_SERVER
    from fairmt.sweep import forked

    if _SERVER is not None:  # a sweep inside a sweep: the outer one's server serves
        yield None
        return
    why = "fairmt sweep --no-fork" if not enabled else forked.ready_to_fork()
    server = None
    if why is None:
        import importlib

        for name in WARM:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        server = forked.TrialServer.start()  # None when the imports asked CUDA after all (forked.why_not)
        if server is None:
            why = forked.why_not() or "the trial server did not start"
    _SERVER, _NO_SERVER = server, why
    try:
        yield server
    finally:
        _SERVER, _NO_SERVER = None, None
        if server is not None:
            server.close()


def run_sweep(
    spec: SweepSpec,
    runner: Runner | None = None,
    echo: Callable[[str], None] | None = None,
    check: Callable[[], None] | None = None,
) -> Outcome:
    """Run trials until the sweep is complete or nothing is left for this worker; returns what happened. ``check``:
    called once a storage outside the sweep folder has opened and before the folder is made (``fairmt sweep``: the
    recipe's data and models, :func:`fairmt.sweep.spec.check_trial_inputs`). ``runner``: runs one trial's command
    (default :func:`run_subprocess`: forked from the trial server inside :func:`trial_server`, else a fresh
    interpreter)."""
    optuna = require_optuna()
    S = optuna.trial.TrialState
    runner = runner or run_subprocess
    echo = echo or (lambda line: print(line, flush=True))
    # a storage outside the sweep folder is opened first: a bad URL fails before the folder exists
    STORAGE_NOTES.clear()
    storage = None if _inside(spec.storage, spec.output_dir) else open_storage(spec.storage)
    if check is not None:
        check()
    repaired = prepare_folder(spec)
    storage = storage or open_storage(spec.storage)
    notes = [*STORAGE_NOTES, *([repaired] if repaired else [])]
    study = open_study(spec, storage)
    outcome = Outcome()
    with take_lock(spec):
        reaped = reap_stale(study, spec.grace_period)
        others = [t.user_attrs.get(OWNER) or {} for t in study.get_trials(deepcopy=False, states=(S.RUNNING,))]
        if others and not spec.join:
            who = ", ".join(sorted({f"{o.get('host', '?')}:{o.get('pid', '?')}" for o in others}))
            raise FairmtError(
                f"{len(others)} trial(s) of this sweep are running in other processes ({who}): pass "
                "--join to run trials beside them"
            )
        lost: list[int] = []
        requeued = requeue_failed(study, spec, lost)
    for note in notes:
        echo(f"fairmt sweep: {note}")
    if lost:
        echo(
            f"fairmt sweep: trial(s) {lost} are complete in the study but their runs are gone from "
            f"{Path(spec.output_dir) / 'trials'}: queued again"
        )
    if reaped:
        echo(f"fairmt sweep: trial(s) {reaped} were interrupted (their process is gone): failed and queued again")
    if requeued:
        echo(f"fairmt sweep: failed trial(s) {requeued} queued again")
    started, durations, failures_in_row = time.time(), [], 0
    checked = False
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):
        raise SweepInterrupted()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)
    try:
        while True:
            with take_lock(spec):
                reap_stale(study, spec.grace_period)
                prog = progress(study, spec)
                if prog.available <= 0:
                    break
                if spec.mode == "grid" and not study.get_trials(deepcopy=False, states=(S.WAITING,)):
                    run = _next_run(study, spec)
                    if run is not None:  # two workers may queue the same run: _duplicate prunes the later
                        study.enqueue_trial(run[0], user_attrs={SEED: run[1]})
                trial = study.ask()
                params = _suggest(trial, spec)
                trial.set_user_attr(OWNER, _my_owner(trial.number))
                dup = None if params is None else _duplicate(study, spec, trial.number, params)
                if params is None or dup is not None:
                    _tell(study, trial, state=S.PRUNED)
                    continue
            setting, seed = split_params(spec, params)
            seeds = [seed] if spec.mode == "grid" else spec.seeds
            trial.set_user_attr(SETTING, setting)  # for optuna-dashboard and anyone reading the study
            if spec.mode == "grid":
                trial.set_user_attr(RUN_DIR, str(run_root(spec, setting, seed)))
            else:
                trial.set_user_attr(SEEDS, list(seeds))
                trial.set_user_attr(RUN_DIRS, [str(run_root(spec, setting, s)) for s in seeds])
            metric_sets = []
            try:
                with Heartbeat(trial, min(60.0, spec.grace_period / 4)):
                    for i, s in enumerate(seeds):
                        res = run_one(spec, setting, s, trial.number, runner)
                        if not checked:
                            _check_objectives(spec, res.metrics)
                            checked = True
                        metric_sets.append(res.metrics)
                        outcome.reused += res.reused
                        outcome.ran += not res.reused
                        if not res.reused:
                            durations.append(res.seconds)
                        _echo_progress(echo, study, spec, setting, s, trial.number, res, started, durations, i + 1)
                    values = _values(spec, setting, metric_sets)
            except TrialFailed as err:
                _tell(study, trial, state=S.FAIL)
                outcome.failed.append(str(err))
                failures_in_row += 1
                echo(f"fairmt sweep: trial {trial.number} failed: {err}")
                if failures_in_row >= spec.max_failures:
                    echo(f"fairmt sweep: stopping after {failures_in_row} failed trials in a row (--max-failures)")
                    break
                continue
            except BaseException:
                with contextlib.suppress(Exception):
                    _tell(study, trial, state=S.FAIL)
                raise
            failures_in_row = 0
            _tell(study, trial, values)
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
    outcome.progress = progress(study, spec)
    outcome.complete = outcome.progress.complete >= outcome.progress.total
    return outcome


def _echo_progress(
    echo, study, spec: SweepSpec, setting, seed, number, res: RunResult, started, durations, finished_in_trial: int
) -> None:
    """One line per finished run: setting, seed, the objectives, runs left, elapsed time and ETA (the mean run time of
    this worker × runs left ÷ the workers running now)."""
    import statistics

    prog = progress(study, spec, me=number)
    per_trial = 1 if spec.mode == "grid" else len(spec.seeds)
    total = prog.total * per_trial
    done = min(total, prog.complete * per_trial + finished_in_trial)
    left = total - done
    shown = ", ".join(f"{k} {res.metrics[k]:.2f}" for k, _ in spec.objectives if k in res.metrics)
    eta = statistics.fmean(durations) * left / prog.workers if durations else None
    took = "reused" if res.reused else f"{res.seconds:.0f} s"
    echo(
        f"fairmt sweep: [{done}/{total}] {_describe(setting)} seed {seed} (trial {number}, {took}): {shown} | "
        f"{left} left, elapsed {_fmt_time(time.time() - started)}, ETA {_fmt_time(eta) if eta is not None else '?'}"
    )


def study_info(spec: SweepSpec) -> dict[str, Any]:
    """Storage (password hidden), study name and trial counts by state, for the report; empty when the study
    cannot be read (Optuna missing, storage gone)."""
    info: dict[str, Any] = {"storage": redact(spec.storage), "name": spec.study_name}
    try:
        optuna = require_optuna()
        db = sqlite_file(spec.storage)
        if db is not None and not db.is_file():
            return info
        study = optuna.load_study(study_name=spec.study_name, storage=open_storage(spec.storage))
    except (FairmtError, KeyError):
        return info
    counts: dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        counts[t.state.name] = counts.get(t.state.name, 0) + 1
    info["trials"] = counts
    return info
