"""Issue 50: the GACL runner reads the typed recipe (``GaclRecipe``) only; the run's folder and seed are top-level
keys as in the other families (``training.output_dir`` / ``training.seed``, the older place, name the same two)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fairmt.errors import FairmtError
from fairmt.recipes.gacl.schema import GENEVAL_TRAINING, typed_recipe

BASE = {"method": "gacl", "model": "m", "data": {"train": "x.jsonl"}}


def test_the_runs_folder_and_seed_are_top_level_keys_and_the_older_place_names_the_same_two():
    r = typed_recipe({**BASE, "recipe_path": "/r/gacl/small.yaml"})
    assert (r.output_dir, r.seed) == (str(Path("outputs") / "small"), None)
    old = typed_recipe({**BASE, "training": {"output_dir": "runs/a", "seed": 7, "max_steps": 3}})
    new = typed_recipe({**BASE, "output_dir": "runs/a", "seed": 7, "training": {"max_steps": 3}})
    assert (
        (old.output_dir, old.seed, old.training)
        == (new.output_dir, new.seed, new.training)
        == ("runs/a", 7, {"max_steps": 3})
    )
    both = typed_recipe({**BASE, "output_dir": "runs/a", "seed": 7, "training": {"output_dir": "runs/a/", "seed": 7}})
    assert (both.output_dir, both.seed) == ("runs/a", 7)  # the same folder and seed, given twice: accepted
    with pytest.raises(FairmtError, match=r"^output_dir \(runs/a\) and training.output_dir \(runs/b\) differ"):
        typed_recipe({**BASE, "output_dir": "runs/a", "training": {"output_dir": "runs/b"}})
    with pytest.raises(FairmtError, match=r"^seed \(1\) and training.seed \(2\) differ"):
        typed_recipe({**BASE, "seed": 1, "training": {"seed": 2}})
    with pytest.raises(FairmtError, match="training.seed"):
        typed_recipe({**BASE, "training": {"seed": -1}})  # the older place keeps its range check


def test_the_trainer_config_gets_the_folder_and_seed_and_otherwise_its_own_defaults():
    from fairmt.recipes.gacl.runner import resolve_config
    from fairmt.trainers.gacl import GACLConfig

    args = resolve_config({**BASE, "output_dir": "runs/a", "seed": 5, "training": {"kd_alpha": 0.1}})
    assert (args.output_dir, args.seed, args.kd_alpha) == ("runs/a", 5, 0.1)
    plain = resolve_config(BASE)
    default = GACLConfig(output_dir="x")
    assert (plain.seed, plain.gacl_lambda, plain.temperature) == (
        default.seed,
        default.gacl_lambda,
        default.temperature,
    )


def test_a_geneval_section_brings_its_trainer_settings_where_training_leaves_them_out():
    r = typed_recipe({**BASE, "geneval": {"metric": "accuracy"}, "training": {"eval_steps": 20}})
    assert r.training == {
        **GENEVAL_TRAINING,
        "eval_steps": 20,
        "save_steps": 20,
        "metric_for_best_model": "geneval_accuracy",
    }
    assert r.geneval.lang == "de"  # tgt_lang
    assert typed_recipe(BASE).training == {}


def test_output_dir_flag_and_sweeps_name_the_top_level_folder():
    from fairmt.recipes import family, set_output_dir

    config = {**BASE, "training": {"output_dir": "old", "seed": 1}}
    assert family("gacl").output_dir(config) == "old"  # the older place is read too
    set_output_dir(config, "new")
    assert config["output_dir"] == "new" and config["training"] == {"seed": 1}
    assert typed_recipe(config).output_dir == "new"
    assert set(family("gacl").output_keys) == {"output_dir", "training.output_dir"}


def test_an_empty_geneval_section_scores_mt_geneval_in_the_metric_names_as_in_the_run():
    from fairmt.recipes.gacl.results import metric_patterns

    assert "test.geneval_accuracy" in metric_patterns({**BASE, "geneval": {}})
    assert "test.geneval_accuracy" not in metric_patterns({**BASE, "geneval": {"test": False}})
    assert not any("geneval" in p for p in metric_patterns(BASE))


def test_the_runner_reads_no_raw_recipe_mapping():
    """No ``config.get(key, literal)``, ``config[...]`` or ``.get(..., default)`` on the recipe in the runner: every
    default is the schema's or the Config's."""
    path = Path(__file__).resolve().parents[2] / "fairmt" / "recipes" / "gacl" / "runner.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [
        f"line {n.lineno}: {ast.unparse(n)}"
        for n in ast.walk(tree)
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "get"
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id in ("config", "data_cfg", "geneval")
        )
        or (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "config")
    ]
    assert found == []
