"""A scripted grid over CCD settings on the real all-MiniLM-L6-v2 (recipe ``ccd/minilm_cda``), chosen on validation.

    OMP_NUM_THREADS=1 FAIRMT_DATA=../shared/data python scripts/ccd_grid.py run --grid explore --seeds 0 \
        [--out scripts/results/ccd_grid.jsonl] [--only NAME ...]
    python scripts/ccd_grid.py table [--out scripts/results/ccd_grid.jsonl] [--select]

Every setting is a list of recipe overrides (``training.beta=3``, the syntax of ``fairmt train RECIPE key=value``),
so a setting can be re-run by hand, or through ``fairmt sweep`` once it exists: each JSONL row holds the setting's
name, its overrides, the seed and its objectives under flat names (``val/cced_gap``, ``test/seat_avg_abs``, ...).

``run`` trains every (setting, seed) not yet in the JSONL file (an interrupted grid resumes where it stopped) in
this one process, on one thread: the recipe's data, the original model's measurements and its embeddings are made
once; each run loads the original model afresh, trains it with the recipe's own trainer
(:func:`fairmt.recipes.ccd.runner.make_trainer` / :func:`~fairmt.recipes.ccd.runner.train_and_unwrap`) and measures the
validation split (association probe with no SEAT word, CCED gap of the validation tuples, Bias-IR on the validation
half of the queries, utility on validation sentences; :mod:`fairmt.recipes.ccd.validation`) and the test suites
(SEAT 6-8b, CCED gap of the held-out tuples, Bias-IR on the other half, utility). The suites always measure the
embedding the saved model gives (its own pooling and normalisation), whatever embedding a setting trains.

``table`` prints settings × objectives (mean ± std over seeds), validation and test side by side, and with
``--select`` applies :func:`select` — validation columns only.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = "ccd/minilm_cda"
DEFAULT_OUT = REPO / "scripts" / "results" / "ccd_grid.jsonl"

#: the overrides every grid run shares: the grid started from the recipe's former default learning rate 1e-4
#: ("base"; the recipe now ships 1e-5, the grid's choice), and fewer SEAT permutations (the effect sizes, which
#: are compared, do not depend on them)
BASE = ["training.learning_rate=1e-4", "evaluation.seat_n_samples=1000", "evaluation.probe_n_samples=1000"]

NEWS = "{path: parallel/newstest2018_en-de.jsonl, field: translation.en}"
BIOS = "{path: bios/bios_28prof_x10.csv, field: hard_text, sentences: true}"

GRIDS: dict[str, dict[str, list[str]]] = {
    # a minute's check that the grid runs end to end (not a measurement)
    "smoke": {
        "smoke": [
            "training.max_steps=2",
            "training.eval_steps=2",
            "training.save_steps=2",
            "data.test_size=20",
            "data.eval_size=8",
            "data.utility_size=20",
            "data.utility_validation_size=20",
        ]
    },
    # one seed each: what moves which suite
    "explore": {
        "base": [],
        "beta0.3": ["training.beta=0.3"],
        "beta3": ["training.beta=3"],
        "beta10": ["training.beta=10"],
        "rho-std": ["training.rho_estimator=std"],
        "rho-variance": ["training.rho_estimator=variance"],
        "rho0.7": ["training.rho=0.7"],
        "lr3e-5": ["training.learning_rate=3e-5"],
        "lr1e-5": ["training.learning_rate=1e-5"],
        "lr3e-4": ["training.learning_rate=3e-4"],
        "epochs3": ["training.num_train_epochs=3"],
        "es-cced": ["training.metric_for_best_model=eval_cced_gap"],
        "es-valbias": ["training.metric_for_best_model=eval_val_bias"],
        "no-es": ["training.load_best_model_at_end=false"],
        "unnormalised": ["training.normalize=false"],
        "dropout": ["training.disable_dropout=false"],
        "tuples128": ["data.max_train_tuples=128"],
        "eda2": ["data.eda={num_aug: 2, alpha: 0.1}"],
        "news+bios": [f"data.cda_source=[{NEWS}, {BIOS}]"],
    },
    # three seeds each: the candidates of the exploration (chosen on its validation columns) and the old default
    "final": {
        "base": [],
        "lr1e-5": ["training.learning_rate=1e-5"],
        "lr3e-5": ["training.learning_rate=3e-5"],
        "es-valbias": ["training.metric_for_best_model=eval_val_bias"],
        "lr3e-5+es-valbias": ["training.learning_rate=3e-5", "training.metric_for_best_model=eval_val_bias"],
    },
}


def _flat(after: dict, val: dict | None, util: dict | None, util_val: dict | None) -> dict[str, float]:
    """The objectives of one model under flat names."""
    out: dict[str, float] = {}
    if "seat" in after:
        out["test/seat_avg_abs"] = after["seat_avg_abs"]
        out.update({f"test/seat_{t}": r["effect_size"] for t, r in after["seat"].items()})
    if "cced" in after:
        out["test/cced_gap"] = after["cced"]["gap"]
    if "bias_ir" in after:
        out["test/bias_ir_avg_dev"] = after["bias_ir"]["avg_dev"]
        out.update({f"test/bias_ir_male_{c}": r for c, r in after["bias_ir"]["male_ratio"].items()})
    if "bias_ir_all" in after:
        out["all/bias_ir_avg_dev"] = after["bias_ir_all"]["avg_dev"]
    for split, u in (("test", util), ("val", util_val)):
        if u:
            out[f"{split}/utility_spearman"] = u["spearman_pairwise_cos"]
            out[f"{split}/utility_nn1"] = u["nn1_agreement"]
    if val:
        out["val/probe_avg_abs"] = val["probe_avg_abs"]
        out.update({f"val/probe_{t}": r["effect_size"] for t, r in val["probe"].items()})
        if "cced" in val:
            out["val/cced_gap"] = val["cced"]["gap"]
        if "bias_ir" in val:
            out["val/bias_ir_avg_dev"] = val["bias_ir"]["avg_dev"]
    return out


def _done(path: Path) -> set[tuple[str, int]]:
    if not path.exists():
        return set()
    return {(r["setting"], r["seed"]) for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r}


def run_grid(settings: dict[str, list[str]], seeds: list[int], out: Path, recipe: str = RECIPE) -> None:
    import torch

    from fairmt.models import encoders
    from fairmt.recipes import load_recipe
    from fairmt.recipes.ccd import data as ccd_data
    from fairmt.recipes.ccd import measure
    from fairmt.recipes.ccd import runner as ccd
    from fairmt.trainers.ccd import ccd_metrics_summary

    torch.set_num_threads(1)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _done(out)
    data_cache: dict[str, dict] = {}
    # the original model's measurements per data split, kept beside the JSONL file so that a resumed grid does not
    # measure them again (a pickle of numbers and arrays this script wrote itself)
    before_file = out.with_suffix(".before.pkl")
    before_cache: dict[str, dict] = pickle.loads(before_file.read_bytes()) if before_file.exists() else {}
    orig: dict = {}  # the original model's runner (embeddings memoised), made at the first run
    work = Path(tempfile.mkdtemp(prefix="ccd_grid_"))
    try:
        for name, overrides in settings.items():
            for seed in seeds:
                if (name, seed) in done:
                    continue
                t0 = time.time()
                config = load_recipe(
                    recipe, BASE + overrides + [f"training.seed={seed}", f"training.output_dir={work / 'run'}"]
                )
                settings_ev = measure.evaluation_settings(config)
                dkey = json.dumps(config.get("data"), sort_keys=True)
                if dkey not in data_cache:
                    data_cache[dkey] = ccd_data.prepare_data(dict(config["data"]))
                data = data_cache[dkey]
                ir_split = measure.bias_ir_split(settings_ev)
                args = ccd.training_arguments(config, data)
                model_path = encoders.resolve_model_path(str(config["model"]))
                if dkey not in before_cache:  # the original model, measured once per data split
                    if not orig:
                        model, tok, _ = encoders.load_encoder(model_path)
                        orig["runner"] = measure.cached_encoder(measure.model_encoder(model.eval(), tok, "auto", 64))
                    before_cache[dkey] = measure.measure_model(orig["runner"], data, "model", settings_ev, ir_split)
                    before_file.write_bytes(pickle.dumps(before_cache))
                    row = {
                        "setting": "original",
                        "seed": None,
                        "data": dkey,
                        "overrides": [],
                        **_flat(before_cache[dkey]["test"], before_cache[dkey].get("validation"), None, None),
                    }
                    with out.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(row) + "\n")
                before = before_cache[dkey]
                shutil.rmtree(work / "run", ignore_errors=True)
                (work / "run").mkdir(parents=True)
                model, tok, _ = encoders.load_encoder(model_path)
                torch.manual_seed(args.seed)
                trainer = ccd.make_trainer(model, tok, args, data, settings_ev, ir_split[0], before.get("validation"))
                train, trained = ccd.train_and_unwrap(trainer, work / "run", config.get("peft"), ccd_metrics_summary)
                del trainer
                after = measure.measure_model(
                    measure.model_encoder(trained, tok, "auto", 64), data, "model", settings_ev, ir_split
                )
                util = measure.utility_check(before["neutral"], after["neutral"])
                util_val = measure.utility_check(before["neutral_validation"], after["neutral_validation"])
                evals = [
                    {k: v for k, v in h.items() if k in ("step", "eval_loss", "eval_cced_gap", "eval_val_bias")}
                    for h in train["log_history"]
                    if "eval_loss" in h
                ]
                row = {
                    "setting": name,
                    "seed": seed,
                    "overrides": overrides,
                    "data": dkey,
                    **_flat(after["test"], after.get("validation"), util, util_val),
                    "rho": train["rho"],
                    "best_checkpoint": train["best_checkpoint"],
                    "steps": train["log_history"][-1].get("step"),
                    "evals": evals,
                    "n_train": data["stats"]["n_train"],
                    "time_s": round(time.time() - t0, 1),
                }
                with out.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
                print(
                    f"[grid] {name} seed {seed}: "
                    + ", ".join(
                        f"{k} {row[k]:.3f}"
                        for k in (
                            "val/cced_gap",
                            "val/probe_avg_abs",
                            "val/bias_ir_avg_dev",
                            "test/cced_gap",
                            "test/seat_avg_abs",
                            "test/bias_ir_avg_dev",
                        )
                        if isinstance(row.get(k), float)
                    )
                    + f" ({row['time_s']:.0f}s)",
                    flush=True,
                )
                del model, trained
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------ the table and the selection

SUITES = (
    ("cced_gap", "CCED gap"),
    ("probe_avg_abs", "probe avg |d|"),
    ("seat_avg_abs", "SEAT avg |d|"),
    ("bias_ir_avg_dev", "Bias-IR AVG-DEV"),
    ("utility_spearman", "utility ρ_s"),
)
VAL_COLS = ("val/cced_gap", "val/probe_avg_abs", "val/bias_ir_avg_dev", "val/utility_spearman")
TEST_COLS = (
    "test/cced_gap",
    "test/seat_avg_abs",
    "test/bias_ir_avg_dev",
    "all/bias_ir_avg_dev",
    "test/utility_spearman",
)
#: utility bound of the selection: Spearman correlation of the pairwise cosines (original vs debiased) on the
#: validation sentences
UTILITY_BOUND = 0.98


def load_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def aggregate(rows: list[dict]) -> dict[str, dict]:
    """setting -> {"n": seeds, "overrides", col: (mean, std)}; the original model under "original" (per data)."""
    import numpy as np

    groups: dict[str, list[dict]] = {}
    datas = list(dict.fromkeys(r["data"] for r in rows if r["setting"] == "original"))
    users = {d: next((r["setting"] for r in rows if r["data"] == d and r["setting"] != "original"), "?") for d in datas}
    for r in rows:
        if r["setting"] == "original":  # measured once per data split (again after a restart: the same numbers)
            key = "original" + ("" if r["data"] == datas[0] else f" (data of {users[r['data']]})")
            groups.setdefault(key, [r])
            continue
        groups.setdefault(r["setting"], []).append(r)
    out = {}
    for name, rs in groups.items():
        cols = {k for r in rs for k, v in r.items() if "/" in k and isinstance(v, (int, float))}
        agg = {"n": len(rs), "overrides": rs[0]["overrides"], "data": rs[0]["data"]}
        for c in cols:
            vals = np.array([r[c] for r in rs if isinstance(r.get(c), (int, float))], dtype=float)
            agg[c] = (float(vals.mean()), float(vals.std(ddof=1)) if len(vals) > 1 else float("nan"))
        out[name] = agg
    return out


def original_for(agg: dict, setting: dict) -> dict:
    """The original model's row measured on the same data split as ``setting``."""
    for name, a in agg.items():
        if name.startswith("original") and a["data"] == setting["data"]:
            return a
    raise KeyError("no original-model row for this data split")


def select(agg: dict, bound: float = UTILITY_BOUND) -> tuple[str | None, dict[str, dict]]:
    """The selection rule, on validation numbers only (means over seeds), for the issue's aim "lower all three
    suites' bias with utility within a bound":

    1. admissible: ``val/utility_spearman`` ≥ ``bound``;
    2. each admissible setting gets the ratios after/before of its validation CCED gap, probe avg |d| and Bias-IR
       AVG-DEV (the original model measured on the same data split);
    3. if some admissible settings lower all three (every ratio < 1), the one with the lowest mean ratio;
       otherwise the one whose *worst* ratio is lowest — the setting that comes closest to lowering all three
       (the mean would let the CCED gap, which every setting lowers by ~80%, buy a worse probe).
    Returns the chosen name and each setting's ratios."""
    scores = {}
    for name, a in agg.items():
        if name.startswith("original") or "val/cced_gap" not in a:
            continue
        o = original_for(agg, a)
        ratios = {c: a[c][0] / o[c][0] for c in ("val/cced_gap", "val/probe_avg_abs", "val/bias_ir_avg_dev")}
        scores[name] = {
            "ratios": ratios,
            "mean_ratio": sum(ratios.values()) / 3,
            "max_ratio": max(ratios.values()),
            "all_better": all(v < 1 for v in ratios.values()),
            "admissible": a.get("val/utility_spearman", (0.0,))[0] >= bound,
            "n": a["n"],
        }
    winners = [n for n, s in scores.items() if s["admissible"] and s["all_better"]]
    if winners:
        return min(winners, key=lambda n: scores[n]["mean_ratio"]), scores
    pool = [n for n, s in scores.items() if s["admissible"]]
    return (min(pool, key=lambda n: scores[n]["max_ratio"]) if pool else None), scores


def _cell(a: dict, col: str) -> str:
    if col not in a:
        return "–"
    m, s = a[col]
    return f"{m:.3f}" if math.isnan(s) else f"{m:.3f} ± {s:.3f}"


def table(rows: list[dict], with_selection: bool = False) -> str:
    agg = aggregate(rows)
    best, scores = select(agg) if with_selection else (None, {})
    head = ["setting", "seeds", *VAL_COLS, *TEST_COLS] + (
        ["val ratios (CCED, probe, Bias-IR)", "worst", "all 3 better"] if with_selection else []
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, a in agg.items():
        cells = [
            name + (" **(chosen)**" if name == best else ""),
            str(a["n"]),
            *(_cell(a, c) for c in VAL_COLS),
            *(_cell(a, c) for c in TEST_COLS),
        ]
        if with_selection:
            s = scores.get(name)
            cells += (
                [
                    ", ".join(f"{v:.2f}" for v in s["ratios"].values()),
                    f"{s['max_ratio']:.3f}",
                    "yes" if s["all_better"] else "no",
                ]
                if s
                else ["–", "–", "–"]
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--grid", default="explore", help=f"one of {sorted(GRIDS)}")
    r.add_argument("--seeds", type=int, nargs="+", default=[0])
    r.add_argument("--only", nargs="+", help="run only these settings of the grid")
    r.add_argument("--out", type=Path, default=DEFAULT_OUT)
    t = sub.add_parser("table")
    t.add_argument("--out", type=Path, default=DEFAULT_OUT)
    t.add_argument("--select", action="store_true", help="apply the validation-only selection rule")
    t.add_argument("--only", nargs="+", help="only these settings (and the original model)")
    a = p.parse_args(argv)
    if a.cmd == "table":
        rows = load_rows(a.out)
        if a.only:
            rows = [r for r in rows if r["setting"] in a.only or r["setting"] == "original"]
        print(table(rows, a.select))
        return 0
    sys.path.insert(0, str(Path(__file__).parent))
    from run_ccd_real import real_run_environment

    real_run_environment()
    settings = GRIDS[a.grid]
    if a.only:
        missing = [n for n in a.only if n not in settings]
        if missing:
            p.error(f"no setting(s) {missing} in grid {a.grid}; it has {sorted(settings)}")
        settings = {n: settings[n] for n in a.only}
    run_grid(settings, a.seeds, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
