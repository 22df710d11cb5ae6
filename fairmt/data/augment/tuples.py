"""Tuple datasets for content-conditional debiasing (CCD): one content, a neutral text and one text per group.

A tuple is a dict ``{"neutral": S^n, "male": S^m, "female": S^f[, other groups...][, "source": ..., ...]}``; the
group names are free (gender by default, any number ≥ 2). On disk: JSON Lines, one tuple per line.

Also here: the *sensitive polarity* check of the CCD paper (Eq. 6) and its union polarity accuracy (Eq. 7), and
the collator that turns a batch of tuples into one flat tokenised batch for :class:`fairmt.trainers.ccd.CCDTrainer`.

Polarity (Eq. 6): g(S) = argmax_{a ∈ A} occ(S, V^a), the group whose word list V^a occurs most often in S. A text
with no group word has polarity ``"neutral"``; a tie between groups with words gives ``"mixed"`` (always wrong).
For gender the word lists are the project lexicon's unambiguous gendered words
(:func:`fairmt.data.gender.gendered_words`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fairmt.data.jsonl import iter_jsonl
from fairmt.errors import FairmtError

NEUTRAL = "neutral"
MIXED = "mixed"
GENDER_GROUPS: tuple[str, ...] = ("male", "female")

_TOKEN = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")


def validate_tuple(row: Mapping[str, Any], groups: Sequence[str] = GENDER_GROUPS, where: str = "tuple") -> dict:
    """Check that ``row`` has a non-empty text for the neutral version and for every group; return it as a dict.

    Raises :class:`FairmtError` naming ``where`` (e.g. ``file.jsonl:12``) and the missing group.
    """
    if not isinstance(row, Mapping):
        raise FairmtError(f"{where}: a tuple must be a JSON object with keys {[NEUTRAL, *groups]}, got {row!r}")
    for key in (NEUTRAL, *groups):
        value = row.get(key)
        if value is None:
            raise FairmtError(
                f"{where}: the tuple has no {key!r} text (keys present: {sorted(row)}); every tuple needs "
                f"{[NEUTRAL, *groups]} — regenerate it, drop it, or pass the right --groups"
            )
        if not isinstance(value, str) or not value.strip():
            raise FairmtError(f"{where}: the {key!r} text must be a non-empty string, got {value!r}")
    return dict(row)


def read_tuples(path: str | Path, groups: Sequence[str] = GENDER_GROUPS) -> list[dict]:
    """Read and validate a JSONL tuple file (see :func:`validate_tuple`); extra fields stay under ``"meta"``."""
    path = Path(path)
    if not path.exists():
        raise FairmtError(f"{path}: tuple file not found; make one with `fairmt augment cda|llm ...`")
    rows = []
    for lineno, row in iter_jsonl(path, hint="; each line must be one tuple"):
        rows.append(validate_tuple(row, groups, where=f"{path}:{lineno}"))
    if not rows:
        raise FairmtError(f"tuple file {path} holds no tuples")
    return rows


def tuple_record(row: Mapping[str, Any], groups: Sequence[str] = GENDER_GROUPS, where: str = "tuple") -> dict:
    """The on-disk form of a tuple: the version texts as top-level strings, anything else (source text,
    confidence, polarity flag) under ``"meta"`` — so that readers which take every string key as a group (the
    CCED evaluator) see only the versions."""
    row = validate_tuple(row, groups, where)
    keys = (NEUTRAL, *groups)
    out = {k: row[k] for k in keys}
    meta = dict(row.get("meta") or {})
    meta.update({k: v for k, v in row.items() if k not in keys and k != "meta"})
    if meta:
        out["meta"] = meta
    return out


def write_tuples(
    path: str | Path, rows: Iterable[Mapping[str, Any]], groups: Sequence[str] = GENDER_GROUPS, append: bool = False
) -> int:
    """Validate and write tuples as JSONL (UTF-8, one per line, :func:`tuple_record` form); returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    from fairmt.outputs import appending, writing

    if append:  # appended as produced (a stream the caller grows): a failed write is the writer's one line
        with appending(path, what="the tuples") as fh:
            for i, row in enumerate(rows):
                fh.write(json.dumps(tuple_record(row, groups, where=f"tuple {i}"), ensure_ascii=False) + "\n")
                n += 1
        return n
    with writing(path, what="the tuples") as fh:
        for i, row in enumerate(rows):
            fh.write(json.dumps(tuple_record(row, groups, where=f"tuple {i}"), ensure_ascii=False) + "\n")
            n += 1
    return n


def read_texts(path: str | Path, field: str | None = None) -> list[str]:
    """Texts from a JSONL file (``field``: dotted key, e.g. ``translation.en``) or a plain text file (one a line)."""
    from fairmt.data.inputs import read_text

    p = Path(path)
    text = read_text(p, "text")
    out = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if field is None:
            out.append(line.strip())
            continue
        try:
            obj: Any = json.loads(line)
            for part in field.split("."):
                obj = obj[part]
        except (json.JSONDecodeError, KeyError, TypeError, IndexError):
            raise FairmtError(f"{p}:{lineno}: no text at field {field!r} (is it a JSONL file with that key?)") from None
        if not isinstance(obj, str):
            raise FairmtError(f"{p}:{lineno}: field {field!r} is not a string")
        out.append(obj.strip())
    if not out:
        raise FairmtError(f"{p} holds no texts")
    return out


def tuples_to_dataset(rows: Sequence[Mapping[str, Any]], groups: Sequence[str] = GENDER_GROUPS):
    """A :class:`datasets.Dataset` with one string column per version (``neutral`` and the groups)."""
    from datasets import Dataset

    rows = [validate_tuple(r, groups, where=f"tuple {i}") for i, r in enumerate(rows)]
    return Dataset.from_dict({k: [r[k] for r in rows] for k in (NEUTRAL, *groups)})


# --------------------------------------------------------------------------------------------- polarity (Eq. 6, 7)


def gender_word_counts(text: str) -> dict[str, int]:
    """occ(S, V^a) for a = male, female, from the project lexicon."""
    from fairmt.data.gender import gendered_words

    found = gendered_words(text)
    return {g: len(found.get(g, [])) for g in GENDER_GROUPS}


def word_list_counter(word_lists: Mapping[str, Iterable[str]]) -> Callable[[str], dict[str, int]]:
    """A counter occ(S, V^a) for arbitrary groups from lower-case word lists (single words, hyphens allowed)."""
    lists = {g: frozenset(w.lower() for w in ws) for g, ws in word_lists.items()}

    def count(text: str) -> dict[str, int]:
        toks = [t.lower() for t in _TOKEN.findall(text)]
        return {g: sum(t in ws for t in toks) for g, ws in lists.items()}

    return count


def polarity(text: str, counter: Callable[[str], Mapping[str, int]] = gender_word_counts) -> str:
    """g(S) of the CCD paper (Eq. 6): the group with most word occurrences, ``"neutral"`` or ``"mixed"`` (tie)."""
    counts = counter(text)
    best = max(counts.values(), default=0)
    if best == 0:
        return NEUTRAL
    winners = [g for g, c in counts.items() if c == best]
    return winners[0] if len(winners) == 1 else MIXED


@dataclass
class PolarityReport:
    """Sensitive-polarity check of a tuple set (CCD paper, Eq. 7)."""

    n: int
    union_accuracy: float
    per_version_accuracy: dict[str, float]
    wrong: list[int] = field(default_factory=list)
    signature: str = "fairmt-ccd-polarity|v1"

    def to_dict(self) -> dict:
        return asdict(self)


def check_tuple(
    row: Mapping[str, Any],
    groups: Sequence[str] = GENDER_GROUPS,
    counter: Callable[[str], Mapping[str, int]] = gender_word_counts,
) -> dict[str, bool]:
    """Per version: does g(S^v) equal v (``neutral`` for the neutral text, the group name otherwise)?"""
    return {v: polarity(row[v], counter) == v for v in (NEUTRAL, *groups)}


def union_polarity_accuracy(
    rows: Sequence[Mapping[str, Any]],
    groups: Sequence[str] = GENDER_GROUPS,
    counter: Callable[[str], Mapping[str, int]] = gender_word_counts,
) -> PolarityReport:
    """Share of tuples whose every version has the right polarity (Eq. 7), per-version accuracies, wrong indices."""
    if not rows:
        raise FairmtError("polarity accuracy of an empty tuple set is undefined: generate some tuples first")
    per = {v: 0 for v in (NEUTRAL, *groups)}
    wrong = []
    for i, row in enumerate(rows):
        ok = check_tuple(row, groups, counter)
        for v, good in ok.items():
            per[v] += good
        if not all(ok.values()):
            wrong.append(i)
    n = len(rows)
    return PolarityReport(
        n=n,
        union_accuracy=(n - len(wrong)) / n,
        per_version_accuracy={v: c / n for v, c in per.items()},
        wrong=wrong,
    )


# --------------------------------------------------------------------------------------------- collator


class CCDTupleCollator:
    """Tokenise a batch of tuples into ONE flat batch: the B neutral texts, then the B texts of each group in order.

    Returns ``input_ids``/``attention_mask`` (and ``token_type_ids`` when the tokenizer makes them) of shape
    ``((1 + G)·B, L)`` plus ``ccd_groups = G``. One flat batch means one encoder forward per step, which keeps
    every parameter use inside a single DDP forward.

    Args:
        tokenizer: a Hugging Face tokenizer.
        groups: group keys, in the order the trainer reads them.
        max_length: truncation length.
    """

    def __init__(self, tokenizer, groups: Sequence[str] = GENDER_GROUPS, max_length: int = 128):
        self.tokenizer = tokenizer
        self.groups = tuple(groups)
        self.max_length = max_length

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict:
        rows = [validate_tuple(f, self.groups, where=f"batch item {i}") for i, f in enumerate(features)]
        texts = [r[NEUTRAL] for r in rows]
        for g in self.groups:
            texts.extend(r[g] for r in rows)
        batch = dict(
            self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        )
        batch["ccd_groups"] = len(self.groups)
        return batch
