"""The one place where fairmt checks what it is about to write: output files, output folders and run folders.

Every command checks its output paths here **before any work** (the work may take hours), and every failure is one
:class:`~fairmt.errors.FairmtError` naming the path and what to do:

* :func:`check_output_file` — a JSON / Markdown / plot / tuple file: its parent must not be a file, it must not be a
  folder, its folder must be writable (a read-only location is found by trying, not by permission bits, which do
  not bind root), its suffix must be one the writer supports, it must not be one of the command's own inputs, and an
  existing file is refused unless ``overwrite``;
* :func:`check_output_dir` — the same for a folder (an existing non-empty folder is refused unless ``overwrite`` or
  the command resumes in it);
* :func:`claim_run_dir` — a run (``fairmt train``, ``fairmt demo``, ...) *owns* its output folder from its first
  moment: an exclusive lock on ``_fairmt_run.lock`` inside it (``fcntl.flock``, released by the kernel when the
  process ends, so a killed run never leaves a stale lock). A second run given the same folder is refused, naming the
  holder (process, host, command, start time). ``overwrite`` then removes everything of the earlier run (a later
  resume can pick up none of its checkpoints), and refuses a folder that holds one of the run's inputs;
* :func:`json_text` — JSON that is always valid: a NaN or infinite number (which Python's ``json`` writes as the
  bare token ``NaN``, which is not JSON) becomes ``null``, and the document says which keys were not numbers.

Standard library only: commands call it before importing anything heavy.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

LOCK_NAME = "_fairmt_run.lock"
"""The lock file of a run folder. A leading underscore: ``Trainer.push_to_hub`` and ``fairmt push`` leave it out."""

_HELD: dict[str, int] = {}  # resolved folder -> file descriptor of the lock this process holds


# ---------------------------------------------------------------------------------------------- paths


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists; an ancestor that is a file is an error (nothing can be made
    under it)."""
    p = path
    while not p.exists():
        if p.parent == p:
            break
        p = p.parent
    return p


def _writable_dir(folder: Path) -> str | None:
    """Why nothing can be created in ``folder`` (None: it can). Tried for real: permission bits do not bind root,
    and a read-only mount or a full disk only shows when writing."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return "not writable (permission denied)"
    try:
        fd, probe = tempfile.mkstemp(prefix=".fairmt-probe-", dir=folder)
    except OSError as err:
        return f"not writable ({err.strerror or err})"
    os.close(fd)
    os.unlink(probe)
    return None


def _where(path: Path, what: str) -> Path:
    """The checks every output shares: no ancestor is a file, the folder it will be made in is writable."""
    anchor = _nearest_existing(path.parent if path.name else path)
    if anchor.exists() and not anchor.is_dir():
        raise FairmtError(f"{path}: cannot write the {what} there: {anchor} is a file, not a folder")
    why = _writable_dir(anchor) if anchor.is_dir() else "missing"
    if why:
        raise FairmtError(f"{path}: cannot write the {what}: {anchor} is {why}; choose a writable location")
    return anchor


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _inside(child: Path, folder: Path) -> bool:
    try:
        Path(os.path.realpath(child)).relative_to(os.path.realpath(folder))
        return True
    except ValueError:
        return False


def input_paths(values: Iterable[Any]) -> list[Path]:
    """The existing files and folders among ``values`` (strings, paths, lists of them, nested dicts of a recipe):
    what a command reads, for the "never write over an input" rule."""
    found: list[Path] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, (str, os.PathLike)) and str(v) and str(v) != "-" and "\n" not in str(v):
            try:
                p = Path(v).expanduser()
                if len(str(p)) < 4096 and p.exists():
                    found.append(p)
            except (OSError, ValueError):
                pass

    for value in values:
        walk(value)
    return found


def check_output_file(path: str | os.PathLike, what: str = "output", *, overwrite: bool = False,
                      suffixes: Iterable[str] | None = None, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Check that ``path`` can be written as the command's ``what`` file (see the module docstring); returns it."""
    p = Path(path).expanduser()
    if str(path).endswith(("/", os.sep)) or p.is_dir():
        raise FairmtError(f"{p}: is a folder, but the {what} is a file; give a file name (e.g. {p / ('out' + _first(suffixes))})")
    if suffixes is not None:
        allowed = [s.lower() for s in suffixes]
        if p.suffix.lower() not in allowed:
            raise FairmtError(f"{p}: the {what} must end in {', '.join(allowed)} (the format is taken from the name)")
    for src in inputs:
        if _same(p, Path(src)) or os.path.realpath(p) == os.path.realpath(src):
            raise FairmtError(f"{p}: is one of this command's inputs; writing the {what} there would destroy it: "
                              "choose another path")
    _where(p, what)
    if p.exists() and not overwrite:
        raise FairmtError(f"{p}: already exists; pass --overwrite to replace it, or choose another path")
    return p


def _first(suffixes: Iterable[str] | None) -> str:
    return next(iter(suffixes), ".json") if suffixes is not None else ".json"


def run_files(folder: str | os.PathLike) -> list[Path]:
    """What an earlier run left in ``folder`` (its lock file aside)."""
    p = Path(folder)
    return sorted(x for x in p.iterdir() if x.name != LOCK_NAME) if p.is_dir() else []


def check_output_dir(path: str | os.PathLike, what: str = "output folder", *, overwrite: bool = False,
                     resumable: bool = False, inputs: Iterable[str | os.PathLike] = (), flag: str = "") -> Path:
    """Check that ``path`` can be the command's output folder: not a file, under no file, writable, holding no input
    it would overwrite; an existing non-empty folder is refused unless ``overwrite`` or ``resumable``."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise FairmtError(f"{p}: is a file, but the {what} must be a folder; choose another path")
    _where(p / "x", what)
    if overwrite or not resumable:
        for src in inputs:
            s = Path(src)
            if _same(p, s) or (p.exists() and _inside(s, p)):
                raise FairmtError(f"{p}: holds {s}, one of this run's inputs; the {what} would "
                                  f"{'replace' if overwrite else 'mix with'} it: choose another {flag or what}")
    if not (overwrite or resumable) and run_files(p):
        raise FairmtError(f"{p}: the {what} already holds files (an earlier run's?); choose another "
                          f"{flag or what}, or pass --overwrite to replace them")
    return p


# ---------------------------------------------------------------------------------------------- run folders


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 65536).decode("utf-8") or "{}")
    except (OSError, ValueError):
        info = {}
    if not info:
        return "another process"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return f"pid {info.get('pid')} on {info.get('host')}, `{info.get('command')}`, started {started}"


def claim_run_dir(path: str | os.PathLike, what: str = "output folder", *, overwrite: bool = False,
                  resumable: bool = False, inputs: Iterable[str | os.PathLike] = (), flag: str = "") -> Path:
    """Make ``path`` this process's run folder (see the module docstring) and return it.

    Refused: a folder locked by a live run (named), a file, an unwritable location, a folder holding an input of the
    run, a folder holding an earlier run's files (unless ``overwrite``, which removes them, or ``resumable``: the
    caller resumes in it). Holding the lock twice in one process is allowed (a recipe that calls another)."""
    import fcntl

    p = check_output_dir(path, what, overwrite=overwrite, resumable=True, inputs=inputs, flag=flag)
    key = os.path.realpath(p)
    held = key in _HELD
    if held:  # this process holds it already (a runner called twice): the content rules still apply
        fd = _HELD[key]
    else:
        p.mkdir(parents=True, exist_ok=True)
        fd = os.open(p / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise FairmtError(f"{p}: the {what} is in use by another fairmt run ({holder}); wait for it to finish, "
                              f"or choose another {flag or what}") from None
    try:
        old = run_files(p)
        if old and not (overwrite or resumable):
            raise FairmtError(f"{p}: the {what} already holds files (an earlier run's?); choose another "
                              f"{flag or what}, or pass --overwrite to replace them")
        if old and overwrite:
            for entry in old:  # everything of the earlier run: a later resume must find none of its checkpoints
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(["fairmt", *sys.argv[1:]])
                if Path(sys.argv[0]).name in ("fairmt", "__main__.py") else " ".join(sys.argv), "started": time.time()}
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (json.dumps(info) + "\n").encode("utf-8"))
    except BaseException:
        if not held:
            os.close(fd)
        raise
    _HELD[key] = fd
    return p


def release_run_dir(path: str | os.PathLike | None = None) -> None:
    """Give up the lock :func:`claim_run_dir` took on ``path`` (None: every lock this process holds); the process's
    end releases them too."""
    keys = list(_HELD) if path is None else [os.path.realpath(Path(path).expanduser())]
    for key in keys:
        fd = _HELD.pop(key, None)
        if fd is not None:
            os.close(fd)


# ---------------------------------------------------------------------------------------------- JSON


def finite_json(data: Any) -> tuple[Any, list[str]]:
    """``data`` with every NaN / infinite float replaced by None, and the dotted paths of the replaced values."""
    bad: list[str] = []

    def walk(v: Any, where: str) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            bad.append(where or "(the value)")
            return None
        if isinstance(v, dict):
            return {k: walk(x, f"{where}.{k}" if where else str(k)) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x, f"{where}[{i}]") for i, x in enumerate(v)]
        if hasattr(v, "item") and getattr(v, "shape", None) == ():  # a numpy / torch scalar
            return walk(v.item(), where)
        return v

    return walk(data, ""), bad


def json_text(data: Any, *, indent: int | None = 2, default: Any = str) -> str:
    """``data`` as valid JSON (``allow_nan=False``): a NaN or infinite number is written as ``null`` and, when the
    document is an object, listed under ``"non_finite"`` with a note (a value that is not a number is undefined,
    not zero)."""
    clean, bad = finite_json(data)
    if bad and isinstance(clean, dict):
        clean["non_finite"] = {"note": "not a number (NaN or infinite): written as null", "keys": bad}
    return json.dumps(clean, indent=indent, ensure_ascii=False, allow_nan=False, default=default)


__all__ = ["LOCK_NAME", "check_output_dir", "check_output_file", "claim_run_dir", "finite_json", "input_paths",
           "json_text", "release_run_dir", "run_files"]
