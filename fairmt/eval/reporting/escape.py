"""One escaping function per output format: every string that comes from a result file, a recipe or a user's argument
(a run name, a setting, a signature, a note quoting them) is data in every output fairmt writes, never markup.

* :func:`terminal` — control characters (C0, DEL, C1: ANSI/OSC escapes, newlines, carriage returns, the bell) and the
  invisible characters that reorder or split text (bidi overrides and isolates, line/paragraph separators) shown as
  Python escapes (``\\x1b``, ``\\n``, ``\\u202e``); everything else as it is. The other formats start from it, so a
  name reads the same everywhere.
* :func:`markdown` — for any place in a Markdown document (a table cell, a list item, a paragraph): no raw HTML
  (``&``, ``<``, ``>`` as entities), no table split (``|``), no new line (so no forged heading or list), and every
  character CommonMark/GFM give a meaning inline (emphasis, code, links, strike-through, math) backslash-escaped.
* :func:`markdown_code` — a code span (a recipe path, an override) that no backtick in the text can close.
* :func:`latex` — every LaTeX special character, control characters made visible, characters pdflatex cannot set with
  the report's preamble replaced by ``?``; the result compiles wherever plain text may stand (also after ``\\\\``).
* :func:`html` — text nodes and quoted attribute values (``&<>"'``), control characters made visible.
* :func:`mpl` — a matplotlib label: ``$`` escaped, so a name never starts mathtext (``$\\frac{$`` stays text).
"""

from __future__ import annotations

import html as _html
import re
import unicodedata
from typing import Any

_INVISIBLE = {0x2028, 0x2029, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _visible(ch: str) -> str:
    o = ord(ch)
    if o < 0x20 or 0x7F <= o < 0xA0 or o in _INVISIBLE:
        r = repr(ch)[1:-1]  # '\x1b', '\n', '\t', '\u202e'
        return r if r != ch else f"\\x{o:02x}"
    return ch


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def terminal(s: Any) -> str:
    """``s`` as text for a terminal: control and invisible reordering characters shown as escapes (``\\x1b``)."""
    return _CONTROL.sub(lambda m: _visible(m.group()), str(s))


class Marked(str):
    """Text built from the writer's words and data, some of it to be shown as code (a signature value): as a string,
    the code parts in backticks (what the terminal and JSON show); :func:`markdown` writes each code part as a code
    span (:func:`markdown_code`) and the rest as text. ``Marked("a is ", Marked.code("x"), ".")``."""

    parts: tuple[tuple[str, bool], ...]

    def __new__(cls, *parts: Any) -> Marked:  # noqa: PYI034 - typing.Self needs Python 3.11
        spans = tuple((p[1], True) if isinstance(p, tuple) and p[:1] == ("code",) else (str(p), False) for p in parts)
        self = super().__new__(cls, "".join(f"`{t}`" if c else t for t, c in spans))
        self.parts = spans
        return self

    @staticmethod
    def code(text: Any) -> tuple[str, str]:
        return ("code", str(text))


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_ESCAPED = set("\\`*_[]|#~$!")
_MD_LINE_START = re.compile(r"^(\s*)([-+](?=\s|$)|=(?==*\s*$)|\d{1,9}(?=[.)](?:\s|$)))")  # > is &gt; already


def markdown(s: Any) -> str:
    """``s`` as literal text anywhere in Markdown (a table cell included): shown as :func:`terminal` shows it, HTML
    characters as entities, ``|`` and every inline-markup character backslash-escaped, a leading block marker
    (``-``, ``+``, ``1.``, ``===``) neutralised. The model card and every Markdown report use this one function."""
    if isinstance(s, Marked):
        return "".join(markdown_code(t) if c else markdown(t) for t, c in s.parts)
    t = terminal(s)
    out = "".join(_MD_ENTITIES.get(ch) or ("\\" + ch if ch in _MD_ESCAPED else ch) for ch in t)
    m = _MD_LINE_START.match(out)
    if m:  # a cell or list item that starts like a list or a setext underline
        lead, marker = m.groups()
        if marker.isdigit():
            i = len(lead) + len(marker)
            out = out[:i] + "\\" + out[i:]
        else:
            out = lead + "\\" + out[len(lead) :]
    return out


_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "[": "{[}",
    "]": "{]}",
    '"': r"\textquotedbl{}",
}
_TEX_UNICODE = {
    "↑": r"$\uparrow$",
    "↓": r"$\downarrow$",
    "Δ": r"$\Delta$",
    "±": r"$\pm$",
    "†": r"$^\dagger$",
    "ŷ": r"$\hat{y}$",
    "α": r"$\alpha$",
    "β": r"$\beta$",
    "γ": r"$\gamma$",
    "λ": r"$\lambda$",
    "τ": r"$\tau$",
    "ρ": r"$\rho$",
    "ε": r"$\varepsilon$",
    "δ": r"$\delta$",
    "μ": r"$\mu$",
    "σ": r"$\sigma$",
    "–": "--",
    "—": "---",
    "→": r"$\to$",
    "·": r"$\cdot$",
    "½": r"$\frac12$",
    "¼": r"$\frac14$",
    "⅛": r"$\frac18$",
    "−": "-",
    "’": "'",
    "×": r"$\times$",
    "÷": r"$\div$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
}


def markdown_code(s: Any) -> str:
    """``s`` as a Markdown code span (``recipes/x.yaml`` in backticks) that it cannot leave: shown as :func:`terminal`
    shows it, fenced by more backticks than it holds in a row, ``|`` escaped (a code span in a table cell)."""
    t = terminal(s).replace("|", "\\|")
    fence = "`" * (max((len(x) for x in re.findall("`+", t)), default=0) + 1)
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"


_TEX_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0327": "c",
}
"""Combining accents and the LaTeX accent commands that set them in any font encoding, OT1 included (``é`` →
``\\'{e}``; the ogonek, T1 only, is not among them)."""
_TEX_LETTERS = {
    "ß": r"\ss{}",
    "æ": r"\ae{}",
    "Æ": r"\AE{}",
    "œ": r"\oe{}",
    "Œ": r"\OE{}",
    "ø": r"\o{}",
    "Ø": r"\O{}",
    "ł": r"\l{}",
    "Ł": r"\L{}",
    "ı": r"\i{}",
    "¿": r"?`",
    "¡": r"!`",
}


def _tex_letter(ch: str) -> str:
    """A non-ASCII character as pdflatex sets it without any package: an ASCII letter with LaTeX accent commands
    (``ñ`` → ``\\~{n}``), a letter LaTeX names (``ß`` → ``\\ss{}``), else ``?`` (no glyph: CJK, Cyrillic, emoji)."""
    if ch in _TEX_LETTERS:
        return _TEX_LETTERS[ch]
    base, *marks = list(unicodedata.normalize("NFD", ch))
    if base.isascii() and base.isalpha() and marks and all(m in _TEX_ACCENTS for m in marks):
        out = "\\i" if base == "i" else "\\j" if base == "j" else base  # dotless i/j under an accent
        for m in marks:
            out = f"\\{_TEX_ACCENTS[m]}{{{out}}}"
        return out
    return "?"


def latex(s: Any) -> str:
    """``s`` as LaTeX text (pdflatex): every special character escaped, control characters shown as :func:`terminal`
    shows them, the Unicode the report's labels use as LaTeX, accented Latin letters with LaTeX's accent commands,
    any other non-ASCII character as ``?`` (pdflatex has no glyph for it)."""
    out = []
    for ch in unicodedata.normalize("NFC", terminal(s)):  # a letter and its accent as one character
        if ch in _TEX:
            out.append(_TEX[ch])
        elif ch in _TEX_UNICODE:
            out.append(_TEX_UNICODE[ch])
        else:
            out.append(ch if ord(ch) < 128 else _tex_letter(ch))
    return "".join(out)


def html(s: Any) -> str:
    """``s`` as HTML text, in a text node or a quoted attribute value; control characters shown as :func:`terminal`
    shows them."""
    return _html.escape(terminal(s), quote=True)


def mpl(s: Any) -> str:
    """``s`` as a matplotlib label that is always plain text: shown as :func:`terminal` shows it, each ``$`` escaped
    (matplotlib reads ``\\$`` as a dollar sign and never starts mathtext on it), a leading ``_`` kept visible (a
    legend leaves out a label that starts with one)."""
    t = terminal(s).replace("$", r"\$")
    return " " + t if t.startswith("_") else t  # matplotlib leaves a label starting with _ out of a legend


__all__ = ["Marked", "html", "latex", "markdown", "markdown_code", "mpl", "terminal"]
