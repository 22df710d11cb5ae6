"""The static checks' configuration (issue 50): ruff and mypy configured in pyproject.toml, pinned, run by CI, and
``fairmt/py.typed`` shipped. The checks themselves run in ``.ci/run``, not here (minutes over the whole tree)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_ruff_config_targets_the_oldest_supported_python():
    ruff = PYPROJECT["tool"]["ruff"]
    assert ruff["line-length"] == 120
    oldest = re.fullmatch(r">=\s*3\.(\d+)", PYPROJECT["project"]["requires-python"]).group(1)
    assert ruff["target-version"] == f"py3{oldest}", "ruff's target-version must be requires-python's lower bound"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == f"3.{oldest}"
    assert {"E", "F", "W", "I", "B", "UP"} <= set(ruff["lint"]["select"])
    assert ruff["format"]["quote-style"] == "double"


def test_mypy_checks_existing_packages():
    files = PYPROJECT["tool"]["mypy"]["files"]
    assert {"fairmt/losses", "fairmt/eval", "fairmt/recipes"} <= set(files)
    for f in files:
        assert (ROOT / f / "__init__.py").is_file(), f"[tool.mypy] files names {f}, which is not a package"
    assert PYPROJECT["tool"]["mypy"]["follow_imports"] == "silent"


def test_py_typed_is_shipped():
    assert (ROOT / "fairmt" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["fairmt"]


def test_ruff_and_mypy_are_pinned_dev_dependencies_run_by_ci():
    dev = " ".join(PYPROJECT["project"]["optional-dependencies"]["dev"])
    constraints = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    for tool in ("ruff", "mypy"):
        assert re.search(rf"\b{tool}\b", dev), f"{tool} is not in the dev extra"
        assert any(re.fullmatch(rf"{tool}==[\d.]+", line) for line in constraints), f"constraints.txt pins no {tool}"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "ruff check . || checks_rc=1" in ci
    assert "mypy || checks_rc=1" in ci
    assert ci[-1].endswith('[ "$checks_rc" -eq 0 ]'), "CI's exit status ignores the static checks"
