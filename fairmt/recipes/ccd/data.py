"""The data of a CCD recipe (``data``, :class:`fairmt.recipes.ccd.schema.CcdData`): tuples from a tuple file, or CDA
tuples made on the fly from text sources (optionally split into sentences), EDA variants of the training tuples, and
the seeded train / validation / test split with held-out neutral sentences for the utility check."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes.ccd.schema import CcdData, CcdRecipe, CdaSource, Eda, section


def resolve_data(path: str) -> Path:
    """A data file of a recipe: an absolute or existing path as it is, else relative to the data root
    (``FAIRMT_DATA``)."""
    from fairmt.data.paths import data_path

    p = Path(path)
    if p.is_absolute() or p.exists():
        if not p.exists():
            raise FairmtError(f"data file {p} not found")
        return p
    return data_path(*p.parts)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (a period, question or exclamation mark followed by a space and a capital)."""
    return [p.strip() for p in _SENTENCE_END.split(text) if p.strip()]


def read_source_texts(src: CdaSource | dict) -> list[str]:
    """The texts of one ``data.cda_source`` entry: ``path`` (JSONL with a dotted ``field``, CSV with a column
    ``field``, or plain text), optional ``sentences: true`` (split each text into sentences) and ``max_texts``."""
    from fairmt.data.augment.tuples import read_texts

    if isinstance(src, dict):
        if not src.get("path"):
            raise FairmtError(f"data.cda_source needs a path (and a field for JSONL/CSV files), got {src!r}")
        src = section(CcdRecipe, ("data", "cda_source"), CdaSource, src)
    path = resolve_data(src.path)
    if path.suffix.lower() == ".csv":
        from fairmt.data.inputs import csv_dict_rows

        if not src.field:
            raise FairmtError(f"data.cda_source {path}: a CSV file needs field: <column>")
        _, rows = csv_dict_rows(path, "CDA source", required=(src.field,))
        texts = [r[src.field].strip() for _, r in rows if r[src.field].strip()]
    else:
        texts = read_texts(path, src.field)
    if src.sentences:
        texts = [s for t in texts for s in split_sentences(t)]
    if src.max_texts:
        texts = texts[: src.max_texts]
    return texts


def eda_tuples(train: list[dict], eda: Eda, seed: int) -> tuple[list[dict], dict]:
    """``data.eda``: ``num_aug`` EDA variants (:mod:`fairmt.data.augment.eda`, ``alpha``) of each training tuple's
    source text, made into tuples by the same CDA; only training tuples are augmented, so no variant of a
    validation or test text is trained on."""
    from fairmt.data.augment.cda import cda_augment
    from fairmt.data.augment.eda import EDA

    aug = EDA(alpha=eda.alpha, seed=seed)
    variants = [v for r in train for v in aug.augment(r.get("source") or r["male"], eda.num_aug)]
    rows, st = cda_augment(variants)
    known = {r["neutral"] for r in train}
    rows = [r for r in rows if r["neutral"] not in known]
    return rows, {
        "n_variants": len(variants),
        "n_tuples": len(rows),
        "operations": list(aug.operations),
        "n_failed_polarity": st.n_failed_polarity,
    }


def prepare_data(data: CcdData | dict) -> dict[str, Any]:
    """Tuples split into train / eval / test, plus held-out neutral sentences for the utility check (test, and
    ``utility_validation_size`` more for validation). ``data``: the resolved ``data`` section (a plain mapping is
    checked and resolved first)."""
    from fairmt.data.augment.tuples import GENDER_GROUPS, read_tuples

    d = section(CcdRecipe, "data", CcdData, data)
    groups = tuple(d.groups or GENDER_GROUPS)
    neutral_texts: list[str] = []
    neutral_val: list[str] = []
    stats: dict[str, Any] = {}
    if d.tuples:
        rows = read_tuples(resolve_data(d.tuples), groups)
    else:  # the schema holds exactly one of tuples and cda_source
        from fairmt.data.augment.cda import cda_augment
        from fairmt.data.gender import detect_gender

        given = d.cda_source or []
        sources = given if isinstance(given, list) else [given]
        texts = [t for src in sources for t in read_source_texts(src)]
        rows, cda_stats = cda_augment(texts)
        stats["cda"] = {k: v for k, v in cda_stats.to_dict().items() if k != "failed_examples"}
        neutral_texts = list(dict.fromkeys(t for t in texts if detect_gender(t) == "none"))
        random.Random(d.seed).shuffle(neutral_texts)
        neutral_val = neutral_texts[d.utility_size : d.utility_size + d.utility_validation_size]
        neutral_texts = neutral_texts[: d.utility_size]
    rows = list(rows)
    random.Random(d.seed).shuffle(rows)
    n_test, n_eval = d.test_size, d.eval_size
    if n_test + n_eval >= len(rows):
        raise FairmtError(f"only {len(rows)} tuples: test_size {n_test} + eval_size {n_eval} leave none to train on")
    test, dev, train = rows[:n_test], rows[n_test : n_test + n_eval], rows[n_test + n_eval :]
    if d.max_train_tuples:
        train = train[: d.max_train_tuples]
    if d.eda:
        extra, stats["eda"] = eda_tuples(train, d.eda, d.seed)
        train = train + extra
        random.Random(d.seed + 1).shuffle(train)
    stats.update(
        n_train=len(train),
        n_eval=len(dev),
        n_test=len(test),
        n_utility=len(neutral_texts),
        n_utility_validation=len(neutral_val),
    )
    return {
        "groups": groups,
        "train": train,
        "eval": dev,
        "test": test,
        "neutral": neutral_texts,
        "neutral_validation": neutral_val,
        "stats": stats,
    }


__all__ = ["eda_tuples", "prepare_data", "read_source_texts", "resolve_data", "split_sentences"]
