"""The test suite's own machinery (issues 55, 56): optional parts skip with their reason through one mechanism
(tests/support/needs.py: markers, doc-block annotations, campaign cases), FAIRMT_TEST_HIDE makes installed parts unreachable,
and each test file's time is checked against tests/support/time_budget.json."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import needs
import time_budget
from doc_blocks import ROOT, _comments_before, blocks

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture
def hidden(monkeypatch):
    def hide(value: str) -> None:
        monkeypatch.setenv(needs.HIDE_VAR, value)
        monkeypatch.setattr(needs, "_CACHE", {})

    return hide


def test_every_part_says_what_is_missing_and_how_to_get_it(hidden):
    hidden("all")
    for name, part in needs.PARTS.items():
        reason = needs.missing(name)
        assert reason.startswith(f"needs {part.what}: hidden by FAIRMT_TEST_HIDE; to get it: "), reason
        assert part.get in reason
    with pytest.raises(KeyError, match="unknown optional part 'fairsek'"):
        needs.missing("fairsek")


def test_a_part_that_is_here_is_not_missing(hidden, tmp_path, monkeypatch):
    hidden("")
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("FAIRMT_TEST_DATA", str(tmp_path / "data"))
    assert needs.missing("data") is None and needs.shared_data_dir() == tmp_path / "data"
    hidden("data")
    assert needs.shared_data_dir() is None and "hidden" in needs.missing("data")


def test_hiding_makes_programs_wordnet_and_modules_unreachable(hidden, tmp_path, monkeypatch):
    hidden("pdflatex,postgresql,wordnet,fairseq")
    env = needs.hide_for_this_run(tmp_path)
    stub = tmp_path / "hidden-bin" / "pdflatex"
    assert env["PATH"].split(os.pathsep)[0] == str(stub.parent)
    assert {"pdflatex", "initdb", "pg_ctl", "postgres", "pg_config"} <= {p.name for p in stub.parent.iterdir()}
    r = subprocess.run(
        ["pdflatex", "x.tex"], check=False, env={**os.environ, "PATH": env["PATH"]}, capture_output=True, text=True
    )
    assert r.returncode == 127 and "hidden by FAIRMT_TEST_HIDE" in r.stderr  # an undeclared use fails
    monkeypatch.setenv("PATH", env["PATH"])
    assert needs.program("pdflatex") is None
    assert not Path(env["WORDNET_DIR"]).exists() and env["FAIRMT_CACHE"].startswith(str(tmp_path))
    finder = needs._HiddenModules({"fairseq"})
    with pytest.raises(ModuleNotFoundError, match="hidden by FAIRMT_TEST_HIDE"):
        finder.find_spec("fairseq.criterions")
    assert finder.find_spec("json") is None
    hidden("pdflatex,nonsense")
    with pytest.raises(pytest.UsageError, match="unknown part"):
        needs.hide_for_this_run(tmp_path)


def test_doc_blocks_read_their_needs_above_or_below_the_marker():
    assert _comments_before("Run it:\n\n<!-- needs: data, fairseq -->\n<!-- run-with: a=1 -->\n\n") == [
        "<!-- needs: data, fairseq -->",
        "<!-- run-with: a=1 -->",
    ]
    assert _comments_before("A sentence.\n<!-- not-runnable: a GPU -->\n") == ["<!-- not-runnable: a GPU -->"]
    seat = {b.line: b for b in blocks(ROOT / "docs" / "benchmarks" / "seat.md")}
    assert all(
        b.needs == ("data",) for b in seat.values() if "--model minilm" in b.code or "evaluate_embeddings" in b.code
    )
    for b in blocks():  # every annotation names a known part
        assert set(b.needs) <= set(needs.PARTS), (b.id, b.needs)


def test_campaign_cases_carry_their_needs_as_a_mark():
    from hostile_campaign import all_cases

    rerun = next(c for c in all_cases() if c.id == "fairseq-prep rerun into its prepared folder")
    marks = rerun.param().marks
    assert rerun.needs == ("fairseq",) and marks[0].name == "needs" and marks[0].args == ("fairseq",)


def test_over_budget_names_each_file_and_its_budget():
    data = {"default_s": 60.0, "files": {"test_a.py": {"measured_s": 10.0, "budget_s": 36.0}}}
    assert time_budget.over_budget({"test_a.py": 40.0, "test_b.py": 61.5, "test_c.py": 5.0}, data) == [
        "test_a.py: 40.0 s, over its budget of 36 s",
        "test_b.py: 61.5 s, over its budget of 60 s (no entry in tests/support/time_budget.json: the default)",
    ]
    slow_s = time_budget.RULE["slow_test_s"]
    rebuilt = time_budget.rebuilt(
        {"test_a.py": 10.0, "test_b.py": 100.0},
        "x",
        {"test_a.py::t1": 0.9 * slow_s, "test_a.py::t2": slow_s, "test_b.py::t[x]": 7.5},
    )
    assert rebuilt["files"]["test_a.py"]["budget_s"] == 36.0 and rebuilt["files"]["test_b.py"]["budget_s"] == 180.0
    assert rebuilt["measured_slow"] == ["test_a.py::t2", "test_b.py::t[x]"]  # slow_test_s or more


def test_the_measured_slow_tests_get_the_slow_mark_and_a_marked_one_keeps_its_own():
    from pytest_standins import CollectedItem

    slow = sorted(time_budget.measured_slow())
    assert slow, "tests/support/time_budget.json lists no measured-slow test"
    items = [CollectedItem(slow[0]), CollectedItem(slow[-1], (), "slow"), CollectedItem("tests/test_x.py::fast")]
    assert time_budget.mark_measured_slow(items) == 1
    assert [[m.name for m in i.marks] for i in items] == [["slow", "measured_slow"], ["slow"], []]
    assert time_budget._own_slow({"slow": 1}) and not time_budget._own_slow({"slow": 1, "measured_slow": 1})


def test_the_committed_budget_covers_the_longest_files():
    data = time_budget.load()
    assert data["default_s"] > 0 and all(e["budget_s"] >= e["measured_s"] for e in data["files"].values())
    assert all(any(TESTS.rglob(name)) for name in data["files"]), "a budget entry for a file that is gone"
    order = time_budget.measured_order()
    assert [data["files"][n]["measured_s"] for n in order] == sorted(
        (e["measured_s"] for e in data["files"].values()), reverse=True
    )


@pytest.mark.slow  # a pytest process of its own
def test_a_run_skips_a_hidden_part_by_name_and_fails_a_file_over_its_budget(tmp_path):
    """A real pytest run: the mark skips with its reason, and FAIRMT_CHECK_BUDGET=1 fails a file over its budget
    (a budget file whose default is 0 s), naming it; FAIRMT_TIME_REPORT gets each file's time."""
    (tmp_path / "budget.json").write_text(
        json.dumps({"default_s": 0.0, "files": {}, "measured_slow": ["test_x.py::test_b"]})
    )
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(TESTS / "support")!r})
        import needs, time_budget
        time_budget.BUDGET_FILE = Path({str(tmp_path / "budget.json")!r})

        def pytest_configure(config):
            config.addinivalue_line("markers", "needs(*parts): optional parts")
            config.addinivalue_line("markers", "slow: slow")
            config.addinivalue_line("markers", "measured_slow: slow by its time")
            config.pluginmanager.register(time_budget.Recorder(config), "fairmt-time-budget")

        def pytest_collection_modifyitems(config, items):
            time_budget.mark_measured_slow(items)
            needs.skip_missing(items)
        """)
    )
    (tmp_path / "test_x.py").write_text(
        "import pytest, time\n\n@pytest.mark.needs('pdflatex')\ndef test_a():\n"
        "    raise AssertionError('ran')\n\ndef test_b():\n    time.sleep(0.3)\n\n"
        "@pytest.mark.slow\ndef test_c():\n    pass\n"
    )
    env = {
        **os.environ,
        "FAIRMT_TEST_HIDE": "pdflatex",
        "FAIRMT_CHECK_BUDGET": "1",
        "FAIRMT_TIME_REPORT": str(tmp_path / "times.json"),
        "PYTHONPATH": str(ROOT),
    }
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", "-p", "no:randomly", "test_x.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "SKIPPED [1] test_x.py:3: needs pdflatex with booktabs: hidden by FAIRMT_TEST_HIDE" in r.stdout, r.stdout
    assert "2 passed, 1 skipped" in r.stdout
    assert "test files over their time budget" in r.stdout and re.search(
        r"test_x\.py: 0\.\d s, over its budget of 0 s", r.stdout
    )
    times = json.loads((tmp_path / "times.json").read_text())
    assert set(times["files"]) == set(times["not_slow"]) == {"test_x.py"}
    assert set(times["slowest_not_slow_tests"]) == {"test_x.py::test_a"}  # test_c: slow; test_b: measured slow
    assert set(times["unmarked_tests"]) == {"test_x.py::test_b"}  # not slow in its source, 0.3 s: stays listed
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-m",
            "not slow",
            "test_x.py",
        ],
        cwd=tmp_path,
        env={**env, "FAIRMT_CHECK_BUDGET": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "1 skipped, 2 deselected" in r.stdout, r.stdout + r.stderr  # the inner loop leaves test_b out too


def test_the_development_page_states_the_budget_rule_and_the_parts():
    page = " ".join((ROOT / "docs" / "development.md").read_text(encoding="utf-8").split())
    rule = time_budget.RULE
    assert f"seconds × {rule['headroom']:g} + {rule['slack_s']:g} s, at least {rule['floor_s']:g} s" in page
    assert f"its `measured_slow` list ({rule['slow_test_s']:g} s or more)" in page
    assert f"tests without the mark that took {rule['slow_test_s']:g} s or more" in page
    listed = page.split("(parts: ", 1)[1].split(";", 1)[0]
    assert [p.strip(" `") for p in listed.split(",")] == list(needs.PARTS)
    assert time_budget.load()["default_s"] == rule["default_s"]
