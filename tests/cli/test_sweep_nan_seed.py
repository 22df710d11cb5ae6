"""A sweep's report says when a seed's value is NaN, instead of the other seed's value shown with n = 2."""

from __future__ import annotations

import json
from pathlib import Path

from test_sweep import CHEAP, RECIPE


def _runner_nan_on_seed_1(cmd: list[str], log: Path) -> int:
    over = dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))
    seed = int(over["seed"])
    out = Path(json.loads(over["training.output_dir"]))
    out.mkdir(parents=True)
    split = {"accuracy": 70.0 + seed, "gap": float("nan") if seed == 1 else 3.0, "scale": "percent"}
    (out / "results.json").write_text(
        json.dumps({"dev": {"accuracy": 70.0 + seed, "gap": 2.0, "scale": "percent"}, "test": split, "seed": seed})
    )  # the bare token NaN, as json writes
    log.write_text("ok\n")
    return 0


def test_a_metric_that_is_nan_for_one_seed_is_reported_as_such(tmp_path):
    from fairmt.sweep.engine import setting_slug
    from fairmt.sweep.report import build_report, render_markdown
    from fairmt.sweep.spec import SweepSpec

    # what build_spec(RECIPE, CHEAP, ["objective_args.fcl_beta=0.5"], [], "0,1", []) gives, without its recipe check
    spec = SweepSpec(
        recipe=RECIPE,
        recipe_path=RECIPE,
        method="classification",
        overrides=CHEAP,
        grid={"objective_args.fcl_beta": [0.5]},
        grid_raw={"objective_args.fcl_beta": ["0.5"]},
        ranges={},
        seeds=[0, 1],
        objectives=[["dev.accuracy", "maximize"], ["dev.gap", "minimize"]],
        tradeoff=[["dev.accuracy", "maximize"], ["dev.gap", "minimize"]],
        search=None,
        output_dir=str(tmp_path / "s"),
    )
    (setting,) = spec.settings()
    for seed in (0, 1):  # two finished runs, as the engine leaves them (done.json beside run/results.json)
        root = Path(spec.output_dir) / "trials" / setting_slug(setting) / f"seed-{seed}"
        cmd = [f"seed={seed}", f"training.output_dir={json.dumps(str(root / 'run'))}"]
        _runner_nan_on_seed_1(cmd, tmp_path / "log")
        (root / "done.json").write_text(
            json.dumps({"setting": setting, "seed": seed, "trial": seed, "results": "run/results.json"})
        )
    report = build_report(spec.output_dir, spec)
    (setting,) = report["settings"]
    assert setting["n"] == 2 and setting["not_a_number"] == {"test.gap": [1]}
    assert "test.gap" not in setting["mean"]  # not seed 0's 3.0 under n = 2
    assert setting["mean"]["test.accuracy"] == 70.5
    row = next(ln for ln in render_markdown(report).splitlines() if ln.startswith("| s1"))
    assert "NaN (seed 1)" in row and "3.00" not in row
