"""Recipes are validated before any expensive work: unknown keys (with a suggestion), types and ranges of
training.* against the method's Config, malformed YAML and unknown methods — exit 2, the key named, no traceback."""

import pytest

from fairmt.cli import main
from fairmt.commands.train import builtin_recipes, load_recipe


@pytest.mark.parametrize("name", sorted(builtin_recipes()))
def test_every_shipped_recipe_validates(name):
    assert load_recipe(builtin_recipes()[name])["method"] in (
        "gacl",
        "ccd",
        "classification",
        "dpce",
        "adept",
        "sampling",
    )


@pytest.mark.parametrize(
    "recipe, overrides, message",
    [
        ("gacl/small100_en-de", ["training.max_steps=abc"], "training.max_steps must be int, got 'abc'"),
        ("gacl/small100_en-de", ["data.trian=x.jsonl"], "unknown recipe key data.trian; did you mean 'train'?"),
        ("gacl/small100_en-de", ["training.learnign_rate=1e-5"], "did you mean 'learning_rate'?"),
        ("gacl/small100_en-de", ["training.learning_rate=-1"], "training.learning_rate must be a finite number > 0"),
        ("gacl/small100_en-de", ["training.per_device_train_batch_size=0"], "must be an integer ≥ 1, got 0"),
        ("gacl/small100_en-de", ["geneval.patinece=3"], "did you mean 'patience'?"),
        ("gacl/small100_en-de", ["modle=x"], "unknown recipe key modle; did you mean 'model'?"),
        ("gacl/small100_en-de", ["training.kd_alpha=high"], "training.kd_alpha must be float"),
        ("ccd/minilm_cda", ["training.max_step=3"], "did you mean 'max_steps'?"),
        ("classification/fcl", ["data.datset=bios"], "did you mean 'dataset'?"),
        ("classification/fcl", ["training.fcl_beta=x"], "training.fcl_beta must be float"),
        (
            "sampling/celeba_resnet50",
            ["stage2.epsilonn=0.1"],
            "unknown recipe key stage2.epsilonn; did you mean 'epsilon'?",
        ),
        ("sampling/celeba_resnet50", ["stage1.num_train_epochs=x"], "stage1.num_train_epochs must be float"),
        ("sampling/chexpert_resnet50", ["probe.test_fractoin=0.3"], "did you mean 'test_fraction'?"),
    ],
)
def test_bad_overrides_fail_fast_naming_the_key(recipe, overrides, message, capsys):
    assert main(["train", recipe, *overrides, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(
    "text, message",
    [
        ("method: gacl\nmodel: [unclosed\n", "is not valid YAML"),
        (
            "method: nosuch\n",
            "unknown method 'nosuch' in the recipe: the registered families are "
            "gacl, ccd, dpce, adept, classification, sampling",
        ),
        # a module of the recipe package that is no family (the cards checker) is no method either (issue 50)
        (
            "method: cards\n",
            "unknown method 'cards' in the recipe: the registered families are "
            "gacl, ccd, dpce, adept, classification, sampling",
        ),
        ("- a list\n", "must be a YAML mapping"),
        ("model: x\n", "has no 'method' key"),
    ],
)
def test_malformed_recipe_files(tmp_path, text, message, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(text)
    assert main(["train", str(recipe), "--dry-run"]) == 2
    assert message in capsys.readouterr().err
