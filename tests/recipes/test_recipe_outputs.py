"""Recipe output folders: one folder per run, an earlier run's results are never overwritten silently."""

from pathlib import Path

import pytest

from fairmt.errors import FairmtError
from fairmt.recipes._output import prepare_output_dir
from fairmt.recipes.classification.runner import resolve_config


def test_training_output_dir_is_the_run_folder_for_every_result():
    cfg = resolve_config(
        {
            "method": "classification",
            "recipe_path": "/x/recipes/classification/fcl.yaml",
            "training": {"output_dir": "runs/new"},
        }
    )
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
    with pytest.raises(FairmtError, match=r"run: the output folder already holds files.*--overwrite"):
        prepare_output_dir(run, {})
    prepare_output_dir(run, {"overwrite": True})
    prepare_output_dir(run, {"training": {"resume_from_checkpoint": str(run / "checkpoint-10")}})
    monkeypatch.setenv("RANK", "1")  # other processes of a multi-process launch do not check
    prepare_output_dir(run, {})


def test_shipped_classification_recipes_name_no_shared_output_folder():
    import yaml

    for recipe in (Path(__file__).resolve().parents[2] / "recipes" / "classification").glob("*.yaml"):
        assert "output_dir" not in (yaml.safe_load(recipe.read_text()) or {}), recipe


@pytest.mark.data
def test_classification_run_saves_a_reloadable_model_with_class_names(shared_data, monkeypatch, tmp_path, capsys):
    """The selected model is saved with its config (class names included) and reloads to the same predictions; the
    run ends with a summary naming where results and model went."""
    import json

    import torch

    from fairmt.models.text_classifiers import EmbeddingBagClassifier
    from fairmt.recipes.classification.runner import main

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    res = main(
        {
            "method": "classification",
            "objective": "ce",
            "training": {"output_dir": str(tmp_path / "run"), "num_train_epochs": 1, "learning_rate": 5e-3},
            "data": {"dataset": "hatespeech", "language": "Spanish"},
            "save_predictions": False,
            "model": {"type": "embedding_bag", "embed_dim": 16, "hidden_dim": 16},
        }
    )
    model_dir = Path(res["info"]["model_dir"])
    assert model_dir == tmp_path / "run" / "model" and (tmp_path / "run" / "results.json").is_file()
    config = json.loads((model_dir / "config.json").read_text())
    assert config["labels"] == [str(n) for n in res["labels"]] and config["num_labels"] == len(res["labels"])
    reloaded = EmbeddingBagClassifier.from_pretrained(model_dir).eval()
    from safetensors.torch import load_file  # the model the Trainer selected on dev (its best checkpoint)

    best = load_file(str(Path(res["info"]["best_checkpoint"]) / "model.safetensors"))
    assert best.keys() == reloaded.state_dict().keys()
    assert all(torch.equal(best[k], v) for k, v in reloaded.state_dict().items())
    out = capsys.readouterr().out
    assert f"results: {tmp_path / 'run' / 'results.json'}" in out and f"model: {model_dir}" in out


def test_gacl_and_ccd_recipes_refuse_an_earlier_run_before_loading_anything(tmp_path, monkeypatch, capsys):
    from fairmt.cli import main as cli

    monkeypatch.delenv("RANK", raising=False)
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.safetensors").write_text("an earlier run")
    recipe = tmp_path / "r.yaml"
    for method in ("gacl", "ccd"):
        # the model does not exist: the refusal must come first (no model load, no training)
        key = "train" if method == "gacl" else "tuples"
        recipe.write_text(
            f"method: {method}\nmodel: {tmp_path / 'missing'}\ndata: {{{key}: {tmp_path / 'x.jsonl'}}}\n"
            f"training: {{output_dir: {out}}}\n"
        )
        if method == "ccd":
            (tmp_path / "x.jsonl").write_text('{"neutral": "a", "male": "he", "female": "she"}\n')
        assert cli(["train", str(recipe)]) == 2
        assert f"{out}: the output folder already holds files" in capsys.readouterr().err


def test_train_overwrite_flag_and_dry_run_of_a_classification_recipe(tmp_path, capsys):
    import json

    from fairmt.cli import main as cli

    recipe = tmp_path / "cls.yaml"
    recipe.write_text(f"method: classification\nobjective: fcl\ndata: {{files: [{recipe}]}}\n")  # a file that exists
    assert cli(["train", str(recipe), "training.output_dir=" + str(tmp_path / "run"), "--overwrite", "--dry-run"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["recipe"]["overwrite"] is True and shown["config"]["output_dir"] == str(tmp_path / "run")
    assert shown["config"]["objective"] == "fcl"
