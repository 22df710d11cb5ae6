"""Paper cards (:mod:`fairmt.recipes.cards`): every recipe with a card resolves to the paper's values wherever the card
does not declare a departure; a recipe that claims a paper has a card (or is on the short list of those whose card
comes with their family's issue); the check fails on a changed value, on a departure that no longer differs, and the
CLI prints the card (table and JSON) and ends the dry run with its departures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from fairmt.commands.train import builtin_recipes, load_recipe
from fairmt.recipes.cards import CARDS_PENDING, KINDS, card_of_config, card_path, check_card, claims_paper, read_card

RECIPES = builtin_recipes()
WITH_CARDS = sorted(n for n, p in RECIPES.items() if card_path(p).is_file())
CSCL = ["classification/cscl_bios_bert", "classification/cscl_jigsaw_bert", "classification/cscl_one_stage_bios_bert"]


def test_the_cscl_and_fcl_recipes_have_cards():
    wanted = {n for n in RECIPES if n.startswith(("classification/cscl_", "classification/fcl"))} | {
        "classification/inlp",
        "classification/adversarial",
    }
    assert wanted <= set(WITH_CARDS), sorted(wanted - set(WITH_CARDS))


@pytest.mark.parametrize("name", WITH_CARDS)
def test_every_card_matches_its_resolved_recipe(name):
    card = card_of_config(load_recipe(name))
    canonical = RECIPES[name].resolve()  # a recipe that is a symbolic link shares its target's card
    assert card is not None and card.recipe in (name, f"{canonical.parent.name}/{canonical.stem}")
    assert not card.problems, "\n".join(card.problems)
    assert card.settings, "a card lists the paper's settings"
    assert all(d.kind in KINDS and d.reason for d in card.departures)


def test_a_recipe_that_claims_a_paper_has_a_card():
    claiming = {n for n, p in RECIPES.items() if claims_paper(p)}
    missing = sorted(claiming - set(WITH_CARDS) - CARDS_PENDING)
    assert not missing, f"recipes that claim a paper without a card (recipes/<family>/cards/<name>.yaml): {missing}"
    done = sorted(CARDS_PENDING & set(WITH_CARDS))
    assert not done, f"these have their card now: remove them from CARDS_PENDING: {done}"
    assert CARDS_PENDING <= set(RECIPES), sorted(CARDS_PENDING - set(RECIPES))
    assert claims_paper(RECIPES["classification/cscl_bios_bert"]) and not claims_paper(RECIPES["gacl/tiny_offline"])


def _copy(tmp_path: Path, name: str, edit) -> dict:
    """A modified copy of a built-in recipe with its card beside it, loaded."""
    src = RECIPES[name]
    dst = tmp_path / src.name
    config = yaml.safe_load(src.read_text(encoding="utf-8"))
    edit(config)
    dst.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    card_path(dst).parent.mkdir()
    shutil.copy(card_path(src), card_path(dst))
    for shared in card_path(src).parent.glob("_*.yaml"):  # the family's include files (exhaustive cards)
        shutil.copy(shared, card_path(dst).parent / shared.name)
    return load_recipe(dst)


def test_a_changed_value_without_a_card_entry_fails(tmp_path):
    config = _copy(
        tmp_path, "classification/cscl_bios_bert", lambda c: c["objective_args"].update(temperature=0.5, normalize=True)
    )
    problems = card_of_config(config).problems
    assert len(problems) == 2, problems
    assert any(
        p.startswith("stages.stage1.temperature: the recipe resolves to 0.5, the paper's value is 2.0")
        for p in problems
    ), problems
    assert any(p.startswith("stages.stage1.normalize:") for p in problems), problems


def test_a_default_the_recipe_leaves_out_is_checked_too(tmp_path):
    """A key removed from the recipe resolves to the schema's / Config's default, which the card sees."""
    config = _copy(tmp_path, "classification/cscl_bios_bert", lambda c: c["model"].pop("max_length"))
    problems = card_of_config(config).problems
    assert problems == [
        "model.max_length: the recipe resolves to 128, the paper's value is 192 "
        "(release: sh/run_gradcache_pretrain_contrastive_biasbios.sh max_length=192), and the card "
        "declares no departure"
    ]


def test_a_departure_that_no_longer_differs_fails(tmp_path):
    config = _copy(
        tmp_path, "classification/cscl_bios_bert", lambda c: c["objective_args"].update(cs_anchor_weighting="cell_size")
    )
    problems = card_of_config(config).problems
    assert any(
        "departure stages.stage1.cs_anchor_weighting declares recipe value uniform, the recipe resolves to "
        "cell_size" in p
        for p in problems
    ), problems
    card = read_card(card_path(RECIPES["classification/cscl_bios_bert"]))
    for d in card["departures"]:
        if d["key"] == "stages.stage1.cs_anchor_weighting":
            d["recipe"] = "cell_size"
    assert any("no longer differs" in p for p in check_card(card, config).problems)


def test_a_malformed_card_is_reported():
    config = load_recipe("classification/cscl_bios_bert")
    card = {
        "recipe": "classification/cscl_bios_bert",
        "paper": "x",
        "settings": [{"key": "model.no_such_key", "paper": 1, "source": "s"}],
        "departures": [{"key": "seed", "recipe": 0, "kind": "made up", "reason": "r"}],
    }
    problems = check_card(card, config, "classification/cscl_bios_bert").problems
    assert len(problems) == 2, problems
    assert problems[0] == "setting model.no_such_key is not a key of the resolved recipe"
    assert problems[1].startswith("departure seed needs key, recipe, kind (one of paper-silent choice,")


@pytest.mark.parametrize("name", CSCL)
def test_cscl_contrasts_unnormalised_features_at_tau_2(name, capsys):
    from fairmt.cli import main

    assert main(["recipes", "--paper", name, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data)[:5] == ["recipe", "paper", "settings", "departures", "facts"]
    assert all(list(s) == ["key", "paper", "recipe", "source"] for s in data["settings"])
    assert all(list(d) == ["key", "paper", "recipe", "kind", "reason"] for d in data["departures"])
    stage = "train" if "one_stage" in name else "stage1"
    got = {s["key"]: s["recipe"] for s in data["settings"]}
    assert got[f"stages.{stage}.normalize"] is False and got[f"stages.{stage}.temperature"] == 2.0
    assert {d["key"] for d in data["departures"]} >= {f"stages.{stage}.cs_anchor_weighting"}


def test_recipes_paper_table_and_refusals(capsys):
    from fairmt.cli import main

    assert main(["recipes", "--paper", "classification/cscl_ce_bert"]) == 0
    out = capsys.readouterr().out
    assert "| setting | paper | recipe | source | departure |" in out and "| `model.max_length` | 192 | 192 |" in out
    assert main(["recipes", "--paper", "gacl/tiny_offline"]) == 2
    assert "has no paper card" in capsys.readouterr().err


def test_dry_run_ends_with_the_departures(capsys):
    """Here the real run would fail (no BERT, no Bias-in-Bios offline): the block still ends the report, before the
    one-line verdict."""
    from fairmt.cli import main

    assert main(["train", "classification/cscl_inlp_bert", "--dry-run"]) in (0, 2)
    err = capsys.readouterr().err.strip().splitlines()
    if err[-1].startswith("fairmt: error: the real run would fail"):
        err = err[:-1]
    start = next(i for i, line in enumerate(err) if line.startswith("paper card ("))
    block = err[start:]
    card = card_of_config(load_recipe("classification/cscl_inlp_bert"))
    assert block == card.departures_block().splitlines(), block  # the block ends the report, nothing after it
    own = [d for d in card.departures if not d.shared]
    assert len([line for line in block if not line.startswith(("  + ", "  inert: "))]) == 1 + len(own), block
    assert block[0].endswith("(fairmt recipes --paper classification/cscl_inlp_bert)")
    assert "  inlp.n_iterations: paper (silent), recipe 50 [paper-silent choice]" in block


def test_sweep_of_a_shen_recipe_selects_by_accuracy_then_gap(tmp_path):
    """Shen et al. select hyper-parameter settings by accuracy, then GAP: a recipe names that rule for `fairmt sweep`
    (sweep_selection), with its tolerance; --select still overrides it, and other recipes keep DTO."""
    from fairmt.sweep.spec import build_spec

    def spec(recipe, select=None, overrides=()):
        return build_spec(
            recipe,
            list(overrides),
            ["objective_args.fcl_beta=0.1,0.3"] if "fcl" in recipe else ["inlp.n_iterations=10,20"],
            [],
            "1",
            [],
            select=select,
            output_dir=str(tmp_path / "s"),
        )

    moji = spec("classification/fcl_moji", overrides=["selection_tolerance=0.02"])
    assert (moji.select, moji.select_tolerance) == ("accuracy_then_gap", 0.02)
    assert spec("classification/fcl_moji", select="dto").select == "dto"
    assert spec("classification/inlp").select == "dto"


ISSUE_38 = [
    "sampling/celeba_resnet50",
    "sampling/chexpert_resnet50",
    "sampling/celeba_resnet50_simclr",
    "sampling/chexpert_resnet50_simclr",
    "sampling/hatespeech_gru",
    "classification/sampling",
    "ccd/minilm_cda",
    "ccd/bert_large_paper",
    "ccd/roberta_base_paper",
    "ccd/bert_tuples_lora",
    "gacl/small100_en-de",
    "gacl/small100_en-de_official",
]


@pytest.mark.parametrize("name", ISSUE_38)
def test_sampling_ccd_gacl_cards_pass_through_the_cli(name, capsys):
    from fairmt.cli import main

    assert main(["recipes", "--paper", name, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recipe"] in (name, "sampling/hatespeech_gru") and data["settings"]
    assert not card_of_config(load_recipe(name)).problems


def test_sampling_defaults_are_the_papers_reading_and_each_other_reading_is_one_override_away(tmp_path):
    """The sampling recipes resolve to the paper's reading (Z once, the batch loss, the two-stage draw, the three
    augmentations, probes on z); an override to the other reading is a departure the card must declare."""
    card = card_of_config(load_recipe("sampling/celeba_resnet50"))
    got = {r.key: r.recipe for r in card.settings + card.departures}
    kinds = {d.key: d.kind for d in card.departures}
    assert kinds["stage2.pair_loss"] == kinds["stage2.negative_draw"] == "interpretation"
    assert (
        got["stage2.index_refresh_steps"],
        got["stage2.pair_loss"],
        got["stage2.negative_draw"],
        got["augment.flip_p"],
        got["augment.blur_p"],
        got["probe.features"],
    ) == (0, "batch", "two_stage", 0.0, 0.0, "projection")
    for override, key in (
        ("stage2.pair_loss=pairs", "stage2.pair_loss"),
        ("stage2.negative_draw=product", "stage2.negative_draw"),
        ("stage2.index_refresh_steps=null", "stage2.index_refresh_steps"),
        ("augment.flip_p=0.5", "augment.flip_p"),
        ("probe.features=backbone", "probe.features"),
    ):
        problems = card_of_config(load_recipe("sampling/celeba_resnet50", [override])).problems
        assert len(problems) == 1 and (
            problems[0].startswith(f"{key}: the recipe resolves to")  # a paper value
            or problems[0].startswith(f"departure {key} declares recipe value")
        ), (override, problems)  # an interpretation (issue 51: the two readings are declared as such)


def test_gacl_card_states_the_release_values():
    card = card_of_config(load_recipe("gacl/small100_en-de_official"))
    dep = {d.key: (d.paper, d.recipe, d.kind) for d in card.departures}
    assert dep["training.kd_alpha"] == (None, 0.4, "released-code")
    assert dep["training.gacl_lambda"] == (None, 1.0, "released-code")
    assert dep["training.temperature"] == (None, 1.0, "released-code")
    assert dep["training.positive_reduction"] == ("sum", "mean", "released-code")
    assert dep["geneval.metric"] == ("accuracy", "explicit_accuracy", "released-code")
    assert dep["geneval.patience"] == (None, 10, "released-code")


def test_the_docs_departure_tables_are_generated_from_the_cards():
    """Each paper's departures are on one page of the docs, generated from the cards at build time (a placeholder that
    docs_gen/hooks.py fills): together the pages show exactly `fairmt recipes --departures`, once."""
    import re
    import sys

    from fairmt.commands.train import all_departures_markdown

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "docs_gen"))
    import cards as docs_cards

    found = [
        (page.relative_to(root), m.group(1))
        for page in sorted((root / "docs").rglob("*.md"))
        for m in docs_cards.DEPARTURES.finditer(page.read_text(encoding="utf-8"))
    ]
    papers = docs_cards.papers()
    named = [next(p for p in papers if p.startswith(authors)) for _, authors in found]
    assert sorted(named) == sorted(papers), (found, papers)  # every paper once, no paper twice
    assert all(str(page).startswith("docs/reproducing/") for page, _ in found), found
    expected = all_departures_markdown()
    shown = [docs_cards.departures_md(authors) for _, authors in found]
    assert sorted(shown) == sorted(
        part if part.endswith("\n") else part + "\n" for part in re.split(r"\n(?=\*\*)", expected)
    ), "the generated tables differ"


def test_recipes_of_one_comparison_table_share_one_selection_rule():
    """Issue 44 item 16: inlp, cscl_one_stage, cscl_two_stage, fcl and adversarial (one table: Bias in Bios, frozen
    MiniLM) select by one rule by default; the check names the table and each recipe's rule when one departs."""
    from fairmt.commands.train import load_recipe
    from fairmt.recipes.cards import COMPARISON_TABLES, check_comparison_tables

    assert check_comparison_tables(lambda n: load_recipe(n, [])) == []
    names = next(iter(COMPARISON_TABLES.values()))
    assert {load_recipe(n, [])["selection"] for n in names} == {"loss"}
    (problem,) = check_comparison_tables(
        lambda n: load_recipe(n, ["selection=dto"] if n == "classification/fcl" else [])
    )
    assert "different selection rules" in problem and "classification/fcl: dto" in problem
    assert "classification/inlp: loss" in problem
