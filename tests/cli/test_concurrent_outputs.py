"""Two runs writing the same output path never leave a torn or mixed file (issue 13): JSON/Markdown/plot outputs
are written through a temporary file and an atomic rename. Two real processes write the same --json path over and
over while this one reads it; every read must parse and be one writer's whole result."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import procs

WRITER = """
import sys
from fairmt.eval.report import write_json
tag, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
payload = {"writer": tag, "rows": [{"i": i, "text": tag * 200} for i in range(2000)]}
for _ in range(n):
    write_json(payload, path)
"""


def test_two_processes_writing_one_output(tmp_path):
    out = tmp_path / "results.json"
    writers = [procs.start([sys.executable, "-c", WRITER, tag, str(out), "40"]) for tag in ("a", "b")]
    reads = 0
    while any(p.poll() is None for p in writers):
        if out.exists():
            data = json.loads(out.read_text(encoding="utf-8"))  # a torn file would not parse
            assert data["writer"] in ("a", "b")
            assert {r["text"][0] for r in data["rows"]} == {data["writer"]} and len(data["rows"]) == 2000
            reads += 1
        time.sleep(0.005)
    assert [p.returncode for p in writers] == [0, 0]
    assert reads > 5
    assert not [p for p in tmp_path.iterdir() if p.name != out.name], "temporary files left behind"


def test_failed_write_keeps_the_old_file(tmp_path):
    from fairmt.eval.report import write_text_atomic

    out = tmp_path / "r.md"
    write_text_atomic(out, "old\n")

    try:
        write_text_atomic(out, 123)  # type: ignore[arg-type]  # fails inside the write
    except TypeError:
        pass
    assert out.read_text() == "old\n" and [p.name for p in Path(tmp_path).iterdir()] == ["r.md"]
