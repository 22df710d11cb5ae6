"""The one registry of recipe families (:mod:`fairmt.recipes`): the code outside ``fairmt/recipes/`` asks a family
(:class:`~fairmt.recipes.Family`) and never branches on a method's name; an unknown ``method:`` is one line listing
the families, for ``fairmt train`` and ``fairmt sweep`` alike; ``docs/architecture.md`` names what a family answers."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import sources
from fairmt.cli import main
from fairmt.recipes import Family, families, family, set_output_dir

REPO = Path(__file__).resolve().parents[2]


def method_branches(package: Path, methods: set[str]) -> list[str]:
    """Every comparison outside ``fairmt/recipes/`` of something named ``method`` with a registered method's name
    (``method == "gacl"``, ``config.get("method") in ("ccd", "dpce")``, ...)."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).as_posix()
        if rel.startswith("fairmt/recipes/"):
            continue
        src = path.read_text(encoding="utf-8")
        for node in sources.nodes(src):
            if not isinstance(node, ast.Compare) or not all(
                isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops
            ):
                continue
            sides = [node.left, *node.comparators]
            names = set()
            for side in sides:
                if isinstance(side, ast.Constant) and isinstance(side.value, str):
                    names.add(side.value)
                elif isinstance(side, (ast.Tuple, ast.List, ast.Set)):
                    names |= {e.value for e in side.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if names & methods and any("method" in (ast.get_source_segment(src, s) or "") for s in sides):
                out.append(f"{rel}:{node.lineno}: {ast.get_source_segment(src, node)}")
    return out


def test_no_module_outside_the_families_branches_on_a_method_name(tmp_path):
    methods = set(families())
    assert method_branches(REPO / "fairmt", methods) == []
    planted = tmp_path / "fairmt" / "commands"  # the check finds what it should
    planted.mkdir(parents=True)
    (planted / "x.py").write_text('def f(config):\n    return config.get("method") in ("ccd", "dpce")\n')
    assert method_branches(tmp_path / "fairmt", methods) == [
        'fairmt/commands/x.py:2: config.get("method") in ("ccd", "dpce")'
    ]


def test_every_family_hook_names_a_function_and_its_folder_exists():
    root = REPO / "fairmt" / "recipes"
    for method, fam in families().items():
        assert (root / fam.folder / "family.py").is_file(), method
        assert fam.schema_class().__name__ == fam.schema.rpartition(":")[2]
        for hook in ("needs", "preflight", "dry_summary", "metrics", "sweep_reference"):
            ref = getattr(fam, hook)
            if ref:
                module, _, name = ref.partition(":")
                assert module.startswith(f"fairmt.recipes.{fam.folder}."), (method, hook, ref)
                import importlib

                assert callable(getattr(importlib.import_module(module), name)), (method, hook, ref)
        assert fam.preflight and fam.needs and fam.metrics and fam.results_format and fam.report_table, method
        assert fam.seed_key == "seed" and fam.seed_keys[0] == "seed" and fam.output_key in fam.output_keys


@pytest.mark.parametrize(
    "method, key",
    [("gacl", "output_dir"), ("ccd", "output_dir"), ("classification", "output_dir"), ("sampling", "output_dir")],
)
def test_output_dir_goes_under_the_familys_own_key(method, key):
    """``fairmt train --output-dir``: the family's key; a recipe-level family drops a ``training.output_dir`` (the
    recipe then names one folder)."""
    config = {"method": method, "training": {"output_dir": "old", "seed": 1}, "output_dir": "top"}
    set_output_dir(config, "new")
    assert family(method).output_dir(config) == "new"
    if key == "output_dir":
        assert config["training"] == {"seed": 1}
    else:
        assert config["output_dir"] == "top" and config["training"] == {"output_dir": "new", "seed": 1}


@pytest.mark.parametrize(
    "argv", [["train", "{r}"], ["train", "{r}", "--dry-run"], ["sweep", "{r}", "--grid", "training.seed=1,2"]]
)
def test_a_recipe_of_no_family_is_one_line_listing_the_families(argv, tmp_path, capsys):
    """``method: cards`` (a module of fairmt/recipes, not a family: once it passed validation and crashed) and a
    method that is not a string: exit 2, one line naming every registered family, no traceback."""
    for text in ("method: cards\n", "method: 3\n"):
        recipe = tmp_path / "r.yaml"
        recipe.write_text(text)
        assert main([a.format(r=recipe) for a in argv]) == 2
        err = capsys.readouterr().err
        lines = [x for x in err.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("fairmt: error: unknown method "), err
        assert "registered families are " + ", ".join(families()) in lines[0]


def test_the_architecture_page_names_what_a_family_answers():
    """docs/architecture.md's "Recipe families" section names every field of :class:`Family` (a field added without
    a word there fails here)."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Recipe families", 1)[1].split("\n## ", 1)[0]
    missing = [f.name for f in dataclasses.fields(Family) if f"`{f.name}`" not in section]
    assert not missing, f"docs/architecture.md's Recipe families section does not name {missing}"


# the places a recipe of each family may give its training seed (classification and sampling: the top level only)
SEED_PLACES = {
    "gacl/tiny_offline": ("seed", "training.seed"),
    "ccd/minilm_cda": ("seed", "training.seed"),
    "classification/fcl": ("seed",),
    "sampling/celeba_resnet50": ("seed",),
}


@pytest.mark.parametrize("name, place", [(n, p) for n, places in SEED_PLACES.items() for p in (None, *places)])
def test_a_sweep_seeds_a_recipe_whichever_place_names_its_seed(name, place):
    """``fairmt sweep --seeds`` sets every key of the family's :attr:`Family.seed_keys` (the one place and the older
    one the schema still reads), so a recipe that gives its seed in either place is swept, never refused as giving
    two different seeds."""
    from fairmt.recipes import load_recipe
    from fairmt.recipes._schema import resolve_recipe

    fam = family(load_recipe(name, validate=False)["method"])
    own = [f"{place}=5"] if place else []
    resolved = resolve_recipe(load_recipe(name, [*own, *(f"{k}=7" for k in fam.seed_keys)]))
    assert resolved.seed == 7
