"""The report's outputs from its tables: terminal text, Markdown, JSON, LaTeX (booktabs), figures (matplotlib) and
one self-contained HTML page (inline CSS and JavaScript, the figures as inline SVG; nothing fetched)."""

from __future__ import annotations

import base64
import hashlib
import io
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fairmt.eval.reporting import escape
from fairmt.eval.reporting.tables import Measure, Table, describe_scale, groups_of, table_json


def _version() -> str:
    from fairmt import __version__

    return str(__version__)


def _cells(t: Table, i: int, pm: str = " ± ") -> list[str]:
    return [
        t.cell(i, m, pm) + (" †" if m.key in t.marks[i] and t.rows[i].values.get(m.key) is not None else "")
        for m in t.columns
    ]


# ------------------------------------------------------------------------------------------------ text, Markdown
def text_report(tables: list[Table]) -> str:
    """Aligned plain-text tables for the terminal: a group line above the measure line."""
    out = []
    for t in tables:
        head = ["run"] + [escape.terminal(t.header(m)) for m in t.columns]
        groups = [""] + [escape.terminal(m.group) for m in t.columns]
        body = [[escape.terminal(r.name)] + [escape.terminal(c) for c in _cells(t, i)] for i, r in enumerate(t.rows)]
        widths = [max(len(x[j]) for x in [head, groups, *body]) for j in range(len(head))]
        grp = []
        for j, g in enumerate(groups):
            grp.append((g if j == 0 or groups[j - 1] != g else "").ljust(widths[j]))
        lines = [
            t.family.title,
            describe_scale(t),
            "  ".join(grp).rstrip(),
            "  ".join(h.rjust(w) if j else h.ljust(w) for j, (h, w) in enumerate(zip(head, widths))),
            "  ".join("-" * w for w in widths),
        ]
        lines += [
            "  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(row, widths))) for row in body
        ]
        lines += [escape.terminal(n) for n in t.notes]
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


_md = escape.markdown


def markdown_report(tables: list[Table]) -> str:
    out = [f"# fairmt report\n\nfairmt {_version()}, {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}.\n"]
    for t in tables:
        best = t.best()
        head = "| run | " + " | ".join(_md(f"{m.group}: {t.header(m)}") for m in t.columns) + " |"
        sep = "|---|" + "---:|" * len(t.columns)
        body = []
        for i, r in enumerate(t.rows):
            cells = [_md(c) for c in _cells(t, i)]
            cells = [f"**{c}**" if i in best.get(m.key, ()) else c for c, m in zip(cells, t.columns)]
            body.append(f"| {_md(r.name)} | " + " | ".join(cells) + " |")
        notes = ""
        if t.notes:
            marked = [n for n in t.notes if n.startswith("†")]
            other = [n for n in t.notes if not n.startswith("†")]
            if marked:
                notes += (
                    "\n**† Scored under different settings from the first run — these numbers are not "
                    "comparable as they stand:**\n\n" + "\n".join(f"- {_md(n)}" for n in marked) + "\n"
                )
            if other:
                notes += "\n" + "\n".join(f"- {_md(n)}" for n in other) + "\n"
        out.append(
            f"## {_md(t.family.title)}\n\n{_md(describe_scale(t))} Bold: the best value of a column.\n\n"
            + "\n".join([head, sep, *body])
            + "\n"
            + notes
        )
    return "\n".join(out)


def json_report(tables: list[Table]) -> dict[str, Any]:
    return {
        "format": "fairmt-report/1",
        "fairmt": _version(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "tables": [table_json(t) for t in tables],
    }


# ------------------------------------------------------------------------------------------------ LaTeX
tex = escape.latex  # the one LaTeX escaping (fairmt.eval.reporting.escape)


def latex_report(tables: list[Table], standalone: bool = False) -> str:
    """One booktabs ``table`` per family: a spanning header per measure group (``\\cmidrule``), the measures with
    their direction and unit, mean$\\pm$std cells, the best value per column in bold where the direction is known,
    † on cells scored under other settings and the differences in the caption's notes. ``standalone``: a whole
    document (``\\documentclass{article}`` + booktabs) that compiles on its own."""
    parts = []
    for t in tables:
        best = t.best()
        n = len(t.columns)
        wide = n > 8  # scaled to the text width (graphicx), as a wide paper table is
        lines = (
            [r"\begin{table}[ht]", r"\centering", r"\small"]
            + ([r"\resizebox{\linewidth}{!}{%"] if wide else [])
            + [r"\begin{tabular}{l" + "r" * n + "}", r"\toprule"]
        )
        spans, rules, col = [], [], 2
        for g, w in groups_of(t.columns):
            spans.append(rf"\multicolumn{{{w}}}{{c}}{{{tex(g)}}}")
            rules.append(rf"\cmidrule(lr){{{col}-{col + w - 1}}}")
            col += w
        lines.append(" & " + " & ".join(spans) + r" \\")
        lines.append(" ".join(rules))
        lines.append("Run & " + " & ".join(tex(t.header(m)) for m in t.columns) + r" \\")
        lines.append(r"\midrule")
        for i, r in enumerate(t.rows):
            cells = []
            for m in t.columns:
                c = tex(t.cell(i, m, pm="±"))
                if i in best.get(m.key, ()):
                    c = rf"\textbf{{{c}}}"
                if m.key in t.marks[i] and r.values.get(m.key) is not None:
                    c += r"$^\dagger$"
                cells.append(c)
            lines.append(tex(r.name) + " & " + " & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}" + ("}" if wide else "")]
        caption = f"{t.family.title}. {describe_scale(t)} Bold: best per column."
        lines.append(rf"\caption{{{tex(caption)}}}")
        lines.append(rf"\label{{tab:fairmt-{t.family.key}}}")
        if t.notes:
            lines.append(r"\par\smallskip\footnotesize " + r" \\ ".join(tex(x) for x in t.notes))
        lines.append(r"\end{table}")
        parts.append("\n".join(lines))
    body = "\n\n".join(parts) + "\n"
    if standalone:
        return (
            "\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n"
            "\\usepackage[margin=1cm,landscape]{geometry}\n\\begin{document}\n" + body + "\\end{document}\n"
        )
    return "% fairmt report: needs \\usepackage{booktabs} (and graphicx for \\resizebox)\n" + body


# ------------------------------------------------------------------------------------------------ figures
def _axis_label(t: Table, m: Measure) -> str:
    unit = t.unit(m)
    better = {"max": "higher is better", "min": "lower is better"}.get(m.direction or "", "")
    return f"{m.group} {m.label}" + (f" ({unit})" if unit else "") + (f" — {better}" if better else "")


_AXES = {
    "mt": (
        ("winomt_acc", "geneval_e_acc", "geneval_abs_dg"),
        ("bleu", "bleu_star", "chrfpp", "geneval_chrfpp", "geneval_acc"),
    ),
    "classification": (("gap", "delta_eo"), ("accuracy", "macro_f1", "f1")),
    "embeddings": (
        ("seat_avg_abs", "cced_gap", "bias_ir_avg_dev"),
        ("utility_spearman", "glue_avg", "utility_nn1", "stereoset_lms", "cced_gap", "bias_ir_avg_dev"),
    ),
}


def _tradeoff_axes(t: Table) -> tuple[str, str] | None:
    """The (fairness x, performance y) measures of the table's trade-off figure: the first of the family's
    candidates that the table has (MT: WinoMT accuracy against spBLEU as Lee et al.'s Figure 3, else chrF++, else
    MT-GenEval; classification: GAP against accuracy; embeddings: SEAT against utility; probes: the first target's
    GAP against its accuracy)."""
    have = {m.key for m in t.columns}
    if t.family.key == "probe":
        gap = next((k for k in have if k.startswith("probe:") and k.endswith(":gap")), None)
        return (gap, gap[: -len("gap")] + "accuracy") if gap and gap[: -len("gap")] + "accuracy" in have else None
    if t.family.tradeoff is None or t.family.key not in _AXES:
        return None
    xs, ys = _AXES[t.family.key]
    x = next((k for k in xs if k in have), None)
    y = next((k for k in ys if k in have and k != x), None)
    return (x, y) if x and y else None


def tradeoff_figure(t: Table):
    """Fairness (x) against performance (y), one point per row with ± std error bars, one colour and marker per
    method/sweep, each point labelled by its name (a sweep setting by its values, ``β=0.1``). None when the
    family has no trade-off or fewer than one row has both numbers."""
    axes = _tradeoff_axes(t)
    if axes is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xk, yk = axes
    cols = {m.key: m for m in t.columns}
    pts = [r for r in t.rows if r.values.get(xk) is not None and r.values.get(yk) is not None]
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    groups = list(dict.fromkeys(r.group or r.method or r.name for r in pts))
    markers = "osD^v<>phX*"
    for gi, g in enumerate(groups):
        rs = [r for r in pts if (r.group or r.method or r.name) == g]
        xs = [x for r in rs if (x := r.values[xk]) is not None]  # all there: pts has both numbers
        ys = [y for r in rs if (y := r.values[yk]) is not None]
        ax.errorbar(
            xs,
            ys,
            xerr=[r.std.get(xk) or 0.0 for r in rs],
            yerr=[r.std.get(yk) or 0.0 for r in rs],
            fmt=markers[gi % len(markers)],
            capsize=3,
            label=escape.mpl(g),
            alpha=0.9,
        )
        for r in rs:
            label = r.name[len(g) :].strip() if r.name.startswith(g) and r.name != g else r.name
            ax.annotate(
                escape.mpl(label), (r.values[xk], r.values[yk]), textcoords="offset points", xytext=(4, 4), fontsize=7
            )
    ax.set_xlabel(escape.mpl(_axis_label(t, cols[xk])))
    ax.set_ylabel(escape.mpl(_axis_label(t, cols[yk])))
    ax.set_title(
        f"{t.family.title.split(':')[0]}: trade-off ({len(pts)} point{'s' if len(pts) != 1 else ''}; "
        "bars: ± std over seeds)",
        fontsize="medium",
    )
    ax.grid(linewidth=0.3, alpha=0.5)
    if len(groups) > 1:
        ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def bars_figure(t: Table):
    """The family's per-item measures (WinoMT accuracy per language, SEAT effect size per test, GAP per class) as
    grouped bars, one bar per row, ± std where there is one; None when the table has none."""
    cols = [m for m in t.columns if m.group == t.family.bars] if t.family.bars else []
    if not cols:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(t.rows)
    width = 0.8 / max(n, 1)
    fig, ax = plt.subplots(figsize=(min(11.0, max(5.0, 0.5 * len(cols) * n + 2.5)), 4.0))
    for k, r in enumerate(t.rows):
        xs = [j + (k - (n - 1) / 2) * width for j in range(len(cols))]
        hs = [math.nan if (h := r.values.get(m.key)) is None else h for m in cols]
        ax.bar(xs, hs, width, yerr=[r.std.get(m.key) or 0.0 for m in cols], capsize=2, label=escape.mpl(r.name))
    ax.set_xticks(range(len(cols)), [escape.mpl(m.label) for m in cols], rotation=30 if len(cols) > 8 else 0)
    unit = t.unit(cols[0])
    ax.set_ylabel(escape.mpl(f"{cols[0].group}" + (f" ({unit})" if unit else "")))
    ax.axhline(0, color="black", linewidth=0.6)
    ax.grid(axis="y", linewidth=0.3, alpha=0.5)
    ax.set_title(escape.mpl(f"{t.family.title.split(':')[0]}: {cols[0].group}"), fontsize="medium")
    ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def figures(tables: list[Table]) -> list[tuple[str, str, Any]]:
    """``(name, title, figure)`` for every figure the tables allow: ``<family>-tradeoff`` and ``<family>-bars``."""
    out = []
    for t in tables:
        for kind, make in (("tradeoff", tradeoff_figure), ("bars", bars_figure)):
            fig = make(t)
            if fig is not None:
                out.append((f"{t.family.key}-{kind}", f"{t.family.title}: {kind}", fig))
    return out


def missing_points(tables: list[Table]) -> list[str]:
    """One line per row a trade-off figure leaves out (it lacks one of the two measures)."""
    out = []
    for t in tables:
        axes = _tradeoff_axes(t)
        if axes is None:
            continue
        cols = {m.key: m for m in t.columns}
        for r in t.rows:
            lacks = [f"{cols[k].group} {cols[k].label}" if k in cols else k for k in axes if r.values.get(k) is None]
            if lacks:
                out.append(f"{r.name}: no " + " and no ".join(lacks))
    return out


def write_figures(tables: list[Table], path: str | Path) -> tuple[list[Path], list[str]]:
    """Every figure as ``<stem>-<family>-<kind><suffix>`` beside ``path`` (format from its suffix); returns the
    files written and one line per point left out of a trade-off figure (:func:`missing_points`)."""
    from fairmt.eval.report import NothingToPlot, save_figure_atomic

    path = Path(path)
    figs = figures(tables)
    if not figs:
        raise NothingToPlot(
            "no table has a row with both trade-off measures, nor per-language/per-test measures"
            + ("".join(f"; {x}" for x in missing_points(tables)[:3]))
        )
    written = []
    for name, _, fig in figs:
        out = path.with_name(f"{path.stem}-{name}{path.suffix}")
        save_figure_atomic(fig, out)
        written.append(out)
    return written, missing_points(tables)


def svg_text(fig) -> str:
    """A figure as inline SVG for an HTML page: the XML prolog, DOCTYPE, metadata and namespace URLs removed (an
    inline ``<svg>`` needs none of them; text is drawn as paths, so no font is fetched)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(
        buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None, "Format": None, "Type": None}
    )
    plt.close(fig)
    s = buf.getvalue()
    s = re.sub(r"<\?xml[^>]*\?>\s*", "", s)
    s = re.sub(r"<!DOCTYPE[^>]*>\s*", "", s, flags=re.S)
    s = re.sub(r"<metadata>.*?</metadata>\s*", "", s, flags=re.S)
    s = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", s)
    s = s.replace("xlink:href=", "href=")
    return s.strip()


# ------------------------------------------------------------------------------------------------ HTML
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem;color:#222;max-width:100rem}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{padding:.25rem .6rem;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
thead tr.groups th{border-bottom:1px solid #888;text-align:center}
thead tr.measures th{cursor:pointer;user-select:none;background:#f4f4f4}
thead tr.measures th[aria-sort=ascending]::after{content:" \\25B2"}
thead tr.measures th[aria-sort=descending]::after{content:" \\25BC"}
td.best{font-weight:bold}td.mixed{background:#fff3cd}
.scale{color:#555;font-size:.85rem}.notes{font-size:.85rem;color:#7a4b00}
details{margin:.3rem 0;font-size:.85rem}details pre{background:#f7f7f7;padding:.4rem;overflow:auto}
figure{margin:1rem 0}figure svg{max-width:100%;height:auto}
footer{margin-top:2rem;color:#666;font-size:.8rem}
"""

_JS = """
(function(){
  function key(td){var v=td.getAttribute('data-value');if(v===null||v===''){return null;}return parseFloat(v);}
  document.querySelectorAll('table.report').forEach(function(table){
    var heads=table.querySelectorAll('thead tr.measures th');
    heads.forEach(function(th,idx){
      th.addEventListener('click',function(){
        var asc=th.getAttribute('aria-sort')!=='ascending';
        heads.forEach(function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){
          var x=a.cells[idx],y=b.cells[idx];
          if(idx===0){return (asc?1:-1)*x.textContent.localeCompare(y.textContent);}
          var p=key(x),q=key(y);
          if(p===null&&q===null){return 0;} if(p===null){return 1;} if(q===null){return -1;}
          return asc?p-q:q-p;
        });
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
})();
"""


_e = escape.html


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script (``'sha256-…'``) and no other: the page's only script
    runs, one injected into it would not (no ``'unsafe-inline'``)."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


def html_report(tables: list[Table], title: str = "fairmt report") -> str:
    """One self-contained page: per family a sortable table (click a header), the run's settings and signatures
    in a details block, the notes, and the figures as inline SVG; the fairmt version and date at the foot."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    figs: dict[str, list[tuple[str, str]]] = {}
    for name, caption, fig in figures(tables):
        figs.setdefault(name.split("-")[0], []).append((caption, svg_text(fig)))
    body = [f"<h1>{_e(title)}</h1>"]
    for t in tables:
        best = t.best()
        body.append(f'<section id="{_e(t.family.key)}"><h2>{_e(t.family.title)}</h2>')
        body.append(
            f'<p class="scale">{_e(describe_scale(t))} Bold: best per column. Click a column header to sort.</p>'
        )
        groups = "".join(f'<th colspan="{w}">{_e(g)}</th>' for g, w in groups_of(t.columns))
        heads = "".join(f'<th scope="col" title="{_e(m.group)}">{_e(t.header(m))}</th>' for m in t.columns)
        rows = []
        for i, r in enumerate(t.rows):
            cells = []
            for m in t.columns:
                v = r.values.get(m.key)
                cls = " ".join(
                    c
                    for c, on in (("best", i in best.get(m.key, ())), ("mixed", m.key in t.marks[i] and v is not None))
                    if on
                )
                mark = " †" if m.key in t.marks[i] and v is not None else ""
                cells.append(
                    f'<td data-value="{"" if v is None else repr(float(v))}"'
                    f"{f' class={chr(34)}{cls}{chr(34)}' if cls else ''}>{_e(t.cell(i, m))}{mark}</td>"
                )
            details = "\n".join(
                _e(x)
                for x in [f"{k}: {v}" for k, v in r.settings.items()]
                + [f"source: {r.source}"]
                + [f"signature {k}: {v}" for k, v in r.signatures.items()]
            )  # one line each
            rows.append(
                f'<tr><td data-value=""><details><summary>{_e(r.name)}</summary><pre>{details}</pre>'
                f"</details></td>{''.join(cells)}</tr>"
            )
        body.append(
            f'<table class="report"><thead><tr class="groups"><th></th>{groups}</tr>'
            f'<tr class="measures"><th scope="col">run</th>{heads}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
        if t.notes:
            body.append('<ul class="notes">' + "".join(f"<li>{_e(n)}</li>" for n in t.notes) + "</ul>")
        for caption, svg in figs.get(t.family.key, []):
            body.append(f"<figure>{svg}<figcaption>{_e(caption)}</figcaption></figure>")
        body.append("</section>")
    body.append(f"<footer>fairmt {_e(_version())} &middot; {_e(when)}</footer>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        f'script-src {script_hash(_JS)}; img-src data:">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(body)
        + f"\n<script>{_JS}</script>\n</body></html>\n"
    )
