"""CPU time of a `fairmt` command that imports torch and transformers, with the collector threshold the command sets
(``fairmt.cli.YOUNG_GC_THRESHOLD``, the default) against Python's own (700), measured in one run.

Each side runs ``fairmt train gacl/tiny_offline --dry-run`` (checking a recipe imports torch and transformers, what
every training, sweep worker and launcher rank pays before its first step) in a fresh interpreter, the two sides
alternating, ``--quick`` 3 times each (else 7); the median CPU time (user + system, the child's own) of each side and
their ratio are reported. The default side is the command as a user runs it; the other is the same command with
``fairmt.cli.YOUNG_GC_THRESHOLD`` set back to Python's 700 before ``main`` runs.

    python scripts/bench_startup.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from _bench_common import REPO, children_cpu, print_result  # scripts/ is first on sys.path when a script runs

# measure -> (comparison, target); scripts/bench.py reads these from here (the one place they are kept)
TARGETS = {"young_gc_vs_python_default_cpu": ("<=", 0.95)}

COMMAND = ["train", "gacl/tiny_offline", "--dry-run"]
PYTHON_DEFAULT = 700  # CPython 3.11's first threshold (gc.get_threshold()[0] in a fresh interpreter)


def _run(threshold: int | None) -> float:
    """CPU seconds of one fresh ``fairmt`` process running :data:`COMMAND` (``threshold``: the first collector
    threshold the command sets instead of its own, None for its own)."""
    patch = "" if threshold is None else f"cli.YOUNG_GC_THRESHOLD = {threshold}; "
    code = f"import sys; import fairmt.cli as cli; {patch}sys.exit(cli.main({COMMAND!r}))"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    before = children_cpu()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=REPO)
    cpu = children_cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"bench_startup: fairmt {' '.join(COMMAND)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 runs per side instead of 7")
    ap.add_argument("--json", action="store_true", help="print one JSON line (what scripts/bench.py reads)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from fairmt.cli import YOUNG_GC_THRESHOLD

    repeats = 3 if args.quick else 7
    ours, python = [], []
    t0 = time.perf_counter()
    for _ in range(repeats):  # alternating: a slow spell of the machine falls on both sides
        ours.append(_run(None))
        python.append(_run(PYTHON_DEFAULT))
    out = {
        "command": "fairmt " + " ".join(COMMAND),
        "repeats": repeats,
        "young_gc_threshold": YOUNG_GC_THRESHOLD,
        "python_default_threshold": PYTHON_DEFAULT,
        "cpu_s_young_gc": round(statistics.median(ours), 3),
        "cpu_s_python_default": round(statistics.median(python), 3),
        "young_gc_vs_python_default_cpu": round(statistics.median(ours) / statistics.median(python), 3),
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    print_result(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
