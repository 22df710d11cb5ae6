"""Recipes ship inside the package: `fairmt recipes` lists them, `fairmt train NAME` finds them from anywhere, and
a wheel built from the source carries them (installed outside the source tree, a built-in recipe runs)."""

import json
import os
import shutil
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


def test_an_alias_is_the_recipe_itself_under_a_second_name_and_no_file_is_a_link(capsys):
    from fairmt.commands.train import load_recipe, recipe_description
    from fairmt.recipes import RECIPE_ALIASES, builtin_recipes_dir
    from fairmt.recipes.cards import card_of_config

    names = builtin_recipes()
    links = [p for p in builtin_recipes_dir().rglob("*") if p.is_symlink()]
    assert not links, f"a symbolic link in the shipped recipes (an alias goes in RECIPE_ALIASES): {links}"
    assert RECIPE_ALIASES["classification/sampling"] == "sampling/hatespeech_gru"
    for alias, name in RECIPE_ALIASES.items():
        assert alias not in names and name in names  # a second name of one shipped recipe, listed once
        for spelling in (alias, f"{alias}.yaml", f"recipes/{alias}.yaml"):
            assert resolve_recipe_path(spelling) == names[name]
        assert load_recipe(alias) == load_recipe(name)
        assert card_of_config(load_recipe(alias)).to_json() == card_of_config(load_recipe(name)).to_json()
        assert f"Also reachable as {alias}." in recipe_description(names[name])
    assert main(["recipes", "classification"]) == 0
    out = capsys.readouterr().out
    assert "aliases (the same recipe under a second name): classification/sampling = sampling/hatespeech_gru" in out
    assert main(["recipes", "gacl"]) == 0
    assert "aliases" not in capsys.readouterr().out
    assert main(["recipes", "sampling", "--long"]) == 0
    long = capsys.readouterr().out
    assert long.count("classification/sampling") == 2  # under its recipe and in the aliases line


@pytest.mark.slow
def test_wheel_carries_the_recipes_and_runs_one_outside_the_source_tree(tmp_path, shared_data):
    # built from a copy of the files git tracks, as from a clean clone: building in the checkout itself left setuptools'
    # build/ and egg-info folders in it, and a file deleted since the last build stayed in build/lib and in the wheel
    source = tmp_path / "source"
    tracked = procs.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    for name in filter(None, tracked.split("\0")):
        if (REPO / name).is_file():  # a tracked file deleted in the work tree is not part of it
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name, follow_symlinks=False)
    wheels = tmp_path / "wheels"
    procs.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    wheel = next(wheels.glob("fairmt-*.whl"))
    members = zipfile.ZipFile(wheel).namelist()
    assert "fairmt/recipes/gacl/small100_en-de_official.yaml" in members
    assert "fairmt/recipes/accelerate/fsdp2.yaml" in members
    # an alias is a name, not a second file (classification/sampling: sampling/hatespeech_gru's file and card)
    assert "fairmt/recipes/sampling/hatespeech_gru.yaml" in members
    assert "fairmt/recipes/classification/sampling.yaml" not in members
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
