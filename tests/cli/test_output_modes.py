"""Output files respect the umask: the atomic writers (temporary file + rename) must not keep mkstemp's 0600."""

from __future__ import annotations

import os
import stat

import pytest

from fairmt.eval.report import save_figure_atomic, write_text_atomic


@pytest.fixture
def umask():
    """Set the process umask for one test and restore it after."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda mask: os.umask(mask)
    os.umask(old)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_text_writer_mode_follows_umask(tmp_path, umask, mask, expected):
    umask(mask)
    out = tmp_path / "r.json"
    write_text_atomic(out, "{}\n")
    assert stat.S_IMODE(out.stat().st_mode) == expected
    plain = tmp_path / "plain.txt"  # what open() gives under the same umask: the writer must agree
    plain.write_text("x")
    assert stat.S_IMODE(plain.stat().st_mode) == expected
    write_text_atomic(out, "{}\n")  # an overwrite gets the same mode
    assert stat.S_IMODE(out.stat().st_mode) == expected
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left behind


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o077, 0o600)])
def test_figure_writer_mode_follows_umask(tmp_path, umask, mask, expected):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    umask(mask)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    out = tmp_path / "p.png"
    save_figure_atomic(fig, out)
    assert out.stat().st_size > 0
    assert stat.S_IMODE(out.stat().st_mode) == expected


def test_cli_json_output_mode_under_umask_022(tmp_path, umask):
    """Through a command: `fairmt report --json` writes a 0644 file under umask 022 (0600 before the fix)."""
    import json

    from fairmt.cli import main
    from fairmt.eval.mtbias import FORMAT_VERSION

    run = tmp_path / "run.json"
    run.write_text(
        json.dumps({"format": FORMAT_VERSION, "winomt": {"average": {"accuracy": 50.0}}, "settings": {"name": "a"}})
    )
    umask(0o022)
    out = tmp_path / "cmp.json"
    assert main(["report", str(run), "--json", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
