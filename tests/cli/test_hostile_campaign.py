"""Every fast case of the hostile-input campaign of issue 26 (:mod:`tests.hostile_campaign`) ends ``ok``: one
``fairmt: error:`` line and exit 2, or exit 0 where the input is acceptable — never a traceback, a lost file or a
number computed from a wrong input. The four cases that start processes (real training runs, two processes) are in
``tests/cli/test_concurrency.py`` (two of them as its own tests with more checks, two through :func:`run_case`);
``python scripts/hostile_campaign.py`` counts all of them for any fairmt version."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostile_campaign import CATEGORIES, Case, all_cases, build_all, classify, run_case

CASES = [c for c in all_cases() if not (c.slow and c.proc)]  # the demo's bad counts too: refused at once


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return build_all(tmp_path_factory.mktemp("campaign") / "work")


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_campaign_case(case: Case, work: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    category, detail = run_case(case, work, tmp_path / "case")
    assert category == "ok", f"{category}: {detail}"


def test_the_campaign_is_the_issues_size_and_covers_every_area():
    areas = {c.area for c in all_cases()}
    assert {
        "outputs",
        "options",
        "models",
        "caches",
        "pipes",
        "recipes",
        "api",
        "push",
        "report",
        "data loss",
        "wrong numbers",
        "child process",
        "resume",
        "full disk",
        "network",
    } <= areas
    assert len(all_cases()) >= 230
    assert len({c.id for c in all_cases()}) == len(all_cases()), "case ids must be unique"


def test_classify_sorts_the_outcomes_worst_first():
    """The categories a case can fall in, checked on made-up outcomes (the campaign's counts depend on them)."""
    error = Case("x", "options", argv=lambda e: [])
    assert classify(error, 2, "fairmt: error: bad\n", None, []) == ("ok", "fairmt: error: bad")
    assert classify(error, 2, "usage: fairmt\nfairmt: error: bad\nmore\n", None, [])[0] == "ok"
    assert classify(error, 2, "usage: ...\nerror: bad\n", None, [])[0] == "unclear"
    assert classify(error, 0, "", None, [])[0] == "wrong_exit0"
    assert classify(error, 0, "", None, ["out.json"])[0] == "data_loss"
    assert classify(error, None, "", RuntimeError("boom"), [])[0] == "traceback"
    assert (
        classify(error, 2, "Traceback (most recent call last):\n ...\nfairmt: error: x\n", None, [])[0] == "traceback"
    )
    ok = Case("y", "options", argv=lambda e: [], expect="ok")
    assert classify(ok, 0, "", None, [])[0] == "ok"
    api = Case("z", "api", api=lambda e: None)
    assert classify(api, None, "", ValueError("predictions is None"), [])[0] == "ok"
    assert classify(api, None, "", TypeError("'NoneType' object"), [])[0] == "traceback"
    assert classify(api, None, "", None, [], {"gap": float("nan")})[0] == "wrong_exit0"
    assert set(CATEGORIES) == {"traceback", "data_loss", "wrong_exit0", "unclear", "ok"}


def test_every_command_with_overwrite_has_a_campaign_case_that_protects_a_home_folder():
    """The guard of issue 35: a command that takes --overwrite (found in the CLI's parsers, so a new one cannot be
    missed) must have an ``overwrite`` case — pointed at a home folder whose files must survive — here, and its
    detailed checks in ``tests/cli/test_overwrite_safety.py`` (listed in its ``COVERED``)."""
    import test_overwrite_safety as safety
    from test_overwrite_safety import COVERED

    from fairmt.cli import _leaves, build_parser
    from hostile_campaign import OVERWRITE_ARGV

    commands = {
        leaf.prog.removeprefix("fairmt ")
        for leaf in _leaves(build_parser())
        if "--overwrite" in leaf._option_string_actions
    }
    assert len(commands) >= 15 and {"train", "sweep", "demo", "data fairseq-prep"} <= commands
    cases = {c.id for c in all_cases() if c.area == "overwrite"}
    missing = sorted(cmd for cmd in commands if f"{cmd} --overwrite into a home folder" not in cases)
    assert not missing, (
        f"commands with --overwrite and no overwrite case in tests/support/hostile_campaign.py: {missing}"
    )
    assert set(OVERWRITE_ARGV) == commands, "an overwrite case for a command that has no --overwrite"
    untested = sorted(cmd for cmd in commands if cmd not in COVERED)
    assert not untested, f"commands with --overwrite not covered in tests/cli/test_overwrite_safety.py: {untested}"
    for cmd, tests in COVERED.items():
        assert tests and all(callable(getattr(safety, t, None)) for t in tests), (cmd, tests)


def test_every_numeric_config_field_has_a_campaign_case():
    """The guard of issue 45: a Config dataclass of ``fairmt.trainers`` (found by walking the package) that grows a
    numeric field must have that field in :data:`tests.hostile_campaign.CONFIG_VALUES` (values outside its range that
    a careless user passes), and every ``*Config`` found there is in the table."""
    from test_config_ranges import config_classes, own_numeric_fields

    from hostile_campaign import CONFIG_EXTRA, CONFIG_VALUES

    for cls in config_classes():
        spec = f"{cls.__module__}:{cls.__name__}"
        base = next(
            (
                f"{b.__module__}:{b.__name__}"
                for b in cls.__mro__[1:]
                if f"{b.__module__}:{b.__name__}" in CONFIG_VALUES
            ),
            None,
        )
        declared_here = set(vars(cls).get("__annotations__", {})) & set(own_numeric_fields(cls))
        if spec not in CONFIG_VALUES and base and not declared_here:
            continue  # a subclass that only presets its base's fields (CSCLConfig, FCLConfig): the base's cases hold
        assert spec in CONFIG_VALUES, f"{spec} has no campaign cases (tests/support/hostile_campaign.py CONFIG_VALUES)"
        covered = set(CONFIG_VALUES[spec]) | set(CONFIG_EXTRA.get(spec, {}))
        missing = set(own_numeric_fields(cls)) - covered
        assert not missing, f"{spec}: numeric fields without a campaign case: {sorted(missing)}"
