"""Exhaustive paper cards (issue 51 part B, :mod:`fairmt.recipes.cards`): on a card marked ``exhaustive: true`` every
key of the resolved recipe is classified (the paper's value, a declared departure, inert, bookkeeping, a library
default); a one-key override of a card-relevant setting is reported by the dry run naming the key; a copy names
itself; a copy whose card drops one entry fails with "unclassified: KEY"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from fairmt.commands.train import builtin_recipes, load_recipe
from fairmt.errors import FairmtError
from fairmt.recipes.cards import (
    BOOKKEEPING,
    TRAINING_RELEVANT,
    card_of_config,
    card_path,
    read_card,
    trainer_field,
    trainer_roots,
)

RECIPES = builtin_recipes()
EXHAUSTIVE = sorted(
    n for n, p in RECIPES.items() if card_path(p).is_file() and read_card(card_path(p)).get("exhaustive") is True
)

HELD_OUT = {  # one-key overrides of card-relevant settings (paper values, own and shared departures, inert ones)
    "classification/cscl_bios_bert": [
        ("objective_args.temperature=0.5", "stages.stage1.temperature"),
        ("objective_args.cs_lambda=1", "stages.stage1.cs_lambda"),
        ("training.adam_beta2=0.98", "stages.stage1.adam_beta2"),
        ("training.warmup_steps=10", "stages.stage1.warmup_steps"),
        ("training.lr_scheduler_type=cosine", "stages.stage1.lr_scheduler_type"),
        ("stage2.label_smoothing_factor=0.1", "stages.stage2.label_smoothing_factor"),
        ("model.dropout=0.2", "model.dropout"),
        ("data.eda_num_aug=2", "data.eda_num_aug"),
        ("training.gradient_accumulation_steps=2", "stages.stage1.gradient_accumulation_steps"),
    ],
    **{
        f"gacl/{n}": [
            ("training.learning_rate=1e-5", "training.learning_rate"),
            ("training.adam_beta2=0.98", "training.adam_beta2"),
            ("training.max_grad_norm=0.5", "training.max_grad_norm"),
            ("training.weight_decay=0.01", "training.weight_decay"),
            ("data.seed=1", "data.seed"),
            ("geneval.num_beams=4", "geneval.num_beams"),
        ]
        for n in (
            "nllb1.3b_en-de",
            "nllb600m_en-de",
            "small100_en-de",
            "small100_en-de_balanced",
            "small100_en-de_gfst",
            "small100_en-de_handcrafted",
            "small100_en-de_official",
        )
    },
    **{  # FCL (Shen et al. 2022): each loss-term switch of Eq. 3 / Eq. 2 (CE+SCL, CE−FCL, fairlib's EO group term)
        f"classification/{n}": [
            ("objective_args.fcl_scl_weight=0.5", "stages.train.fcl_scl_weight"),
            ("objective_args.fcl_fcl_weight=0.5", "stages.train.fcl_fcl_weight"),
            ("objective_args.fcl_group_term=eo", "stages.train.fcl_group_term"),
        ]
        for n in (
            "fcl",
            "fcl_bios",
            "fcl_bios_nurse_surgeon",
            "fcl_hatespeech",
            "fcl_moji",
            "fcl_moji_ce_fcl",
            "fcl_moji_ce_scl",
        )
    },
    "classification/fcl_ft_moji": [
        ("objective_args.fcl_scl_weight=0.5", "stages.stage1.fcl_scl_weight"),
        ("objective_args.fcl_group_term=eo", "stages.stage1.fcl_group_term"),
    ],
    **{
        f"classification/{n}": [
            ("objective_args.temperature=0.5", "stages.stage1.temperature"),
            ("objective_args.cs_lambda=3", "stages.stage1.cs_lambda"),
        ]
        for n in ("cscl_jigsaw_bert", "cscl_two_stage")
    },
    **{
        f"classification/{n}": [
            ("objective_args.gamma=0.5", "stages.train.gamma"),
            ("objective_args.cs_lambda=2", "stages.train.cs_lambda"),
        ]
        for n in ("cscl_one_stage", "cscl_one_stage_bios_bert")
    },
    **{  # the baselines: a shared (family-file) Trainer setting
        f"classification/{n}": [("training.adam_beta2=0.98", "stages.train.adam_beta2")]
        for n in ("cscl_ce_bert", "cscl_inlp_bert", "fcl_ce", "fcl_inlp", "inlp")
    },
    **{
        f"classification/{n}": [("objective_args.adv_n_layers=3", "stages.train.adv_n_layers")]
        for n in ("adversarial", "cscl_adversarial_bert", "fcl_adversarial")
    },
    **{  # fairness-driven sampling on images (Martin & Ogbuokiri): augmentation strength, initialisation, phase
        # lengths, temperature, probe regularisation; a key typed for both stages is named per stage (resolved.<stage>)
        f"sampling/{n}": [
            ("augment.crop_scale=[0.2,1.0]", "augment.crop_scale"),
            ("augment.jitter=[0.4,0.4,0.4,0.1]", "augment.jitter"),
            ("model.pretrained=true", "model.pretrained"),
            ("stage2.num_train_epochs=10", "resolved.stage2.num_train_epochs"),
            ("stage2.init=scratch", "stage2.init"),
            ("stage1.sampling_temperature=0.2", "resolved.stage1.sampling_temperature"),
            ("probe.C=0.1", "probe.C"),
        ]
        for n in ("celeba_resnet50", "celeba_resnet50_simclr", "chexpert_resnet50", "chexpert_resnet50_simclr")
    },
    "sampling/hatespeech_gru": [  # the text extension: its Algorithm 1 readings, temperature, length, encoder
        ("objective_args.pair_loss=pairs", "stages.train.pair_loss"),
        ("objective_args.negative_draw=product", "stages.train.negative_draw"),
        ("objective_args.sampling_temperature=0.2", "stages.train.sampling_temperature"),
        ("training.num_train_epochs=10", "stages.train.num_train_epochs"),
        ("model.dropout=0.1", "model.dropout"),
    ],
    **{
        f"ccd/{n}": [
            ("training.learning_rate=2e-5", "training.learning_rate"),
            ("training.adam_beta2=0.98", "training.adam_beta2"),
            ("training.max_grad_norm=0.5", "training.max_grad_norm"),
            ("training.max_length=32", "training.max_length"),
            ("evaluation.seat_n_samples=500", "evaluation.seat_n_samples"),
        ]
        for n in (
            "adept_f_minilm",
            "bert_large_paper",
            "bert_tuples_lora",
            "dpce_minilm",
            "minilm_cda",
            "roberta_base_paper",
        )
    },
}


def test_the_exhaustive_cards_are_these():
    assert EXHAUSTIVE == sorted(HELD_OUT), EXHAUSTIVE


@pytest.mark.parametrize("name", EXHAUSTIVE)
def test_every_exhaustive_card_classifies_every_resolved_key(name):
    card = card_of_config(load_recipe(name))
    assert card.exhaustive and not card.problems, "\n".join(card.problems)
    counts = card.counts()
    assert "unclassified" not in counts and counts["paper"] > 0 and counts["bookkeeping"] > 0
    roots = trainer_roots(card.classified)
    relevant = [k for k in card.classified if (trainer_field(k, roots) or "").split(".")[0] in TRAINING_RELEVANT]
    assert relevant and all(card.classified[k] not in ("library default", "bookkeeping") for k in relevant)


@pytest.mark.parametrize("name", EXHAUSTIVE)
def test_a_one_key_override_is_a_difference_naming_the_key(name):
    for override, key in HELD_OUT[name]:
        block = card_of_config(load_recipe(name, [override])).departures_block()
        lines = [
            line
            for line in block.splitlines()
            if key in line and ("overridden" in line or "undeclared" in line or "unclassified" in line)
        ]
        assert any(line.startswith(f"  overridden: {key}: ") for line in lines), (override, block)
        assert any("undeclared" in line for line in lines), (override, block)


def test_an_override_of_a_setting_the_objective_does_not_read_is_refused():
    """An inert setting set by an override is refused naming what decides it (issue 50's rule), so a card never
    shows it as matching or as a difference."""
    with pytest.raises(FairmtError, match="recipe key objective_args.fcl_beta is not read"):
        load_recipe("classification/cscl_bios_bert", ["objective_args.fcl_beta=0.3"])


def test_the_dry_run_prints_the_overridden_setting(capsys):
    from fairmt.cli import main

    main(["train", "classification/cscl_bios_bert", "--dry-run", "training.adam_beta2=0.98"])
    err = capsys.readouterr().err
    assert (
        "  overridden: stages.stage1.adam_beta2: 0.999 -> 0.98 (the card declares 0.999 [paper-silent choice])" in err
    )
    assert (
        "undeclared: departure stages.stage1.adam_beta2 declares recipe value 0.999, the recipe resolves to 0.98" in err
    )


def _copy(tmp_path: Path, name: str, card_edit=None) -> dict:
    src = RECIPES[name]
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    if card_edit is not None:
        card_path(dst).parent.mkdir()
        for f in card_path(src).parent.glob("_*.yaml"):
            shutil.copy(f, card_path(dst).parent / f.name)
        data = yaml.safe_load(card_path(src).read_text(encoding="utf-8"))
        card_edit(data)
        card_path(dst).write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return load_recipe(dst)


def test_a_copied_recipe_whose_card_drops_a_setting_fails_unclassified(tmp_path):
    def drop(card):
        card["departures"] = [d for d in card["departures"] if d["key"] != "model.dropout"]

    card = card_of_config(_copy(tmp_path, "classification/cscl_bios_bert", drop))
    assert card.problems == ["unclassified: model.dropout"]
    assert card.recipe == str(tmp_path / "cscl_bios_bert.yaml") and card.copy_of == "classification/cscl_bios_bert"
    assert "  unclassified: model.dropout" in card.departures_block().splitlines()


def test_a_copy_without_a_card_is_checked_against_the_builtin_card_by_name_and_names_itself(tmp_path):
    card = card_of_config(_copy(tmp_path, "classification/cscl_bios_bert"))
    assert not card.problems and card.copy_of == "classification/cscl_bios_bert"
    assert (
        card.departures_block()
        .splitlines()[0]
        .endswith(
            f"({tmp_path / 'cscl_bios_bert.yaml'}, a copy of classification/cscl_bios_bert: fairmt recipes --paper "
            f"classification/cscl_bios_bert)"
        )
    )
    assert card_of_config(load_recipe("classification/cscl_bios_bert")).copy_of is None


def test_an_inert_setting_is_shown_as_inert_and_its_value_not_compared(tmp_path):
    """An entry the card lists that another setting makes unused is shown as inert, never as matching."""

    def edit(card):
        card["inert"] = [
            {
                "keys": ["stages.stage1.temperature"],
                "when": {"stages.stage1.normalize": False},
                "reason": "made up for the test",
            }
        ]

    card = card_of_config(_copy(tmp_path, "classification/cscl_bios_bert", edit))
    assert card.inert["stages.stage1.temperature"] == "made up for the test"
    assert "| `stages.stage1.temperature` | 2.0 | 2.0 | " in card.table() and "inert: made up for the test" in (
        card.table()
    )
    assert "  inert: stages.stage1.temperature (made up for the test)" in card.departures_block()


def test_bookkeeping_entries_each_say_why():
    assert all(isinstance(r, str) and r for r in BOOKKEEPING.values())
    assert not {p.rsplit(".", 1)[-1] for p in BOOKKEEPING} & TRAINING_RELEVANT


def test_rho_estimator_is_inert_when_rho_is_set_never_matching():
    """Issue 51 (a): with training.rho set by hand, ρ's estimator is shown as inert, not as the paper's value."""
    card = card_of_config(load_recipe("ccd/bert_large_paper", ["training.rho=0.5"]))
    assert card.inert["training.rho_estimator"].startswith("ρ is set by hand")
    row = next(line for line in card.table().splitlines() if line.startswith("| `training.rho_estimator`"))
    assert "inert: ρ is set by hand" in row
    assert "training.rho_estimator" not in card_of_config(load_recipe("ccd/bert_large_paper")).inert


def test_the_sampling_probe_learning_rate_is_inert_under_lbfgs():
    """Issue 51 (a): the L-BFGS probe ignores probe.learning_rate, so the card shows it as inert, not as matching."""
    card = card_of_config(load_recipe("sampling/celeba_resnet50"))
    assert card.inert["probe.learning_rate"].startswith("the gradient probe's settings")
    assert (
        "probe.learning_rate"
        not in card_of_config(load_recipe("sampling/celeba_resnet50", ["probe.optimizer=sgd"])).inert
    )


SAMPLING = ("celeba_resnet50", "celeba_resnet50_simclr", "chexpert_resnet50", "chexpert_resnet50_simclr")


@pytest.mark.parametrize("name", [f"sampling/{n}" for n in SAMPLING] + ["sampling/hatespeech_gru"])
def test_the_sampling_readings_are_never_shown_as_the_papers_value(name):
    """Issue 51: where the paper's sentence is ambiguous or silent (the batch loss, the two-stage draw, SimCLR's
    jitter/greyscale probabilities, phase 2's length, initialisation and τ, the ImageNet weights), the card says
    so (an interpretation, a paper-silent choice or an extension; inert where unused), never "the paper's value"."""
    card = card_of_config(load_recipe(name))
    if name.endswith("hatespeech_gru"):
        keys = ["stages.train.pair_loss", "stages.train.negative_draw"]
    else:
        keys = [
            "augment.jitter_p",
            "augment.grayscale_p",
            "augment.jitter",
            "augment.crop_scale",
            "augment.flip_p",
            "augment.blur_p",
            "resolved.stage2.num_train_epochs",
            "resolved.stage2.sampling_temperature",
            "stage2.init",
            "model.pretrained",
            "probe.features",
        ]
        keys += [] if name.endswith("simclr") else ["resolved.stage2.pair_loss", "resolved.stage2.negative_draw"]
    assert {k: card.classified[k] for k in keys if card.classified[k] == "paper"} == {}
    assert all(card.classified[k] in ("interpretation", "paper-silent choice") for k in keys), card.classified


def test_the_sampling_walk_reads_each_stage_trainer_config_once():
    """The sampling family resolves training/stage1/stage2 into each stage's Trainer Config (resolved.<stage>): the
    walk reads a Trainer field there, once per stage, and keeps the stage keys that are no Trainer field."""
    from fairmt.recipes.cards import flatten, resolved_values

    flat = flatten(resolved_values(load_recipe("sampling/celeba_resnet50")))
    assert flat["resolved.stage1.learning_rate"] == flat["resolved.stage2.learning_rate"] == 3e-4
    assert flat["resolved.stage2.num_train_epochs"] == 30 and flat["stage2.init"] == "stage1"
    assert not {k for k in flat if k.split(".")[0] in ("training", "stage1")}
    assert {k for k in flat if k.startswith("stage2.")} == {"stage2.init"}


def test_a_card_includes_another_family_file_by_its_builtin_name_only(tmp_path):
    """sampling/hatespeech_gru runs on the classification runner and includes that family's shared file by name
    (classification/_classification.yaml, read from the built-in recipes); any other path with a slash is refused."""
    from fairmt.recipes.cards import check_card

    card = card_of_config(load_recipe("sampling/hatespeech_gru"))
    shared = {d.key for d in card.departures if d.shared == "classification/_classification.yaml"}
    assert "stages.train.adam_beta2" in shared and "inlp.n_iterations" in card.inert
    path = RECIPES["sampling/hatespeech_gru"]
    data = read_card(card_path(path))
    for bad in ("../classification/cards/_classification.yaml", "nosuch/_classification.yaml"):
        problems = check_card(
            {**data, "include": [bad]}, load_recipe("sampling/hatespeech_gru"), base=tmp_path
        ).problems
        assert f"include {bad!r} is not a file beside the card nor a built-in family's FAMILY/_FILE.yaml" in problems
