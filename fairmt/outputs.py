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
  holder (process, host, command, start time). A run folder carries a manifest (see "What --overwrite removes"
  below), and ``overwrite`` removes exactly what it says fairmt wrote there;
* :func:`json_text` — JSON that is always valid: a NaN or infinite number (which Python's ``json`` writes as the
  bare token ``NaN``, which is not JSON) becomes ``null``, and the document says which keys were not numbers.

What --overwrite removes
------------------------
``--overwrite`` means "replace my earlier results", never "empty this folder". Every folder fairmt writes a run into
holds ``.fairmt-manifest.jsonl`` (JSON lines, appended, never rewritten while a run writes):

* ``{"claim": {pid, host, command, started}, "foreign": [names]}`` — written when a run takes the folder, *before* it
  creates anything: the top-level entries already there that fairmt did not write (the user's);
* ``{"made": [names], "proof": {name: proof}}`` — top-level entries fairmt created, each with its :func:`proof`
  (a file's size, modification time, inode and SHA-256; a folder's every entry with its size and time; a link's
  target), recorded when a run ends (normally, by an error or Ctrl-C: :func:`release_run_dir`), after each
  checkpoint a Trainer saves (:func:`record_new`) and when a writer publishes a folder (:func:`publish_dir`). Every
  entry that appeared in the folder since the claim is the run's (a file the user adds to the folder while the run
  writes there counts as the run's). A name may be listed before it is created (:func:`record_made`), without a
  proof;
* ``{"closed": time}`` — the run ended and recorded what it made.

An entry is fairmt's — removable by ``--overwrite`` — only while the manifest's last proof of it still matches it.
Everything else is kept, and named in one line when the manifest lists it (:func:`kept_note`): a forged or copied
line (no proof, or one of another file), a file changed or replaced since fairmt wrote it, an entry a run killed
before its next record (``kill -9``, out of memory) left, a user's file added after such a kill, and the files of a
run folder written before the manifest kept proofs (an older fairmt). Only the writers whose folders hold nothing
else (a sweep folder, marked by its ``sweep_spec.json``; a fairseq-prep folder, by its ``preprocess.log``) still
count entries carrying a name fairmt writes (:data:`OWN_NAMES`) as theirs in a folder without a manifest.
Top-level entries are the unit: a folder fairmt created is removed whole; a folder the user had there is never
entered. (A proof shows that the entry is the one fairmt wrote; whoever can write the manifest can also remove the
folder's entries by hand, so it is no defence against the folder's owner.)

With ``overwrite`` (:func:`check_overwrite`, then :func:`claim_run_dir` / :func:`publish_dir`):

* refused, one line, nothing touched: the current folder (or one holding it), a home folder (``$HOME``, the current
  user's and the folder owner's home, or one holding them), a filesystem root or mount point, a folder holding
  ``.git``, a folder holding one of the run's inputs (the recipe file included), a manifest naming an entry outside
  the folder (``..``, ``/``), and an entry fairmt cannot show it wrote but whose name it writes (a ``checkpoint-*``
  of unknown origin the Trainer's resume would pick up, a ``config.json`` the run would write over): each named;
* removed: exactly fairmt's entries; an entry that is a symbolic link is unlinked, never followed (its target is
  left as it is), and a folder is removed without following the links inside it;
* left as they are: every other entry (the user's notes, data, links).

How files are written
---------------------
Nothing is written through a symbolic link or into a file that has other hard links: a whole file
(:class:`writing`) is written to a temporary file beside it (``.NAME.PID-XXXXXXXX.tmp``) and renamed over the name
(a hard link elsewhere keeps the old content; a symbolic link, a block device or a socket at the name is refused,
one line); a character device or a pipe at the name (``--json /dev/stdout``, ``/dev/null``, a FIFO), or a link to
one, is written into as a stream and never replaced, with or without ``--overwrite``; an appended file
(:class:`appending`) is opened with ``O_NOFOLLOW`` and refused when it has other hard links; the run lock is created
with ``O_CREAT | O_EXCL | O_NOFOLLOW``, and an existing lock that is a link, a hard link or not a regular file is
refused. Temporary files whose process is gone (a killed write) are removed by the next write of the same name and
by the next run that takes the folder (:func:`clean_stale`).

Standard library only: commands call it before importing anything heavy.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import hashlib
import json
import math
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

LOCK_NAME = "_fairmt_run.lock"
"""The lock file of a run folder. A leading underscore: ``Trainer.push_to_hub`` and ``fairmt push`` leave it out."""

MANIFEST = ".fairmt-manifest.jsonl"
"""What fairmt wrote in a folder (see "What --overwrite removes" in the module docstring)."""

OWN_NAMES = (
    # the Trainer and the model/tokenizer files of save_pretrained (transformers, PEFT, sentence-transformers)
    "checkpoint-*",
    "runs",
    "trainer_state.json",
    "training_args.bin",
    "*_results.json",
    "README.md",
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "model-*-of-*.safetensors",
    "model.safetensors.index.json",
    "pytorch_model*.bin",
    "pytorch_model.bin.index.json",
    "adapter_config.json",
    "adapter_model.*",
    "tokenizer*",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.*",
    "merges.txt",
    "sentencepiece*.model",
    "spm*.model",
    "chat_template.*",
    "preprocessor_config.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "[0-9]_Pooling",
    "[0-9]_Normalize",
    "[0-9]_Dense",
    "optimizer.pt",
    "scheduler.pt",
    "rng_state*.pth",
    "scaler.pt",
    # fairmt's runners: results, selected models, stages, held-out data, the demo's seeds
    "results.json",
    "results.md",
    "final",
    "final_merged",
    "glue",
    "glue_before",
    "best-*",
    "model",
    "cced_heldout.jsonl",
    "run.json",
    "stage1",
    "stage2",
    "clusters",
    "probe_*.jsonl",
    "seed[0-9]*",
    "report.json",
    "logs",
    # fairmt data fairseq-prep
    "text",
    "dict.*.txt",
    "dict.txt",
    "train.*",
    "valid.*",
    "test.*",
    "preprocess.log",
    "langs.txt",
    ".cf-tmp",
    # fairmt sweep
    "sweep_spec.json",
    ".sweep_spec.json.*",
    "study.db",
    "trials",
    "sweep.json",
    "sweep.md",
    "tradeoff.png",
    ".take.lock",
)
"""Top-level names fairmt's writers create in a folder they own (glob patterns). Used only together with a marker:
to settle what a killed run created after its claim, for folders written before the manifest existed, and to refuse
an entry of unknown origin that carries one of these names (the run would pick it up or write over it)."""

_HELD: dict[str, int] = {}  # resolved folder -> file descriptor of the lock this process holds
_CLAIMED: dict[str, tuple[Path, frozenset[str]]] = {}  # resolved folder -> (folder, entries not the run's at claim)


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


def check_output_file(
    path: str | os.PathLike,
    what: str = "output",
    *,
    overwrite: bool = False,
    suffixes: Iterable[str] | None = None,
    inputs: Iterable[str | os.PathLike] = (),
) -> Path:
    """Check that ``path`` can be written as the command's ``what`` file (see the module docstring); returns it."""
    p = Path(path).expanduser()
    if str(path).endswith(("/", os.sep)) or p.is_dir():
        raise FairmtError(
            f"{p}: is a folder, but the {what} is a file; give a file name (e.g. {p / ('out' + _first(suffixes))})"
        )
    suffixes = list(suffixes) if suffixes is not None else None
    stream = target_kind(p, what) == "stream"
    if suffixes is not None and not (stream and len(suffixes) == 1):  # /dev/stdout: one format, no name needed
        allowed = [s.lower() for s in suffixes]
        if p.suffix.lower() not in allowed:
            raise FairmtError(f"{p}: the {what} must end in {', '.join(allowed)} (the format is taken from the name)")
    for src in inputs:
        if _same(p, Path(src)) or os.path.realpath(p) == os.path.realpath(src):
            raise FairmtError(
                f"{p}: is one of this command's inputs; writing the {what} there would destroy it: choose another path"
            )
    if stream:  # /dev/stdout, /dev/null, a FIFO: written into, nothing is replaced
        return p
    _where(p, what)
    if os.path.lexists(p) and not overwrite:
        raise FairmtError(f"{p}: already exists; pass --overwrite to replace it, or choose another path")
    return p


def _first(suffixes: Iterable[str] | None) -> str:
    return next(iter(suffixes), ".json") if suffixes is not None else ".json"


def run_files(folder: str | os.PathLike) -> list[Path]:
    """What an earlier run left in ``folder`` (its lock file and manifest aside)."""
    p = Path(folder)
    return sorted(x for x in p.iterdir() if x.name not in (LOCK_NAME, MANIFEST)) if p.is_dir() else []


def check_output_dir(
    path: str | os.PathLike,
    what: str = "output folder",
    *,
    overwrite: bool = False,
    resumable: bool = False,
    inputs: Iterable[str | os.PathLike] = (),
    flag: str = "",
    clears: bool | None = None,
    markers: Iterable[str] = (),
) -> Path:
    """Check that ``path`` can be the command's output folder: not a file, under no file, writable, holding no input
    it would overwrite; an existing non-empty folder is refused unless ``overwrite`` or ``resumable``. ``clears``
    (default: ``overwrite`` for a folder that is not ``resumable``): ``overwrite`` will remove an earlier run's files
    from it, so the folder must pass :func:`check_overwrite` (``markers``: the writer's own marker files)."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise FairmtError(f"{p}: is a file, but the {what} must be a folder; choose another path")
    if overwrite and (not resumable if clears is None else clears):
        check_overwrite(p, what, inputs=inputs, flag=flag, markers=markers)
    _where(p / "x", what)
    if overwrite or not resumable:
        for src in inputs:
            s = Path(src)
            if _same(p, s) or (p.exists() and _inside(s, p)):
                raise FairmtError(
                    f"{p}: holds {s}, one of this run's inputs; the {what} would "
                    f"{'replace' if overwrite else 'mix with'} it: choose another {flag or what}"
                )
    if not (overwrite or resumable) and run_files(p):
        raise FairmtError(
            f"{p}: the {what} already holds files (an earlier run's?); choose another "
            f"{flag or what}, or pass --overwrite to replace them"
        )
    return p


# ---------------------------------------------------------------------------------------------- --overwrite


def fairmt_named(name: str) -> bool:
    """Whether a top-level entry ``name`` carries a name fairmt's writers create (:data:`OWN_NAMES`)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in OWN_NAMES)


def _homes(folder: Path) -> set[str]:
    """Home folders ``--overwrite`` never clears: ``$HOME``, the current user's, the folder owner's."""
    found = {os.path.realpath(os.path.expanduser("~"))}
    try:
        import pwd

        found.add(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir))
        if folder.exists():
            found.add(os.path.realpath(pwd.getpwuid(folder.stat().st_uid).pw_dir))
    except (ImportError, KeyError, OSError):
        pass
    return {h for h in found if h}


def _holds(outer: str, inner: str) -> bool:
    """Whether the resolved path ``inner`` is ``outer`` or inside it."""
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def _unsafe_place(p: Path, inputs: Iterable[str | os.PathLike]) -> str | None:
    """Why ``--overwrite`` must never clear ``p`` (None: it may remove fairmt's files from it)."""
    real = os.path.realpath(p)
    cwd = os.path.realpath(os.getcwd())
    if real == os.path.realpath(os.sep) or (os.path.isdir(real) and os.path.ismount(real)):
        return "it is a filesystem root (a mount point)"
    if _holds(real, cwd):
        return "it is the current folder" if real == cwd else f"it holds the current folder {cwd}"
    for home in sorted(_homes(p)):
        if _holds(real, home):
            return "it is a home folder" if real == home else f"it holds the home folder {home}"
    if os.path.lexists(os.path.join(real, ".git")):
        return "it holds .git (a repository's working folder)"
    for src in inputs:
        s = os.path.realpath(os.path.expanduser(str(src)))
        if _holds(real, s):
            return f"it holds {src}, one of this run's inputs"
    return None


def _read_manifest(folder: Path) -> list[dict] | None:
    """The manifest's records (a line cut off by a killed write is skipped); None when there is none."""
    try:
        text = (folder / MANIFEST).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as err:
        raise FairmtError(f"{folder / MANIFEST}: cannot read fairmt's manifest ({err.strerror or err})") from None
    records = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):  # a cut line, or one nested too deep to be fairmt's
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)] if isinstance(value, str) else []


_TMP_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]+)-[A-Za-z0-9_]{8}\.tmp$")
"""The name of a temporary file or folder fairmt writes beside its target (:class:`writing`, :func:`save_folder`):
``.NAME.PID-XXXXXXXX.tmp``. One whose process is gone was left by a killed write: removed (:func:`clean_stale`)."""

DIGEST_LIMIT = 1 << 30
"""Files up to this size (1 GiB) carry a content digest (SHA-256) in their proof; larger ones their size, time and
inode only (a digest of a model of many GB at every run's end would cost minutes)."""


def proof(path: Path) -> dict | None:
    """What fairmt records of an entry it wrote, to show later that the entry is still the one it wrote: a file's
    size, modification time (ns), inode and (up to :data:`DIGEST_LIMIT`) SHA-256; a folder's every entry (relative
    path, kind, size, time; links not followed, no content read); a link's target. None: the entry is gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return {"link": os.readlink(path)}
    if stat.S_ISDIR(st.st_mode):
        h = hashlib.sha256()
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(dirs + files):
                full = os.path.join(root, name)
                try:
                    s = os.lstat(full)
                except OSError:
                    continue
                kind = "d" if stat.S_ISDIR(s.st_mode) else "l" if stat.S_ISLNK(s.st_mode) else "f"
                size = 0 if kind == "d" else s.st_size
                h.update(
                    f"{os.path.relpath(full, path)}\0{kind}\0{size}\0{s.st_mtime_ns}\n".encode(
                        "utf-8", "surrogateescape"
                    )
                )
        return {"dir": h.hexdigest(), "ino": st.st_ino}
    if not stat.S_ISREG(st.st_mode):
        return {"special": stat.S_IFMT(st.st_mode), "ino": st.st_ino}
    found: dict[str, Any] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}
    if st.st_size <= DIGEST_LIMIT:
        h = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            return found
        found["sha256"] = h.hexdigest()
    return found


class FolderPlan:
    """Who wrote each top-level entry of a folder: ``owned`` (fairmt: the manifest's last proof of it
    (:func:`proof`) still matches it; ``settled``: by name, only in a folder carrying one of the writer's
    ``markers`` and no manifest) and ``foreign`` (everything else). ``unproven``: entries the manifest lists (or that
    appeared while a run that was then killed held the folder) which fairmt cannot show it wrote — changed since, a
    line without a proof (forged, copied, from an older fairmt), or never recorded: kept, and named. ``bad``: manifest
    entries that name no top-level entry of the folder (``..``, a path with ``/``)."""

    def __init__(self, folder: Path, markers: Iterable[str] = ()):
        self.folder = folder
        entries = (
            sorted(x.name for x in folder.iterdir() if x.name not in (LOCK_NAME, MANIFEST)) if folder.is_dir() else []
        )
        records = _read_manifest(folder) if folder.is_dir() else None
        listed: set[str] = set()
        proofs: dict[str, Any] = {}
        self.bad: list[str] = []
        settle: set[str] = set()
        killed: set[str] = set()
        self.manifest = records is not None
        if records is not None:
            claim, closed = None, True
            for rec in records:
                given = rec.get("proof") if isinstance(rec.get("proof"), dict) else {}
                for name in _names(rec.get("made")):
                    if name in ("", ".", "..") or "/" in name or os.sep in name or "\0" in name:
                        self.bad.append(name)
                    else:
                        listed.add(name)
                        proofs[name] = given.get(name)  # the last record of a name decides
                if "claim" in rec:
                    claim, closed = rec, False
                if "closed" in rec:
                    closed = True
            if claim is not None and not closed:  # a run killed before its end: what appeared since is not proven
                foreign = set(_names(claim.get("foreign")))
                killed = {e for e in entries if e not in listed and e not in foreign and fairmt_named(e)}
        elif markers and any(os.path.lexists(folder / m) for m in markers):  # the writer's folder from before
            settle = {e for e in entries if fairmt_named(e)}
        self.entries = entries
        self.made = {e for e in entries if e in listed and proofs.get(e) is not None and proofs[e] == proof(folder / e)}
        self.settled = sorted(settle)
        self.owned = [e for e in entries if e in self.made or e in settle]
        self.foreign = [e for e in entries if e not in self.owned]
        self.unproven = sorted((listed & set(entries) - self.made) | killed)

    def risky(self) -> list[str]:
        """Entries fairmt did not write that carry a name it writes: the run could resume from or write over them."""
        return [e for e in self.foreign if fairmt_named(e)]


def _listing(names: list[str], n: int = 6) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def check_overwrite(
    path: str | os.PathLike,
    what: str = "output folder",
    *,
    inputs: Iterable[str | os.PathLike] = (),
    flag: str = "",
    markers: Iterable[str] = (),
    foreign_ok: bool = True,
) -> FolderPlan:
    """Refuse a folder ``--overwrite`` must not clear (see the module docstring), touching nothing; returns what
    clearing it would remove (``plan.owned``) and keep (``plan.foreign``). ``foreign_ok=False``: a writer that
    cannot work beside the user's files refuses them too."""
    p = Path(path).expanduser()
    choose = f"choose another {flag or what}"
    why = _unsafe_place(p, inputs)
    if why:
        raise FairmtError(
            f"{p}: --overwrite refused, nothing removed: {why}; {choose} (--overwrite removes only what "
            "fairmt wrote, and never in such a folder)"
        )
    plan = FolderPlan(p, markers)
    if plan.bad:
        raise FairmtError(
            f"{p / MANIFEST}: --overwrite refused, nothing removed: the manifest names "
            f"{_listing(plan.bad)}, outside this folder; {choose}"
        )
    risky = plan.risky() if foreign_ok else plan.foreign
    if risky:
        it = "it" if len(risky) == 1 else "them"
        why = f"the run could resume from or write over {it}" if foreign_ok else f"the {what} cannot hold other files"
        unproven = [e for e in risky if e in plan.unproven]
        how = (
            f"{MANIFEST} does not list {it}"
            if not unproven
            else f"{MANIFEST} holds no record of {_listing(unproven)} that still matches: changed since fairmt wrote "
            f"{'it' if len(unproven) == 1 else 'them'}, left by a killed run, or listed without fairmt's proof"
        )
        raise FairmtError(
            f"{p}: --overwrite refused, nothing removed: {_listing(risky)} "
            f"{'was' if len(risky) == 1 else 'were'} not written by fairmt here ({how}) and {why}; "
            f"move {it} away, or {choose}"
        )
    return plan


def remove_entry(path: Path) -> None:
    """Remove one entry fairmt wrote: a symbolic link is unlinked (never followed), a folder removed without following
    the links inside it (``shutil.rmtree``'s fd-based walk), a file unlinked."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _append(folder: Path, *records: dict, fresh: bool = False) -> None:
    """Append records to ``folder``'s manifest (``fresh``: start it anew, with its header)."""
    lines = []
    if fresh or not (folder / MANIFEST).exists():
        lines.append(
            {
                "fairmt_manifest": 1,
                "note": "top-level entries fairmt wrote in this folder; --overwrite "
                "removes these (and, after a killed run, entries named like fairmt's) and nothing else",
            }
        )
    lines += list(records)
    text = "".join(json.dumps(r) + "\n" for r in lines).encode(
        "ascii"
    )  # ASCII: a name that is not UTF-8 is kept as its \\udcXX escape
    with appending(
        folder / MANIFEST,
        what="fairmt's manifest (what this run wrote in the folder)",
        mode="w" if fresh else "a",
        binary=True,
    ) as fh:  # one write: whole lines or a cut last one
        fh.write(text)


def _claim_record() -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": " ".join(["fairmt", *sys.argv[1:]])
        if Path(sys.argv[0]).name in ("fairmt", "__main__.py")
        else " ".join(sys.argv),
        "started": time.time(),
    }


def begin_manifest(folder: str | os.PathLike, plan: FolderPlan, *, clear: bool) -> FolderPlan:
    """Take ``folder`` for a run in its manifest: with ``clear``, remove fairmt's entries (``plan.owned``) and start
    the manifest anew; else record what ``plan`` settled. Then the claim line, listing the entries that are not the
    run's (written before the run creates anything). Returns the plan of the folder now."""
    p = Path(folder)
    if clear:
        for name in plan.owned:
            remove_entry(p / name)
        kept_note(p, plan)
        _append(p, {"claim": _claim_record(), "foreign": plan.foreign}, fresh=True)
    else:
        _append(
            p, *([{"made": plan.settled}] if plan.settled else []), {"claim": _claim_record(), "foreign": plan.foreign}
        )
    return plan


def kept_note(folder: Path, plan: FolderPlan) -> None:
    """Say, in one line on stderr, which entries ``--overwrite`` kept although the manifest lists them (or a killed
    run left them): fairmt cannot show it wrote them (:class:`FolderPlan`'s ``unproven``)."""
    kept = [e for e in plan.unproven if os.path.lexists(folder / e)]
    if kept:
        print(
            f"fairmt: {folder}: kept {_listing(kept)}: {MANIFEST} lists {'it' if len(kept) == 1 else 'them'} but "
            "holds no record that still matches (changed since fairmt wrote it, or listed without its proof); "
            "remove by hand what you do not need",
            file=sys.stderr,
            flush=True,
        )


def record_made(folder: str | os.PathLike, *names: str, written: bool = False) -> None:
    """Record top-level entries of ``folder`` that fairmt is about to create (before creating them: a run killed in
    between leaves them listed — not proven, so kept and named by the next ``--overwrite``), or, with ``written``,
    that it has just written: with their :func:`proof`, so the next ``--overwrite`` may remove them while they are
    unchanged."""
    if names:
        rec: dict[str, Any] = {"made": [str(n) for n in names]}
        if written:
            rec["proof"] = {str(n): proof(Path(folder) / str(n)) for n in names}
        _append(Path(folder), rec)


def record_new(folder: str | os.PathLike, *, close: bool = False) -> list[str]:
    """Record every top-level entry that appeared in ``folder`` since this process claimed it (``close``: and that the
    run ended); returns them. Without a claim of this process, nothing is recorded."""
    key = os.path.realpath(Path(folder).expanduser())
    claimed = _CLAIMED.get(key)
    if claimed is None:
        return []
    p, foreign = claimed
    plan = FolderPlan(p)
    new = [e for e in plan.entries if e not in foreign and e not in plan.made]  # new, or changed since recorded
    records: list[dict] = [{"made": new, "proof": {e: proof(p / e) for e in new}}] if new else []
    if close:
        records.append({"closed": time.time()})
        _CLAIMED.pop(key, None)
    if records and p.is_dir():
        _append(p, *records)
    return new


def clear_dir(
    path: str | os.PathLike,
    what: str = "output folder",
    *,
    inputs: Iterable[str | os.PathLike] = (),
    flag: str = "",
    markers: Iterable[str] = (),
    foreign_ok: bool = True,
) -> list[str]:
    """``--overwrite`` for a writer that keeps no lock: :func:`check_overwrite`, then remove fairmt's entries (and
    nothing else); returns their names."""
    plan = check_overwrite(path, what, inputs=inputs, flag=flag, markers=markers, foreign_ok=foreign_ok)
    for name in plan.owned:
        remove_entry(Path(path).expanduser() / name)
    return plan.owned


def publish_dir(
    built: str | os.PathLike,
    final: str | os.PathLike,
    *,
    what: str = "output folder",
    flag: str = "",
    markers: Iterable[str] = (),
) -> Path:
    """Put the finished folder ``built`` (made beside ``final``) at ``final`` with its manifest: renamed into place
    when ``final`` does not exist; else fairmt's entries of ``final`` are replaced by ``built``'s (each recorded
    before it is moved in) and the user's entries stay. Refused, with ``built`` removed and ``final`` untouched, when
    one of ``built``'s names is an entry of ``final`` fairmt did not write."""
    b, f = Path(built), Path(final)
    names = sorted(x.name for x in b.iterdir() if x.name not in (LOCK_NAME, MANIFEST))
    if not f.exists():  # renamed whole: the proofs (inode, times) stay true
        _append(
            b,
            {"claim": _claim_record(), "foreign": []},
            {"made": names, "proof": {n: proof(b / n) for n in names}},
            {"closed": time.time()},
            fresh=True,
        )
        os.replace(b, f)
        return f
    plan = FolderPlan(f, markers)
    clash = sorted(set(names) & set(plan.foreign))
    if clash:
        shutil.rmtree(b, ignore_errors=True)
        raise FairmtError(
            f"{f}: --overwrite refused, nothing removed: {_listing(clash)} "
            f"{'was' if len(clash) == 1 else 'were'} not written by fairmt here and the new "
            f"{what} would write over {'it' if len(clash) == 1 else 'them'}; move "
            f"{'it' if len(clash) == 1 else 'them'} away, or choose another {flag or what}"
        )
    begin_manifest(f, plan, clear=True)
    record_made(f, *names)
    for name in names:
        os.replace(b / name, f / name)
    shutil.rmtree(b, ignore_errors=True)
    _append(f, {"made": names, "proof": {n: proof(f / n) for n in names}}, {"closed": time.time()})
    return f


# ---------------------------------------------------------------------------------------------- run folders


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 65536).decode("utf-8") or "{}")
    except (OSError, ValueError, RecursionError):
        info = {}
    if not isinstance(info, dict):
        info = {}
    if not info:
        return "another process"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return f"pid {info.get('pid')} on {info.get('host')}, `{info.get('command')}`, started {started}"


def _in_use(p: Path, what: str, holder: str, flag: str) -> FairmtError:
    return FairmtError(
        f"{p}: the {what} is in use by another fairmt run ({holder}); wait for it to finish, or choose "
        f"another {flag or what}"
    )


def refuse_if_in_use(path: str | os.PathLike, what: str = "output folder", *, flag: str = "") -> None:
    """Refuse ``path`` now, with :func:`claim_run_dir`'s message, when a live run holds it; take nothing. For a
    command to say so before its imports and checks (seconds), not after them: the claim itself comes later and
    decides (a run that starts in between is refused there)."""
    import fcntl

    p = Path(path).expanduser()
    if os.path.realpath(p) in _HELD:
        return
    try:  # never through a link, never blocking on a FIFO put there
        fd = os.open(p / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # no lock file (a new folder), a link or unreadable: the claim decides
        return
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _in_use(p, what, _holder(fd), flag) from None
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _open_lock(path: Path) -> int:
    """The run lock's file descriptor: created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``), or an earlier run's
    lock opened without following a link; a lock that is a link, has other hard links or is not a regular file is
    refused (it could be a user's file: the claim writes into the lock), touching nothing."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        pass
    except OSError as exc:
        raise write_error(path, "the run's lock file", exc) from None
    why = None
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        fd = -1
        why = (
            "a symbolic link" + (f" (to {os.readlink(path)})" if os.path.islink(path) else "")
            if exc.errno == errno.ELOOP
            else None
        )
        if why is None:
            raise write_error(path, "the run's lock file", exc) from None
    if fd >= 0:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            why = "not a regular file"
        elif st.st_nlink > 1:
            why = f"a file with {st.st_nlink - 1} other hard link{'s' if st.st_nlink > 2 else ''} (another name of it)"
        if why is None:
            return fd
        os.close(fd)
    raise FairmtError(
        f"{path}: refused, nothing written: the run's lock file is {why}, which fairmt never writes "
        "into (it could be one of your files); remove it — only this name, the file it points to or "
        "shares its data with is not touched — and run again"
    )


def claim_run_dir(
    path: str | os.PathLike,
    what: str = "output folder",
    *,
    overwrite: bool = False,
    resumable: bool = False,
    inputs: Iterable[str | os.PathLike] = (),
    flag: str = "",
    markers: Iterable[str] = (),
) -> Path:
    """Make ``path`` this process's run folder (see the module docstring) and return it.

    Refused: a folder locked by a live run (named), a file, an unwritable location, a folder holding an input of the
    run, a folder holding an earlier run's files (unless ``overwrite``, which removes what fairmt wrote there and
    nothing else, or ``resumable``: the caller resumes in it); with ``overwrite``, every folder
    :func:`check_overwrite` refuses. Holding the lock twice in one process is allowed (a recipe that calls
    another). ``markers``: the writer's own marker files (folders written before the manifest existed)."""
    import fcntl

    markers = tuple(markers)
    if os.path.realpath(Path(path).expanduser()) in _HELD:  # this process holds it already (a runner called twice):
        record_new(Path(path).expanduser(), close=True)  # what the first call made is recorded, with proofs, first
    p = check_output_dir(
        path, what, overwrite=overwrite, resumable=True, inputs=inputs, flag=flag, clears=overwrite, markers=markers
    )  # every refusal before anything is created
    key = os.path.realpath(p)
    held = key in _HELD
    if held:  # the content rules still apply
        fd = _HELD[key]
    else:
        p.mkdir(parents=True, exist_ok=True)
        fd = _open_lock(p / LOCK_NAME)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise _in_use(p, what, holder, flag) from None
    clean_stale(p)  # what a killed write left (its process is gone)
    try:
        if overwrite:  # checked again under the lock: what is removed is what the plan says now
            plan = check_overwrite(p, what, inputs=inputs, flag=flag, markers=markers)
        else:
            plan = FolderPlan(p, markers)
            if (plan.owned or plan.foreign) and not resumable:
                raise FairmtError(
                    f"{p}: the {what} already holds files (an earlier run's?); choose another "
                    f"{flag or what}, or pass --overwrite to replace them"
                )
        plan = begin_manifest(p, plan, clear=overwrite)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (json.dumps(_claim_record()) + "\n").encode("utf-8"))
    except BaseException:
        if not held:
            os.close(fd)
        raise
    _HELD[key] = fd
    _CLAIMED[key] = (p, frozenset(plan.foreign))
    return p


def release_run_dir(path: str | os.PathLike | None = None) -> None:
    """Record in the manifest what the run made (:func:`record_new`) and give up the lock :func:`claim_run_dir` took
    on ``path`` (None: every lock this process holds); the process's end releases the locks too (a killed run's
    entries are settled by the next run, see the module docstring)."""
    keys = list(_HELD) if path is None else [os.path.realpath(Path(path).expanduser())]
    failed: FairmtError | None = None
    for key in keys:
        try:
            record_new(key, close=True)
        except FairmtError as err:  # a full disk: the manifest could not be written (the next run settles by name)
            _CLAIMED.pop(key, None)
            failed = failed or err
        except OSError:  # the folder went away: nothing more to record
            _CLAIMED.pop(key, None)
        fd = _HELD.pop(key, None)
        if fd is not None:
            os.close(fd)
    if failed is not None and sys.exc_info()[1] is None:  # never in place of the error that is ending the run
        raise failed


# ---------------------------------------------------------------------------------------------- writing


def _size_text(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def write_failed(exc: BaseException) -> bool:
    """True for the errors a full disk or a file-size limit gives (``OSError`` — ENOSPC, EFBIG, EDQUOT, EIO... —
    and safetensors' ``SafetensorError``, which wraps them)."""
    return isinstance(exc, OSError) or type(exc).__name__ == "SafetensorError"


APPENDED = "the lines written before are kept (a line cut short is left out when the file is read again)"
"""What :func:`write_error` says of an append-only file (:class:`appending`) whose write failed."""


def write_error(
    path: str | os.PathLike, what: str, exc: BaseException, *, kept: str = "nothing was left half-written"
) -> FairmtError:
    """The one line for a write that failed: the file, what was being written, the reason and the free space
    (``kept``: what the failure left on the disk — a whole-file write leaves nothing half-written, an append
    :data:`APPENDED`)."""
    import errno

    code = getattr(exc, "errno", None)
    reason = {
        errno.ENOSPC: "no space left on the device",
        errno.EFBIG: "file too large (a file-size limit, ulimit -f?)",
        getattr(errno, "EDQUOT", -1): "disk quota exceeded",
    }.get(code)
    if reason is None:
        reason = (
            exc.strerror
            if isinstance(exc, OSError) and exc.strerror
            else str(exc).splitlines()[0]
            if str(exc)
            else type(exc).__name__
        )
    try:
        free = f"{_size_text(shutil.disk_usage(_nearest_existing(Path(path).absolute())).free)} free there"
    except OSError:
        free = "free space unknown"
    return FairmtError(
        f"could not write {what} to {path}: {reason} ({free}); {kept} — free some space (or raise the "
        "limit) and run again"
    )


def write_file(path: str | os.PathLike, data: str | bytes, *, what: str = "output", encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` as fairmt writes every file: into a temporary file beside it, flushed to the disk
    (``fsync``), then renamed over ``path`` — a reader (a resume, a report) sees the old file or the whole new one,
    never a torn one. A failure (a full disk, ``ulimit -f``) removes the temporary file and is one
    :class:`FairmtError` (:func:`write_error`)."""
    with writing(path, what=what, binary=isinstance(data, bytes), encoding=encoding) as fh:
        fh.write(data)
    return Path(path)


def write_json(
    path: str | os.PathLike, data: Any, *, what: str = "results", indent: int | None = 2, default: Any = str
) -> Path:
    """``data`` as valid JSON (:func:`json_text`) through :func:`write_file`."""
    return write_file(path, json_text(data, indent=indent, default=default) + "\n", what=what)


class writing:
    """``with writing(path, what=...) as fh:`` — a file handle for a writer that streams (JSON lines, a CSV); the
    file appears at ``path`` whole when the block ends without an error (see :func:`write_file`). The target is
    checked by :func:`target_kind` when the block starts and again before the rename: a symbolic link (other than
    to a device or a pipe) or a special file is refused, a device or a pipe (``/dev/stdout``, a FIFO) is written
    into, a file with other hard links is replaced under this name only (the rename leaves the others as they
    were)."""

    def __init__(self, path: str | os.PathLike, *, what: str = "output", binary: bool = False, encoding: str = "utf-8"):
        self.path, self.what, self.binary, self.encoding = Path(path), what, binary, encoding
        self.tmp: Path | None = None
        self.fh: Any = None
        self.stream = False

    def __enter__(self):
        mode = "wb" if self.binary else "w"
        kw = {} if self.binary else {"encoding": self.encoding}
        if target_kind(self.path, self.what) == "stream":
            self.stream = True
            fd = _open_stream(self.path, self.what)
            self.fh = os.fdopen(fd, mode, **kw)
            return self.fh
        clean_stale(self.path.parent, self.path.name)
        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=_tmp_prefix(self.path.name), suffix=".tmp")
        except OSError as exc:
            raise write_error(self.path, self.what, exc) from None
        self.tmp = Path(tmp)
        self.fh = os.fdopen(fd, mode, **kw)
        return self.fh

    def __exit__(self, kind, exc, tb) -> bool:
        if self.stream:
            try:
                self.fh.close()
            except OSError as failed:
                if exc is None:
                    raise write_error(
                        self.path, self.what, failed, kept="what was written went to the stream"
                    ) from None
            if exc is not None and write_failed(exc):
                raise write_error(self.path, self.what, exc, kept="what was written went to the stream") from None
            return False
        assert self.tmp is not None
        try:
            if exc is None:
                self.fh.flush()
                os.fsync(self.fh.fileno())
            self.fh.close()
            if exc is None:
                try:  # keep the permissions a plain open() would give (mkstemp makes the file 0600)
                    os.chmod(self.tmp, 0o666 & ~_umask())
                except OSError:
                    pass
                if target_kind(self.path, self.what) == "stream":  # became a pipe while the data was written
                    raise FairmtError(
                        f"{self.path}: became a device or a pipe while the {self.what} was written; "
                        "nothing was written to it: run again"
                    )
                os.replace(self.tmp, self.path)
                return False
        except BaseException as failed:
            self._discard()
            if write_failed(failed):
                raise write_error(self.path, self.what, failed) from None
            raise
        self._discard()
        if write_failed(exc):
            raise write_error(self.path, self.what, exc) from None
        return False

    def _discard(self) -> None:
        try:
            if self.fh is not None and not self.fh.closed:
                self.fh.close()
        except OSError:
            pass
        try:
            if self.tmp is not None:
                self.tmp.unlink()
        except OSError:
            pass


def target_kind(path: str | os.PathLike, what: str = "output") -> str:
    """What writing ``path`` means: ``"new"`` (nothing there), ``"file"`` (a regular file: replaced by a rename, so
    another hard link of it keeps its content) or ``"stream"`` (a character device or a pipe, or a link to one, such
    as ``/dev/stdout`` or ``/dev/null``: written into, never replaced). Refused with one line: a folder, a symbolic
    link to anything else (fairmt never writes through a link, nor replaces the link), a block device, a socket."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return "new"
    except OSError:
        return "new"  # an unreadable parent: the write itself says why
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        raise FairmtError(f"{p}: is a folder, but the {what} is a file; give a file name")
    try:
        real = os.stat(p).st_mode
    except OSError:
        real = None
    if real is not None and (stat.S_ISCHR(real) or stat.S_ISFIFO(real)):
        return "stream"
    if stat.S_ISLNK(st.st_mode):
        raise FairmtError(
            f"{p}: is a symbolic link (to {os.readlink(p)}); fairmt never writes through a link nor "
            f"replaces one: give the {what} a path that is not a link"
        )
    kind = (
        "a block device"
        if stat.S_ISBLK(st.st_mode)
        else "a socket"
        if stat.S_ISSOCK(st.st_mode)
        else "not a regular file"
    )
    raise FairmtError(f"{p}: is {kind}; the {what} is written to a file, a character device or a pipe only")


def _open_stream(path: Path, what: str) -> int:
    """Open a character device or a pipe for writing, without creating, truncating or waiting for a reader."""
    import fcntl

    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise FairmtError(f"{path}: is a pipe nobody reads; start its reader first, or give a file") from None
        raise write_error(path, what, exc) from None
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def _tmp_prefix(name: str) -> str:
    return f".{name}.{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def clean_stale(folder: str | os.PathLike, name: str | None = None) -> list[str]:
    """Remove the temporary files and folders (:data:`_TMP_RE`) that a killed write left in ``folder`` (of the
    target ``name``; None: of any target): those whose process no longer runs on this machine. Returns their
    names."""
    removed = []
    try:
        entries = os.listdir(folder)
    except OSError:
        return removed
    for entry in entries:
        m = _TMP_RE.match(entry)
        if (
            not m
            or (name is not None and m.group("name") != name)
            or int(m.group("pid")) == os.getpid()
            or _alive(int(m.group("pid")))
        ):
            continue
        try:
            remove_entry(Path(folder) / entry)
            removed.append(entry)
        except OSError:
            pass
    return removed


class appending:
    """An append-only file a run grows as it goes (JSON lines: a translation cache, fairmt's manifest, a log; the
    evaluators' CSV): ``with appending(path, what=...) as fh:`` (or ``fh = appending(...).open()`` for a handle
    kept open, closed with ``fh.close()``). Appends are not renamed into place — a reader tolerates a last line cut
    short — but every failure to open, write, flush or close (a full disk, ``ulimit -f``, a read-only folder) is the
    writer's one :class:`FairmtError` (:func:`write_error`, saying that the lines written before are kept).
    ``mode``: ``"a"`` (append; the default) or ``"w"`` (start the file anew: its first lines)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        what: str = "output",
        binary: bool = False,
        encoding: str = "utf-8",
        newline: str | None = None,
        mode: str = "a",
    ):
        if mode not in ("a", "w"):
            raise ValueError(f"appending: mode must be 'a' or 'w', got {mode!r}")
        self.path, self.what, self.binary = Path(path), what, binary
        self._mode = mode + ("b" if binary else "")
        self._kw = {} if binary else {"encoding": encoding, "newline": newline}
        self.fh: Any = None

    def _failed(self, exc: BaseException) -> FairmtError:
        return write_error(self.path, self.what, exc, kept=APPENDED)

    def open(self) -> appending:
        """Open without following a link (refused), without waiting for a pipe's reader; a file with other hard
        links is refused (appending to it, or starting it anew, would change the other names' content)."""
        import fcntl

        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | (os.O_APPEND if "a" in self._mode else 0)
        try:
            fd = os.open(self.path, flags, 0o666)
        except OSError as exc:
            if exc.errno == errno.ELOOP and os.path.islink(self.path):
                raise FairmtError(
                    f"{self.path}: is a symbolic link (to {os.readlink(self.path)}); fairmt never writes "
                    f"{self.what} through a link: give a path that is not a link"
                ) from None
            if exc.errno == errno.ENXIO:
                raise FairmtError(
                    f"{self.path}: is a pipe nobody reads; start its reader first, or give a file"
                ) from None
            raise self._failed(exc) from None
        try:
            st = os.fstat(fd)
            why = None
            if stat.S_ISREG(st.st_mode):
                if st.st_nlink > 1:
                    why = (
                        f"a file with {st.st_nlink - 1} other hard link{'s' if st.st_nlink > 2 else ''}: writing "
                        "would change them too"
                    )
                elif "w" in self._mode:
                    os.ftruncate(fd, 0)
            elif not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
                why = "not a regular file, a character device or a pipe"
            if why:
                raise FairmtError(f"{self.path}: refused, nothing written: it is {why}; give another path")
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            self.fh = os.fdopen(fd, self._mode, **self._kw)  # closed by close() / __exit__
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError):
                raise self._failed(exc) from None
            raise
        return self

    def write(self, data: str | bytes) -> int:
        try:
            return self.fh.write(data)
        except OSError as exc:
            raise self._failed(exc) from None

    def flush(self) -> None:
        try:
            self.fh.flush()
        except OSError as exc:
            raise self._failed(exc) from None

    def fileno(self) -> int:
        return self.fh.fileno()

    @property
    def closed(self) -> bool:
        return self.fh is None or self.fh.closed

    def close(self) -> None:
        if self.fh is None or self.fh.closed:
            return
        try:
            self.fh.close()  # flushes what is buffered: a full disk can show only here
        except OSError as exc:
            raise self._failed(exc) from None

    def __enter__(self) -> appending:
        return self.open() if self.fh is None else self

    def __exit__(self, kind, exc, tb) -> bool:
        try:
            self.close()
        except FairmtError:
            if exc is None:
                raise
            try:  # the block failed already: its error is the one to report; the handle still goes
                self.fh.close()
            except OSError:
                pass
        if exc is not None and isinstance(exc, Exception) and write_failed(exc):
            raise self._failed(exc) from None
        return False


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike, *, what: str) -> Iterator[None]:
    """An exclusive ``flock`` on the file ``path`` (made empty where it is missing; opened as :class:`appending`
    opens a file: never through a link) while the block runs; another process that asks for it waits until then."""
    import fcntl

    with appending(path, what=what) as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def append_text(path: str | os.PathLike, text: str | bytes, *, what: str = "output") -> None:
    """Append ``text`` to ``path`` in one write (:class:`appending`): a failure is the writer's one line."""
    with appending(path, what=what, binary=isinstance(text, bytes)) as fh:
        fh.write(text)


def copy_file(src: str | os.PathLike, dst: str | os.PathLike, *, what: str = "a copy") -> Path:
    """Copy the file ``src`` to ``dst`` through :class:`writing` (a temporary file beside ``dst``, renamed when
    whole): a full disk is the writer's one line naming ``dst``."""
    with open(src, "rb") as source, writing(dst, what=what, binary=True) as fh:
        shutil.copyfileobj(source, fh)
    return Path(dst)


def save_folder(target: str | os.PathLike, save: Any, *, what: str = "model") -> Path:
    """Run ``save(folder)`` (a ``save_pretrained``, a ``save_model``) so that ``target`` appears only complete: into a
    temporary folder beside it, renamed to ``target`` at the end (an existing ``target`` is replaced only after the
    new one is whole). A full disk is one :class:`FairmtError` (:func:`write_error`) and leaves no partial folder."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        clean_stale(target.parent, target.name)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=_tmp_prefix(target.name), suffix=".tmp"))
    except OSError as exc:
        raise write_error(target, what, exc) from None
    try:
        save(str(tmp))
        for root, _dirs, files in os.walk(tmp):
            for name in files:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        os.chmod(tmp, 0o777 & ~_umask())
        if target.is_dir() and not target.is_symlink():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if write_failed(exc):
            raise write_error(target, what, exc) from None
        raise
    return target


class saving:
    """``with saving(target, what=...):`` around a write fairmt cannot route through a temporary file (a Trainer's
    ``save_model``, which every process of a distributed run joins, into the run's own folder): a full disk or a
    file-size limit inside it is one :class:`FairmtError` (:func:`write_error`) naming ``target``."""

    def __init__(self, target: str | os.PathLike, *, what: str = "model"):
        self.target, self.what = target, what

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is not None and isinstance(exc, Exception) and write_failed(exc):
            raise write_error(self.target, self.what, exc) from None
        return False


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it, a race with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def print_out(text: str = "", *, end: str = "\n") -> None:
    """Print to stdout; a stdout that cannot take it (``> /dev/full``, a closed pipe) is one :class:`FairmtError`."""
    try:
        sys.stdout.write(text + end)
        sys.stdout.flush()
    except OSError as exc:
        raise stdout_error(exc) from None


def stdout_error(exc: BaseException) -> FairmtError:
    import errno

    why = {
        errno.ENOSPC: "no space left on the device",
        errno.EPIPE: "the reader closed the pipe",
        errno.EFBIG: "file too large",
    }.get(getattr(exc, "errno", None), str(exc))
    return FairmtError(f"could not write to standard output: {why}")


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


__all__ = [
    "APPENDED",
    "LOCK_NAME",
    "MANIFEST",
    "OWN_NAMES",
    "FolderPlan",
    "append_text",
    "appending",
    "begin_manifest",
    "check_output_dir",
    "check_output_file",
    "check_overwrite",
    "claim_run_dir",
    "clean_stale",
    "clear_dir",
    "copy_file",
    "fairmt_named",
    "finite_json",
    "input_paths",
    "json_text",
    "kept_note",
    "print_out",
    "proof",
    "publish_dir",
    "record_made",
    "record_new",
    "release_run_dir",
    "remove_entry",
    "run_files",
    "save_folder",
    "saving",
    "target_kind",
    "write_error",
    "write_file",
    "write_json",
    "writing",
]
