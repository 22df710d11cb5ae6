"""Recipes ship inside the package: `fairmt recipes` lists them, `fairmt train NAME` finds them from anywhere, and
a wheel built from the source carries them (installed outside the source tree, a built-in recipe runs)."""

import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

import procs
from fairmt.cli import main
from fairmt.commands.train import builtin_recipes, resolve_recipe_path

REPO = Path(__file__).resolve().parents[2]


def test_builtin_recipes_by_name(capsys, tmp_path, monkeypatch):
    names = builtin_recipes()
    assert {"gacl/small100_en-de", "gacl/small100_en-de_official", "ccd/minilm_cda", "classification/fcl"} <= set(names)
    monkeypatch.chdir(tmp_path)  # not the source tree
    for spelling in ("gacl/small100_en-de", "gacl/small100_en-de.yaml", "recipes/gacl/small100_en-de.yaml"):
        assert resolve_recipe_path(spelling) == names["gacl/small100_en-de"]
    assert main(["recipes"]) == 0
    assert "gacl/small100_en-de_official" in capsys.readouterr().out
    assert main(["train", "gacl/nope"]) == 2
    assert "fairmt recipes" in capsys.readouterr().err
    local = tmp_path / "mine.yaml"  # a path still wins
    local.write_text("method: classification\nobjective: ce\n")
    assert resolve_recipe_path(str(local)) == local


@pytest.mark.slow
def test_wheel_carries_the_recipes_and_runs_one_outside_the_source_tree(tmp_path, shared_data):
    wheels = tmp_path / "wheels"
    procs.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO)],
        check=True,
        capture_output=True,
        text=True,
    )
    wheel = next(wheels.glob("fairmt-*.whl"))
    members = zipfile.ZipFile(wheel).namelist()
    assert "fairmt/recipes/gacl/small100_en-de_official.yaml" in members
    assert "fairmt/recipes/accelerate/fsdp2.yaml" in members
    site = tmp_path / "site"
    procs.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "FAIRMT_DATA": str(shared_data), "OMP_NUM_THREADS": "1"}
    where = procs.run(
        [sys.executable, "-c", "import fairmt; print(fairmt.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(site))  # the installed wheel, not the source tree
    out = elsewhere / "run"
    proc = procs.run(
        [
            sys.executable,
            "-m",
            "fairmt",
            "train",
            "classification/fcl",
            "data.dataset=hatespeech",
            "model.type=embedding_bag",
            "model.embed_dim=16",
            "model.hidden_dim=16",
            "training.num_train_epochs=1",
            "training.per_device_train_batch_size=128",
            f"training.output_dir={out}",
            "save_predictions=false",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((out / "results.json").read_text())["objective"] == "fcl"
