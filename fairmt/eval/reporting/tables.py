"""The report's tables: one per family of results, rows = runs, columns = the family's measures grouped as the papers
group them, each with its better direction (↑/↓) and its scale.

* Rates (accuracy, F1, AUC, GAP, ΔEO, leakage, WinoMT/MT-GenEval accuracies) are on one scale per table: the scale
  every run of the table was written on, else percent (a run written in fractions is converted, and the table says
  so). BLEU/chrF++ are sacrebleu's 0–100 scores; SEAT effect sizes, CCED gaps, Bias-IR deviations, the latent-subgroup
  measures are raw values.
* Runs of one name (``--names a a b b``) are one row: the mean and sample standard deviation (ddof = 1) over them; a
  sweep setting comes with its own. A cell with a spread shows ``mean ± std`` with the digits the spread supports.
* Runs whose numbers were computed under different settings (the result signatures) are refused, unless
  ``allow_mixed``: then each cell the difference touches is marked † and the difference is named under the table.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from fairmt.errors import FairmtError
from fairmt.eval.reporting.escape import Marked
from fairmt.eval.reporting.runs import Run


@dataclass(frozen=True)
class Measure:
    key: str
    label: str
    group: str
    direction: str | None = None  # "max", "min" or None (best is a target, e.g. 50 for CrowS-Pairs)
    kind: str = "rate"  # rate (percent or fraction), score (0-100, BLEU/chrF++), raw
    digits: int = 1  # digits without a spread (on the percent scale for rates)
    note: str = ""

    @property
    def arrow(self) -> str:
        return {"max": "↑", "min": "↓"}.get(self.direction or "", "")


@dataclass(frozen=True)
class Family:
    key: str
    title: str
    measures: tuple[Measure, ...]
    dynamic: tuple[tuple[str, str, str | None, str, int], ...] = ()  # (prefix, group, direction, kind, digits)
    touched: dict[str, tuple[str, ...]] = field(default_factory=dict)  # signature key prefix → groups it changes
    tradeoff: tuple[str, str] | None = None  # (fairness x, performance y)
    bars: str | None = None  # the group drawn as per-item bars


M = Measure
FAMILIES: dict[str, Family] = {
    f.key: f
    for f in (
        Family(
            "mt",
            "Machine translation: gender accuracy and quality (Lee et al., Tables 2–3)",
            (
                M("geneval_e_acc", "E-Acc.", "MT-GenEval", "max"),
                M("geneval_chrfpp", "chrF++", "MT-GenEval", "max", "score"),
                M("geneval_abs_edg", "|ΔG| (E)", "MT-GenEval", "min"),
                M(
                    "geneval_acc",
                    "Acc.",
                    "MT-GenEval",
                    "max",
                    note="MT-GenEval Acc.: the official accuracy, which a degenerate output can bring to 100",
                ),
                M("geneval_abs_dg", "|ΔG|", "MT-GenEval", "min"),
                M("bleu", "spBLEU", "FLORES-200", "max", "score"),
                M(
                    "bleu_star",
                    "spBLEU*",
                    "FLORES-200",
                    "max",
                    "score",
                    note="spBLEU*: BLEU with a SentencePiece model other than FLORES-200's official one "
                    "(its signature says "
                    "tok:spm-nonstandard); not comparable with published spBLEU",
                ),
                M("chrfpp", "chrF++", "FLORES-200", "max", "score"),
                M("winomt_acc", "Acc.", "WinoMT", "max"),
                M("winomt_abs_dg", "|ΔG|", "WinoMT", "min"),
                M("winomt_abs_ds", "|ΔS|", "WinoMT", "min"),
                M("heldout_acc", "gender acc.", "Held-out demo sentences", "max"),
                M("heldout_abs_dg", "|ΔG|", "Held-out demo sentences", "min"),
                M("heldout_anti", "anti-stereo. acc.", "Held-out demo sentences", "max"),
                M(
                    "heldout_chrfpp",
                    "chrF++",
                    "Held-out demo sentences",
                    "max",
                    "score",
                    note="Held-out demo sentences: a tiny recipe's held-out gender scores "
                    "(fairmt demo's test sentences, "
                    "never trained on), the untrained original's in its (original) row",
                ),
                M(
                    "eval_loss",
                    "eval loss",
                    "Training",
                    "min",
                    "raw",
                    3,
                    note="eval loss: the held-out L_MT cross-entropy of the model the run reports (nats per token)",
                ),
                M(
                    "degenerate",
                    "degenerate",
                    "Outputs",
                    "min",
                    "count",
                    0,
                    note="degenerate: empty, repetitive, wrong-script or unrelated translations "
                    "(MT-GenEval and FLORES lines)",
                ),
            ),
            dynamic=(("winomt_acc:", "WinoMT Acc. per language", "max", "rate", 1),),
            touched={
                "winomt": ("WinoMT", "WinoMT Acc. per language"),
                "geneval": ("MT-GenEval",),
                "flores": ("FLORES-200",),
                "settings:compat": ("WinoMT", "WinoMT Acc. per language"),
                "settings:gold": ("WinoMT", "WinoMT Acc. per language"),
                "settings:split": ("MT-GenEval",),
                "languages:winomt": ("WinoMT",),
                "languages:geneval": ("MT-GenEval",),
                "languages:flores": ("FLORES-200",),
                "heldout": ("Held-out demo sentences",),
            },
            tradeoff=("winomt_acc", "bleu"),
            bars="WinoMT Acc. per language",
        ),
        Family(
            "classification",
            "Fair classification (Shen et al. Table 1; Chi et al.)",
            (
                M("accuracy", "Acc.", "Performance", "max", digits=2),
                M("f1", "F1", "Performance", "max", digits=2),
                M("macro_f1", "macro-F1", "Performance", "max", digits=2),
                M("micro_f1", "micro-F1", "Performance", "max", digits=2),
                M("auc", "AUC", "Performance", "max", digits=2),
                M("gap", "GAP", "Fairness", "min", digits=2),
                M(
                    "delta_eo",
                    "ΔEO/class",
                    "Fairness",
                    "min",
                    digits=2,
                    note="ΔEO/class: ΔEO (the sum over groups of |TPR(a, y) − TPR(y)| + "
                    "|FPR(a, y) − FPR(y)|) per class: a result that sums it over all "
                    "K classes divided by K; the positive class alone otherwise",
                ),
                M("leakage_h", "leakage@h", "Leakage", "min", digits=2),
                M("leakage_yhat", "leakage@ŷ", "Leakage", "min", digits=2),
                M(
                    "tradeoff",
                    "Tradeoff",
                    "Trade-off",
                    "max",
                    "raw",
                    3,
                    note="Tradeoff: Shen et al.'s ½·N(Acc) + ¼·N(1−GAP) + ⅛·N(1−leakage@h) + ⅛·N(1−leakage@ŷ), "
                    "N = ÷ max "
                    "over the rows of this table (recomputed from the means shown; a sweep's own column is not kept)",
                ),
            ),
            dynamic=(("gap:", "GAP per class", "min", "rate", 2),),
            touched={
                "cls:version": ("Performance", "Fairness", "Leakage", "Trade-off", "GAP per class"),
                "cls:gap": ("Fairness", "Trade-off", "GAP per class"),
                "cls:auc": ("Performance",),
                "cls:leak": ("Leakage", "Trade-off"),
                "delta_eo": ("Fairness",),
                "positive_class": ("Performance", "Fairness"),
            },
            tradeoff=("gap", "accuracy"),
            bars="GAP per class",
        ),
        Family(
            "embeddings",
            "Text embeddings: bias suites (CCD paper; SEAT, CrowS-Pairs, StereoSet, Bias-IR)",
            (
                M("seat_avg_abs", "avg |d|", "SEAT", "min", "raw", 3),
                M("cced_gap", "gap", "CCED", "min", "raw", 4),
                M("bias_ir_avg_dev", "AVG-DEV", "Bias-IR", "min", "raw", 3),
                M("stereoset_lms", "LMS", "StereoSet", "max", "score", 2),
                M("stereoset_ss", "SS (50 best)", "StereoSet", None, "score", 2),
                M("stereoset_icat", "ICAT", "StereoSet", "max", "score", 2),
                M("utility_spearman", "Spearman", "Utility", "max", "raw", 3),
                M("utility_nn1", "NN-1", "Utility", "max", "raw", 3),
                M("glue_avg", "GLUE avg", "Utility", "max", "score", 1),
            ),
            dynamic=(
                ("seat:", "SEAT effect size d (0 best)", None, "raw", 3),
                ("crows:", "CrowS-Pairs (50 best)", None, "score", 2),
            ),
            touched={
                "seat": ("SEAT", "SEAT effect size d (0 best)"),
                "cced": ("CCED",),
                "bias_ir": ("Bias-IR",),
                "crows": ("CrowS-Pairs (50 best)",),
                "stereoset": ("StereoSet",),
                "pooling": ("SEAT", "SEAT effect size d (0 best)", "CCED", "Bias-IR"),
            },
            tradeoff=("seat_avg_abs", "utility_spearman"),
            bars="SEAT effect size d (0 best)",
        ),
        Family(
            "probe",
            "Representations: latent subgroups and linear probes (Martin & Ogbuokiri)",
            (
                M("cluster_dominance_ratio", "dominance", "Latent subgroups", "min", "raw", 4),
                M("representation_entropy", "entropy (bits)", "Latent subgroups", "max", "raw", 4),
                M("subgroup_separation_distance", "separation", "Latent subgroups", "max", "raw", 4),
            ),
            dynamic=(("probe:", "Probe", None, "rate", 2),),
            touched={"subgroups": ("Latent subgroups",), "probe": ("Probe",)},
            tradeoff=("probe", "probe"),
        ),
    )
}
_PROBE = {
    "accuracy": ("Acc.", "max"),
    "f1": ("F1", "max"),
    "auc_roc": ("AUC", "max"),
    "gap": ("GAP", "min"),
    "delta_eo": ("ΔEO", "min"),
}


def measure_of(family: Family, key: str) -> Measure | None:
    for m in family.measures:
        if m.key == key:
            return m
    for prefix, group, direction, kind, digits in family.dynamic:
        if key.startswith(prefix):
            rest = key[len(prefix) :]
            if prefix == "probe:":  # probe:<target>:<measure>: one group per target
                target, _, what = rest.rpartition(":")
                label, direction = _PROBE.get(what, (what, None))
                return Measure(key, label, f"Probe: {target}", direction, kind, digits)
            return Measure(key, rest, group, direction, kind, digits)
    return None


@dataclass
class Table:
    family: Family
    rows: list[Run]
    columns: list[Measure]
    scale: str  # the rates' scale: percent or fraction
    marks: list[set[str]]  # per row: the column keys marked †
    differs: list[list[dict]]  # per row: its signature differences from the first row
    notes: list[str]
    comparisons: list[dict] = field(default_factory=list)  # paired bootstrap against the first row (MT; compare.py)

    def unit(self, m: Measure) -> str:
        return {"rate": "%" if self.scale == "percent" else "fraction", "score": "0–100", "count": "n"}.get(m.kind, "")

    def header(self, m: Measure) -> str:
        """``Acc. ↑ (%)``: label, better direction and scale."""
        unit = self.unit(m)
        return f"{m.label}{' ' + m.arrow if m.arrow else ''}{f' ({unit})' if unit else ''}"

    def best(self) -> dict[str, set[int]]:
        """Per column with a known direction, the rows holding its best mean (several on a tie; none when fewer
        than two rows have a value). A cell marked † (scored under other settings) is never the best."""
        out = {}
        for m in self.columns:
            if not m.direction:
                continue
            vals = [
                (i, v)
                for i, r in enumerate(self.rows)
                if (v := r.values.get(m.key)) is not None and m.key not in self.marks[i]
            ]
            if len(vals) < 2:
                continue
            target = (max if m.direction == "max" else min)(v for _, v in vals)
            out[m.key] = {i for i, v in vals if math.isclose(v, target, rel_tol=1e-12, abs_tol=1e-12)}
        return out

    def cell(self, i: int, m: Measure, pm: str = " ± ") -> str:
        r = self.rows[i]
        return format_value(r.values.get(m.key), r.std.get(m.key), m, self.scale, pm)


def digits_for(std: float | None, default: int) -> int:
    """Decimals that match the spread (the particle physicists' rounding rule): the standard deviation to two
    significant digits when its leading digit is 1 or 2, else to one (0.23 → 2 decimals, 0.71 → 1, 1.7 → 1, 4.2 → 0,
    12 → 0), at most 4; ``default`` without a spread (or a zero one)."""
    if std is None or not math.isfinite(std) or std <= 0:
        return default
    e = math.floor(math.log10(std))
    d = -e + (1 if std / 10**e < 3 else 0)
    return max(0, min(4, d))


def format_value(v: float | None, std: float | None, m: Measure, scale: str = "percent", pm: str = " ± ") -> str:
    if v is None:
        return "–"
    default = m.digits + (2 if m.kind == "rate" and scale == "fraction" else 0)
    d = digits_for(std, default)
    return f"{v:.{d}f}" + (f"{pm}{std:.{d}f}" if std is not None else "")


def _aggregate(runs: list[Run]) -> list[Run]:
    """Runs sharing a name become one row: mean and sample std (ddof = 1) of each value over them."""
    by_name: dict[str, list[Run]] = {}
    for r in runs:
        by_name.setdefault(r.name, []).append(r)
    out = []
    for name, group in by_name.items():
        if len(group) == 1:
            out.append(group[0])
            continue
        if any(r.n > 1 for r in group):
            raise FairmtError(
                f"{name}: several results of this name and one of them is already a mean over seeds "
                "(a sweep setting); give the runs different names"
            )
        keys = list(dict.fromkeys(k for r in group for k in r.values))
        mean, std = {}, {}
        for k in keys:
            vals = [v for r in group if (v := r.values.get(k)) is not None]
            mean[k] = statistics.fmean(vals) if vals else None
            std[k] = statistics.stdev(vals) if len(vals) > 1 else None
        first = group[0]
        out.append(
            Run(
                name,
                first.family,
                ", ".join(r.source for r in group),
                mean,
                std,
                n=len(group),
                scale=first.scale,
                settings=first.settings,
                signatures=first.signatures,
                method=first.method,
                group=first.group,
                setting=first.setting,
                seeds=[r.settings.get("seed") for r in group if r.settings.get("seed") is not None],
            )
        )
    return out


def signature_differences(rows: list[Run]) -> list[list[dict]]:
    """Per row, every signature in which it differs from the first row of its table. A key only one of the two has
    is no difference (a per-language signature compares like with like; a setting of a benchmark one run does not
    have changes none of its numbers). The settings (``settings:compat`` ...) come first: the refusal names one."""
    if not rows:
        return []
    base = rows[0].signatures
    out: list[list[dict]] = [[]]
    for r in rows[1:]:
        diffs = []
        for key in sorted(set(base) | set(r.signatures), key=lambda k: (not k.startswith("settings:"), k)):
            a, b = base.get(key), r.signatures.get(key)
            if a == b or a is None or b is None:
                continue
            diffs.append({"key": key, "first": a, "this": b})
        out.append(diffs)
    return out


def _touched(family: Family, key: str, columns: list[Measure]) -> set[str]:
    groups: set[str] = set()
    for prefix, gs in family.touched.items():
        if key == prefix or key.startswith(prefix + ":"):
            groups.update(gs)
    if not groups:  # a difference fairmt cannot place: every column
        return {m.key for m in columns}
    return {m.key for m in columns if m.group in groups or any(m.group.startswith(g) for g in groups)}


def _shen_tradeoff(rows: list[Run], scale: str) -> list[float] | None:
    from fairmt.eval.classification import tradeoff_scores

    need = ("accuracy", "gap", "leakage_h", "leakage_yhat")
    if len(rows) < 2 or any(r.values.get(k) is None for r in rows for k in need):
        return None
    f = 100.0 if scale == "percent" else 1.0
    try:
        return tradeoff_scores(*[[(r.values[k] or 0.0) / f for r in rows] for k in need])  # none is None (above)
    except (FairmtError, ValueError, ZeroDivisionError):
        return None


def selection_note(rows: list[Run]) -> str | None:
    """A note when the rows' checkpoints were selected under different rules (each run's ``selection``, e.g.
    ``loss (dev set)`` against ``dto (dev set)``): their numbers are not a like-for-like comparison."""
    rules: dict[str, list[str]] = {}
    for r in rows:
        rule = r.settings.get("selection")
        if isinstance(rule, str) and rule:
            rules.setdefault(rule, []).append(r.name)
    if len(rules) < 2:
        return None
    return (
        "Rows selected under different checkpoint rules (not a like-for-like comparison): "
        + "; ".join(f"{k}: {', '.join(v)}" for k, v in rules.items())
        + "."
    )


def build_tables(runs: list[Run], allow_mixed: bool = False, per_class: bool = False) -> list[Table]:
    """One :class:`Table` per family, in the order the families first appear. Refuses runs scored under different
    settings unless ``allow_mixed`` (then marked; every difference is in ``Table.differs`` and ``Table.notes``)."""
    order: list[str] = list(dict.fromkeys(r.family for r in runs))
    tables = []
    for key in order:
        fam = FAMILIES[key]
        rows = _aggregate([r for r in runs if r.family == key])
        notes: list[str] = []
        scales = {r.scale for r in rows}
        scale = "percent"
        if scales <= {"fraction", "raw"} and "fraction" in scales:
            scale = "fraction"
        converted = [r.name for r in rows if r.scale == "fraction" and scale == "percent"]
        for r in rows:  # one scale per table: fractions × 100 where the table is in percent
            if r.scale == "fraction" and scale == "percent":
                for k in list(r.values):
                    m = measure_of(fam, k)
                    if m is not None and m.kind == "rate":
                        v, s = r.values[k], r.std.get(k)
                        r.values[k] = None if v is None else 100.0 * v
                        if s is not None:
                            r.std[k] = 100.0 * s
                r.scale = "percent"
        if converted:
            notes.append(f"Written as fractions and shown in percent here: {', '.join(converted)}.")
        if key == "classification":  # Shen et al.'s trade-off, normalised over exactly the rows of this table
            given = [r.name for r in rows if r.values.get("tradeoff") is not None]
            scores = _shen_tradeoff(rows, scale)
            for i, r in enumerate(rows):
                r.values.pop("tradeoff", None)  # a file's own (over its sweep's settings) is another normalisation
                r.std.pop("tradeoff", None)
                if scores is not None:
                    r.values["tradeoff"] = scores[i]
            if scores is None and given:
                notes.append(
                    f"Tradeoff not shown: it is normalised over the rows compared, which needs two rows "
                    f"or more, each with accuracy, GAP and both leakages (the value in {', '.join(given)} "
                    "was normalised over other rows)."
                )
        keys = list(dict.fromkeys(k for r in rows for k in r.values))
        cols = [m for m in fam.measures if m.key in keys]
        dynamic = [m for m in (measure_of(fam, k) for k in keys if k not in {c.key for c in fam.measures}) if m]
        if key == "classification" and not per_class:
            dynamic = [m for m in dynamic if m.group != "GAP per class"]
        order = list(_PROBE)
        cols += sorted(
            dynamic,
            key=lambda m: (
                m.group,
                order.index(m.key.rsplit(":", 1)[-1])
                if m.key.startswith("probe:") and m.key.rsplit(":", 1)[-1] in order
                else -1,
                _natural(m.key),
            ),
        )
        if not cols:
            raise FairmtError(
                f"{', '.join(sorted({r.source for r in rows}))}: no measure this report shows "
                f"(found: {', '.join(keys) or 'none'}); nothing to put in the {fam.key} table"
            )
        unknown = [k for k in keys if measure_of(fam, k) is None]
        if unknown:
            notes.append(f"Not shown (no column of this table): {', '.join(unknown)}.")
        differs = signature_differences(rows)
        marks: list[set[str]] = []
        for r, diffs in zip(rows, differs):
            if diffs and not allow_mixed:
                d = diffs[0]
                more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
                raise FairmtError(
                    f"{r.name} was scored differently from {rows[0].name}: {d['key']} is {d['this']!r}, "
                    f"not {d['first']!r}{more}; these numbers are not comparable — pass --allow-mixed "
                    "to put them side by side anyway (each differing cell marked †)"
                )
            marks.append(set().union(*[_touched(fam, d["key"], cols) for d in diffs]) if diffs else set())
        for r, diffs in zip(rows, differs):
            for d in diffs:
                notes.append(
                    Marked(
                        f"† {r.name}: {d['key']} is ",
                        Marked.code(d["this"]),
                        f", {rows[0].name}'s is ",
                        Marked.code(d["first"]),
                    )
                )
        if any(m.note for m in cols):
            notes += [m.note for m in cols if m.note]
        notes += list(dict.fromkeys(n for r in runs if r.family == key for n in r.notes))
        note = selection_note(rows)
        if note:
            notes.append(note)
        tables.append(Table(fam, rows, cols, scale, marks, differs, notes))
    return tables


def _natural(key: str) -> list:
    import re

    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", key)]


def groups_of(columns: list[Measure]) -> list[tuple[str, int]]:
    """Consecutive column groups with their widths (the spanning header of LaTeX/HTML tables)."""
    out: list[tuple[str, int]] = []
    for m in columns:
        if out and out[-1][0] == m.group:
            out[-1] = (m.group, out[-1][1] + 1)
        else:
            out.append((m.group, 1))
    return out


def describe_scale(t: Table) -> str:
    kinds = {m.kind for m in t.columns}
    parts = []
    if "rate" in kinds:
        parts.append(
            "rates in percent (gaps in percentage points)"
            if t.scale == "percent"
            else "rates as fractions in [0, 1] (as the paper prints them)"
        )
    if "score" in kinds:
        parts.append("BLEU/chrF++/StereoSet/CrowS/GLUE on their 0–100 scales")
    if "raw" in kinds:
        parts.append("the other measures as raw values")
    seeds = [r for r in t.rows if r.n > 1]
    spread = "; mean ± sample std over seeds (n in the settings)" if seeds else ""
    return "Scale: " + "; ".join(parts) + ". ↑ higher is better, ↓ lower is better" + spread + "."


def table_json(t: Table) -> dict[str, Any]:
    best = t.best()
    return {
        "family": t.family.key,
        "title": t.family.title,
        "scale": t.scale,
        "columns": [
            {
                "key": m.key,
                "label": m.label,
                "group": m.group,
                "direction": m.direction,
                "kind": m.kind,
                "unit": t.unit(m),
            }
            for m in t.columns
        ],
        "rows": [
            {
                "name": r.name,
                "source": r.source,
                "n": r.n,
                "method": r.method,
                "group": r.group,
                "setting": r.setting,
                "values": {m.key: r.values.get(m.key) for m in t.columns},
                "std": {m.key: r.std.get(m.key) for m in t.columns if r.std.get(m.key) is not None},
                "best": sorted(k for k, rows in best.items() if i in rows),
                "marked": sorted(t.marks[i]),
                "differs": t.differs[i],
                "settings": r.settings,
                "signatures": r.signatures,
            }
            for i, r in enumerate(t.rows)
        ],
        "notes": t.notes,
        "comparisons": t.comparisons,
    }
