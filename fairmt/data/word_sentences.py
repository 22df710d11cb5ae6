"""Sentences that hold attribute / target words, for the word-level debiasing baselines DPCE and ADEPT-F.

Both methods (Kaneko & Bollegala 2021; Yang et al. 2023) take a corpus and word lists: attribute words per
protected group (male, female) and target words (DPCE's *stereotype* words, ADEPT's *neutral* words). Every sentence
that holds a word of exactly one group gives an **attribute row** (its first such word marked); every sentence that
holds a target word gives a **target row** (its first target word marked) — a sentence may give both. Sentences
with words of two groups are skipped as attribute rows (their word's group is ambiguous in context).

A row is ``{"text", "role": "attribute"|"target", "group": <group name or "">, "word", "start", "end"}`` with the
character span of the marked word; :class:`WordSentenceCollator` turns rows into a flat batch with a per-token mask
of the marked word's sub-word tokens (found through the fast tokenizer's offsets).

The word lists are read from the data folder (``lexicons/dpce_*.txt``, ``lexicons/adept_*.txt``; their licences are
beside them), never shipped in the package.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

logger = logging.getLogger(__name__)

WORD_RE = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
ROLES = ("attribute", "target")
LEXICONS = {
    "dpce": {"male": "dpce_male.txt", "female": "dpce_female.txt", "target": "dpce_stereotype.txt"},
    "adept": {"male": "adept_male.txt", "female": "adept_female.txt", "target": "adept_neutral.txt"},
}


def read_word_list(path: str | Path) -> list[str]:
    """One word per line, lower-cased; blank lines and ``#`` comments skipped; order kept, duplicates dropped."""
    p = Path(path)
    if not p.is_file():
        raise FairmtError(f"word list {p} not found")
    words = [w.strip().lower() for w in p.read_text(encoding="utf-8").splitlines()]
    words = list(dict.fromkeys(w for w in words if w and not w.startswith("#")))
    if not words:
        raise FairmtError(f"word list {p} holds no words")
    return words


def load_lexicon(name: str) -> tuple[dict[str, list[str]], list[str]]:
    """(attribute words per group, target words) of a published word-list set (``dpce`` or ``adept``) from the data
    folder (``FAIRMT_DATA/lexicons``)."""
    from fairmt.data.paths import data_path

    if name not in LEXICONS:
        raise FairmtError(f"unknown word-list set {name!r}; choose one of {sorted(LEXICONS)}")
    files = LEXICONS[name]
    attrs = {g: read_word_list(data_path("lexicons", files[g])) for g in ("male", "female")}
    return attrs, read_word_list(data_path("lexicons", files["target"]))


def collect_word_sentences(
    texts: Iterable[str],
    attributes: Mapping[str, Sequence[str]],
    targets: Sequence[str],
    max_per_word: int | None = None,
    seed: int = 42,
) -> list[dict[str, Any]]:
    """Attribute and target rows of ``texts`` (see the module docstring).

    Args:
        texts: sentences.
        attributes: group name → its attribute words (≥ 2 groups). A word listed for two groups is an error.
        targets: target words (stereotype / neutral words); a word that is also an attribute word is used as an
            attribute word only (with a warning).
        max_per_word: keep at most this many rows per marked word (rows shuffled with ``seed`` first), so frequent
            words (he, she) do not crowd out the rest. ``None``: all.
    """
    if len(attributes) < 2:
        raise FairmtError(f"need attribute words of at least two groups, got {list(attributes)}")
    owner: dict[str, str] = {}
    for group, words in attributes.items():
        for w in words:
            w = w.lower()
            if owner.get(w, group) != group:
                raise FairmtError(f"attribute word {w!r} is listed for both {owner[w]!r} and {group!r}")
            owner[w] = group
    target_set = {w.lower() for w in targets}
    both = sorted(target_set & set(owner))
    if both:  # the published DPCE lists hold 'tailor' and 'waiter' in both the male and the stereotype list
        logger.warning("words %s are both attribute and target words: used as attribute words only", both)
        target_set -= set(both)
    if not target_set:
        raise FairmtError("no target words given")
    rows: list[dict[str, Any]] = []
    for text in texts:
        if not isinstance(text, str) or not text.strip():
            continue
        first_attr: dict[str, re.Match] = {}
        first_target = None
        for m in WORD_RE.finditer(text):
            w = m.group(0).lower()
            if w in owner:
                first_attr.setdefault(owner[w], m)
            elif first_target is None and w in target_set:
                first_target = m
        if len(first_attr) == 1:
            ((group, m),) = first_attr.items()
            rows.append(
                {
                    "text": text,
                    "role": "attribute",
                    "group": group,
                    "word": m.group(0).lower(),
                    "start": m.start(),
                    "end": m.end(),
                }
            )
        if first_target is not None:
            rows.append(
                {
                    "text": text,
                    "role": "target",
                    "group": "",
                    "word": first_target.group(0).lower(),
                    "start": first_target.start(),
                    "end": first_target.end(),
                }
            )
    if max_per_word is not None:
        random.Random(seed).shuffle(rows)
        seen: dict[tuple[str, str], int] = {}
        kept = []
        for r in rows:
            key = (r["role"], r["word"])
            if seen.get(key, 0) < max_per_word:
                seen[key] = seen.get(key, 0) + 1
                kept.append(r)
        rows = kept
    return rows


def check_rows(rows: Sequence[Mapping[str, Any]], groups: Sequence[str]) -> dict[str, int]:
    """Counts of rows per role and group; a FairmtError when a group or the targets have no row."""
    counts = {"target": 0, **{g: 0 for g in groups}}
    for i, r in enumerate(rows):
        if r.get("role") not in ROLES:
            raise FairmtError(f"row {i}: role must be one of {ROLES}, got {r.get('role')!r}")
        key = "target" if r["role"] == "target" else r.get("group")
        if key not in counts:
            raise FairmtError(f"row {i}: group {key!r} is not one of {list(groups)}")
        counts[key] += 1
    empty = [k for k, v in counts.items() if v == 0]
    if empty:
        raise FairmtError(f"no sentences for {empty}: the corpus holds none of their words (counts {counts})")
    return counts


def rows_to_dataset(rows: Sequence[Mapping[str, Any]]):
    """A ``datasets.Dataset`` with the row columns (text, role, group, word, start, end)."""
    from datasets import Dataset

    cols = ("text", "role", "group", "word", "start", "end")
    return Dataset.from_dict({c: [r[c] for r in rows] for c in cols})


class WordSentenceCollator:
    """Rows → ``input_ids``, ``attention_mask`` (and ``token_type_ids``), ``word_mask`` (B, T) = 1 on the marked
    word's sub-word tokens, ``is_target`` (B,) bool and ``group_index`` (B,) (-1 for target rows).

    Needs a fast tokenizer (character offsets). A marked word cut off by ``max_length`` leaves an all-zero
    ``word_mask`` row, which the trainers skip.
    """

    def __init__(self, tokenizer, groups: Sequence[str], max_length: int = 128):
        if not getattr(tokenizer, "is_fast", False):
            raise FairmtError("DPCE/ADEPT need a fast tokenizer (character offsets locate the marked word)")
        self.tokenizer = tokenizer
        self.groups = list(groups)
        self.max_length = max_length

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import torch

        for key in ("text", "role", "group", "start", "end"):
            if any(key not in r for r in rows):
                raise FairmtError(
                    f"word-sentence row without {key!r}: use fairmt.data.word_sentences.collect_word_sentences"
                )
        enc = self.tokenizer(
            [r["text"] for r in rows],
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_offsets_mapping=True,
            return_tensors="pt",
        )
        offsets = enc.pop("offset_mapping")
        start = torch.tensor([int(r["start"]) for r in rows])[:, None]
        end = torch.tensor([int(r["end"]) for r in rows])[:, None]
        s, e = offsets[..., 0], offsets[..., 1]
        word_mask = ((e > s) & (s < end) & (e > start)).float() * enc["attention_mask"]
        group_index = []
        for r in rows:
            if r["role"] == "target":
                group_index.append(-1)
            elif r["group"] in self.groups:
                group_index.append(self.groups.index(r["group"]))
            else:
                raise FairmtError(f"row group {r['group']!r} is not one of {self.groups}")
        return {
            **enc,
            "word_mask": word_mask,
            "is_target": torch.tensor([r["role"] == "target" for r in rows]),
            "group_index": torch.tensor(group_index),
        }
