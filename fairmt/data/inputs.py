"""The one place where fairmt reads the files a user gives it.

Every command's file inputs (translations, gold files, predictions, recipes, tuples, CSV/TSV data, JSON results)
go through :func:`read_text` and the helpers built on it, so every reader reports the same problems the same way:
``path[:line]: what is wrong; what to do`` as a :class:`~fairmt.errors.FairmtError` (the CLI prints it on one line
and exits with 2).

What is handled, and how:

* a missing path, a directory where a file is expected, an unreadable file → refused, naming the path;
* an empty file (nothing but white space) → refused unless the caller allows it;
* a UTF-8 byte-order mark → dropped; a UTF-16/UTF-32 file (by its BOM) → refused with the conversion command;
* a binary file (NUL bytes) → refused; other bytes that are not UTF-8 → refused, naming the first bad line;
* CRLF / CR line ends → read as LF (a file saved on Windows gives the same result as the same file saved on Linux);
* a line longer than :data:`MAX_LINE_CHARS` → refused (almost always the wrong file, e.g. a one-line JSON dump);
* JSON lines: a record that does not parse is refused with its line; when it is the last line and the file does
  not end with a newline, the error says the file was cut off in the middle of a write;
* YAML (recipes, their ``key=value`` overrides, paper cards: :func:`parse_yaml`) and JSON: a tag
  (``!!python/object/apply:...``), an alias bomb (billion laughs: aliases that expand past
  :data:`MAX_DOCUMENT_NODES` values) and nesting deeper than :data:`MAX_NESTING` are refused in one line, before
  anything is built (milliseconds, where building took minutes or ended in a ``MemoryError`` / ``RecursionError``).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

#: Longest line accepted in a text input, in characters (``FAIRMT_MAX_LINE_CHARS`` overrides: :func:`line_limit`).
MAX_LINE_CHARS = 1_000_000


MAX_NESTING = 100
"""Deepest nesting of lists and mappings accepted in a YAML or JSON input (recipes nest 3 levels)."""

MAX_DOCUMENT_NODES = 1_000_000
"""Most values a YAML document may hold once its aliases are expanded (a recipe holds about a hundred)."""

_YAML_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map")} | {"!"}


def parse_yaml(text: str, source: str | Path, what: str = "recipe") -> Any:
    """``text`` read as plain YAML (``yaml.safe_load``), after its events are checked without building anything (the
    event parser is iterative): an explicit tag other than the core ones (``!!str``, ``!!int``, ...), nesting deeper
    than :data:`MAX_NESTING` and aliases expanding past :data:`MAX_DOCUMENT_NODES` values are refused in one line, as
    is text that is not YAML (with its line)."""
    import yaml

    def refuse(why: str, mark: Any = None) -> FairmtError:
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return FairmtError(f"{source}: the {what} {why}{where}")

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when built with it: milliseconds
    sizes: list[list] = []  # per open list/mapping: [values in it so far, its anchor]
    anchors: dict[str, int] = {}
    total = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in _YAML_TAGS:
                raise refuse(
                    f"uses the YAML tag {tag.replace('tag:yaml.org,2002:', '!!')}: fairmt reads plain YAML "
                    "values only (no tags); write the value itself",
                    event.start_mark,
                )
            size = None
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                sizes.append([1, event.anchor])
                total += 1
                if len(sizes) > MAX_NESTING:
                    raise refuse(
                        f"nests lists or mappings more than {MAX_NESTING} levels deep; a {what} needs a few",
                        event.start_mark,
                    )
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                size, anchor = sizes.pop()
                if anchor is not None:
                    anchors[anchor] = size
            elif isinstance(event, yaml.ScalarEvent):
                size = 1
                total += 1
                if event.anchor is not None:
                    anchors[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                size = anchors.get(event.anchor, 1)
                total += size
            if size is not None and sizes:
                sizes[-1][0] += size
            if total > MAX_DOCUMENT_NODES:
                raise refuse(
                    f"expands to more than {MAX_DOCUMENT_NODES:,} values through its aliases (*name): an alias bomb?",
                    getattr(event, "start_mark", None),
                )
        # checked above: no tag, no bomb, no deep nesting. Built by the safe constructor through libyaml's parser where
        # PyYAML has it (CSafeLoader: what yaml.safe_load does with the pure-Python parser, ~8x faster on a recipe)
        reader = loader(text)
        try:
            return reader.get_single_data()
        finally:
            reader.dispose()
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or " ".join(str(err).split())
        if "maximum nesting depth" in str(problem):  # libyaml's own limit, met while it scans ahead
            raise refuse(
                f"nests lists or mappings more than {MAX_NESTING} levels deep; a {what} needs a few", mark
            ) from None
        raise refuse(f"is not valid YAML: {' '.join(str(problem).split())}", mark) from None
    except RecursionError:
        raise refuse("nests lists or mappings too deep to read") from None


def parse_json(text: str, source: str | Path, what: str = "JSON") -> Any:
    """``json.loads(text)``; nesting too deep for Python's parser (a ``RecursionError``) is one line."""
    try:
        return json.loads(text)
    except RecursionError:
        raise FairmtError(
            f"{source}: the {what} nests arrays or objects too deep to read; it is not the file fairmt expects"
        ) from None


def line_limit() -> int:
    """:data:`MAX_LINE_CHARS`, or ``$FAIRMT_MAX_LINE_CHARS`` checked like an option: a positive whole number (0
    turns the limit off); anything else is one error naming the variable, never a fault blamed on an input file."""
    raw = os.environ.get("FAIRMT_MAX_LINE_CHARS")
    if raw is None or not raw.strip():
        return MAX_LINE_CHARS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise FairmtError(
            f"FAIRMT_MAX_LINE_CHARS={raw!r}: give a whole number of characters (0: no limit), or unset it"
        )
    return value


_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),  # before UTF-16: UTF-32 LE starts with FF FE
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def input_path(path: str | Path, what: str = "input") -> Path:
    """``path`` as a :class:`Path` that names an existing regular file, or a clear error."""
    p = Path(path)
    if not p.exists():
        raise FairmtError(f"{p}: {what} file not found; check the path")
    if p.is_dir():
        raise FairmtError(f"{p}: is a directory, but a {what} file is expected here; give the file inside it")
    if not p.is_file():
        raise FairmtError(f"{p}: is not a regular file; give the {what} file itself")
    return p


def input_dir(path: str | Path, what: str = "input") -> Path:
    """``path`` as a :class:`Path` that names an existing directory, or a clear error."""
    p = Path(path)
    if not p.exists():
        raise FairmtError(f"{p}: {what} folder not found; check the path")
    if not p.is_dir():
        raise FairmtError(f"{p}: is a file, but a {what} folder is expected here")
    return p


def read_text(
    path: str | Path, what: str = "input", *, allow_empty: bool = False, max_line_chars: int | None = None
) -> str:
    """The whole file as text with ``\\n`` line ends (see the module docstring for what is refused)."""
    p = input_path(path, what)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise FairmtError(f"{p}: cannot read the {what} file ({err.strerror or err})") from None
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            raise FairmtError(
                f"{p}: the {what} file is {name} text; save it as UTF-8 "
                f"(e.g. iconv -f {name} -t UTF-8 {p} > {p.stem}.utf8{p.suffix})"
            )
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    nul = data.find(b"\x00")
    if nul >= 0:
        raise FairmtError(
            f"{p}:{_line_of(data, nul)}: the {what} file holds NUL bytes: it is a binary file, not text; "
            "give the text file"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FairmtError(
            f"{p}:{_line_of(data, err.start)}: the {what} file is not valid UTF-8 ({err.reason} at byte {err.start}); "
            "save it as UTF-8"
        ) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not allow_empty and not text.strip():
        raise FairmtError(f"{p}: the {what} file is empty")
    limit = line_limit() if max_line_chars is None else max_line_chars
    if limit and len(text) > limit:
        for lineno, line in enumerate(text.split("\n"), 1):
            if len(line) > limit:
                raise FairmtError(
                    f"{p}:{lineno}: line of {len(line):,} characters (the limit is {limit:,}); is this the right "
                    f"{what} file? (FAIRMT_MAX_LINE_CHARS raises the limit)"
                )
    return text


def read_lines(
    path: str | Path,
    what: str = "input",
    *,
    expected: int | None = None,
    allow_blank: bool = False,
    allow_empty: bool = False,
) -> list[str]:
    """The file's lines (a final newline does not make an extra line).

    ``allow_blank=False`` refuses blank lines (a line must hold something); ``expected`` refuses another line count,
    saying which side is short.
    """
    text = read_text(path, what, allow_empty=allow_empty)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not allow_blank:
        for i, line in enumerate(lines, 1):
            if not line.strip():
                raise FairmtError(f"{path}:{i}: empty line in the {what} file; every line must hold one entry")
    if expected is not None and len(lines) != expected:
        where = f"line {expected + 1} is extra" if len(lines) > expected else f"it ends after line {len(lines)}"
        raise FairmtError(f"{path}: the {what} file has {len(lines)} lines but {expected} are expected ({where})")
    return lines


def iter_json_lines(
    lines: Iterable[str], source: str | Path, hint: str = "", *, ends_with_newline: bool = True
) -> Iterator[tuple[int, Any]]:
    """``(line number, object)`` for every non-blank line; a line that is not JSON raises ``source:line: ...``.

    ``ends_with_newline=False`` (the file's last byte is not a newline) turns a parse error on the last line into
    "cut off" — the signature of a write that was interrupted."""
    lines = list(lines)
    last = max((i for i, line in enumerate(lines, 1) if line.strip()), default=0)
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = parse_json(line, f"{source}:{lineno}", "line")
        except json.JSONDecodeError as err:
            if lineno == last and not ends_with_newline:
                raise FairmtError(
                    f"{source}:{lineno}: the last line is cut off (the file ends inside a JSON record, as after an "
                    "interrupted write); remove that line or write the file again"
                ) from None
            raise FairmtError(f"{source}:{lineno}: not valid JSON ({err.msg}, column {err.colno}){hint}") from None
        yield lineno, obj


def iter_jsonl(path: str | Path, hint: str = "", what: str = "JSON-lines") -> Iterator[tuple[int, Any]]:
    """:func:`iter_json_lines` over a file read by :func:`read_text`."""
    text = read_text(path, what)
    yield from iter_json_lines(text.split("\n"), path, hint, ends_with_newline=text.endswith("\n"))


def read_json(path: str | Path, what: str = "JSON", expect: type | tuple[type, ...] | None = None) -> Any:
    """One JSON document; ``expect`` refuses a document of another top-level type."""
    text = read_text(path, what, max_line_chars=0)  # a JSON dump may well be one long line
    try:
        data = parse_json(text, path, f"{what} file")
    except json.JSONDecodeError as err:
        raise FairmtError(
            f"{path}:{err.lineno}: the {what} file is not valid JSON ({err.msg}, column {err.colno})"
        ) from None
    if expect is not None and not isinstance(data, expect):
        names = " or ".join(t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,)))
        raise FairmtError(
            f"{path}: the {what} file must hold a JSON {names.replace('dict', 'object').replace('list', 'array')}, "
            f"not {type(data).__name__}"
        )
    return data


def csv_dict_rows(
    path: str | Path, what: str, required: Iterable[str] = (), **reader_kwargs
) -> tuple[list[str], Iterator[tuple[int, dict]]]:
    """``(field names, iterator of (line number, row))`` of a CSV/TSV file with a header; missing required columns
    are refused. Line numbers count the header as line 1 (rows of one physical line each)."""
    text = read_text(path, what)
    reader = csv.DictReader(io.StringIO(text, newline=""), **reader_kwargs)
    fields = list(reader.fieldnames or [])
    missing = [c for c in required if c not in fields]
    if missing:
        raise FairmtError(f"{path}:1: the {what} file lacks column(s) {missing}; its header has {fields}")

    def rows() -> Iterator[tuple[int, dict]]:
        try:
            for row in reader:
                if None in row:
                    raise FairmtError(f"{path}:{reader.line_num}: more fields than the header's {len(fields)}")
                if any(v is None for v in row.values()):
                    raise FairmtError(f"{path}:{reader.line_num}: fewer fields than the header's {len(fields)}")
                yield reader.line_num, row
        except csv.Error as err:
            raise FairmtError(f"{path}:{reader.line_num}: malformed {what} row ({err})") from None

    return fields, rows()
