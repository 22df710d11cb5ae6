"""Issue 45: every numeric field of every Config dataclass declares its range once (the class's ``RANGES``,
:class:`fairmt.errors.Range`); the Config's ``__post_init__`` and the recipe checks both read that declaration."""

from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
import re
import typing

import pytest

from fairmt.errors import COUNT, POSITIVE, PROBABILITY, WEIGHT, FairmtError, Range, declared_ranges


def _numeric(hint) -> bool:
    args = typing.get_args(hint) or (hint,)
    return any(a in (int, float) for a in args) and bool not in args


def config_classes() -> list[type]:
    """Every ``*Config`` dataclass defined in ``fairmt.trainers`` (found by walking the package: a new one is seen)."""
    import fairmt.trainers

    found = {}
    for info in pkgutil.iter_modules(fairmt.trainers.__path__):
        module = importlib.import_module(f"fairmt.trainers.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__name__.endswith("Config")
                and obj.__module__.startswith("fairmt.")
            ):
                found[f"{obj.__module__}:{obj.__name__}"] = obj
    return [found[k] for k in sorted(found)]


def own_numeric_fields(cls: type) -> list[str]:
    """The int/float fields fairmt declares on ``cls`` or a fairmt base (not those inherited from transformers)."""
    hints = typing.get_type_hints(cls)
    own = {n for c in cls.__mro__ if c.__module__.startswith("fairmt.") for n in vars(c).get("__annotations__", {})}
    return [f.name for f in dataclasses.fields(cls) if f.name in own and _numeric(hints.get(f.name))]


def numeric_fields(cls: type) -> list[str]:
    """Every int/float field of ``cls``, those inherited from ``transformers.TrainingArguments`` included."""
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls) if _numeric(hints.get(f.name))]


def _bad(rng: Range):
    """A value just outside ``rng`` (or NaN for a float range without bounds)."""
    if rng.low is not None:
        return rng.low if rng.low_open else (rng.low - 1 if rng.integer else rng.low - 0.5)
    if rng.high is not None:
        return rng.high if rng.high_open else rng.high + 1
    return math.nan


CLASSES = config_classes()


def test_the_configs_are_found():
    names = {c.__name__ for c in CLASSES}
    assert {
        "GACLConfig",
        "FairContrastiveConfig",
        "FairnessSamplingConfig",
        "CCDConfig",
        "DPCEConfig",
        "ADEPTConfig",
        "AdversarialConfig",
        "WordDebiasConfig",
    } <= names


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_every_numeric_config_field_declares_a_range_and_its_post_init_checks_it(cls, tmp_path):
    ranges = declared_ranges(cls)
    missing = [n for n in numeric_fields(cls) if n not in ranges]
    assert not missing, (
        f"{cls.__name__}: numeric fields without a declared range (the class's RANGES, or "
        f"fairmt.errors.TRAINING_ARGUMENTS_RANGES for TrainingArguments' own): {missing}"
    )
    assert {
        "learning_rate",
        "num_train_epochs",
        "per_device_train_batch_size",
        "weight_decay",
        "max_grad_norm",
        "max_steps",
        "seed",
    } <= set(ranges)
    fields = {f.name for f in dataclasses.fields(cls)}
    assert set(ranges) <= fields, f"{cls.__name__}.RANGES names no field: {set(ranges) - fields}"
    cls(output_dir=str(tmp_path))  # the defaults lie in their ranges
    for name, rng in ranges.items():
        bads = {_bad(rng), math.nan, math.inf} if not rng.integer else {_bad(rng), 2.5}
        for bad in bads - set(rng.also):
            with pytest.raises(FairmtError) as err:
                cls(output_dir=str(tmp_path), **{name: bad})
            msg = str(err.value)
            assert f"{cls.__name__}.{name} must be {rng.text()}, got {bad!r}" == msg, msg


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_the_recipe_checks_use_the_same_declaration(cls):
    """Every ranged field given as a recipe key of a Trainer section (``training``, ``objective_args``, ``stage2``)
    is refused by :func:`check_training` with the same range text."""
    from fairmt.recipes._checks import check_training, field_ranges

    ranged = field_ranges(cls)
    assert ranged, cls
    for name, rng in ranged.items():
        with pytest.raises(FairmtError) as err:
            check_training({name: _bad(rng)}, [cls])
        assert str(err.value).startswith(f"recipe key training.{name} must be {rng.text()}, got "), str(err.value)
        check_training({name: rng.low if rng.low is not None and not rng.low_open else 1}, [cls])


def test_recipe_keys_that_feed_a_config_field_under_another_name_use_its_range():
    from fairmt.recipes import _schema as rs

    assert rs.CONFIG_FEEDS
    for (family, section, key), (spec, field_name) in rs.CONFIG_FEEDS.items():
        model = rs.SCHEMAS[family].model_fields[section].annotation
        model = next(a for a in typing.get_args(model) or (model,) if isinstance(a, type))
        module, _, name = spec.partition(":")
        cls = getattr(importlib.import_module(module), name)
        rng = declared_ranges(cls).get(field_name)
        info = model.model_fields[key]
        metadata = [
            *info.metadata,
            *(m for a in typing.get_args(info.annotation) for m in getattr(a, "__metadata__", ())),
        ]
        assert rng is not None and any(m is rng for m in metadata), (family, section, key)


@pytest.mark.parametrize(
    "recipe, override, text",
    [
        (
            "gacl/tiny_offline",
            "training.gacl_lambda=-1",
            "recipe key training.gacl_lambda must be a finite number ≥ 0, got -1",
        ),
        (
            "classification/fcl",
            "objective_args.fcl_beta=-1",
            "recipe key objective_args.fcl_beta must be a finite number ≥ 0, got -1",
        ),
        ("ccd/minilm_cda", "training.beta=-1", "recipe key training.beta must be a finite number ≥ 0, got -1"),
        ("sampling/celeba_resnet50", "clusters.n_init=0", "recipe key clusters.n_init must be ≥ 1, got 0 (int)"),
    ],
)
def test_the_issues_recipes_fail_their_dry_run_with_one_line(recipe, override, text, capsys):
    from fairmt.cli import main

    try:
        rc = main(["train", recipe, override, "--dry-run"])
    except SystemExit as exit_:
        rc = exit_.code
    assert rc == 2
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if ln.startswith("fairmt: error:")] == [f"fairmt: error: {text}"], err


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_hf_argument_parser_still_reads_the_configs(cls):
    """The ranges are a class attribute, not field metadata (which HfArgumentParser hands to argparse)."""
    from transformers import HfArgumentParser

    (args,) = HfArgumentParser(cls).parse_args_into_dataclasses(["--output_dir", "/tmp/unused"])
    assert isinstance(args, cls)


def test_range_boundaries_and_text():
    assert WEIGHT.ok(0.0) and WEIGHT.ok(3) and not WEIGHT.ok(-1e-9) and not WEIGHT.ok(math.inf)
    assert not POSITIVE.ok(0.0) and POSITIVE.ok(1e-12) and not POSITIVE.ok(math.nan)
    assert PROBABILITY.ok(0) and PROBABILITY.ok(1.0) and not PROBABILITY.ok(1.0000001)
    assert COUNT.ok(1) and not COUNT.ok(0) and not COUNT.ok(1.0) and not COUNT.ok(True)
    assert not WEIGHT.ok("1") and not WEIGHT.ok(None)
    import numpy as np

    assert COUNT.ok(np.int64(3)) and WEIGHT.ok(np.float32(0.5)) and not POSITIVE.ok(np.float64("nan"))
    assert PROBABILITY.text() == "a finite number in [0, 1]" and COUNT.text() == "an integer ≥ 1"
    assert Range(0.0, 1.0, high_open=True).text() == "a finite number in [0, 1)"
    steps = Range(1, integer=True, also=(-1,))
    assert steps.ok(-1) and steps.ok(5) and not steps.ok(0) and not steps.ok(-1.0) and not steps.ok(-2)
    assert steps.text() == "an integer ≥ 1, or -1"
    WEIGHT.check("x", None)  # None is the field type's business (a documented "unset")


@pytest.mark.needs("fairseq")
def test_the_fairseq_criterion_reads_the_same_declarations():
    from fairmt.fairseq.criterion import CRITERION_RANGES, GACLKDCriterionConfig

    ranged = set(CRITERION_RANGES)
    numeric = set(own_numeric_fields(GACLKDCriterionConfig)) - {"seed"}  # seed: fairseq's common.seed
    assert numeric <= ranged, numeric - ranged


def test_simclr_config_declares_its_ranges_and_checks_them_where_it_is_built():
    """SimCLRConfig (a PretrainedConfig, not a dataclass): every numeric argument has a Range, checked in its
    ``__init__``; the sampling recipe's ``model.projection_*`` keys use the same declarations (CONFIG_FEEDS)."""
    import inspect
    import re

    from fairmt.models.vision import SimCLRConfig

    numeric = [
        n
        for n, p in inspect.signature(SimCLRConfig.__init__).parameters.items()
        if {"int", "float"} & set(re.findall(r"\w+", str(p.annotation)))
    ]
    ranges = declared_ranges(SimCLRConfig)
    assert numeric and set(numeric) <= set(ranges), (numeric, ranges)
    SimCLRConfig(projection_dim=8)
    for name, rng in ranges.items():
        for bad in (_bad(rng), 2.5):
            with pytest.raises(FairmtError, match=rf"^SimCLRConfig\.{name} must be {rng.text()}, got "):
                SimCLRConfig(**{name: bad})
    from fairmt.recipes._schema import CONFIG_FEEDS

    assert {("sampling", "model", n) for n in ranges} <= set(CONFIG_FEEDS)


@pytest.mark.needs("fairseq")
def test_the_fairseq_tasks_declare_their_ranges():
    """Every numeric field of ``gacl_translation``'s dataclass (fairseq's TranslationConfig fields included) has a
    range in TASK_RANGES, which the tasks check when fairseq sets them up (tests/trainers/test_fairseq_plugin.py refuses one
    through fairseq's own argument parsing)."""
    from fairmt.fairseq.task import TASK_RANGES, GACLTranslationConfig, check_task_ranges

    numeric = set(numeric_fields(GACLTranslationConfig))
    assert {"max_source_positions", "max_target_positions"} <= numeric <= set(TASK_RANGES), numeric - set(TASK_RANGES)
    check_task_ranges(GACLTranslationConfig())  # fairseq's defaults lie in the ranges
    for name, rng in TASK_RANGES.items():
        with pytest.raises(FairmtError, match=rf"^--{name.replace('_', '-')} must be {re.escape(rng.text())}, got "):
            check_task_ranges(GACLTranslationConfig(**{name: _bad(rng)}))
