"""The fair-classification papers' datasets, each with its published split (listed by ``fairmt data corpora``).

======================  ============================================  ==========================================
loader                  what, split                                   paper
======================  ============================================  ==========================================
:func:`read_bios_split`  Bias-in-Bios, 28 professions × binary gender  CSCL (255,710 / 39,369 / 98,344, the split of
                        (Ravfogel et al. 2020's pickles, the CSCL      Ravfogel et al. 2020); Shen et al. (257K / 40K /
                        release's parquet files, JSONL, or the Hub     99K, their own scrape ≈ the Hub copy
                        copy ``LabHC/bias_in_bios``: 257,478 /         LabHC/bias_in_bios)
                        39,642 / 99,069)
:func:`read_jigsaw`      Jigsaw / Civil Comments, WILDS split, race:    CSCL (25,954 / 4,390 / 12,562), toxicity ≥ 0.5
                        black vs non-black
:func:`read_moji`        Moji: DeepMoji-encoded tweets, sentiment ×     Shen et al. (100k / 8k / 8k), fairlib's split
                        dialect (AAE / SAE), 2304-d fixed features
``read_hatespeech``      Huang et al. 2020 hate speech (token ids),     Shen et al. (English, age; ~31K / 7K / 7K)
(:mod:`fairmt.data.      English: the public repository has valid and
classification`)         test only
======================  ============================================  ==========================================

Every loader reads local files under the data root (``FAIRMT_DATA`` or the cache; ``root=`` overrides) and, when they
are absent, fails with one line naming the data and the command that fetches it (``fairmt data corpora --fetch
NAME``); the Hub copy of Bias-in-Bios goes through ``datasets.load_dataset`` (offline: the same one-line error). Each
result's ``notes`` compares the split sizes read with the published ones.
"""

from __future__ import annotations

import io
import math
import pickle
import tarfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.data.classification import ClassificationData, ClassificationSplit
from fairmt.data.paths import data_root
from fairmt.errors import FairmtError

BIOS_PROFESSIONS = (
    "accountant",
    "architect",
    "attorney",
    "chiropractor",
    "comedian",
    "composer",
    "dentist",
    "dietitian",
    "dj",
    "filmmaker",
    "interior_designer",
    "journalist",
    "model",
    "nurse",
    "painter",
    "paralegal",
    "pastor",
    "personal_trainer",
    "photographer",
    "physician",
    "poet",
    "professor",
    "psychologist",
    "rapper",
    "software_engineer",
    "surgeon",
    "teacher",
    "yoga_teacher",
)
GENDERS = ("Female", "Male")

PUBLISHED_SPLITS: dict[str, tuple[int, int, int]] = {
    "bios-ravfogel": (255_710, 39_369, 98_344),  # CSCL Table 2 (Ravfogel et al. 2020's split)
    "bios-hub": (257_478, 39_642, 99_069),  # LabHC/bias_in_bios on the Hub (dataset card)
    "jigsaw-race": (25_954, 4_390, 12_562),  # CSCL Table 1
    "moji": (100_000, 8_000, 8_000),  # Shen et al. (fairlib's own code gives 99,998 training rows)
}
RACE_COLUMNS = ("asian", "black", "latino", "other_race_or_ethnicity", "white")
MOJI_FILES = ("pos_pos", "pos_neg", "neg_pos", "neg_neg")  # sentiment (happy = pos) _ dialect (AAE = pos)


def _missing(what: str, where: Path, fetch: str) -> FairmtError:
    return FairmtError(
        f"{what} not found under {where}: fetch it with `{fetch}` (or point FAIRMT_DATA / root= at a "
        "folder that holds it)"
    )


def _note_sizes(data: ClassificationData, key: str) -> None:
    got = tuple(len(data.splits[s]) for s in ("train", "dev", "test"))
    want = PUBLISHED_SPLITS[key]
    same = "matches" if got == want else "differs from"
    data.notes.append(
        f"split sizes {got[0]:,} / {got[1]:,} / {got[2]:,} {same} the published "
        f"{want[0]:,} / {want[1]:,} / {want[2]:,} ({key})"
    )


# ---------------------------------------------------------------------------------------------- Bias-in-Bios
class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain containers and scalars only: a pickle that names any class or function is refused (loading
    a pickle otherwise runs whatever code it names)."""

    def find_class(self, module: str, name: str):
        raise FairmtError(
            f"the pickle refers to {module}.{name}: only plain lists/dicts/strings/numbers are read "
            "(convert the file to JSONL with the fields hard_text, p, g)"
        )


def _read_pickle_rows(path: Path) -> list[dict]:
    with path.open("rb") as fh:
        try:
            rows = _PlainUnpickler(fh).load()
        except (pickle.UnpicklingError, EOFError, ValueError, IndexError, UnicodeDecodeError) as err:
            if isinstance(err, FairmtError):
                raise
            raise FairmtError(
                f"{path}: not a complete pickle ({type(err).__name__}: {err}); the file is cut or "
                "is not a pickle: fetch it again"
            ) from None
    if isinstance(rows, dict) and all(isinstance(v, list) for v in rows.values()):  # columns → rows
        keys = list(rows)
        rows = [dict(zip(keys, vals)) for vals in zip(*rows.values())]
    if not isinstance(rows, list) or (rows and not isinstance(rows[0], dict)):
        raise FairmtError(f"{path}: expected a list of dicts (Ravfogel et al.'s biography pickles)")
    return rows


def _read_table_rows(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        from fairmt.data.jsonl import iter_jsonl

        return [obj for _, obj in iter_jsonl(path, what="Bias-in-Bios")]
    return _read_parquet(path).to_pylist()


def _read_parquet(path: Path, columns: list[str] | None = None):
    """A parquet file as a pyarrow table; a file that is not one, or lacks a column, is one line naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        if columns is not None:
            missing = [c for c in columns if c not in schema.names]
            if missing:
                raise FairmtError(f"{path}: lacks column(s) {missing} (it has {schema.names[:12]})")
        return pq.read_table(path, columns=columns)
    except (pa.ArrowException, OSError) as err:
        raise FairmtError(
            f"{path}: not a readable parquet file ({type(err).__name__}: {str(err)[:120]}); the "
            "download is cut or corrupt: fetch it again"
        ) from None


def _number(value: Any, where: str, what: str) -> float:
    """A finite number read from a data file, or one line naming the file, the row and what is wrong."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise FairmtError(f"{where}: {what} is {value!r}, not a number") from None
    if not math.isfinite(x):
        raise FairmtError(
            f"{where}: {what} is {value!r}, not a finite number (a missing value: drop the row or fill it)"
        )
    return x


def _check_labels(data: ClassificationData) -> None:
    """Every split of ``data`` holds rows, and the training split at least two labels (one label trains nothing)."""
    empty = [s for s, split in data.splits.items() if not len(split)]
    if empty:
        raise FairmtError(f"{data.source}: the {'/'.join(empty)} split(s) hold no row")
    train = data.splits.get("train")
    if train is not None and len(train) and len(set(train.labels)) < 2:
        raise FairmtError(
            f"{data.source}: the training split holds one label only "
            f"({data.label_names[train.labels[0]]!r} × {len(train):,}): nothing to classify"
        )


def _bios_rows_to_split(rows: list[dict], where: str) -> ClassificationSplit:
    texts, labels, groups = [], [], []
    variants: dict[str, set[str]] = {}
    for i, r in enumerate(rows):
        text = r.get("hard_text_untokenized", r.get("hard_text"))
        prof = r.get("p", r.get("profession"))
        gender = r.get("g", r.get("gender"))
        if text is None or prof is None or gender is None:
            raise FairmtError(
                f"{where}: row {i} lacks a text (hard_text), profession (p) or gender (g) field; it has "
                f"{sorted(r)[:12]}"
            )
        if isinstance(prof, (int, np.integer)) and not isinstance(prof, bool):
            if not 0 <= int(prof) < len(BIOS_PROFESSIONS):
                raise FairmtError(f"{where}: row {i} has profession id {prof}, outside [0, 28)")
            label = int(prof)
        elif str(prof) in BIOS_PROFESSIONS:
            label = BIOS_PROFESSIONS.index(str(prof))
        elif not str(prof).strip():
            raise FairmtError(f"{where}: row {i} has a blank profession {prof!r}")
        elif "_".join(str(prof).strip().lower().split()) in BIOS_PROFESSIONS:  # 'Nurse', 'nurse ', 'Yoga Teacher'
            key = "_".join(str(prof).strip().lower().split())
            variants.setdefault(key, set()).add(str(prof))
            label = BIOS_PROFESSIONS.index(key)
        else:
            raise FairmtError(f"{where}: row {i} has the unknown profession {prof!r}")
        g = str(gender).strip().lower()
        if g in ("f", "female", "1"):  # LabHC/bias_in_bios: 0 = male, 1 = female
            group = 0
        elif g in ("m", "male", "0"):
            group = 1
        else:
            raise FairmtError(f"{where}: row {i} has the gender {gender!r} (expected m/f, Male/Female or 0/1)")
        texts.append(str(text))
        labels.append(label)
        groups.append(group)
    if variants:
        listed = "; ".join(f"{k} ← {sorted(v)}" for k, v in sorted(variants.items()))
        warnings.warn(f"{where}: professions spelt differently merged into one class each: {listed}", stacklevel=3)
    return ClassificationSplit(labels=labels, groups=groups, texts=texts)


BIOS_LAYOUTS = {
    "pickle": {"train": "train.pickle", "dev": "dev.pickle", "test": "test.pickle"},  # Ravfogel et al.
    "jsonl": {"train": "train.jsonl", "dev": "dev.jsonl", "test": "test.jsonl"},
    "cscl": {"train": "biasbios_train.pq", "dev": "biasbios_val.pq", "test": "biasbios_test.pq"},  # CSCL release
}


def read_bios_split(
    root: str | Path | None = None, source: str = "local", max_rows: int | None = None
) -> ClassificationData:
    """Bias-in-Bios with its published train/dev/test split: task = profession (28), group = gender.

    ``source="local"`` reads ``root`` (default ``<data root>/bias_in_bios``) holding one of: Ravfogel et al.'s
    ``{train,dev,test}.pickle`` (the 255,710 / 39,369 / 98,344 split CSCL uses; plain data only, see
    :class:`_PlainUnpickler`), the CSCL release's ``biasbios_{train,val,test}.pq``, or ``{train,dev,test}.jsonl``
    with the fields ``hard_text`` (or ``hard_text_untokenized``), ``p`` (or ``profession``) and ``g`` (or
    ``gender``). ``source="hub"`` loads ``LabHC/bias_in_bios`` with ``datasets`` (257,478 / 39,642 / 99,069 — Ravfogel
    et al.'s version as re-released there, closer to Shen et al.'s 257K / 40K / 99K than to CSCL's counts).
    ``max_rows`` keeps the first rows of each split (quick runs).
    """
    if source == "hub":
        return _bios_from_hub(max_rows)
    if source != "local":
        raise FairmtError(f"data.source must be local or hub for Bias-in-Bios, got {source!r}")
    base = Path(root) if root is not None else data_root() / "bias_in_bios"
    layout = next(
        (name for name, files in BIOS_LAYOUTS.items() if all((base / f).is_file() for f in files.values())), None
    )
    if layout is None:
        raise _missing(
            "Bias-in-Bios (train/dev/test.pickle of Ravfogel et al. 2020, biasbios_*.pq of the CSCL "
            "release, or train/dev/test.jsonl)",
            base,
            "fairmt data corpora --fetch bios-ravfogel",
        )
    splits = {}
    for split, fname in BIOS_LAYOUTS[layout].items():
        path = base / fname
        rows = _read_pickle_rows(path) if layout == "pickle" else _read_table_rows(path)
        splits[split] = _bios_rows_to_split(rows[:max_rows] if max_rows else rows, str(path))
    data = ClassificationData(
        splits=splits, label_names=list(BIOS_PROFESSIONS), group_names=list(GENDERS), source=f"{base} ({layout})"
    )
    _note_sizes(data, "bios-ravfogel")
    _check_labels(data)
    return data


def _bios_from_hub(max_rows: int | None) -> ClassificationData:
    try:
        import datasets

        ds = datasets.load_dataset("LabHC/bias_in_bios")
    except Exception as err:  # noqa: BLE001 - offline, missing, renamed: one line either way
        raise FairmtError(
            f"Bias-in-Bios from the Hub (LabHC/bias_in_bios) is not available here ({type(err).__name__}): run with "
            "network access once so that datasets caches it, or use data.source: local with `fairmt data corpora "
            "--fetch bios-ravfogel`"
        ) from None
    splits = {}
    for split in ("train", "dev", "test"):
        part = ds[split]
        rows = part.select(range(min(max_rows, len(part)))) if max_rows else part
        splits[split] = _bios_rows_to_split(list(rows), f"LabHC/bias_in_bios:{split}")
    data = ClassificationData(
        splits=splits,
        label_names=list(BIOS_PROFESSIONS),
        group_names=list(GENDERS),
        source="hf://datasets/LabHC/bias_in_bios",
    )
    _note_sizes(data, "bios-hub")
    return data


# ------------------------------------------------------------------------------------ Jigsaw / Civil Comments
JIGSAW_CSCL_FILES = {"train": "jigsaw_race_train.pq", "dev": "jigsaw_race_val.pq", "test": "jigsaw_race_test.pq"}
WILDS_CSV = "all_data_with_identities.csv"


def _wilds_csv(base: Path):
    """The WILDS CSV as a text stream: the file itself, or the member of the WILDS archive (a tar.gz) in ``base``."""
    if (base / WILDS_CSV).is_file():
        return (base / WILDS_CSV).open(encoding="utf-8", newline="")
    for archive in sorted(base.glob("*.tar.gz")) + sorted(base.glob("*.tgz")):
        tar = tarfile.open(archive)
        member = next((m for m in tar.getmembers() if m.isfile() and m.name.endswith(WILDS_CSV)), None)
        if member is not None:
            return io.TextIOWrapper(tar.extractfile(member), encoding="utf-8", newline="")
    return None


def read_jigsaw(
    root: str | Path | None = None, threshold: float = 0.5, max_rows: int | None = None
) -> ClassificationData:
    """Jigsaw toxicity (Civil Comments) with the WILDS split, race as the protected attribute (CSCL, App. B.1).

    ``root`` (default ``<data root>/civilcomments``) holds either the CSCL release's ``jigsaw_race_{train,val,test}.pq``
    (columns ``comment_text``, ``black`` 0/1, ``toxicity``) — the exact files behind CSCL's 25,954 / 4,390 / 12,562 —
    or WILDS's ``all_data_with_identities.csv`` (or the WILDS archive that holds it), from which the rows whose
    comment mentions a race or ethnicity (any of ``asian, black, latino, other_race_or_ethnicity, white`` ≥
    ``threshold``, WILDS's binarisation) are kept, in WILDS's ``split`` column (train / val / test). Label: toxicity
    ≥ 0.5 (toxic = 1); group: black ≥ ``threshold`` (black = 1) vs non-black. ``notes`` compares the counts with
    CSCL's.
    """
    base = Path(root) if root is not None else data_root() / "civilcomments"
    if all((base / f).is_file() for f in JIGSAW_CSCL_FILES.values()):
        splits = {}
        for split, fname in JIGSAW_CSCL_FILES.items():
            rows = _read_parquet(base / fname, columns=["comment_text", "black", "toxicity"]).to_pylist()
            rows = rows[:max_rows] if max_rows else rows
            where = [f"{base / fname}: row {i}" for i in range(len(rows))]
            splits[split] = ClassificationSplit(
                labels=[int(_number(r["toxicity"], w, "toxicity") >= 0.5) for w, r in zip(where, rows)],
                groups=[int(_number(r["black"], w, "black") >= threshold) for w, r in zip(where, rows)],
                texts=[str(r["comment_text"]) for r in rows],
            )
        source = f"{base} (CSCL release)"
    else:
        stream = _wilds_csv(base)
        if stream is None:
            raise _missing(
                "Civil Comments (WILDS all_data_with_identities.csv, or the CSCL release's jigsaw_race_*.pq)",
                base,
                "fairmt data corpora --fetch civilcomments-wilds",
            )
        import csv

        names = {"train": "train", "val": "dev", "test": "test"}
        cols: dict[str, dict[str, list]] = {s: {"labels": [], "groups": [], "texts": []} for s in names.values()}
        with stream:
            reader = csv.DictReader(stream)
            need = {"comment_text", "split", "toxicity", *RACE_COLUMNS}
            missing = sorted(need - set(reader.fieldnames or []))
            if missing:
                raise FairmtError(f"{base / WILDS_CSV}: lacks column(s) {missing} of WILDS's civilcomments_v1.0")
            other_splits: dict[str, int] = {}
            for line, row in enumerate(reader, start=2):
                split = names.get(row["split"])
                if split is None:
                    other_splits[row["split"]] = other_splits.get(row["split"], 0) + 1
                    continue
                where = f"{base / WILDS_CSV}:{line}"
                race = {c: _number(row[c] or 0.0, where, c) for c in RACE_COLUMNS}
                tox = _number(row["toxicity"], where, "toxicity")
                if max(race.values()) < threshold:
                    continue
                part = cols[split]
                if max_rows and len(part["labels"]) >= max_rows:
                    continue
                part["labels"].append(int(tox >= 0.5))
                part["groups"].append(int(race["black"] >= threshold))
                part["texts"].append(row["comment_text"])
        splits = {s: ClassificationSplit(**c) for s, c in cols.items()}
        empty = [s for s, c in cols.items() if not c["labels"]]
        if empty and other_splits:
            raise FairmtError(
                f"{base / WILDS_CSV}: no row of split {'/'.join(empty)}; its split column holds "
                f"{dict(sorted(other_splits.items()))} besides train/val/test (WILDS's names: train, "
                "val, test)"
            )
        source = f"{base} (WILDS)"
    data = ClassificationData(
        splits=splits, label_names=["non-toxic", "toxic"], group_names=["non-black", "black"], source=source
    )
    _note_sizes(data, "jigsaw-race")
    _check_labels(data)
    return data


# ------------------------------------------------------------------------------------------------------ Moji
def read_moji(
    root: str | Path | None = None,
    split_sizes: tuple[int, int, int] = (40_000, 2_000, 2_000),
    n_train: int = 100_000,
    train_ratio: float = 0.8,
) -> ClassificationData:
    """Moji (Blodgett et al. 2016 tweets; DeepMoji encodings of Ravfogel et al. 2020) as fairlib prepares it.

    ``root`` (default ``<data root>/moji``) holds the four raw files ``{pos_pos,pos_neg,neg_pos,neg_neg}.npy``
    (sentiment happy/sad × dialect AAE/SAE, one 2304-d DeepMoji vector per row), or fairlib's prepared
    ``{train,dev,test}/<file>.npy``. From raw files, each file is shuffled with ``numpy.random.seed(2020)`` and cut
    into ``split_sizes`` (40,000 / 2,000 / 2,000), as fairlib's ``Moji.data_splits``. The training set then keeps the
    first ``n_train·½·ratio`` rows of happy-AAE and sad-SAE and ``n_train·½·(1−ratio)`` of happy-SAE and sad-AAE
    (``train_ratio`` 0.8: 40/10/10/40 %: 99,998 rows, since ``int(100000·0.5·0.2)`` truncates 9,999.99… to 9,999 in
    fairlib as here — the paper says 100k); dev and test are balanced (ratio 0.5, 2,000 per cell: 8,000).
    Label: happy = 1; group: AAE = 1.
    """
    base = Path(root) if root is not None else data_root() / "moji"
    raw = all((base / f"{f}.npy").is_file() for f in MOJI_FILES)
    prepared = all((base / s / f"{f}.npy").is_file() for s in ("train", "dev", "test") for f in MOJI_FILES)
    if not raw and not prepared:
        raise _missing(
            "Moji (pos_pos/pos_neg/neg_pos/neg_neg.npy, DeepMoji encodings)", base, "fairmt data corpora --fetch moji"
        )
    parts: dict[str, dict[str, np.ndarray]] = {s: {} for s in ("train", "dev", "test")}
    for f in MOJI_FILES:
        if prepared:
            for s in parts:
                parts[s][f] = _load_features(base / s / f"{f}.npy")
            continue
        vecs = _load_features(base / f"{f}.npy")
        a, b, c = split_sizes
        if len(vecs) < a + b + c:
            raise FairmtError(f"{base / f}.npy holds {len(vecs)} rows, fewer than the {a + b + c} of the split")
        # fairlib: seed_everything(2020), then np.random.shuffle, for each file: the same draws as a RandomState(2020)
        np.random.RandomState(2020).shuffle(vecs)
        parts["train"][f], parts["dev"][f], parts["test"][f] = vecs[:a], vecs[a : a + b], vecs[a + b : a + b + c]
    splits = {}
    for s, files in parts.items():
        ratio = train_ratio if s == "train" else 0.5
        n = n_train if s == "train" else 100_000  # fairlib's target size; dev/test files are smaller: all is kept
        counts = {
            "pos_pos": int(n * 0.5 * ratio),
            "pos_neg": int(n * 0.5 * (1 - ratio)),
            "neg_pos": int(n * 0.5 * (1 - ratio)),
            "neg_neg": int(n * 0.5 * ratio),
        }
        feats, labels, groups = [], [], []
        for f in MOJI_FILES:
            rows = files[f][: counts[f]]
            feats.append(rows.astype(np.float32))
            labels += [int(f.startswith("pos"))] * len(rows)
            groups += [int(f.endswith("_pos"))] * len(rows)
        widths = {f: files[f].shape[1] for f in MOJI_FILES}
        if len(set(widths.values())) > 1:
            raise FairmtError(f"{base}: the Moji {s} files have features of different widths {widths} (DeepMoji: 2304)")
        splits[s] = ClassificationSplit(labels=labels, groups=groups, features=np.concatenate(feats))
    data = ClassificationData(
        splits=splits,
        label_names=["sad", "happy"],
        group_names=["SAE", "AAE"],
        source=f"{base} ({'raw' if raw else 'fairlib-prepared'})",
    )
    _note_sizes(data, "moji")
    _check_labels(data)
    return data


def _load_features(path: Path) -> np.ndarray:
    """A 2-D float ``.npy`` of finite features, or one line naming the file (and the first bad row)."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise FairmtError(
            f"{path}: not a complete numeric .npy file ({str(err)[:120]}); a half-written or pickled "
            "array: fetch it again"
        ) from None
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.number):
        raise FairmtError(
            f"{path}: expected a 2-D array of numbers (rows × features), got shape {arr.shape} of {arr.dtype}"
        )
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise FairmtError(
            f"{path}: row {int(np.argmax(bad))} holds a non-finite feature (NaN or infinite; "
            f"{int(bad.sum())} row(s) in all)"
        )
    return arr


__all__ = [
    "BIOS_PROFESSIONS",
    "PUBLISHED_SPLITS",
    "read_bios_split",
    "read_jigsaw",
    "read_moji",
]
