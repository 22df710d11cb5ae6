"""What a CCD, DPCE or ADEPT run's ``<method>_results.json`` holds, by name, before any run (``fairmt sweep`` checks
its ``--objective`` against these; :attr:`fairmt.recipes.Family.metrics`)."""

from __future__ import annotations

from typing import Any


def _suites(config: dict[str, Any]) -> list[str]:
    ev = config.get("evaluation") or {}
    return [str(s).replace("-", "_") for s in ev.get("suites", ("seat", "cced", "bias_ir", "utility")) if s]


def _measured(suites: list[str]) -> list[str]:
    """The before/after measurements every method of the family writes."""
    out = []
    for when in ("before", "after"):
        if "seat" in suites:
            out += [
                f"{when}.seat_avg_abs_effect_size",
                f"{when}.seat_avg_abs",  # the old name too, until 0.2
                f"{when}.seat.*.effect_size",
                f"{when}.seat.*.p_value",
            ]
        if "cced" in suites:
            out += [f"{when}.cced.gap", f"{when}.cced.n", f"{when}.cced.mean_distance.*", f"{when}.cced.pair_*"]
        if "bias_ir" in suites:
            out += [f"{when}.bias_ir.avg_dev", f"{when}.bias_ir.male_ratio_all", f"{when}.bias_ir.male_ratio.*"]
    return out


def _common(config: dict[str, Any]) -> list[str]:
    out = ["glue.avg", "glue.tasks.*", "glue_before.*", "time_glue_s"] if config.get("utility") else []
    return out + ["train.*", "data.*", "time_*"]


def baseline_metric_patterns(config: dict[str, Any]) -> list[str]:
    """DPCE and ADEPT (:mod:`fairmt.recipes.ccd.word_debias`): the measurements before and after training."""
    return _measured(_suites(config)) + _common(config)


def ccd_metric_patterns(config: dict[str, Any]) -> list[str]:
    """CCD (:mod:`fairmt.recipes.ccd.runner`): the measurements, the utility, the validation split, the test-half
    Bias-IR and the flat dev/test summaries (exact names, so a mistyped ``dev.*`` objective fails before any
    trial)."""
    suites = _suites(config)
    out = _measured(suites)
    if "utility" in suites:
        out += ["utility.*", "utility_validation.*"]
    dev = ["cced_gap", "probe_avg_abs", "bias_ir_avg_dev", "utility_spearman", "utility_nn1"]
    test = (*dev, "seat_avg_abs_effect_size", "seat_avg_abs", "bias_ir_avg_dev_all_queries")  # seat_avg_abs: old name
    out += [f"dev.{n}" for n in dev] + [f"test.{n}" for n in test]
    out += [
        f"validation.{when}.{m}"
        for when in ("before", "after")
        for m in ("cced.*", "probe_avg_abs", "probe.*", "bias_ir.*")
    ]
    out += [
        "before.bias_ir_all.*",
        "after.bias_ir_all.*",
        "bias_ir_split.*",
        "before.bias_ir.n_queries",
        "after.bias_ir.n_queries",
    ]
    return out + _common(config)
