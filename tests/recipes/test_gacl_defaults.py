"""Issue 50: every GACL default is defined once. GACL's hyper-parameters are defaulted in
``fairmt.losses.gacl.GACL_DEFAULTS`` (the one module both trainers may import); ``GACLConfig``, the fairseq criterion
``gacl_kd`` and the loss read them, the demo reads ``GACLConfig``'s, and no other file of the GACL family writes
one of them as a literal (a control's 0 that switches a term off is no default)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from fairmt.losses.gacl import GACL_DEFAULTS, GACL_RANGES, VARIANT_DEFAULTS, GACLSettings

ROOT = Path(__file__).resolve().parents[2] / "fairmt"
NAMES = {f.name for f in dataclasses.fields(GACLSettings)}
CRITERION = {
    "temperature": "gacl_temperature",
    "positive_reduction": "gacl_positive_reduction",
    "pooling": "gacl_pooling",
    "gather_across_processes": "gacl_no_gather",
}
SPELLINGS = (
    NAMES
    | set(CRITERION.values())
    | {"variant", "gc_lambda", "kd_lambda"}
    | {k for preset in VARIANT_DEFAULTS.values() for k in preset}
)
FAMILY_FILES = [
    "demo.py",
    "trainers/gacl.py",
    *(p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "fairseq").glob("*.py"))),
    *(p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "recipes" / "gacl").glob("*.py"))),
]


def _is_off(node: ast.AST) -> bool:
    """A literal that switches something off or leaves it to the variant: 0, 0.0, None, False."""
    return isinstance(node, ast.Constant) and node.value in (0, None, False) and node.value is not True


def literal_defaults(source: str, where: str) -> list[str]:
    """Each place in ``source`` that writes a GACL setting's value as a literal: a dataclass field or parameter
    default, a keyword argument, a mapping entry (its name in :data:`SPELLINGS`, its value a constant that is not
    "off")."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        pairs: list[tuple[str, ast.AST, int]] = []
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                value = next((k.value for k in value.keywords if k.arg == "default"), None)
            if value is not None:
                pairs.append((node.target.id, value, node.lineno))
        elif isinstance(node, ast.keyword) and node.arg:
            pairs.append((node.arg, node.value, getattr(node.value, "lineno", 0)))
        elif isinstance(node, ast.Dict):
            pairs += [
                (k.value, v, k.lineno)
                for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.posonlyargs + node.args.args
            pairs += [
                (a.arg, d, d.lineno) for a, d in zip(args[len(args) - len(node.args.defaults) :], node.args.defaults)
            ]
            pairs += [(a.arg, d, d.lineno) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d]
        for name, value, line in pairs:
            if (
                name in SPELLINGS
                and isinstance(value, ast.Constant)
                and not _is_off(value)
                and value.value not in SPELLINGS
            ):  # a map of names (option → option) holds no value
                found.append((line, f"{where}:{line}: {name} = {value.value!r}"))
    return [text for _, text in sorted(found)]


def test_no_file_of_the_gacl_family_writes_a_gacl_default_as_a_literal():
    found = [
        hit
        for rel in FAMILY_FILES
        for hit in literal_defaults((ROOT / rel).read_text(encoding="utf-8"), f"fairmt/{rel}")
    ]
    assert found == [], "read fairmt.losses.gacl.GACL_DEFAULTS (or GACLConfig's field default) instead:\n" + "\n".join(
        found
    )


def test_the_check_finds_a_planted_literal():
    planted = (
        "@dataclass\nclass C:\n    kd_alpha: float = field(default=0.5)\n"
        "def f(temperature=2.0, gacl_lambda=0.0):\n    return g(pooling='first', gacl_lambda=0)\n"
        "S = dict(gacl_lambda=1.0)\nT = {'kd_alpha': 0.4, 'kd_normalization': None}\n"
    )
    assert literal_defaults(planted, "x.py") == [
        "x.py:3: kd_alpha = 0.5",
        "x.py:4: temperature = 2.0",
        "x.py:5: pooling = 'first'",
        "x.py:6: gacl_lambda = 1.0",
        "x.py:7: kd_alpha = 0.4",
    ]


def test_gacl_config_and_the_fairseq_criterion_default_and_range_check_as_gacl_defaults():
    from fairmt.trainers.gacl import GACLConfig

    fields = {f.name: f.default for f in dataclasses.fields(GACLConfig)}
    assert {n: fields[n] for n in NAMES} == dataclasses.asdict(GACL_DEFAULTS)
    assert {k: GACLConfig.RANGES[k] for k in GACL_RANGES} == GACL_RANGES
    # the criterion, read from its source (importing fairseq takes seconds): each option's default is GACL_DEFAULTS'
    tree = ast.parse((ROOT / "fairseq" / "criterion.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GACLKDCriterionConfig")
    defaults = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.value, ast.Call):
            default = next((k.value for k in stmt.value.keywords if k.arg == "default"), None)
            defaults[stmt.target.id] = ast.unparse(default) if default is not None else None
    for name in NAMES:
        option = CRITERION.get(name, name)
        expected = f"not GACL_DEFAULTS.{name}" if option == "gacl_no_gather" else f"GACL_DEFAULTS.{name}"
        assert defaults.get(option) == expected, (option, defaults.get(option))


@pytest.mark.parametrize("variant", sorted(VARIANT_DEFAULTS))
def test_the_variant_presets_are_what_gacl_config_fills_in(variant):
    from fairmt.trainers.gacl import GACLConfig

    args = GACLConfig(output_dir="unused", gacl_variant=variant, use_cpu=True, report_to=[])
    assert {k: getattr(args, k) for k in VARIANT_DEFAULTS[variant]} == VARIANT_DEFAULTS[variant]


def test_the_demo_trains_with_gacl_config_defaults():
    import fairmt.demo as demo

    settings = demo.gacl_settings()
    assert settings == {k: getattr(GACL_DEFAULTS, k) for k in demo.GACL_KEYS} == demo.GACL_SETTINGS
    # the multilingual demo's design, fixed before its first run, names the same α, λ, τ
    assert (
        f"α {settings['kd_alpha']}, λ {settings['gacl_lambda']}, τ {settings['temperature']}"
        in demo.ML_DESIGN["fine-tuning"]
    )


# ------------------------------------------------------------------------------------------------ the docs table

DOC = Path(__file__).resolve().parents[2] / "docs" / "methods" / "gacl.md"
START, END = "<!-- gacl-defaults: generated by tests/recipes/test_gacl_defaults.py -->", "<!-- gacl-defaults: end -->"


def _shown(value) -> str:
    return "`null`" if value is None else f"`{str(value).lower() if isinstance(value, bool) else value}`"


def defaults_table() -> str:
    """The docs page's table of where each GACL setting of ``GACLConfig`` is defaulted (one place each) and who reads
    it, computed from the code."""
    from transformers import Seq2SeqTrainingArguments

    from fairmt.models.precision import DEFAULT_TEACHER_DTYPE
    from fairmt.trainers.gacl import GACLConfig

    own = [
        f
        for f in dataclasses.fields(GACLConfig)
        if f.name not in {g.name for g in dataclasses.fields(Seq2SeqTrainingArguments)}
    ]
    presets = {k for preset in VARIANT_DEFAULTS.values() for k in preset}
    switches = (
        "dropout_positive",
        "inbatch_positives",
        "counterfactual_negative",
        "inbatch_negatives",
        "detach_dropout_view",
    )
    rows = ["| `training.` key (GACLConfig field) | default | defined in | also read by |", "|---|---|---|---|"]
    for f in own:
        name = f.name
        if name in NAMES:
            option = CRITERION.get(name, name).replace("_", "-")
            fairseq = f"fairseq `--{option}`" + (" (its negation)" if name == "gather_across_processes" else "")
            loss = ", `gacl_loss`" if name in ("temperature", "gacl_variant") else ""
            rows.append(
                f"| `{name}` | {_shown(getattr(GACL_DEFAULTS, name))} | `fairmt.losses.gacl.GACL_DEFAULTS` "
                f"| {fairseq}{loss} |"
            )
        elif name in presets:
            by = ", ".join(
                f"{v} {_shown(VARIANT_DEFAULTS[v][name])}"
                for v in sorted(VARIANT_DEFAULTS, reverse=True)
                if name in VARIANT_DEFAULTS[v]
            )
            fairseq = (
                f"fairseq `--{'gacl-projection' if name == 'projection' else name.replace('_', '-')}`"
                if name != "warmup_init_lr_ratio"
                else "—"
            )
            rows.append(f"| `{name}` | by variant: {by} | `fairmt.losses.gacl.VARIANT_DEFAULTS` | {fairseq} |")
        elif name in switches:
            rows.append(
                f"| `{name}` | by variant | `fairmt.losses.gacl.GACL_VARIANTS` | fairseq `--{name.replace('_', '-')}` |"
            )
        elif name == "teacher_dtype":
            rows.append(
                f"| `{name}` | {_shown(DEFAULT_TEACHER_DTYPE)} | "
                "`fairmt.models.precision.DEFAULT_TEACHER_DTYPE` | fairseq `--teacher-dtype` |"
            )
        else:
            rows.append(f"| `{name}` | {_shown(f.default)} | `GACLConfig` | — |")
    return "\n".join(rows)


def test_the_docs_table_of_gacl_defaults_is_the_code():
    text = DOC.read_text(encoding="utf-8")
    assert START in text and END in text, f"{DOC} lost its table of GACL defaults ({START})"
    shown = text.split(START, 1)[1].split(END, 1)[0].strip()
    expected = defaults_table()
    assert shown == expected, f"regenerate the table in {DOC}:\n{expected}"
