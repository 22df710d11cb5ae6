"""`fairmt demo` end to end with few steps: every stage runs, the report is written, the output says it is a demo."""

import json

import pytest

from fairmt.cli import main

pytestmark = pytest.mark.slow


def test_demo_runs_end_to_end(tmp_path, capsys):
    assert main(["demo", "--output-dir", str(tmp_path), "--pretrain-steps", "30", "--gacl-steps", "8"]) == 0
    out = capsys.readouterr().out
    assert "DEMONSTRATION on a tiny model" in out and "say nothing about real MT systems" in out
    report = json.loads((tmp_path / "report.json").read_text())
    for key in ("before", "plain_finetuning", "after"):
        assert 0.0 <= report[key]["accuracy"] <= 100.0
        assert report[key]["delta_g"] == pytest.approx(report[key]["accuracy_male"] - report[key]["accuracy_female"])
    assert {"loss_mt", "loss_kd", "loss_gc"} <= set(report["train_log"][-1])
    for name in ("original", "control", "gacl"):  # every folder the demo leaves holds a loadable model
        assert (tmp_path / name / "model.safetensors").is_file() and report["models"][name] == str(tmp_path / name)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["base", "control", "gacl", "original"]
    assert not [d for d in tmp_path.rglob("*") if d.is_dir() and not any(d.iterdir())]  # no empty folder left


def test_demo_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: None)" not in out and "(default: 600)" in out and "(default: 200)" in out and "(default: paper)" in out
