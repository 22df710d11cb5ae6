"""The real CCD run: all-MiniLM-L6-v2, CDA tuples from newstest2018 (English side), before/after bias table over seeds.

    OMP_NUM_THREADS=1 FAIRMT_DATA=../shared/data python scripts/run_ccd_real.py [recipes/ccd/minilm_cda.yaml] \
        [--seeds 0 1 2] [key=value ...]
    python scripts/run_ccd_real.py --from-results RUN0/ccd_results.json RUN1/ccd_results.json ...

Runs the recipe (``fairmt.scripts.ccd.main``: SEAT, CCED on held-out tuples, Bias-IR, the validation measures and a
utility check before and after CCD training) once per seed (``training.seed``; output in
``<output_dir>/seed<N>``) on one CPU thread, and prints a Markdown before/after table: the mean ± standard
deviation over the seeds of every measure after training, the change, and whether it is better or worse than
before (with the number of seeds in which it is), written beside the results (``<output_dir>/ccd_results.md``).
``--from-results`` only tabulates earlier runs' JSON files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _abs(x: float) -> float:
    return abs(x)


def _half(x: float) -> float:
    return abs(x - 0.5)


def _same(x: float) -> float:
    return x


def _rows(res: dict) -> list[tuple[str, float, float | None, object]]:
    """(label, before, after, badness) of one run; badness maps a value to "how biased" (None: not judged)."""
    b, a = res["before"], res["after"]
    rows: list[tuple[str, float, float | None, object]] = []
    if "seat" in b:
        for t in b["seat"]:
            rows.append((f"SEAT-{t} effect size", b["seat"][t]["effect_size"], a["seat"][t]["effect_size"], _abs))
        rows.append(("SEAT avg \\|effect size\\| (6-8b)", b["seat_avg_abs"], a["seat_avg_abs"], _same))
    if "cced" in b:
        rows.append((f"CCED gap ({b['cced']['n']} held-out tuples)", b["cced"]["gap"], a["cced"]["gap"], _same))
        for g, d in b["cced"]["mean_distance"].items():
            rows.append((f"CCED mean ‖f({g})−f(neutral)‖", d, a["cced"]["mean_distance"][g], None))
    if "bias_ir" in b:
        n = b["bias_ir"].get("n_queries", "")
        for c, r in b["bias_ir"]["male_ratio"].items():
            rows.append((f"Bias-IR male ratio {c} ({n} test queries)", r, a["bias_ir"]["male_ratio"][c], _half))
        rows.append((f"Bias-IR AVG-DEV ({n} test queries)", b["bias_ir"]["avg_dev"], a["bias_ir"]["avg_dev"], _same))
    if "bias_ir_all" in b:
        rows.append(("Bias-IR AVG-DEV (all 117 queries, incl. validation)", b["bias_ir_all"]["avg_dev"],
                     a["bias_ir_all"]["avg_dev"], _same))
    if "validation" in res:
        vb, va = res["validation"]["before"], res["validation"]["after"]
        rows.append(("validation: probe avg \\|d\\| (no SEAT word)", vb["probe_avg_abs"], va["probe_avg_abs"], _same))
        if "cced" in vb:
            rows.append((f"validation: CCED gap ({vb['cced']['n']} tuples)", vb["cced"]["gap"], va["cced"]["gap"],
                         _same))
        if "bias_ir" in vb:
            rows.append((f"validation: Bias-IR AVG-DEV ({vb['bias_ir'].get('n_queries', '')} queries)",
                         vb["bias_ir"]["avg_dev"], va["bias_ir"]["avg_dev"], _same))
    for key, label in (("utility", "test"), ("utility_validation", "validation")):
        if key in res:
            u = res[key]
            rows.append((f"utility ({label}, {u['n']} sentences): Spearman of pairwise cosines", 1.0,
                         u["spearman_pairwise_cos"], None))
            rows.append((f"utility ({label}): 1-NN agreement", 1.0, u["nn1_agreement"], None))
    return rows


TOL = 1e-9


def _fmt(values: list[float], digits: int = 3) -> str:
    import numpy as np

    v = np.asarray(values, dtype=float)
    return f"{v.mean():.{digits}f}" if len(v) == 1 else f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}"


def table(results: list[dict] | dict) -> str:
    """Markdown before/after table of one or several (seeds) :func:`fairmt.scripts.ccd.main` results: the after
    column is the mean ± std over the runs (std with ddof=1); "better"/"worse" compares the mean with before (for
    an effect size by |d|, for a Bias-IR male ratio by its distance to 0.5) and counts the runs that agree."""
    import numpy as np

    results = [results] if isinstance(results, dict) else list(results)
    per_run = [_rows(r) for r in results]
    n = len(results)
    lines = [f"| metric | before | after (mean ± std, {n} seed{'s' if n > 1 else ''}) | Δ | verdict |",
             "|---|---|---|---|---|"]
    for i, (label, before, _, bad) in enumerate(per_run[0]):
        befores = [rows[i][1] for rows in per_run]
        afters = [rows[i][2] for rows in per_run]
        if max(befores) - min(befores) > 1e-9:
            raise ValueError(f"{label}: the runs do not share one 'before' ({befores}); tabulate runs of one recipe")
        mean_after = float(np.mean(afters))
        if bad is None:
            verdict = "–"
        else:
            # a tolerance, so that 0.7 -> 0.3 (both 0.2 from 0.5) reads "same", not a float's "worse"
            k = sum(bad(x) < bad(before) - TOL for x in afters)
            change = bad(mean_after) - bad(before)
            word = "better" if change < -TOL else "worse" if change > TOL else "same"
            verdict = f"**{word}**" + (f" ({k}/{n} seeds better)" if n > 1 else "")
        digits = 4 if label.startswith("utility") else 3  # utility sits near 1: show what changed
        lines.append(f"| {label} | {before:.{digits}f} | {_fmt(afters, digits)} | {mean_after - before:+.{digits}f} | "
                     f"{verdict} |")
    tr = [r["train"] for r in results]
    r0 = results[0]
    rhos = ", ".join(f"{t['rho']:.4f}" for t in tr)
    best = ", ".join(str(t.get("best_checkpoint") or "last").rsplit("/", 1)[-1] for t in tr)
    lines += ["", f"rho = {rhos} ({tr[0]['rho_estimator']}); data {r0['data']}; checkpoints {best}; time per run: "
              + ", ".join(f"{r['time_total_s']:.0f}s" for r in results)]
    return "\n".join(lines)


def real_run_environment() -> None:
    """One CPU thread, offline, the shared data as FAIRMT_DATA when it sits beside the checkout, this tree's fairmt."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    shared = REPO.parent / "shared" / "data"
    if "FAIRMT_DATA" not in os.environ and shared.is_dir():
        os.environ["FAIRMT_DATA"] = str(shared)
    sys.path.insert(0, str(REPO))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("args", nargs="*", help="[recipe.yaml] key=value ...")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (default 0 1 2)")
    p.add_argument("--from-results", type=Path, nargs="+", help="tabulate these ccd_results.json files only")
    a = p.parse_args(argv)
    if a.from_results:
        print(table([json.loads(f.read_text(encoding="utf-8")) for f in a.from_results]))
        return 0
    real_run_environment()
    import logging

    import torch

    from fairmt.commands.train import load_recipe
    from fairmt.scripts.ccd import main as run

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    recipe = a.args[0] if a.args and a.args[0].endswith(".yaml") else "ccd/minilm_cda"
    overrides = a.args[1:] if a.args and a.args[0].endswith(".yaml") else a.args
    base = Path(load_recipe(recipe, overrides)["training"]["output_dir"])
    results = [run(load_recipe(recipe, [*overrides, f"training.seed={s}", f"training.output_dir={base / f'seed{s}'}"]))
               for s in a.seeds]
    md = table(results)
    print(md)
    base.mkdir(parents=True, exist_ok=True)
    (base / "ccd_results.md").write_text(md + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
