#!/usr/bin/env python
"""Fair sampling vs the random-sampling baseline on synthetic shapes, over several seeds (a small-scale check of
Martin & Ogbuokiri's Table 1 claim, not a reproduction of it).

For every seed, the ``method: sampling`` recipe runs on ``synthetic_shapes`` (coloured squares/discs, a planted 80/20
majority/minority colour) with a tiny random ResNet: stage 1 SimCLR → K-means (K = 4) once → stage 2 with Algorithm 1
(``objective: sampling``); then the baseline recipe (``objective: simclr``) continues the *same* stage 1 with plain
SimCLR for the same number of epochs (``stage1_from``). The latent-subgroup measures of the two stage-2 models
(K-means K = 4 on each model's normalised projections) and their shape probes are compared as mean ± std over seeds::

    OMP_NUM_THREADS=1 python scripts/compare_sampling_synthetic.py [--seeds 0 1 2] [--json OUT]

Settings (fixed before looking at any result): 400 images of 32 px, batch 64, 10 + 10 epochs, lr 1e-2, crops of
50–100 % of the image (SimCLR's 8 % leaves too little of a 32-px shape), the paper's τ 0.5, ε 0.1, one negative.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEASURES = ("cluster_dominance_ratio", "representation_entropy", "subgroup_separation_distance")


def run(seed: int, root: Path, backbone: Path, a) -> dict:
    from fairmt.scripts.sampling import main as recipe

    common = {
        "method": "sampling", "seed": seed,
        "data": {"dataset": "synthetic", "n": a.n, "image_size": 32, "minority_fraction": 0.2},
        "model": {"backbone": str(backbone), "projection_dim": 32},
        "augment": {"crop_scale": [0.5, 1.0]},
        "training": {"per_device_train_batch_size": 64, "per_device_eval_batch_size": 200, "learning_rate": 1e-2,
                     "logging_steps": 10, "dataloader_num_workers": 0, "save_strategy": "no"},
        "stage1": {"num_train_epochs": a.epochs}, "stage2": {"num_train_epochs": a.epochs},
        "clusters": {"n_clusters": 4, "seed": seed},
        "probe": {"seed": seed},
    }
    fair = recipe({**common, "objective": "sampling", "output_dir": str(root / f"fair{seed}")})
    base = recipe({**common, "objective": "simclr", "output_dir": str(root / f"simclr{seed}"),
                   "stage1_from": str(root / f"fair{seed}")})
    out = {}
    for name, res in (("stage1", fair), ("fair", fair), ("random", base)):
        stage = res["stages"]["stage1" if name == "stage1" else "stage2"]
        out[name] = {m: stage["subgroups"][m] for m in MEASURES}
        out[name]["cluster_sizes"] = stage["subgroups"]["cluster_sizes"]
        out[name]["probe_accuracy"] = stage["probe"]["shape"]["accuracy"]
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--epochs", type=float, default=10)
    p.add_argument("--json", default=None, help="write the per-seed numbers and the summary here")
    a = p.parse_args(argv)
    sys.path.insert(0, str(REPO))
    import torch

    from fairmt.models.vision import tiny_resnet

    torch.set_num_threads(1)
    root = Path(tempfile.mkdtemp(prefix="compare-sampling-"))
    backbone = tiny_resnet(root / "resnet", image_size=32)
    per_seed = {s: run(s, root, backbone, a) for s in a.seeds}
    summary = {}
    for arm in ("stage1", "fair", "random"):
        summary[arm] = {}
        for m in (*MEASURES, "probe_accuracy"):
            vals = [per_seed[s][arm][m] for s in a.seeds]
            summary[arm][m] = {"mean": statistics.mean(vals),
                               "std": statistics.stdev(vals) if len(vals) > 1 else 0.0}
    wins = {m: sum((per_seed[s]["fair"][m] < per_seed[s]["random"][m]) == (m == "cluster_dominance_ratio")
                   for s in a.seeds) for m in ("cluster_dominance_ratio", "representation_entropy")}
    result = {"seeds": a.seeds, "per_seed": per_seed, "summary": summary,
              "fair_better_in_seeds": {"lower_dominance": wins["cluster_dominance_ratio"],
                                       "higher_entropy": wins["representation_entropy"]}}
    print(f"{'measure':32s} {'stage 1':>17s} {'fair (stage 2)':>17s} {'random (stage 2)':>17s}")
    for m in (*MEASURES, "probe_accuracy"):
        cells = [f"{summary[arm][m]['mean']:.4f} ± {summary[arm][m]['std']:.4f}" for arm in ("stage1", "fair", "random")]
        print(f"{m:32s} {cells[0]:>17s} {cells[1]:>17s} {cells[2]:>17s}")
    print(f"fair lower dominance in {wins['cluster_dominance_ratio']}/{len(a.seeds)} seeds, higher entropy in "
          f"{wins['representation_entropy']}/{len(a.seeds)}")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
