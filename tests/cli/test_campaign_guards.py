"""The guards of issue 45 over the hostile campaign (:mod:`tests.hostile_campaign`): a new evaluate-module argument, a
new download source or a new numeric field of a ``*Config`` dataclass of fairmt fails here until the campaign has a
case for it. The lists are found in fairmt itself (the modules' ``_info`` features and ``compute`` keywords, the
download manifest's data sets, the dataclasses' source), so nothing new can be missed by forgetting a list."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import fairmt
import sources
from hostile_campaign import CONFIG_RANGE_CASES, DOWNLOAD_SOURCE_CASES, EVALUATE_ARG_CASES, all_cases

CASE_IDS = {c.id for c in all_cases()}


def evaluate_module_arguments() -> set[str]:
    """``module.argument`` for every argument of every shipped evaluate module: its features and the keyword
    arguments of its ``_compute``."""
    evaluate = pytest.importorskip("evaluate")
    from fairmt.evaluate_modules import MODULES

    found = set()
    for name in MODULES:
        module = evaluate.load(fairmt.evaluate_module(name))
        features = module.features if isinstance(module.features, list) else [module.features]
        names = {k for f in features for k in f}
        names |= {p for p in inspect.signature(module._compute).parameters if p != "self"}
        found |= {f"{name}.{arg}" for arg in names}
    return found


def _numeric_annotation(annotation: ast.expr | None) -> bool:
    tokens = set(re.findall(r"[A-Za-z_]+", ast.unparse(annotation))) if annotation is not None else set()
    return bool(tokens & {"int", "float"}) and tokens <= {"int", "float", "None", "Optional"}


def numeric_config_fields() -> set[str]:
    """``Class.field`` for every field annotated ``int`` or ``float`` (optionally ``| None``) of every dataclass
    named ``*Config`` in fairmt, and every such ``__init__`` argument of a ``*Config`` class that is not a dataclass
    (``SimCLRConfig``, a ``PretrainedConfig``) — read from the source: no module is imported."""
    root = Path(fairmt.__file__).resolve().parent
    found = set()
    for path in sorted(root.rglob("*.py")):
        for node in sources.nodes(path):
            if not (isinstance(node, ast.ClassDef) and node.name.endswith("Config")):
                continue
            if any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                for st in node.body:
                    if (
                        isinstance(st, ast.AnnAssign)
                        and isinstance(st.target, ast.Name)
                        and _numeric_annotation(st.annotation)
                    ):
                        found.add(f"{node.name}.{st.target.id}")
                continue
            for st in node.body:
                if isinstance(st, ast.FunctionDef) and st.name == "__init__":
                    found |= {
                        f"{node.name}.{a.arg}"
                        for a in st.args.args + st.args.kwonlyargs
                        if _numeric_annotation(a.annotation)
                    }
    return found


def test_every_evaluate_module_argument_has_a_campaign_case():
    arguments = evaluate_module_arguments()
    assert len(arguments) >= 30 and "classification_fairness.hidden" in arguments
    missing = sorted(arguments - set(EVALUATE_ARG_CASES))
    assert not missing, (
        f"evaluate-module arguments without a hostile case in tests/support/hostile_campaign.py: {missing}"
    )
    assert set(EVALUATE_ARG_CASES) <= arguments, "a case for an argument no module has"
    assert set(EVALUATE_ARG_CASES.values()) <= CASE_IDS


def test_every_download_source_has_a_campaign_case():
    from fairmt.data.download import DATASETS, load_manifest

    sources = set(DATASETS) | set(load_manifest()["datasets"])
    missing = sorted(s for s in sources if not DOWNLOAD_SOURCE_CASES.get(s))
    assert not missing, f"download sources without a hostile case in tests/support/hostile_campaign.py: {missing}"
    assert {i for ids in DOWNLOAD_SOURCE_CASES.values() for i in ids} <= CASE_IDS


@pytest.mark.needs("fairseq")  # reads fairmt.fairseq.criterion.CRITERION_RANGES, which imports fairseq
def test_every_numeric_config_field_has_a_range_case():
    fields = numeric_config_fields()
    assert len(fields) >= 50 and "GACLConfig.gacl_lambda" in fields and "FairnessSamplingConfig.epsilon" in fields
    assert {"SimCLRConfig.projection_dim", "SimCLRConfig.projection_hidden_dim"} <= fields
    covered = {f for f, case_id in CONFIG_RANGE_CASES.items() if case_id in CASE_IDS}
    # The fairseq criterion's options are checked when fairseq builds the criterion, against CRITERION_RANGES
    # (tests/trainers/test_fairseq_plugin.py runs two refusals on a prepared fairseq folder, too heavy for a campaign case):
    # its numeric options are covered when each has a declared range there; ``seed`` is fairseq's common.seed.
    from fairmt.fairseq.criterion import CRITERION_RANGES

    covered |= {f"GACLKDCriterionConfig.{name}" for name in CRITERION_RANGES} | {"GACLKDCriterionConfig.seed"}
    # gacl_translation's dataclass declares no number of its own; its inherited fairseq options are TASK_RANGES'
    # (tests/recipes/test_config_ranges.py: every numeric field of it has one; tests/trainers/test_fairseq_plugin.py refuses two)
    missing = sorted(fields - covered)
    assert not missing, (
        f"{len(missing)} of {len(fields)} numeric Config fields have no out-of-range case in "
        f"tests/support/hostile_campaign.py (CONFIG_VALUES) or fairmt/fairseq/criterion.py "
        f"(CRITERION_RANGES): {missing}"
    )


def test_the_guards_find_what_they_guard(tmp_path, monkeypatch):
    """The finders see a new field and a new argument: a Config dataclass written into a copy of the package is
    found, and so is a keyword added to a module's compute."""
    src = Path(fairmt.__file__).resolve().parent
    fake = tmp_path / "fairmt"
    fake.mkdir()
    (fake / "x.py").write_text(
        "from dataclasses import dataclass\n\n@dataclass\nclass NewConfig:\n"
        "    weight: float = 1.0\n    name: str = 'a'\n    steps: int | None = None\n\n"
        "class HubConfig(PretrainedConfig):\n    def __init__(self, size: int = 2, "
        "name: str = 'x', **kw):\n        pass\n"
    )
    monkeypatch.setattr(fairmt, "__file__", str(fake / "__init__.py"))
    assert numeric_config_fields() == {"NewConfig.weight", "NewConfig.steps", "HubConfig.size"}
    monkeypatch.setattr(fairmt, "__file__", str(src / "__init__.py"))
    assert "NewConfig.weight" not in numeric_config_fields()


def test_every_numeric_training_argument_has_a_campaign_case():
    """Every numeric field a fairmt Config inherits from ``transformers.TrainingArguments`` (found in transformers
    itself: a new one in a later version is seen) has a declared range and an out-of-range case built in Python."""
    import dataclasses
    import typing

    from transformers import Seq2SeqTrainingArguments

    from fairmt.errors import TRAINING_ARGUMENTS_RANGES
    from hostile_campaign import TRAINING_ARGUMENT_VALUES

    hints = typing.get_type_hints(Seq2SeqTrainingArguments)
    numeric = {
        f.name
        for f in dataclasses.fields(Seq2SeqTrainingArguments)
        if {int, float} & set(typing.get_args(hints[f.name]) or (hints[f.name],))
        and bool not in (typing.get_args(hints[f.name]) or (hints[f.name],))
    }
    assert {"learning_rate", "per_device_train_batch_size", "max_grad_norm"} <= numeric
    assert not numeric - set(TRAINING_ARGUMENTS_RANGES), numeric - set(TRAINING_ARGUMENTS_RANGES)
    missing = sorted(numeric - set(TRAINING_ARGUMENT_VALUES))
    assert not missing, f"TrainingArguments fields without a hostile case (TRAINING_ARGUMENT_VALUES): {missing}"
    ids = {
        f"{spec.split(':')[1]}({name}={value!r}) (TrainingArguments)"
        for name, (spec, value) in TRAINING_ARGUMENT_VALUES.items()
    }
    assert ids <= CASE_IDS
