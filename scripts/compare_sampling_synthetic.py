#!/usr/bin/env python
"""Fair sampling vs the random-sampling baseline on synthetic shapes, over several seeds (a small-scale check of
Martin & Ogbuokiri's Table 1 claim, not a reproduction of it).

For every seed, the ``method: sampling`` recipe runs on ``synthetic_shapes`` (coloured squares/discs, a planted 80/20
majority/minority colour) with a tiny random ResNet: stage 1 SimCLR → K-means (K = 4) once → stage 2 with Algorithm 1
(``objective: sampling_pretrain``); then the baseline recipe (``objective: simclr``) continues the *same* stage 1
with plain SimCLR for the same number of epochs (``stage1_from``). The latent-subgroup measures of the two stage-2
models (K-means K = 4 on each model's normalised projections) and their shape probes are compared as mean ± std over
seeds::

    OMP_NUM_THREADS=1 python scripts/compare_sampling_synthetic.py [--seeds 0 1 2 3 4] [--json OUT] [KEY=VALUE ...]

Settings (fixed before looking at any result): 400 images of 32 px, batch 64, 10 + 10 epochs, lr 1e-2, crops of
50–100 % of the image (SimCLR's 8 % leaves too little of a 32-px shape), the paper's τ 0.5, ε 0.1, one negative, and
the recipe's defaults, which are the paper's reading: Z and the positives built once (``stage2.index_refresh_steps``
0), the batch NT-Xent (``stage2.pair_loss: batch``), the two-stage draw, the paper's three augmentations, probes on z.
``KEY=VALUE`` overrides change the reading (e.g. ``stage2.pair_loss=pairs stage2.negative_draw=product``). Besides
mean ± std of each arm, the fair − random differences are paired by seed (mean ± std of the per-seed difference).
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


def _override(config: dict, text: str) -> None:
    import yaml

    key, sep, raw = text.partition("=")
    if not sep:
        raise SystemExit(f"override {text!r} is not KEY=VALUE")
    node = config
    *path, last = key.split(".")
    for part in path:
        node = node.setdefault(part, {})
    node[last] = yaml.safe_load(raw)


def run(seed: int, root: Path, backbone: Path, a) -> dict:
    from fairmt.recipes.sampling.runner import main as recipe

    common = {
        "method": "sampling",
        "seed": seed,
        "data": {"dataset": "synthetic", "n": a.n, "image_size": 32, "minority_fraction": 0.2},
        "model": {"backbone": str(backbone), "projection_dim": 32},
        "augment": {"crop_scale": [0.5, 1.0]},
        "training": {
            "per_device_train_batch_size": 64,
            "per_device_eval_batch_size": 200,
            "learning_rate": 1e-2,
            "logging_steps": 10,
            "dataloader_num_workers": 0,
            "save_strategy": "no",
        },
        "stage1": {"num_train_epochs": a.epochs},
        "stage2": {"num_train_epochs": a.epochs},
        "clusters": {"n_clusters": 4, "seed": seed},
        "probe": {"seed": seed},
    }
    for text in a.overrides:
        _override(common, text)
    fair = recipe({**common, "objective": "sampling_pretrain", "output_dir": str(root / f"fair{seed}")})
    base = recipe(
        {
            **common,
            "objective": "simclr",
            "output_dir": str(root / f"simclr{seed}"),
            "stage1_from": str(root / f"fair{seed}"),
        }
    )
    out = {}
    for name, res in (("stage1", fair), ("fair", fair), ("random", base)):
        stage = res["stages"]["stage1" if name == "stage1" else "stage2"]
        out[name] = {m: stage["subgroups"][m] for m in MEASURES}
        out[name]["cluster_sizes"] = stage["subgroups"]["cluster_sizes"]
        out[name]["probe_accuracy"] = stage["probe"]["shape"]["accuracy"]
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("overrides", nargs="*", help="KEY=VALUE recipe overrides (another reading)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
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
            summary[arm][m] = {"mean": statistics.mean(vals), "std": statistics.stdev(vals) if len(vals) > 1 else 0.0}
    wins = {
        m: sum((per_seed[s]["fair"][m] < per_seed[s]["random"][m]) == (m == "cluster_dominance_ratio") for s in a.seeds)
        for m in ("cluster_dominance_ratio", "representation_entropy")
    }
    paired = {}
    for m in (*MEASURES, "probe_accuracy"):
        d = [per_seed[s]["fair"][m] - per_seed[s]["random"][m] for s in a.seeds]
        paired[m] = {"mean": statistics.mean(d), "std": statistics.stdev(d) if len(d) > 1 else 0.0}
    result = {
        "seeds": a.seeds,
        "overrides": a.overrides,
        "per_seed": per_seed,
        "summary": summary,
        "paired_fair_minus_random": paired,
        "fair_better_in_seeds": {
            "lower_dominance": wins["cluster_dominance_ratio"],
            "higher_entropy": wins["representation_entropy"],
        },
    }
    print(
        f"{'measure':32s} {'phase-1 baseline':>17s} {'fair (stage 2)':>17s} {'SimCLR control':>17s} "
        f"{'fair − control (paired)':>24s}"
    )
    for m in (*MEASURES, "probe_accuracy"):
        cells = [
            f"{summary[arm][m]['mean']:.4f} ± {summary[arm][m]['std']:.4f}" for arm in ("stage1", "fair", "random")
        ]
        diff = f"{paired[m]['mean']:+.4f} ± {paired[m]['std']:.4f}"
        print(f"{m:32s} {cells[0]:>17s} {cells[1]:>17s} {cells[2]:>17s} {diff:>24s}")
    print(
        f"fair lower dominance in {wins['cluster_dominance_ratio']}/{len(a.seeds)} seeds, higher entropy in "
        f"{wins['representation_entropy']}/{len(a.seeds)}"
    )
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
