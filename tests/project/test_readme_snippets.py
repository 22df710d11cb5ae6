"""Doc code that promises a number runs and gives it (issue 27: the `mt_geneval` example returned None). The blocks
live on the site's pages (docs/benchmarks/mt-geneval.md, docs/sweeps.md); tests/project/test_docs.py checks every other
block."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _python_blocks(section: str, page: str = "benchmarks/mt-geneval.md") -> list[str]:
    """The Python blocks of ``section`` (a heading line) on ``page`` (under docs/)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(section)
    end = text.find("\n## ", start + len(section))
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], flags=re.S)


@pytest.mark.data
def test_mt_geneval_readme_example_gives_the_pair_level_number(shared_data, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    block = next(b for b in _python_blocks("## `evaluate` module") if "mt_geneval" in b)
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "docs/benchmarks/mt-geneval.md (mt_geneval example)", "exec"), namespace)  # noqa: S102 - the page's own code
    scores = namespace["scores"]
    assert scores["accuracy"] == 100.0 and scores["explicit_accuracy"] is not None  # references as translations
    assert scores["chrfpp"] == pytest.approx(100.0) and "note" not in scores
    assert out.getvalue().split()[0] == "100.0"
    # the same numbers and signature as `fairmt eval geneval` on the same translations
    data = namespace["data"]
    (tmp_path / "m.txt").write_text("\n".join(data.masculine_refs) + "\n", encoding="utf-8")
    (tmp_path / "f.txt").write_text("\n".join(data.feminine_refs) + "\n", encoding="utf-8")
    from fairmt.cli import main

    assert (
        main(
            [
                "eval",
                "geneval",
                "--lang",
                "de",
                "--masculine",
                str(tmp_path / "m.txt"),
                "--feminine",
                str(tmp_path / "f.txt"),
                "--json",
                "-",
            ]
        )
        == 0
    )
    cli = json.loads(capsys.readouterr().out)
    for key in ("accuracy", "explicit_accuracy", "delta_g", "n", "signature", "chrfpp", "chrf_signature"):
        assert scores[key] == cli[key], key
