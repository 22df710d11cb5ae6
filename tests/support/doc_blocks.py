"""The code blocks of the documentation (``docs/**/*.md`` and ``README.md``) and what each one's marker says.

A fenced block is **executed** by ``tests/project/test_docs.py`` unless the line before it (blank lines aside) is one of:

* ``<!-- not-runnable: REASON -->``: not run here (a GPU, the Hub, an install, minutes of training...); it is still
  checked: a Python block compiles and its imports resolve, a shell block is valid bash and each of its ``fairmt``
  commands parses (a built-in recipe with its overrides also passes the recipe checks);
* ``<!-- runs-in: tests/test_x.py -->``: run by that test, which reads the block from the page (the file must name
  the page);
* ``<!-- run-with: key=value ... -->``: executed with these overrides added to each ``fairmt train`` line (small
  sizes for the test).

``text`` blocks (program output) are not code and are not counted.

``<!-- needs: PART, ... -->`` among the comment lines right before a block (above or below its marker) names the
optional parts an executed block needs (``data``, ``fairseq``, ... : the names of ``tests/support/needs.py``); where one is
missing the block skips, saying what is missing and how to get it.

Executed blocks run in an empty folder with ``FAIRMT_DATA`` set to the real data (when it is there); ``$FAIRMT_DATA``
(any environment variable) on a shell line is expanded as a shell would, and a block that names ``FAIRMT_DATA`` needs
the data without saying so. A page holding the line ``<!-- one-folder -->`` runs its executed blocks in order in
one folder, as a reader following the page would (a block run alone first runs the page's earlier ones), so that a
Python block can write the file the next shell block reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!--\s*(not-runnable|runs-in|run-with):\s*(.*?)\s*-->")
NEEDS = re.compile(r"<!--\s*needs:\s*(.*?)\s*-->")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)


@dataclass
class Block:
    page: str  # relative to the repository root
    line: int
    lang: str
    code: str
    marker: str | None  # "not-runnable", "runs-in", "run-with" or None (executed)
    arg: str
    needs: tuple[str, ...] = ()  # the optional parts (tests/support/needs.py) the block needs to run

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]


def blocks(path: Path | None = None) -> list[Block]:
    out = []
    for page in [path] if path else pages():
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group("lang") == "text":
                continue
            comments = _comments_before(text[: m.start()])
            mk = MARKER.search(comments[-1]) if comments else None
            needs = [n.strip() for c in comments for group in NEEDS.findall(c) for n in group.split(",") if n.strip()]
            if "FAIRMT_DATA" in m.group("body") and "data" not in needs:
                needs.append("data")
            body = "\n".join(line[len(m.group("indent")) :] for line in m.group("body").splitlines())
            out.append(
                Block(
                    str(page.relative_to(ROOT)),
                    text[: m.start()].count("\n") + 1,
                    m.group("lang"),
                    body,
                    mk.group(1) if mk else None,
                    mk.group(2) if mk else "",
                    tuple(needs),
                )
            )
    return out


def _comments_before(text: str) -> list[str]:
    """The ``<!-- ... -->`` lines right before a block (blank lines aside), top to bottom; a marker is the last one,
    a ``needs`` line may be any of them."""
    lines: list[str] = []
    for line in reversed(text.rstrip().splitlines()):
        if not line.strip():
            continue
        if lines and not line.strip().startswith("<!--"):
            break
        lines.append(line.strip())  # the line right before is taken whatever it is (a marker may end a sentence)
        if not line.strip().startswith("<!--"):
            break
    return lines[::-1]


ONE_FOLDER = "<!-- one-folder -->"


def one_folder(page: str) -> bool:
    """Whether the page's executed blocks share one folder (see the module docstring)."""
    return ONE_FOLDER in (ROOT / page).read_text(encoding="utf-8")


def block_after(page: str, marker_text: str) -> str:
    """The code of the block right after ``marker_text`` on ``page`` (other tests read their blocks this way)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    start = text.index(marker_text)
    m = FENCE.search(text, start)
    assert m, f"{page}: no code block after {marker_text!r}"
    return m.group("body")


def shell_commands(code: str) -> list[str]:
    """The command lines of a shell block: continuations joined, comments and ``#!``/``#SBATCH`` lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    lines = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        lines.append(re.sub(r"\s+#\s.*$", "", line))
    return lines
