"""Every override takes effect or is refused (:meth:`fairmt.recipes._schema.Recipe.unread`): each shadowed or inert
key the classification and sampling families declare is refused in one line naming the key that wins, the keys the
run reads are accepted, and a paper card's dry-run lines name keys a user can type."""

from __future__ import annotations

import json

import pytest

from fairmt.errors import FairmtError
from fairmt.recipes import apply_overrides, load_recipe
from fairmt.recipes._schema import validate_recipe
from fairmt.recipes.classification import unread as cu
from fairmt.recipes.sampling import schema as ss


def _refused(config: dict, key: str, wins: str) -> None:
    with pytest.raises(FairmtError) as err:
        validate_recipe(config)
    line = str(err.value)
    assert line.startswith(f"recipe key {key} is not read: ") and wins in line and "\n" not in line, line


def _cls(**kw) -> dict:
    return {"method": "classification", **kw}


VALUES = {
    "gamma": 0.3,
    "cs_lambda": 2.0,
    "cs_anchor_weighting": "cell_size",
    "fcl_alpha": 0.5,
    "fcl_beta": 0.3,
    "fcl_scl_weight": 0.5,
    "fcl_fcl_weight": 0.5,
    "fcl_variant": "released",
    "fcl_group_term": "eo",
    "group_temperature": 0.1,
    "temperature": 0.1,
    "normalize": True,
    "views": "dropout",
    "eval_objective": True,
}
MODEL_VALUES = {
    "name_or_path": "x",
    "hidden_dim": 10,
    "num_layers": 1,
    "embed_batch_size": 4,
    "embed_dim": 8,
    "pooling": "cls",
    "normalize": True,
    "head_layers": 1,
    "gru_hidden": 8,
    "embed_epochs": 1,
    "embed_learning_rate": 0.1,
}
MODEL_TYPES = ("frozen_embedder", "finetune", "features", "gru_features", "gru", "embedding_bag")
DATA_VALUES = {
    "files": ["a.csv"],
    "split_seed": 1,
    "fractions": [0.6, 0.2, 0.2],
    "root": "r",
    "source": "hub",
    "language": "English",
    "attribute": "age",
    "moji_split_sizes": [1, 1, 1],
    "moji_n_train": 5,
    "eda_alpha": 0.2,
    "eda_num_aug": 2,
    "clm_model": "m",
    "clm_rate": 0.2,
    "backtranslate_model": "m",
    "pivot_lang": "fr",
}
DATASETS = ("bios", "bios_split", "jigsaw", "moji", "hatespeech")


def test_the_issue_example_is_refused_naming_the_key_that_wins():
    with pytest.raises(
        FairmtError,
        match=r"^recipe key training.temperature is not read: objective_args.temperature "
        r"\(0.01\) sets it for the objective; set that$",
    ):
        load_recipe("classification/fcl_moji", ["training.temperature=0.5"])
    # the key that wins takes the override, and the run's Config gets it
    from fairmt.recipes.classification.runner import resolve_config

    cfg = resolve_config(load_recipe("classification/fcl_moji", ["objective_args.temperature=0.5"]))
    assert cfg["stages"]["train"]["temperature"] == 0.5


@pytest.mark.parametrize("section", cu.TRAINER_SECTIONS)
@pytest.mark.parametrize("key", sorted(cu.SET_BY_RECIPE))
def test_config_fields_the_recipe_sets_itself_are_refused(section, key):
    if section == "training" and key == "output_dir":
        pytest.skip("training.output_dir is output_dir (the same folder, or refused when they differ)")
    value = {"objective": "ce", "seed": 1, "output_dir": "x"}[key]
    _refused(_cls(objective="cscl_pretrain", **{section: {key: value}}), f"{section}.{key}", cu.SET_BY_RECIPE[key])


@pytest.mark.parametrize(
    "key, value, objective",
    [
        ("temperature", 0.5, "fcl"),
        ("learning_rate", 0.1, "ce"),
        ("n_clusters", 3, "sampling"),
        ("adv_lambda", 0.5, "adversarial"),
    ],
)
def test_a_training_key_the_objective_args_set_again_is_refused(key, value, objective):
    _refused(
        _cls(objective=objective, training={key: value}, objective_args={key: value}),
        f"training.{key}",
        f"objective_args.{key}",
    )
    validate_recipe(_cls(objective=objective, objective_args={key: value}))  # alone, either takes effect
    validate_recipe(_cls(objective=objective, training={key: value}))


@pytest.mark.parametrize("section", ["training", "objective_args"])
def test_sampling_takes_its_pooling_from_the_model(section):
    _refused(_cls(objective="sampling", **{section: {"pooling": "cls"}}), f"{section}.pooling", cu.POOLING_FROM_MODEL)
    validate_recipe(_cls(objective="sampling", model={"type": "features", "pooling": "cls"}))


@pytest.mark.parametrize("field", sorted(cu.OBJECTIVE_FIELDS))
def test_an_objective_field_another_objective_reads_is_refused(field):
    readers = cu.OBJECTIVE_FIELDS[field]
    assert set(VALUES) == set(cu.OBJECTIVE_FIELDS)
    for objective in ("ce", "inlp", *cu.CONTRASTIVE):
        config = _cls(objective=objective, objective_args={field: VALUES[field]})
        if objective in readers:
            validate_recipe(config)
        else:
            _refused(config, f"objective_args.{field}", "objective")
            _refused(_cls(objective=objective, training={field: VALUES[field]}), f"training.{field}", "objective")


@pytest.mark.parametrize("objective", ["ce", "cscl", "fcl", "sampling", "adversarial", "inlp", *cu.TWO_STAGE])
def test_stage2_is_read_by_a_head_stage_only(objective):
    config = _cls(objective=objective, stage2={"learning_rate": 0.01})
    if objective in cu.TWO_STAGE:
        validate_recipe(config)
    else:
        _refused(config, "stage2.learning_rate", "objective")
    validate_recipe(_cls(objective="inlp", inlp={"head": "finetune"}, stage2={"learning_rate": 0.01}))


@pytest.mark.parametrize("dotted", sorted(cu.OBJECTIVE_KEYS))
def test_keys_of_other_objectives_are_refused(dotted):
    section, _, key = dotted.rpartition(".")
    value = {
        "stage1_patience": 3,
        "cache_stage2_features": False,
        "n_iterations": 5,
        "by_class": False,
        "head": "finetune",
    }[key]
    entry = {section: {key: value}} if section else {key: value}
    _refused(_cls(objective="ce", **entry), dotted, "objective")
    validate_recipe(_cls(objective=cu.OBJECTIVE_KEYS[dotted][0], **entry))


@pytest.mark.parametrize("key", sorted(cu.MODEL_KEYS))
def test_model_keys_of_other_model_types_are_refused(key):
    assert set(MODEL_VALUES) == set(cu.MODEL_KEYS)
    readers = cu.MODEL_KEYS[key]
    for mtype in MODEL_TYPES:
        config = _cls(model={"type": mtype, key: MODEL_VALUES[key]})
        if mtype in readers:
            validate_recipe(config)
        else:
            _refused(config, f"model.{key}", "model.type")


@pytest.mark.parametrize("key", sorted(cu.DATA_KEYS))
def test_data_keys_of_other_data_sets_are_refused(key):
    assert set(DATA_VALUES) == set(cu.DATA_KEYS)
    decider, readers = cu.DATA_KEYS[key]
    if decider == "dataset":
        other = next(d for d in DATASETS if d not in readers)
        _refused(_cls(data={"dataset": other, key: DATA_VALUES[key]}), f"data.{key}", "data.dataset")
        validate_recipe(_cls(data={"dataset": readers[0], key: DATA_VALUES[key]}))
    else:
        _refused(_cls(data={key: DATA_VALUES[key]}), f"data.{key}", "data.augment")
        validate_recipe(_cls(data={"augment": readers[0], key: DATA_VALUES[key]}))


def test_a_balance_target_without_a_method_is_refused():
    _refused(_cls(balance={"target": "y"}), "balance.target", "balance.method")
    validate_recipe(_cls(balance={"method": "reweight", "target": "y"}))


# ---------------------------------------------------------------------------------------------- sampling (images)
def _smp(**kw) -> dict:
    return {"method": "sampling", **kw}


def test_a_training_key_both_stages_set_again_is_refused():
    _refused(
        _smp(training={"learning_rate": 0.1}, stage1={"learning_rate": 0.2}, stage2={"learning_rate": 0.3}),
        "training.learning_rate",
        "stage1.learning_rate",
    )
    validate_recipe(_smp(training={"learning_rate": 0.1}, stage1={"learning_rate": 0.2}))  # stage 2 reads it


@pytest.mark.parametrize("key", ss.SAMPLING_ONLY)
def test_algorithm_1_options_on_a_simclr_stage_are_refused(key):
    value = {
        "epsilon": 0.2,
        "num_negatives": 2,
        "cluster_refit": "every_n_steps",
        "index_refresh_steps": 5,
        "negative_source": "bank",
        "pair_loss": "pairs",
        "negative_draw": "product",
    }[key]
    validate_recipe(_smp(objective="simclr", stage1={key: ss.SAMPLING_STAGE2[key]}))  # its default asks nothing
    _refused(_smp(stage1={key: value}), f"stage1.{key}", f"stage2.{key}")
    _refused(_smp(objective="simclr", stage2={key: value}), f"stage2.{key}", "objective")
    _refused(_smp(objective="simclr", training={key: value}), f"training.{key}", "objective")
    validate_recipe(_smp(training={key: value}))  # objective sampling: stage 2 reads it


@pytest.mark.parametrize("key", sorted(ss.DATA_KEYS))
def test_image_data_keys_of_other_data_sets_are_refused(key):
    value = {
        "root": "r",
        "source": "hub",
        "hub_id": "a/b",
        "splits": ["train"],
        "uncertain": "ones",
        "frontal_only": True,
        "age_threshold": 50,
        "max_samples": 10,
        "n": 10,
        "minority_fraction": 0.3,
        "image_size": 16,
    }[key]
    readers = ss.DATA_KEYS[key]
    other = next(d for d in ("celeba", "chexpert", "synthetic") if d not in readers)
    _refused(_smp(data={"dataset": other, key: value}), f"data.{key}", "data.dataset")
    validate_recipe(_smp(data={"dataset": readers[0], key: value}))


@pytest.mark.parametrize("key", sorted(ss.PROBE_KEYS))
def test_probe_keys_of_the_other_optimizer_are_refused(key):
    value = {"max_iter": 10, "learning_rate": 0.1, "epochs": 3}[key]
    other = "sgd" if ss.PROBE_KEYS[key] == "lbfgs" else "lbfgs"
    _refused(_smp(probe={"optimizer": other, key: value}), f"probe.{key}", "probe.optimizer")
    validate_recipe(_smp(probe={"optimizer": ss.PROBE_KEYS[key], key: value}))


# ---------------------------------------------------------------------------------------------- typed keys
def test_card_lines_name_keys_as_a_user_types_them():
    from fairmt.recipes.classification.schema import ClassificationRecipe

    given = {"objective_args": {"learning_rate": 0.1}}
    assert ClassificationRecipe.typed_key("stages.train.temperature", {}) == "objective_args.temperature"
    assert ClassificationRecipe.typed_key("stages.stage1.learning_rate", {}) == "training.learning_rate"
    assert ClassificationRecipe.typed_key("stages.train.learning_rate", given) == "objective_args.learning_rate"
    assert ClassificationRecipe.typed_key("stages.stage2.learning_rate", {}) == "stage2.learning_rate"
    assert ClassificationRecipe.typed_key("model.dropout", {}) == "model.dropout"
    assert ss.SamplingRecipe.typed_key("resolved.stage1.lr_scheduler_type", {}) == "stage1.lr_scheduler_type"
    # a field the recipe sets itself is typed as the key that sets it (stage 1's objective is always simclr)
    assert ss.SamplingRecipe.typed_key("resolved.stage1.seed", {}) == "seed"
    assert ss.SamplingRecipe.typed_key("resolved.stage2.kmeans_n_init", {}) == "clusters.n_init"
    assert ss.SamplingRecipe.typed_key("resolved.stage2.objective", {}) == "objective"
    assert ss.SamplingRecipe.typed_key("resolved.stage1.objective", {}) == "resolved.stage1.objective"


INERT_DEPARTURES = {
    ("classification/cscl_bios_bert", "data.backtranslate_model"),
    ("sampling/celeba_resnet50", "data.image_size"),
}
"""Departures a card declares on a key the recipe's run does not read (data.augment eda reads no back-translation
model; celeba has no synthetic image size): the card should drop them (issue 51's cards)."""


@pytest.mark.parametrize(
    "name", ["classification/fcl_moji", "classification/cscl_bios_bert", "sampling/celeba_resnet50"]
)
def test_every_departure_line_names_a_key_an_override_sets(name):
    """The dry run's departure lines name keys that an override takes, and that set the value the line shows."""
    from fairmt.recipes.cards import card_of_config, lookup, resolved_values

    config = load_recipe(name, [])
    card = card_of_config(config)
    assert card is not None and card.departures
    for d in card.departures:
        assert d.typed and not d.typed.startswith(("stages.", "resolved.")), d
        number = isinstance(d.recipe, (int, float)) and not isinstance(d.recipe, bool)
        if number and d.recipe == 0:  # a rate or count at 0 (e.g. model.dropout): 1.0 would be out of range
            candidates = [0.25 if isinstance(d.recipe, float) else 1]
        elif number:  # another value of the key's range: doubled (+1), else its neighbour (a choice such as 1 | 2)
            candidates = [d.recipe / 2] if 0 < d.recipe < 1 else [d.recipe * 2 + 1, d.recipe + 1, d.recipe - 1]
        else:
            candidates = [d.recipe]
        if (name, d.key) in INERT_DEPARTURES:  # a typable key, inert here: accepted at its default, else refused
            again = apply_overrides(json.loads(json.dumps(config)), [f"{d.typed}={json.dumps(candidates[0])}"])
            try:
                validate_recipe(again)
            except FairmtError as err:
                assert str(err).startswith(f"recipe key {d.typed} is not read"), err
            continue
        for i, value in enumerate(candidates):
            override = f"{d.typed}={json.dumps(value)}"
            again = apply_overrides(json.loads(json.dumps(config)), [override])
            try:
                validate_recipe(again)  # a key the recipe takes
            except FairmtError as err:
                if i == len(candidates) - 1 or "not read" in str(err):
                    raise
                continue  # out of this key's range: its next candidate
            break
        assert lookup(resolved_values(again), d.key) == value, override  # that sets the value the line shows


def test_an_inert_key_at_its_default_or_null_asks_nothing():
    """An inert key set to its default (or null) is accepted: a recipe written for one data set or objective can be
    switched to another by one override; a shadowed key is refused whatever its value."""
    validate_recipe(_smp(data={"dataset": "synthetic", "root": None, "source": "local"}))
    validate_recipe(
        _cls(
            objective="ce",
            stage1_patience=None,
            data={"dataset": "moji", "files": None},
            objective_args={"gamma": 0.1},
            stage2={"learning_rate": 1e-3},
            model={"type": "features", "num_layers": 2},
        )
    )
    _refused(_cls(objective="ce", stage2={"learning_rate": 0.01}), "stage2.learning_rate", "objective")
    _refused(
        _cls(training={"temperature": 0.1}, objective_args={"temperature": 0.1}),
        "training.temperature",
        "objective_args.temperature",
    )
    _refused(_smp(data={"dataset": "synthetic", "root": "r"}), "data.root", "data.dataset")
