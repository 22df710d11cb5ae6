"""Issue 52: every string from a result file or an argument is data in every output of ``fairmt report``. One table of
hostile run names (raw HTML, a newline and a forged heading, an OSC title escape and the bell, mathtext, a pipe, a
backslash and LaTeX's specials) goes through the terminal, Markdown (rendered by markdown-it: no HTML, no heading, one
row per run), LaTeX (compiled by pdflatex), the figures (matplotlib: no mathtext error) and the HTML page (headless
Chromium: no script but the page's own runs, no dialog, the names shown as text). Each format has one escaping
function, :mod:`fairmt.eval.reporting.escape`; the unit checks below pin what each makes of the same string."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import needs
from fairmt.cli import main
from fairmt.eval.reporting import escape

HOSTILE = "<img src=x onerror=alert(1)>\n# heading\x1b]0;x\x07$\\frac{$|\\%&_{}"
NAMES = [HOSTILE, "[link](javascript:alert(2)) ~~s~~ `x` **b** - 1. > q Müller-Łódź Ærø Straße i\u0301"]


def _mt(name: str, acc: tuple[float, float], bleu: float) -> dict:
    """An `eval mt-bias` result (format 1) named ``name``: WinoMT de and fr (per-language bars), FLORES de."""
    per = {
        lang: {
            "accuracy": a,
            "delta_g_acc": 8.0,
            "delta_s": 4.0,
            "signature": f"winomt|v:1|lang:{lang}|compat:none|fairmt:0.1",
        }
        for lang, a in zip(("de", "fr"), acc)
    }
    return {
        "format": 1,
        "settings": {"name": name, "compat": None},
        "winomt": per,
        "flores": {"de": {"spbleu": bleu, "chrfpp": 55.0, "bleu_signature": "nrefs:1|tok:flores200"}},
    }


@pytest.fixture()
def hostile(tmp_path) -> list[str]:
    files = []
    for i, name in enumerate(NAMES):
        p = tmp_path / f"run{i}" / "result.json"
        p.parent.mkdir()
        p.write_text(json.dumps(_mt(name, (60.0 + i, 55.0 - i), 30.0 + i)), encoding="utf-8")
        files.append(str(p))
    return files


def test_each_format_has_one_escaping_function():
    assert escape.terminal(HOSTILE) == "<img src=x onerror=alert(1)>\\n# heading\\x1b]0;x\\x07$\\frac{$|\\%&_{}"
    assert escape.terminal("a\u202eb\x9bc\td") == "a\\u202eb\\x9bc\\td"  # bidi override, C1 CSI, tab
    assert escape.markdown(HOSTILE) == (
        "&lt;img src=x onerror=alert(1)&gt;\\\\n\\# heading\\\\x1b\\]0;x\\\\x07\\$\\\\frac{\\$\\|\\\\%&amp;\\_{}"
    )
    assert [escape.markdown(s) for s in ("- x", "1. x", "1.5", "-1.3", "> q", "===")] == [
        "\\- x",
        "1\\. x",
        "1.5",
        "-1.3",
        "&gt; q",
        "\\===",
    ]
    assert escape.markdown_code("a`b|c") == "``a`b\\|c``"
    assert (
        escape.latex('<[x]>|"~^') == "\\textless{}{[}x{]}\\textgreater{}\\textbar{}\\textquotedbl{}"
        "\\textasciitilde{}\\textasciicircum{}"
    )
    assert escape.html(HOSTILE).startswith("&lt;img src=x onerror=alert(1)&gt;\\n# heading\\x1b")
    assert escape.html("\"'") == "&quot;&#x27;"
    assert escape.latex("Müller Łódź ß Ærø ñ i\u0301 İ ą 北京") == (
        "M\\\"{u}ller \\L{}\\'{o}d\\'{z} \\ss{} \\AE{}r\\o{} \\~{n} \\'{\\i} \\.{I} ? ??"
    )
    assert escape.mpl("$\\frac{$") == "\\$\\frac{\\$" and escape.mpl("_hidden") == " _hidden"
    marked = escape.Marked("a|b is ", escape.Marked.code("x`y"), ".")
    assert marked == "a|b is `x`y`." and escape.markdown(marked) == "a\\|b is ``x`y``."


def test_markdown_renders_every_string_as_its_own_text():
    """What CommonMark + GFM tables make of each escaped string is the string itself (as the terminal shows it):
    no element, no entity left over, in a paragraph and in a table cell."""
    MarkdownIt = pytest.importorskip("markdown_it", reason="pip install 'fairmt[report]'").MarkdownIt

    md = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    for s in [*NAMES, "*a* _b_ <b>c</b> &amp; \\* [x]: y", "| a | b |", "~~~", "```", "---", "+ a", "#"]:
        want = escape.terminal(s)
        para = md.parseInline(escape.markdown(s))[0].children
        assert [t.type for t in para] == ["text"] * len(para) and "".join(t.content for t in para) == want, s
        html = md.render(f"| run | x |\n|---|---:|\n| {escape.markdown(s)} | 1 |\n")
        assert html.count("<td>") == 1 and html.count("<tr>") == 2, s


def test_terminal_markdown_json_latex_and_figures_keep_the_names_as_text(hostile, tmp_path, capsys):
    MarkdownIt = pytest.importorskip("markdown_it", reason="pip install 'fairmt[report]'").MarkdownIt

    md_path, tex, js = tmp_path / "r.md", tmp_path / "r.tex", tmp_path / "r.json"
    assert (
        main(
            [
                "report",
                *hostile,
                "--markdown",
                str(md_path),
                "--latex",
                str(tex),
                "--latex-standalone",
                "--json",
                str(js),
                "--plot",
                str(tmp_path / "fig.png"),
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    for stream in (out, err):  # the terminal: no escape, no bell, no forged line
        assert "\x1b" not in stream and "\x07" not in stream
        assert not any(line.startswith("# heading") for line in stream.splitlines())
    assert escape.terminal(HOSTILE) in out
    # JSON: the names exactly as the files hold them
    rows = json.loads(js.read_text())["tables"][0]["rows"]
    assert [r["name"] for r in rows] == NAMES
    # Markdown: one row per run, no HTML, no heading but the report's own, no link
    text = md_path.read_text()
    rendered = MarkdownIt("commonmark").enable("table").enable("strikethrough").render(text)
    assert "<img" not in rendered and "<a " not in rendered and "<s>" not in rendered and "<code>x" not in rendered
    assert [x for x in rendered.splitlines() if x.startswith("<h")] == [
        "<h1>fairmt report</h1>",
        "<h2>Machine translation: gender accuracy and quality (Lee et al., Tables 2–3)</h2>",
    ]
    body = rendered.split("<tbody>")[1].split("</tbody>")[0]
    assert body.count("<tr>") == 2 and "&lt;img src=x onerror=alert(1)&gt;\\n# heading\\x1b]0;x\\x07$\\frac{$|" in body
    # figures: drawn with the names as plain text (no mathtext parse error)
    assert sorted(p.name for p in tmp_path.glob("fig-*.png")) == ["fig-mt-bars.png", "fig-mt-tradeoff.png"]
    # LaTeX: compiles
    needs.require("pdflatex", who="the LaTeX part (the other formats were checked)")
    pdflatex = needs.program("pdflatex")
    run = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", tex.name],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "openout_any": "p"},
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "r.pdf").stat().st_size > 1000


@pytest.mark.needs("chromium")
def test_html_page_runs_only_its_own_script_in_chromium(hostile, tmp_path):
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install 'fairmt[report]')"
    )
    from test_report_browser import ARGS, CHROMIUM

    page_file = tmp_path / "r.html"
    assert main(["report", *hostile, "--html", str(page_file), "--title", HOSTILE]) == 0
    text = page_file.read_text()
    assert "'unsafe-inline'" not in text.split("script-src", 1)[1].split(";", 1)[0]
    assert "<img" not in text
    dialogs, errors = [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            page.wait_for_timeout(300)
            assert page.locator("img").count() == 0 and page.locator("a").count() == 0
            names = page.locator("section#mt tbody summary").all_inner_texts()
            assert names == [escape.terminal(n) for n in NAMES]
            page.locator("section#mt details summary").first.click()
            lines = page.locator("section#mt details[open] pre").first.inner_text().splitlines()
            assert lines[0].startswith("source: ") and lines[1].startswith("signature ")  # one setting a line
            assert page.title() == escape.terminal(HOSTILE)
            header = page.locator("section#mt thead tr.measures th").nth(1)
            header.click()  # the page's own script runs (allowed by its hash): the column sorts
            assert header.get_attribute("aria-sort") == "ascending"
            # a script injected into the page is blocked by the CSP
            blocked = page.evaluate("""() => new Promise(done => {
                window.__ran = false;
                document.addEventListener('securitypolicyviolation', () => done(!window.__ran), {once: true});
                const s = document.createElement('script'); s.textContent = 'window.__ran = true';
                document.body.appendChild(s);
                setTimeout(() => done(!window.__ran), 500);
            })""")
            assert blocked is True
        finally:
            browser.close()
    assert dialogs == []
    assert [e for e in errors if "Content Security Policy" not in e] == []


def test_mt_bias_markdown_and_sweep_markdown_keep_names_as_text():
    """`fairmt eval mt-bias`'s Markdown (its tables and its comparison) and the eval commands' tables
    (:func:`fairmt.eval.report.markdown_table`) write names through the same function."""
    MarkdownIt = pytest.importorskip("markdown_it", reason="pip install 'fairmt[report]'").MarkdownIt

    from fairmt.eval import mtbias
    from fairmt.eval.report import markdown_table

    md = MarkdownIt("commonmark").enable("table")
    data = [_mt(n, (60.0, 55.0), 30.0) for n in NAMES]
    texts = [
        mtbias.markdown_tables(data[0], name=HOSTILE),
        mtbias.comparison_markdown(mtbias.compare_runs(data, NAMES)),
        markdown_table(
            [{"run": n, "value": 1.0, "note": "**kept**"} for n in NAMES], ["run", "value", "note"], markup=["note"]
        ),
    ]
    for text in texts:
        html = md.render(text)
        assert "<img" not in html and "<h1>" not in html and "<a " not in html and "<code>x" not in html
        assert "&lt;img src=x onerror=alert(1)&gt;\\n# heading" in html
    assert "<strong>kept</strong>" in md.render(texts[2])  # the caller's own Markdown stays Markdown


def test_an_error_naming_a_hostile_run_is_one_escaped_line(tmp_path, capsys):
    """A refusal that names a run (scored differently) is the one ``fairmt: error:`` line, its control characters
    shown escaped: no newline splits it, no escape sequence reaches the terminal."""
    a, b = _mt(HOSTILE, (60.0, 55.0), 30.0), _mt("other", (60.0, 55.0), 30.0)
    b["flores"]["de"]["bleu_signature"] = "nrefs:1|tok:13a"
    files = [_write_json(tmp_path / "a.json", a), _write_json(tmp_path / "b.json", b)]
    assert main(["report", *files]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("fairmt: error: other was scored differently from <img")
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;x\\x07" in err


def _write_json(path: Path, data: dict) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_sweep_markdown_keeps_recipe_names_and_overrides_as_text():
    """sweep.md: the recipe path, fixed overrides, override values and run folder (from a recipe or the command line)
    are text or unbreakable code spans; the sweep's own Markdown (bold marks, its headings) stays."""
    MarkdownIt = pytest.importorskip("markdown_it", reason="pip install 'fairmt[report]'").MarkdownIt

    from fairmt.sweep.report import render_markdown

    bad = "x`</code><img src=x onerror=alert(1)>\n# heading"
    setting = {
        "id": "s1",
        "overrides": {"objective_args.name": bad},
        "n": 2,
        "mean": {"dev.accuracy": 0.5},
        "std": {"dev.accuracy": 0.1},
        "seeds": [0, 1],
    }
    report = {
        "recipe": bad,
        "mode": "grid",
        "settings": [setting],
        "seeds": [0, 1],
        "overrides": [f"a={bad}"],
        "runs_finished": 2,
        "runs_expected": 2,
        "objectives": [{"metric": "dev.accuracy"}],
        "tradeoff": [{"metric": "dev.accuracy", "direction": "maximize"}],
        "pareto": {},
        "selected": {
            "setting": "s1",
            "overrides": setting["overrides"],
            "n": 2,
            "run": bad,
            "seed": 0,
            "model_dir": bad,
            "test": {"mean": {}, "std": {}},
        },
        "selection": {"rule": "accuracy", "by_rule": {"accuracy": {"setting": "s1"}}},
    }
    text = render_markdown(report)
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<img" not in html and html.count("<h1>") == 1 and html.count("<h2>") == 1
    assert html.startswith("<h1>Sweep of <code>x`&lt;/code&gt;&lt;img") and "<strong>selected</strong>" in html
    assert "&lt;/code&gt;&lt;img src=x onerror=alert(1)&gt;\\n# heading" in html
