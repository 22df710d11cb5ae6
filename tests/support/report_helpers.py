"""A recipe's results as ``fairmt report`` input (issue 53): the recipe tests call :func:`assert_reportable` on the
file the run just wrote, so every shipped offline recipe's actual output is checked to give a table with columns
and numbers, well-formed Markdown, and LaTeX that pdflatex compiles (where pdflatex is installed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import needs


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Every table of a Markdown text as rows of cells (an escaped ``\\|`` stays inside its cell)."""
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])])
        elif current:
            tables.append(current)
            current = []
    return tables


def assert_reportable(results: Path, folder: Path, compile_latex: bool = True) -> str:
    """``fairmt report RESULTS`` writes a table with at least one measure column and a number in every row, a
    Markdown table whose rows have as many cells as its header, and LaTeX that compiles; returns the Markdown."""
    from fairmt.cli import main

    folder.mkdir(parents=True, exist_ok=True)
    md, tex = folder / "report.md", folder / "report.tex"
    assert main(["report", str(results), "--markdown", str(md), "--latex", str(tex), "--latex-standalone"]) == 0
    text = md.read_text(encoding="utf-8")
    assert "Scale: ." not in text
    tables = markdown_tables(text)
    assert tables, text
    for rows in tables:
        head, rule, *body = rows
        assert len(head) >= 2 and body and all(len(r) == len(head) == len(rule) for r in body), rows
        assert all(any(re.search(r"\d", c) for c in r[1:]) for r in body), rows  # a number in every row
    if compile_latex and needs.program("pdflatex"):  # an extra check where pdflatex is here (tests/support/needs.py)
        proc = subprocess.run(
            [needs.program("pdflatex"), "-interaction=nonstopmode", "-halt-on-error", tex.name],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stdout[-2000:]
    return text
