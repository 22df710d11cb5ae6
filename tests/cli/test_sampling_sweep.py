"""`fairmt sweep` drives the fairness-driven sampling recipes (method sampling): the sweep sets their top-level seed
and output_dir (not the training.* keys of the other families), their objectives (dominance, entropy, separation,
probe.<target>.*) are checked before any trial, and a sweep whose every trial failed for one reason says so instead
of inviting a rerun that can only fail again."""

import json
from pathlib import Path

import pytest

from fairmt.errors import FairmtError

pytest.importorskip("optuna")

RECIPE = "sampling/celeba_resnet50"


def _spec(tmp_path, objectives=("dominance:min",), seeds="2"):
    from fairmt.sweep.spec import build_spec

    return build_spec(
        RECIPE,
        ["data.dataset=synthetic"],
        ["stage2.epsilon=0.1,0.2"],
        [],
        seeds,
        list(objectives),
        output_dir=str(tmp_path / "s"),
    )


def _fake_sampling_runner(cmd, log: Path) -> int:
    over = dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))
    eps, seed = float(over["stage2.epsilon"]), int(over["seed"])
    out = Path(json.loads(over["output_dir"]))
    out.mkdir(parents=True)
    (out / "results.json").write_text(
        json.dumps(
            {
                "dominance": 0.4 - eps / 2 + 0.01 * seed,
                "entropy": 1.8 + eps,
                "separation": 0.5,
                "probe": {"shape": {"accuracy": 0.9 - eps, "gap": 0.1}},
                "seed": seed,
            }
        )
    )
    log.write_text("ok\n")
    return 0


def test_a_sampling_sweep_sets_seed_and_folder_and_runs(tmp_path):
    from fairmt.sweep.engine import run_sweep, train_command

    spec = _spec(tmp_path)
    cmd = train_command(spec, {"stage2.epsilon": 0.1}, 1, tmp_path / "run")
    assert "seed=1" in cmd and f"output_dir={json.dumps(str(tmp_path / 'run'))}" in cmd
    assert not any(c.startswith(("training.seed=", "training.output_dir=")) for c in cmd)
    outcome = run_sweep(spec, runner=_fake_sampling_runner, echo=lambda line: None)
    assert outcome.complete and outcome.ran == 4 and not outcome.failed


@pytest.mark.parametrize(
    "objective,expected",
    [("dominanse:min", "did you mean dominance"), ("probe.shape.gapp:min", "unknown objective metric")],
)
def test_unknown_sampling_objective_is_refused_before_any_trial(tmp_path, objective, expected):
    with pytest.raises(FairmtError, match=expected):
        _spec(tmp_path, [objective])
    assert not (tmp_path / "s").exists()
    for ok in ("entropy:max", "probe.Attractive.auc_roc:max", "probe.Wavy_Hair.gap:min", "separation:max"):
        _spec(tmp_path, [ok])


def test_every_trial_failing_for_one_reason_is_said_once(tmp_path):
    from fairmt.commands.sweep import _one_reason
    from fairmt.sweep.engine import run_sweep

    def failing(cmd, log):
        log.write_text("fairmt: error: recipe key data.root: no CelebA folder given\n")
        return 2

    spec = _spec(tmp_path, seeds="1")
    outcome = run_sweep(spec, runner=failing, echo=lambda line: None)
    assert outcome.ran == 0 and len(outcome.failed) == 2
    reason = _one_reason(outcome.failed)
    assert reason is not None and "no CelebA folder given" in reason and str(tmp_path) not in reason
    assert _one_reason(outcome.failed + ["other: fairmt train exited with 1 (log x: out of memory)"]) is None
