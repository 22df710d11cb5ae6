"""Property tests of the CLI boundary (issue 26): hypothesis generates option values for every command and recipe
overrides for every recipe family; whatever it generates, ``fairmt`` ends in exit 0 or exactly one
``fairmt: error:`` line with exit 2 — never a traceback, never a changed file the user owns.

* Commands that finish in a fraction of a second on the campaign's tiny inputs (the ``eval`` commands, ``report``,
  ``augment cda``, ``recipes``) run whole, in this process, with one or two generated options added to a valid
  command line.
* Commands that would start real work (training, downloads, a demo, a sweep, uploads) are run up to where the work
  begins: the options are parsed and every check the CLI makes before the work (declared outputs, the device) runs.
* ``fairmt train RECIPE KEY=VALUE --dry-run`` gets a generated key of the family's declared schema
  (:data:`fairmt.recipes._schema.SCHEMAS`) and a generated YAML value, for every family.

Values come from small, fixed pools (numbers at and around the range limits, NaN, infinities, words, paths that
are files, folders, under a file, unwritable); the example budget is fixed and derandomized, so a run costs seconds
and finds the same things every time. The guards at the end fail when a command or a recipe family joins the CLI
without joining these tests, or when an option gets a value type these tests cannot generate for.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import typing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile_campaign import BASES, READ_ONLY, Case, Env, _recipe, build_all, classify, run_cli

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)

# The commands run whole (a valid command line each; the campaign's tiny inputs) ...
RUN: dict[str, typing.Callable[[Env], list[str]]] = {**BASES, "recipes": lambda e: ["recipes"]}
# ... and those run up to where their work begins (parse and the CLI's own checks), with a command line that parses.
PARSE: dict[str, typing.Callable[[Env], list[str]]] = {
    "train": lambda e: _recipe(e, dry=False),
    "demo": lambda e: ["demo"],
    "sweep": lambda e: ["sweep", "classification/fcl", "--grid", "objective_args.fcl_beta=0.1,1"],
    "augment llm": lambda e: ["augment", "llm", "--input", e.w("texts.txt"), "--output", e.t("t.jsonl")],
    "data download": lambda e: ["data", "download", "winomt"],
    "data corpora": lambda e: ["data", "corpora"],
    "data fairseq-prep": lambda e: ["data", "fairseq-prep", "--input", e.w("pairs.jsonl"), "--out", e.t("prep")],
    "data verify": lambda e: ["data", "verify", "winomt"],
    "push": lambda e: ["push", e.w("mt"), "me/tiny"],
    "plot embeddings": lambda e: ["plot", "embeddings", e.w("preds.jsonl"), "--out", e.t("emb.png")],
}
# Values never generated, with the reason: they would leave this machine or wait on it.
NOT_GENERATED = {("--backend", "openai"): "an endpoint on the network", ("--backend", "causal-lm"): "loads an LLM"}

WORDS = [
    "",
    "x",
    "abc",
    "-1",
    "0",
    "nan",
    "1e309",
    "de",
    "en-de",
    "{file}",
    "{dir}",
    "{under-file}",
    "{read-only}",
    "{new}",
    "{input}",
]
NUMBERS = ["-5", "-1", "0", "1", "2", "0.5", "1.5", "nan", "inf", "-inf", "1e309", "abc", "", "3.0"]
DEVICES = ["cpu", "bogus", "cuda", "cuda:7", "mps", "cpu:0", ""]
URLS = ["abc", "http://127.0.0.1:9/v1", "ftp://host/x", "http://", ""]


@functools.cache
def _leaf_parsers() -> dict[str, argparse.ArgumentParser]:
    """Each command's own parser, by its words (read, never changed: one walk per process)."""
    from fairmt.cli import _parser

    leaves: dict[str, argparse.ArgumentParser] = {}

    def walk(p: argparse.ArgumentParser, prefix: str) -> None:
        subs = [a for a in p._actions if isinstance(getattr(a, "choices", None), dict)]
        if not subs:
            leaves[prefix] = p
        for action in subs:
            for name, sub in action.choices.items():
                walk(sub, f"{prefix} {name}".strip())

    walk(_parser(), "")
    return leaves


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))
    ]


def _pool(action: argparse.Action) -> list[str] | None:
    """The values generated for an option (None: a flag, given or not), or ``"unknown"`` for a type these tests do
    not know how to generate for (the guard below refuses such an option)."""
    if action.nargs == 0:
        return None
    if action.choices:
        flag = action.option_strings[0]
        return [str(c) for c in action.choices if (flag, str(c)) not in NOT_GENERATED] + ["bogus", ""]
    kind = getattr(action.type, "fairmt_checked", (None,))[0]
    if kind in ("count", "seed", "number", "fraction"):
        return NUMBERS
    if kind == "device":
        return DEVICES
    if kind == "url":
        return URLS
    if kind == "program":
        return ["{file}", "{dir}", "{new}", "sh"]
    if action.type is None or getattr(action.type, "__name__", "") == "_csv":
        return WORDS
    return ["unknown"]


def _path(value: str, env: Env) -> str:
    return {
        "{file}": env.t("mine.txt"),
        "{dir}": env.t("folder"),
        "{under-file}": env.w("a-file", "x.json"),
        "{read-only}": str(READ_ONLY / "x.json"),
        "{new}": env.t("new", "out.json"),
        "{input}": env.w("texts.txt"),
    }.get(value, value)


@st.composite
def _option_values(draw, leaf: str):
    parser = _leaf_parsers()[leaf]
    actions = draw(st.lists(st.sampled_from(_options(parser)), min_size=1, max_size=2, unique_by=id))
    extra: list[str] = []
    for action in actions:
        flag = draw(st.sampled_from(action.option_strings))
        pool = _pool(action)
        extra += [flag] if pool is None else [flag, draw(st.sampled_from(pool))]
    return extra


def _run(argv: list[str], tmp: Path, whole: bool) -> tuple[int | None, str, BaseException | None]:
    if whole:
        rc, _, err, exc = run_cli(argv, {"FAIRMT_DATA": str(tmp.parent / "work" / "data"), "OPENAI_API_KEY": ""})
        return rc, err, exc
    import contextlib
    import io

    from fairmt.cli import _before_the_work, _expected, parse_command_line

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args = parse_command_line(argv)  # as main() reads it
            _before_the_work(args)
        return 0, err.getvalue(), None
    except SystemExit as exit_:
        return (exit_.code if isinstance(exit_.code, int) else 2), err.getvalue(), None
    except Exception as exc:  # noqa: BLE001 - the boundary's rule: expected failures are one line
        line = _expected(exc)
        return (2, err.getvalue() + f"fairmt: error: {line}\n", None) if line else (None, err.getvalue(), exc)


def _check(argv: list[str], env: Env, whole: bool) -> None:
    mine = env.tmp / "mine.txt"
    digest = hashlib.sha256(mine.read_bytes()).hexdigest()
    old = os.getcwd()
    os.chdir(env.tmp)
    try:
        rc, err, exc = _run(argv, env.tmp, whole)
    finally:
        os.chdir(old)
        from fairmt.outputs import release_run_dir

        release_run_dir()
    changed = [] if "--overwrite" in argv or hashlib.sha256(mine.read_bytes()).hexdigest() == digest else ["mine.txt"]
    category, detail = classify(Case("generated", "options", argv=lambda e: argv, expect="any"), rc, err, exc, changed)
    assert category == "ok", f"fairmt {' '.join(argv)}\n{category}: {detail}\n{err[-1500:]}"


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return build_all(tmp_path_factory.mktemp("properties") / "work")


def _env(work: Path) -> Env:
    """A fresh folder beside ``work`` for one example: the user's own file ``mine.txt`` and a folder."""
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="ex-", dir=work.parent))
    (tmp / "mine.txt").write_text("the user's own file\n")
    (tmp / "folder").mkdir()
    env = Env(work, tmp)
    env.cleanup = lambda: shutil.rmtree(tmp, ignore_errors=True)
    return env


def _substituted(argv: list[str], env: Env) -> list[str]:
    return [_path(a, env) for a in argv]


def _try_options(leaf: str, work: Path, whole: bool, examples: int) -> None:
    """``examples`` generated option sets for ``leaf``, each added to its valid command line and checked."""
    base = (RUN if whole else PARSE)[leaf]

    @settings(max_examples=examples, **SETTINGS)
    @given(extra=_option_values(leaf))
    def check(extra):
        env = _env(work)
        try:
            _check(_substituted([*base(env), *extra], env), env, whole=whole)
        finally:
            env.cleanup()

    check()


@pytest.mark.parametrize("leaf", sorted(RUN))
def test_generated_options_of_a_command_end_in_exit_0_or_one_error_line(leaf, work):
    _try_options(leaf, work, whole=True, examples=8)


@pytest.mark.parametrize("leaf", sorted(PARSE))
def test_generated_options_of_a_long_command_are_checked_before_its_work(leaf, work):
    _try_options(leaf, work, whole=False, examples=10)


# ---------------------------------------------------------------------------------------------- recipes

RECIPES = {
    "gacl": None,
    "ccd": "ccd/minilm_cda",
    "dpce": "ccd/dpce_minilm",
    "adept": "ccd/adept_f_minilm",
    "classification": "classification/fcl",
    "sampling": "sampling/celeba_resnet50",
}
"""The recipe each family's overrides are tried on (gacl: the tiny offline recipe on the campaign's tiny model)."""

TRAINER_KEYS = [
    "learning_rate",
    "max_steps",
    "per_device_train_batch_size",
    "num_train_epochs",
    "lr_scheduler_type",
    "warmup_ratio",
    "weight_decay",
    "seed",
    "fp16",
    "eval_strategy",
    "save_steps",
    "bogus_key",
]
YAML_VALUES = [
    "0",
    "-1",
    "1",
    "2",
    "0.5",
    "1.5",
    ".nan",
    ".inf",
    "-.inf",
    "abc",
    "''",
    "true",
    "no",
    "null",
    "[1,2]",
    "[]",
    "{a: 1}",
    "1e9",
    "-0.0",
]


def _schema_keys(family: str) -> list[str]:
    """Every key the family's schema declares, dotted; a section of Trainer arguments (a ``dict`` field) gets a few
    Trainer arguments and an unknown one."""
    from pydantic import BaseModel

    from fairmt.recipes._schema import SCHEMAS

    keys: list[str] = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            key = prefix + name
            keys.append(key)
            args = typing.get_args(field.annotation) or (field.annotation,)
            sections = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            if sections:
                walk(sections[0], key + ".")
            elif dict in args or field.annotation is dict:
                keys.extend(f"{key}.{k}" for k in TRAINER_KEYS)

    walk(SCHEMAS[family], "")
    return keys


def _recipe_argv(family: str, override: str, env: Env) -> list[str]:
    if RECIPES[family] is None:
        return _recipe(env, override)  # ends in --dry-run
    return ["train", RECIPES[family], override, "--dry-run"]


@pytest.mark.parametrize("family", sorted(RECIPES))
def test_generated_recipe_overrides_end_in_exit_0_or_one_error_line(family, work):
    keys = _schema_keys(family)

    @settings(max_examples=12, **SETTINGS)
    @given(key=st.sampled_from(keys), value=st.sampled_from(YAML_VALUES))
    def check(key, value):
        env = _env(work)
        try:
            _check(_recipe_argv(family, f"{key}={value}", env), env, whole=True)
        finally:
            env.cleanup()

    check()


# ---------------------------------------------------------------------------------------------- guards


def test_every_command_is_generated_for():
    """A new command must join RUN (run whole) or PARSE (run up to its work) above."""
    leaves = set(_leaf_parsers())
    assert leaves == set(RUN) | set(PARSE), (
        f"not generated for: {sorted(leaves - set(RUN) - set(PARSE))}; gone: {sorted(set(RUN) | set(PARSE) - leaves)}"
    )


def test_every_option_has_a_value_pool_and_every_number_a_checked_type():
    """Every option's values can be generated (a new value type must get a pool in ``_pool``), and every option that
    takes a number parses it with a range-checked type (``fairmt.commands._options``): a plain ``int``/``float``
    type, or a numeric default on an untyped option, would let 0, negatives or NaN through."""
    unknown, unchecked = [], []
    for leaf, parser in _leaf_parsers().items():
        for action in _options(parser):
            name = f"{leaf} {action.option_strings[0]}"
            if _pool(action) == ["unknown"]:
                unknown.append(f"{name} (type {getattr(action.type, '__name__', action.type)})")
            numeric_default = isinstance(action.default, (int, float)) and not isinstance(action.default, bool)
            if action.type in (int, float) or (
                numeric_default
                and action.nargs != 0
                and not action.choices
                and not hasattr(action.type, "fairmt_checked")
            ):
                unchecked.append(name)
    assert not unknown, f"options without a value pool in tests/cli/test_cli_properties.py: {unknown}"
    assert not unchecked, f"numeric options without a range-checked type: {unchecked}"


def test_every_recipe_family_is_generated_for_and_in_the_campaign():
    """A new recipe family (a schema in SCHEMAS) must join RECIPES above and the campaign's RECIPE_OVERRIDES; every
    declared key is generated for (the keys come from the schema itself)."""
    from fairmt.recipes._schema import SCHEMAS
    from hostile_campaign import RECIPE_OVERRIDES

    assert set(RECIPES) == set(SCHEMAS)
    assert {family for family, _ in RECIPE_OVERRIDES} == set(SCHEMAS)
    for family in SCHEMAS:
        assert len(_schema_keys(family)) >= 5, family
