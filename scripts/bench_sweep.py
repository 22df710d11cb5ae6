"""CPU time of a `fairmt sweep` trial, forked from the worker's trial server (the default) against a fresh interpreter
(``--no-fork``), measured in one run.

Runs the same small sweep twice, a `fairmt sweep` process each, on the shipped hate-speech data: the FCL recipe
with a bag-of-embeddings encoder, one epoch, ``--quick`` 3 seeds (else 6). The cost of a trial is the
sweep's CPU time (the worker, its trial server and every trial: ``RUSAGE_CHILDREN``) divided by the trials.
The fixed cost of a worker (checking the recipe, opening the study, the report) is in both, so the ratio
understates the saving per trial for longer sweeps. Also checks that both ways give the same results.

    python scripts/bench_sweep.py [--quick] [--json] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_common import children_cpu, print_result  # scripts/ is first on sys.path when a script runs

# measure -> (comparison, target); scripts/bench.py reads these from here (the one place they are kept)
TARGETS = {"forked_vs_fresh_cpu": ("<=", 0.6), "same_results": (">=", 1)}

REPO = Path(__file__).resolve().parents[1]
CHEAP = [
    "data.dataset=hatespeech",
    "model.type=embedding_bag",
    "model.embed_dim=8",
    "model.hidden_dim=8",
    "training.num_train_epochs=1",
    "training.per_device_train_batch_size=128",
    "save_predictions=false",
]


def _sweep(out: Path, seeds: int, data: Path, *extra: str) -> tuple[float, float, dict]:
    """(CPU s, wall s, {run folder: results without timings}) of one sweep process."""
    cmd = [sys.executable, "-m", "fairmt", "sweep", "classification/fcl", *CHEAP]
    cmd += ["--grid", "training.learning_rate=0.001", "--seeds", str(seeds), "--output-dir", str(out), *extra]
    env = {**os.environ, "FAIRMT_DATA": str(data), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    cpu, t0 = children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"bench_sweep: {' '.join(cmd[-8:])} exited {done.returncode}:\n{done.stderr[-2000:]}")
    results = {}
    for path in sorted(out.glob("trials/*/seed-*/run/results.json")):
        res = json.loads(path.read_text(encoding="utf-8"))
        results[path.parent.parent.name] = {k: res[k] for k in ("seed", "dev", "test", "test_full")}  # no paths
    return cpu, wall, results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 seeds instead of 6")
    ap.add_argument("--json", action="store_true", help="one JSON object (the last line)")
    ap.add_argument("--data", default=os.environ.get("FAIRMT_DATA") or str(REPO.parent / "shared" / "data"))
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "hatespeech_huang2020").is_dir():
        print(json.dumps({"error": f"no hate-speech data under {data}: pass --data"}))
        return 2
    seeds = 3 if args.quick else 6
    with tempfile.TemporaryDirectory() as tmp:
        fresh_cpu, fresh_wall, fresh = _sweep(Path(tmp) / "fresh", seeds, data, "--no-fork")
        forked_cpu, forked_wall, forked = _sweep(Path(tmp) / "forked", seeds, data)
    out = {
        "trials": seeds,
        "fresh_cpu_per_trial_s": round(fresh_cpu / seeds, 2),
        "forked_cpu_per_trial_s": round(forked_cpu / seeds, 2),
        "forked_vs_fresh_cpu": round(forked_cpu / fresh_cpu, 3),
        "fresh_wall_s": round(fresh_wall, 1),
        "forked_wall_s": round(forked_wall, 1),
        "same_results": int(len(fresh) == seeds and fresh == forked),
        "targets": {k: list(v) for k, v in TARGETS.items()},
    }
    print_result(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
