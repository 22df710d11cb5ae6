"""Recipe and card files are parsed once per text (:mod:`fairmt.recipes._files`): an edit on disk is read again, even
one that keeps the file's size and time stamp; a caller editing what it got never changes the next read; the built-in
listing follows a file added or removed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from fairmt.commands.train import builtin_recipes, load_recipe, recipe_needs, recipe_paper
from fairmt.errors import FairmtError
from fairmt.recipes._files import parse_yaml_text, recipe_files
from fairmt.recipes.cards import card_of_config, card_path, read_card

NAME = "classification/cscl_bios_bert"


def _edit(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (the same length) and put the file's time stamp back: only the text tells."""
    assert len(old) == len(new)
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def _copy(tmp_path: Path) -> Path:
    """The recipe, its card and the family's include files under ``tmp_path/classification``."""
    src = builtin_recipes()[NAME]
    dst = tmp_path / "classification" / src.name
    card_path(dst).parent.mkdir(parents=True)
    shutil.copy(src, dst)
    shutil.copy(card_path(src), card_path(dst))
    for shared in card_path(src).parent.glob("_*.yaml"):
        shutil.copy(shared, card_path(dst).parent / shared.name)
    return dst


def test_an_edited_recipe_card_or_include_file_is_read_again(tmp_path):
    recipe = _copy(tmp_path)
    card = card_path(recipe)
    assert card_of_config(load_recipe(recipe)).problems == []
    assert recipe_paper(recipe) == "Chi et al. 2022"

    _edit(card, "  paper: 192\n", "  paper: 256\n")  # the card: the paper's max_length
    problems = card_of_config(load_recipe(recipe)).problems
    assert [p.split(" (")[0] for p in problems] == [
        "model.max_length: the recipe resolves to 192, the paper's value is 256"
    ]
    _edit(recipe, "max_length: 192 ", "max_length: 256 ")  # the recipe follows: no difference left
    assert load_recipe(recipe)["model"]["max_length"] == 256
    assert card_of_config(load_recipe(recipe)).problems == []

    shared = card.parent / "_classification.yaml"  # an include file of the card
    _edit(shared, "max_steps, paper: null, recipe: -1,", "max_steps, paper: null, recipe: -2,")
    problems = card_of_config(load_recipe(recipe)).problems
    assert problems and all("max_steps declares recipe value -2, the recipe resolves to -1" in p for p in problems)

    _edit(card, "paper: Chi et al. (2022)", "paper: Cho et al. (2021)")  # what `fairmt recipes` lists
    assert recipe_paper(recipe) == "Cho et al. 2021"
    _edit(recipe, "name_or_path: bert-base-uncased", "name_or_path: bert-base-uncasex")
    assert recipe_needs(recipe)[0] == ["model bert-base-uncasex"]


def test_editing_what_a_read_returned_leaves_the_next_read_as_the_file_says(tmp_path):
    recipe = _copy(tmp_path)
    card = card_path(recipe)
    want_recipe = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    want_card = yaml.safe_load(card.read_text(encoding="utf-8"))

    config = load_recipe(recipe, ["model.max_length=64"])  # an override edits the parsed mapping in place
    config["model"]["pooling"] = "mean"
    config["objective_args"].clear()
    again = load_recipe(recipe)
    assert {k: v for k, v in again.items() if k != "recipe_path"} == want_recipe

    data = read_card(card)
    data["settings"][0]["paper"] = "changed"
    data["settings"].append({"key": "x"})
    data["include"].clear()
    assert read_card(card) == want_card

    text = "a: {b: [1, {c: 2}]}\n"
    first = parse_yaml_text(text, "t", "recipe")
    first["a"]["b"][1]["c"] = 3
    first["a"]["b"].append(4)
    assert parse_yaml_text(text, "t", "recipe") == {"a": {"b": [1, {"c": 2}]}}


def test_a_file_that_does_not_parse_is_refused_on_every_read():
    for _ in range(2):
        with pytest.raises(FairmtError, match=r"^t: the card is not valid YAML"):
            parse_yaml_text("a: [1\n", "t", "card")
    with pytest.raises(FairmtError, match="uses the YAML tag !!python/object"):  # parse_yaml's input checks stay
        parse_yaml_text("a: !!python/object:os.system x\n", "t", "card")


def test_the_recipe_listing_follows_a_file_added_or_removed(tmp_path):
    (tmp_path / "fam").mkdir()
    (tmp_path / "accelerate").mkdir()
    (tmp_path / "fam" / "a.yaml").write_text("method: x\n")
    (tmp_path / "accelerate" / "ddp.yaml").write_text("x: 1\n")
    listed = recipe_files(tmp_path)
    assert listed == {"fam/a": tmp_path / "fam" / "a.yaml"}
    listed.clear()  # the caller's own dict
    (tmp_path / "fam" / "b.yaml").write_text("method: x\n")
    assert list(recipe_files(tmp_path)) == ["fam/a", "fam/b"]
    (tmp_path / "fam" / "a.yaml").unlink()
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "c.yaml").write_text("method: x\n")
    assert list(recipe_files(tmp_path)) == ["fam/b", "new/c"]
