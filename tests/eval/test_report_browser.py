"""`fairmt report --html` in a real browser (issue 40): headless Chromium (Debian's ``chromium`` package) driven by
Playwright for Python opens the page from disk, sees the tables and the figures render, sorts a column by clicking its
header, and sees no console error and no network request. The screenshot is kept in the test's tmp folder (and in
``$FAIRMT_TEST_ARTIFACTS`` when set).

Skipped, with the reason, where Playwright or Chromium is missing (``apt-get install chromium``; Playwright's own
browser download is never used)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import needs
from fairmt.cli import main

FIX = Path(__file__).parents[1] / "fixtures" / "report"
CHROMIUM = needs.program("chromium")  # FAIRMT_CHROMIUM, else chromium on the PATH (tests/support/needs.py)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("html")
    mt = tmp / "mt.json"
    mt.write_text(
        json.dumps(
            {
                "format": 1,
                "settings": {"name": "google", "compat": None},
                "winomt": {
                    "de": {"accuracy": 60.0, "delta_g_acc": 8.0, "delta_s": 4.0},
                    "fr": {"accuracy": 55.0, "delta_g_acc": 6.0, "delta_s": 3.0},
                },
                "flores": {"de": {"spbleu": 31.0, "chrfpp": 55.0}},
            }
        )
    )
    out = tmp / "report.html"
    files = [
        mt,
        *(FIX / f"classification_{n}_results.json" for n in ("adversarial", "fcl", "inlp")),
        FIX / "sampling_fair_results.json",
        FIX / "dpce_results.json",
    ]
    assert main(["report", *map(str, files), "--html", str(out)]) == 0
    return out


@pytest.mark.needs("chromium")
def test_report_page_renders_sorts_and_stays_offline_in_chromium(page_file, tmp_path):
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install 'fairmt[report]')"
    )
    url = page_file.resolve().as_uri()
    errors: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url, wait_until="load")
            tables = page.locator("table.report")
            assert tables.count() == 4
            for i in range(tables.count()):
                box = tables.nth(i).bounding_box()
                assert box and box["width"] > 100 and box["height"] > 40
            svgs = page.locator("figure svg")
            assert svgs.count() >= 3
            for i in range(svgs.count()):
                box = svgs.nth(i).bounding_box()
                assert box and box["width"] > 200 and box["height"] > 150
                assert svgs.nth(i).locator("path").count() > 10  # drawn, not an empty frame
            # sort the classification table by accuracy: ascending, then descending on a second click
            cls = page.locator("section#classification table.report")
            header = cls.locator("thead tr.measures th", has_text="Acc.").first
            col = int(header.evaluate("th => th.cellIndex"))

            def column() -> list[float]:
                return [
                    float(v)
                    for v in cls.locator(f"tbody tr td:nth-child({col + 1})").evaluate_all(
                        "tds => tds.map(td => td.getAttribute('data-value'))"
                    )
                ]

            before = column()
            header.click()
            assert column() == sorted(before) and header.get_attribute("aria-sort") == "ascending"
            header.click()
            assert column() == sorted(before, reverse=True) and header.get_attribute("aria-sort") == "descending"
            # the settings and signatures of a run open in its details block
            page.locator("section#classification details summary").first.click()
            assert "signature" in page.locator("section#classification details[open] pre").first.inner_text()
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    if os.environ.get("FAIRMT_TEST_ARTIFACTS"):
        dest = Path(os.environ["FAIRMT_TEST_ARTIFACTS"])
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, dest / "report-html.png")
    print(f"screenshot: {shot}")
    assert errors == []
    assert requests == [url], requests  # the page itself, nothing else
