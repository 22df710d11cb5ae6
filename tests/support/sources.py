"""Python source text, parsed once per test process. The static checks (layers, security, one writer, config
ranges, recipe families, moved names, ...) each read every file of ``fairmt``; each parsing and walking it on its own
cost about 2 s of CPU a check (22 CPU-s of the whole suite's profile). The cache is keyed by the text itself, so a
file that changes (or a file a test plants) is parsed again. The trees are shared: callers read them, never change
them."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def _parsed(text: str) -> tuple[ast.Module, tuple[ast.AST, ...]]:
    tree = ast.parse(text)
    return tree, tuple(ast.walk(tree))


def tree(source: str | Path) -> ast.Module:
    """The module ``source`` (a text, or a path read as UTF-8) parses to."""
    return _parsed(_text(source))[0]


def nodes(source: str | Path) -> tuple[ast.AST, ...]:
    """Every node of :func:`tree`, in ``ast.walk``'s order."""
    return _parsed(_text(source))[1]


def _text(source: str | Path) -> str:
    return source.read_text(encoding="utf-8") if isinstance(source, Path) else source
