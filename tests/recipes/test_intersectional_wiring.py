"""Intersectional groups wired into the classification recipes' data (``data.attribute: [gender, age]``) and into
``fairmt eval classification --group-columns``: the groups are the cross-product combinations, every metric over them
equals a brute-force computation on a fixed example, an absent combination follows the empty-group rule. (The recipe
end to end: tests/recipes/test_paper_recipes.py, fcl_hatespeech with data.attribute=[gender,age].)"""

from __future__ import annotations

import csv
import json

import pytest
from test_fairlib_metrics import _brute_gap

from fair_standins import write_hatespeech
from fairmt.cli import main
from fairmt.data.classification import read_hatespeech
from fairmt.errors import FairmtError


def test_hatespeech_reader_gives_the_cross_product_groups(tmp_path):
    write_hatespeech(tmp_path, language="English")
    data = read_hatespeech("English", ["gender", "age"], tmp_path / "English")
    assert data.group_names == ["0|0", "0|1", "1|0", "1|1"] and data.group_attributes == ["gender", "age"]
    with (tmp_path / "English" / "train.tsv").open() as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    kept = [r for r in rows if "x" not in (r["gender"], r["age"])]
    assert len(rows) - len(kept) > 0  # the stand-in has unknown ages: those rows are dropped, and counted
    split = data.splits["train"]
    assert [data.group_names[g] for g in split.groups] == [f"{r['gender']}|{r['age']}" for r in kept]
    assert split.labels == [int(r["label"]) for r in kept]
    assert f"{len(rows) - len(kept)} dropped with unknown gender or age" in data.notes[0]
    cols = data.group_columns("train")
    assert cols == {"gender": [r["gender"] for r in kept], "age": [r["age"] for r in kept]}
    one = read_hatespeech("English", "age", tmp_path / "English")  # one attribute: as before
    assert one.group_names == ["0", "1"] and one.group_attributes is None
    assert one.group_columns("train") == one.splits["train"].groups
    with pytest.raises(FairmtError, match="distinct"):
        read_hatespeech("English", ["age", "age"], tmp_path / "English")
    with pytest.raises(FairmtError, match="religion"):
        read_hatespeech("English", ["age", "religion"], tmp_path / "English")


def test_recipe_key_takes_a_list_for_the_hate_speech_set_only():
    from fairmt.recipes.classification.runner import resolve_config

    cfg = resolve_config({"data": {"dataset": "hatespeech", "attribute": ["gender", "age"]}})
    assert cfg["data"]["attribute"] == ["gender", "age"]
    assert resolve_config({"data": {"dataset": "hatespeech", "attribute": ["age"]}})["data"]["attribute"] == "age"
    with pytest.raises(FairmtError, match="needs data.dataset hatespeech"):
        resolve_config({"data": {"dataset": "bios", "attribute": ["gender", "age"]}})
    with pytest.raises(FairmtError, match="twice"):
        resolve_config({"data": {"dataset": "hatespeech", "attribute": ["age", "age"]}})


# a fixed example: 12 predictions, gender × age; (m, young) is absent
ROWS = [  # label, pred, gender, age
    (1, 1, "f", "old"),
    (1, 0, "f", "old"),
    (0, 0, "f", "old"),
    (0, 1, "f", "old"),
    (1, 1, "f", "young"),
    (1, 1, "f", "young"),
    (0, 0, "f", "young"),
    (1, 0, "m", "old"),
    (1, 0, "m", "old"),
    (0, 0, "m", "old"),
    (0, 0, "m", "old"),
    (0, 1, "m", "old"),
]


def _write(path, rows):
    path.write_text("".join(json.dumps({"label": y, "pred": p, "gender": g, "age": a}) + "\n" for y, p, g, a in rows))
    return path


def test_eval_classification_group_columns_against_brute_force(tmp_path, capsys):
    f = _write(tmp_path / "pred.jsonl", ROWS)
    rc = main(
        [
            "eval",
            "classification",
            "--predictions",
            str(f),
            "--group-columns",
            "gender,age",
            "--no-leakage",
            "--json",
            "-",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    res = json.loads(captured.out)
    y, p = [r[0] for r in ROWS], [r[1] for r in ROWS]
    joint = [f"{g}|{a}" for _, _, g, a in ROWS]
    for key, kind in (("gap", "tpr"), ("ppr_gap", "ppr"), ("fpr_gap", "fpr")):
        assert res[key] == pytest.approx(100 * _brute_gap(y, p, joint, kind), abs=1e-9), key
    assert res["groups"] == ["f|old", "f|young", "m|old"] and "|groups:x2" in res["signature"]
    assert "'m|young' has no example" in captured.err  # the empty-group rule: skipped, with a warning

    def fails(argv, message):
        assert main(["eval", "classification", *argv]) != 0
        assert message in capsys.readouterr().err

    fails(
        ["--predictions", str(f), "--group-columns", "gender,age", "--no-leakage", "--strict"],
        "group 'm|young' has no example",
    )
    # a line without one of the columns, and a clash with a reserved key, are named
    _write(tmp_path / "bad.jsonl", ROWS)
    with (tmp_path / "bad.jsonl").open("a") as fh:
        fh.write(json.dumps({"label": 1, "pred": 1, "gender": "f"}) + "\n")
    fails(
        ["--predictions", str(tmp_path / "bad.jsonl"), "--group-columns", "gender,age", "--no-leakage"],
        "bad.jsonl:13: missing key(s) age",
    )
    fails(["--predictions", str(f), "--group-columns", "gender,label"], "(not ['label'])")
