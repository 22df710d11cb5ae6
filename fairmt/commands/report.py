"""``fairmt report RESULT.json …``: every result fairmt writes side by side (:mod:`fairmt.eval.reporting`)."""

from __future__ import annotations

import argparse
import sys

from fairmt.errors import FairmtError


def register(groups) -> None:
    from fairmt.commands._options import PLOT_SUFFIXES, count, output_file, seed

    r = groups["top"].add_parser(
        "report",
        help="compare any fairmt results side by side (tables, LaTeX, HTML, trade-off plots)",
        description="Put results side by side, one table per family (MT: eval mt-bias/winomt/geneval/flores and "
        "GACL results; classification: eval classification and the classification recipes; embeddings: eval "
        "embeddings/stereoset and the CCD/DPCE/ADEPT recipes (before and after); probes: eval linear-probe and the "
        "sampling recipes (stage 1 and 2)), and sweep.json files (one row per setting, mean ± std over seeds). "
        "Runs given the same --names are averaged. Numbers computed under different settings (metric signatures) "
        "are refused unless --allow-mixed.",
    )
    r.add_argument(
        "runs",
        nargs="+",
        metavar="RESULT.json",
        help="result JSON files (or folders holding a sweep.json or one *results.json)",
    )
    r.add_argument(
        "--names",
        nargs="+",
        default=None,
        help="one name per file (default: the run's own name, method or file stem); runs of one name "
        "become one row: mean ± std",
    )
    r.add_argument(
        "--allow-mixed",
        action="store_true",
        help="compare runs scored under different settings: each differing cell is marked † and the "
        "difference named under its table",
    )
    r.add_argument("--per-class", action="store_true", help="classification: also GAP per class")
    r.add_argument(
        "--resamples",
        type=count(1),
        default=None,
        metavar="N",
        help="resamples of the paired bootstrap of MT runs (default: sacrebleu --paired-bs's, printed above "
        "the comparisons)",
    )
    r.add_argument(
        "--seed",
        type=seed,
        default=None,
        help="seed of the paired bootstrap's resampling (default: sacrebleu's SACREBLEU_SEED, printed above "
        "the comparisons)",
    )
    r.add_argument("--title", default="fairmt report", help="title of the HTML page")
    output_file(r, "--markdown", what="Markdown report", metavar="OUT", help="write the tables as Markdown")
    output_file(
        r,
        "--json",
        what="report JSON",
        stdout=True,
        metavar="OUT",
        help="write the tables as JSON ('-' prints JSON only)",
    )
    output_file(
        r,
        "--latex",
        what="LaTeX tables",
        suffixes=(".tex",),
        metavar="OUT.tex",
        help="write one booktabs table per family (\\usepackage{booktabs}); --latex-standalone: a whole document",
    )
    r.add_argument("--latex-standalone", action="store_true", help="--latex writes a document that compiles alone")
    output_file(
        r,
        "--html",
        what="HTML report",
        suffixes=(".html", ".htm"),
        metavar="OUT.html",
        help="write one self-contained page: sortable tables, settings, figures (inline SVG), nothing "
        "fetched from the network",
    )
    output_file(
        r,
        "--plot",
        what="plot",
        suffixes=PLOT_SUFFIXES,
        metavar="OUT",
        help="write the figures as OUT-<family>-tradeoff and OUT-<family>-bars (same suffix): performance "
        "against fairness with ± std error bars, and per-language/per-test bars",
    )
    r.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fairmt.eval.report import draw_plot, write_text_atomic
    from fairmt.eval.reporting import add_comparisons, build_tables, read_runs
    from fairmt.eval.reporting.escape import terminal
    from fairmt.eval.reporting.render import (
        html_report,
        json_report,
        latex_report,
        markdown_report,
        text_report,
        write_figures,
    )
    from fairmt.eval.reporting.runs import distinct_default_names
    from fairmt.outputs import json_text

    if args.names is not None and len(args.names) != len(args.runs):
        raise FairmtError(f"--names: {len(args.names)} names for {len(args.runs)} files")
    inputs = [read_runs(path, args.names[i] if args.names else None) for i, path in enumerate(args.runs)]
    if args.names is None:
        distinct_default_names(inputs)  # two inputs are one row only when --names says so
    runs = [r for rows in inputs for r in rows]
    tables = build_tables(runs, allow_mixed=args.allow_mixed, per_class=args.per_class)
    add_comparisons(tables, n_samples=args.resamples, seed=args.seed)  # paired bootstrap of MT runs vs the first
    for t in tables:  # said on stderr whatever the output: † in the tables, "differs" in the JSON
        for row, diffs in zip(t.rows, t.differs):
            for d in diffs:
                print(
                    f"fairmt report: warning: {terminal(row.name)} was scored differently from "
                    f"{terminal(t.rows[0].name)}: "
                    f"{d['key']} is {d['this']!r}, not {d['first']!r}",
                    file=sys.stderr,
                )
    if args.json == "-":
        print(json_text(json_report(tables)))
    else:
        print(text_report(tables), end="")
        if args.json:
            write_text_atomic(args.json, json_text(json_report(tables)) + "\n")
    if args.markdown:
        write_text_atomic(args.markdown, markdown_report(tables))
    if args.latex:
        write_text_atomic(args.latex, latex_report(tables, standalone=args.latex_standalone))
    if args.html:
        write_text_atomic(args.html, html_report(tables, title=args.title))
    ok = True
    if args.plot:

        def draw():
            written, missing = write_figures(tables, args.plot)
            for p in written:
                print(f"wrote plot {terminal(p)}", file=sys.stderr)
            return missing

        ok = draw_plot(args.plot, draw)
    for what, path in (("JSON", args.json), ("Markdown", args.markdown), ("LaTeX", args.latex), ("HTML", args.html)):
        if path and path != "-":
            print(f"wrote {what} to {terminal(path)}", file=sys.stderr)
    return 0 if ok else 1
