"""`fairmt sweep`: real sweeps of a classification recipe on the shipped hate-speech data (one `fairmt train`
subprocess per run), kill -9 in the middle of a run, two `--join` workers, aggregation checked against hand
computations and brute-force fronts, bad input refused before any run, and the engine's pieces on stand-ins."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fairmt.cli import main
from fairmt.sweep.engine import RETRY_OF, point
from sweep_helpers import fake_runner, in_process_runner, standin_data_root, worker_args

optuna = pytest.importorskip("optuna")
psutil = pytest.importorskip("psutil")

REPO = Path(__file__).resolve().parents[2]
RECIPE = "classification/fcl"
# the cheapest real run: bag-of-embeddings over the Spanish hate-speech token ids, one epoch of 16 steps
CHEAP = [
    "data.dataset=hatespeech",
    "model.type=embedding_bag",
    "model.embed_dim=8",
    "model.hidden_dim=8",
    "training.num_train_epochs=1",
    "training.per_device_train_batch_size=128",
    "save_predictions=false",
]
GRID = ["--grid", "training.learning_rate=0.001,0.02", "--seeds", "2"]


def _env(shared_data: Path) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "FAIRMT_DATA": str(shared_data),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }


def _ours(out: Path) -> list:
    """Live processes whose command line names the sweep folder (workers and their training runs)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and str(out) in " ".join(p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            pass
    return found


def _mtimes(root: Path) -> dict:
    return {str(p): p.stat().st_mtime_ns for p in sorted(root.rglob("*")) if p.is_file()}


def _progress_runs(text: str) -> list[tuple[str, str]]:
    """(setting, seed) of every run a worker trained (not reused), from its progress lines."""
    return re.findall(r"\] (training\.learning_rate=\S+) seed (\d+) \(trial \d+, \d+ s\)", text)


@pytest.fixture(scope="module")
def killed_then_joined(shared_data, tmp_path_factory):
    """A 2 learning rates × 2 seeds sweep: worker A is killed with SIGKILL (its whole process group) while its second
    run trains; then two `--join` workers B and C, started together on the same journal study, finish it."""
    tmp = tmp_path_factory.mktemp("sweep")
    out, journal = tmp / "sweep", tmp / "study.journal"
    cmd = [
        sys.executable,
        "-m",
        "fairmt",
        "sweep",
        RECIPE,
        *CHEAP,
        *GRID,
        "--output-dir",
        str(out),
        "--storage",
        str(journal),
        "--join",
    ]
    env = _env(shared_data)
    a = subprocess.Popen(
        cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    deadline, killed_root = time.time() + 480, None
    try:
        while time.time() < deadline and a.poll() is None:
            done = list(out.glob("trials/*/seed-*/done.json"))
            started = [
                p.parent for p in out.glob("trials/*/seed-*/trial.json") if not (p.parent / "done.json").exists()
            ]
            try:  # a trial: forked from the worker's trial server (fairmt/sweep/forked.py), named so
                training = [c for c in psutil.Process(a.pid).children(recursive=True) if c.name() == "fairmt-trial"]
            except psutil.Error:
                training = []
            if done and started and training and (started[0] / "train.log").stat().st_size > 0:
                killed_root = started[0]
                break
            time.sleep(0.2)
        assert killed_root is not None, "worker A never reached its second run:\n" + (
            a.stdout.read() if a.poll() is not None else ""
        )
        before = _mtimes(out / "trials")
        finished_before = sorted(str(p.parent) for p in out.glob("trials/*/seed-*/done.json"))
        os.killpg(a.pid, signal.SIGKILL)
        a.wait(timeout=30)
        for _ in range(50):  # SIGKILL is immediate; give the kernel a moment to remove the processes
            if not _ours(out):
                break
            time.sleep(0.1)
        orphans = [" ".join(p.cmdline()) for p in _ours(out)]
        output_a = a.stdout.read()
    finally:
        if a.poll() is None:
            os.killpg(a.pid, signal.SIGKILL)
            a.wait()
    workers = [
        subprocess.Popen(
            cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        for _ in range(2)
    ]
    try:
        outputs = [w.communicate(timeout=600)[0] for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGKILL)
                w.wait()
    return SimpleNamespace(
        out=out,
        journal=journal,
        before=before,
        finished_before=finished_before,
        killed_root=killed_root,
        orphans=orphans,
        output_a=output_a,
        outputs=outputs,
        rcs=[w.returncode for w in workers],
    )


def _study(journal: Path, name: str = "sweep"):
    from optuna.storages.journal import JournalFileBackend

    return optuna.load_study(study_name=name, storage=optuna.storages.JournalStorage(JournalFileBackend(str(journal))))


@pytest.mark.slow
@pytest.mark.data
def test_kill_9_mid_run_then_join_workers_finish_every_run_once(killed_then_joined):
    r = killed_then_joined
    assert r.orphans == [], f"processes left after kill -9 of the worker's group: {r.orphans}"
    assert r.rcs == [0, 0], "\n----\n".join(r.outputs)
    assert "[1/4]" in r.output_a and "ETA" in r.output_a  # a progress line per finished run
    assert r.finished_before and str(r.killed_root) not in r.finished_before
    # completed runs untouched: same files, same modification times
    after = _mtimes(r.out / "trials")
    for path, mtime in r.before.items():
        if any(path.startswith(f + "/") for f in r.finished_before):
            assert after.get(path) == mtime, path
    # the interrupted run was failed (its process is gone), queued again with its parameters and rerun once
    study = _study(r.journal)
    states = [t.state.name for t in study.trials]
    assert states.count("COMPLETE") == 4 and states.count("FAIL") == 1 and "RUNNING" not in states
    assert "WAITING" not in states
    failed = next(t for t in study.trials if t.state.name == "FAIL")
    # queued again by the worker that failed it (Optuna's retry callback: `failed_trial`) or, when the other worker
    # started in between, by that worker's requeue of failed trials (`fairmt:retry_of`); of two such retries the
    # later is pruned as a duplicate (engine._duplicate), so either may be the one that runs
    retries = [
        t for t in study.trials if failed.number in (t.system_attrs.get("failed_trial"), t.user_attrs.get(RETRY_OF))
    ]
    assert [point(t) for t in retries if t.state.name == "COMPLETE"] == [point(failed)]
    complete = [json.dumps(point(t), sort_keys=True) for t in study.trials if t.state.name == "COMPLETE"]
    assert len(set(complete)) == 4  # every (setting, seed) exactly once
    # two workers at once: each remaining run trained by exactly one of them, and both took part
    trained = [_progress_runs(o) for o in r.outputs]
    assert all(trained), "\n----\n".join(r.outputs)
    assert sorted(trained[0] + trained[1]) == sorted(set(trained[0] + trained[1]))
    assert len(trained[0] + trained[1]) == 4 - len(r.finished_before)
    assert "interrupted" in "".join(r.outputs)
    assert len(list(r.out.glob("trials/*/seed-*"))) == 4
    # every run forked from its worker's trial server, none a fresh interpreter
    logs = [p.read_text() for p in r.out.glob("trials/*/seed-*/train.log")]
    assert len(logs) == 4 and all("# forked from the sweep worker's trial server" in log for log in logs)


def _hand_stats(out: Path) -> dict:
    """mean and sample std of every numeric leaf, per learning rate, from the 4 results.json files directly."""
    per: dict[float, list[dict]] = {}
    for res in sorted(out.glob("trials/*/seed-*/run/results.json")):
        data = json.loads(res.read_text())
        per.setdefault(data["config"]["training"]["learning_rate"], []).append(data)

    def leaves(d, prefix=""):
        for k, v in d.items():
            if not prefix and k in ("config", "seed"):
                continue
            if isinstance(v, dict):
                yield from leaves(v, f"{prefix}{k}.")
            elif isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                yield f"{prefix}{k}", float(v)

    stats = {}
    for lr, runs in per.items():
        vals: dict[str, list[float]] = {}
        for run in runs:
            for k, v in leaves(run):
                vals.setdefault(k, []).append(v)
        stats[lr] = {k: (statistics.mean(v), statistics.stdev(v), len(v)) for k, v in vals.items()}
    return stats


def _brute_front(points: list[tuple[float, float]], senses=(1, -1)) -> set[int]:
    """Indices not dominated by any other point (sense 1: higher is better, -1: lower)."""

    def dominates(p, q):
        pairs = list(zip(p, q, senses))
        return all(s * a >= s * b for a, b, s in pairs) and any(s * a > s * b for a, b, s in pairs)

    return {i for i, p in enumerate(points) if not any(dominates(q, p) for j, q in enumerate(points) if j != i)}


@pytest.mark.slow
@pytest.mark.data
def test_report_matches_hand_computation_and_brute_force(killed_then_joined):
    out = killed_then_joined.out
    report = json.loads((out / "sweep.json").read_text())
    hand = _hand_stats(out)
    assert len(report["settings"]) == 2 and sorted(hand) == [0.001, 0.02]
    for s in report["settings"]:
        h = hand[s["overrides"]["training.learning_rate"]]
        assert s["n"] == 2 and s["seeds"] == [0, 1]
        # plus Shen et al.'s Tradeoff, derived over the settings compared (tests/eval/test_shen_tradeoff.py)
        assert set(s["mean"]) == set(h) | {"dev.tradeoff", "test.tradeoff"}
        for k, (m, sd, n) in h.items():
            assert n == 2 and s["mean"][k] == pytest.approx(m, rel=1e-12, abs=1e-12), k
            assert s["std"][k] == pytest.approx(sd, rel=1e-9, abs=1e-12), k
    assert len({s["mean"]["dev.accuracy"] for s in report["settings"]}) == 2  # the settings really differ
    ids = [s["id"] for s in report["settings"]]
    for split in ("dev", "test"):
        pts = [(s["mean"][f"{split}.accuracy"], s["mean"][f"{split}.gap"]) for s in report["settings"]]
        assert set(report["pareto"][split]["settings"]) == {ids[i] for i in _brute_front(pts)}
    # DTO (Shen et al.'s normalised form) and accuracy-then-GAP on the dev means, by brute force
    acc = np.array([s["mean"]["dev.accuracy"] for s in report["settings"]]) / 100
    fair = 1 - np.array([s["mean"]["dev.gap"] for s in report["settings"]]) / 100
    dto = np.sqrt((1 - acc / acc.max()) ** 2 + (1 - fair / fair.max()) ** 2)
    assert report["selection"]["by_rule"]["dto"]["setting"] == ids[int(np.argmin(dto))]
    gaps = [g if a >= acc.max() - 0.01 else math.inf for a, g in zip(acc, 1 - fair)]
    assert report["selection"]["by_rule"]["accuracy_then_gap"]["setting"] == ids[int(np.argmin(gaps))]
    losses = [s["mean"]["dev.loss"] for s in report["settings"]]  # the dev CE of the final dev predictions
    assert report["selection"]["by_rule"]["loss"]["setting"] == ids[int(np.argmin(losses))]
    sel = report["selected"]
    chosen = next(s for s in report["settings"] if s["id"] == sel["setting"])
    assert sel["test"]["mean"]["test.accuracy"] == chosen["mean"]["test.accuracy"]
    assert not any(k.startswith("test") for k in sel["dev"]["mean"])
    assert Path(sel["model_dir"], "config.json").is_file()
    md = (out / "sweep.md").read_text()
    assert "| s1 |" in md and "| s2 |" in md and "± " in md and "**selected**" in md
    assert (out / "tradeoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.data
def test_report_command_and_push_of_the_selected_run(killed_then_joined, fake_hub):
    out = killed_then_joined.out
    before = json.loads((out / "sweep.json").read_text())
    for name in ("sweep.json", "sweep.md", "tradeoff.png"):
        (out / name).unlink()
    assert main(["sweep", "report", str(out)]) == 0
    again = json.loads((out / "sweep.json").read_text())
    assert again["settings"] == before["settings"] and again["selected"] == before["selected"]
    assert (out / "sweep.md").is_file() and (out / "tradeoff.png").is_file()

    hub = fake_hub
    assert main(["push", str(out), "me/fcl", "--results", str(out / "sweep.json"), "--method", "fcl"]) == 0
    card = (hub / "me" / "fcl" / "README.md").read_text()
    run_results = json.loads((out / before["selected"]["run"] / "run" / "results.json").read_text())
    assert f"value: {run_results['test']['accuracy']}" in card  # the pushed run's own test accuracy, in full
    assert (hub / "me" / "fcl" / "config.json").is_file()


# ------------------------------------------------------------------------------------------------- bad input
BAD = [
    (["--grid", "training.lerning_rate=0.1,0.2"], "training.lerning_rate"),
    (["--grid", "training.learning_rate=fast,0.1"], "training.learning_rate=fast"),
    (["--grid", "model.dropout=0.1,high"], "model.dropout=high: the recipe's model.dropout is a number"),
    (["--grid", "training.learning_rate=0.1", "--seeds", "0"], "--seeds must be at least 1"),
    (["--grid", "training.learning_rate=0.1", "--objective", "dev.acuracy:max"], "did you mean dev.accuracy"),
    (["--grid", "training.learning_rate=0.1", "--objective", "test.gap:min"], "is a test metric"),
    (["--grid", "seed=1,2"], "use --seeds"),
    (
        ["--grid", "training.learning_rate=0.1", "--storage", "sqlite:////no/such/folder/study.db"],
        "cannot open the study storage sqlite:////no/such/folder/study.db",
    ),
    (
        ["--grid", "training.learning_rate=0.1", "--storage", "nosuchdb://me:s3cret@host/db"],
        "cannot open the study storage nosuchdb://me:***@host/db",
    ),
    (
        ["--grid", "training.learning_rate=0.1", "--launcher", "accelerate", "--accelerate-config", "nope.yaml"],
        "--accelerate-config nope.yaml",
    ),
]


@pytest.mark.parametrize("extra,expected", BAD, ids=[b[1][:30] for b in BAD])
def test_bad_input_is_one_line_before_any_run(tmp_path, capsys, extra, expected):
    out = tmp_path / "sweep"
    assert main(["sweep", RECIPE, *CHEAP, "--output-dir", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("fairmt: error: ") and expected in err, err
    assert "s3cret" not in err
    assert not out.exists()  # nothing was started, not even the sweep folder


def test_the_recipes_data_and_model_are_checked_before_the_first_trial(tmp_path, capsys, monkeypatch):
    """Issue 44 item 10: what every trial would hit (the recipe's data folder, its model) is one line before the first
    trial (the trial runner, here a tripwire, never called) and before the sweep folder or its study exist."""
    from fairmt.sweep import engine

    def tripwire(cmd, log):
        raise AssertionError("a trial started before the checks")

    monkeypatch.setattr(engine, "run_subprocess", tripwire)
    for extra, expected in (
        (
            ["data.root=/no/such/hatespeech"],
            "the hate-speech data folder (data.root) /no/such/hatespeech does not exist",
        ),
        (["model.type=frozen_embedder", "model.name_or_path=/no/such/encoder"], "/no/such/encoder"),
    ):
        out = tmp_path / "sweep"
        # another encoder: the bag-of-embeddings sizes are not read by it (and would be refused as such)
        cheap = [c for c in CHEAP if not (extra[0].startswith("model.type") and c.startswith("model."))]
        assert (
            main(["sweep", RECIPE, *cheap, *extra, "--grid", "training.learning_rate=0.1", "--output-dir", str(out)])
            == 2
        )
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("fairmt: error: every trial of this sweep would fail: ")
        assert expected in err and "nothing was started" in err, err
        assert not out.exists()


def test_the_sweep_owns_seed_and_output_folder(tmp_path, capsys):
    for fixed, expected in (
        ("seed=4", "override seed=...: give the seeds with --seeds"),
        ("training.output_dir=x", "the sweep gives every run its own folder"),
    ):
        assert (
            main(["sweep", RECIPE, fixed, "--grid", "training.learning_rate=0.1", "--output-dir", str(tmp_path / "s")])
            == 2
        )
        assert expected in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_unknown_objective_lists_the_available_metrics(tmp_path, capsys):
    assert (
        main(
            [
                "sweep",
                RECIPE,
                "--grid",
                "training.learning_rate=0.1",
                "--objective",
                "dev.f2:max",
                "--output-dir",
                str(tmp_path / "s"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    for name in ("dev.accuracy", "dev.gap", "dev.delta_eo", "dev.macro_f1", "dev.leakage_h"):
        assert name in err


def test_without_optuna_the_command_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna -> ImportError
    assert main(["sweep", RECIPE, "--grid", "training.learning_rate=0.1,0.2"]) == 2
    assert 'pip install "fairmt[sweep]"' in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------- engine pieces
def test_pareto_front_is_optunas_and_equals_brute_force():
    from fairmt.sweep.report import pareto_front

    rng = np.random.default_rng(0)
    for trial in range(30):
        n = int(rng.integers(1, 12))
        pts = [tuple(float(v) for v in rng.integers(0, 5, size=2)) for _ in range(n)]  # ties and duplicates
        senses = [(1, -1), (1, 1), (-1, -1)][trial % 3]
        dirs = ["maximize" if s == 1 else "minimize" for s in senses]
        assert set(pareto_front([list(p) for p in pts], dirs)) == _brute_front(pts, senses), (pts, dirs)
    assert pareto_front([[1.0, float("nan")], [0.5, 0.5]], ["maximize", "minimize"]) == [1]


def test_flatten_names_and_skips():
    from fairmt.sweep.results import flatten

    flat = flatten(
        {
            "dev": {"accuracy": 50, "scale": "percent", "ok": True},
            "test": {"gap": 1.5},
            "config": {"seed": 3},
            "seed": 3,
            "info": {"log": [1, 2]},
            "x": float("nan"),
        }
    )
    assert flat == {"dev.accuracy": 50.0, "test.gap": 1.5}


def test_search_mode_nsga2_front_is_the_studys_best_trials(tmp_path):
    from fairmt.sweep.engine import open_storage, run_sweep
    from fairmt.sweep.report import write_report
    from fairmt.sweep.spec import build_spec

    spec = build_spec(
        RECIPE,
        CHEAP,
        ["objective_args.fcl_beta=0.0,0.5,1.0"],
        ["training.learning_rate=0.0001:0.1:log"],
        "0,1",
        [],
        search=6,
        output_dir=str(tmp_path / "s"),
        sampler_seed=0,
    )
    lines: list[str] = []
    outcome = run_sweep(spec, runner=fake_runner, echo=lines.append)
    study = optuna.load_study(study_name="s", storage=open_storage(spec.storage))
    assert study.user_attrs["fairmt:sampler"] == "NSGAIISampler" and len(study.directions) == 2
    assert outcome.complete and not outcome.failed and [t.state.name for t in study.trials] == ["COMPLETE"] * 6
    assert sum("left, elapsed" in ln for ln in lines) == 12
    report = write_report(spec.output_dir, spec)
    by_params = {json.dumps(s["overrides"], sort_keys=True): s for s in report["settings"]}
    assert len(by_params) == len({json.dumps(t.params, sort_keys=True) for t in study.trials})
    # a setting the sampler proposes again reuses its finished runs: each (setting, seed) trained once
    assert outcome.ran == 2 * len(by_params) and outcome.ran + outcome.reused == 12
    assert all(s["n"] == 2 for s in report["settings"]) and report["runs_finished"] == report["runs_expected"]
    # each trial's value is the seed mean of its runs' dev metrics
    for t in study.trials:
        s = by_params[json.dumps(t.params, sort_keys=True)]
        assert t.values == pytest.approx([s["mean"]["dev.accuracy"], s["mean"]["dev.gap"]])
    optuna_front = {by_params[json.dumps(t.params, sort_keys=True)]["id"] for t in study.best_trials}
    pts = [(s["mean"]["dev.accuracy"], s["mean"]["dev.gap"]) for s in report["settings"]]
    assert (
        set(report["pareto"]["dev"]["settings"])
        == optuna_front
        == {report["settings"][i]["id"] for i in _brute_front(pts)}
    )
    # the area under each split's front (fairlib's AUC) is reported, on dev and test, over the same front
    from fairmt.eval.classification import performance_fairness_auc

    for split in ("dev", "test"):
        auc = report["front_auc"][split]
        assert set(auc["settings"]) == set(report["pareto"][split]["settings"])
        means = [s["mean"] for s in report["settings"]]
        assert auc["auc"] == pytest.approx(
            performance_fairness_auc(
                [m[f"{split}.accuracy"] / 100 for m in means], [1 - m[f"{split}.gap"] / 100 for m in means]
            ).auc
        )
    assert "Area under the performance–fairness front" in (Path(spec.output_dir) / "sweep.md").read_text()


def test_trials_show_setting_seed_and_run_folder_by_name_and_the_seed_is_no_parameter(tmp_path):
    """What optuna-dashboard reads, read back through Optuna's API: the objectives by name; every grid trial's
    setting, seed and run folder as user attributes (the run folder is the one holding that run's done.json); no
    trial has a `seed` parameter, so parameter importance sees the hyper-parameters only. A search trial carries
    its seeds and run folders."""
    from fairmt.sweep.engine import open_storage, run_sweep
    from fairmt.sweep.spec import build_spec

    grid = build_spec(
        RECIPE,
        CHEAP,
        ["training.learning_rate=0.001,0.01", "objective_args.fcl_beta=0.5"],
        [],
        "0,1",
        [],
        output_dir=str(tmp_path / "g"),
    )
    assert run_sweep(grid, runner=fake_runner, echo=lambda line: None).complete
    study = optuna.load_study(study_name="g", storage=open_storage(grid.storage))
    assert study.metric_names == ["dev.accuracy", "dev.gap"]
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert len(complete) == 4
    seen = set()
    for t in complete:
        assert set(t.params) == {"training.learning_rate", "objective_args.fcl_beta"}  # no seed
        assert t.user_attrs["setting"] == t.params
        done = json.loads((Path(t.user_attrs["run_dir"]) / "done.json").read_text())
        assert done["setting"] == t.params and done["seed"] == t.user_attrs["seed"] and done["trial"] == t.number
        assert t.values == pytest.approx(
            [
                70
                + 10 * 0.5
                - 5 * abs(math.log10(t.params["training.learning_rate"]) + 2)
                + 0.5 * t.user_attrs["seed"],
                2 + 8 * 0.5 + 0.3 * t.user_attrs["seed"],
            ]
        )
        seen.add((t.params["training.learning_rate"], t.user_attrs["seed"]))
    assert seen == {(lr, seed) for lr in (0.001, 0.01) for seed in (0, 1)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the evaluator's note on the direction of the target
        importances = optuna.importance.get_param_importances(study, target=lambda t: t.values[0])
    assert set(importances) <= {"training.learning_rate", "objective_args.fcl_beta"}

    search = build_spec(
        RECIPE,
        CHEAP,
        ["objective_args.fcl_beta=0.5"],
        ["training.learning_rate=0.0001:0.1:log"],
        "0,1",
        ["dev.accuracy:max"],
        search=2,
        output_dir=str(tmp_path / "s"),
        sampler_seed=0,
    )
    run_sweep(search, runner=fake_runner, echo=lambda line: None)
    study = optuna.load_study(study_name="s", storage=open_storage(search.storage))
    assert study.metric_names == ["dev.accuracy"]
    for t in study.trials:
        assert set(t.params) == {"training.learning_rate", "objective_args.fcl_beta"} and t.user_attrs["seeds"] == [
            0,
            1,
        ]
        assert [json.loads((Path(d) / "done.json").read_text())["seed"] for d in t.user_attrs["run_dirs"]] == [0, 1]


def test_single_objective_search_uses_tpe(tmp_path):
    from fairmt.sweep.engine import make_sampler
    from fairmt.sweep.spec import build_spec

    spec = build_spec(
        RECIPE,
        CHEAP,
        [],
        ["training.learning_rate=0.0001:0.1:log"],
        "1",
        ["dev.accuracy:max"],
        search=3,
        output_dir=str(tmp_path / "s"),
    )
    assert type(make_sampler(spec)).__name__ == "TPESampler"
    assert spec.tradeoff == [["dev.accuracy", "maximize"], ["dev.gap", "minimize"]]  # the family's axes


def _running_trial(study, params: dict, owner: dict | None, heartbeat: float | None = None):
    """A RUNNING trial with these parameters (queued, then asked) and, if given, a worker's owner record."""
    study.enqueue_trial(params)
    trial = study.ask()
    for k, v in params.items():
        trial.suggest_categorical(k, [v]) if isinstance(v, float) else trial.suggest_int(k, -10, 10)
    if owner is not None:
        trial.set_user_attr("fairmt:owner", {**owner, "trial": trial.number})
    if heartbeat is not None:
        trial.set_user_attr("fairmt:heartbeat", heartbeat)
    return trial


def test_two_join_processes_on_one_sqlite_study_run_every_run_once(tmp_path):
    """Two worker processes on the default SQLite study (6 settings × 2 seeds, a stand-in run of 0.3 s): every
    (setting, seed) runs exactly once, both workers take part, the study ends with 12 distinct complete trials."""
    from fairmt.sweep.engine import open_storage

    out, ledger = tmp_path / "s", tmp_path / "ledger.txt"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    cmd = worker_args(out, ledger, f"sqlite:///{out / 'study.db'}", "s", 6)
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [r[1][-2000:] for r in results]
    outcomes = [json.loads(r[0].strip().splitlines()[-1]) for r in results]
    runs = [tuple(line.split()) for line in ledger.read_text().splitlines()]
    assert len(runs) == 12 and len({(x, seed) for x, seed, _ in runs}) == 12
    assert len({pid for *_, pid in runs}) == 2 and sum(o["ran"] for o in outcomes) == 12
    study = optuna.load_study(study_name="s", storage=open_storage(f"sqlite:///{out / 'study.db'}"))
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert len(complete) == 12 and len({json.dumps(point(t), sort_keys=True) for t in complete}) == 12
    assert {t.state.name for t in study.trials} <= {"COMPLETE", "PRUNED"}


def test_a_grid_run_queued_twice_runs_once(tmp_path):
    """Two workers that look for the next grid run at the same moment queue the same (setting, seed) twice; the
    later trial is recognised as a duplicate, and so is a retry queued twice. A trial that was not queued with a
    seed (asked by someone else) is not a grid run."""
    from fairmt.commands.train import resolve_recipe_path
    from fairmt.sweep.engine import (
        HOST,
        OWNER,
        SEED,
        _duplicate,
        _my_owner,
        _next_run,
        _suggest,
        open_storage,
        open_study,
    )
    from fairmt.sweep.spec import SweepSpec

    spec = SweepSpec(
        recipe=RECIPE,
        recipe_path=str(resolve_recipe_path(RECIPE)),
        method="classification",
        overrides=[],
        grid={"x": [1, 2]},
        grid_raw={"x": ["1", "2"]},
        ranges={},
        seeds=[0],
        objectives=[["dev.accuracy", "maximize"]],
        tradeoff=[],
        search=None,
        output_dir=str(tmp_path),
        storage=f"sqlite:///{tmp_path / 'db'}",
        study_name="s",
    )
    study = open_study(spec, open_storage(spec.storage))
    setting, seed = _next_run(study, spec)
    assert (setting, seed) == ({"x": 1}, 0)
    for _ in range(2):  # both workers saw the same next run
        study.enqueue_trial(setting, user_attrs={SEED: seed})
    first, late = study.ask(), study.ask()
    for t in (first, late):
        t.set_user_attr(OWNER, _my_owner(t.number))
    params = _suggest(first, spec)
    assert params == _suggest(late, spec) == {"x": 1, "seed": 0}
    assert _duplicate(study, spec, first.number, params) is None
    assert _duplicate(study, spec, late.number, params).number == first.number
    assert _next_run(study, spec) == ({"x": 2}, 0)
    stray = study.ask()
    assert _suggest(stray, spec) is None  # not queued: no seed, not a run of the grid
    # the worker prunes it at once (run_sweep); left running without parameters, every later _duplicate would wait
    # for it to get them (20 × 0.25 s)
    study.tell(stray, state=optuna.trial.TrialState.PRUNED)
    # two retries of one failed run queued by two workers: the later one is the duplicate
    study.tell(first, state=optuna.trial.TrialState.FAIL)
    study.tell(late, state=optuna.trial.TrialState.PRUNED)
    study.enqueue_trial(setting, user_attrs={SEED: seed})
    study.enqueue_trial(setting, user_attrs={SEED: seed})
    a, b = study.ask(), study.ask()
    assert _suggest(a, spec) == _suggest(b, spec) == params
    for t in (a, b):
        t.set_user_attr(OWNER, {"host": HOST, **_my_owner(t.number)})
    assert _duplicate(study, spec, b.number, params).number == a.number
    assert _duplicate(study, spec, a.number, params) is None


def test_stale_trials_are_failed_and_queued_again_live_ones_kept():
    from fairmt.sweep.engine import HOST, reap_stale

    study = optuna.create_study()
    gone = subprocess.Popen(["true"])
    gone.wait()
    me = psutil.Process()
    dead = _running_trial(study, {"x": 1}, {"host": HOST, "pid": gone.pid, "pid_started": 0.0})
    live = _running_trial(study, {"x": 2}, {"host": HOST, "pid": me.pid, "pid_started": me.create_time()})
    remote_ok = _running_trial(study, {"x": 3}, {"host": "elsewhere", "pid": 1, "pid_started": 0.0}, time.time())
    remote_stale = _running_trial(
        study, {"x": 4}, {"host": "elsewhere", "pid": 1, "pid_started": 0.0}, time.time() - 3600
    )
    fresh = _running_trial(study, {"x": 5}, None)  # just asked: no owner yet
    assert sorted(reap_stale(study, grace=600)) == [dead.number, remote_stale.number]
    states = {t.number: t.state.name for t in study.trials}
    assert states[live.number] == states[remote_ok.number] == states[fresh.number] == "RUNNING"
    waiting = [t for t in study.trials if t.state.name == "WAITING"]
    assert sorted(t.params["x"] for t in waiting) == [1, 4]  # queued again with their parameters


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_heartbeat_is_recorded_from_its_thread(tmp_path, kind):
    from fairmt.sweep.engine import HEARTBEAT, Heartbeat, open_storage

    url = f"sqlite:///{tmp_path / 'db'}" if kind == "sqlite" else str(tmp_path / "study.journal")
    study = optuna.create_study(storage=open_storage(url), study_name="h")
    trial = study.ask()
    t0 = time.time()
    with Heartbeat(trial, 0.05):
        time.sleep(0.5)
    beat = study.trials[0].user_attrs[HEARTBEAT]
    assert t0 < beat <= time.time()


def test_a_second_worker_without_join_is_refused(tmp_path, capsys, monkeypatch):
    from fairmt.sweep.engine import HOST, open_storage, open_study, prepare_folder
    from fairmt.sweep.spec import build_spec

    standin_data_root(monkeypatch, tmp_path)
    args = [RECIPE, *CHEAP, "--grid", "training.learning_rate=0.1,0.2", "--output-dir", str(tmp_path / "s")]
    spec = build_spec(RECIPE, CHEAP, ["training.learning_rate=0.1,0.2"], [], "1", [], output_dir=str(tmp_path / "s"))
    prepare_folder(spec)
    study = open_study(spec, open_storage(spec.storage))
    me = psutil.Process()
    _running_trial(
        study,
        {"training.learning_rate": 0.1, "seed": 0},
        {"host": HOST, "pid": me.pid, "pid_started": me.create_time()},
    )
    assert main(["sweep", *args]) == 2
    assert "pass --join" in capsys.readouterr().err
    # and another sweep in the same folder is refused, naming what differs
    assert (
        main(["sweep", RECIPE, *CHEAP, "--grid", "training.learning_rate=0.3", "--output-dir", str(tmp_path / "s")])
        == 2
    )
    assert "holds another sweep (grid differ)" in capsys.readouterr().err


def test_trial_command_and_accelerate_launcher(tmp_path):
    from fairmt.sweep.engine import train_command
    from fairmt.sweep.spec import build_spec

    spec = build_spec(
        RECIPE,
        CHEAP,
        ["objective_args.temperature=0.1,0.5"],
        [],
        "1",
        [],
        output_dir=str(tmp_path / "s"),
        launcher="accelerate",
        accelerate_config="ddp",
    )
    cmd = train_command(spec, {"objective_args.temperature": 0.5}, 3, tmp_path / "run")
    assert cmd[1:5] == ["-m", "accelerate.commands.launch", "--config_file", spec.accelerate_config]
    assert cmd[5:8] == ["-m", "fairmt", "train"] and Path(spec.accelerate_config).name == "ddp.yaml"
    assert "objective_args.temperature=0.5" in cmd and "seed=3" in cmd
    assert f"training.output_dir={json.dumps(str(tmp_path / 'run'))}" in cmd
    assert cmd.index(CHEAP[0]) < cmd.index("objective_args.temperature=0.5")  # the setting after the fixed overrides


def _fake_ccd_runner(cmd: list[str], log: Path) -> int:
    """Stands in for a CCD run: ``ccd_results.json`` with before/after bias measurements where the recipe's
    ``results`` key says (the sweep sets it per run), as functions of β and the seed."""
    over = dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))
    beta, seed = float(over["training.beta"]), int(over["training.seed"])
    path = Path(json.loads(over["results"]))
    path.parent.mkdir(parents=True)
    after = {"seat_avg_abs": 0.5 / (1 + beta) + 0.01 * seed, "cced": {"gap": 0.1 * beta + 0.001 * seed, "n": 150}}
    path.write_text(
        json.dumps(
            {
                "before": {"seat_avg_abs": 0.6},
                "after": after,
                "train": {"rho": 0.2},
                "glue": {"avg": 80 - 2 * beta - seed},
            }
        )
    )
    log.write_text("ok\n")
    return 0


def test_ccd_family_sweep_aggregates_and_selects_nothing_without_dev_metrics(tmp_path):
    from fairmt.sweep.engine import run_sweep, train_command
    from fairmt.sweep.report import write_report
    from fairmt.sweep.spec import build_spec

    spec = build_spec(
        "ccd/minilm_cda",
        [],
        ["training.beta=0.5,1.0,2.0"],
        [],
        "2",
        ["after.seat_avg_abs:min", "after.cced.gap:min"],
        output_dir=str(tmp_path / "s"),
    )
    cmd = train_command(spec, {"training.beta": 0.5}, 1, tmp_path / "run")
    assert "training.seed=1" in cmd and f"results={json.dumps(str(tmp_path / 'run' / 'ccd_results.json'))}" in cmd
    outcome = run_sweep(spec, runner=_fake_ccd_runner, echo=lambda line: None)
    assert outcome.complete and outcome.ran == 6
    report = write_report(spec.output_dir, spec)
    s1 = report["settings"][0]
    assert s1["n"] == 2 and s1["mean"]["after.seat_avg_abs"] == pytest.approx(0.5 / 1.5 + 0.005)
    assert s1["std"]["glue.avg"] == pytest.approx(statistics.stdev([79.0, 78.0]))
    pts = [(s["mean"]["after.seat_avg_abs"], s["mean"]["after.cced.gap"]) for s in report["settings"]]
    assert set(report["pareto"]["metrics"]["settings"]) == {
        report["settings"][i]["id"] for i in _brute_front(pts, (-1, -1))
    }
    assert report["selected"] is None and all("unavailable" in r for r in report["selection"]["by_rule"].values())
    assert report["plot"]["split"] == "metrics" and (Path(spec.output_dir) / "tradeoff.png").is_file()


@pytest.mark.slow
@pytest.mark.data
def test_gacl_tiny_offline_sweep_selects_on_dev_and_reports_test(shared_data, tmp_path, monkeypatch):
    """A GACL recipe can be swept: gacl/tiny_offline, λ ∈ {0, 1} × 1 seed, 4 steps each, MT-GenEval scored on 3
    pairs (greedy, at most 16 tokens). Each run writes results.json with dev.loss (the held-out eval loss), the
    MT-GenEval dev numbers of the selected checkpoint and the test numbers; the sweep's means are the runs' numbers
    and its selection (by dev.loss) is the brute-force minimum, reported with that run's test section."""
    from fairmt.sweep import engine

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(engine, "run_subprocess", in_process_runner)  # the 2 real runs, without 2 fresh interpreters
    out = tmp_path / "sweep"
    assert (
        main(
            [
                "sweep",
                "gacl/tiny_offline",
                f"model={tmp_path / 'orig'}",
                f"data.train={tmp_path / 'ft.jsonl'}",
                "tiny_model.pretrain_steps=10",
                "training.max_steps=4",
                "training.eval_steps=2",
                "training.logging_steps=2",
                "training.save_strategy=steps",
                "geneval.max_pairs=3",
                "geneval.num_beams=1",
                "geneval.batch_size=8",
                "geneval.max_new_tokens=16",
                "--grid",
                "training.gacl_lambda=0.0,1.0",
                "--seeds",
                "1",
                "--objective",
                "dev.loss:min",
                "--select",
                "loss",
                "--output-dir",
                str(out),
            ]
        )
        == 0
    )
    runs = sorted(out.glob("trials/*/seed-*/run/results.json"))
    assert len(runs) == 2
    results = [json.loads(p.read_text()) for p in runs]
    for r in results:
        assert r["method"] == "gacl" and r["dev"]["loss"] > 0
        assert {"geneval_accuracy", "geneval_explicit_accuracy", "geneval_delta_g"} <= set(r["dev"])
        assert set(r["test"]) == {"geneval_accuracy", "geneval_explicit_accuracy", "geneval_delta_g"}
        assert r["test_data"]["geneval_pairs"] == 3 and r["selection"]["best_checkpoint"]
        # dev numbers are those of the restored checkpoint's evaluation
        assert r["selection"]["evaluated_step"] == int(r["selection"]["best_checkpoint"].rsplit("-", 1)[1])
    assert sorted(r["train"]["gacl_lambda"] for r in results) == [0.0, 1.0]
    report = json.loads((out / "sweep.json").read_text())
    by_lambda = {s["overrides"]["training.gacl_lambda"]: s for s in report["settings"]}
    for r in results:
        s = by_lambda[r["train"]["gacl_lambda"]]
        assert s["n"] == 1 and s["mean"]["dev.loss"] == pytest.approx(r["dev"]["loss"])
    selected = report["selected"]
    assert selected["rule"] == "loss"
    assert selected["dev"]["mean"]["dev.loss"] == min(r["dev"]["loss"] for r in results)  # brute force
    mine = next(r for r in results if r["train"]["gacl_lambda"] == selected["overrides"]["training.gacl_lambda"])
    assert selected["test"]["mean"] == {f"test.{k}": v for k, v in mine["test"].items()}
    assert selected["dev"]["mean"]["dev.geneval_explicit_accuracy"] == mine["dev"]["geneval_explicit_accuracy"]
    # each run keeps its test scoring's per-pair data: `fairmt report` compares the two runs by a paired bootstrap
    from fairmt.eval.significance import compare_items

    for r in results:
        assert len(r["test_data"]["items"]["correct_masculine"]) == 3  # one flag per scored pair
    assert main(["report", str(runs[0]), str(runs[1]), "--json", str(tmp_path / "report.json")]) == 0
    tables = json.loads((tmp_path / "report.json").read_text())["tables"]  # the MT-GenEval test table compares
    comparisons = [c for t in tables for c in t.get("comparisons") or []]
    expected = compare_items("geneval", results[1]["test_data"]["items"], results[0]["test_data"]["items"])
    assert [c["measure"] for c in comparisons] == [t.measure for t in expected]
    assert [c["difference"] for c in comparisons] == pytest.approx([t.difference for t in expected])


def test_gacl_sweep_names_the_metrics_a_gacl_run_reports(tmp_path, capsys):
    assert (
        main(
            [
                "sweep",
                "gacl/small100_en-de",
                "--grid",
                "training.gacl_lambda=0.5,1.0",
                "--objective",
                "dev.x:max",
                "--output-dir",
                str(tmp_path / "s"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "dev.x" in err and "dev.loss" in err and "writes no results file" not in err


# ------------------------------------------------------------------------------------------- the paper card (issue 51)
PAPER = "classification/cscl_bios_bert"
TEMPERATURE = "  objective_args.temperature (stages.stage1.temperature): grid 0.1, 0.5 (the paper's value 2.0: §4: "
FIXED = "  training.adam_beta2 (stages.stage1.adam_beta2): fixed 0.98 (the card declares 0.999 [paper-silent choice])"
SEEDS = "  seed (stages.stage1.seed, stages.stage2.seed): seeds 1 (the card declares 0 [paper-silent choice])"


def _tripwire(monkeypatch):
    from fairmt.sweep import engine

    def tripwire(cmd, log):
        raise AssertionError("a trial started")

    monkeypatch.setattr(engine, "run_subprocess", tripwire)


def test_a_sweep_dry_run_names_each_setting_that_leaves_the_paper_card_once(tmp_path, capsys, monkeypatch):
    """Issue 51: a sweep over a paper recipe says, before anything runs, each setting whose fixed, grid or seed value
    leaves the card — once per setting, with the values that leave it (2.0, the paper's τ, and cs_lambda 5, the
    card's, are no difference) — by the comparison of `fairmt train --dry-run`; --dry-run runs and writes nothing."""
    _tripwire(monkeypatch)
    out = tmp_path / "s"
    grid = ["--grid", "objective_args.temperature=0.1,2.0,0.5", "--grid", "objective_args.cs_lambda=5"]
    args = ["sweep", PAPER, "training.adam_beta2=0.98", *grid, "--seeds", "2", "--output-dir", str(out), "--dry-run"]
    assert main(args) == 2  # bert-base-uncased and Bias-in-Bios are not here: listed as findings, nothing started
    std = capsys.readouterr()
    lines = std.out.splitlines()
    assert lines[0].startswith(f"fairmt sweep --dry-run: grid over {PAPER}: 3 setting(s) × 2 seed(s) = 6 run(s) ")
    head = next(i for i, line in enumerate(lines) if "paper card Chi et al. (2022)" in line)
    assert lines[head].endswith(f"(fairmt recipes --paper {PAPER}): 3 setting(s) of this sweep leave it:")
    assert lines[head + 1] == FIXED and lines[head + 2].startswith(TEMPERATURE) and lines[head + 3] == SEEDS
    assert sum("objective_args.temperature" in line for line in lines) == 2  # the grid line and its card line
    assert not any("cs_lambda (" in line for line in lines)
    assert "every trial of this sweep would fail" in std.err and not out.exists()


def test_a_sweep_prints_the_card_differences_before_any_trial_and_writes_them_to_sweep_md(
    tmp_path, capsys, monkeypatch
):
    """The same lines start a real sweep (before the check of what every trial needs: here the trial inputs are
    missing, so nothing starts); a --range is one difference named by its span; sweep.md carries the lines."""
    from fairmt.sweep.report import build_report, render_markdown
    from fairmt.sweep.spec import build_spec

    _tripwire(monkeypatch)
    out = tmp_path / "s"
    grid = ["--grid", "objective_args.temperature=0.1,2.0,0.5", "--range", "training.learning_rate=1e-5:1e-4:log"]
    assert main(["sweep", PAPER, *grid, "--search", "2", "--seeds", "1", "--output-dir", str(out)]) == 2
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("fairmt sweep: paper card Chi et al. (2022)"))
    assert lines[head].endswith("2 setting(s) of this sweep leave it:"), lines[head]
    assert lines[head + 1].startswith(TEMPERATURE)
    assert lines[head + 2].startswith(
        "  training.learning_rate (stages.stage1.learning_rate): range 1e-05:0.0001:log (the paper's value "
    )
    assert not out.exists()

    spec = build_spec(PAPER, ["training.adam_beta2=0.98"], ["objective_args.temperature=2.0"], [], "1", [])
    assert spec.card_differences == [FIXED.strip()]
    md = render_markdown(build_report(tmp_path, spec))
    assert "\n\n- training.adam\\_beta2 (stages.stage1.adam\\_beta2): fixed 0.98" in md, md
    # balance.target is refused alone (read only with a balance.method): its values are judged beside the other
    # grid key's first value, whose own change is that key's line; joint, the recipe's own target, is none
    spec = build_spec(PAPER, [], ["balance.method=downsample", "balance.target=y,joint"], [], "1", [])
    assert spec.card_differences == [
        "balance.method: grid downsample (the card declares null [paper-silent choice])",
        "balance.target: grid y (on no card entry)",
    ]
