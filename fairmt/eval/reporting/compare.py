"""Paired bootstrap of two MT runs in a report (:mod:`fairmt.eval.significance`): every row of the MT table against the
first, per benchmark and language, from the per-sentence data the result files carry (``items``).

Each comparison is the difference row − first with its 95 % interval and p-value, printed to the digits the interval
supports (:func:`fairmt.eval.reporting.tables.digits_for` on its spread, (high − low) / 3.92) and called "not
distinguishable" when the interval covers 0. A run without per-sentence data (a file written by an older fairmt, or a
mean over several runs) gets one line saying the interval cannot be computed and why.
"""

from __future__ import annotations

from fairmt.errors import FairmtError
from fairmt.eval.reporting.runs import Run

BENCH_NAMES = {"winomt": "WinoMT", "geneval": "MT-GenEval", "flores": "FLORES-200"}
MEASURE_NAMES = {"accuracy": "Acc.", "explicit_accuracy": "E-Acc.", "delta_g": "ΔG", "chrf++": "chrF++"}


def _why_none(r: Run) -> str:
    if r.n > 1 or r.setting is not None:
        return f"{r.name} is a mean over {r.n} runs"
    return (
        f"{r.name} ({r.source}) holds no per-sentence data (a file written by an older fairmt, or a recipe's "
        "results without a scored test set: score its translations with this fairmt's eval commands)"
    )


def add_comparisons(tables: list, n_samples: int | None = None, seed: int | None = None) -> None:
    """Each MT table's comparisons (:func:`compare_rows`): its ``comparisons`` (the JSON) and the lines under it;
    ``n_samples``/``seed`` of the bootstrap (None: :data:`fairmt.eval.significance.N_SAMPLES` / ``SEED``)."""
    for t in tables:
        if t.family.key == "mt":
            t.comparisons, lines = compare_rows(t.rows, n_samples, seed)
            t.notes += lines


def compare_rows(
    rows: list[Run], n_samples: int | None = None, seed: int | None = None
) -> tuple[list[dict], list[str]]:
    """The comparisons of each row with the first row that carries per-sentence data (dicts for the JSON) and the
    lines that say them: a header (the resamples, the seed and the p-value convention) and one line per test, or, where
    no test could be made, one line per row saying why."""
    from fairmt.eval.significance import N_SAMPLES, SEED, SELF_COMPARISON, compare_items

    n_samples = N_SAMPLES if n_samples is None else n_samples
    seed = SEED if seed is None else seed
    if len(rows) < 2:
        return [], []
    if not any(r.items for r in rows):  # one line, not one per row (a table of tiny-recipe runs, of means)
        return [], [
            (
                "Paired bootstrap: no interval: no row carries per-sentence data (a mean over runs, a file "
                "written by an older fairmt, or a recipe's results without a scored test set: score its "
                "translations with this fairmt's eval commands)."
            )
        ]
    # the baseline is the first row that carries per-sentence data: a tiny recipe's "(original)" row (held-out
    # scores only) comes first but cannot be the baseline of a paired test
    base = next(r for r in rows if r.items)
    out: list[dict] = []
    lines: list[str] = []
    why_not: list[tuple[str, str, str]] = []  # (row, where, why): no interval

    for r in (x for x in rows if x is not base):
        missing = [x for x in (base, r) if not x.items]
        if missing:
            why_not.append((r.name, "", "; ".join(_why_none(x) for x in missing)))
            continue
        shared = [k for k in r.items if k in base.items]
        if not shared:
            why_not.append((r.name, "", f"no benchmark and language in common with {base.name}"))
        for key in shared:
            bench, _, lang = key.partition(":")
            where = f"{BENCH_NAMES.get(bench, bench)} {lang}"
            try:
                tests = compare_items(bench, r.items[key], base.items[key], n_samples=n_samples, seed=seed)
            except FairmtError as err:
                why_not.append((r.name, where, str(err)))
                continue
            for t in tests:
                out.append({"run": r.name, "baseline": base.name, "benchmark": bench, "lang": lang, **t.to_dict()})
                lines.append(f"  {r.name}: {where} {MEASURE_NAMES.get(t.measure, t.measure)} {format_test(t)}")
    if out:
        lines.insert(
            0,
            f"Paired bootstrap against {base.name} (row − {base.name}; {n_samples} resamples of the "
            f"sentences/pairs, seed {seed}; 95 % interval; p-value; {SELF_COMPARISON}):",
        )
        compared = [r for r in rows if r is not base and any(c["run"] == r.name for c in out)]
        lines.insert(1, "  " + noise_note([base, *compared]))
    for name, where, why in why_not:
        lines.append(
            f"Paired bootstrap of {name} against {base.name}{': ' + where if where else ''}: no interval: {why}."
        )
    return out, lines


def noise_note(runs: list[Run]) -> str:
    """What the paired bootstrap's "distinguishable" covers: test-set noise only (which sentences were drawn), never
    the spread between training runs; the runs that are one training seed are named (their difference may be the
    seed's)."""
    single = [r.name for r in runs if r.n <= 1]
    text = (
        "it covers test-set noise only (which sentences were drawn), not training-seed noise: "
        '"distinguishable" says these two models differ on this test set'
    )
    if single:
        text += (
            f"; one training seed each ({', '.join(single)}), so it does not say that the training method "
            "differs (a rerun with another seed can move these numbers more than the interval: run several "
            "seeds, fairmt sweep --seeds)"
        )
    return text[0].upper() + text[1:] + "."


def format_test(t) -> str:
    """``+1.3 [-0.4, +3.0], p = 0.140, not distinguishable``: digits matched to the interval's spread."""
    from fairmt.eval.reporting.tables import digits_for

    d = digits_for((t.ci_high - t.ci_low) / 3.92, 1)
    verdict = "not distinguishable" if t.ci_low <= 0 <= t.ci_high else "distinguishable"
    left_out = (
        f" ({t.n_undefined} of {t.n_samples} resamples left out: {t.measure} undefined on them)"
        if getattr(t, "n_undefined", 0)
        else ""
    )
    return f"{t.difference:+.{d}f} [{t.ci_low:+.{d}f}, {t.ci_high:+.{d}f}], p = {t.p_value:.3f}, {verdict}" + left_out
