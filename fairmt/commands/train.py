"""``fairmt train RECIPE.yaml [key=value ...]``: run a recipe.

A recipe is a YAML mapping with a ``method`` key naming a registered recipe family (:mod:`fairmt.recipes`: ``gacl``,
``ccd``, ``classification``, ...); that family's runner gets the mapping with the overrides applied. Overrides use
dotted keys and YAML values: ``training.learning_rate=1e-5 peft.r=8 train_data=my.jsonl``. Works the same under
``accelerate launch --config_file recipes/accelerate/ddp.yaml -m fairmt train RECIPE.yaml``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fairmt.errors import FairmtError
from fairmt.recipes import (  # noqa: F401  (recipe loading moved to fairmt.recipes; these names stay importable here)
    RECIPE_ALIASES,
    apply_overrides,
    available_methods,
    builtin_recipes,
    builtin_recipes_dir,
    family,
    load_recipe,
    recipe_aliases,
    resolve,
    resolve_recipe_path,
    run_recipe,
    set_output_dir,
)


def register(groups) -> None:
    from fairmt.commands._options import output_dir
    from fairmt.recipes import FAMILY_FOLDERS

    p = groups["top"].add_parser("train", help="run a training recipe (YAML) with optional key=value overrides")
    p.add_argument("recipe", help="recipe YAML file, or a built-in recipe's name, e.g. gacl/small100_en-de")
    p.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. training.max_steps=100")
    output_dir(
        p,
        "--output-dir",
        what="run folder",
        resumable=True,
        metavar="DIR",
        help="the run's folder (the recipe's output folder: training.output_dir, or output_dir for the "
        "classification and sampling recipes)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier run in the output folder, its checkpoints included (default: refuse)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="validate the recipe, print it (overrides applied) and the resolved training Config as JSON, "
        "and say on stderr, one line each, what the real run would hit (mixed precision without a "
        "GPU, missing data, unavailable models, an output folder in use, too few examples after the "
        "data preparation) and what matters before a GPU hour (parameters, KD teacher dtype and "
        "memory, data after filtering, steps per epoch); exit 2 if it would fail",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="with --dry-run: every field of the resolved training Config (default: the values the recipe "
        "sets or that differ from the Config's defaults); set_by_recipe names the recipe's own keys",
    )
    p.set_defaults(handler=_run)
    r = groups["top"].add_parser("recipes", help="list the built-in training recipes (fairmt train NAME runs one)")
    r.add_argument(
        "family", nargs="?", metavar="FAMILY", help=f"only the recipes of this family ({', '.join(FAMILY_FOLDERS)})"
    )
    r.add_argument(
        "--long", action="store_true", help="each recipe's whole description and what it reads, under its row"
    )
    r.add_argument(
        "--paper",
        metavar="RECIPE",
        help="print the recipe's paper card instead: each setting the paper states (its value, the "
        "recipe's resolved value, the source) and every declared departure with its kind and reason",
    )
    r.add_argument("--json", action="store_true", help="with --paper: the card as JSON")
    r.add_argument(
        "--departures",
        action="store_true",
        help="every built-in recipe's declared departures from its paper, one Markdown table per paper "
        "(each docs/reproducing/PAPER.md page shows its paper's table, generated at build time)",
    )
    r.set_defaults(handler=_list_recipes)


def recipe_description(path: Path) -> str:
    """The recipe's leading comment block, whole (its first lines say what it reproduces), without command lines."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text.startswith(("fairmt ", "accelerate ")):  # usage examples: `fairmt train NAME` says it
            continue
        lines.append(text)
    aliases = recipe_aliases(path)
    if aliases:
        lines.append(f"Also reachable as {', '.join(aliases)}.")
    return " ".join(" ".join(lines).split())


def recipe_needs(path: Path) -> tuple[list[str], list[str]]:
    """What a recipe fetches from the Hugging Face Hub on its first run (``model X``, ``data Y``) and the local data it
    reads (descriptions; a path under ``FAIRMT_DATA/`` is relative to :func:`fairmt.data.paths.data_root`): the model
    and the local data its family names (:attr:`fairmt.recipes.Family.needs`), read from the file as written."""
    from fairmt.hub import MODEL_ALIASES
    from fairmt.recipes._files import parse_yaml_text

    config = parse_yaml_text(path.read_text(encoding="utf-8"), f"recipe {path}", "recipe") or {}
    hub, local = [], []
    model, local_data = family(config.get("method")).recipe_needs(config)
    if model and not config.get("tiny_model") and not (str(model) in MODEL_ALIASES or str(model).startswith("pkg:")):
        if str(model).startswith((".", "/", "~")) or Path(str(model)).exists():
            local.append(f"model {model}")
        else:
            hub.append(f"model {model}")
    data = config.get("data") if isinstance(config.get("data"), dict) else {}
    if data.get("source") == "hub":
        hub.append(f"data {data.get('hub_id') or data.get('dataset')}")
    else:
        local += local_data
    return hub, local


def recipe_availability(path: Path) -> str:
    """``offline`` or ``Hub download: ...`` (a model or data set fetched from the Hugging Face Hub on the first run),
    then the local data the recipe reads, if any (``data: ...``)."""
    hub, local = recipe_needs(path)
    where = "offline" if not hub else "Hub download: " + ", ".join(hub)
    return where + (f"; data: {', '.join(local)}" if local else "")


def _local_present(need: str) -> bool:
    """Whether a local input named by :func:`recipe_needs` is on this machine (a data set fetched by `fairmt data`
    or a file the user brings counts as absent unless its path exists)."""
    from fairmt.data.paths import data_root

    if need.startswith("FAIRMT_DATA/"):
        rel = need.removeprefix("FAIRMT_DATA/").split(" ")[0]
        return (data_root() / rel).exists()
    for prefix in ("model ", "your tuple file ", "data.train "):
        if need.startswith(prefix):
            return Path(need.removeprefix(prefix)).expanduser().exists()
    return False  # "the celeba data (...)": a corpus fetched by hand


def recipe_status(path: Path) -> str:
    """``ready here`` (offline and every local input present), ``needs Hub download`` or ``needs data``."""
    hub, local = recipe_needs(path)
    if hub:
        return "needs Hub download"
    return "ready here" if all(_local_present(n) for n in local) else "needs data"


def recipe_paper(path: Path) -> str:
    """The paper the recipe's card names (its first sentence), or ``-`` for a recipe without a card."""
    import re

    from fairmt.recipes._files import parse_yaml_text
    from fairmt.recipes.cards import card_path

    card = card_path(path)
    if not card.is_file():
        return "-"
    data = parse_yaml_text(card.read_text(encoding="utf-8"), f"paper card {card}", "card") or {}
    paper = " ".join(str(data.get("paper", "-")).split())
    title, _, after = paper.partition(" — ")
    year = re.search(r"\((\d{4})\)", title)
    short = title.split(",")[0].split(" (")[0] + (f" {year.group(1)}" if year else "")
    baseline = re.search(r"baseline (\S+)", after)
    if baseline:
        short += f", baseline {baseline.group(1)}"
    elif "SimCLR" in after:
        short += ", SimCLR control"
    elif "extension" in after:
        short += ", an extension"
    return short


def recipe_rows(family: str | None = None) -> list[tuple[str, str, str, str]]:
    """``(name, family, paper, status)`` of every built-in recipe (of ``family`` only, when given)."""
    rows = [
        (name, name.split("/")[0], recipe_paper(path), recipe_status(path)) for name, path in builtin_recipes().items()
    ]
    if family is not None:
        families = sorted({r[1] for r in rows} | {a.split("/")[0] for a in RECIPE_ALIASES})
        if family not in families:
            raise FairmtError(f"no recipe family {family!r}: the families are {', '.join(families)}")
        rows = [r for r in rows if r[1] == family]
    return rows


def paper_card(recipe: str, overrides: list[str] | None = None):
    """The checked paper card of a recipe (a built-in name or a file); a FairmtError when it has none."""
    from fairmt.recipes.cards import card_of_config, card_path

    config = load_recipe(recipe, overrides)
    card = card_of_config(config)
    if card is None:
        raise FairmtError(
            f"recipe {recipe} has no paper card ({card_path(config['recipe_path'])}): it does not claim "
            f"to reproduce a paper, or its card is still to be written"
        )
    return card


def all_departures_markdown() -> str:
    """The departures of every built-in recipe that has a paper card, one Markdown table per paper."""
    from fairmt.recipes.cards import card_of_config, card_path, departures_markdown

    cards = [card_of_config(load_recipe(name)) for name, path in builtin_recipes().items() if card_path(path).is_file()]
    return departures_markdown([c for c in cards if c is not None])


def _print_card(args) -> int:
    import json

    card = paper_card(args.paper)
    if args.json:
        print(json.dumps(card.to_json(), indent=2, ensure_ascii=False))
    else:
        print(card.table())
    for problem in card.problems:
        print(f"fairmt: undeclared difference from the paper: {problem}", file=sys.stderr)
    return 1 if card.problems else 0


def _list_recipes(args) -> int:
    """Every built-in recipe as a table: name, family, paper, status (``--long``: each one's description too)."""
    import shutil
    import textwrap

    if getattr(args, "paper", None):
        return _print_card(args)
    if getattr(args, "departures", False):
        print(all_departures_markdown(), end="")
        return 0
    if getattr(args, "json", False):
        raise FairmtError("--json goes with --paper RECIPE (the list of recipes is text)")

    rows = recipe_rows(args.family)
    head = ("recipe", "family", "paper", "status")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    width = max(60, min(shutil.get_terminal_size((110, 20)).columns, 120))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if args.long:  # the recipe's own comment lines as written (a results table stays a table)
            path = builtin_recipes()[row[0]]
            for line in path.read_text(encoding="utf-8").splitlines():
                if not line.startswith("#"):
                    break
                text = line[1:].removeprefix(" ")
                if not text.lstrip().startswith(("fairmt ", "accelerate ")):
                    print(f"    {text}".rstrip())
            for alias in recipe_aliases(path):
                print(f"    Also reachable as {alias}.")
            print(
                textwrap.fill(
                    f"needs: {recipe_availability(path)}",
                    width=width,
                    initial_indent="    ",
                    subsequent_indent="      ",
                )
            )
    aliases = [
        f"{alias} = {name}"
        for alias, name in RECIPE_ALIASES.items()
        if args.family in (None, alias.split("/")[0], name.split("/")[0])
    ]
    if aliases:  # a second name of a listed recipe: the same file, the same paper card
        print(f"\naliases (the same recipe under a second name): {', '.join(aliases)}")
    print(f"\naccelerate configs: {builtin_recipes_dir() / 'accelerate'}")
    print("first recipe to try: fairmt train gacl/tiny_offline (offline, a tiny model, under a minute on a CPU)")
    return 0


#: TrainingArguments fields fairmt's runners never read (they decide themselves what runs): shown by --dry-run
#: they would mislead ("do_train: false" for a run that trains)
UNUSED_ARGS = ("do_train", "do_eval", "do_predict")


def _shown(args: dict) -> dict:
    return {k: v for k, v in args.items() if k not in UNUSED_ARGS}


def dry_run(config: dict, verbose: bool = False) -> tuple[str, list[tuple[bool, str]], list[str]]:
    """JSON of the recipe and its resolved Config, the findings of :mod:`fairmt.recipes._preflight` (what the real
    run would hit) and of :mod:`fairmt.recipes._dry_summary` (whether the data suffice), and the summary lines
    (parameters, teacher, data after preparation, steps per epoch). A TrainingArguments Config shows the values the
    recipe sets or that differ from the class's defaults; ``verbose``: every field (those fairmt never reads left
    out), with ``set_by_recipe`` naming the recipe's own keys."""
    import json

    from fairmt.outputs import json_text
    from fairmt.recipes._dry_summary import changed_fields, summarize
    from fairmt.recipes._preflight import findings

    resolved = resolve(config)
    out: dict = {"recipe": config}
    if isinstance(resolved, dict):  # a recipe-level config (classification, sampling)
        shown = dict(resolved)
        for key in ("stages", "resolved"):
            if isinstance(shown.get(key), dict):
                shown[key] = {k: _shown(v) if isinstance(v, dict) else v for k, v in shown[key].items()}
        out["config"] = shown
    elif resolved is not None:  # a TrainingArguments subclass
        changed, set_by_recipe = changed_fields(resolved, config, skip=UNUSED_ARGS)
        full = _shown(json.loads(resolved.to_json_string())) if verbose else changed
        out["config"] = {"class": type(resolved).__name__, **full}
        out["set_by_recipe"] = set_by_recipe
    if resolved is not None:
        out["not_shown"] = {
            "keys": list(UNUSED_ARGS),
            "why": "TrainingArguments fields fairmt's runners never read (the recipe decides what runs)",
        }
        if not verbose and not isinstance(resolved, dict):
            out["not_shown"]["defaults"] = "fields at the Config's defaults: --verbose shows every field"
    found = findings(config, resolved)
    lines, more = summarize(config, resolved, found)
    return json_text(out), found + more, lines


def _run(args) -> int:
    from fairmt.recipes._schema import validate_recipe

    config = load_recipe(args.recipe, args.overrides, validate=False)
    if getattr(args, "overwrite", False):
        config["overwrite"] = True
    if getattr(args, "output_dir", None):
        set_output_dir(config, args.output_dir)
    if not getattr(args, "dry_run", False):
        _refuse_a_folder_in_use(config)  # before validation imports torch and transformers (seconds)
    validate_recipe(config)
    if getattr(args, "dry_run", False):
        text, found, summary = dry_run(config, verbose=getattr(args, "verbose", False))
        print(text)
        for line in summary:
            print(f"dry run summary: {line}", file=sys.stderr)  # not a finding (those are "dry run: ...")
        for fatal, line in found:
            print(f"dry run: {'the real run would fail: ' if fatal else 'note: '}{line}", file=sys.stderr)
        failing = sum(fatal for fatal, _ in found)
        if not failing:
            print("dry run: nothing found that would stop the real run", file=sys.stderr)
        from fairmt.recipes.cards import card_of_config

        card = card_of_config(config)
        if card is not None:  # last: what of this run is not the paper's
            print(card.departures_block(), file=sys.stderr)
        if failing:
            raise FairmtError(f"the real run would fail ({failing} finding{'s' if failing > 1 else ''} above)")
        return 0
    resolve(config)  # the Trainer's own checks, as one line, before anything is built
    run_recipe(config)
    return 0


def _refuse_a_folder_in_use(config: dict) -> None:
    """A run folder named by the recipe that a live run holds is refused at once (the runner's claim decides; this
    only says it before torch and transformers load). Main process only, as the claim."""
    import os

    from fairmt.outputs import refuse_if_in_use

    fam = family(config.get("method"))
    folder = fam.output_dir(config)
    if folder and isinstance(folder, str) and os.environ.get("RANK", "0") == "0":
        refuse_if_in_use(folder, flag=fam.output_key)
