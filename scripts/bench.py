#!/usr/bin/env python
"""Every benchmark of the project in one run, each in its quick mode, summed up in one table.

    python scripts/bench.py [--json] [--only gacl,winomt] [--full] [--timeout 900] [--data DIR]
    python -m scripts.bench ...

A benchmark is a script ``scripts/bench_<name>.py`` that prints one JSON object (the last line of its output) with
``--json``, and keeps its targets next to it in a module-level ``TARGETS`` literal: ``{measure: (op, target)}``
with op ``"<="`` or ``">="`` and the measure a key of that JSON object (dots reach into nested objects). This
runner reads ``TARGETS`` from the script's source (without importing it) — the targets are kept there and nowhere
else —, runs the script in a fresh process with ``--quick --json`` (``--quick`` only where the script has it;
``--full`` leaves it out), and prints one row per measure: value, target, met or missed. The benchmarks the project
is known to have are listed in ``KNOWN``; one that is missing gets a line saying so, and any other ``bench_*.py``
is found and run as well.

Timings on a shared machine are noisy: each benchmark reports ratios measured within its own run where it can, and
the table's header gives the machine's load average and the facts that move the rows (:func:`machine_facts`): CPU
cores (the machine's and those this process may use), the bfloat16 / float32 matrix-product speed ratio, and the
dtype ``teacher_dtype: auto`` chooses for a KD teacher or frozen reference here, with why
(``fairmt.models.precision``). ``--json`` prints the same as one JSON object. The exit status is 1 when a benchmark
failed to run, else 0 (a missed target is a row of the table, not a failure of the runner).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
# the benchmarks the project has (issue 28); one missing from the checkout gets a line saying so
KNOWN = ("gacl", "generate", "winomt", "mtbias", "gradcache", "sampling", "classification", "sweep", "startup")
OPS = {"<=": lambda v, t: v <= t, ">=": lambda v, t: v >= t}


def discover(only: list[str] | None = None) -> list[tuple[str, Path | None]]:
    """(name, path or None when missing): the known benchmarks first, then any other ``bench_*.py``."""
    found = {p.stem[len("bench_") :]: p for p in SCRIPTS.glob("bench_*.py")}
    names = list(KNOWN) + sorted(set(found) - set(KNOWN))
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"bench: error: unknown benchmark(s) {unknown}; known: {names}")
        names = [n for n in names if n in only]
    return [(n, found.get(n)) for n in names]


def read_targets(path: Path) -> dict[str, tuple[str, float]]:
    """The script's module-level ``TARGETS`` literal, read from its source; {} when it has none."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "TARGETS" for t in targets) and node.value is not None:
            value = ast.literal_eval(node.value)
            for measure, spec in value.items():
                if not (isinstance(spec, (tuple, list)) and len(spec) == 2 and spec[0] in OPS):
                    raise ValueError(f"{path.name}: TARGETS[{measure!r}] must be (op, value) with op in {sorted(OPS)}")
            return {k: (op, float(t)) for k, (op, t) in value.items()}
    return {}


def lookup(result: dict, measure: str):
    value = result
    for part in measure.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


@functools.lru_cache(maxsize=1)
def machine_facts() -> dict:
    """What moves the rows on this machine: cores, bf16 matmul speed (float32 time / bfloat16 time of one
    LM-head-shaped product on the CPU: below 1, bfloat16 is the slower), and what ``teacher_dtype: auto`` chooses."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import torch

    from fairmt.models.precision import bf16_matmul_speedup, resolve_teacher_dtype

    threads = torch.get_num_threads()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))  # as the benchmarks run
    try:
        speedup = bf16_matmul_speedup("cpu", (64, 256, 16000))
    finally:
        torch.set_num_threads(threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype, why = resolve_teacher_dtype("auto", device)
    return {
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cuda": torch.cuda.get_device_name() if device == "cuda" else None,
        "bf16_matmul_speedup_cpu": round(speedup, 2),
        "teacher_dtype_auto": str(dtype).replace("torch.", ""),
        "teacher_dtype_auto_why": why,
    }


def run_one(name: str, path: Path, quick: bool, timeout: float) -> dict:
    """Run one benchmark script; {'result': JSON object} or {'error': text}, plus its wall time."""
    source = path.read_text(encoding="utf-8")
    cmd = [sys.executable, str(path), "--json"] + (["--quick"] if quick and '"--quick"' in source else [])
    paths = [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(paths),
    }
    t0 = time.perf_counter()
    # its own process group, so a timeout ends the benchmark and every process it started
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": f"timed out after {timeout:.0f} s", "seconds": time.perf_counter() - t0, "command": cmd}
    seconds = time.perf_counter() - t0
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    result = None
    if lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            result = None
    if result is None or (proc.returncode != 0 and "error" not in result):
        tail = (err or out).strip().splitlines()[-3:]
        return {"error": f"exit status {proc.returncode}: " + " | ".join(tail), "seconds": seconds, "command": cmd}
    if "error" in result:  # the benchmark's own refusal, e.g. no benchmark data on this machine
        return {"error": str(result["error"]), "seconds": seconds, "command": cmd, "skipped": True}
    return {"result": result, "seconds": seconds, "command": cmd}


def rows_for(name: str, targets: dict, run: dict) -> list[dict]:
    rows = []
    for measure, (op, target) in targets.items():
        value = lookup(run["result"], measure)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            status = "met" if OPS[op](value, target) else "missed"
        else:
            value, status = None, "not measured"
        rows.append(
            {"benchmark": name, "measure": measure, "value": value, "target": f"{op} {target:g}", "status": status}
        )
    if not targets:  # a benchmark without TARGETS: its top-level numbers, for information
        for measure, value in run["result"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                rows.append(
                    {"benchmark": name, "measure": measure, "value": value, "target": "", "status": "no target"}
                )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--only", default=None, help="comma-separated benchmark names (default: all)")
    ap.add_argument("--full", action="store_true", help="run each benchmark in its full mode, not --quick")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds each benchmark may take")
    ap.add_argument(
        "--data",
        default=None,
        help="the benchmark data folder (sets FAIRMT_DATA; default: $FAIRMT_DATA or ../shared/data)",
    )
    args = ap.parse_args(argv)
    if args.data:
        os.environ["FAIRMT_DATA"] = str(Path(args.data).resolve())
    only = [x.strip() for x in args.only.split(",") if x.strip()] if args.only else None
    say = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else (lambda *a: print(*a, flush=True))
    load_before = os.getloadavg()[0]
    facts = machine_facts()
    say(
        f"machine: {facts['cpus_usable']} of {facts['cpus']} CPUs usable; bf16 matmul "
        f"{facts['bf16_matmul_speedup_cpu']}× fp32 speed on the CPU; teacher_dtype auto → "
        f"{facts['teacher_dtype_auto']} ({facts['teacher_dtype_auto_why']})"
    )
    rows, notes, benchmarks, failed = [], [], {}, False
    for name, path in discover(only):
        if path is None:
            notes.append(f"bench_{name}.py: not found (skipped)")
            say(notes[-1])
            benchmarks[name] = {"status": "missing"}
            continue
        try:
            targets = read_targets(path)
        except (SyntaxError, ValueError) as exc:
            notes.append(f"{path.name}: cannot read TARGETS ({exc})")
            say(notes[-1])
            benchmarks[name] = {"status": "error", "error": str(exc)}
            failed = True
            continue
        say(f"running {path.name} ...")
        run = run_one(name, path, quick=not args.full, timeout=args.timeout)
        entry = {
            "seconds": round(run["seconds"], 1),
            "command": " ".join(Path(c).name if i < 2 else c for i, c in enumerate(run["command"])),
        }
        if "error" in run:
            status = "skipped" if run.get("skipped") else "error"
            failed |= status == "error"
            notes.append(f"{path.name}: {status}: {run['error']}")
            say(notes[-1])
            benchmarks[name] = {**entry, "status": status, "error": run["error"]}
            rows += [
                {"benchmark": name, "measure": m, "value": None, "target": f"{op} {t:g}", "status": status}
                for m, (op, t) in targets.items()
            ]
            continue
        benchmarks[name] = {**entry, "status": "ran", "result": run["result"]}
        if not targets:
            notes.append(f"{path.name}: declares no TARGETS")
        rows += rows_for(name, targets, run)
    machine = {
        **facts,
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "mode": "full" if args.full else "quick",
    }
    if args.json:
        print(json.dumps({"rows": rows, "notes": notes, "machine": machine, "benchmarks": benchmarks}))
        return 1 if failed else 0
    print()
    print(
        f"{machine['mode']} benchmarks on {machine['cpus']} CPUs, load average {machine['load_average_before']} → "
        f"{machine['load_average_after']} (timings on a shared machine are noisy)"
    )
    print(
        f"bf16 matmul {machine['bf16_matmul_speedup_cpu']}× fp32 speed on the CPU"
        + (f"; GPU {machine['cuda']}" if machine["cuda"] else "")
        + f"; teacher_dtype auto → {machine['teacher_dtype_auto']} ({machine['teacher_dtype_auto_why']})"
    )
    widths = [
        max(len("benchmark"), *(len(r["benchmark"]) for r in rows)) if rows else 9,
        max(len("measure"), *(len(r["measure"]) for r in rows)) if rows else 7,
    ]
    print(f"{'benchmark':<{widths[0]}}  {'measure':<{widths[1]}}  {'value':>10}  {'target':<9}  status")
    for r in rows:
        value = "—" if r["value"] is None else f"{r['value']:.4g}"
        print(
            f"{r['benchmark']:<{widths[0]}}  {r['measure']:<{widths[1]}}  {value:>10}  {r['target']:<9}  {r['status']}"
        )
    for note in notes:
        print(f"note: {note}")
    for name, b in benchmarks.items():
        if "seconds" in b:
            print(f"{name}: {b['seconds']} s ({b['command']})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
