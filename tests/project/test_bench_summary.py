"""scripts/bench.py, the one benchmark summary (issue 28), on stand-in benchmark scripts: targets read from each
script, met/missed, a missing benchmark named, a failing or hanging one reported (and its processes ended); and
every real benchmark declares its targets and a quick mode."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from scripts import bench  # noqa: E402


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / f"bench_{name}.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


@pytest.fixture
def stand_ins(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "SCRIPTS", tmp_path)
    monkeypatch.setattr(bench, "KNOWN", ("fast", "slow", "absent"))
    _write(
        tmp_path,
        "fast",
        """
        import json, sys
        TARGETS = {"ratio": ("<=", 1.8), "speedup": (">=", 3.0), "nested.value": ("<=", 1.0), "gone": ("<=", 1.0)}
        print("a library's notice on stdout")
        quick = "--quick" in sys.argv
        print(json.dumps({"ratio": 1.5 if quick else 2.5, "speedup": 2.0, "nested": {"value": 0.5}}))
    """,
    )
    _write(
        tmp_path,
        "slow",
        """
        import json
        TARGETS = {"seconds": ("<=", 20.0)}
        print(json.dumps({"seconds": 25.0}))
    """,
    )
    _write(
        tmp_path,
        "extra",
        """
        import json, sys
        print(json.dumps({"value": 3.0, "label": "x"}))
    """,
    )
    return tmp_path


def test_rows_met_missed_not_measured_and_a_missing_benchmark(stand_ins, capsys):
    assert bench.main(["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {(r["benchmark"], r["measure"]): (r["value"], r["target"], r["status"]) for r in out["rows"]}
    assert got[("fast", "ratio")] == (1.5, "<= 1.8", "met")  # --quick was passed (the script has the flag)
    assert got[("fast", "speedup")] == (2.0, ">= 3", "missed")
    assert got[("fast", "nested.value")] == (0.5, "<= 1", "met")
    assert got[("fast", "gone")][2] == "not measured"
    assert got[("slow", "seconds")] == (25.0, "<= 20", "missed")
    assert got[("extra", "value")] == (3.0, "", "no target")  # found although not in KNOWN; no TARGETS
    assert "bench_absent.py: not found (skipped)" in out["notes"]
    assert out["benchmarks"]["slow"]["command"].endswith("--json")  # no --quick: the script has none


def test_full_mode_and_table(stand_ins, capsys):
    assert bench.main(["--full", "--only", "fast"]) == 0
    table = capsys.readouterr().out
    assert re.search(r"^fast\s+ratio\s+2\.5\s+<= 1\.8\s+missed$", table, re.M)  # the full run's value
    assert re.search(r"^fast\s+gone\s+—\s+<= 1\s+not measured$", table, re.M)


def test_the_machine_facts_that_move_the_rows(stand_ins, capsys):
    """Cores, the bf16 / fp32 matrix-product speed and what teacher_dtype auto chooses here, in the JSON and the
    table's header (issue 55)."""
    from fairmt.models.precision import resolve_teacher_dtype

    assert bench.main(["--json", "--only", "fast"]) == 0
    machine = json.loads(capsys.readouterr().out)["machine"]
    assert machine["cpus"] == os.cpu_count() and 1 <= machine["cpus_usable"] <= machine["cpus"]
    assert machine["bf16_matmul_speedup_cpu"] > 0
    dtype, why = resolve_teacher_dtype("auto", "cuda" if machine["cuda"] else "cpu")
    assert (machine["teacher_dtype_auto"], machine["teacher_dtype_auto_why"]) == (str(dtype)[6:], why)
    assert bench.main(["--only", "fast"]) == 0
    header = capsys.readouterr().out
    assert f"bf16 matmul {machine['bf16_matmul_speedup_cpu']}× fp32 speed on the CPU" in header
    assert f"teacher_dtype auto → {machine['teacher_dtype_auto']} ({why})" in header


def test_failing_and_hanging_benchmarks(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench, "SCRIPTS", tmp_path)
    monkeypatch.setattr(bench, "KNOWN", ())
    _write(
        tmp_path,
        "broken",
        """
        TARGETS = {"x": ("<=", 1.0)}
        raise RuntimeError("boom")
    """,
    )
    marker = tmp_path / "grandchild.pid"
    _write(
        tmp_path,
        "hangs",
        f"""
        import subprocess, sys, time
        TARGETS = {{"x": ("<=", 1.0)}}
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open({str(marker)!r}, "w").write(str(child.pid))
        time.sleep(60)
    """,
    )
    _write(
        tmp_path,
        "nodata",
        """
        import json
        TARGETS = {"x": ("<=", 1.0)}
        print(json.dumps({"error": "no WinoMT data under /nowhere: pass --data"}))
        raise SystemExit(2)
    """,
    )
    assert bench.main(["--json", "--timeout", "2"]) == 1  # the hanging one is stopped after 2 s
    out = json.loads(capsys.readouterr().out)
    status = {r["benchmark"]: r["status"] for r in out["rows"]}
    assert status == {"broken": "error", "hangs": "error", "nodata": "skipped"}
    assert "RuntimeError: boom" in out["benchmarks"]["broken"]["error"]
    assert "timed out" in out["benchmarks"]["hangs"]["error"]
    pid = int(marker.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    survived = _alive(pid)
    if survived:  # leave nothing behind, then fail
        os.kill(pid, signal.SIGKILL)
    assert not survived  # the benchmark's own child went with it


def _alive(pid: int) -> bool:
    """Running (a zombie left to an init that does not reap counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_bad_targets_are_refused(tmp_path):
    path = _write(tmp_path, "bad", 'TARGETS = {"x": ("<", 1.0)}\n')
    with pytest.raises(ValueError, match="op"):
        bench.read_targets(path)


@pytest.mark.parametrize("name", [n for n in bench.KNOWN if (REPO / "scripts" / f"bench_{n}.py").is_file()])
def test_every_benchmark_keeps_its_targets_and_has_a_quick_mode(name):
    path = REPO / "scripts" / f"bench_{name}.py"
    targets = bench.read_targets(path)
    assert targets, f"{path.name} declares no TARGETS"
    source = path.read_text(encoding="utf-8")
    assert '"--quick"' in source and '"--json"' in source
