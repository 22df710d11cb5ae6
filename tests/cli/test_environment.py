"""The environment is not the user's input, but it still gets one line: an ASCII terminal, a deleted current
folder, fairmt's own variables with bad values, a read-only home (real processes, as a user meets them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fairmt.errors import FairmtError


def _fairmt(args, *, env=None, cwd=None):
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LC_ALL", "LANG", "MPLCONFIGDIR")}
    base.update(env or {})
    return subprocess.run([sys.executable, "-m", "fairmt", *args], capture_output=True, env=base, cwd=cwd, timeout=120)


def test_an_ascii_terminal_gets_replacement_characters_not_a_traceback():
    r = _fairmt(["recipes", "ccd", "--long"], env={"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0, r.stderr.decode()[-800:]
    assert b"Traceback" not in r.stderr and b"UnicodeEncodeError" not in r.stderr
    assert r.stdout.isascii() and b"?" in r.stdout  # the descriptions' ± and → printed as ?


def test_bad_values_of_fairmts_own_variables_are_one_line(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("x\n")
    for var, value in (
        ("FAIRMT_MAX_LINE_CHARS", "abc"),
        ("FAIRMT_MAX_LINE_CHARS", "-1"),
        ("FAIRMT_MAX_IMAGE_PIXELS", "0"),
    ):
        r = _fairmt(["augment", "cda", "--input", str(f), "--output", str(tmp_path / "o.jsonl")], env={var: value})
        err = r.stderr.decode()
        assert r.returncode == 2 and err.strip().splitlines() == [err.strip()], err
        assert err.startswith(f"fairmt: error: {var}={value!r}") and "t.txt" not in err


def test_the_line_limit_variable_still_works():
    from fairmt.data.inputs import line_limit

    old = os.environ.pop("FAIRMT_MAX_LINE_CHARS", None)
    try:
        assert line_limit() == 1_000_000
        os.environ["FAIRMT_MAX_LINE_CHARS"] = "0"
        assert line_limit() == 0
        os.environ["FAIRMT_MAX_LINE_CHARS"] = "1.5"
        with pytest.raises(FairmtError, match="FAIRMT_MAX_LINE_CHARS='1.5'"):
            line_limit()
    finally:
        os.environ.pop("FAIRMT_MAX_LINE_CHARS", None)
        if old is not None:
            os.environ["FAIRMT_MAX_LINE_CHARS"] = old


def test_a_deleted_current_folder_is_one_line(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code = (
        "import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); from fairmt.cli import main; "
        "sys.exit(main(['recipes']))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(gone)],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    err = r.stderr.decode()
    assert r.returncode == 2 and "the current folder no longer exists" in err and "Traceback" not in err, err


def test_a_read_only_home_gives_matplotlib_a_private_cache(tmp_path, monkeypatch):
    """A read-only $HOME (simulated: root can write anywhere, CI runs as root): matplotlib gets its own temporary
    cache folder instead of printing its warning inside fairmt's output; a writable home is left alone."""
    from fairmt.commands._environment import check_environment

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    check_environment()
    assert "MPLCONFIGDIR" not in os.environ
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).startswith(str(home)) else real_access(p, mode))
    check_environment()
    cache = os.environ["MPLCONFIGDIR"]
    assert os.path.isdir(cache) and not cache.startswith(str(home))
    os.rmdir(cache)
