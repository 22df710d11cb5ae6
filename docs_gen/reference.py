"""The generated pages of the documentation site: never typed, always computed from the code at build time.

* ``reference/recipe-keys.md``: every key of every recipe family, from the pydantic schemas of
  :mod:`fairmt.recipes._schema` (type, default, allowed values, description);
* ``reference/recipes.md``: the shipped recipes with family, paper and status (``fairmt recipes``'s table) and each
  one's description;
* ``reference/cli.md``: every ``fairmt`` command with its usage and every option, from the argparse parsers of
  :func:`fairmt.cli.build_parser`.

``docs_gen/hooks.py`` adds them to the MkDocs build; ``tests/project/test_docs.py`` checks that every recipe key and every
CLI flag appears in them (:func:`recipe_keys`, :func:`cli_options`).
"""

from __future__ import annotations

import argparse
import typing
from typing import Any

GENERATED_NOTE = (
    "<!-- generated at build time by docs_gen/reference.py from the code: do not edit; change the code instead -->\n\n"
)


# ------------------------------------------------------------------------------------------------ recipe keys


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("[", "\\[").replace("]", "\\]").replace("<", "&lt;")


def _type_name(hint: Any) -> str:
    """A readable type: ``int ≥ 1``, ``one of: a, b``, ``float in [0, 1)``, ``str | null``..."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        base, *meta = args
        bounds = []
        for m in meta:
            for attr in getattr(m, "metadata", [m]):
                for name, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "length ≥")):
                    value = getattr(attr, name, None)
                    if value is not None:
                        bounds.append(f"{sign} {value}")
        return _type_name(base) + (f" ({', '.join(bounds)})" if bounds else "")
    if origin is typing.Literal:
        return "one of: " + ", ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " \\| ".join("null" if a is type(None) else _type_name(a) for a in args)
    if origin in (list, tuple):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping {_type_name(args[0])} → {_type_name(args[1])}" if args else "mapping"
    if isinstance(hint, type):
        from pydantic import BaseModel

        if issubclass(hint, BaseModel):
            return "section"
        return {"str": "str", "int": "int", "float": "float", "bool": "bool", "dict": "mapping"}.get(
            hint.__name__, hint.__name__
        )
    return str(hint).replace("typing.", "")


def _sections(hint: Any) -> list[type]:
    from pydantic import BaseModel

    found = []
    stack = [hint]
    while stack:
        h = stack.pop()
        if isinstance(h, type) and issubclass(h, BaseModel):
            found.append(h)
        else:
            stack.extend(typing.get_args(h))
    return found


def _default(field) -> str:
    from pydantic_core import PydanticUndefined

    if field.default_factory is not None:
        return f"`{field.default_factory()!r}`"
    if field.default is PydanticUndefined:
        return "required"
    value = field.default
    return "`null`" if value is None else f"`{str(value).lower() if isinstance(value, bool) else value}`"


def _walk(model: type, prefix: str = "") -> typing.Iterator[tuple[str, Any, Any, type]]:
    """``(dotted key, field, annotation, owning model)`` of every key of ``model``, sections before their keys."""
    for name, field in model.model_fields.items():
        key = prefix + name
        yield key, field, field.annotation, model
        for section in _sections(field.annotation)[:1]:
            yield from _walk(section, key + ".")


def recipe_keys() -> dict[str, list[str]]:
    """Every documented key, per family (what the reference lists)."""
    from fairmt.recipes._schema import SCHEMAS

    return {family: [key for key, *_ in _walk(model)] for family, model in SCHEMAS.items()}


_TRAINER_SECTIONS = {"training", "stages", "stage1", "stage2", "peft", "objective_args"}


def recipe_reference_md() -> str:
    from fairmt.recipes._schema import SCHEMAS

    out = [
        "# Recipe keys\n\n",
        GENERATED_NOTE,
        "Every key a recipe of each family accepts, read from the pydantic schemas of "
        '`fairmt.recipes._schema` (`fairmt train` refuses any other key, with a "did you mean"). '
        "A key is written in YAML as nested sections (`data.train` is `train:` under `data:`) or on the command "
        "line as an override (`data.train=pairs.jsonl`). A section typed `mapping` of Trainer arguments "
        "(`training`, a stage's section) takes the fields of the method's Config dataclass: see the "
        "[API reference](api.md).\n\n",
        "**One recipe shape.** At the top: `method` (the family), `objective` (what is trained, where a family "
        "has several), `seed` and `output_dir` (the run's folder); `data:` the data set; `model:` the model; "
        "`training:` the Trainer arguments every training stage shares (`stage1:` / `stage2:` one stage's own); "
        "`objective_args:` the method's hyper-parameters (the fields of the objective's Config, e.g. "
        "`objective_args.temperature`).\n\n",
        "**Every key set takes effect, or the recipe is refused.** A key another key overrides (*shadowed*: "
        "`training.temperature` beside `objective_args.temperature`, a stage section's `seed` beside `seed`) is "
        "refused in one line naming the key that wins; a key the recipe's own choices leave unused (*inert*: "
        "`stage2` of a one-stage objective, `data.language` of another data set, a `model` key another "
        "`model.type` reads) is refused when it asks for something — any value but its default (null counts as "
        "unset), so one override can switch a recipe to another data set or objective.\n\n",
    ]
    for family, model in SCHEMAS.items():
        out.append(f"## `method: {family}`\n\n")
        doc = " ".join((model.__doc__ or "").split())
        if doc:
            out.append(doc + "\n\n")
        out.append("| key | type | default | description |\n|---|---|---|---|\n")
        for key, field, hint, _owner in _walk(model):
            desc = field.description or ""
            if not desc and _sections(hint):
                desc = " ".join((_sections(hint)[0].__doc__ or "a section").split())
            if not desc and key.split(".")[-1] in _TRAINER_SECTIONS:
                desc = "Trainer / Config arguments (checked against the method's Config dataclass)"
            typ = _type_name(typing.Annotated[(hint, *field.metadata)] if field.metadata else hint)
            out.append(f"| `{key}` | {typ} | {_default(field)} | {_cell(desc)} |\n")
        out.append("\n")
    return "".join(out)


# ------------------------------------------------------------------------------------------------ shipped recipes


def recipes_md() -> str:
    from fairmt.commands.train import builtin_recipes, recipe_availability, recipe_description, recipe_paper

    out = [
        "# Shipped recipes\n\n",
        GENERATED_NOTE,
        "The recipes inside the package (`fairmt recipes` prints this table; `fairmt recipes FAMILY` one family; "
        "`fairmt train NAME` runs one). *Needs*: `offline` runs with what the install brings; `Hub download` "
        "fetches a model or data set from the Hugging Face Hub on the first run; `data:` is what it reads from "
        "disk (`FAIRMT_DATA`: `fairmt data download`, `fairmt data corpora`). Whether it is ready on *your* "
        "machine is the status column of `fairmt recipes`.\n\n",
        "| recipe | paper | needs |\n|---|---|---|\n",
    ]
    recipes = builtin_recipes()
    for name, path in recipes.items():
        out.append(
            f"| [`{name}`](#{name.replace('/', '').replace('.', '').replace('_', '_')}) | "
            f"{_cell(recipe_paper(path))} | {_cell(recipe_availability(path))} |\n"
        )
    out.append("\n")
    for name, path in recipes.items():
        out.append(
            f"## {name}\n\n{recipe_description(path)}\n\n`fairmt train {name} --dry-run` shows every "
            f"resolved value.\n\n"
        )
    return "".join(out)


# ------------------------------------------------------------------------------------------------ CLI


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("fairmt",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def cli_options() -> dict[str, list[str]]:
    """Every command (``fairmt eval winomt``) with its option strings and positional names."""
    from fairmt.cli import build_parser

    out = {}
    for path, parser in _commands(build_parser()):
        names = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue  # a hidden alias (help=SUPPRESS) is not documented on purpose
            names.extend(action.option_strings or [action.dest])
        out[" ".join(path)] = names
    return out


def cli_md() -> str:
    from fairmt.cli import build_parser

    out = [
        "# CLI reference\n\n",
        GENERATED_NOTE,
        "Every `fairmt` command and option, read from the argparse parsers (`fairmt COMMAND --help` prints the "
        "same).\n\n",
    ]
    for path, parser in _commands(build_parser()):
        level = "#" * min(len(path) + 1, 4)
        out.append(f"{level} `{' '.join(path)}`\n\n")
        if parser.description:
            out.append(" ".join(parser.description.split()) + "\n\n")
        usage = parser.format_usage().removeprefix("usage: ").strip()
        out.append(f"```text\n{usage}\n```\n\n")
        formatter = parser._get_formatter()
        rows = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    rows.append((f"`{choice.dest}`", _cell(choice.help or ""), ""))
                continue
            if action.help == argparse.SUPPRESS:
                continue
            names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
            try:
                text = formatter._expand_help(action) if action.help else ""
            except (KeyError, TypeError, ValueError):
                text = action.help or ""
            default = (
                ""
                if action.default in (None, False, argparse.SUPPRESS) or not action.option_strings
                else f"`{action.default}`"
            )
            rows.append((names, _cell(text), _cell(default)))
        if rows:
            out.append("| option | what it does | default |\n|---|---|---|\n")
            out.extend(f"| {a} | {b} | {c} |\n" for a, b, c in rows)
            out.append("\n")
    return out and "".join(out)


PAGES = {
    "reference/recipe-keys.md": recipe_reference_md,
    "reference/recipes.md": recipes_md,
    "reference/cli.md": cli_md,
}
