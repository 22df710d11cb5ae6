"""Issue 52/54: `fairmt report` never merges two inputs into one row unless --names says so; a paired bootstrap of two
identical inputs is "not distinguishable" with a defined interval; --seed/--resamples; the p-value convention is said;
scores made with a non-official SentencePiece model are labelled spBLEU* in the terminal, Markdown and JSON."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from fairmt.cli import main


def _winomt_items(n: int, seed: int, female_share: float = 0.5) -> dict:
    rng = random.Random(seed)
    gold = "".join("f" if rng.random() < female_share else "m" for _ in range(n))
    return {"correct": "".join(rng.choice("01") for _ in range(n)), "gold": gold}


def _mt(name: str, lang: str, acc: float, items: dict | None = None, flores: dict | None = None) -> dict:
    row = {
        "accuracy": acc,
        "delta_g_acc": 8.0,
        "delta_s": 4.0,
        "signature": f"winomt|v:1|lang:{lang}|compat:none|fairmt:0.1",
    }
    if items:
        row["items"] = items
    data = {"format": 1, "settings": {"name": name, "compat": None}, "winomt": {lang: row}}
    if flores:
        data["flores"] = flores
    return data


def _write(path: Path, data: dict) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _rows(capsys) -> list[dict]:
    return json.loads(capsys.readouterr().out)["tables"][0]["rows"]


def test_two_files_of_one_folder_with_one_name_are_two_rows(tmp_path, capsys):
    """German and Spanish WinoMT of one model, both files in one folder, one settings.name: before, one row
    ``mtb [/]`` averaging the languages; now two rows named by their files (and refused as scored differently unless
    --allow-mixed, since their languages differ)."""
    de = _write(tmp_path / "de.json", _mt("mtb", "de", 60.0))
    es = _write(tmp_path / "es.json", _mt("mtb", "es", 50.0))
    assert main(["report", de, es, "--json", "-"]) == 2  # different languages: not comparable as they stand
    capsys.readouterr()
    assert main(["report", de, es, "--allow-mixed", "--json", "-"]) == 0
    rows = _rows(capsys)
    assert [(r["name"], r["n"], r["values"]["winomt_acc"]) for r in rows] == [
        ("mtb [de.json]", 1, 60.0),
        ("mtb [es.json]", 1, 50.0),
    ]
    de2 = _write(tmp_path / "de2.json", _mt("mtb", "de", 64.0))
    assert main(["report", de, de2, "--names", "x", "x", "--json", "-"]) == 0  # --names averages on purpose
    assert [(r["name"], r["n"], r["values"]["winomt_acc"]) for r in _rows(capsys)] == [("x", 2, 62.0)]


def test_one_file_given_twice_is_two_rows_and_not_distinguishable_from_itself(tmp_path, capsys):
    """The same file twice (the second under another spelling of its path): two numbered rows, and the paired
    bootstrap of a run against itself is 0 [0, 0], p = 1, "not distinguishable" — a defined interval, not NaN."""
    a = _write(tmp_path / "a.json", _mt("sys", "de", 60.0, _winomt_items(40, 1, female_share=0.1)))
    other = str(tmp_path / "." / "a.json")
    assert main(["report", a, other, "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    (table,) = report["tables"]
    assert [r["name"] for r in table["rows"]] == ["sys [a.json #1]", "sys [a.json #2]"]
    assert {c["measure"] for c in table["comparisons"]} == {"accuracy", "delta_g"}
    for c in table["comparisons"]:
        assert (c["difference"], c["ci_low"], c["ci_high"], c["p_value"], c["significant"]) == (
            0.0,
            0.0,
            0.0,
            1.0,
            False,
        )
    assert main(["report", a, other]) == 0
    out = capsys.readouterr().out
    assert out.count("+0.0 [+0.0, +0.0], p = 1.000, not distinguishable") == 2 and "nan" not in out.lower()
    assert "a run against itself gets p = 1 here, 1/(N+1) in sacrebleu --paired-bs" in out  # the convention said


def test_delta_g_without_a_group_on_some_resamples_has_a_defined_interval():
    """Four female items among 40: some resamples hold none, so ΔG is undefined there. Those resamples are left out
    and counted (before: the interval was NaN and the verdict "distinguishable, p = 0.001"); a measure undefined on
    all the items is refused in one line."""
    from fairmt.errors import FairmtError
    from fairmt.eval.reporting.compare import format_test
    from fairmt.eval.significance import paired_delta_g

    rng = random.Random(3)
    gender = ["female"] * 2 + ["male"] * 38
    a = [rng.random() < 0.6 for _ in gender]
    b = [rng.random() < 0.5 for _ in gender]
    t = paired_delta_g(a, b, gender, n_samples=500, seed=1)
    assert t.n_undefined > 0 and all(math.isfinite(x) for x in (t.ci_low, t.ci_high, t.p_value))
    assert t.ci_low <= t.difference <= t.ci_high and f"{t.n_undefined} of 500 resamples left out" in format_test(t)
    same = paired_delta_g(a, a, gender, n_samples=500, seed=1)
    assert (same.difference, same.ci_low, same.ci_high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    with pytest.raises(FairmtError, match="undefined on these 40 items"):
        paired_delta_g(a, b, ["male"] * 40, n_samples=50)


def test_seed_and_resamples_reach_the_bootstrap(tmp_path, capsys):
    from fairmt.eval.significance import N_SAMPLES, SEED, compare_items

    ia, ib = _winomt_items(60, 1), _winomt_items(60, 2)
    ib["gold"] = ia["gold"]
    a = _write(tmp_path / "a.json", _mt("a", "de", 60.0, ia))
    b = _write(tmp_path / "b.json", _mt("b", "de", 55.0, ib))
    assert main(["report", a, b, "--json", "-"]) == 0
    default = json.loads(capsys.readouterr().out)["tables"][0]["comparisons"]
    assert {(c["n_samples"], c["seed"]) for c in default} == {(N_SAMPLES, SEED)}
    assert main(["report", a, b, "--seed", "7", "--resamples", "200", "--json", "-"]) == 0
    got = json.loads(capsys.readouterr().out)["tables"][0]["comparisons"]
    want = compare_items("winomt", ib, ia, n_samples=200, seed=7)
    assert [(c["n_samples"], c["seed"], c["ci_low"], c["p_value"]) for c in got] == [
        (200, 7, t.ci_low, t.p_value) for t in want
    ]
    assert main(["report", a, b, "--seed", "7", "--resamples", "200"]) == 0
    assert "200 resamples of the sentences/pairs, seed 7" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["report", a, b, "--resamples", "0"])


def test_a_non_official_sentencepiece_score_is_labelled_spbleu_star(tmp_path, capsys):
    flores = {
        "de": {
            "spbleu": None,
            "bleu_spm_nonstandard": 31.0,
            "chrfpp": 55.0,
            "bleu_signature": "nrefs:1|tok:spm-nonstandard:0123456789ab",
        }
    }
    star = _write(tmp_path / "star.json", _mt("star", "de", 60.0, flores=flores))
    md = tmp_path / "r.md"
    assert main(["report", star, "--json", "-"]) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert [(c["key"], c["label"]) for c in table["columns"] if c["group"] == "FLORES-200"] == [
        ("bleu_star", "spBLEU*"),
        ("chrfpp", "chrF++"),
    ]
    assert table["rows"][0]["values"]["bleu_star"] == 31.0 and "bleu" not in table["rows"][0]["values"]
    assert main(["report", star, "--markdown", str(md)]) == 0
    out = capsys.readouterr().out
    assert "spBLEU* ↑ (0–100)" in out and "spBLEU ↑" not in out and "not comparable with published spBLEU" in out
    assert "FLORES-200: spBLEU\\* ↑ (0–100)" in md.read_text()
