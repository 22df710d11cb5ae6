"""The CCD recipe family's layout (issue 50): the runners read the typed recipe only, the ccd runner split by job with
its old names importable for one release, SEAT's permutation count under one name with one default, one name for the
mean |SEAT d| in the results, and the run folder / training seed at the top level of a recipe."""

from __future__ import annotations

import ast
import inspect
import re
import warnings
from pathlib import Path

import pytest

import sources
from fairmt.errors import FairmtError

ROOT = Path(__file__).resolve().parents[2]
CCD = ROOT / "fairmt" / "recipes" / "ccd"


def test_old_runner_names_are_the_new_objects_with_a_warning():
    import importlib

    from fairmt.recipes.ccd import runner

    for old, target in sorted(runner._MOVED.items()):
        module, _, new = target.partition(":")
        runner.__dict__.pop(old, None)  # warned once per process: forget an earlier access
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(runner, old)
        assert value is getattr(importlib.import_module(module), new or old), old
        assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
            f"fairmt.recipes.ccd.runner.{old} is deprecated: import {module}.{new or old} instead (the old path goes "
            "in fairmt 0.2)"
        ], old
    with pytest.raises(AttributeError):
        runner.no_such_name  # noqa: B018


def test_the_project_imports_no_moved_runner_name():
    """fairmt, the tests and scripts import the split modules' names from their new homes."""
    from fairmt.recipes.ccd.runner import _MOVED

    bad = []
    for folder in ("fairmt", "tests", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in sources.nodes(path):
                if isinstance(node, ast.ImportFrom) and node.module in (
                    "fairmt.recipes.ccd.runner",
                    "fairmt.scripts.ccd",
                ):
                    bad += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names if a.name in _MOVED]
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in _MOVED
                    and isinstance(node.value, ast.Name)
                    and node.value.id in ("runner", "ccd")
                    and path.name != Path(__file__).name
                ):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value.id}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_family_runners_default_nothing_themselves():
    """No ``x.get(key, literal)`` re-default in the family's runners: every default is the schema's or the Config's."""
    bad = []
    for name in ("runner.py", "word_debias.py", "data.py", "measure.py", "utility.py"):
        for node in sources.nodes(CCD / name):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "setdefault")
                and len(node.args) == 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value is not None
            ):
                bad.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------------------------------------------ SEAT's count


def test_seat_permutation_count_has_one_default_under_one_name():
    from fairmt.cli import build_parser
    from fairmt.commands.eval_embeddings import register  # noqa: F401  (the command's parser below)
    from fairmt.eval.embedding import seat
    from fairmt.model_eval.embeddings import evaluate_embeddings, seat_section
    from fairmt.recipes.ccd.measure import measure
    from fairmt.recipes.ccd.schema import CcdEvaluation, WordEvaluation

    n = seat.SEAT_N_SAMPLES
    assert n == 100_000  # the SEAT reference code's default (sent-bias main.py --n_samples)
    for fn in (seat.seat_score, seat.permutation_p_value):
        assert inspect.signature(fn).parameters["n_samples"].default == n
    assert inspect.signature(seat_section).parameters["seat_n_samples"].default == n
    assert inspect.signature(measure).parameters["seat_n_samples"].default == n
    assert inspect.signature(evaluate_embeddings).parameters["seat_n_samples"].default is None  # → SEAT_N_SAMPLES
    assert CcdEvaluation().seat_n_samples == WordEvaluation().seat_n_samples == n
    args = build_parser().parse_args(["eval", "embeddings", "--model", "m"])
    assert args.seat_n_samples == n
    assert seat.seat_n_samples_of(None, None, "f") == n and seat.seat_n_samples_of(7, None, "f") == 7
    with pytest.warns(DeprecationWarning, match=r"f\(n_samples=...\) is deprecated: use seat_n_samples=5"):
        assert seat.seat_n_samples_of(None, 5, "f") == 5
    with pytest.raises(FairmtError, match="n_samples=5 and seat_n_samples=6 differ"):
        seat.seat_n_samples_of(6, 5, "f")
    with pytest.warns(DeprecationWarning, match="DEFAULT_N_SAMPLES is deprecated"):
        assert seat.DEFAULT_N_SAMPLES == n
    # no other SEAT default left in the places that had one
    for rel in (
        "fairmt/model_eval/embeddings.py",
        "fairmt/integrations/st_evaluators.py",
        "fairmt/commands/eval_embeddings.py",
        "fairmt/recipes/ccd/schema.py",
        "fairmt/recipes/ccd/measure.py",
        "fairmt/recipes/ccd/word_debias.py",
    ):
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert not re.search(r"(n_samples\s*:\s*[\w |]+=\s*|n_samples\",\s*|default=|D\()(100_?000|10_?000)\b", text), (
            rel
        )


def test_old_seat_flag_and_keyword_still_work(capsys, shared_data, monkeypatch):
    from fairmt.cli import build_parser
    from fairmt.integrations import SEATEvaluator

    args = build_parser().parse_args(["eval", "embeddings", "--model", "m", "--n-samples", "7"])
    assert args.seat_n_samples == 7
    assert "--n-samples is the old spelling of --seat-n-samples" in capsys.readouterr().err
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    with pytest.warns(DeprecationWarning, match="SEATEvaluator"):
        ev = SEATEvaluator(seat_tests="6", n_samples=9)
    assert ev.seat_n_samples == ev.n_samples == 9
    assert ev.get_config_dict()["seat_n_samples"] == ev.get_config_dict()["n_samples"] == 9
    assert SEATEvaluator(seat_tests="6").seat_n_samples == 100_000


# ------------------------------------------------------------------------------------------------ result names


def test_mean_abs_seat_d_has_one_name_and_the_old_one_is_kept():
    from fairmt.recipes.ccd.measure import SEAT_AVG_ABS, measure, seat_avg_abs, summary_sections

    assert SEAT_AVG_ABS == "seat_avg_abs_effect_size"  # the name of fairmt eval embeddings and SEATEvaluator
    res = {"after": {"seat_avg_abs": 0.25}}  # an older results file
    assert seat_avg_abs(res["after"]) == 0.25
    assert summary_sections(res)["test"] == {"seat_avg_abs_effect_size": 0.25, "seat_avg_abs": 0.25}
    assert inspect.getsource(measure).count("OLD_NAMES[SEAT_AVG_ABS]") == 1  # both names written by a run


# ------------------------------------------------------------------------------------------------ one recipe shape


def _ccd(**top):
    return {"method": "ccd", "model": "m", "data": {"tuples": "t.jsonl", "eval_size": 4}, **top}


def test_output_dir_and_seed_at_the_top_level(tmp_path):
    from fairmt.recipes.ccd.runner import resolve_config
    from fairmt.recipes.ccd.word_debias import resolve_config as word_config

    args = resolve_config(_ccd(output_dir=str(tmp_path / "a"), seed=7))
    assert (args.output_dir, args.seed, args.metric_for_best_model) == (str(tmp_path / "a"), 7, "eval_loss")
    old = resolve_config(_ccd(training={"output_dir": str(tmp_path / "b"), "seed": 3}))
    assert (old.output_dir, old.seed) == (str(tmp_path / "b"), 3)
    same = resolve_config(_ccd(output_dir="x", training={"output_dir": "x"}))
    assert same.output_dir == "x"
    assert resolve_config(_ccd(recipe_path="recipes/r.yaml")).output_dir == str(Path("outputs") / "r")
    for key, top, inner in (("output_dir", "a", "b"), ("seed", 1, 2)):
        with pytest.raises(FairmtError, match=rf"recipe keys {key} .* and training.{key} .* differ"):
            resolve_config(_ccd(**{key: top}, training={key: inner}))
    dpce = {"method": "dpce", "model": "m", "data": {"corpus": {"path": "c.txt"}}, "output_dir": "d", "seed": 5}
    args = word_config(dpce)
    assert (args.output_dir, args.seed) == ("d", 5)
