"""A sweep's definition (:class:`SweepSpec`) from the command line, checked against the recipe before any trial runs.

Every check here fails with one :class:`~fairmt.errors.FairmtError` line naming the bad input: a ``--grid`` key the
recipe schema does not know (the recipe is loaded once per grid value through :func:`fairmt.recipes.load_recipe`,
so the sweep accepts exactly what ``fairmt train`` accepts), a value of the wrong type (the schema's types, and the type
of the value the recipe or its defaults already hold at that key), ``--seeds 0``, an objective metric the recipe
does not report, a test metric as an objective.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import math
import time
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes import family
from fairmt.sweep.results import matches, metric_patterns

DIRECTIONS = {"max": "maximize", "maximize": "maximize", "min": "minimize", "minimize": "minimize"}
RESERVED = ("method", "recipe_path", "overwrite")


@dataclasses.dataclass
class SweepSpec:
    """Everything that defines a sweep. :meth:`identity` is what a rerun or a ``--join`` must repeat exactly."""

    recipe: str
    recipe_path: str
    method: str
    overrides: list[str]
    grid: dict[str, list[Any]]  # key -> parsed values, in command-line order
    grid_raw: dict[str, list[str]]  # key -> the values as typed (passed on to `fairmt train`)
    ranges: dict[str, dict[str, Any]]  # key -> {"low", "high", "log", "int"} (search only)
    seeds: list[int]
    objectives: list[list[str]]  # [[metric, "maximize" | "minimize"], ...]
    tradeoff: list[list[str]]  # the two axes of the front and the plot: [performance, fairness]
    search: int | None  # number of sampled settings; None = the whole grid
    select: str = "dto"
    select_tolerance: float = 0.01  # accuracy_then_gap: how far below the best dev accuracy (the recipe's)
    output_dir: str = ""
    storage: str = ""
    study_name: str = ""
    launcher: str = "python"
    accelerate_config: str | None = None
    join: bool = False
    grace_period: int = 600
    max_failures: int = 3
    sampler_seed: int | None = None
    paper_card: str = ""  # the recipe's paper card and where to read it; empty without one
    card_differences: list[str] = dataclasses.field(default_factory=list)  # card_differences(): one line a setting

    @property
    def seed_key(self) -> str:
        return family(self.method).seed_key

    @property
    def mode(self) -> str:
        return "search" if self.search else "grid"

    def identity(self) -> dict[str, Any]:
        """The recipe by content (a built-in recipe's path differs between machines, its name can be spelt two
        ways), what the trials override, and the study's objectives."""
        import hashlib

        content = hashlib.sha256(Path(self.recipe_path).read_bytes()).hexdigest()[:16]
        return {
            "recipe_sha256": content,
            "method": self.method,
            "overrides": list(self.overrides),
            "grid": self.grid,
            "ranges": self.ranges,
            "seeds": list(self.seeds),
            "objectives": [list(o) for o in self.objectives],
            "search": self.search,
        }

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def settings(self) -> list[dict[str, Any]]:
        """The grid's settings in command-line order (the first key varies slowest); one empty setting without
        ``--grid``."""
        import itertools

        keys = list(self.grid)
        return [dict(zip(keys, combo)) for combo in itertools.product(*(self.grid[k] for k in keys))]

    def override_for(self, key: str, value: Any) -> str:
        """``key=value`` for ``fairmt train``: the value as typed for a grid value, else its YAML form."""
        if key in self.grid:
            for parsed, raw in zip(self.grid[key], self.grid_raw[key]):
                if parsed == value and type(parsed) is type(value):
                    return f"{key}={raw}"
        return f"{key}={yaml_scalar(value)}"


GRID_CHECKS = 256
"""The most grid settings a sweep loads one by one before the first trial (each a recipe check, milliseconds)."""


def grid_settings(grid_raw: dict[str, list[str]]) -> list[list[str]]:
    """The ``key=value`` overrides of every setting of a grid, as its trials load them (one grid value alone can be
    fine and refused beside another key's: ``balance.target`` is read only with a ``balance.method``); a grid of over
    :data:`GRID_CHECKS` settings: each value beside the other keys' first values."""
    keys = list(grid_raw)
    combos = list(itertools.product(*(grid_raw[k] for k in keys)))
    if len(combos) > GRID_CHECKS:
        firsts = [grid_raw[k][0] for k in keys]
        combos = [
            tuple(raw if j == i else firsts[j] for j in range(len(keys)))
            for i, k in enumerate(keys)
            for raw in grid_raw[k]
        ]
    return [[f"{k}={raw}" for k, raw in zip(keys, combo)] for combo in combos]


def yaml_scalar(value: Any) -> str:
    """A scalar as YAML that ``fairmt train`` parses back to the same value and type."""
    import json

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)  # a quoted string (YAML reads JSON strings): "1.0" stays a string


# ------------------------------------------------------------------------------------------------- parsing
def _parse_value(key: str, raw: str) -> Any:
    """``raw`` as ``fairmt train`` parses an override value (YAML, ``2e-5`` as a number)."""
    from fairmt.recipes import apply_overrides

    node: Any = apply_overrides({}, [f"{key}={raw}"])
    for part in key.split("."):
        node = node[part]
    return node


def parse_grid(items: list[str]) -> tuple[dict[str, list[Any]], dict[str, list[str]]]:
    grid: dict[str, list[Any]] = {}
    raw: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise FairmtError(f"--grid {item!r} is not of the form key=v1,v2,...")
        if key in grid:
            raise FairmtError(f"--grid {key} is given twice: put all its values in one --grid {key}=v1,v2,...")
        texts = [v.strip() for v in values.split(",")]
        if any(not t for t in texts):
            raise FairmtError(f"--grid {item!r} has an empty value")
        parsed = [_parse_value(key, t) for t in texts]
        for t, v in zip(texts, parsed):
            if isinstance(v, (list, dict)):
                raise FairmtError(f"--grid {key}={t}: grid values must be scalars (numbers, strings, true/false)")
        if len({(type(v), v) for v in parsed}) != len(parsed):
            raise FairmtError(f"--grid {key} repeats a value: {texts}")
        grid[key], raw[key] = parsed, texts
    return grid, raw


def parse_ranges(items: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, spec = item.partition("=")
        parts = spec.split(":")
        if not sep or len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "log"):
            raise FairmtError(f"--range {item!r} is not of the form key=low:high or key=low:high:log")
        low, high = (_parse_value(key, p) for p in parts[:2])
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
            raise FairmtError(f"--range {item!r}: low and high must be numbers")
        if not low < high:
            raise FairmtError(f"--range {item!r}: low must be below high")
        log = len(parts) == 3
        if log and low <= 0:
            raise FairmtError(f"--range {item!r}: a log range needs low > 0")
        if key in out:
            raise FairmtError(f"--range {key} is given twice")
        out[key.strip()] = {"low": low, "high": high, "log": log, "int": isinstance(low, int) and isinstance(high, int)}
    return out


def parse_seeds(text: str) -> list[int]:
    """``N`` (seeds 0 … N−1) or a comma-separated list of seeds."""
    try:
        numbers = [int(s) for s in text.split(",")]
    except ValueError:
        raise FairmtError(f"--seeds {text!r} is neither a number of seeds nor a list of seeds (0,1,2)") from None
    if len(numbers) == 1:
        if numbers[0] < 1:
            raise FairmtError(f"--seeds must be at least 1 (the number of seeds per setting), got {numbers[0]}")
        return list(range(numbers[0]))
    if len(set(numbers)) != len(numbers):
        raise FairmtError(f"--seeds {text!r} repeats a seed")
    bad = [n for n in numbers if not 0 <= n < 2**32]
    if bad:
        raise FairmtError(f"--seeds {text!r}: seed {bad[0]} is outside [0, 2^32) (numpy's seed range)")
    return numbers


SWEEP_RULES = ("dto", "loss", "accuracy", "accuracy_then_gap", "objective")
"""The rules ``--select`` takes: fairmt's checkpoint rules (:data:`fairmt.eval.selection.CRITERIA`), and ``objective``
(the best seed mean of the one ``--objective``, in its direction)."""


def parse_objective(text: str) -> list[str]:
    metric, sep, direction = text.rpartition(":")
    if not sep or not metric or direction.lower() not in DIRECTIONS:
        raise FairmtError(f"--objective {text!r} is not of the form metric:max or metric:min")
    first = metric.split(".")[0]
    if first.startswith("test"):
        dev = "dev." + metric.split(".", 1)[1] if "." in metric else "a dev metric"
        raise FairmtError(
            f"--objective {metric} is a test metric: optimise and select on dev metrics ({dev}); "
            "the sweep reports the test metrics of the setting it selects"
        )
    return [metric, DIRECTIONS[direction.lower()]]


# ------------------------------------------------------------------------------------------------ validation
def _lookup(config: dict[str, Any], key: str) -> tuple[bool, Any]:
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _check_type(flag: str, key: str, raw: str, value: Any, reference: dict[str, Any]) -> None:
    found, current = _lookup(reference, key)
    if not found or current is None:
        return
    kinds = ((bool, "true or false"), ((int, float), "a number"), (str, "a string"))
    for kind, name in kinds:
        if isinstance(current, kind) and not (kind is not bool and isinstance(current, bool)):
            ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
            if not ok:
                raise FairmtError(
                    f"{flag} {key}={raw}: the recipe's {key} is {name} ({current!r}), got "
                    f"{value!r} ({type(value).__name__})"
                )
            return


def check_against_recipe(spec: SweepSpec) -> dict[str, Any]:
    """Load the recipe with each grid value and each range end (the schema of ``fairmt train``); returns the base
    recipe (overrides applied)."""
    from fairmt.recipes import load_recipe

    base = load_recipe(spec.recipe, spec.overrides)
    fam = family(base["method"])
    reserved = set(RESERVED) | {*fam.seed_keys, *fam.output_keys} | ({fam.results_key} if fam.results_key else set())
    overridden = {o.partition("=")[0].strip() for o in spec.overrides}
    for key in sorted(overridden & reserved - set(RESERVED)):
        hint = "give the seeds with --seeds" if key in fam.seed_keys else "the sweep gives every run its own folder"
        raise FairmtError(f"override {key}=...: {hint}")
    reference = fam.reference_config(base)
    for flag, keys in (("--grid", list(spec.grid)), ("--range", list(spec.ranges))):
        for key in keys:
            if key in reserved:
                hint = "use --seeds" if key in fam.seed_keys else "the sweep sets it for every trial"
                raise FairmtError(f"{flag} {key}: {hint}")
            if key in overridden:
                raise FairmtError(f"{flag} {key} is also a fixed override ({key}=...): give it once")
    both = set(spec.grid) & set(spec.ranges)
    if both:
        raise FairmtError(f"--grid and --range both give {sorted(both)[0]}")
    for key, raws in spec.grid_raw.items():
        for raw, value in zip(raws, spec.grid[key]):
            _check_type("--grid", key, raw, value, reference)
    for setting in grid_settings(spec.grid_raw):
        try:
            load_recipe(spec.recipe, [*spec.overrides, *setting])
        except FairmtError as err:
            raise FairmtError(f"--grid {' '.join(setting)}: {err}") from None
    for key, r in spec.ranges.items():
        for end in ("low", "high"):
            _check_type("--range", key, str(r[end]), r[end], reference)
            try:
                load_recipe(spec.recipe, [*spec.overrides, f"{key}={yaml_scalar(r[end])}"])
            except FairmtError as err:
                raise FairmtError(f"--range {key} ({end} {r[end]}): {err}") from None
    return base


def card_differences(spec: SweepSpec) -> tuple[str, list[str]]:
    """``(card, lines)``: the recipe's paper card (its paper, and the command that shows it; empty without one) and
    each setting whose value in some trial leaves it — a fixed override, a ``--grid`` key's values, a ``--range``'s
    ends, the ``--seeds`` — once per setting, naming the values that leave it (a value the card gives is not a
    difference): :func:`fairmt.recipes.cards.variant_differences`, the comparison of ``fairmt train --dry-run``."""
    from fairmt.recipes import load_recipe
    from fairmt.recipes.cards import variant_differences

    fam = family(spec.method)
    firsts = {key: f"{key}={raws[0]}" for key, raws in spec.grid_raw.items()}
    variants: list[tuple[str, list[tuple[str, list[str]]], list[str]]] = []
    for key, raws in spec.grid_raw.items():
        try:  # each value alone; one the recipe accepts only beside another grid key's value: beside their firsts
            for raw in raws:
                load_recipe(spec.recipe, [*spec.overrides, f"{key}={raw}"])
            context: list[str] = []
        except FairmtError:
            context = [o for k, o in firsts.items() if k != key]
        variants.append(("grid", [(raw, [f"{key}={raw}"]) for raw in raws], context))
    for key, r in spec.ranges.items():
        span = f"{r['low']}:{r['high']}{':log' if r['log'] else ''}"
        variants.append(("range", [(span, [f"{key}={yaml_scalar(r[end])}"]) for end in ("low", "high")], []))
    variants.append(("seeds", [(str(s), [f"{k}={s}" for k in fam.seed_keys]) for s in spec.seeds], []))
    card, lines = variant_differences(spec.recipe, spec.overrides, variants)
    if card is None:
        return "", []
    return f"{card.paper} (fairmt recipes --paper {card.copy_of or card.recipe})", lines


def trial_findings(spec: SweepSpec) -> list[tuple[bool, str]]:
    """What ``fairmt train RECIPE --dry-run`` finds that every trial would hit (the recipe's data files and folders,
    its models, mixed precision without a GPU: :func:`fairmt.recipes._preflight.findings`) on the recipe with the
    fixed overrides, as ``(fatal, text)``. The trials' own output folders are the sweep's (new), so the recipe's
    output folder is not one of the findings."""
    from fairmt.recipes import load_recipe, resolve, set_output_dir
    from fairmt.recipes._preflight import findings

    config = load_recipe(spec.recipe, spec.overrides)
    set_output_dir(config, str(Path(spec.output_dir) / "trials" / ".preflight-not-written"))
    return findings(config, resolve(config))


def check_trial_inputs(spec: SweepSpec) -> None:
    """Before the first trial: the fatal :func:`trial_findings`, as one :class:`FairmtError` listing them."""
    fatal = [text for bad, text in trial_findings(spec) if bad]
    if fatal:
        more = (
            f" (and {len(fatal) - 1} more: `fairmt train {spec.recipe} --dry-run` lists them)" if len(fatal) > 1 else ""
        )
        raise FairmtError(f"every trial of this sweep would fail: {fatal[0]}{more}; nothing was started")


def check_metrics(names: list[str], patterns: list[str] | None, what: str = "objective metric") -> None:
    """Every name is one the recipe reports (``patterns``: :func:`fairmt.sweep.results.metric_patterns` or the
    names of a finished run); the error lists the available ones."""
    if patterns is None:
        return
    patterns = [p for p in patterns if not p.split(".")[0].startswith("test")]  # --objective refuses them
    for name in names:
        if not matches(name, patterns):
            close = difflib.get_close_matches(name, patterns, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}? " if close else ""
            raise FairmtError(f"unknown {what} {name!r}: {hint}the recipe reports {', '.join(sorted(patterns))}")


def default_rule(objectives: list[list[str]]) -> str:
    """The selection rule a sweep uses when neither ``--select`` nor the recipe's ``sweep_selection`` names one: with
    one objective, that objective in its own direction (``loss`` where it is ``dev.loss:min``, else ``objective``);
    with several, DTO on the trade-off metrics."""
    if len(objectives) == 1:
        return "loss" if list(objectives[0]) == ["dev.loss", "minimize"] else "objective"
    return "dto"


def default_output_dir(recipe: str) -> str:
    name = Path(recipe).as_posix().removesuffix(".yaml").removeprefix("recipes/").replace("/", "-")
    return str(Path("runs") / "sweeps" / f"{Path(name).name}-{time.strftime('%Y%m%d-%H%M%S')}")


def build_spec(
    recipe: str,
    overrides: list[str],
    grid: list[str],
    ranges: list[str],
    seeds: str,
    objectives: list[str],
    tradeoff: str | None = None,
    search: int | None = None,
    select: str | None = None,
    output_dir: str | None = None,
    storage: str | None = None,
    study_name: str | None = None,
    launcher: str = "python",
    accelerate_config: str | None = None,
    join: bool = False,
    grace_period: int = 600,
    max_failures: int = 3,
    sampler_seed: int | None = None,
) -> SweepSpec:
    """Parse and check a sweep's command line (no trial runs, no folder is created)."""
    g, g_raw = parse_grid(grid)
    r = parse_ranges(ranges)
    seed_list = parse_seeds(str(seeds))
    objs = [parse_objective(o) for o in objectives]
    if len({o[0] for o in objs}) != len(objs):
        raise FairmtError("an --objective metric is given twice")
    if search is not None and search < 1:
        raise FairmtError(f"--search must be at least 1 (the number of settings to try), got {search}")
    if r and not search:
        raise FairmtError("--range needs --search N (a grid takes listed values: --grid key=v1,v2,...)")
    if search and not (g or r):
        raise FairmtError("--search needs a space to search: --grid key=v1,v2,... or --range key=low:high[:log]")
    if search and not r and search > math.prod(len(v) for v in g.values()):
        raise FairmtError(
            f"--search {search} exceeds the {math.prod(len(v) for v in g.values())} settings of the "
            "grid: run the whole grid (no --search), or add a --range"
        )
    if select is not None and select not in SWEEP_RULES:
        raise FairmtError(f"--select must be one of {', '.join(SWEEP_RULES)}, got {select!r}")
    if grace_period < 10:
        raise FairmtError(f"--grace-period must be at least 10 seconds, got {grace_period}")
    if max_failures < 1:
        raise FairmtError(f"--max-failures must be at least 1, got {max_failures}")
    if launcher not in ("python", "accelerate"):
        raise FairmtError(f"--launcher must be python or accelerate, got {launcher!r}")
    if accelerate_config and launcher != "accelerate":
        raise FairmtError("--accelerate-config needs --launcher accelerate")
    if launcher == "accelerate":
        accelerate_config = str(resolve_accelerate_config(accelerate_config))
    if join and not output_dir:
        raise FairmtError("--join needs --output-dir: the shared sweep folder every process writes its trials into")

    from fairmt.recipes import resolve_recipe_path

    spec = SweepSpec(
        recipe=recipe,
        recipe_path=str(resolve_recipe_path(recipe).resolve()),
        method="",
        overrides=list(overrides),
        grid=g,
        grid_raw=g_raw,
        ranges=r,
        seeds=seed_list,
        objectives=objs,
        tradeoff=[],
        search=search,
        select=select or "dto",
        launcher=launcher,
        accelerate_config=accelerate_config,
        join=join,
        grace_period=grace_period,
        max_failures=max_failures,
        sampler_seed=sampler_seed,
    )
    base = check_against_recipe(spec)
    spec.method = base["method"]
    if isinstance(base.get("selection_tolerance"), (int, float)):
        spec.select_tolerance = float(base["selection_tolerance"])
    fam = family(spec.method)
    if not spec.objectives:
        if not fam.objectives:
            raise FairmtError(
                f"method {spec.method} has no default objective: name the metric(s) to optimise with "
                "--objective METRIC:max|min"
            )
        spec.objectives = [list(o) for o in fam.objectives]
    axes = [parse_objective(t) for t in tradeoff.split(",")] if tradeoff else []
    if tradeoff and len(axes) != 2:
        raise FairmtError(f"--tradeoff {tradeoff!r} must name two metrics: PERFORMANCE:max,FAIRNESS:min")
    if not axes:
        axes = [list(o) for o in (spec.objectives[:2] if len(spec.objectives) >= 2 else fam.objectives)]
    spec.tradeoff = axes
    if select is None:  # the recipe names its rule (sweep_selection), else the one the objectives call for
        spec.select = base.get("sweep_selection") or default_rule(spec.objectives)
    patterns = metric_patterns(spec.method, base)
    check_metrics([o[0] for o in spec.objectives], patterns)
    check_metrics([a[0] for a in spec.tradeoff], patterns, "--tradeoff metric")
    spec.output_dir = str(Path(output_dir or default_output_dir(recipe)).resolve())
    spec.storage = storage or f"sqlite:///{Path(spec.output_dir) / 'study.db'}"
    spec.study_name = study_name or Path(spec.output_dir).name
    spec.paper_card, spec.card_differences = card_differences(spec)
    return spec


def resolve_accelerate_config(path: str | None) -> Path:
    """An accelerate config file, or the name of a shipped one (``ddp``, ``fsdp2``, ``recipes/accelerate/ddp.yaml``)."""
    if not path:
        raise FairmtError("--launcher accelerate needs --accelerate-config FILE (e.g. recipes/accelerate/ddp.yaml)")
    p = Path(path)
    if p.is_file():
        return p.resolve()
    from fairmt.recipes import builtin_recipes_dir

    shipped = builtin_recipes_dir() / "accelerate" / (p.name if p.suffix == ".yaml" else f"{p.name}.yaml")
    if shipped.is_file():
        return shipped
    names = sorted(q.stem for q in (builtin_recipes_dir() / "accelerate").glob("*.yaml"))
    raise FairmtError(f"--accelerate-config {path}: no such file, nor a shipped config ({', '.join(names)})")
