"""The real CCD run: all-MiniLM-L6-v2, CDA tuples from newstest2018 (English side), before/after bias table.

    OMP_NUM_THREADS=1 FAIRMT_DATA=../shared/data python scripts/run_ccd_real.py [recipes/ccd/minilm_cda.yaml] \
        [key=value ...]

Runs the recipe (``fairmt.scripts.ccd.main``: SEAT, CCED on held-out tuples, Bias-IR and a utility check before
and after CCD training) on one CPU thread, prints a Markdown before/after table and writes it beside the JSON
results (``<output_dir>/ccd_results.{json,md}``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def table(res: dict) -> str:
    """Markdown before/after table of a :func:`fairmt.scripts.ccd.main` result."""
    b, a = res["before"], res["after"]
    rows = []

    def add(name, x, y, better="lower |x|"):
        rows.append(f"| {name} | {x:.3f} | {y:.3f} | {y - x:+.3f} | {better} |")

    if "seat" in b:
        for t in b["seat"]:
            add(f"SEAT-{t} effect size", b["seat"][t]["effect_size"], a["seat"][t]["effect_size"], "closer to 0")
        add("SEAT avg |effect size|", b["seat_avg_abs"], a["seat_avg_abs"], "lower")
    if "cced" in b:
        add(f"CCED gap ({b['cced']['n']} held-out tuples)", b["cced"]["gap"], a["cced"]["gap"], "lower")
        for g, d in b["cced"]["mean_distance"].items():
            add(f"CCED mean ‖f({g})−f(neutral)‖", d, a["cced"]["mean_distance"][g], "-")
    if "bias_ir" in b:
        for c, r in b["bias_ir"]["male_ratio"].items():
            add(f"Bias-IR male ratio {c}", r, a["bias_ir"]["male_ratio"][c], "closer to 0.5")
        add("Bias-IR AVG-DEV", b["bias_ir"]["avg_dev"], a["bias_ir"]["avg_dev"], "lower")
    lines = ["| metric | before | after | Δ | better |", "|---|---|---|---|---|", *rows]
    if "utility" in res:
        u = res["utility"]
        lines += ["", f"Utility (original vs debiased, {u['n']} held-out neutral sentences): "
                  + ", ".join(f"{k} {v:.3f}" for k, v in u.items() if k != "n")]
    tr = res["train"]
    lines += ["", f"rho = {tr['rho']:.4f} ({tr['rho_estimator']}); data {res['data']}; best checkpoint "
              f"{tr['best_checkpoint']}; time: measure {res['time_measure_before_s']:.0f}s + train "
              f"{res['time_train_s']:.0f}s + measure {res['time_measure_after_s']:.0f}s = {res['time_total_s']:.0f}s"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    shared = REPO.parent / "shared" / "data"
    if "FAIRMT_DATA" not in os.environ and shared.is_dir():
        os.environ["FAIRMT_DATA"] = str(shared)
    sys.path.insert(0, str(REPO))
    import logging

    import torch

    from fairmt.commands.train import load_recipe
    from fairmt.scripts.ccd import main as run

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    recipe = argv[0] if argv and argv[0].endswith(".yaml") else str(REPO / "recipes" / "ccd" / "minilm_cda.yaml")
    overrides = argv[1:] if argv and argv[0].endswith(".yaml") else argv
    res = run(load_recipe(recipe, overrides))
    md = table(res)
    print(md)
    Path(res["results_path"]).with_suffix(".md").write_text(md + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
