"""fairmt sweep's selection rules on two "min" objectives and on one objective, the runner-up noise check, the digits
of sweep.md, checkpoint rules that differ between rows, and the plot's labels (issue 44 items 3, 7, 8, 16); a fake
CCD runner stands in for training, so no model runs."""

import copy
import json
import statistics
from pathlib import Path

import pytest

pytest.importorskip("optuna")

GAP = {0.5: 0.05, 1.0: 0.10, 2.0: 0.40}  # dev.cced_gap per β before the seed noise (seed 1 adds 0.2)


def _runner(cmd, log: Path) -> int:
    over = dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))
    beta, seed = float(over["training.beta"]), int(over["training.seed"])
    path = Path(json.loads(over["results"]))
    path.parent.mkdir(parents=True)
    dev = {"cced_gap": GAP[beta] + 0.2 * seed, "probe_avg_abs": 0.3 / beta + 0.001 * seed}
    path.write_text(
        json.dumps(
            {
                "dev": dev,
                "test": {k: v + 0.01 for k, v in dev.items()},
                "selection": "loss (dev set)" if beta < 2 else "dto (dev set)",
            }
        )
    )
    log.write_text("ok\n")
    return 0


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from fairmt.sweep.engine import run_sweep
    from fairmt.sweep.spec import build_spec

    out = tmp_path_factory.mktemp("sw") / "s"
    spec = build_spec(
        "ccd/minilm_cda",
        [],
        ["training.beta=0.5,1.0,2.0"],
        [],
        "0,1",
        ["dev.cced_gap:min", "dev.probe_avg_abs:min"],
        output_dir=str(out),
    )
    assert run_sweep(spec, runner=_runner, echo=lambda line: None).complete
    return spec


def test_two_min_objectives_rules_that_do_not_apply_say_so(swept, monkeypatch):
    from fairmt.sweep import report as rep

    captured = {}
    monkeypatch.setattr("fairmt.eval.report.save_figure_atomic", lambda fig, path: captured.setdefault("fig", fig))
    r = rep.write_report(swept.output_dir, swept)
    by_rule = r["selection"]["by_rule"]
    assert swept.select == "dto" and r["selected"] is None
    assert "is to be minimised: it would pick the worst" in by_rule["accuracy"]["unavailable"]  # not "s1"
    assert "minimized" in by_rule["dto"]["unavailable"] and "setting" not in by_rule["accuracy_then_gap"]
    md = (Path(swept.output_dir) / "sweep.md").read_text()
    assert "- `accuracy`: not applicable" in md
    assert "**Rows selected under different checkpoint rules**" in md and "`dto (dev set)`" in md
    ax = captured["fig"].axes[0]  # the plot labels points by their settings, never by s1/s2
    labels = {t.get_text() for t in ax.texts}
    assert labels == {"β=0.5", "β=1", "β=2"}


def test_the_report_reads_the_runs_and_writes_its_files_under_one_lock(swept, monkeypatch):
    """Two workers that finish together each write a report: the runs are read and the three files written under
    an exclusive lock, so the one that writes last has read last (once the runs were read outside it, a worker a run
    short wrote last: tests/cli/test_sweep.py's kill -9 sweep). Seen from another open file of the lock, as the
    other worker sees it."""
    import fcntl

    from fairmt.sweep import report as rep

    lock = Path(swept.output_dir) / rep.REPORT_LOCK
    held = []

    def probe(what):
        with open(lock, "a") as other:  # noqa: SIM115 - the other worker's open file of the lock
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(what)
            else:
                fcntl.flock(other, fcntl.LOCK_UN)

    build, write = rep.build_report, rep.render_markdown
    monkeypatch.setattr(rep, "build_report", lambda *a: (probe("read"), build(*a))[1])
    monkeypatch.setattr(rep, "render_markdown", lambda r: (probe("write"), write(r))[1])
    monkeypatch.setattr("fairmt.eval.report.save_figure_atomic", lambda fig, path: None)
    rep.write_report(swept.output_dir, swept)
    assert held == ["read", "write"]
    probe("after")
    assert held == ["read", "write"]  # let go after


def test_unknown_ccd_objective_is_refused_before_any_trial_with_names_objective_accepts():
    from fairmt.commands.train import load_recipe
    from fairmt.errors import FairmtError
    from fairmt.sweep.results import metric_patterns
    from fairmt.sweep.spec import check_metrics

    patterns = metric_patterns("ccd", load_recipe("ccd/minilm_cda", []))
    check_metrics(["dev.cced_gap", "dev.probe_avg_abs", "validation.after.cced.gap"], patterns)
    with pytest.raises(FairmtError, match="did you mean dev.cced_gap") as err:
        check_metrics(["dev.cced_gapp"], patterns)  # dev.* used to let any name through to the first trial
    assert "test." not in str(err.value)


def test_one_objective_selects_by_it_and_says_when_the_runner_up_is_within_the_noise(swept):
    from fairmt.sweep import report as rep
    from fairmt.sweep.spec import default_rule

    spec = copy.deepcopy(swept)
    spec.objectives, spec.tradeoff = [["dev.cced_gap", "minimize"]], []
    spec.select = default_rule(spec.objectives)
    assert spec.select == "objective" and default_rule([["dev.loss", "minimize"]]) == "loss"
    r = rep.write_report(spec.output_dir, spec)
    means = {s["id"]: s["mean"]["dev.cced_gap"] for s in r["settings"]}
    assert r["selected"]["setting"] == min(means, key=means.get) == "s1"
    ru = r["selection"]["by_rule"]["objective"]["runner_up"]
    sd = statistics.stdev([GAP[0.5], GAP[0.5] + 0.2])
    assert ru["setting"] == "s2" and ru["metrics"]["dev.cced_gap"]["pooled_std"] == pytest.approx(sd)
    assert ru["distinguishable"] is False  # 0.05 apart, seed std 0.14
    md = (Path(spec.output_dir) / "sweep.md").read_text()
    assert "**not distinguishable** from the runner-up" in md
    assert "0.15 ± 0.14" in md  # two significant digits of the std, the mean to the same place
    assert "dto needs two trade-off metrics" in r["selection"]["by_rule"]["dto"]["unavailable"]
    assert "--select objective" in r["selection"]["by_rule"]["dto"]["unavailable"]


def test_spread_digits():
    from fairmt.sweep.report import mean_pm, spread_digits

    assert [spread_digits(x) for x in (0.021, 0.23, 4.3, 12.0, None, 0.0)] == [3, 2, 0, 0, 2, 2]
    assert mean_pm(0.02480, 0.021) == "0.025 ± 0.021" and mean_pm(85.83, 1.31) == "85.8 ± 1.3"


def test_a_setting_whose_final_model_is_at_chance_is_flagged_in_sweep_md(tmp_path, capsys, monkeypatch):
    """Issue 44 item 9: an INLP run whose final model collapsed to chance (results.json info.inlp.at_chance, set by
    the classification recipe) is named in sweep.md's table and summary, in sweep.json, and on the console."""
    from fairmt.commands.sweep import _print_summary
    from fairmt.sweep.engine import run_sweep
    from fairmt.sweep.report import write_report
    from fairmt.sweep.spec import build_spec
    from sweep_helpers import fake_runner

    def runner(cmd, log):  # at lr 0.1, seed 1 collapsed
        return fake_runner(
            cmd,
            log,
            extra=lambda over: {
                "info": {"inlp": {"at_chance": float(over["training.learning_rate"]) == 0.1 and over["seed"] == "1"}}
            },
        )

    monkeypatch.setattr("fairmt.eval.report.save_figure_atomic", lambda fig, path: None)
    spec = build_spec(
        "classification/fcl_inlp",
        [],
        ["training.learning_rate=0.01,0.1"],
        [],
        "0,1",
        [],
        output_dir=str(tmp_path / "s"),
    )
    assert run_sweep(spec, runner=runner, echo=lambda line: None).complete
    r = write_report(spec.output_dir, spec)
    assert [s.get("at_chance") for s in r["settings"]] == [None, [1]]
    md = (Path(spec.output_dir) / "sweep.md").read_text()
    row = next(x for x in md.splitlines() if x.startswith("| s2 "))
    assert "**AT CHANCE** (seed 1)" in row and "AT CHANCE" not in next(
        x for x in md.splitlines() if x.startswith("| s1 ")
    )
    assert "**At chance:** s2 (`learning_rate=0.1`) seed 1 of 2" in md
    _print_summary(r)
    assert "warning: a final model at chance" in capsys.readouterr().out


def test_a_runner_up_within_the_seed_noise_on_gap_is_not_distinguishable():
    """Issue 53: DTO selects by accuracy and GAP; the runner-up 5 points of accuracy behind (pooled std 1) but 0.5
    points of GAP apart (pooled std 2) is not distinguishable: one metric the rule selects by is within the noise."""
    from types import SimpleNamespace

    from fairmt.sweep.report import runner_up

    spec = SimpleNamespace(
        tradeoff=[("dev.accuracy", "maximize"), ("dev.gap", "minimize")],
        objectives=[("dev.accuracy", "maximize"), ("dev.gap", "minimize")],
        select_tolerance=0.01,
    )
    done = [
        {
            "id": "s1",
            "overrides": {"b": 1},
            "mean": {"dev.accuracy": 80.0, "dev.gap": 10.0},
            "std": {"dev.accuracy": 1.0, "dev.gap": 2.0},
        },
        {
            "id": "s2",
            "overrides": {"b": 2},
            "mean": {"dev.accuracy": 75.0, "dev.gap": 10.5},
            "std": {"dev.accuracy": 1.0, "dev.gap": 2.0},
        },
    ]
    ru = runner_up(done, 0, "dto", spec, percent=True)
    assert ru["setting"] == "s2" and ru["metrics"]["dev.accuracy"]["difference"] == pytest.approx(5.0)
    assert ru["distinguishable"] is False and "on every metric" in ru["test"]
    done[1]["mean"]["dev.gap"] = 15.0  # now both differences exceed their pooled std
    assert runner_up(done, 0, "dto", spec, percent=True)["distinguishable"] is True
