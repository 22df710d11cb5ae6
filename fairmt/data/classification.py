"""Fair-classification data: readers for Bias-in-Bios and the Huang et al. (2020) hate-speech set, splits, and a
collator that carries the protected attribute and second views to the Trainer.

* :func:`read_bios` — ``bios/*.csv`` (``hard_text, profession, gender``): task = profession, group = gender.
* :func:`read_hatespeech` — ``hatespeech_huang2020/<Language>/{train,valid,test}.tsv`` (``text`` = 40 integer token
  ids, left-padded with 0; demographic columns with ``x`` for unknown): task = ``label``, group = ``gender`` or
  ``age`` (rows with an unknown value of the chosen attribute are dropped, and counted).
* :class:`ClassificationCollator` — pads text (through a tokenizer), token ids, or stacks fixed ``features``; passes
  ``labels``, ``group`` and, when present, a second view (``text_view`` → ``view_input_ids``/``view_attention_mask``;
  or ``text_views``, several augmented copies of which one is drawn at random per example and batch).
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.data.inputs import csv_dict_rows
from fairmt.data.paths import data_path
from fairmt.errors import FairmtError


@dataclass
class ClassificationSplit:
    """One split: parallel lists (``texts``, ``input_ids`` or an ``(n, d)`` array of fixed ``features``), int
    ``labels`` and int ``groups``."""

    labels: list[int]
    groups: list[int]
    texts: list[str] | None = None
    input_ids: list[list[int]] | None = None
    features: Any = None

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, index: list[int]) -> ClassificationSplit:
        """The rows at ``index``."""
        return ClassificationSplit(
            labels=[self.labels[i] for i in index],
            groups=[self.groups[i] for i in index],
            texts=None if self.texts is None else [self.texts[i] for i in index],
            input_ids=None if self.input_ids is None else [self.input_ids[i] for i in index],
            features=None if self.features is None else self.features[index],
        )

    def records(self, group_column: str = "group") -> list[dict[str, Any]]:
        """Rows as dicts (``text`` or ``input_ids``, ``labels``, ``group``) for a ``datasets.Dataset``/Trainer."""
        out = []
        for i in range(len(self)):
            r: dict[str, Any] = {"labels": self.labels[i], group_column: self.groups[i]}
            if self.texts is not None:
                r["text"] = self.texts[i]
            if self.input_ids is not None:
                r["input_ids"] = self.input_ids[i]
            if self.features is not None:
                r["features"] = self.features[i]
            out.append(r)
        return out


@dataclass
class ClassificationData:
    """Splits plus the names of the label and group ids."""

    splits: dict[str, ClassificationSplit]
    label_names: list[str]
    group_names: list[str]
    source: str = ""
    notes: list[str] = field(default_factory=list)
    # intersectional groups: the protected attributes whose value combinations the group ids stand for (group name
    # ``"v1|v2"`` = the attributes' values joined by ``|``, as fairmt.eval.classification's keys); None for one
    group_attributes: list[str] | None = None

    def group_columns(self, split: str) -> Any:
        """The split's protected groups as the metrics take them: the group ids, or for intersectional groups one
        column of values per attribute (``{attribute: values}``: every metric over the cross-product groups, a
        combination with no example skipped by the empty-group rule)."""
        groups = self.splits[split].groups
        if not self.group_attributes:
            return groups
        values = [self.group_names[g].split("|") for g in groups]
        return {a: [v[i] for v in values] for i, a in enumerate(self.group_attributes)}

    @property
    def num_labels(self) -> int:
        return len(self.label_names)


def stratified_split(
    labels: list[int],
    fractions: tuple[float, float, float] = (0.6, 0.2, 0.2),
    seed: int = 0,
    groups: list[int] | None = None,
) -> tuple[list[int], list[int], list[int]]:
    """Indices of a train/dev/test split stratified by label (and group, when given).

    Within each (label[, group]) cell the rows are shuffled (``numpy`` generator seeded by ``seed``) and
    ``round(n·f_test)`` go to test, ``round(n·f_dev)`` to dev and the rest to train, so small cells keep both groups
    in the evaluation splits whenever they have enough rows; a single-row cell goes to train.
    """
    import numpy as np

    train_f, dev_f, test_f = fractions
    if abs(train_f + dev_f + test_f - 1.0) > 1e-6 or min(fractions) < 0:
        raise FairmtError(f"split fractions must be non-negative and sum to 1, got {fractions}")
    if groups is not None and len(groups) != len(labels):
        raise FairmtError(f"{len(groups)} groups for {len(labels)} labels")
    rng = np.random.default_rng(seed)
    cells: dict[tuple[int, int], list[int]] = {}
    for i, y in enumerate(labels):
        cells.setdefault((y, groups[i] if groups is not None else 0), []).append(i)
    train, dev, test = [], [], []
    for key in sorted(cells):
        idx = cells[key]
        idx = [idx[j] for j in rng.permutation(len(idx))]
        n = len(idx)
        n_test = int(round(n * test_f)) if n > 1 else 0
        n_dev = int(round(n * dev_f)) if n - n_test > 1 else 0
        test += idx[:n_test]
        dev += idx[n_test : n_test + n_dev]
        train += idx[n_test + n_dev :]
    return sorted(train), sorted(dev), sorted(test)


def read_bios(
    files: list[str | Path] | None = None,
    fractions: tuple[float, float, float] = (0.5, 0.2, 0.3),
    seed: int = 0,
) -> ClassificationData:
    """Bias-in-Bios biographies: task = profession, protected group = gender (``Female`` = 0, ``Male`` = 1).

    ``files`` default to ``bios/bios_28prof_x10.csv`` under the data root (10 biographies for each of 28
    professions). The sample has no official split, so a train/dev/test split stratified by profession × gender is
    drawn (``seed``).
    """
    paths = [Path(f) for f in files] if files else [data_path("bios", "bios_28prof_x10.csv")]
    texts, profs, genders = [], [], []
    for path in paths:
        if not path.exists():
            raise FairmtError(f"Bias-in-Bios file {path} not found; point FAIRMT_DATA at the data directory")
        _, rows = csv_dict_rows(path, "Bias-in-Bios", required=("hard_text", "profession", "gender"))
        for line, row in rows:
            g = row["gender"].strip()
            if g not in ("Female", "Male"):
                raise FairmtError(f"{path}:{line}: gender must be Female or Male, got {g!r}")
            prof = " ".join(row["profession"].split())
            if not prof:
                raise FairmtError(f"{path}:{line}: blank profession")
            texts.append(row["hard_text"])
            profs.append(prof)
            genders.append(g)
    spellings: dict[str, dict[str, int]] = {}
    for p in profs:
        spellings.setdefault(p.casefold(), {}).setdefault(p, 0)
        spellings[p.casefold()][p] += 1
    merged = {k: v for k, v in spellings.items() if len(v) > 1}
    if merged:  # 'Nurse' and 'nurse': one class, under its most frequent spelling
        import warnings

        warnings.warn(
            "Bias-in-Bios: professions spelt differently merged into one class each: "
            + "; ".join(f"{max(v, key=v.get)!r} ← {sorted(v)}" for v in merged.values()),
            stacklevel=2,
        )
    canonical = {p: max(v, key=v.get) for v in spellings.values() for p in v}
    profs = [canonical[p] for p in profs]
    if len(set(profs)) < 2:
        raise FairmtError(
            f"Bias-in-Bios {', '.join(map(str, paths))}: one profession only ({profs[0]!r}): nothing to classify"
            if profs
            else f"Bias-in-Bios {paths[0]}: no rows"
        )
    label_names = sorted(set(profs))
    group_names = ["Female", "Male"]
    labels = [label_names.index(p) for p in profs]
    groups = [group_names.index(g) for g in genders]
    full = ClassificationSplit(labels=labels, groups=groups, texts=texts)
    tr, dv, te = stratified_split(labels, fractions, seed, groups)
    return ClassificationData(
        splits={"train": full.subset(tr), "dev": full.subset(dv), "test": full.subset(te)},
        label_names=label_names,
        group_names=group_names,
        source=",".join(str(p) for p in paths),
    )


HATESPEECH_SPLITS = {"train": "train.tsv", "dev": "valid.tsv", "test": "test.tsv"}


HATESPEECH_ATTRIBUTES = ("gender", "age", "ethnicity", "country")


def hatespeech_missing_file(base: Path, language: str) -> str | None:
    """The first split file of the hate-speech folder ``base`` that is missing, as the one-line error the reader
    stops with (``fairmt train --dry-run`` reports the same line); None when all are there."""
    for split, fname in HATESPEECH_SPLITS.items():
        path = Path(base) / fname
        if path.exists():
            continue
        if language == "English" and split == "train":
            return (
                f"{path} not found: the English training split of Huang et al. (2020) is not in their public "
                "repository (xiaoleihuang/Multilingual_Fairness_LREC has English valid/test only; the authors "
                "share it on request, see `fairmt data corpora`); put it there as train.tsv"
            )
        return (
            f"{path} not found: the {language} hate-speech set needs train/valid/test.tsv "
            "(`fairmt data corpora --fetch hatespeech-huang2020` fetches the public files)"
        )
    return None


def read_hatespeech(
    language: str = "Spanish", attribute: str | list[str] = "gender", root: str | Path | None = None
) -> ClassificationData:
    """Huang et al. (2020) multilingual hate speech with author demographics (token ids; raw text was removed).

    Task = ``label`` (0/1), group = ``attribute`` (``gender`` or ``age``, binarised by the authors; rows with ``x``
    are dropped and the count is recorded in ``notes``). ``input_ids`` are the 40 ids of the ``text`` column (0 =
    padding). Several attributes (``["gender", "age"]``) give intersectional groups: a row's group is the combination
    of its values (dropped when any of them is ``x``); the group names are every combination of the values seen in
    any split (``"0|1"``: gender 0, age 1), ``group_attributes`` the attributes.
    """
    attrs = [attribute] if isinstance(attribute, str) else list(attribute)
    if not attrs or len(set(attrs)) != len(attrs):
        raise FairmtError(f"attribute: give one protected attribute or a list of distinct ones, got {attribute!r}")
    for a in attrs:
        if a not in HATESPEECH_ATTRIBUTES:
            raise FairmtError(f"attribute must be gender, age, ethnicity or country, got {a!r}")
    base = Path(root) if root is not None else data_path("hatespeech_huang2020", language)
    if not base.is_dir():
        raise FairmtError(
            f"hate-speech folder {base} not found (languages: English, Italian, Polish, Portuguese, "
            "Spanish): fetch it with `fairmt data corpora --fetch hatespeech-huang2020`"
        )
    splits, notes = {}, []
    seen: set[tuple[str, ...]] = set()
    raw: dict[str, list[tuple[list[int], int, str]]] = {}
    missing = hatespeech_missing_file(base, language)
    if missing:
        raise FairmtError(missing)
    for split, fname in HATESPEECH_SPLITS.items():
        path = base / fname
        rows, dropped = [], 0
        _, reader = csv_dict_rows(
            path, "hate-speech", required=("text", "label"), delimiter="\t", quoting=csv.QUOTE_NONE
        )
        for line, row in reader:
            values = tuple((row.get(a) or "x").strip() for a in attrs)
            if "x" in values:
                dropped += 1
                continue
            try:
                ids = [int(t) for t in row["text"].split()]
                label = int(row["label"])
            except (KeyError, ValueError) as err:
                raise FairmtError(f"{path}:{line}: unreadable text ids or label ({err})") from None
            if label not in (0, 1):
                raise FairmtError(f"{path}:{line}: label must be 0 or 1, got {label}")
            if any("|" in v for v in values):
                raise FairmtError(f"{path}:{line}: a protected-attribute value holds '|' ({values})")
            if any(i < 0 for i in ids):
                raise FairmtError(f"{path}:{line}: negative token id {min(ids)} (ids are ≥ 0; 0 = padding)")
            rows.append((ids, label, values))
            seen.add(values)
        if not rows:
            raise FairmtError(
                f"{path}: no row with a known {' and '.join(attrs)} ({dropped} row(s), every one 'x'): "
                f"the {split} split would be empty; choose another attribute"
            )
        if split == "train" and len({r[1] for r in rows}) < 2:
            raise FairmtError(f"{path}: the training split holds one label only ({rows[0][1]} × {len(rows)})")
        raw[split] = rows
        notes.append(f"{split}: {len(rows)} rows kept, {dropped} dropped with unknown {' or '.join(attrs)}")
    import itertools

    # every combination of the values seen (a combination with no row in a split is an empty group there)
    combos = list(itertools.product(*(sorted({v[i] for v in seen}) for i in range(len(attrs)))))
    group_names = ["|".join(c) for c in combos]
    index = {c: i for i, c in enumerate(combos)}
    for split, rows in raw.items():
        splits[split] = ClassificationSplit(
            labels=[r[1] for r in rows],
            groups=[index[r[2]] for r in rows],
            input_ids=[r[0] for r in rows],
        )
    if len(attrs) > 1:
        notes.append(f"intersectional groups: {' × '.join(attrs)} ({len(group_names)} combinations)")
    return ClassificationData(
        splits=splits,
        label_names=["0", "1"],
        group_names=group_names,
        source=str(base),
        notes=notes,
        group_attributes=attrs if len(attrs) > 1 else None,
    )


def vocab_size(data: ClassificationData) -> int:
    """1 + the largest token id of any split (for an embedding table)."""
    top = 0
    for s in data.splits.values():
        for ids in s.input_ids or []:
            top = max(top, max(ids, default=0))
    return top + 1


def group_balance(split: ClassificationSplit) -> dict[int, int]:
    """Counts per group id."""
    return dict(Counter(split.groups))


def _stack_features(values: list) -> Any:
    """A (B, d) float32 tensor from the rows' fixed feature vectors: numpy rows (a data set in numpy format,
    :func:`with_array_features`) or tensors are stacked as arrays; Python lists (the default format of a
    ``datasets.Dataset``) go through one numpy conversion (``torch.tensor`` on nested lists is ~10× slower)."""
    import torch

    first = values[0]
    if isinstance(first, torch.Tensor):
        return torch.stack(values).float()
    if isinstance(first, np.ndarray):
        return torch.from_numpy(np.stack(values).astype(np.float32, copy=False))
    return torch.from_numpy(np.asarray(values, dtype=np.float32))


def with_array_features(dataset: Any) -> Any:
    """``dataset`` (a ``datasets.Dataset``) with its ``features`` column read as numpy arrays and every other column
    as before: a batch of fixed feature vectors is then one array slice, not ``B × d`` Python floats (on Moji-sized
    rows, 1024 × 2,304, the default format spent ~0.2 s per batch in Arrow → list conversion). Data sets without a
    ``features`` column are returned unchanged."""
    names = getattr(dataset, "column_names", None) or []
    if "features" not in names:
        return dataset
    return dataset.with_format("numpy", columns=["features"], output_all_columns=True)


class ColumnBatch(dict):
    """A batch of rows held as columns (``{column: array of the batch's rows}``), what
    :meth:`FeatureArrays.__getitems__` returns and :class:`ClassificationCollator` turns into tensors without going
    through one dict per row."""


class FeatureArrays:
    """A map-style data set of fixed feature vectors held as in-memory numpy columns (a ``torch`` ``Dataset``): a
    batch is one fancy-index slice per column (``__getitems__`` → :class:`ColumnBatch`), as a plain loop over
    tensors, instead of the Arrow gather → numpy per row → ``np.stack`` of ``datasets.Dataset.__getitems__``
    (~15 ms per batch of 1024 × 2,304 here, a third of the step of Shen et al.'s MLP).

    Built by :meth:`from_dataset` from a ``datasets.Dataset`` whose columns are all numeric (``features`` and the
    label, group and weight columns); the feature matrix is read from the Arrow buffers without a copy where they
    allow it (one chunk, no nulls, no row selection)."""

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        import warnings

        import torch

        lengths = {len(v) for v in columns.values()}
        if len(lengths) != 1:
            raise FairmtError(f"FeatureArrays columns differ in length: { {k: len(v) for k, v in columns.items()} }")
        self.n = lengths.pop()
        # held as tensors sharing the arrays' memory (read-only Arrow buffers: torch warns once here; a batch is
        # a copy made by index_select, or a view of a contiguous range, which nothing writes to)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.columns = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in columns.items()}

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, str):
            return self.columns[i]
        return {k: v[i] for k, v in self.columns.items()}

    def __getitems__(self, index: list[int]) -> ColumnBatch:
        import torch

        idx = torch.as_tensor(index, dtype=torch.long)
        start = int(idx[0]) if len(idx) else 0
        if len(idx) and bool((idx == torch.arange(start, start + len(idx))).all()):  # the eval loaders' ranges
            return ColumnBatch({k: v[start : start + len(idx)] for k, v in self.columns.items()})
        return ColumnBatch({k: v.index_select(0, idx) for k, v in self.columns.items()})

    @classmethod
    def from_dataset(cls, dataset: Any, allowed: set[str] | None = None) -> FeatureArrays | None:
        """The columns of ``dataset`` (a ``datasets.Dataset`` with a ``features`` column) as arrays, or None when it is
        not one, has a column outside ``allowed``, or a column that is not a number or an equal-length vector of
        numbers per row (text, token ids: those keep the row path)."""
        table = getattr(getattr(dataset, "data", None), "table", None)
        names = list(getattr(dataset, "column_names", None) or [])
        if table is None or "features" not in names or (allowed is not None and not set(names) <= allowed):
            return None
        fmt = getattr(dataset, "format", None) or {}
        if fmt.get("type") not in (None, "numpy", "torch", "python") or (
            fmt.get("columns") is not None and not fmt.get("output_all_columns") and set(fmt["columns"]) != set(names)
        ):
            return None  # a transform (set_transform) or hidden columns: the rows are not the table's
        columns = {}
        for name in names:
            arr = _arrow_column(table.column(name))
            if arr is None:
                return None
            columns[name] = arr
        indices = getattr(dataset, "_indices", None)
        if indices is not None:  # a .select()/.shuffle() view: its rows, in its order
            rows = indices.column(0).to_numpy()
            columns = {k: v[rows] for k, v in columns.items()}
        return cls(columns)


def _arrow_column(chunked: Any) -> np.ndarray | None:
    """A numeric Arrow column as a numpy array (a list column of equal-length rows as a 2-d one), None otherwise."""
    import pyarrow as pa

    parts = []
    for chunk in chunked.chunks:
        if chunk.null_count:
            return None
        t = chunk.type
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            n = len(chunk)
            if not pa.types.is_fixed_size_list(t):
                offsets = np.asarray(chunk.offsets)
                widths = np.diff(offsets)
                if n and (widths != widths[0]).any():
                    return None
                width = int(widths[0]) if n else 0
            else:
                width = t.list_size
            values = chunk.flatten()
            if values.null_count or not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
                return None
            parts.append(values.to_numpy(zero_copy_only=False).reshape(n, width))
        elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
            parts.append(chunk.to_numpy(zero_copy_only=False))
        else:
            return None
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class ClassificationCollator:
    """Batch rows for the fair-classification Trainers.

    Rows hold ``labels`` (int), the group column (int), and one of: ``text`` (tokenized here with ``tokenizer``),
    ``input_ids`` (padded with ``pad_id``; an ``attention_mask`` marks non-pad ids), or ``features`` (a fixed
    vector). An optional ``text_view`` (an augmented copy: CLM insert/substitute, back-translation) becomes
    ``view_input_ids``/``view_attention_mask``; an optional ``text_views`` (a list of copies, e.g. EDA's four) gives
    one of them, drawn uniformly at random for each example every time it is batched (``seed`` seeds the draws), as
    the CSCL release's collator. An ``instance_weight`` column (balanced training, :mod:`fairmt.data.balanced`) becomes
    a float tensor the Trainers weight their CE with. Other columns are dropped.
    """

    def __init__(
        self,
        tokenizer: Any = None,
        max_length: int = 128,
        group_column: str = "group",
        pad_id: int = 0,
        text_column: str = "text",
        view_column: str = "text_view",
        views_column: str = "text_views",
        seed: int = 0,
    ) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.group_column = group_column
        self.pad_id = pad_id
        self.text_column = text_column
        self.view_column = view_column
        self.views_column = views_column
        import random

        self.rng = random.Random(seed)

    def _tokenize(self, texts: list[str]) -> dict[str, Any]:
        if self.tokenizer is None:
            raise FairmtError("rows hold raw text but the collator has no tokenizer")
        return dict(
            self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        )

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        if not rows:
            raise FairmtError("empty batch")
        if isinstance(rows, ColumnBatch):  # a FeatureArrays batch: one conversion per column
            return self._collate_columns(rows)
        batch: dict[str, Any] = {}
        first = rows[0]
        if "features" in first:
            batch["features"] = _stack_features([r["features"] for r in rows])
        elif self.text_column in first:
            batch.update(self._tokenize([r[self.text_column] for r in rows]))
        elif "input_ids" in first:
            width = max(len(r["input_ids"]) for r in rows)
            ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
            for i, r in enumerate(rows):
                ids[i, : len(r["input_ids"])] = torch.as_tensor(r["input_ids"], dtype=torch.long)
            batch["input_ids"] = ids
            batch["attention_mask"] = (ids != self.pad_id).long()
        else:
            raise FairmtError(f"rows need 'features', '{self.text_column}' or 'input_ids'; got keys {sorted(first)}")
        if self.view_column in first:
            view = self._tokenize([r[self.view_column] for r in rows])
            batch.update({f"view_{k}": v for k, v in view.items()})
        elif self.views_column in first:
            picks = []
            for r in rows:
                copies = r[self.views_column]
                if not copies:
                    raise FairmtError(
                        f"a row has an empty {self.views_column!r} list: give every row its augmented copies"
                    )
                picks.append(copies[self.rng.randrange(len(copies))])
            view = self._tokenize(picks)
            batch.update({f"view_{k}": v for k, v in view.items()})
        if "labels" in first:
            batch["labels"] = torch.tensor([int(r["labels"]) for r in rows], dtype=torch.long)
        if self.group_column in first:
            batch[self.group_column] = torch.tensor([int(r[self.group_column]) for r in rows], dtype=torch.long)
        if "instance_weight" in first:  # balanced training by reweighting (fairmt.data.balanced)
            batch["instance_weight"] = torch.tensor([float(r["instance_weight"]) for r in rows], dtype=torch.float32)
        return batch

    def _collate_columns(self, cols: ColumnBatch) -> dict[str, Any]:
        import torch

        batch: dict[str, Any] = {"features": torch.as_tensor(cols["features"], dtype=torch.float32)}
        if "labels" in cols:
            batch["labels"] = torch.as_tensor(cols["labels"], dtype=torch.long)
        if self.group_column in cols:
            batch[self.group_column] = torch.as_tensor(cols[self.group_column], dtype=torch.long)
        if "instance_weight" in cols:
            batch["instance_weight"] = torch.as_tensor(cols["instance_weight"], dtype=torch.float32)
        return batch

    def columns(self) -> set[str]:
        """The columns a :class:`FeatureArrays` batch may hold for this collator (the others need the row path)."""
        return {"features", "labels", self.group_column, "instance_weight"}
