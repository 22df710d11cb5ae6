"""Paper cards: what a recipe that reproduces a paper takes from it, and every place where it departs.

A card is a YAML file in the ``cards/`` folder beside its family's recipes (``recipes/classification/cards/
cscl_bios_bert.yaml`` for ``recipes/classification/cscl_bios_bert.yaml``), one format for every family::

    recipe: classification/cscl_bios_bert
    paper: Chi et al. (2022), Conditional Supervised Contrastive Learning for Fair Text Classification
    settings:                      # what the paper (or its released code, "release: FILE") states
      - key: stages.stage1.temperature        # a dotted path in the resolved recipe
        paper: 2.0
        source: "App. B.2: 'τ ∈ {0.1, 0.5, 1, 2}'; release: run_biasbios.sh"
    departures:                    # every resolved value that is not the paper's
      - key: model.max_length
        paper: 192                 # omitted: the setting's value; null: the paper is silent
        recipe: 128
        kind: scale                # paper-silent choice | interpretation | released-code | scale | fairmt extension
        reason: "..."
    facts:                         # what lives in code, not in a recipe key: each tied to the test that pins it
      - fact: representation entropy's better direction
        paper: "↓ (Table 1)"       # null: the paper is silent
        fairmt: "↑ (higher = more uniform cluster sizes)"
        kind: interpretation       # a kind as above, or "paper" when fairmt does what the paper says
        reason: "..."
        test: tests/test_card_facts.py::test_entropy_direction

Why a file beside the recipe and not a ``paper:`` key inside it: a recipe is what a user copies and edits, and a
copy that changes a value is no longer the paper's recipe, so the claim must not travel with it; the card is long
(quoted sources) and would bury the recipe's few keys; and a card is read by the checks and the docs, never by a
runner, so no runner has to know to ignore it.

Keys are paths in the *resolved* recipe (:func:`resolved_values`): the schema's typed object with every default filled
in (:func:`fairmt.recipes._schema.resolve_recipe`), plus what the family's runner resolves from it
(``stages.<stage>.<field>``: the Trainer Config each stage gets in the classification family). A value the recipe
leaves to a default is compared like a value it writes, so a silent default cannot hide.

:func:`check_card` lists every problem: a setting whose resolved value differs and no departure declares it, a
departure whose value no longer differs (or whose ``recipe`` value is not the resolved one), an unknown key or kind.
A fact names its test (``tests/FILE.py::FUNCTION``), which must exist: the code it states is checked there, so the
card fails when the code changes. ``tests/test_paper_cards.py`` runs it on every card, and fails on a recipe that claims a paper (:func:`claims_paper`)
without one (:data:`CARDS_PENDING` names those whose card comes with their family's own issue).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

KINDS = ("paper-silent choice", "interpretation", "released-code", "scale", "fairmt extension")
"""What a departure is: the paper gives no value (``paper-silent choice``); the paper is ambiguous and this is one
reading (``interpretation``); the authors' released code does it otherwise than the paper says (``released-code``);
the recipe runs smaller or on other hardware (``scale``); fairmt adds something the paper does not have
(``fairmt extension``)."""

CARDS_PENDING: frozenset[str] = frozenset()
"""Recipes that claim a paper and have no card yet (each to get one; the test fails when one gains its card, so
that the name leaves this list)."""

_CLAIM = re.compile(r"\bas [A-Z][\w&.\- ]+ (?:\(\d{4}\) )?ran it|\b(?:Table|Tab\.|Fig\.|Figure|App\.|Eq\.) ?\d|"
                    r"\bet al\.|\b[A-Z][a-z]+ & [A-Z][a-z]+|\bas published\b|[Pp]aper hyperparameters|"
                    r"the authors' released")
"""A recipe claims a paper when its leading comment names its authors (``et al.``, ``A & B``), one of its tables,
figures or equations, its published settings or its authors' released code."""


def card_path(recipe_path: str | Path) -> Path:
    """Where the card of ``recipe_path`` lives: ``cards/<name>.yaml`` beside the recipe (beside the file a symbolic
    link names: ``classification/sampling`` is ``sampling/hatespeech_gru`` and shares its card)."""
    p = Path(recipe_path).resolve()
    return p.parent / "cards" / f"{p.stem}.yaml"


def claims_paper(recipe_path: str | Path) -> bool:
    """Whether the recipe's leading comment says it follows a paper (names its authors, a table, figure or eq.)."""
    lines = []
    for line in Path(recipe_path).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return bool(_CLAIM.search(" ".join(lines)))


@dataclass
class Row:
    """One setting of a card with the recipe's resolved value (``departure``: its declared reason, if any)."""

    key: str
    paper: Any
    recipe: Any
    source: str | None = None
    kind: str | None = None
    reason: str | None = None


@dataclass
class Fact:
    """A card entry about code rather than a recipe key (which vector is contrasted, a sum or a mean, a metric's
    direction), with the test that checks it."""

    fact: str
    paper: Any
    fairmt: str
    kind: str
    reason: str
    test: str


FACT_KINDS = ("paper", *KINDS)
"""A fact's kind: ``paper`` (fairmt does what the paper says) or a departure's kind (:data:`KINDS`)."""


@dataclass
class Card:
    """A paper card checked against its resolved recipe."""

    recipe: str
    paper: str
    settings: list[Row] = field(default_factory=list)
    departures: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"recipe", "paper", "settings": [{"key", "paper", "recipe", "source"}], "departures": [{"key",
        "paper", "recipe", "kind", "reason"}], "facts": [{"fact", "paper", "fairmt", "kind", "reason", "test"}]}``
        (``recipe``: the resolved value)."""
        return {"recipe": self.recipe, "paper": self.paper,
                "settings": [{"key": r.key, "paper": r.paper, "recipe": r.recipe, "source": r.source}
                             for r in self.settings],
                "departures": [{"key": r.key, "paper": r.paper, "recipe": r.recipe, "kind": r.kind,
                                "reason": r.reason} for r in self.departures],
                "facts": [{"fact": f.fact, "paper": f.paper, "fairmt": f.fairmt, "kind": f.kind, "reason": f.reason,
                           "test": f.test} for f in self.facts]}

    def table(self) -> str:
        """The card as a Markdown table: setting, paper value, recipe value, source, departure."""
        out = [f"{self.recipe}: {self.paper}", "",
               "| setting | paper | recipe | source | departure |", "|---|---|---|---|---|"]
        declared = {d.key: d for d in self.departures}
        for r in self.settings:
            d = declared.get(r.key)
            out.append(f"| `{r.key}` | {_show(r.paper)} | {_show(r.recipe)} | {_cell(r.source)} | "
                       + (f"{d.kind}: {_cell(d.reason)}" if d else "") + " |")
        for d in self.departures:
            if d.key not in {r.key for r in self.settings}:
                out.append(f"| `{d.key}` | {_show(d.paper)} | {_show(d.recipe)} | | {d.kind}: {_cell(d.reason)} |")
        if self.facts:
            out += ["", "In the code (each checked by its test):", "",
                    "| fact | paper | fairmt | kind | reason | test |", "|---|---|---|---|---|---|"]
            out += [f"| {_cell(f.fact)} | {_cell(_show(f.paper))} | {_cell(f.fairmt)} | {f.kind} | {_cell(f.reason)} | "
                    f"`{_cell(f.test)}` |" for f in self.facts]
        return "\n".join(out)

    def departures_block(self) -> str:
        """The departures in a few lines (the end of ``fairmt train --dry-run``)."""
        lines = [f"paper card ({self.paper}): {len(self.departures)} declared departure"
                 f"{'' if len(self.departures) == 1 else 's'} (fairmt recipes --paper {self.recipe})"]
        lines += [f"  {d.key}: paper {_show(d.paper)}, recipe {_show(d.recipe)} [{d.kind}]" for d in self.departures]
        lines += [f"  undeclared: {p}" for p in self.problems]
        return "\n".join(lines)


def _show(v: Any) -> str:
    return "(silent)" if v is None else json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v


def _cell(text: str | None) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


_MISSING = object()


def lookup(resolved: dict[str, Any], key: str) -> Any:
    """The value at a dotted path of the resolved recipe (list items by index); ``_MISSING`` when absent."""
    node: Any = resolved
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def same(a: Any, b: Any) -> bool:
    """Equal values (numbers to a relative 1e-9, so ``2`` and ``2.0`` match; lists and mappings item by item)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def resolved_values(config: dict[str, Any]) -> dict[str, Any]:
    """The resolved recipe as plain values: the family's runner's ``resolve_config`` where it returns a mapping
    (classification, sampling), else the schema's resolved object (with ``training`` as the Trainer Config resolves
    it where the runner returns one)."""
    from fairmt.recipes._registry import family
    from fairmt.recipes._schema import resolve_recipe

    module = family(config.get("method")).runner_module()
    resolver = getattr(module, "resolve_config", None)
    out = resolver(config) if resolver else None
    if isinstance(out, dict):
        return json.loads(json.dumps(out, default=str))
    schema = resolve_recipe(config)
    values = schema.model_dump() if schema is not None else dict(config)
    if out is not None and hasattr(out, "to_json_string"):
        values["training"] = json.loads(out.to_json_string())
    return json.loads(json.dumps(values, default=str))


def read_card(path: str | Path) -> dict[str, Any]:
    from fairmt.data.inputs import parse_yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise FairmtError(f"paper card {path} cannot be read: {err}") from None
    data = parse_yaml(text, f"paper card {path}", "card")
    if not isinstance(data, dict) or not {"recipe", "paper", "settings"} <= set(data):
        raise FairmtError(f"paper card {path} must be a mapping with recipe, paper, settings (and departures)")
    return data


def check_card(card: dict[str, Any], config: dict[str, Any], name: str | None = None) -> Card:
    """The card against the recipe ``config`` (loaded, overrides applied): every row with its resolved value, and
    ``problems``, one line each (empty: the recipe is the paper's wherever the card does not declare otherwise)."""
    resolved = resolved_values(config)
    out = Card(recipe=str(card["recipe"]), paper=str(card["paper"]))
    problems = out.problems
    if name is not None and card["recipe"] != name:
        problems.append(f"the card names recipe {card['recipe']!r}, not {name!r}")
    settings = {}
    for item in card.get("settings") or []:
        key = item.get("key")
        if not key or "paper" not in item or not item.get("source"):
            problems.append(f"setting {item!r} needs key, paper and source")
            continue
        if key in settings:
            problems.append(f"setting {key} is listed twice")
        value = lookup(resolved, key)
        if value is _MISSING:
            problems.append(f"setting {key} is not a key of the resolved recipe")
            continue
        settings[key] = Row(key, item["paper"], value, source=str(item["source"]))
    out.settings = list(settings.values())
    seen = set()
    for item in card.get("departures") or []:
        key = item.get("key")
        if not key or item.get("kind") not in KINDS or not item.get("reason") or "recipe" not in item:
            problems.append(f"departure {key if key else repr(item)} needs key, recipe, kind (one of {', '.join(KINDS)}) and "
                            f"reason")
            continue
        if key in seen:
            problems.append(f"departure {key} is declared twice")
        seen.add(key)
        value = lookup(resolved, key)
        if value is _MISSING:
            problems.append(f"departure {key} is not a key of the resolved recipe")
            continue
        paper = settings[key].paper if key in settings and "paper" not in item else item.get("paper")
        if key in settings and not same(paper, settings[key].paper):
            problems.append(f"departure {key} gives paper value {_show(paper)}, the setting "
                            f"{_show(settings[key].paper)}")
        if not same(item["recipe"], value):
            problems.append(f"departure {key} declares recipe value {_show(item['recipe'])}, the recipe resolves "
                            f"to {_show(value)}")
        elif paper is not None and same(paper, value):
            problems.append(f"departure {key} no longer differs (paper and recipe are both {_show(value)}): "
                            f"remove it from the card")
        out.departures.append(Row(key, paper, value, kind=item["kind"], reason=" ".join(str(item["reason"]).split())))
    out.facts = _check_facts(card.get("facts") or [], problems)
    for key, row in settings.items():
        if key not in seen and not same(row.paper, row.recipe):
            problems.append(f"{key}: the recipe resolves to {_show(row.recipe)}, the paper's value is "
                            f"{_show(row.paper)} ({row.source}), and the card declares no departure")
    return out


_REPO = Path(__file__).resolve().parents[2]


def _check_facts(items: list[Any], problems: list[str]) -> list[Fact]:
    """The card's ``facts`` (module docstring), each with its fields and a test that exists (``tests/FILE.py::NAME``,
    looked up in the source checkout; an installed package without ``tests/`` only checks the form)."""
    facts = []
    for item in items:
        fields = ("fact", "paper", "fairmt", "kind", "reason", "test")
        if not isinstance(item, dict) or not all(k in item for k in fields) or item.get("kind") not in FACT_KINDS:
            problems.append(f"fact {item!r} needs {', '.join(fields)} (kind one of {', '.join(FACT_KINDS)})")
            continue
        test = str(item["test"])
        path, _, func = test.partition("::")
        if not path.startswith("tests/") or not path.endswith(".py") or not func.isidentifier():
            problems.append(f"fact {item['fact']!r}: test {test!r} is not tests/FILE.py::FUNCTION")
            continue
        source = _REPO / path
        if (_REPO / "tests").is_dir() and (not source.is_file()
                                           or f"def {func}(" not in source.read_text(encoding="utf-8")):
            problems.append(f"fact {item['fact']!r}: its test {test} does not exist")
            continue
        facts.append(Fact(str(item["fact"]), item["paper"], str(item["fairmt"]), str(item["kind"]),
                          " ".join(str(item["reason"]).split()), test))
    return facts


def departures_markdown(cards: list[Card]) -> str:
    """One Markdown table per paper of every departure its recipes' cards declare (a departure shared by several
    recipes is one row naming them all): what ``fairmt recipes --departures`` prints and each
    docs/reproducing/PAPER.md page shows (docs_gen/cards.py)."""
    out: list[str] = []
    papers: dict[str, list[Card]] = {}
    for card in cards:
        papers.setdefault(card.paper.split(" — ")[0], []).append(card)
    for paper, group in papers.items():
        rows: dict[tuple, list[str]] = {}
        for card in group:
            for d in card.departures:
                rows.setdefault((d.key, _show(d.paper), _show(d.recipe), d.kind, d.reason), []).append(
                    card.recipe.split("/", 1)[-1])
        out += [f"**{paper}** ({len(group)} recipes)", "", "| recipes | setting | paper | recipe | kind | reason |",
                "|---|---|---|---|---|---|"]
        for (key, paper_v, recipe_v, kind, reason), names in rows.items():
            out.append(f"| {', '.join(f'`{n}`' for n in names)} | `{key}` | {_cell(paper_v)} | {_cell(recipe_v)} | "
                       f"{kind} | {_cell(reason)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


COMPARISON_TABLES: dict[str, tuple[str, ...]] = {
    "classification on Bias in Bios, frozen all-MiniLM-L6-v2": (
        "classification/inlp", "classification/cscl_one_stage", "classification/cscl_two_stage",
        "classification/fcl", "classification/adversarial"),
}
"""Recipes meant to be compared in one table (one data set, one encoder): their defaults select checkpoints (and
sweep settings) by one rule — Chi et al.'s lowest dev CE (App. C.3, Fig. 11 'CE (best)'), the one rule a paper of
this table states; each card says so where the recipe's paper gives none (:func:`check_comparison_tables`)."""

RULE_KEYS = ("selection", "sweep_selection")
"""The resolved recipe keys that decide which checkpoint / setting a row reports."""


def check_comparison_tables(load) -> list[str]:
    """One line per table of :data:`COMPARISON_TABLES` whose recipes do not share one value of each
    :data:`RULE_KEYS` (resolved: a default counts as written); empty when every table selects alike. ``load``: recipe
    name → loaded config (``lambda n: fairmt.commands.train.load_recipe(n, [])``; passed in, as this layer is below
    the commands)."""
    problems = []
    for table, names in COMPARISON_TABLES.items():
        values = {n: resolved_values(load(n)) for n in names}
        for key in RULE_KEYS:
            seen = {n: lookup(v, key) for n, v in values.items()}
            seen = {n: (None if v is _MISSING else v) for n, v in seen.items()}
            if len({json.dumps(v) for v in seen.values()}) > 1:
                problems.append(f"{table}: the recipes select by different {key} rules ("
                                + ", ".join(f"{n}: {v}" for n, v in seen.items()) + ")")
    return problems


def card_of_config(config: dict[str, Any]) -> Card | None:
    """The checked card of a loaded recipe (by its ``recipe_path``); None without one."""
    path = config.get("recipe_path")
    if not path or not card_path(path).is_file():
        return None
    return check_card(read_card(card_path(path)), config)


__all__ = ["FACT_KINDS", "Fact", "KINDS", "CARDS_PENDING", "COMPARISON_TABLES", "RULE_KEYS", "Card", "check_comparison_tables", "Row", "card_path", "card_of_config", "check_card", "claims_paper",
           "departures_markdown",
           "lookup", "read_card", "resolved_values", "same"]
