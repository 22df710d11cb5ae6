"""Recipe output folders: one folder per run, an earlier run's results are never overwritten silently."""

from pathlib import Path

import pytest

from fairmt.errors import FairmtError
from fairmt.scripts._output import prepare_output_dir
from fairmt.scripts.classification import resolve_config


def test_training_output_dir_is_the_run_folder_for_every_result():
    cfg = resolve_config({"method": "classification", "recipe_path": "/x/recipes/classification/fcl.yaml",
                          "training": {"output_dir": "runs/new"}})
    assert cfg["output_dir"] == "runs/new" and "output_dir" not in cfg["training"]  # results.json goes there too
    default = resolve_config({"method": "classification", "recipe_path": "/x/recipes/classification/fcl.yaml"})
    assert default["output_dir"] == str(Path("outputs") / "fcl")
    with pytest.raises(FairmtError, match="differ"):
        resolve_config({"method": "classification", "output_dir": "a", "training": {"output_dir": "b"}})


def test_an_earlier_run_is_refused_unless_overwrite_or_resume(tmp_path, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    run = tmp_path / "run"
    assert prepare_output_dir(run, {}).is_dir()  # new folder
    prepare_output_dir(run, {})  # empty: still fine
    (run / "results.json").write_text("{}")
    with pytest.raises(FairmtError, match=r"run already holds an earlier run's files.*--overwrite"):
        prepare_output_dir(run, {})
    prepare_output_dir(run, {"overwrite": True})
    prepare_output_dir(run, {"training": {"resume_from_checkpoint": str(run / "checkpoint-10")}})
    monkeypatch.setenv("RANK", "1")  # other processes of a multi-process launch do not check
    prepare_output_dir(run, {})


def test_shipped_classification_recipes_name_no_shared_output_folder():
    import yaml

    for recipe in (Path(__file__).resolve().parents[1] / "recipes" / "classification").glob("*.yaml"):
        assert "output_dir" not in (yaml.safe_load(recipe.read_text()) or {}), recipe
