"""``fairmt report``: every result JSON fairmt writes, side by side in the papers' layouts.

:func:`~fairmt.eval.reporting.runs.read_runs` reads one file (recognised by its declared ``format``,
:mod:`fairmt.eval.reporting.formats`) into rows; :func:`~fairmt.eval.reporting.tables.build_tables` puts them in one
table per family (refusing numbers computed under different settings unless asked); :mod:`fairmt.eval.reporting.render`
writes the terminal text, Markdown, JSON, LaTeX, figures and a self-contained HTML page, every name and value through
:mod:`fairmt.eval.reporting.escape` (one escaping function per output format);
:func:`~fairmt.eval.reporting.compare.add_comparisons` puts the paired bootstrap of MT runs under their table.
"""

from fairmt.eval.reporting.compare import add_comparisons
from fairmt.eval.reporting.runs import Run, read_runs, setting_label
from fairmt.eval.reporting.tables import FAMILIES, Table, build_tables

__all__ = ["FAMILIES", "Run", "Table", "add_comparisons", "build_tables", "read_runs", "setting_label"]
