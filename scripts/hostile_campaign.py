"""Run the hostile-input campaign of issue 26 (``tests/support/hostile_campaign.py``) against the fairmt on ``PYTHONPATH`` and
count the outcomes by category: traceback, data loss, wrong result with exit 0, unclear refusal, ok.

    OMP_NUM_THREADS=1 PYTHONPATH=/path/to/fairmt python scripts/hostile_campaign.py [--fast] [--json out.json]

``--fast`` leaves out the four slow cases (real training runs and two processes). Each case runs in its own folder
under a temporary directory; nothing else is touched.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def _load_campaign():
    here = Path(__file__).resolve().parents[1] / "tests" / "hostile_campaign.py"
    spec = importlib.util.spec_from_file_location("hostile_campaign", here)
    module = importlib.util.module_from_spec(spec)
    sys.modules["hostile_campaign"] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="leave out the slow cases")
    ap.add_argument("--json", default=None, help="write every case's outcome here")
    ap.add_argument("--only", default=None, help="run the cases whose id contains this text")
    ap.add_argument(
        "--skip",
        action="append",
        default=[],
        help="leave out the cases whose id contains this text (repeatable; e.g. a case an old version "
        'takes minutes of memory on, such as "billion-laughs")',
    )
    args = ap.parse_args()
    import fairmt

    campaign = _load_campaign()
    cases = [
        c
        for c in campaign.all_cases()
        if not (args.fast and c.slow)
        and (not args.only or args.only in c.id)
        and not any(text in c.id for text in args.skip)
    ]
    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    results = []
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="fairmt-campaign-") as root:
        work = campaign.build_all(Path(root) / "work")
        for i, case in enumerate(cases):
            start = time.time()
            category, detail = campaign.run_case(
                case, work, Path(root) / f"case-{i}", shared if shared.is_dir() else None
            )
            results.append(
                {
                    "id": case.id,
                    "area": case.area,
                    "category": category,
                    "detail": detail,
                    "seconds": round(time.time() - start, 2),
                }
            )
            print(f"{category:12s} {case.area:14s} {case.id}  [{detail[:110]}]", flush=True)
    counts = Counter(r["category"] for r in results)
    print(
        f"\nfairmt {getattr(fairmt, '__version__', '?')} from {Path(fairmt.__file__).parent}: {len(results)} cases "
        f"in {time.time() - t0:.0f} s"
    )
    for cat in campaign.CATEGORIES:
        print(f"  {cat:12s} {counts.get(cat, 0)}")
    by_area = Counter((r["area"], r["category"]) for r in results if r["category"] != "ok")
    if by_area:
        print("not ok, by area: " + ", ".join(f"{a}/{c}: {n}" for (a, c), n in sorted(by_area.items())))
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "cases": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
