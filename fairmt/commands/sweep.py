"""``fairmt sweep RECIPE [key=value ...] --grid key=v1,v2 --seeds N``: grids, sampled searches and seeds over any
recipe, each run an ordinary ``fairmt train`` in its own folder, on Optuna (:mod:`fairmt.sweep`).

``fairmt sweep report DIR`` rewrites ``DIR/sweep.json``, ``sweep.md`` and ``tradeoff.png`` from the finished runs.
"""

from __future__ import annotations

from fairmt.errors import FairmtError


def register(groups) -> None:
    from fairmt.commands._options import count, output_dir, seed

    p = groups["top"].add_parser(
        "sweep",
        help="run a recipe over a grid (or a sampled search) × seeds; mean ± std, Pareto front, selection",
        description="fairmt sweep RECIPE [key=value ...] --grid KEY=V1,V2 [--grid ...] --seeds N — or — "
        "fairmt sweep report SWEEP_DIR. Every trial is one `fairmt train` run in its own folder under "
        "--output-dir; the study is an Optuna study (SQLite in that folder unless --storage).",
    )
    p.add_argument("recipe", help="recipe YAML file or built-in recipe name (or `report` followed by a sweep folder)")
    p.add_argument("overrides", nargs="*", help="fixed dotted key=value overrides for every trial")
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="a recipe key and the values to try (repeat for a product of several keys)",
    )
    p.add_argument(
        "--range",
        action="append",
        default=[],
        metavar="KEY=LOW:HIGH[:log]",
        help="with --search: a numeric range to sample (integers if both ends are)",
    )
    p.add_argument(
        "--seeds",
        default="1",
        metavar="N|S1,S2,...",
        help="seeds per setting: N (seeds 0..N-1) or a comma-separated list",
    )
    p.add_argument(
        "--search",
        type=count(1),
        default=None,
        metavar="N",
        help="sample N settings (TPE for one objective, NSGA-II for several) instead of the whole grid",
    )
    p.add_argument(
        "--objective",
        action="append",
        default=[],
        metavar="METRIC:max|min",
        help="a dev metric of the recipe's results to optimise (repeat for several); default for "
        "classification: dev.accuracy:max dev.gap:min",
    )
    p.add_argument(
        "--tradeoff",
        default=None,
        metavar="PERF:max,FAIR:min",
        help="the two metrics of the Pareto front, the plot and the selection rules (default: the first "
        "two objectives, or the recipe family's)",
    )
    p.add_argument(
        "--select",
        default=None,
        metavar="RULE",
        help="model-selection rule on the dev metrics: dto, accuracy_then_gap, accuracy, loss or "
        "objective (the best seed mean of the one --objective) (default: the recipe's "
        "sweep_selection — accuracy_then_gap for Shen et al.'s recipes, within the recipe's "
        "selection_tolerance — else the objectives' own rule: one objective → objective (loss for "
        "dev.loss:min), two → dto)",
    )
    output_dir(
        p,
        "--output-dir",
        what="sweep folder",
        resumable=True,
        default=None,
        help="the sweep folder (default: runs/sweeps/<recipe>-<time>); the same command again resumes in it",
    )
    p.add_argument(
        "--storage",
        default=None,
        metavar="URL|JOURNAL_FILE",
        help="Optuna storage: an RDB URL (sqlite:///..., postgresql://...) or a journal file on a shared "
        "filesystem (default: sqlite:///<output-dir>/study.db)",
    )
    p.add_argument("--study-name", default=None, help="study name in the storage (default: the sweep folder's name)")
    p.add_argument(
        "--join",
        action="store_true",
        help="run trials beside other processes working on the same study (several GPUs or machines)",
    )
    p.add_argument(
        "--launcher",
        default="python",
        choices=("python", "accelerate"),
        help="run each trial with python, or under `accelerate launch`",
    )
    p.add_argument(
        "--accelerate-config",
        default=None,
        metavar="FILE",
        help="accelerate config for --launcher accelerate (a file, or a shipped one: ddp, fsdp2, ...)",
    )
    p.add_argument(
        "--no-fork",
        action="store_true",
        help="start every trial as a fresh `python -m fairmt train` (default on Linux: fork it from a copy of "
        "this worker made before the recipe is checked, which imports what a run imports once)",
    )
    p.add_argument(
        "--grace-period",
        type=count(1),
        default=600,
        metavar="SECONDS",
        help="a trial of another machine without a heartbeat for this long is failed and rerun",
    )
    p.add_argument("--max-failures", type=count(1), default=3, help="stop after this many failed trials in a row")
    p.add_argument("--sampler-seed", type=seed, default=None, help="seed of the TPE/NSGA-II sampler")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="check the sweep and say what it would run — the number of trials, the settings that leave the "
        "recipe's paper card, what every trial would hit — and run nothing (nothing is created)",
    )
    p.set_defaults(handler=_run)


def _run(args) -> int:
    if args.recipe == "report":
        return _report(args)
    from fairmt.sweep.engine import trial_server

    forks = not (args.dry_run or args.no_fork or args.launcher == "accelerate")
    with trial_server(forks):  # first: a copy of this process from before the recipe is checked
        return _sweep(args)


def _sweep(args) -> int:
    from fairmt.sweep.engine import SweepInterrupted, require_optuna, run_sweep, study_info
    from fairmt.sweep.report import card_lines, write_report
    from fairmt.sweep.spec import build_spec, check_trial_inputs

    if not args.dry_run:
        require_optuna()
    spec = build_spec(
        args.recipe,
        args.overrides,
        args.grid,
        args.range,
        args.seeds,
        args.objective,
        tradeoff=args.tradeoff,
        search=args.search,
        select=args.select,
        output_dir=args.output_dir,
        storage=args.storage,
        study_name=args.study_name,
        launcher=args.launcher,
        accelerate_config=args.accelerate_config,
        join=args.join,
        grace_period=args.grace_period,
        max_failures=args.max_failures,
        sampler_seed=args.sampler_seed,
    )
    if args.dry_run:
        return _dry_run(spec)
    if args.overwrite:
        _overwrite(args, spec)
    print(f"fairmt sweep: {spec.mode} over {spec.recipe} in {spec.output_dir} (study {spec.study_name!r})", flush=True)
    if spec.paper_card:  # before any trial: what of this sweep is not the paper's recipe
        for line in card_lines(spec.paper_card, spec.card_differences):
            print(f"fairmt sweep: {line}" if not line.startswith(" ") else line, flush=True)
    try:
        outcome = run_sweep(spec, check=lambda: check_trial_inputs(spec))  # data, models: before any trial
    except (KeyboardInterrupt, SweepInterrupted):
        print(
            f"fairmt sweep: interrupted; the running trial is marked failed. Run the same command again to resume "
            f"({spec.output_dir})",
            flush=True,
        )
        return 130
    report = write_report(spec.output_dir, spec, study_info(spec))
    prog = outcome.progress
    print(
        f"fairmt sweep: {outcome.ran} run(s) trained, {outcome.reused} reused; "
        f"{report['runs_finished']}/{report['runs_expected']} runs finished",
        flush=True,
    )
    for line in outcome.failed:
        print(f"  failed: {line}")
    if prog and prog.running_elsewhere:
        print(
            f"fairmt sweep: {prog.running_elsewhere} trial(s) still run in other processes; the last one to finish "
            "writes the final report (or run `fairmt sweep report DIR`)"
        )
    same = _one_reason(outcome.failed)
    if same and outcome.ran == 0 and outcome.reused == 0:
        _print_summary(report)
        raise FairmtError(
            f"every trial of the sweep failed for the same reason: {same} (running the same command "
            "again would fail the same way: fix the recipe, the overrides or the command first)"
        )
    if prog and prog.failed:
        print(f"fairmt sweep: {len(prog.failed)} run(s) failed: run the same command again to retry them")
    _print_summary(report)
    return 0 if not outcome.failed and not (prog and prog.failed) else 1


def _dry_run(spec) -> int:
    """``--dry-run``: the trials the sweep would run, the settings that leave the recipe's paper card and what every
    trial would hit (``fairmt train --dry-run``'s findings), on stdout; nothing is written or started."""
    from fairmt.sweep.report import card_lines
    from fairmt.sweep.spec import trial_findings

    settings = len(spec.settings()) if spec.mode == "grid" else spec.search
    runs = settings * len(spec.seeds)
    print(
        f"fairmt sweep --dry-run: {spec.mode} over {spec.recipe}: {settings} setting(s) × {len(spec.seeds)} seed(s) "
        f"= {runs} run(s) of `fairmt train`, in {spec.output_dir}"
    )
    if spec.overrides:
        print(f"  fixed overrides: {' '.join(spec.overrides)}")
    for key, values in spec.grid_raw.items():
        print(f"  grid {key}: {', '.join(values)}")
    for key, r in spec.ranges.items():
        print(f"  range {key}: {r['low']}:{r['high']}{' (log)' if r['log'] else ''}")
    print(f"  seeds: {', '.join(map(str, spec.seeds))}")
    if spec.paper_card:
        for line in card_lines(spec.paper_card, spec.card_differences):
            print(f"fairmt sweep --dry-run: {line}" if not line.startswith(" ") else line)
    found = trial_findings(spec)
    for fatal, text in found:
        print(f"fairmt sweep --dry-run: {'every trial would fail: ' if fatal else 'note: '}{text}")
    failing = sum(fatal for fatal, _ in found)
    if failing:
        raise FairmtError(f"every trial of this sweep would fail ({failing} finding{'s' if failing > 1 else ''} above)")
    print("fairmt sweep --dry-run: nothing found that would stop the trials; nothing was started")
    return 0


def _overwrite(args, spec) -> None:
    """``--overwrite``: remove the earlier sweep of the folder (what fairmt wrote there, see :mod:`fairmt.outputs`);
    refused beside other workers (--join) and for a study kept outside the folder, which it would not remove."""
    from fairmt.outputs import clear_dir
    from fairmt.sweep.engine import _inside

    if args.join:
        raise FairmtError(
            "--overwrite with --join: other workers may be running in this sweep folder; give one of them"
        )
    if not _inside(spec.storage, spec.output_dir):
        raise FairmtError(
            f"--overwrite removes the sweep folder's files, not the study in --storage {spec.storage}: "
            "give a new --study-name (or --output-dir) instead"
        )
    clear_dir(
        spec.output_dir,
        "sweep folder",
        flag="--output-dir",
        markers=("sweep_spec.json",),
        foreign_ok=False,
        inputs=[spec.recipe_path],
    )


def _one_reason(failures: list[str]) -> str | None:
    """The reason every failure gives, when they all give the same one (the trial's folder and log path left out)."""
    import re

    reasons = {re.sub(r"\(log [^:]*: ", "(", line.split(": ", 1)[-1]) for line in failures}
    return reasons.pop() if len(reasons) == 1 else None


def _report(args) -> int:
    from pathlib import Path

    from fairmt.sweep.engine import load_spec, study_info
    from fairmt.sweep.report import write_report

    if len(args.overrides) != 1:
        raise FairmtError("usage: fairmt sweep report SWEEP_DIR")
    out = Path(args.overrides[0])
    spec = load_spec(out)
    report = write_report(out, spec, study_info(spec))
    _print_summary(report)
    return 0


def _print_summary(report: dict) -> None:
    out = report["folder"]
    sel = report.get("selected")
    if sel:
        from fairmt.sweep.report import mean_pm

        test = ", ".join(
            f"{k.removeprefix('test.')} {mean_pm(v, sel['test']['std'].get(k))}" for k, v in sel["test"]["mean"].items()
        )
        print(f"fairmt sweep: selected {sel['setting']} {sel['overrides']} on dev by {sel['rule']}: test {test}")
        ru = report["selection"]["by_rule"].get(sel["rule"], {}).get("runner_up") or {}
        if ru.get("distinguishable") is False:
            print(
                f"  not distinguishable from the runner-up {ru['setting']} {ru['overrides']}: the dev difference "
                "is below the pooled seed std (see sweep.md)"
            )
    else:
        why = report["selection"]["by_rule"].get(report["selection"]["rule"], {}).get("unavailable", "no finished run")
        print(f"fairmt sweep: no setting selected by {report['selection']['rule']}: {why}")
    collapsed = [
        f"{s['id']} {s['overrides']} (seeds {', '.join(map(str, s['at_chance']))})"
        for s in report.get("settings") or []
        if s.get("at_chance")
    ]
    if collapsed:
        print(
            "fairmt sweep: warning: a final model at chance (its small gap is no fairness; see sweep.md): "
            + "; ".join(collapsed)
        )
    print(f"  report: {out}/sweep.md  {out}/sweep.json" + (f"  {out}/tradeoff.png" if report.get("plot") else ""))
