"""Wall time of one file-based `fairmt eval mt-bias` call on the shipped data (issue 9's performance bar).

Scores the 2019 Google translations of WinoMT (the 8 languages shipped) plus MT-GenEval's test references for its 8
languages, as a user's translations folder, in ONE `fairmt eval mt-bias` process; prints one JSON object with the
wall time and the target (``TARGETS``, on a 2-core machine). Run: `python scripts/bench_mtbias.py [--data DIR]`.
It is one command already: ``--quick`` (what ``scripts/bench.py`` passes) changes nothing, and the output is JSON
with or without ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_common import children_cpu  # scripts/ is first on sys.path when a script runs

# measure -> (comparison, target); scripts/bench.py reads these from here (the one place they are kept)
TARGETS = {"wall_s": ("<=", 20.0)}
TARGET_S = TARGETS["wall_s"][1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--data", default=os.environ.get("FAIRMT_DATA") or str(Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    ap.add_argument("--compat", choices=["acl2019"], default=None)
    ap.add_argument("--quick", action="store_true", help="accepted for scripts/bench.py; the run is the same")
    ap.add_argument("--json", action="store_true", help="accepted for scripts/bench.py; the output is JSON anyway")
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "winomt" / "translations" / "google").is_dir():
        print(json.dumps({"error": f"no WinoMT data under {data}: pass --data"}))
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "google"
        (run / "winomt").mkdir(parents=True)
        (run / "geneval").mkdir()
        winomt_langs = sorted(
            p.name[3:-4]
            for p in (data / "winomt" / "translations" / "google").glob("en-*.txt")
            if p.name[3:-4] in ("ar", "cs", "de", "es", "fr", "he", "it", "pl", "ru", "uk")
        )
        for lang in winomt_langs:
            shutil.copy(data / "winomt" / "translations" / "google" / f"en-{lang}.txt", run / "winomt")
        sent = data / "mt_geneval" / "sentences" / "test"
        geneval_langs = ["ar", "de", "es", "fr", "hi", "it", "pt", "ru"]
        for lang in geneval_langs:
            for g in ("masculine", "feminine"):
                shutil.copy(sent / f"geneval-sentences-{g}-test.en_{lang}.{lang}", run / "geneval" / f"{g}.{lang}.txt")
        cmd = [sys.executable, "-m", "fairmt", "eval", "mt-bias", "--translations-dir", str(run), "--json", "-"]
        if args.compat:
            cmd += ["--compat", args.compat]
        env = {**os.environ, "FAIRMT_DATA": str(data)}
        t0, c0 = time.perf_counter(), children_cpu()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall, cpu = time.perf_counter() - t0, children_cpu() - c0
    if proc.returncode != 0:
        print(json.dumps({"error": proc.stderr[-2000:]}))
        return 1
    result = json.loads(proc.stdout)
    print(
        json.dumps(
            {
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "target_s": TARGET_S,
                "within_target": wall <= TARGET_S,
                "winomt_languages": winomt_langs,
                "geneval_languages": geneval_langs,
                "winomt_average_accuracy": round(result["winomt"]["average"]["accuracy"], 2),
                "cpu_count": os.cpu_count(),
                "load_average": round(os.getloadavg()[0], 2),
                "targets": {k: list(v) for k, v in TARGETS.items()},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
