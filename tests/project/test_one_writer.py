"""Every file fairmt writes goes through the one writer (:mod:`fairmt.outputs`: ``write_file`` / ``write_json`` /
``writing`` / ``copy_file`` / ``save_folder`` / ``saving`` for whole files and folders, ``appending`` /
``append_text`` for the files a run grows: the translation cache, the manifest, the evaluators' CSV, logs), so a
write that fails (a full disk, ``ulimit -f``) is one line naming the file, what was being written and the free space
— never a traceback. The guard reads fairmt's source: a module that opens a file for writing or appending outside
``fairmt/outputs.py`` fails here unless :data:`ALLOWED` names it with the reason."""

from __future__ import annotations

import ast
import errno
from pathlib import Path

import pytest

import fairmt
import sources
from fairmt.errors import FairmtError

ROOT = Path(fairmt.__file__).resolve().parent

ALLOWED: dict[tuple[str, str], str] = {
    ("cli.py", "os.open(O_WRONLY)"): "opens /dev/null to silence the other ranks' stdout: nothing is written to a file",
    ("data/download.py", "Path.open('wb')"): "a download streams into fairmt's staging folder; its write errors are "
    "_write_failure's one line (the data folder, the free space and the size the download needs), told apart from "
    "the network's errors, and nothing is moved into the data folder",
    ("trainers/ccd.py", "torch.save(path)"): "training_args.bin inside Trainer._save: a checkpoint's save is under "
    "FaultGuardMixin._save_checkpoint, the final model's under fairmt.outputs.saving (both: the writer's line)",
    ("eval/selection.py", "shutil.copytree"): "copies the best checkpoint into save_folder's temporary folder "
    "(the writer renames it into place, and a full disk is its one line)",
    ("forking.py", "open('wb')"): "a forked child's sys.stdout and sys.stderr on descriptors 1 and 2 (a "
    "run_forked child's anonymous files below, or a sweep trial's log, which the worker opened with "
    "fairmt.outputs.appending): no file is opened",
    ("forking.py", "tempfile.TemporaryFile"): "a forked child's stdout and stderr, read back by its parent: anonymous "
    "files in the temporary folder, never a path of the user's",
    ("sweep/forked.py", "os.open(O_RDWR)"): "the trial server's stdin, stdout and stderr onto /dev/null (what its "
    "imports print is no line of the sweep's): no file is written",
    ("sweep/engine.py", "open('rb+')"): "shortens Optuna's journal to its last whole record in place, under "
    "Optuna's own lock (the file is Optuna's, shared with other writers; a truncation needs no space)",
    ("trainers/adversarial.py", "torch.save(path)"): "the adversaries' optimizers in a checkpoint "
    "(_save_optimizer_and_scheduler, under FaultGuardMixin._save_checkpoint: the writer's line)",
}
"""``(module path under fairmt/, kind of write)`` → why it stays outside the writer."""

_COMPRESSED = {"io", "gzip", "bz2", "lzma", "codecs", "tarfile", "zipfile"}
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_APPEND", "O_CREAT", "O_TRUNC")
_HANDLE_WRITERS = ("writing", "appending")


def _mode(call: ast.Call, position: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "mode":
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _writes_mode(node: ast.expr | None) -> str | None:
    """The mode text when it writes (``'w'``, ``'a'``, ``'x'``, ``'+'``), ``'?'`` when it is computed, else None."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if set(node.value) & set("wax+") else None
    return "?"


def _handles(source: str) -> set[str]:
    """Names bound to a writer's handle (``with writing(...) as fh``) or to memory (``buf = io.BytesIO()``)."""
    names = set()
    for node in sources.nodes(source):
        if isinstance(node, ast.With):
            for item in node.items:
                ctx = item.context_expr
                if (
                    isinstance(ctx, ast.Call)
                    and ast.unparse(ctx.func).split(".")[-1] in _HANDLE_WRITERS
                    and isinstance(item.optional_vars, ast.Name)
                ):
                    names.add(item.optional_vars.id)
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) in ("io.BytesIO", "io.StringIO", "BytesIO", "StringIO")
        ):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def file_writes(source: str) -> list[tuple[int, str]]:
    """``(line, kind)`` of every place ``source`` opens a file for writing or appending, or writes one by a path."""
    handles = _handles(source)
    found = []
    for node in sources.nodes(source):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        attr = func.split(".")[-1]
        kind = None
        if func == "open":
            mode = _writes_mode(_mode(node, 1))
            kind = mode and f"open({mode!r})"
        elif attr == "open" and func not in ("os.open", "Image.open"):  # PIL's Image.open reads
            owner = func.rsplit(".", 1)[0]
            mode = _writes_mode(_mode(node, 1 if owner in _COMPRESSED else 0))
            kind = mode and (f"{owner}.open({mode!r})" if owner in _COMPRESSED else f"Path.open({mode!r})")
        elif func == "os.open":
            flags = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
            hit = [f for f in _WRITE_FLAGS if f in flags]
            kind = hit and f"os.open({hit[0]})"
        elif attr in ("write_text", "write_bytes"):
            kind = f"Path.{attr}"
        elif func in (
            "tempfile.NamedTemporaryFile",
            "tempfile.TemporaryFile",
            "tempfile.SpooledTemporaryFile",
            "tempfile.mkstemp",
            "os.fdopen",
            "NamedTemporaryFile",
            "mkstemp",
        ):
            kind = func
        elif func in ("shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree"):
            kind = func
        elif func in ("torch.save", "np.save", "np.savez", "np.savez_compressed", "numpy.save") or attr == "savefig":
            position = 1 if func == "torch.save" else 0
            target = node.args[position] if len(node.args) > position else None
            if not (isinstance(target, ast.Name) and target.id in handles):
                kind = f"{func if attr != 'savefig' else 'savefig'}(path)"
        if kind:
            found.append((node.lineno, kind))
    return found


def writes_outside_the_writer(root: Path = ROOT) -> dict[tuple[str, str], list[int]]:
    out: dict[tuple[str, str], list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "outputs.py":
            continue
        for line, kind in file_writes(path.read_text(encoding="utf-8")):
            out.setdefault((rel, kind), []).append(line)
    return out


def test_no_module_writes_a_file_outside_the_one_writer():
    found = writes_outside_the_writer()
    unexplained = {
        f"fairmt/{rel}:{lines[0]} {kind}" for (rel, kind), lines in found.items() if (rel, kind) not in ALLOWED
    }
    assert not unexplained, (
        "files written outside fairmt/outputs.py (route them through write_file / writing / "
        "appending / save_folder / saving, or add them to ALLOWED with the reason): "
        f"{sorted(unexplained)}"
    )
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"ALLOWED names writes that are gone: {stale}"
    assert all(len(reason) > 30 for reason in ALLOWED.values())


def test_the_guard_finds_what_it_guards():
    src = """
import os, shutil, tempfile, torch
import numpy as np
from pathlib import Path
open(p, "a")
open(p)
open(p, mode="wb")
Path(p).open("a", encoding="utf-8")
Path(p).open()
os.open(p, os.O_WRONLY | os.O_CREAT)
os.open(p, os.O_RDONLY)
Path(p).write_text("x")
tempfile.NamedTemporaryFile("w")
shutil.copyfile(a, b)
torch.save(x, "w.pt")
np.save(p, x)
with writing(p) as fh:
    np.save(fh, x)
buf = io.BytesIO()
fig.savefig(buf)
fig.savefig("x.png")
gzip.open(p, "wt")
open(p, m)
"""
    kinds = [k for _, k in file_writes(src)]
    assert kinds == [
        "open('a')",
        "open('wb')",
        "Path.open('a')",
        "os.open(O_WRONLY)",
        "Path.write_text",
        "tempfile.NamedTemporaryFile",
        "shutil.copyfile",
        "torch.save(path)",
        "np.save(path)",
        "savefig(path)",
        "gzip.open('wt')",
        "open('?')",
    ], kinds


# --------------------------------------------------------------------------------------------- appends fail in one line


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _assert_one_line(err: FairmtError, path: Path, what: str) -> None:
    line = str(err)
    assert "\n" not in line and line.startswith(f"could not write {what} to {path}: no space left on the device (")
    assert " free there)" in line and "the lines written before are kept" in line


def test_an_append_that_fails_is_the_writers_line_and_keeps_the_earlier_lines(tmp_path, monkeypatch):
    from fairmt import outputs

    log = tmp_path / "cache.jsonl"
    with outputs.appending(log, what="the translation cache") as fh:
        fh.write('{"i": 0}\n')
    handle = outputs.appending(log, what="the translation cache").open()
    monkeypatch.setattr(handle.fh, "write", _enospc)
    with pytest.raises(FairmtError) as err:
        handle.write('{"i": 1}\n')
    _assert_one_line(err.value, log, "the translation cache")
    handle.close()
    assert log.read_text() == '{"i": 0}\n'
    with pytest.raises(FairmtError, match=r"(?i)could not write the failures file to .*no such file"):
        outputs.append_text(tmp_path / "missing" / "f.jsonl", "x\n", what="the failures file")


def test_the_translation_cache_on_a_full_disk_is_one_line(tmp_path, monkeypatch):
    """The real runner: its cache append fails on the first batch (the header was written)."""
    from fairmt import outputs
    from fairmt.translate import runner

    class Echo:
        def translate(self, texts, src, tgt, **kw):
            return [t.upper() for t in texts]

        def check_languages(self, *a):
            pass

    real_write = outputs.appending.write

    def write(self, data):
        if '"t":' in data:  # a translation line, after the header: the disk is full now
            self.fh.write = _enospc
        return real_write(self, data)

    monkeypatch.setattr(runner, "as_translator", lambda *a, **k: Echo())
    monkeypatch.setattr(runner, "cache_header", lambda *a: {"format": "test"})
    monkeypatch.setattr(outputs.appending, "write", write)
    cache = tmp_path / "tr.jsonl"
    with pytest.raises(FairmtError) as err:
        runner.generate_translations(None, ["a", "b"], "en", "de", cache_path=cache, progress=False)
    _assert_one_line(err.value, cache, "the translation cache")
    assert cache.read_text().splitlines()[0] == '{"format": "test"}'  # the header stays; no traceback


def test_the_manifest_on_a_full_disk_is_one_line_and_the_run_does_not_end_well(tmp_path, monkeypatch):
    from fairmt import outputs

    run = tmp_path / "run"
    outputs.claim_run_dir(run)
    (run / "results.json").write_text("{}")
    monkeypatch.setattr(outputs.appending, "write", lambda self, data: _enospc())
    with pytest.raises(FairmtError) as err:
        outputs.release_run_dir(run)
    _assert_one_line(err.value, run / outputs.MANIFEST, "fairmt's manifest (what this run wrote in the folder)")
    assert str(run) not in outputs._HELD  # the lock is given up all the same
    monkeypatch.undo()  # ending by another error, the manifest's failure does not replace it
    outputs.claim_run_dir(tmp_path / "run2")
    monkeypatch.setattr(outputs.appending, "write", lambda self, data: _enospc())
    with pytest.raises(KeyError):
        try:
            raise KeyError("the run's own error")
        finally:
            outputs.release_run_dir()


def test_the_st_evaluators_csv_on_a_full_disk_is_one_line(tmp_path, monkeypatch):
    from fairmt import outputs
    from fairmt.integrations.st_evaluators import CCEDEvaluator

    ev = CCEDEvaluator.__new__(CCEDEvaluator)
    ev.suite, ev.csv_file = "cced", "cced_results.csv"
    monkeypatch.setattr(outputs.appending, "write", lambda self, data: _enospc())
    with pytest.raises(FairmtError) as err:
        ev._write_csv(str(tmp_path), 1, 10, {"cced_gap": 0.5})
    _assert_one_line(err.value, tmp_path / "cced_results.csv", "the CCED evaluator's CSV")


def test_the_tiny_models_own_files_go_through_the_writer(tmp_path, monkeypatch):
    """fairmt/models/tiny.py writes its SentencePiece model and vocabulary through the writer: the disk filling at
    the first of them is the writer's one line naming it (not a raw OSError), and no temporary file stays."""
    import os

    from fairmt.models.tiny import build_tiny_translation_model

    out = tmp_path / "tiny"
    real = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(f"{out}/.sentencepiece.bpe.model."):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(FairmtError) as err:
        build_tiny_translation_model(
            out,
            [("he is a doctor", "er ist Arzt"), ("she is a nurse", "sie ist Pflegerin")] * 10,
            vocab_size=40,
            d_model=8,
            encoder_layers=1,
            decoder_layers=1,
            ffn_dim=8,
            attention_heads=1,
        )
    line = str(err.value)
    assert (
        line.startswith(
            f"could not write the tiny model's SentencePiece model to {out / 'sentencepiece.bpe.model'}"
            ": no space left on the device ("
        )
        and "\n" not in line
    )
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
