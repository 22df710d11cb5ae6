"""The declared recipe schema (:mod:`fairmt.commands.recipe_schema`) and the runners' own defaults stay in step: a
key a runner reads from its ``DEFAULTS`` must be declared in its family's schema (else a recipe that sets it would be
refused as unknown), and the defaults themselves are a valid recipe of the family."""

from __future__ import annotations

from typing import Any

import pytest

from fairmt.commands.recipe_schema import SCHEMAS, _known, validate_recipe
from fairmt.scripts.recipe_checks import COMMON_TOP


def _runner_defaults() -> dict[str, dict[str, Any]]:
    from fairmt.scripts import classification, sampling

    return {"classification": classification.defaults(), "sampling": sampling.DEFAULTS}


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
    validate_recipe({"method": family, **defaults})


def test_an_undeclared_default_is_found(monkeypatch):
    """The check above can fail: a key added to a runner's defaults alone is reported, nested or not."""
    from fairmt.scripts import sampling

    monkeypatch.setitem(sampling.DEFAULTS, "new_top", 1)
    monkeypatch.setitem(sampling.DEFAULTS, "probe", {**sampling.DEFAULTS["probe"], "new_knob": 2})
    assert _undeclared("sampling", sampling.DEFAULTS) == ["new_top", "probe.new_knob"]
