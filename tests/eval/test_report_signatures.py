"""`fairmt report` with runs scored under different settings (issue 27): each differing signature is marked (†,
listed under the table, warned on stderr) and kept in the JSON; explicit accuracy and quality come first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fairmt.cli import main
from fairmt.eval import mtbias


def _winomt_run(shared: Path, out: Path, langs=("de", "fr")) -> Path:
    (out / "winomt").mkdir(parents=True)
    for lang in langs:
        shutil.copy(shared / "winomt" / "translations" / "google" / f"en-{lang}.txt", out / "winomt" / f"en-{lang}.txt")
    return out


@pytest.mark.data
def test_compat_and_default_runs_are_marked_not_silently_compared(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    run = _winomt_run(shared_data, tmp_path / "run", langs=("de",))
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    common = ["eval", "mt-bias", "--translations-dir", str(run), "--benchmarks", "winomt", "--lang", "de"]
    assert main([*common, "--json", str(a)]) == 0
    assert main([*common, "--compat", "acl2019", "--json", str(b)]) == 0
    assert main([*common, "--json", str(c)]) == 0
    capsys.readouterr()
    out, md = tmp_path / "cmp.json", tmp_path / "cmp.md"
    names = ["--names", "default", "acl2019", "again"]
    assert main(["report", str(a), str(b), str(c), *names]) == 2  # refused: not comparable as they stand
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "acl2019 was scored differently from default" in err
    assert "--allow-mixed" in err
    assert (
        main(["report", str(a), str(b), str(c), *names, "--allow-mixed", "--json", str(out), "--markdown", str(md)])
        == 0
    )
    err = capsys.readouterr().err
    assert "acl2019 was scored differently from default: settings:compat is 'acl2019', not 'None'" in err
    assert "winomt:de" in err and "again was scored differently" not in err
    (table,) = json.loads(out.read_text())["tables"]
    rows = table["rows"]
    assert [r["name"] for r in rows] == ["default", "acl2019", "again"]
    assert rows[0]["differs"] == [] and rows[2]["differs"] == []
    keys = {d["key"] for d in rows[1]["differs"]}
    assert keys == {"settings:compat", "winomt:de"}
    sig = next(d for d in rows[1]["differs"] if d["key"] == "winomt:de")
    assert "compat:acl2019" in sig["this"] and "compat:none" in sig["first"]
    assert all(r["signatures"]["winomt:de"].startswith("winomt|") for r in rows)  # kept in the JSON
    assert "winomt_acc" in rows[1]["marked"] and rows[2]["marked"] == []
    text = md.read_text()
    line = next(x for x in text.splitlines() if x.startswith("| acl2019 |"))
    assert "†" in line and "†" not in next(x for x in text.splitlines() if x.startswith("| again |"))
    assert "not comparable" in text and "settings:compat is `acl2019`" in text


def _result(name: str, *, split="test", winomt_sig="winomt|v:1|lang:de|compat:none|fairmt:1.0", langs=("de",)):
    per = {x: {"accuracy": 60.0, "signature": winomt_sig.replace("lang:de", f"lang:{x}")} for x in langs}
    return {
        "format": mtbias.FORMAT_VERSION,
        "settings": {"name": name, "split": split, "compat": None},
        "winomt": {**per, "average": {"accuracy": 60.0}},
        "geneval": {
            "de": {
                "signature": f"MT-GenEval|set:counterfactual|split:{split}|lang:de|n:300",
                "chrfpp": 50.0,
                "degenerate": {"n": 600, "degenerate": 3},
            },
            "average": {"explicit_accuracy": 30.0, "chrfpp": 50.0},
        },
    }


def test_signature_differences_name_each_key():
    same = mtbias.signature_differences(
        [_result("a"), _result("b", winomt_sig="winomt|v:1|lang:de|compat:none|fairmt:2.0")], ["a", "b"]
    )
    assert same == []  # only the fairmt version differs: the same metric
    diffs = mtbias.signature_differences([_result("a"), _result("b", split="dev", langs=("de", "fr"))], ["a", "b"])
    assert {d["key"] for d in diffs} == {"settings:split", "geneval:de", "languages:winomt"}
    rows = mtbias.compare_runs([_result("a"), _result("b", split="dev")], ["a", "b"])
    md = mtbias.comparison_markdown(rows)
    b = next(x for x in md.splitlines() if x.startswith("| b |")).split(" | ")
    header = next(x for x in md.splitlines() if x.startswith("| model |")).split(" | ")
    cell = dict(zip(header, b))
    assert cell["geneval_e_acc"].endswith("†") and "†" not in cell["winomt_acc"]  # split touches MT-GenEval only


def test_report_puts_explicit_accuracy_and_quality_first(tmp_path, capsys):
    p = tmp_path / "a.json"
    p.write_text(json.dumps(_result("a")))
    out = tmp_path / "r.json"
    assert main(["report", str(p), "--json", str(out)]) == 0
    header = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("run "))
    assert header.split()[1:3] == ["E-Acc.", "↑"]
    (table,) = json.loads(out.read_text())["tables"]
    cols = [c["key"] for c in table["columns"]]
    assert cols == ["geneval_e_acc", "geneval_chrfpp", "winomt_acc", "degenerate"]
    from fairmt.eval.reporting import FAMILIES

    order = [m.key for m in FAMILIES["mt"].measures]  # the official MT-GenEval accuracy after explicit accuracy
    assert order[:2] == ["geneval_e_acc", "geneval_chrfpp"] and order.index("geneval_acc") > 2
    assert table["rows"][0]["values"]["degenerate"] == 3 and table["rows"][0]["settings"]["degenerate of"] == 600
