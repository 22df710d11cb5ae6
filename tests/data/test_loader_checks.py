"""Issue 45: the papers' data loaders check the data they read (not only that the files exist): each problem is one
FairmtError naming the file, the row and what is wrong. Every fixture is a small corrupt copy built in tmp_path."""

from __future__ import annotations

import csv
import pickle
import warnings

import numpy as np
import pytest

from fairmt.data import classification as cl
from fairmt.data import fair_datasets as fd
from fairmt.errors import FairmtError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


# ------------------------------------------------------------------------------------------------ Jigsaw
def _jigsaw_pq(root, rows_by_split=None, drop=None):
    rows_by_split = rows_by_split or {}
    for split, fname in fd.JIGSAW_CSCL_FILES.items():
        rows = rows_by_split.get(
            split, [{"comment_text": f"c{i}", "black": float(i % 2), "toxicity": 0.9 * (i % 3 == 0)} for i in range(6)]
        )
        table = pa.Table.from_pylist(rows)
        if drop:
            table = table.drop_columns([drop])
        pq.write_table(table, root / fname)


def test_jigsaw_clean_fixture_reads(tmp_path):
    _jigsaw_pq(tmp_path)
    data = fd.read_jigsaw(tmp_path)
    assert data.splits["train"].labels == [1, 0, 0, 1, 0, 0] and data.splits["dev"].groups == [0, 1, 0, 1, 0, 1]


@pytest.mark.parametrize(
    "tox, what", [(float("nan"), "not a finite number"), (None, "not a number"), (float("inf"), "not a finite number")]
)
def test_jigsaw_parquet_toxicity_missing_is_refused_not_non_toxic(tmp_path, tox, what):
    rows = [
        {"comment_text": "a", "black": 1.0, "toxicity": 0.9},
        {"comment_text": "b", "black": 0.0, "toxicity": tox},
        {"comment_text": "c", "black": 0.0, "toxicity": 0.1},
    ]
    _jigsaw_pq(tmp_path, {"train": rows})
    with pytest.raises(FairmtError, match=r"jigsaw_race_train\.pq: row 1: toxicity is .*" + what):
        fd.read_jigsaw(tmp_path)


def test_jigsaw_missing_black_column_and_random_bytes(tmp_path):
    _jigsaw_pq(tmp_path, drop="black")
    with pytest.raises(FairmtError, match=r"jigsaw_race_train\.pq: lacks column\(s\) \['black'\]"):
        fd.read_jigsaw(tmp_path)
    (tmp_path / "jigsaw_race_val.pq").write_bytes(np.random.default_rng(0).bytes(3000))
    _jigsaw_pq(tmp_path)
    (tmp_path / "jigsaw_race_val.pq").write_bytes(np.random.default_rng(0).bytes(3000))
    with pytest.raises(FairmtError, match=r"jigsaw_race_val\.pq: not a readable parquet file"):
        fd.read_jigsaw(tmp_path)


def test_jigsaw_one_label_in_training_is_refused(tmp_path):
    _jigsaw_pq(tmp_path, {"train": [{"comment_text": "a", "black": 1.0, "toxicity": 0.0}] * 4})
    with pytest.raises(FairmtError, match="training split holds one label only"):
        fd.read_jigsaw(tmp_path)


def _wilds(root, rows):
    cols = ["comment_text", "split", "toxicity", *fd.RACE_COLUMNS]
    with (root / fd.WILDS_CSV).open("w", newline="") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, 0.0) for c in cols})


def test_wilds_csv_nan_toxicity_and_validation_split_name(tmp_path):
    ok = [
        {"comment_text": f"t{i}", "split": s, "toxicity": 0.8 * (i % 2), "black": 1.0}
        for s in ("train", "val", "test")
        for i in range(4)
    ]
    _wilds(tmp_path, ok[:1] + [{"comment_text": "x", "split": "train", "toxicity": "nan", "black": 1.0}] + ok[1:])
    with pytest.raises(FairmtError, match=r"all_data_with_identities\.csv:3: toxicity is 'nan', not a finite"):
        fd.read_jigsaw(tmp_path)
    _wilds(tmp_path, [{**r, "split": "validation" if r["split"] == "val" else r["split"]} for r in ok])
    with pytest.raises(FairmtError, match=r"no row of split dev; its split column holds \{'validation': 4\}"):
        fd.read_jigsaw(tmp_path)
    _wilds(tmp_path, ok)
    assert len(fd.read_jigsaw(tmp_path).splits["dev"]) == 4


# ------------------------------------------------------------------------------------------------ Bias-in-Bios
def _bios_jsonl(root, train):
    import json

    good = [{"hard_text": f"b{i}", "p": "nurse" if i % 2 else "surgeon", "g": "f" if i % 3 else "m"} for i in range(4)]
    for split, rows in (("train", train), ("dev", good), ("test", good)):
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_bios_blank_profession_and_spelling_variants(tmp_path):
    _bios_jsonl(tmp_path, [{"hard_text": "a", "p": "  ", "g": "f"}])
    with pytest.raises(FairmtError, match=r"train\.jsonl: row 0 has a blank profession"):
        fd.read_bios_split(tmp_path)
    _bios_jsonl(
        tmp_path,
        [
            {"hard_text": "a", "p": "Nurse", "g": "f"},
            {"hard_text": "b", "p": "nurse ", "g": "m"},
            {"hard_text": "c", "p": "surgeon", "g": "m"},
        ],
    )
    with pytest.warns(UserWarning, match=r"nurse ← \['Nurse', 'nurse '\]"):
        data = fd.read_bios_split(tmp_path)
    nurse = fd.BIOS_PROFESSIONS.index("nurse")
    assert data.splits["train"].labels[:2] == [nurse, nurse]


def test_bios_one_label_training_and_cut_pickle(tmp_path):
    _bios_jsonl(tmp_path, [{"hard_text": "a", "p": "nurse", "g": "f"}] * 3)
    with pytest.raises(FairmtError, match=r"training split holds one label only \('nurse' × 3\)"):
        fd.read_bios_split(tmp_path)
    rows = [{"hard_text": "a", "p": "nurse", "g": "f"}, {"hard_text": "b", "p": "surgeon", "g": "m"}]
    blob = pickle.dumps(rows)
    for split in ("train", "dev", "test"):
        (tmp_path / f"{split}.pickle").write_bytes(blob)
    (tmp_path / "dev.pickle").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(FairmtError, match=r"dev\.pickle: not a complete pickle"):
        fd.read_bios_split(tmp_path)


def test_bios_csv_reader_blank_and_case_variants(tmp_path):
    path = tmp_path / "bios.csv"
    rows = [("x", "nurse", "Female"), ("y", "Nurse", "Male"), ("z", "surgeon", "Male")] * 4
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["hard_text", "profession", "gender"])
        w.writerows(rows)
    with pytest.warns(UserWarning, match=r"'nurse' ← \['Nurse', 'nurse'\]"):
        data = cl.read_bios([path])
    assert data.label_names == ["nurse", "surgeon"]
    with path.open("a", newline="") as fh:
        csv.writer(fh).writerow(["w", " ", "Male"])
    with pytest.raises(FairmtError, match=r"bios\.csv:14: blank profession"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cl.read_bios([path])


# ------------------------------------------------------------------------------------------------ Moji
def _moji(root, width=4, n=8):
    rng = np.random.default_rng(0)
    for s in ("train", "dev", "test"):
        (root / s).mkdir(exist_ok=True)
        for f in fd.MOJI_FILES:
            np.save(root / s / f"{f}.npy", rng.normal(size=(n, width)).astype(np.float32))


def test_moji_clean_then_each_corruption(tmp_path):
    _moji(tmp_path)
    assert fd.read_moji(tmp_path).splits["test"].features.shape == (32, 4)
    arr = np.load(tmp_path / "test" / "pos_neg.npy")
    arr[5, 2] = np.inf
    np.save(tmp_path / "test" / "pos_neg.npy", arr)
    with pytest.raises(FairmtError, match=r"test/pos_neg\.npy: row 5 holds a non-finite feature"):
        fd.read_moji(tmp_path)
    np.save(tmp_path / "test" / "pos_neg.npy", np.zeros((8, 3), np.float32))
    with pytest.raises(FairmtError, match=r"Moji test files have features of different widths"):
        fd.read_moji(tmp_path)
    full = (tmp_path / "dev" / "pos_pos.npy").read_bytes()
    (tmp_path / "dev" / "pos_pos.npy").write_bytes(full[: len(full) // 2])
    with pytest.raises(FairmtError, match=r"dev/pos_pos\.npy: not a complete numeric \.npy file"):
        fd.read_moji(tmp_path)
    np.save(tmp_path / "dev" / "pos_pos.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(FairmtError, match=r"dev/pos_pos\.npy: not a complete numeric \.npy file"):
        fd.read_moji(tmp_path)


# ------------------------------------------------------------------------------------------------ hate speech
def _hate(root, train_rows, valid_rows=None):
    head = "text\tlabel\tgender\tage\n"
    good = ["1 2 3\t0\t0\t1", "4 5 0\t1\t1\t0", "2 2 2\t1\t0\t1"]
    for fname, rows in (("train.tsv", train_rows), ("valid.tsv", valid_rows or good), ("test.tsv", good)):
        (root / fname).write_text(head + "".join(r + "\n" for r in rows))


def test_hatespeech_negative_id_unknown_dev_groups_one_label(tmp_path):
    _hate(tmp_path, ["1 2 3\t0\t0\t1", "4 -5 0\t1\t1\t0"])
    with pytest.raises(FairmtError, match=r"train\.tsv:3: negative token id -5"):
        cl.read_hatespeech(root=tmp_path)
    _hate(tmp_path, ["1 2 3\t0\t0\t1", "4 5 0\t1\t1\t0"], valid_rows=["1 2\t0\tx\tx", "3 4\t1\tx\t1"])
    with pytest.raises(FairmtError, match=r"valid\.tsv: no row with a known gender \(2 row\(s\), every one 'x'\)"):
        cl.read_hatespeech(root=tmp_path)
    assert len(cl.read_hatespeech(root=tmp_path, attribute="age").splits["dev"]) == 1
    _hate(tmp_path, ["1 2 3\t1\t0\t1", "4 5 0\t1\t1\t0"])
    with pytest.raises(FairmtError, match=r"train\.tsv: the training split holds one label only"):
        cl.read_hatespeech(root=tmp_path)
