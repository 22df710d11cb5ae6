"""The parts every recipe family's schema shares, and the check of a recipe against its family's schema (``fairmt
train``, ``--dry-run`` and ``fairmt sweep``, which loads every grid value through :func:`fairmt.recipes.load_recipe`).

Each family declares one pydantic model per method in ``fairmt/recipes/<family>/schema.py`` (registered in its
``family.py``; :func:`schemas` collects them). Every key of every section is declared with its type and range;
``training`` and the other Trainer-argument sections (``stage1``, ``stage2``, ``objective_args``, ``peft``) are checked
against the method's Config dataclasses (:func:`fairmt.recipes._checks.check_training`: each field's type, finite
numbers, ranges, the allowed values of ``lr_scheduler_type`` and the other enumerations).

A failure is one :class:`~fairmt.errors.FairmtError` naming the key, what it must be and what it got
(``recipe key data.max_length must be int ≥ 1, got 'abc'``); an unknown key gets a "did you mean".

:func:`resolve_recipe` returns the typed, resolved recipe: the family's schema object with every default filled in.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fairmt.errors import FairmtError, Range
from fairmt.recipes._checks import COMMON_TOP, _check_keys, check_training
from fairmt.recipes._registry import families

# ---------------------------------------------------------------------------------------------- value types

Count = Annotated[int, Field(ge=1)]
"""A positive number of things (steps, rows, epochs)."""
Size = Annotated[int, Field(ge=0)]
"""A number of held-out items where 0 means none."""
Seed = Annotated[int, Field(ge=0, lt=2**32)]
Share = Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)]
"""A share in [0, 1): 0 means none."""
Probability = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
Text = Annotated[str, Field(min_length=1)]


def ranged(rng: Range) -> Any:
    """The pydantic type of a recipe key that feeds a Config field under another name: the field's own
    :class:`~fairmt.errors.Range` (one declaration; the Range rides along in the metadata for the guard test)."""
    kw: dict[str, Any] = {}
    if rng.low is not None:
        kw["gt" if rng.low_open else "ge"] = rng.low
    if rng.high is not None:
        kw["lt" if rng.high_open else "le"] = rng.high
    if not rng.integer:
        kw["allow_inf_nan"] = False
    return Annotated[int if rng.integer else float, Field(**kw), rng]


class Section(BaseModel):
    """A recipe section: its keys as declared, values of their declared type (YAML already types them: a string is
    not a number here), nothing else."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _trainer_section(classes: str):
    """A validator for a section of Trainer / Config arguments: ``classes`` names the Config dataclasses
    (``module:Class`` strings, imported when a recipe is checked)."""

    def check(value: Any, info) -> Any:
        if value is None:
            return value
        import importlib

        resolved = []
        for spec in classes.split(","):
            module, _, name = spec.strip().partition(":")
            resolved.append(getattr(importlib.import_module(module), name))
        check_training(value, resolved, info.field_name)
        return value

    return check


GACL_CONFIG = "fairmt.trainers.gacl:GACLConfig"
CCD_CONFIG = "fairmt.trainers.ccd:CCDConfig"
CLASSIFICATION_CONFIGS = (
    "fairmt.trainers.fair_contrastive:FairContrastiveConfig,"
    "fairmt.trainers.sampling:FairnessSamplingConfig,"
    "fairmt.trainers.adversarial:AdversarialConfig"
)
SAMPLING_CONFIG = "fairmt.trainers.sampling:FairnessSamplingConfig"
SIMCLR_CONFIG = "fairmt.models.vision:SimCLRConfig"
LORA_CONFIG = "peft:LoraConfig"

CONFIG_FEEDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("sampling", "clusters", "n_clusters"): (SAMPLING_CONFIG, "n_clusters"),
    ("sampling", "clusters", "n_init"): (SAMPLING_CONFIG, "kmeans_n_init"),
    ("sampling", "model", "projection_dim"): (SIMCLR_CONFIG, "projection_dim"),
    ("sampling", "model", "projection_hidden_dim"): (SIMCLR_CONFIG, "projection_hidden_dim"),
}
"""Recipe keys outside the Trainer sections that become a Config field (family, section, key) → (Config, field):
their type is :func:`ranged` over the field's Range (``tests/recipes/test_config_ranges.py`` holds them to it). The
Trainer sections (``training``, ``objective_args``, ``stage1``, ``stage2``) use the Config fields' Ranges directly
(:func:`fairmt.recipes._checks.check_training`)."""


# ---------------------------------------------------------------------------------------------- descriptions
# Every key declares a one-line ``description`` (the generated recipe reference prints it; tests/recipes/test_recipe_schema.py
# holds every key of every family to it). A key that feeds a Config field reads that field's own help text
# (:func:`config_help`), so the two cannot drift. What an error message says a numeric key "must be" is declared
# apart (``must_be``), so a long description never lands in "recipe key X must be ..., got ...".


@functools.cache
def _module_classes(module: str) -> dict:
    """The top-level ``ast`` class nodes of a module, read from its source file (not imported: checking a recipe
    must not import torch)."""
    import ast
    import importlib.util

    found = importlib.util.find_spec(module)
    if found is None or not found.origin:
        raise FairmtError(f"cannot find the source of {module}")
    with open(found.origin, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _config_source(spec: str):
    """The ``ast`` class node of the Config ``module:Class`` and its module's class nodes."""
    module, _, name = spec.partition(":")
    classes = _module_classes(module)
    if name not in classes:
        raise FairmtError(f"{module} defines no class {name}")
    return classes[name], classes


def config_help(spec: str, field_name: str) -> str:
    """The help text a Config dataclass field declares: ``metadata={"help": ...}``, else its entry in the class
    docstring's ``Args:`` / ``Parameters`` list (searched up the module's own base classes)."""
    import ast

    node, classes = _config_source(spec)
    while node is not None:
        for stmt in node.body:
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == field_name
                and isinstance(stmt.value, ast.Call)
            ):
                for kw in stmt.value.keywords:
                    if kw.arg == "metadata":
                        help_text = ast.literal_eval(kw.value).get("help")
                        if help_text:
                            return _plain(help_text)
        doc = ast.get_docstring(node) or ""
        m = re.search(rf"^\s+{re.escape(field_name)}:\s*(.+(?:\n\s{{6,}}.+)*)", doc, re.M)
        if m:
            return _plain(m.group(1))
        bases = [b.id for b in node.bases if isinstance(b, ast.Name) and b.id in classes]
        node = classes[bases[0]] if bases else None
    raise FairmtError(f"{spec}.{field_name} declares no help text")


def config_summary(spec: str) -> str:
    """The first sentence of a Config dataclass's docstring."""
    import ast

    return _plain((ast.get_docstring(_config_source(spec)[0]) or "").split("\n\n")[0])


def _plain(text: str) -> str:
    """reST markup of a docstring made plain: ``:class:`~a.B``` → ``B``, double backquotes → one."""
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", text)
    return " ".join(text.replace("``", "`").split())


def _must(text: str) -> dict:
    """``json_schema_extra`` of a key whose range error names what it must be in words."""
    return {"must_be": text}


def merged_over(defaults: dict):
    """A ``mode="before"`` validator of a free-form section (Trainer arguments): the recipe's keys over the family's
    defaults, one by one (null or absent: the defaults)."""

    def merge(value: Any) -> Any:
        if value is None:
            return dict(defaults)
        return {**defaults, **value} if isinstance(value, dict) else value

    return merge


def renamed_values(key: str, renamed: dict[str, str]):
    """A ``mode="before"`` validator of the recipe key ``key`` whose older spellings ``renamed`` maps to today's
    (a family's ``RENAMED_OBJECTIVES``): an older spelling becomes today's, with a one-line ``FutureWarning`` (shown
    on the command line)."""

    def rename(value: Any) -> Any:
        if isinstance(value, str) and value in renamed:
            from fairmt._deprecated import renamed_option

            return renamed_option(f"recipe key {key}: {value}", key, value, renamed, category=FutureWarning)
        return value

    return rename


def fed(key: tuple[str, ...], default: Any, what: str = "") -> Any:
    """The Field of a recipe key listed in :data:`CONFIG_FEEDS`: the Config field's help text is its description."""
    spec, name = CONFIG_FEEDS[key]
    cls = spec.partition(":")[2]
    return Field(default, description=f"{what}{config_help(spec, name)} (becomes {cls}.{name})")


def trainer_doc(spec: str, what: str) -> str:
    """The description of a section of Trainer / Config arguments, from the Config's own docstring."""
    names = ", ".join(s.strip().partition(":")[2] for s in spec.split(","))
    summary = config_summary(spec) if spec.startswith("fairmt.") and "," not in spec else ""
    return f"{what}: any field of {names}" + (f" — {summary}" if summary else "")


D = Field  # every key below: Field(default, description=...)


class Unread(NamedTuple):
    """A recipe key a recipe (or an override) sets that the run would not read, refused in one line by
    :func:`resolve_recipe`. Two kinds, one rule each in every family: **shadowed** — another key sets the same value
    and wins (always refused: the two disagree, or one is dead); **inert** — the recipe's choices (its objective, model
    type, data set, optimizer) leave the key unused: refused when its value differs from the key's default (it asks
    for something the run will not do); its default value (or null) asks nothing and is accepted, so a recipe written
    for one data set or objective can be switched to another by one override."""

    key: str
    """The key as a user types it (``training.temperature``)."""
    wins: str
    """The key that takes effect (or that leaves ``key`` unused), as a user types it (``objective_args.temperature``,
    ``objective``)."""
    why: str
    """The rest of the line: what ``wins`` does, and what to set instead."""

    def message(self) -> str:
        return f"recipe key {self.key} is not read: {self.why}"


def config_default(spec: str, name: str) -> Any:
    """The default of field ``name`` of the Config dataclass ``spec`` (``module:Class``; ``dataclasses.MISSING``
    when it has none)."""
    import dataclasses
    import importlib

    module, _, cls = spec.partition(":")
    for f in dataclasses.fields(getattr(importlib.import_module(module), cls)):
        if f.name == name:
            return f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
    return dataclasses.MISSING


def given(config: dict, section: str) -> dict:
    """The keys a recipe (as written, overrides applied) sets in ``section`` (empty when it sets none); a key set to
    null counts as unset (null is every such key's "the default / none", and how an override clears a key)."""
    value = config.get(section)
    return {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else {}


class Recipe(Section):
    """What every recipe has: its method, and what ``fairmt train`` adds (the file, ``--overwrite``)."""

    method: str = D(description=f"the recipe family: which runner trains it ({', '.join(families())})")
    recipe_path: str | None = D(
        None, description="set by fairmt train: the recipe file (its name is the default run folder's name)"
    )
    overwrite: bool | None = D(
        None,
        description="set by fairmt train --overwrite: replace an earlier run in the output folder instead of refusing",
    )

    def unread(self, config: dict) -> list[Unread]:
        """The keys ``config`` (the recipe as written, overrides applied; ``self`` is it resolved) sets that the run
        would not read — another key overrides them, or the recipe's choices leave them unused — each naming the key
        that wins. A family's schema declares its own (none here); :func:`resolve_recipe` refuses the first."""
        return []

    @classmethod
    def typed_key(cls, key: str, config: dict) -> str:
        """A key of the resolved recipe (a paper card's ``stages.train.temperature``) as a user types it in a recipe
        or an override (``objective_args.temperature``); ``config``: the recipe as written. The key itself where the
        two are one."""
        return key


# ---------------------------------------------------------------------------------------------- the families


def schemas() -> dict[str, type[Recipe]]:
    """Each registered method's schema (:func:`fairmt.recipes.families`), by method name."""
    from fairmt.recipes._registry import families

    return {name: fam.schema_class() for name, fam in families().items()}


def __getattr__(name: str) -> Any:
    if name == "SCHEMAS":  # built on first use: the family schemas import this module
        return schemas()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _known(model: type[BaseModel], loc: tuple) -> set[str] | None:
    """The declared keys of the section at ``loc`` (None: free-form or not a declared section)."""
    import typing

    cls: Any = model
    for part in loc:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or part not in cls.model_fields:
            return None
        hint = cls.model_fields[part].annotation
        options = [a for a in (typing.get_args(hint) or (hint,)) if isinstance(a, type) and issubclass(a, BaseModel)]
        cls = options[0] if options else None
    return set(cls.model_fields) if isinstance(cls, type) and issubclass(cls, BaseModel) else None


def _unknown_keys(model: type[BaseModel], data: Any, loc: tuple = ()) -> None:
    """Unknown keys first, with a "did you mean" (pydantic would only say "extra inputs are not permitted")."""
    if not isinstance(data, dict):
        return
    known = _known(model, loc)
    if known is None:
        return
    if not loc:
        known = known | COMMON_TOP
    _check_keys(data, known, "".join(f"{p}." for p in loc))
    for key, value in data.items():
        if isinstance(value, dict):
            _unknown_keys(model, value, (*loc, key))


_WHAT = {
    "int_type": "int",
    "int_parsing": "int",
    "int_from_float": "int",
    "float_type": "float",
    "float_parsing": "float",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping (a section of keys)",
    "model_type": "a mapping (a section of keys)",
    "model_attributes_type": "a mapping (a section of keys)",
    "finite_number": "a finite number",
}


def _description(model: type[BaseModel], loc: tuple) -> str | None:
    """What a field declares its values must be in words (``must_be``, :func:`_must`), if anything."""
    import typing

    cls: Any = model
    field = None
    for part in loc:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or part not in cls.model_fields:
            return None
        field = cls.model_fields[part]
        options = [
            a
            for a in (typing.get_args(field.annotation) or (field.annotation,))
            if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        cls = options[0] if options else None
    extra = field.json_schema_extra if field is not None else None
    must_be = extra.get("must_be") if isinstance(extra, dict) else None
    return must_be if isinstance(must_be, str) else None


def _message(err: Mapping[str, Any], model: type[BaseModel]) -> str:
    loc = [
        str(p)
        for p in err["loc"]
        if not (isinstance(p, str) and ("[" in p or p in ("list", "dict", "str", "int", "float", "bool")))
    ]
    key = ".".join(loc) or "(the recipe)"
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    shown = f"{got!r}" + (f" ({type(got).__name__})" if not isinstance(got, (dict, list)) else "")
    if kind == "missing":
        return f"recipe key {key} is required (see the recipe family's documented example)"
    if kind == "extra_forbidden":
        return f"unknown recipe key {key}"
    if kind == "literal_error":
        allowed = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return f"recipe key {key} must be one of {allowed}, got {got!r}"
    described = _description(model, err["loc"])
    if described and kind in (
        "greater_than_equal",
        "greater_than",
        "less_than",
        "less_than_equal",
        "int_type",
        "int_parsing",
        "float_type",
        "float_parsing",
    ):
        return f"recipe key {key} must be {described}, got {got!r}"
    bounds = {
        "greater_than_equal": "≥ {ge}",
        "greater_than": "> {gt}",
        "less_than_equal": "≤ {le}",
        "less_than": "< {lt}",
        "too_short": "at least {min_length} long",
        "too_long": "at most {max_length} long",
    }
    if kind in bounds:
        return f"recipe key {key} must be {bounds[kind].format(**ctx)}, got {shown}"
    if kind in _WHAT:
        return f"recipe key {key} must be {_WHAT[kind]}, got {shown}"
    msg = err.get("msg", "").removeprefix("Value error, ")
    if isinstance(err.get("ctx", {}).get("error"), FairmtError):
        return str(err["ctx"]["error"])
    return f"recipe key {key}: {msg}" if loc else msg


def resolve_recipe(config: dict) -> Recipe | None:
    """The recipe (overrides applied) checked against its family's declared schema and resolved: the typed object
    with every default filled in. A FairmtError names the first bad key. None for a method without a schema (a
    user's own script is left to its own ``main``)."""
    from fairmt.recipes._registry import families

    method = config.get("method")
    fam = families().get(method) if isinstance(method, str) else None
    if fam is None:
        return None
    model = fam.schema_class()
    _unknown_keys(model, config)
    try:
        resolved = model.model_validate(config)
    except ValidationError as err:
        errors = err.errors(include_url=False)  # a wrong value the recipe gives before a key it leaves out
        first = min(errors, key=lambda e: e["type"] == "missing")
        raise FairmtError(_message(first, model)) from None
    unread = resolved.unread(config)  # every key set takes effect, or the run is refused naming the one that does
    if unread:
        raise FairmtError(unread[0].message())
    return resolved


def validate_recipe(config: dict) -> Recipe | None:
    """Check a loaded recipe against its family's schema (:func:`resolve_recipe`); returns the resolved recipe."""
    return resolve_recipe(config)


__all__ = ["Unread", "config_default", "given", "resolve_recipe", "schemas", "validate_recipe"]


def _old_schema_names() -> dict[str, str]:
    """Each name the old one-module schema (``fairmt.scripts.recipe_schema``, ``fairmt.commands.recipe_schema``)
    had, → its new module: the shared parts here, each family's classes in ``fairmt.recipes.<family>.schema``."""
    import importlib

    from fairmt.recipes._registry import FAMILY_FOLDERS

    names = {n: __name__ for n in list(globals()) if not n.startswith("__")}
    names["SCHEMAS"] = __name__
    for folder in FAMILY_FOLDERS:
        module = f"fairmt.recipes.{folder}.schema"
        for n, value in vars(importlib.import_module(module)).items():
            if getattr(value, "__module__", None) == module or (n.isupper() and n not in names):
                names.setdefault(n, module)
    return names
