"""Run ``fairmt demo`` (and ``--multilingual``) as docs/get-started.md describes them and record their numbers and
times, with the machine they ran on, in ``scripts/results/demo_en-de.json`` / ``demo_multilingual.json``.

    OMP_NUM_THREADS=1 python scripts/record_demo.py               # the en–de demo (3 seeds, defaults)
    OMP_NUM_THREADS=1 python scripts/record_demo.py --multilingual  # the transfer question (5 seeds, defaults)

The page's tables, times and machine are checked against these files by ``tests/recipes/test_demo.py``
(``test_get_started_numbers_come_from_the_recorded_runs``): rerun this script and the page's numbers with it when
the demo changes. The demo's own report (``report.json``) is kept whole except the per-step training logs and
the example translations; ``recorded`` adds the wall-clock and CPU time of the run, the load average before and
after (a busy machine makes the wall time meaningless: the CPU time is the comparable number) and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
FILES = {False: RESULTS / "demo_en-de.json", True: RESULTS / "demo_multilingual.json"}


def machine() -> dict:
    """The machine in words: CPU model, logical cores this process may use, memory, OS, Python and torch."""
    import torch

    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = None
    try:
        mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "cpu": model,
        "cores": cores,
        "memory_gib": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--multilingual", action="store_true", help="record `fairmt demo --multilingual`")
    args = ap.parse_args(argv)

    from fairmt.demo import run_demo, run_multilingual_demo
    from fairmt.outputs import write_json

    load = [os.getloadavg()[0]]
    t0, c0 = time.time(), resource.getrusage(resource.RUSAGE_SELF)
    with tempfile.TemporaryDirectory(prefix="fairmt-record-demo-") as tmp:
        run = run_multilingual_demo if args.multilingual else run_demo
        report = run(output_dir=tmp, overwrite=True, threads=1, progress=False)
    wall = time.time() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    load.append(os.getloadavg()[0])
    for r in report["runs"]:
        r.pop("train_log", None)
        r.pop("models", None)
        r.pop("example", None)
    report["recorded"] = {
        "command": "fairmt demo --multilingual" if args.multilingual else "fairmt demo",
        "threads": report["threads"],
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 1),
        "load_average": {"start": round(load[0], 2), "end": round(load[1], 2)},
        "machine": machine(),
    }
    out = FILES[args.multilingual]
    write_json(out, report, what="the recorded demo run")
    print(
        f"wrote {out}: {report['recorded']['wall_seconds']} s wall, {report['recorded']['cpu_seconds']} s CPU "
        f"on {report['recorded']['machine']['cpu']} ({report['recorded']['machine']['cores']} cores), load "
        f"{load[0]:.1f} → {load[1]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
