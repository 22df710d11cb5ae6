"""The sweep's aggregate: ``sweep.json``, ``sweep.md`` and ``tradeoff.png`` from the finished runs' results.

* per setting: its overrides, ``n`` (finished seeds), and the ``mean`` and sample ``std`` (ddof = 1; ``null`` for one
  seed) of every metric the recipe reports (:func:`fairmt.sweep.results.flatten`); each (setting, seed) counted once,
  from its run folder's ``done.json``;
* the Pareto front of the two trade-off metrics (``spec.tradeoff``: task performance, fairness), on dev and on the
  matching test metrics, computed by Optuna (``Study.best_trials`` of a multi-objective in-memory study holding one
  trial per setting);
* model selection on the **dev** means with fairmt's rules (:func:`fairmt.eval.selection.select_checkpoint`: DTO,
  Shen et al.'s accuracy-then-GAP, accuracy, loss), one setting per rule where the results allow it, and the
  setting chosen by ``--select`` with its **test** means; within it, the run whose own dev metrics the same rule
  prefers (the model ``fairmt push`` publishes, with that run's own test results in the card);
* ``front_auc``: the area under each split's front (fairlib's ``auc_performance_fairness_tradeoff``,
  :func:`front_auc`), on dev and on test — a summary of the method's trade-off, never used to select.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.eval.classification import TRADEOFF_DEFINITION as _TRADEOFF
from fairmt.recipes import family
from fairmt.sweep.results import flatten, percent_splits, read_results

FORMAT = "fairmt-sweep/1"


@dataclass
class Run:
    setting: dict[str, Any]
    seed: int
    root: Path
    results: dict[str, Any]
    metrics: dict[str, float]
    percent: set[str]


def collect_runs(out: Path, results_name: str | None = None) -> list[Run]:
    """Every finished run (a ``done.json``) under ``out/trials``; a damaged ``done.json`` is rebuilt where the run's
    ``trial.json`` and results read back (:func:`fairmt.sweep.results.read_done`), else the run is left out."""
    from fairmt.sweep.results import read_done

    runs = []
    for done in sorted(out.glob("trials/*/seed-*/done.json")):
        info = read_done(done.parent, results_name)
        if info is None:
            continue
        results = read_results(done.parent / info["results"])
        runs.append(
            Run(info["setting"], int(info["seed"]), done.parent, results, flatten(results), percent_splits(results))
        )
    return runs


def _setting_key(setting: dict[str, Any]) -> str:
    return json.dumps(setting, sort_keys=True)


def mean_std(values: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def pareto_front(points: list[list[float]], directions: list[str]) -> list[int]:
    """Indices of the non-dominated points, by Optuna (``best_trials`` of an in-memory study with these
    ``directions``); points holding a missing value are left out."""
    from fairmt.sweep.engine import require_optuna

    optuna = require_optuna()
    study = optuna.create_study(directions=directions)
    for i, p in enumerate(points):
        if p is None or any(v is None or not math.isfinite(v) for v in p):
            continue
        study.add_trial(optuna.trial.create_trial(values=list(p), user_attrs={"i": i}))
    if not study.trials:
        return []
    return sorted(t.user_attrs["i"] for t in study.best_trials)


def _test_name(metric: str) -> str | None:
    return "test." + metric[len("dev.") :] if metric.startswith("dev.") else None


def _fraction(value: float | None, percent: bool) -> float | None:
    return None if value is None else value / 100.0 if percent else value


def _records(items: list[dict[str, float]], spec, percent: bool):
    """``EvalRecord``s (one per item: a setting's dev means, or a run's dev metrics) for select_checkpoint; the
    reason when the rule cannot apply."""
    from fairmt.eval.selection import EvalRecord

    if len(spec.tradeoff) != 2:  # selection by loss only (no trade-off named)
        return [EvalRecord(step=i, accuracy=None, gap=None, loss=m.get("dev.loss")) for i, m in enumerate(items)]
    (perf, perf_dir), (fair, fair_dir) = spec.tradeoff
    return [
        EvalRecord(
            step=i,
            accuracy=_fraction(m.get(perf), percent),
            gap=_fraction(m.get(fair), percent),
            loss=m.get("dev.loss"),
        )
        for i, m in enumerate(items)
    ]


def _rule_problem(rule: str, spec) -> str | None:
    """Why ``rule`` does not apply to this sweep's objectives / trade-off metrics (None when it does): a rule that
    would pick the wrong end (``accuracy`` on a metric to minimise) says so instead of choosing."""
    if rule == "loss":
        return None
    if rule == "objective":
        if len(spec.objectives) != 1:
            return (
                f"objective selects on one --objective; this sweep has {len(spec.objectives)} "
                "(use dto, accuracy_then_gap or loss)"
            )
        if not spec.objectives[0][0].startswith("dev."):
            return f"the objective {spec.objectives[0][0]} is not a dev metric: the sweep selects on dev only"
        return None
    if len(spec.tradeoff) != 2:
        alt = "objective" if len(spec.objectives) == 1 else "loss"
        return (
            f"{rule} needs two trade-off metrics (--tradeoff PERFORMANCE:max,FAIRNESS:min, or two "
            f"--objective); with one objective use --select {alt}"
        )
    (perf, perf_dir), (fair, fair_dir) = spec.tradeoff
    if not (perf.startswith("dev.") and fair.startswith("dev.")):
        return f"the trade-off metrics ({perf}, {fair}) are not dev metrics: the sweep selects on dev only"
    if rule == "accuracy" and perf_dir != "maximize":
        return (
            f"accuracy takes the highest {perf}, but {perf} is to be minimised: it would pick the worst "
            "setting (use --select objective with that one objective, or loss)"
        )
    if rule != "accuracy" and (perf_dir != "maximize" or fair_dir != "minimize"):
        return (
            f"{rule} needs a performance to maximise and a fairness gap to minimise (--tradeoff); here "
            f"{perf} is to be {perf_dir[:-1]}ed and {fair} {fair_dir[:-1]}ed"
        )
    return None


def select(items: list[dict[str, float]], rule: str, spec, percent: bool) -> tuple[int | None, str | None]:
    """Index of the item ``rule`` selects on dev metrics, or (None, why not)."""
    from fairmt.eval.selection import select_checkpoint

    problem = _rule_problem(rule, spec)
    if problem:
        return None, problem
    if rule == "loss" and not any("dev.loss" in m for m in items):
        return None, "the recipe's results hold no dev loss (dev.loss)"
    if rule == "objective":
        name, direction = spec.objectives[0]
        keep = [i for i, m in enumerate(items) if m.get(name) is not None]
        if not keep:
            return None, f"no setting has {name}"
        sign = 1.0 if direction == "maximize" else -1.0
        return max(keep, key=lambda i: (sign * items[i][name], -i)), None
    need = (
        ["dev.loss"]
        if rule == "loss"
        else [spec.tradeoff[0][0]]
        if rule == "accuracy"
        else [a[0] for a in spec.tradeoff]
    )
    keep = [i for i, m in enumerate(items) if all(k in m for k in need)]
    if not keep:
        return None, f"no setting has {', '.join(need)}"
    records = _records([items[i] for i in keep], spec, percent)
    try:
        best = select_checkpoint(records, rule, tolerance=getattr(spec, "select_tolerance", 0.01))
    except FairmtError as err:
        return None, str(err)
    return keep[best.step], None


def _rule_metrics(rule: str, spec) -> list[str]:
    if rule == "loss":
        return ["dev.loss"]
    if rule == "objective":
        return [spec.objectives[0][0]]
    if rule == "accuracy":
        return [spec.tradeoff[0][0]]
    return [a[0] for a in spec.tradeoff]


INDISTINGUISHABLE_TEST = (
    "pooled seed std: the selected setting is distinguishable from the runner-up (the setting "
    "the same rule picks without it) when, on every metric the rule selects by, the difference "
    "of their seed means is at least sqrt((std_1² + std_2²) / 2)"
)


def runner_up(done: list[dict[str, Any]], best: int, rule: str, spec, percent: bool) -> dict[str, Any] | None:
    """The setting ``rule`` picks once the selected one (``done[best]``) is left out, and whether the two differ by
    more than the seed noise (:data:`INDISTINGUISHABLE_TEST`): ``{"setting", "metrics": {name: {"difference",
    "pooled_std"}}, "distinguishable": bool | None}`` (None: one seed, no spread to compare with)."""
    rest = [i for i in range(len(done)) if i != best]
    if not rest:
        return None
    j, _ = select([done[i]["mean"] for i in rest], rule, spec, percent)
    if j is None:
        return None
    a, b = done[best], done[rest[j]]
    metrics, verdicts = {}, []
    for name in _rule_metrics(rule, spec):
        ma, mb = a["mean"].get(name), b["mean"].get(name)
        if ma is None or mb is None:
            continue
        sa, sb = a["std"].get(name), b["std"].get(name)
        pooled = math.sqrt((sa**2 + sb**2) / 2) if sa is not None and sb is not None else None
        metrics[name] = {"difference": ma - mb, "pooled_std": pooled}
        verdicts.append(None if pooled is None else abs(ma - mb) >= pooled)
    known = [v for v in verdicts if v is not None]
    return {
        "setting": b["id"],
        "overrides": b["overrides"],
        "metrics": metrics,
        "distinguishable": (all(known) if known and len(known) == len(verdicts) else None),
        "test": INDISTINGUISHABLE_TEST,
    }


def selection_rules_of(runs: list[Run]) -> dict[str, list[str]]:
    """The checkpoint-selection rule each run's results name (``selection``, e.g. ``"loss (dev set)"``) → the
    settings' run folders; more than one key means the rows were selected under different rules."""
    out: dict[str, list[str]] = {}
    for r in runs:
        rule = r.results.get("selection")
        if isinstance(rule, str):
            out.setdefault(rule, []).append(str(r.root.parent.name))
    return out


def build_report(out: str | Path, spec=None, study_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """The aggregate of a sweep folder as a JSON-ready dict (see the module docstring)."""
    from fairmt.sweep.engine import load_spec, setting_slug
    from fairmt.sweep.spec import SWEEP_RULES

    out = Path(out)
    spec = spec or load_spec(out)

    runs = collect_runs(out, family(spec.method).results_file)
    by_key: dict[str, list[Run]] = {}
    for r in runs:
        by_key.setdefault(_setting_key(r.setting), []).append(r)
    if spec.mode == "grid":  # the grid's order, keys as on the command line
        order = spec.settings()
    else:  # the order the sampler proposed them
        first = {
            k: min(json.loads((r.root / "done.json").read_text()).get("trial", 0) for r in rs)
            for k, rs in by_key.items()
        }
        order = [by_key[k][0].setting for k in sorted(by_key, key=first.get)]
    settings = []
    for i, setting in enumerate(order):
        group = sorted(by_key.get(_setting_key(setting), []), key=lambda r: r.seed)
        names = sorted({n for r in group for n in r.metrics})
        mean, std, unscored = {}, {}, {}
        for n in names:
            lacking = [r.seed for r in group if n not in r.metrics]  # NaN / null / absent in that seed's results
            if lacking:  # never the other seeds' mean under this setting's n: the metric is not a number here
                unscored[n] = lacking
                continue
            mean[n], std[n] = mean_std([r.metrics[n] for r in group])
        entry = {
            "id": f"s{i + 1}",
            "overrides": setting,
            "folder": f"trials/{setting_slug(setting)}",
            "n": len(group),
            "seeds": [r.seed for r in group],
            "runs": [str(r.root.relative_to(out)) for r in group],
            "mean": mean,
            "std": std,
        }
        if unscored:
            entry["not_a_number"] = unscored
        chance = [r.seed for r in group if family(spec.method).at_chance(r.results)]
        if chance:
            entry["at_chance"] = chance
        settings.append(entry)
    percent = any("dev" in r.percent for r in runs)
    axes = [a[0] for a in spec.tradeoff]
    directions = [a[1] for a in spec.tradeoff]
    fronts = {}
    on_dev = all(a.startswith("dev.") for a in axes)
    for split, names in (("dev", axes), ("test", [_test_name(a) for a in axes])) if on_dev else (("metrics", axes),):
        if len(names) != 2 or None in names:
            continue
        pts = [[s["mean"].get(n) for n in names] if s["n"] else None for s in settings]
        if not any(p and None not in p for p in pts):
            continue
        idx = pareto_front(pts, directions)
        fronts[split] = {
            "metrics": names,
            "directions": directions,
            "settings": [settings[i]["id"] for i in idx],
            "points": [
                {
                    "setting": settings[i]["id"],
                    "overrides": settings[i]["overrides"],
                    **{n: settings[i]["mean"][n] for n in names},
                }
                for i in idx
            ],
        }
    done = [s for s in settings if s["n"]]
    tradeoff = shen_tradeoff(done, percent)  # Shen et al.'s column, across the settings
    by_rule = {}
    for rule in SWEEP_RULES:
        idx, why = select([s["mean"] for s in done], rule, spec, percent)
        by_rule[rule] = {"setting": done[idx]["id"]} if idx is not None else {"unavailable": why}
        if idx is not None and rule == spec.select:
            by_rule[rule]["runner_up"] = runner_up(done, idx, rule, spec, percent)
    selected = None
    choice = by_rule.get(spec.select, {})
    if "setting" in choice:
        s = next(x for x in settings if x["id"] == choice["setting"])
        group = sorted(by_key[_setting_key(s["overrides"])], key=lambda r: r.seed)
        ridx, _ = select([r.metrics for r in group], spec.select, spec, percent)
        run = group[ridx if ridx is not None else 0]
        model_dir = next(
            (run.root / "run" / d for d in family(spec.method).model_dirs if (run.root / "run" / d).is_dir()),
            run.root / "run",
        )
        test = run.results.get("test")
        card = (
            [
                dict(
                    test,
                    note=f"fairmt sweep {out.name}: setting {s['id']} seed {run.seed}, selected on dev by "
                    f"{spec.select}",
                )
            ]
            if isinstance(test, dict)
            else []
        )
        selected = {
            "rule": spec.select,
            "setting": s["id"],
            "overrides": s["overrides"],
            "n": s["n"],
            "dev": {"mean": _split(s["mean"], "dev."), "std": _split(s["std"], "dev.")},
            "test": {"mean": _split(s["mean"], "test."), "std": _split(s["std"], "test.")},
            "run": str(run.root.relative_to(out)),
            "seed": run.seed,
            "model_dir": str(model_dir),
            "card_results": card,
        }
    expected = len(spec.seeds) * len(settings)  # search: the settings sampled so far
    return {
        "format": FORMAT,
        "folder": str(out),
        "recipe": spec.recipe,
        "method": spec.method,
        # the layout of each run's results (the format its results file declares): `fairmt report` reads a
        # setting's means with that format's reader, the one it reads a single run with
        "results_format": family(spec.method).results_format,
        "mode": spec.mode,
        "overrides": spec.overrides,
        "paper_card": spec.paper_card or None,
        "card_differences": list(spec.card_differences),
        "grid": spec.grid,
        "ranges": spec.ranges,
        "seeds": spec.seeds,
        "search": spec.search,
        "objectives": [{"metric": m, "direction": d} for m, d in spec.objectives],
        "tradeoff": [{"metric": m, "direction": d} for m, d in spec.tradeoff],
        "std": "sample standard deviation over seeds (ddof=1); null for a single seed",
        "study": study_info or {},
        "runs_finished": len(runs),
        "runs_expected": expected,
        "settings": settings,
        "pareto": fronts,
        "front_auc": front_auc(settings, spec, percent, list(fronts)),
        "selection": {
            "split": "dev",
            "rule": spec.select,
            "by_rule": by_rule,
            "checkpoint_rules": selection_rules_of(runs),
        },
        "selected": selected,
        "shen_tradeoff": tradeoff,
    }


def front_auc(settings: list[dict[str, Any]], spec, percent: bool, splits: list[str]) -> dict[str, Any]:
    """Area under each split's performance–fairness front (fairlib's ``auc_performance_fairness_tradeoff``:
    :func:`fairmt.eval.classification.performance_fairness_auc` on the settings' mean (performance, 1 − gap), as
    fractions, anchored at (0, 1)): a summary of the whole sweep, reported on dev and on test, never used to select.
    ``{split: {"auc", "curve", "settings", ...}}``, or ``{"unavailable": why}``."""
    from fairmt.eval.classification import performance_fairness_auc

    if len(spec.tradeoff) != 2:
        return {"unavailable": "no trade-off metrics (--tradeoff PERFORMANCE:max,GAP:min)"}
    (perf, perf_dir), (fair, fair_dir) = spec.tradeoff
    if perf_dir != "maximize" or fair_dir != "minimize":
        return {
            "unavailable": "the area under the front needs a performance to maximise and a fairness gap to "
            "minimise (fairness = 1 − gap)"
        }
    out: dict[str, Any] = {}
    for split in splits:
        names = [perf, fair] if split != "test" else [_test_name(perf), _test_name(fair)]
        rows = [s for s in settings if s["n"] and all(s["mean"].get(n) is not None for n in names)]
        if not rows:
            continue
        scale = 100.0 if (percent and split in ("dev", "test")) else 1.0
        p_vals = [s["mean"][names[0]] / scale for s in rows]
        g_vals = [s["mean"][names[1]] / scale for s in rows]  # a GAP above 1 enters in the bounded form
        try:
            res = performance_fairness_auc(p_vals, gap=g_vals)
        except FairmtError as err:
            out[split] = {"unavailable": str(err)}
            continue
        out[split] = {
            "auc": res.auc,
            "metrics": names,
            "fairness": f"1 - {names[1]}",
            "scale": "fraction",
            "random_performance": res.random_performance,
            "settings": [rows[i]["id"] for i in res.front],
            "curve": [list(c) for c in res.curve],
            "signature": res.signature,
        }
    return out


TRADEOFF_DEFINITION = f"{_TRADEOFF}; the compared models are the sweep's settings, scored on their mean metrics"


def shen_tradeoff(settings: list[dict[str, Any]], percent: bool) -> dict[str, Any] | None:
    """Shen et al.'s Tradeoff of every finished setting (:func:`fairmt.eval.classification.tradeoff_scores`) on the
    dev and the test means, where the results hold accuracy, GAP and both leakages; adds ``tradeoff`` to each
    setting's ``mean`` as ``dev.tradeoff`` / ``test.tradeoff``. None when no split has the four metrics."""
    from fairmt.eval.classification import tradeoff_scores

    scale = 100.0 if percent else 1.0
    out: dict[str, Any] = {"definition": TRADEOFF_DEFINITION, "splits": []}
    for split in ("dev", "test"):
        names = [f"{split}.{m}" for m in ("accuracy", "gap", "leakage_h", "leakage_yhat")]
        if not settings or not all(all(n in s["mean"] and s["mean"][n] is not None for n in names) for s in settings):
            continue
        cols = [[s["mean"][n] / scale for s in settings] for n in names]
        for s, score in zip(settings, tradeoff_scores(*cols)):
            s["mean"][f"{split}.tradeoff"] = score
        out["splits"].append(split)
    return out if out["splits"] else None


def _split(d: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k.startswith(prefix)}


# ------------------------------------------------------------------------------------------------ writing
def spread_digits(std: float | None, default: int = 2) -> int:
    """Decimals that match a spread, by ``fairmt report``'s rule (:func:`fairmt.eval.reporting.tables.digits_for`:
    0.021 → 3, 0.23 → 2, 4.3 → 0), the mean to the same place; ``default`` without a spread (one seed)."""
    from fairmt.eval.reporting.tables import digits_for

    return digits_for(std, default)


def mean_pm(mean: float, std: float | None, default: int = 2) -> str:
    """``mean ± std`` with the digits the spread supports (:func:`spread_digits`)."""
    d = spread_digits(std, default)
    return f"{mean:.{d}f}" + (f" ± {std:.{d}f}" if std is not None else "")


def _cell(s: dict[str, Any], name: str, digits: int = 2) -> str:
    m, sd = s["mean"].get(name), s["std"].get(name)
    lacking = (s.get("not_a_number") or {}).get(name)
    if lacking:
        return f"NaN (seed{'s' if len(lacking) > 1 else ''} {', '.join(map(str, lacking))})"
    if m is None:
        return "–"
    return mean_pm(m, sd, digits)


def columns(report: dict[str, Any]) -> list[str]:
    """The table's metric columns: the objectives and trade-off metrics (dev) and every ``test.*`` metric."""
    dev = list(
        dict.fromkeys(
            [o["metric"] for o in report["objectives"]]
            + [a["metric"] for a in report["tradeoff"]]
            + (["dev.tradeoff"] if any("dev.tradeoff" in s["mean"] for s in report["settings"]) else [])
        )
    )
    tests = sorted(
        {n for s in report["settings"] for n in [*s["mean"], *(s.get("not_a_number") or {})] if n.startswith("test.")}
    )
    tests = [t for t in (_test_name(d) for d in dev) if t in tests] + [
        t for t in tests if t not in {_test_name(d) for d in dev}
    ]
    return dev + tests


def _label(by_id: dict[str, Any], sid: str) -> str:
    from fairmt.eval.reporting import setting_label

    return setting_label(by_id[sid]["overrides"]) if sid in by_id else sid


def card_lines(card: str, differences: list[str]) -> list[str]:
    """What a sweep of a recipe with a paper card says of it before any trial (the console's lines)."""
    if not differences:
        return [f"paper card {card}: every value of this sweep is the card's"]
    return [
        f"paper card {card}: {len(differences)} setting(s) of this sweep leave it:",
        *(f"  {d}" for d in differences),
    ]


def card_paragraph(card: str, differences: list[str], md) -> str:
    """``sweep.md``'s paragraph on the paper card (``md``: the Markdown escape of text from the recipe or card)."""
    head, *rest = card_lines(card, differences)
    return "\n".join([md(head), *([""] if rest else []), *(f"- {md(line.strip())}" for line in rest)])


def render_markdown(report: dict[str, Any]) -> str:
    """``sweep.md``: every name and value from the recipe or the runs is text (:mod:`fairmt.eval.reporting.escape`)."""
    from fairmt.eval.report import markdown_table
    from fairmt.eval.reporting.escape import markdown as md
    from fairmt.eval.reporting.escape import markdown_code as code

    keys = list(dict.fromkeys(k for s in report["settings"] for k in s["overrides"]))
    cols = columns(report)
    first = report["pareto"].get("dev") or report["pareto"].get("metrics") or {}
    front = set(first.get("settings", []))
    sel = (report["selected"] or {}).get("setting")
    rows = []
    for s in report["settings"]:
        mark = ("**selected** " if s["id"] == sel else "") + ("front " if s["id"] in front else "")
        if s.get("at_chance"):
            mark += (
                f"**AT CHANCE** (seed{'s' if len(s['at_chance']) > 1 else ''} {', '.join(map(str, s['at_chance']))})"
            )
        rows.append(
            {
                "setting": s["id"],
                **{k: str(s["overrides"].get(k, "")) for k in keys},
                "n": str(s["n"]),
                **{c: _cell(s, c) for c in cols},
                "note": mark.strip(),
            }
        )
    lines = [
        f"# Sweep of {code(report['recipe'])} ({report['mode']}, {len(report['settings'])} settings × "
        f"{len(report['seeds'])} seeds)",
        "",
    ]
    if report["overrides"]:
        lines += [f"Fixed overrides: {code(' '.join(report['overrides']))}", ""]
    if report.get("paper_card"):
        lines += [card_paragraph(report["paper_card"], report.get("card_differences") or [], md), ""]
    lines += [
        f"Runs finished: {report['runs_finished']} of {report['runs_expected']}. Cells: mean ± sample std over "
        "seeds (ddof = 1), to the digits the std supports (`fairmt report`'s rule: its std to two significant digits when they begin with 1 or 2, else one). `front`: on the Pareto front of the trade-off "
        f"({', '.join(a['metric'] + ' ' + a['direction'][:3] for a in report['tradeoff'])}).",
        "",
    ]
    lines.append(markdown_table(rows, ["setting", *keys, "n", *cols, "note"], digits=2, markup=["note"]))
    by_id = {s["id"]: s for s in report["settings"]}
    collapsed = [s for s in report["settings"] if s.get("at_chance")]
    if collapsed:
        lines += [
            "",
            "**At chance:** "
            + "; ".join(
                f"{md(s['id'])} ({code(_label(by_id, s['id']))}) seed{'s' if len(s['at_chance']) > 1 else ''} "
                f"{', '.join(map(str, s['at_chance']))} of {s['n']}"
                for s in collapsed
            )
            + " — the final model's dev accuracy fell below the selection's accuracy floor × the model before it "
            "(INLP: the CE encoder; `info.inlp` in each run's results.json): its small gap is no fairness, and on a "
            "trade-off front it looks like the fairest point.",
        ]
    if report.get("shen_tradeoff"):
        lines += ["", f"`dev.tradeoff` / `test.tradeoff`: {report['shen_tradeoff']['definition']}."]
    k = max((s["mean"].get("test_full.n_classes") or 0 for s in report["settings"]), default=0)
    if k > 2 and "test.delta_eo" in columns(report):  # ΔEO named on the scale it is written on (issue 53)
        lines += [
            "",
            (
                f"`test.delta_eo` is the runs' ΔEO as results.json holds it: with `eo_classes: all` the sum "
                f"over the {k:g} classes (several hundred points is the usual size), which `fairmt report` "
                f"shows divided by {k:g} as ΔEO/class."
            ),
        ]
    lines += ["", "## Selection (dev metrics only)", ""]
    for rule, res in report["selection"]["by_rule"].items():
        star = " ← `--select`" if rule == report["selection"]["rule"] else ""
        chosen = (
            f"{md(res['setting'])} ({code(_label(by_id, res['setting']))})"
            if "setting" in res
            else f"not applicable — {res['unavailable']}"
        )
        if "setting" in res and by_id.get(res["setting"], {}).get("at_chance"):
            chosen += " — **AT CHANCE** in some of its seeds"
        lines.append(f"- `{rule}`: {chosen}{star}")
        ru = res.get("runner_up")
        if ru:
            diffs = ", ".join(
                f"{n} {v['difference']:+.{spread_digits(v['pooled_std'], 4)}f}"
                + (
                    f" (pooled seed std {v['pooled_std']:.2g}"
                    + (", below it" if abs(v["difference"]) < v["pooled_std"] else "")
                    + ")"
                    if v["pooled_std"] is not None
                    else ""
                )
                for n, v in ru["metrics"].items()
            )
            verdict = {
                True: "distinguishable",
                False: "**not distinguishable** from the runner-up",
                None: "no seed spread to judge it (one seed)",
            }[ru["distinguishable"]]
            lines.append(
                f"  - runner-up {md(ru['setting'])} ({code(_label(by_id, ru['setting']))}): selected − "
                "runner-up "
                f"{diffs} — {verdict} (test: a difference below the pooled seed std, "
                "sqrt((std₁² + std₂²) / 2), on any metric the rule selects by is not distinguishable)"
            )
    rules = report["selection"].get("checkpoint_rules") or {}
    if len(rules) > 1:
        lines += [
            "",
            "**Rows selected under different checkpoint rules** (not a like-for-like comparison): "
            + "; ".join(f"{code(k)}: {md(', '.join(sorted(set(v))))}" for k, v in rules.items()),
        ]
    if report["selected"]:
        s = report["selected"]
        test = s["test"]["mean"]
        overrides = " ".join(f"{k}={v}" for k, v in s["overrides"].items())
        lines += [
            "",
            f"Selected setting {md(s['setting'])} ({code(overrides)}, "
            f"n = {s['n']}) on the test set: "
            + ", ".join(f"{md(k)} {mean_pm(v, s['test']['std'].get(k))}" for k, v in test.items()),
            "",
            f"Selected run: {code(s['run'])} (seed {md(s['seed'])}); model {code(s['model_dir'])}. Publish it "
            "with "
            + code(f"fairmt push {s['model_dir']} USER/REPO --results {report.get('folder', '.')}/sweep.json")
            + ".",
        ]
    for split, f in report["pareto"].items():
        lines += [
            "",
            f"Pareto front ({split}: {', '.join(f['metrics'])}): "
            + ", ".join(
                f"{md(p['setting'])} ({md(', '.join(f'{m} {p[m]:.2f}' for m in f['metrics']))})" for p in f["points"]
            ),
        ]
    aucs = {k: v for k, v in (report.get("front_auc") or {}).items() if isinstance(v, dict) and "auc" in v}
    if aucs:
        lines += [
            "",
            "Area under the performance–fairness front (fairlib's AUC: (performance, 1 − gap) as fractions, "
            "anchored at (0, 1); a summary, not used to select): "
            + ", ".join(f"{k} {v['auc']:.4f}" for k, v in aucs.items()),
        ]
    return "\n".join(lines) + "\n"


def plot_tradeoff(report: dict[str, Any], path: str | Path) -> str | None:
    """Fairness (x) against performance (y), one point per setting with ± std error bars, on test where the results
    have the test counterparts (else dev); the front of that split drawn, the selected setting marked. Returns the
    split plotted, or None when there is nothing to plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fairmt.eval.report import save_figure_atomic

    if not report["pareto"]:
        return None
    split = "test" if "test" in report["pareto"] else next(iter(report["pareto"]))
    perf, fair = report["pareto"][split]["metrics"]
    pts = [s for s in report["settings"] if s["n"] and perf in s["mean"] and fair in s["mean"]]
    fig, ax = plt.subplots(figsize=(6.0, 4.5))
    ax.errorbar(
        [s["mean"][fair] for s in pts],
        [s["mean"][perf] for s in pts],
        xerr=[s["std"].get(fair) or 0.0 for s in pts],
        yerr=[s["std"].get(perf) or 0.0 for s in pts],
        fmt="o",
        color="tab:blue",
        ecolor="tab:gray",
        capsize=3,
        label="setting (mean ± std over seeds)",
    )
    from fairmt.eval.reporting import setting_label
    from fairmt.eval.reporting.escape import mpl  # names from the recipe are text, never mathtext

    for s in pts:  # labelled by the setting's values (β=0.1), as the papers' figures
        ax.annotate(
            mpl(setting_label(s["overrides"])),
            (s["mean"][fair], s["mean"][perf]),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=8,
        )
    front = sorted((p[fair], p[perf]) for p in report["pareto"][split]["points"])
    if front:
        ax.plot(
            *zip(*front),
            "-s",
            color="tab:orange",
            markerfacecolor="none",
            markersize=10,
            linewidth=1.2,
            label=f"Pareto front ({split})",
        )
    sel = report["selected"]
    if sel:
        s = next(x for x in pts if x["id"] == sel["setting"]) if any(x["id"] == sel["setting"] for x in pts) else None
        if s is not None:
            ax.plot(
                [s["mean"][fair]],
                [s["mean"][perf]],
                marker="*",
                markersize=16,
                color="tab:red",
                linestyle="none",
                label=mpl(f"selected on dev by {sel['rule']} ({setting_label(s['overrides'])})"),
            )
    perf_dir, fair_dir = report["pareto"][split]["directions"]
    ax.set_xlabel(mpl(f"{fair} ({'lower' if fair_dir == 'minimize' else 'higher'} is better)"))
    ax.set_ylabel(mpl(f"{perf} ({'higher' if perf_dir == 'maximize' else 'lower'} is better)"))
    ax.set_title(mpl(f"{report['recipe']}: {split} trade-off, {len(pts)} settings"), fontsize="medium")
    ax.grid(linewidth=0.3, alpha=0.5)
    ax.legend(frameon=False, fontsize="small")
    fig.tight_layout()
    save_figure_atomic(fig, path)
    return split


REPORT_LOCK = ".report.lock"
"""The file in a sweep folder that :func:`write_report` holds an exclusive ``flock`` on while it reads the runs and
writes the report."""


def write_report(out: str | Path, spec=None, study_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``sweep.json``, ``sweep.md`` and ``tradeoff.png`` (each atomically) and return the report. The runs are
    read and the files written under one lock (:data:`REPORT_LOCK`): two workers that finish together each write a
    report, and without it the one that read first, a run short, could write last and leave that report behind."""
    from fairmt.eval.report import write_text_atomic
    from fairmt.outputs import exclusive_lock

    out = Path(out)
    # no lock where ``out`` is no folder: build_report then says what is wrong
    lock = (
        exclusive_lock(out / REPORT_LOCK, what="the sweep's report lock") if out.is_dir() else contextlib.nullcontext()
    )
    with lock:
        report = build_report(out, spec, study_info)
        split = plot_tradeoff(report, out / "tradeoff.png")
        report["plot"] = {"file": "tradeoff.png", "split": split} if split else None
        write_text_atomic(out / "sweep.md", render_markdown(report))
        write_text_atomic(out / "sweep.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return report
