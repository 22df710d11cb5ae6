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
    assert (tmp_path / "gacl" / "model.safetensors").is_file() and (tmp_path / "original" / "config.json").is_file()
