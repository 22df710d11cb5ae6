"""What the LLM backends (``openai``, ``causal-lm``) share: the prompt and the clean-up of the answer."""

from __future__ import annotations

import re

from fairmt.errors import FairmtError

DEFAULT_PROMPT = "Translate the following sentence into {LANG}. {SENT}"
"""The GACL paper's ChatGPT prompt (Table 1): ``LANG`` is the target language's English name, ``SENT`` the source."""


def check_template(template: str) -> str:
    if "{SENT}" not in template:
        raise FairmtError(
            f"prompt template {template!r} has no {{SENT}} (where the source sentence goes); it may also "
            "use {LANG} (target language name) and {SRC_LANG} (source language name)"
        )
    return template


def make_prompt(template: str, sentence: str, src_lang: str, tgt_lang: str) -> str:
    """``template`` with ``{LANG}``, ``{SRC_LANG}`` and ``{SENT}`` filled in (plain replacement: braces in the
    sentence are kept as they are)."""
    from fairmt.models.languages import language_name

    out = template.replace("{LANG}", language_name(tgt_lang)).replace("{SRC_LANG}", language_name(src_lang))
    return out.replace("{SENT}", sentence)


_QUOTES = [
    ('"', '"'),
    ("'", "'"),
    ("“", "”"),
    ("„", "“"),
    ("„", "”"),
    ("«", "»"),
    ("»", "«"),
    ("‘", "’"),
    ("‚", "‘"),
    ("「", "」"),
    ("`", "`"),
]
_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:sure[!,.]?\s*)?(?:here(?:'s| is) (?:the|my|your) )?(?:[\w-]+ )?"
    r"(?:translation|translated (?:text|sentence)|übersetzung|traducción|traduction|traduzione|перевод)"
    r"(?: (?:in|into|to) [\w-]+)?(?:\s*\([^)]*\))?\s*(?:\*\*)?\s*:\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_NOTE = re.compile(r"\n\s*\n\s*(?:\(?\s*(?:note|explanation|notes|literal(?:ly)?|this translates)\b|\*)", re.IGNORECASE)


def _wrapped(t: str) -> tuple[str, str] | None:
    """The quote pair around the whole of ``t`` (and nowhere inside it), if any."""
    for left, right in _QUOTES:
        if len(t) >= 2 and t.startswith(left) and t.endswith(right):
            inner = t[len(left) : -len(right)]
            if left not in inner and right not in inner:
                return left, right
    return None


def clean_translation(text: str, source: str | None = None) -> str:
    """An LLM's answer reduced to the translation: a leading ``Translation:``-style label or a one-line
    introduction ending in a colon is dropped, as is a trailing note after a blank line, and quotes around the whole
    answer are removed (unless the ``source`` is itself quoted). The language of the answer is not judged: a
    wrong-language answer is kept (and scored)."""
    t = (text or "").strip()
    note = _NOTE.search(t)
    if note:
        t = t[: note.start()].strip()
    lines = t.split("\n")
    if len(lines) > 1 and lines[0].rstrip().endswith(":") and len(lines[0]) < 120:
        t = "\n".join(lines[1:]).strip()
    t = _LABEL.sub("", t, count=1).strip()
    source_quoted = source is not None and _wrapped(source.strip()) is not None
    for _ in range(2):  # **"Der Arzt."** and the like
        t = t.strip("*").strip()
        pair = None if source_quoted else _wrapped(t)
        if pair:
            t = t[len(pair[0]) : -len(pair[1])].strip()
    return " ".join(t.split()) if "\n" in t else t
