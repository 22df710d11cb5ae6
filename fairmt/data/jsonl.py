"""Reading JSON-lines files with errors that name the file and line (kept for imports; the readers live in
:mod:`fairmt.data.inputs`)."""

from __future__ import annotations

from fairmt.data.inputs import iter_json_lines, iter_jsonl

__all__ = ["iter_json_lines", "iter_jsonl"]
