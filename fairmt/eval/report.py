"""Reporting helpers shared by the evaluators: JSON, Markdown tables, readable console tables, bar charts.

Results are dataclasses; ``as_dict`` turns one (or a plain dict) into JSON-ready data. Tables take a list of
row dicts and the columns to show, so every evaluator prints and writes results the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError


def as_dict(result: Any) -> dict:
    """A dataclass (possibly nested) or mapping as a JSON-ready dict."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    if isinstance(result, dict):
        return dict(result)
    raise TypeError(f"cannot serialise {type(result).__name__}")


def write_text_atomic(path: str | Path, text: str, what: str = "output") -> None:
    """Write ``text`` to ``path`` through fairmt's one writer (:func:`fairmt.outputs.write_file`: a temporary file in
    the same folder, fsync, an atomic rename): a reader, or a second run writing the same output path, sees the old
    file or the new one, never a mix or a torn file; a full disk is one line naming the file and the free space."""
    from fairmt.outputs import write_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, text, what=what)


def write_json(result: Any, path: str | Path) -> None:
    """A result (or a list of them) as JSON that is always valid (:func:`fairmt.outputs.json_text`: a NaN is written
    as null and listed, never as the bare token ``NaN``)."""
    from fairmt.outputs import json_text

    data = as_dict(result) if not isinstance(result, list) else [as_dict(r) for r in result]
    write_text_atomic(path, json_text(data) + "\n", what="the JSON results")


def _fmt(value: Any, digits: int) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return "" if value is None else str(value)


def format_table(rows: Sequence[dict], columns: Sequence[str], digits: int = 1) -> str:
    """A plain-text table with aligned columns, for the console (control characters in a cell shown escaped:
    :func:`fairmt.eval.reporting.escape.terminal`)."""
    from fairmt.eval.reporting.escape import terminal

    cells = [[terminal(c) for c in columns]] + [[terminal(_fmt(r.get(c), digits)) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(rows: Sequence[dict], columns: Sequence[str], digits: int = 1, markup: Sequence[str] = ()) -> str:
    """A GitHub-flavoured Markdown table: every header and cell is text (:func:`fairmt.eval.reporting.escape.markdown`:
    a ``|``, as in every metric signature, HTML, a newline are escaped), except the cells of the ``markup`` columns,
    which the caller writes as Markdown (``**selected**``) from its own words."""
    from fairmt.eval.reporting.escape import markdown

    head = "| " + " | ".join(markdown(c) for c in columns) + " |"
    sep = "|" + "|".join("---:" if i else "---" for i in range(len(columns))) + "|"
    body = [
        "| "
        + " | ".join(_fmt(r.get(c), digits) if c in markup else markdown(_fmt(r.get(c), digits)) for c in columns)
        + " |"
        for r in rows
    ]
    return "\n".join([head, sep, *body]) + "\n"


ONE_RUN_NOTE = (
    "one training run (one seed): the changes are not tested against training-seed noise, which can be "
    "several points; run seeds (fairmt sweep --seeds) before calling a change better or worse"
)
"""The line under every recipe's before → after table (:func:`before_after_lines`)."""

_DIRECTION = {"lower": "↓", "higher": "↑", "zero": "(0 best)"}


def before_after_lines(title: str, rows: Sequence[tuple], before: str = "before", after: str = "after") -> list[str]:
    """The short before → after table every recipe ends with — one printer for all: GACL's held-out gender scores,
    the CCD/DPCE/ADEPT bias suites, the classification recipes' dev accuracy/GAP/ΔEO, the sampling recipes'
    latent-subgroup measures and probe GAP. A header ``  {title}: {before} → {after}``, then one line per row
    ``(label, before, after, fmt, better)``: the two values and their change in the format spec ``fmt``
    (``".3f"``, ``"+.1f"``), the label followed by the measure's better direction where ``better`` gives it
    (``"lower"`` ↓, ``"higher"`` ↑, ``"zero"``: closer to 0) and the label has no arrow yet. A recipe's run is one
    training seed: no change is called better or worse (no test says so); :data:`ONE_RUN_NOTE` closes the table.
    A row whose before or after is not a number is left out; no row left gives ``[]``."""
    import math

    def num(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    kept = [r for r in rows if num(r[1]) and num(r[2])]
    if not kept:
        return []
    labels = [
        label if not better or "↑" in label or "↓" in label else f"{label} {_DIRECTION.get(better, '')}".rstrip()
        for label, _, _, _, better in kept
    ]
    width = max(len(x) for x in labels)
    lines = [f"  {title}: {before} → {after}"]
    for label, (_, b, a, fmt, _) in zip(labels, kept):
        lines.append(
            f"    {label:{width}s} {format(b, fmt):>6s} → {format(a, fmt):>6s}  "
            f"({format(a - b, '+' + fmt.lstrip('+'))})"
        )
    lines.append(f"    {ONE_RUN_NOTE}")
    return lines


class NothingToPlot(FairmtError):
    """A plot was asked for but the results hold nothing it could draw (the message says why)."""


def draw_plot(path: str | Path, draw: Callable[[], Sequence[str] | None]) -> bool:
    """The one rule of every ``--plot``: the other outputs are written whatever happens here; ``draw()`` writes the
    figure with what exists and returns what it left out (one line each), or raises :class:`NothingToPlot`. Each
    omission (or why no figure was written) is printed on stderr; True only when everything asked for was drawn —
    a command then exits 0 only if this is True."""
    import sys

    try:
        missing = list(draw() or [])
    except NothingToPlot as err:
        print(f"fairmt: plot {path} not written: {err}", file=sys.stderr)
        return False
    for line in missing:
        print(f"fairmt: plot {path}: not drawn: {line}", file=sys.stderr)
    return not missing


def bar_chart(
    rows: Sequence[dict],
    label: str,
    metrics: Sequence[str],
    path: str | Path,
    title: str = "",
    ylabel: str = "score (%, percentage points for Δ)",
) -> list[str]:
    """A grouped bar chart (one group per row, e.g. per language; one bar per metric), saved as PNG/PDF/SVG:
    at most ~11 inches wide whatever the number of languages, labelled axes, the legend outside the bars, values
    written on the bars when they are few. A value that is None (undefined) gets no bar — never a bar at 0 — and
    is returned as one line ``"<metric> for <row>: undefined"``; no rows raises :class:`NothingToPlot`."""
    import math

    if not rows:
        raise NothingToPlot("no results to draw")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fairmt.eval.reporting.escape import mpl

    missing = [
        f"{metric} for {r.get(label)}: undefined (no value)"
        for r in rows
        for metric in metrics
        if r.get(metric) is None or (isinstance(r.get(metric), float) and not math.isfinite(r[metric]))
    ]
    n = max(len(metrics), 1)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(min(11.0, max(5.0, 0.55 * len(rows) * n + 2.5)), 4.0))
    xs = range(len(rows))
    for k, metric in enumerate(metrics):
        heights = [float(r[metric]) if r.get(metric) is not None else math.nan for r in rows]
        bars = ax.bar([x + (k - (n - 1) / 2) * width for x in xs], heights, width, label=mpl(metric))
        if len(rows) * n <= 24:
            ax.bar_label(bars, labels=["" if math.isnan(h) else f"{h:.1f}" for h in heights], fontsize=6, padding=1)
    ax.set_xticks(list(xs), [mpl(r.get(label)) for r in rows])
    ax.set_xlabel(mpl(label))
    ax.set_ylabel(mpl(ylabel))
    ax.axhline(0, color="black", linewidth=0.6)
    ax.grid(axis="y", linewidth=0.3, alpha=0.5)
    if title:
        ax.set_title(mpl(title), fontsize="medium")
    ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    save_figure_atomic(fig, path)
    return missing


def save_figure_atomic(fig, path: str | Path) -> None:
    """Save a matplotlib figure (format from the suffix) through fairmt's one writer
    (:class:`fairmt.outputs.writing`: a temporary file, fsync, an atomic rename), as :func:`write_text_atomic`; the
    figure is closed."""
    import matplotlib.pyplot as plt

    from fairmt.outputs import writing

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with writing(path, what="the figure", binary=True) as fh:
            fig.savefig(fh, dpi=120, bbox_inches="tight", format=path.suffix.lstrip(".").lower() or "png")
    finally:
        plt.close(fig)
