"""Each test file's wall time (setup + call + teardown of its tests, module fixtures included) against its budget in
``tests/support/time_budget.json``, so that a new slow file shows by name instead of in the suite's total.

A pytest plugin (``tests/conftest.py`` loads it) and a script:

* always: each file's time is summed from its tests' reports (in the xdist controller too);
* ``FAIRMT_TIME_REPORT=PATH``: the times are written there as JSON at the end: ``files`` (each file's seconds),
  ``not_slow`` (the same for its tests not marked ``slow``: the inner loop), ``slowest_not_slow_tests`` (the 30
  longest tests not marked ``slow``) and ``unmarked_tests`` (every test without its own ``slow`` mark that took at
  least ``report_test_s``: the measured-slow list is made from these);
* ``FAIRMT_CHECK_BUDGET=1`` (``.ci/run`` sets it for the full configuration): a file over its budget (a file with no
  entry: ``default_s``) fails the run, with one line per file naming it, its time and its budget;
* ``python tests/support/time_budget.py TIMES.json [...]``: rewrites ``tests/support/time_budget.json`` from measured times (several
  files: each test file's largest time), budget = measured × ``headroom`` + ``slack_s``, at least ``floor_s``, and
  ``measured_slow``: the tests without a ``slow`` mark of their own that took ``slow_test_s`` or more;
* always: the tests in ``measured_slow`` get the ``slow`` mark at collection (``tests/conftest.py``), so the inner
  loop (``-m "not slow"``) leaves out what was measured slow as well as what is marked so in the source (a doc block
  that trains, a campaign case that starts a child process: parametrised cases with no decorator of their own).

The budgets hold for the README test command (``-n 2 --dist loadfile``) on 2 cores; ``tests/conftest.py`` hands the
files out longest first by the measured seconds kept here.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

BUDGET_FILE = Path(__file__).with_name("time_budget.json")
REPORT_VAR, CHECK_VAR = "FAIRMT_TIME_REPORT", "FAIRMT_CHECK_BUDGET"
RULE = {"headroom": 1.6, "slack_s": 20.0, "floor_s": 30.0, "default_s": 60.0, "slow_test_s": 0.3, "report_test_s": 0.2}
MEASURED = "measured_slow"  # the keyword of a test marked slow by its measured time (not by its source)


def load() -> dict:
    data = json.loads(BUDGET_FILE.read_text(encoding="utf-8"))
    for key in ("default_s", "files"):
        if key not in data:
            raise ValueError(f"{BUDGET_FILE}: no {key!r}")
    return data


def budget_of(data: dict, name: str) -> float:
    entry = data["files"].get(name)
    return float(entry["budget_s"]) if entry else float(data["default_s"])


def measured_order() -> list[str]:
    """The test files with a measured time, longest first (tests/conftest.py's collection order)."""
    try:
        files = load()["files"]
    except (OSError, ValueError):
        return []
    return sorted(files, key=lambda n: -float(files[n]["measured_s"]))


def measured_slow() -> set[str]:
    """The node ids of the tests marked ``slow`` by their measured time (tests/conftest.py marks them)."""
    try:
        return set(load().get(MEASURED, []))
    except (OSError, ValueError):
        return set()


def mark_slow(items: list, selected, keyword: str) -> int:
    """Give the ``slow`` mark and ``keyword`` (why) to every collected test for which ``selected(item)`` holds and
    that has no ``slow`` mark yet; the number marked."""
    marked = 0
    for item in items:
        if selected(item) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
            item.add_marker(keyword)
            marked += 1
    return marked


def mark_measured_slow(items: list) -> int:
    """Give the ``slow`` mark to every collected test in ``measured_slow``; the number marked."""
    slow = measured_slow()
    return mark_slow(items, lambda item: item.nodeid in slow, MEASURED)


def _own_slow(keywords) -> bool:
    """Marked ``slow`` in the source (not only by its measured time)."""
    return "slow" in keywords and MEASURED not in keywords


def over_budget(times: dict[str, float], data: dict) -> list[str]:
    """One line per file whose time exceeds its budget, longest overrun first."""
    over = [(t - budget_of(data, name), name, t) for name, t in times.items() if t > budget_of(data, name)]
    return [
        f"{name}: {t:.1f} s, over its budget of {budget_of(data, name):.0f} s"
        + ("" if name in data["files"] else " (no entry in tests/support/time_budget.json: the default)")
        for _, name, t in sorted(over, reverse=True)
    ]


def rebuilt(measured: dict[str, float], note: str, tests: dict[str, float] | None = None) -> dict:
    files = {
        name: {
            "measured_s": round(t, 1),
            "budget_s": float(max(RULE["floor_s"], round(t * RULE["headroom"] + RULE["slack_s"]))),
        }
        for name, t in sorted(measured.items())
    }
    return {
        "note": note,
        "rule": f"budget_s = max({RULE['floor_s']:g}, measured_s × {RULE['headroom']:g} + "
        f"{RULE['slack_s']:g}); a file with no entry: default_s",
        "default_s": RULE["default_s"],
        "files": files,
        MEASURED: sorted(t for t, s in (tests or {}).items() if s >= RULE["slow_test_s"]),
        "measured_slow_rule": f"the tests with no slow mark of their own that took {RULE['slow_test_s']:g} s or "
        "more (setup + call + teardown): tests/conftest.py marks them slow",
    }


class Recorder:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.times: dict[str, float] = defaultdict(float)
        self.inner: dict[str, float] = defaultdict(float)  # the tests not marked slow (the inner loop)
        self.tests: dict[str, float] = defaultdict(float)  # per test not marked slow
        self.unmarked: dict[str, float] = defaultdict(float)  # per test without a slow mark of its own
        self.over: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = Path(report.nodeid.split("::", 1)[0]).name
        self.times[name] += report.duration
        if "slow" not in report.keywords:
            self.inner[name] += report.duration
            self.tests[report.nodeid] += report.duration
        if not _own_slow(report.keywords):
            self.unmarked[report.nodeid] += report.duration

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):  # an xdist worker: the controller sums its reports
            return
        path = os.environ.get(REPORT_VAR)
        if path:
            from fairmt.outputs import write_json

            slowest = sorted(self.tests.items(), key=lambda kv: -kv[1])[:30]
            write_json(
                path,
                {
                    "files": {k: round(v, 2) for k, v in sorted(self.times.items())},
                    "not_slow": {k: round(v, 2) for k, v in sorted(self.inner.items())},
                    "slowest_not_slow_tests": {k: round(v, 2) for k, v in slowest},
                    "unmarked_tests": {
                        k: round(v, 2) for k, v in sorted(self.unmarked.items()) if v >= RULE["report_test_s"]
                    },
                },
                what="per-file test times",
            )
        if os.environ.get(CHECK_VAR) == "1":
            self.over = over_budget(self.times, load())
            if self.over and session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if os.environ.get(CHECK_VAR) == "1":
            if self.over:
                terminalreporter.section("test files over their time budget (tests/support/time_budget.json)", red=True)
                for line in self.over:
                    terminalreporter.write_line(line)
            else:
                terminalreporter.write_line("every test file within its time budget (tests/support/time_budget.json)")


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    measured: dict[str, float] = {}
    tests: dict[str, float] = {}
    for path in argv:
        times = json.loads(Path(path).read_text(encoding="utf-8"))
        for name, t in times["files"].items():
            measured[name] = max(measured.get(name, 0.0), float(t))
        for name, t in times.get("unmarked_tests", {}).items():
            tests[name] = max(tests.get(name, 0.0), float(t))
    from fairmt.outputs import json_text, write_file

    note = "per-file seconds of the README test command on 2 cores, from " + ", ".join(Path(p).name for p in argv)
    write_file(BUDGET_FILE, json_text(rebuilt(measured, note, tests)) + "\n", what="the time budget")
    print(f"{BUDGET_FILE}: {len(measured)} files, {len(rebuilt(measured, note, tests)[MEASURED])} tests measured slow")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
