"""Reading JSON-lines files with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError


def iter_json_lines(lines: Iterable[str], source: str | Path, hint: str = "") -> Iterator[tuple[int, Any]]:
    """``(line number, object)`` for every non-blank line; a line that is not JSON raises ``source:line: not valid
    JSON (...)`` followed by ``hint``."""
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise FairmtError(f"{source}:{lineno}: not valid JSON ({err.msg}, column {err.colno}){hint}") from None
        yield lineno, obj


def iter_jsonl(path: str | Path, hint: str = "") -> Iterator[tuple[int, Any]]:
    """:func:`iter_json_lines` over a UTF-8 file."""
    with Path(path).open(encoding="utf-8") as fh:
        yield from iter_json_lines(fh, path, hint)
