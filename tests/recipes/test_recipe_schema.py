"""The declared recipe schema (:mod:`fairmt.recipes._schema`) is the one place of the runners' defaults: what a runner
resolves from an empty recipe is declared in its family's schema (else a recipe that sets it would be refused as
unknown) and is itself a valid recipe of the family; no runner keeps a defaults table of its own."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import Field

from fairmt.recipes._checks import COMMON_TOP
from fairmt.recipes._schema import SCHEMAS, _known, validate_recipe


def _runner_defaults() -> dict[str, dict[str, Any]]:
    from fairmt.recipes.classification import runner as classification
    from fairmt.recipes.sampling import runner as sampling

    resolved = sampling.resolve_config({"method": "sampling"})
    return {
        "classification": classification.defaults(),
        "sampling": {k: v for k, v in resolved.items() if k not in ("resolved", "output_dir")},
    }


def _undeclared(family: str, data: dict, loc: tuple = ()) -> list[str]:
    known = _known(SCHEMAS[family], loc)
    if known is None:  # a free-form section (Trainer arguments, checked against the Config dataclasses)
        return []
    if not loc:
        known = known | COMMON_TOP
    missing = [".".join((*loc, k)) for k in data if k not in known]
    for key, value in data.items():
        if isinstance(value, dict) and key in known:
            missing += _undeclared(family, value, (*loc, key))
    return missing


@pytest.mark.parametrize("family", ["classification", "sampling"])
def test_every_key_a_runner_defaults_is_declared_in_its_schema(family):
    defaults = _runner_defaults()[family]
    assert not _undeclared(family, defaults), f"{family}: keys of DEFAULTS the schema does not declare"
    SCHEMAS[family].model_validate({"method": family, **defaults})  # valid values (a full dump sets keys the
    # default objective does not read, e.g. stage2 of a one-stage run, which a written recipe is refused for)


def test_an_undeclared_default_is_found():
    """The check above can fail: a key a runner would resolve beside the schema is reported, nested or not."""
    defaults = _runner_defaults()["sampling"]
    defaults = {**defaults, "new_top": 1, "probe": {**defaults["probe"], "new_knob": 2}}
    assert _undeclared("sampling", defaults) == ["new_top", "probe.new_knob"]


@pytest.mark.parametrize("family", ["classification", "sampling"])
def test_a_runner_keeps_no_defaults_of_its_own(family):
    """Every default once, in the schema: the runner has no ``DEFAULTS`` table and no ``config.get(key, literal)``
    fallback (it reads the resolved recipe)."""
    import importlib
    import inspect
    import re

    module = importlib.import_module(f"fairmt.recipes.{family}.runner")
    assert not hasattr(module, "DEFAULTS")
    source = inspect.getsource(module)
    assert not re.findall(
        r"\b(?:cfg|config|kwargs|[a-z]cfg)(?:\[[^]]+\])*\.get\(\s*[\"'][a-z_]+[\"']\s*,",
        source.replace('config.get("method", ', ""),
    ), "a runner re-defaults a recipe key"


# ------------------------------------------------------------------------------------------- key descriptions


def _keys(model, prefix: str = ""):
    """``(dotted key, field)`` of every key of ``model``, nested sections (also those inside a union or a list)
    walked."""
    from pydantic import BaseModel

    for name, field in model.model_fields.items():
        yield prefix + name, field
        stack, seen = [field.annotation], set()
        while stack:
            hint = stack.pop()
            if isinstance(hint, type) and issubclass(hint, BaseModel):
                if hint not in seen:
                    seen.add(hint)
                    yield from _keys(hint, f"{prefix}{name}.")
            else:
                stack.extend(typing.get_args(hint))


def _undescribed(model) -> list[str]:
    return [key for key, field in _keys(model) if not (field.description or "").strip()]


@pytest.mark.parametrize("family", sorted(SCHEMAS))
def test_every_key_of_every_family_has_a_description(family):
    keys = list(_keys(SCHEMAS[family]))
    assert any("." in key for key, _ in keys)  # the walk reaches the nested sections
    assert _undescribed(SCHEMAS[family]) == []


def test_an_undescribed_nested_key_is_found():
    from pydantic import BaseModel

    class Inner(BaseModel):
        bare: int = 1

    class Outer(BaseModel):
        section: Inner | None = Field(None, description="a section")

    assert _undescribed(Outer) == ["section.bare"]


def test_config_fed_keys_read_the_config_field_help():
    """A recipe key feeding a Config field (CONFIG_FEEDS) is described by that field's own help text: one source."""
    import dataclasses
    import importlib

    from fairmt.recipes._schema import CONFIG_FEEDS, config_help

    for (family, *path), (spec, name) in CONFIG_FEEDS.items():
        module, _, cls = spec.partition(":")
        config = getattr(importlib.import_module(module), cls)
        fields_of = {f.name: f for f in dataclasses.fields(config)} if dataclasses.is_dataclass(config) else {}
        if name in fields_of:
            help_text = fields_of[name].metadata["help"]
        else:  # SimCLRConfig (a PretrainedConfig): its docstring's Args entry
            help_text = config.__doc__.split(f"{name}: ", 1)[1].split("\n")[0].strip()
        assert config_help(spec, name) == " ".join(help_text.split())
        fields = dict(_keys(SCHEMAS[family]))
        assert help_text in fields[".".join(path)].description, path
    from fairmt.trainers.ccd import CCDConfig  # data.groups is the default of CCDConfig.groups (ccd runner)

    groups_help = {f.name: f for f in dataclasses.fields(CCDConfig)}["groups"].metadata["help"]
    assert f"CCDConfig.groups: {groups_help}" in dict(_keys(SCHEMAS["ccd"]))["data.groups"].description


def test_config_help_reads_metadata_then_docstring_args_up_the_bases(tmp_path, monkeypatch):
    """The help of a field: its metadata help, else its ``Args:`` entry in the class (or a base class) docstring."""
    from fairmt.errors import FairmtError
    from fairmt.recipes._schema import config_help

    (tmp_path / "schemadesc_cfg.py").write_text(
        "from dataclasses import dataclass, field\n\n\n@dataclass\nclass Base:\n"
        '    """Base.\n\n    Args:\n        depth: how deep it goes,\n            in layers.\n    """\n\n'
        '    depth: int = 2\n\n\n@dataclass\nclass Child(Base):\n    """Child."""\n\n'
        '    width: int = field(default=3, metadata={"help": "how wide (``:class:`~a.B``` units)"})\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert config_help("schemadesc_cfg:Child", "width") == "how wide (`B` units)"
    assert config_help("schemadesc_cfg:Child", "depth") == "how deep it goes, in layers."
    with pytest.raises(FairmtError, match="declares no help text"):
        config_help("schemadesc_cfg:Child", "height")


def test_a_range_error_names_the_bound_not_the_description():
    """Descriptions are documentation: a range error still says what the key must be (unchanged wording)."""
    from fairmt.errors import FairmtError

    with pytest.raises(FairmtError, match=r"^recipe key model.max_length must be ≥ 1, got 0 \(int\)$"):
        validate_recipe({"method": "classification", "model": {"max_length": 0}})
    with pytest.raises(FairmtError, match=r"^recipe key patience must be a positive number of epochs or null, got 0$"):
        validate_recipe({"method": "classification", "patience": 0})


def test_classification_objectives_are_named_as_their_config_names_them():
    """Issue 50: a classification recipe's objective is the FairContrastiveConfig objective of the same name (a
    two-stage one trains its encoder with exactly that objective); sampling, adversarial and inlp are other Trainers."""
    from fairmt.recipes.classification.objectives import TWO_STAGE, _stage_configs
    from fairmt.recipes.classification.schema import ClassificationRecipe
    from fairmt.trainers.fair_contrastive import OBJECTIVES

    recipe_objectives = set(typing.get_args(ClassificationRecipe.model_fields["objective"].annotation))
    assert recipe_objectives - {"sampling", "adversarial", "inlp"} == set(OBJECTIVES)
    for objective in TWO_STAGE:
        cfg = {"objective": objective, "output_dir": "run", "seed": 0, "objective_args": {}, "stage2": {}}
        stages = _stage_configs({**cfg, "training": {}, "model": {"pooling": "cls"}})
        assert stages["stage1"][1]["objective"] == objective and stages["stage2"][1]["objective"] == "ce"


@pytest.mark.parametrize("old, new", [("cscl_two_stage", "cscl_pretrain"), ("fcl_two_stage", "fcl_pretrain")])
def test_an_objectives_older_recipe_spelling_still_runs_with_a_deprecation_notice(old, new):
    with pytest.warns(FutureWarning, match=f"recipe key objective: {old} is deprecated: use objective='{new}'"):
        resolved = validate_recipe(
            {"method": "classification", "objective": old, "objective_args": {"temperature": 0.1}}
        )
    assert resolved is not None and resolved.objective == new
