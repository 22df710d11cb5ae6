"""The papers' datasets (issue 23, item 13): loaders on local stand-ins in the real formats, the published splits,
the `fairmt data corpora` listing, and one-line errors when the data is not there."""

import json
import pickle
import tarfile

import numpy as np
import pytest

from fair_standins import bios_rows, write_bios, write_hatespeech, write_moji, write_wilds
from fairmt.data.fair_datasets import BIOS_PROFESSIONS, read_bios_split, read_jigsaw, read_moji
from fairmt.errors import FairmtError


# ---------------------------------------------------------------------------------------------- Bias-in-Bios
def test_bios_ravfogel_pickles(tmp_path):
    root = write_bios(tmp_path / "bias_in_bios", sizes=(12, 4, 4))
    data = read_bios_split(root)
    assert [len(data.splits[s]) for s in ("train", "dev", "test")] == [12, 4, 4]
    assert data.label_names == list(BIOS_PROFESSIONS) and data.group_names == ["Female", "Male"]
    rows = bios_rows(12, 0)
    tr = data.splits["train"]
    assert tr.texts == [r["hard_text"] for r in rows]
    assert tr.labels == [BIOS_PROFESSIONS.index(r["p"]) for r in rows]
    assert tr.groups == [0 if r["g"] == "f" else 1 for r in rows]
    assert "differs from the published 255,710 / 39,369 / 98,344 (bios-ravfogel)" in data.notes[0]


def test_bios_other_layouts_give_the_same_data(tmp_path):
    """The CSCL release's parquet files (hard_text_untokenized, p, g) and JSONL (the Hub's int ids) read the same."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    want = read_bios_split(write_bios(tmp_path / "pk", sizes=(8, 4, 4)))
    cscl = tmp_path / "cscl"
    cscl.mkdir()
    hub = tmp_path / "jsonl"
    hub.mkdir()
    for split, fname, n, seed in (("train", "train", 8, 0), ("val", "dev", 4, 1), ("test", "test", 4, 2)):
        rows = bios_rows(n, seed)
        pq.write_table(
            pa.Table.from_pylist([{"hard_text_untokenized": r["hard_text"], "p": r["p"], "g": r["g"]} for r in rows]),
            cscl / f"biasbios_{split}.pq",
        )
        (hub / f"{fname}.jsonl").write_text(
            "".join(
                json.dumps(
                    {
                        "hard_text": r["hard_text"],
                        "profession": BIOS_PROFESSIONS.index(r["p"]),
                        "gender": int(r["g"] == "f"),
                    }
                )
                + "\n"
                for r in rows
            )
        )
    for root in (cscl, hub):
        got = read_bios_split(root)
        for s in ("train", "dev", "test"):
            assert got.splits[s].texts == want.splits[s].texts
            assert got.splits[s].labels == want.splits[s].labels and got.splits[s].groups == want.splits[s].groups


def test_bios_refuses_a_pickle_that_names_code_and_bad_rows(tmp_path):
    root = write_bios(tmp_path / "b", sizes=(4, 4, 4))
    with (root / "dev.pickle").open("wb") as fh:
        pickle.dump([{"hard_text": "x", "p": "nurse", "g": np.str_("f")}], fh)  # a numpy object: names a class
    with pytest.raises(FairmtError, match="only plain lists/dicts"):
        read_bios_split(root)
    with (root / "dev.pickle").open("wb") as fh:
        pickle.dump([{"hard_text": "x", "p": "astronaut", "g": "f"}], fh)
    with pytest.raises(FairmtError, match="unknown profession 'astronaut'"):
        read_bios_split(root)


# ------------------------------------------------------------------------------------------- Jigsaw / WILDS
def _wilds_reference(path):
    """The CSCL race subset by hand: rows with any race identity >= 0.5; black >= 0.5; toxicity >= 0.5."""
    import csv

    out = {"train": [], "dev": [], "test": []}
    for row in csv.DictReader(path.open()):
        race = [float(row[c]) for c in ("asian", "black", "latino", "other_race_or_ethnicity", "white")]
        if max(race) >= 0.5:
            out[{"val": "dev"}.get(row["split"], row["split"])].append(
                (row["comment_text"], int(float(row["toxicity"]) >= 0.5), int(float(row["black"]) >= 0.5))
            )
    return out


def test_jigsaw_wilds_race_subset_and_archive(tmp_path):
    root = write_wilds(tmp_path / "civilcomments")
    want = _wilds_reference(root / "all_data_with_identities.csv")
    data = read_jigsaw(root)
    for s in ("train", "dev", "test"):
        sp = data.splits[s]
        assert list(zip(sp.texts, sp.labels, sp.groups)) == want[s]
    assert [len(data.splits[s]) for s in ("train", "dev", "test")] == [30, 12, 12]  # a quarter has no race word
    assert data.label_names == ["non-toxic", "toxic"] and data.group_names == ["non-black", "black"]
    assert set(data.splits["train"].groups) == {0, 1} and "25,954 / 4,390 / 12,562" in data.notes[0]
    # the WILDS archive as fetched (a tar.gz holding civilcomments_v1.0/all_data_with_identities.csv) reads the same
    packed = tmp_path / "packed"
    packed.mkdir()
    with tarfile.open(packed / "civilcomments_v1.0.tar.gz", "w:gz") as tar:
        tar.add(root / "all_data_with_identities.csv", arcname="civilcomments_v1.0/all_data_with_identities.csv")
    again = read_jigsaw(packed)
    assert again.splits["test"].texts == data.splits["test"].texts


def test_jigsaw_cscl_release_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "cc"
    root.mkdir()
    for split in ("train", "val", "test"):
        pq.write_table(
            pa.Table.from_pylist(
                [
                    {"comment_text": "you idiot", "black": 1, "toxicity": 0.7},
                    {"comment_text": "good point", "black": 0, "toxicity": 0.1},
                ]
            ),
            root / f"jigsaw_race_{split}.pq",
        )
    data = read_jigsaw(root)
    assert data.splits["dev"].labels == [1, 0] and data.splits["dev"].groups == [1, 0]
    assert "CSCL release" in data.source


# ------------------------------------------------------------------------------------------------------ Moji
def _fairlib_moji_reference(root, split_sizes, n_train):
    """Transcription of fairlib: Moji.data_splits (seed 2020, shuffle, cut) and DeepMojiDataset.load_data."""
    parts = {}
    for f in ("pos_pos", "pos_neg", "neg_pos", "neg_neg"):
        vecs = np.load(root / f"{f}.npy")
        np.random.seed(2020)
        np.random.shuffle(vecs)
        a, b, c = split_sizes
        parts[f] = {"train": vecs[:a], "dev": vecs[a : a + b], "test": vecs[a + b : a + b + c]}
    out = {}
    for split in ("train", "dev", "test"):
        ratio, n = (0.8, n_train) if split == "train" else (0.5, 100000)
        X, y, g = [], [], []
        for f, label, prot, cn in zip(
            ("pos_pos", "pos_neg", "neg_pos", "neg_neg"),
            (1, 1, 0, 0),
            (1, 0, 1, 0),
            (int(n * 0.5 * ratio), int(n * 0.5 * (1 - ratio)), int(n * 0.5 * (1 - ratio)), int(n * 0.5 * ratio)),
        ):
            rows = list(parts[f][split][:cn])
            X += rows
            y += [label] * len(rows)
            g += [prot] * len(rows)
        out[split] = (np.array(X), y, g)
    return out


def test_moji_reproduces_fairlibs_split(tmp_path):
    root = write_moji(tmp_path / "moji", rows_per_file=44)
    state = np.random.get_state()
    data = read_moji(root, split_sizes=(40, 2, 2), n_train=100)
    assert np.array_equal(np.random.get_state()[1], state[1])  # the global numpy RNG is left alone
    want = _fairlib_moji_reference(root, (40, 2, 2), 100)
    for s in ("train", "dev", "test"):
        X, y, g = want[s]
        assert np.array_equal(data.splits[s].features, X.astype(np.float32))
        assert data.splits[s].labels == y and data.splits[s].groups == g
    # 40/10/10/40 % and balanced dev/test; int(n·0.5·(1 − 0.8)) truncates 9.999… to 9, as in fairlib (whose full
    # training set is therefore 40,000 + 9,999 + 9,999 + 40,000 = 99,998 rows, not the 100k of the paper)
    assert [len(data.splits[s]) for s in ("train", "dev", "test")] == [98, 8, 8]
    assert data.label_names == ["sad", "happy"] and data.group_names == ["SAE", "AAE"]
    # fairlib's prepared folders ({train,dev,test}/<file>.npy) give the same training set
    prep = tmp_path / "prepared"
    for s in ("train", "dev", "test"):
        (prep / s).mkdir(parents=True)
    for f in ("pos_pos", "pos_neg", "neg_pos", "neg_neg"):
        vecs = np.load(root / f"{f}.npy")
        np.random.RandomState(2020).shuffle(vecs)
        np.save(prep / "train" / f"{f}.npy", vecs[:40])
        np.save(prep / "dev" / f"{f}.npy", vecs[40:42])
        np.save(prep / "test" / f"{f}.npy", vecs[42:44])
    again = read_moji(prep, n_train=100)
    assert np.array_equal(again.splits["train"].features, data.splits["train"].features)
    with pytest.raises(FairmtError, match="holds 44 rows, fewer than the 44000"):
        read_moji(root)


# ------------------------------------------------------------------------- offline: one line, name + command
@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda r: read_bios_split(r),
            r"Bias-in-Bios .* not found under .*: fetch it with `fairmt data corpora --fetch "
            r"bios-ravfogel`",
        ),
        (
            lambda r: read_jigsaw(r),
            r"Civil Comments .* not found under .*: fetch it with `fairmt data corpora --fetch "
            r"civilcomments-wilds`",
        ),
        (lambda r: read_moji(r), r"Moji .* not found under .*: fetch it with `fairmt data corpora --fetch moji`"),
    ],
)
def test_absent_data_is_one_line_naming_the_data_and_the_fetch_command(tmp_path, call, match):
    with pytest.raises(FairmtError, match=match) as err:
        call(tmp_path / "nothing")
    assert "\n" not in str(err.value)


def test_hub_copy_offline_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(FairmtError, match=r"LabHC/bias_in_bios\) is not available here .*--fetch bios-ravfogel") as err:
        read_bios_split(source="hub")
    assert "\n" not in str(err.value)
    with pytest.raises(FairmtError, match="data.source must be local or hub"):
        read_bios_split(source="kaggle")


def test_english_hatespeech_without_train_says_where_it_comes_from(tmp_path):
    from fairmt.data.classification import read_hatespeech

    root = write_hatespeech(tmp_path / "hs")
    (root / "English" / "train.tsv").unlink()
    with pytest.raises(FairmtError, match="English training split .* not in their public repository .* on request"):
        read_hatespeech("English", "age", root=root / "English")
    write_hatespeech(tmp_path / "hs")
    data = read_hatespeech("English", "age", root=root / "English")
    assert len(data.splits["train"]) == 80 - 80 // 7  # rows with an unknown age ('x') dropped


# ------------------------------------------------------------------------------------ fairmt data corpora
def test_corpora_lists_the_datasets_with_split_and_licence_and_fetches_into_the_loaders_folder(tmp_path, capsys):
    from fairmt.cli import main

    assert main(["data", "corpora"]) == 0
    listing = capsys.readouterr().out
    for name, bits in {
        "bios-ravfogel": ["255,710 / 39,369 / 98,344", "MIT", "nullspace/biasbios/train.pickle"],
        "bios-hub": ["LabHC/bias_in_bios", "257,478 / 39,642 / 99,069"],
        "civilcomments-wilds": ["25,954 / 4,390 / 12,562", "CC0", "codalab"],
        "moji": ["100,000 / 8,000 / 8,000", "deepmoji/pos_pos.npy"],
        "hatespeech-huang2020": ["not in the public repository", "Apache-2.0", "English/valid.tsv"],
    }.items():
        assert name in listing and all(b in listing for b in bits), name
    # fetch from a local mirror (file:// URLs) into DEST/<folder>, where read_moji looks by default
    mirror = write_moji(tmp_path / "mirror", rows_per_file=44)
    dest = tmp_path / "data"
    assert (
        main(
            [
                "data",
                "corpora",
                "--fetch",
                "moji",
                "--output-dir",
                str(dest),
                "--base-url",
                mirror.as_uri(),
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"to {dest}/moji" in out and (dest / "moji" / "SHA256SUMS").is_file()
    data = read_moji(dest / "moji", split_sizes=(40, 2, 2), n_train=100)
    assert len(data.splits["train"]) == 98
    assert main(["data", "corpora", "--fetch", "bios-hub"]) == 2
    assert "nothing to fetch" in capsys.readouterr().err


@pytest.mark.parametrize("dataset", ["bios", "hatespeech", "moji"])
def test_max_rows_keeps_the_first_rows_of_each_split_for_every_dataset(shared_data, tmp_path, monkeypatch, dataset):
    """``data.max_rows`` of a classification recipe applies to every data set (it used to apply to bios_split and
    jigsaw only and was silently ignored for the others)."""
    from fairmt.recipes.classification.runner import load_data

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    dcfg = {
        "dataset": dataset,
        "files": None,
        "fractions": [0.5, 0.2, 0.3],
        "split_seed": 0,
        "root": None,
        "max_rows": None,
        "language": "Spanish",
        "attribute": "gender",
        "moji_split_sizes": [40, 2, 2],
        "moji_n_train": 100,
    }
    if dataset == "moji":
        dcfg["root"] = str(write_moji(tmp_path))
    full = load_data(dcfg)
    cut = load_data({**dcfg, "max_rows": 7})
    for name, split in full.splits.items():
        assert len(split.labels) > 7
        assert cut.splits[name].labels == split.labels[:7] and cut.splits[name].groups == split.groups[:7]
        if split.texts is not None:
            assert cut.splits[name].texts == split.texts[:7]
    assert cut.label_names == full.label_names
