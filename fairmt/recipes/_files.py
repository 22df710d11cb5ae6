"""Recipe and paper-card files read once per content: the parsed YAML memoised, a fresh copy returned.

A ``fairmt recipes`` listing, a sweep's dry run and the card checks read the same recipe and card files many times in
one process (a card and its family's shared ``include:`` file for every recipe, a recipe once per grid value). The
parse (:func:`fairmt.data.inputs.parse_yaml`: its input checks, then libyaml's loader) is the cost; it is done once
per text. The key is the text itself with the source and the kind named in an error, so an edit of the file on disk
(whatever its size or time stamp) is read as the new text, and nothing but the text decides the result. Each call
returns its own copy of the lists and mappings, so a caller that edits what it got (``apply_overrides`` does) never
changes what the next read returns. Errors are not memoised: a file that does not parse says so every time.

The list of built-in recipes (:func:`recipe_files`) is globbed again only when the names in the recipe folders change.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

_MAX_TEXTS = 512
"""Most texts kept (the least recently read dropped first): every built-in recipe and card several times over."""

_parsed: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
_lock = threading.Lock()
_MISS = object()


def _copy(value: Any) -> Any:
    """A copy of parsed YAML: new lists and mappings all the way down (the scalars are immutable)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def parse_yaml_text(text: str, source: str | Path, what: str) -> Any:
    """:func:`fairmt.data.inputs.parse_yaml` of ``text`` (the same value, the same errors), parsed once per
    ``(text, source, what)``; a fresh copy each call."""
    key = (text, str(source), what)
    with _lock:
        hit = _parsed.get(key, _MISS)
        if hit is not _MISS:
            _parsed.move_to_end(key)
    if hit is _MISS:
        from fairmt.data.inputs import parse_yaml

        hit = parse_yaml(text, source, what)
        with _lock:
            _parsed[key] = hit
            while len(_parsed) > _MAX_TEXTS:
                _parsed.popitem(last=False)
    return _copy(hit)


_listing: dict[Path, tuple[tuple, dict[str, Path]]] = {}


def _names(root: Path) -> tuple:
    """The entries of ``root`` and of each folder in it, by name (what ``root.glob("*/*.yaml")`` depends on)."""
    with os.scandir(root) as entries:
        folders = sorted(e.name for e in entries if e.is_dir())
    return tuple((name, tuple(sorted(os.listdir(root / name)))) for name in folders)


def recipe_files(root: Path) -> dict[str, Path]:
    """``FAMILY/NAME`` → path of every ``root/*/*.yaml`` outside ``accelerate/``, sorted by path: globbed again only
    when the names in ``root`` or in one of its folders changed (a file added, removed or renamed; a time stamp
    could miss one added within the clock's tick); a fresh dict each call."""
    try:
        key: tuple | None = _names(root)
    except OSError:
        key = None
    with _lock:
        found = _listing.get(root)
    if key is not None and found is not None and found[0] == key:
        return dict(found[1])
    files = {
        p.relative_to(root).with_suffix("").as_posix(): p
        for p in sorted(root.glob("*/*.yaml"))
        if p.parent.name != "accelerate"
    }
    if key is not None:
        with _lock:
            _listing[root] = (key, files)
    return dict(files)
