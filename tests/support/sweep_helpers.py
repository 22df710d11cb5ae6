"""The stand-ins of the sweep engine tests (tests/cli/test_sweep.py, tests/cli/test_sweep_postgres.py,
tests/cli/test_sweep_selection_rules.py): a fake ``fairmt train`` run, a real one in this process, and the worker script
that joins a study from a process of its own."""

from __future__ import annotations

import json
import math
from pathlib import Path


def overrides(cmd: list[str]) -> dict[str, str]:
    """The ``key=value`` overrides of a trial's ``fairmt train`` command."""
    return dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))


def in_process_runner(cmd: list[str], log: Path) -> int:
    """A trial's real ``fairmt train`` (``cmd``: ``python -m fairmt train …``, as ``engine.train_command`` builds it)
    run by ``fairmt.cli.main`` in this process, its output into ``log`` as ``engine.run_subprocess`` writes it: the
    same run without a fresh interpreter's ~6 s of imports, for tests that check what the sweep does with runs, not
    how it starts them. The torch / numpy / random generators (the Trainer seeds them) are put back."""
    import contextlib
    import random
    import sys

    import numpy as np
    import torch

    from fairmt.cli import main

    assert cmd[1:4] == ["-m", "fairmt", "train"], cmd
    rng = torch.get_rng_state(), np.random.get_state(), random.getstate()
    with open(log, "a", encoding="utf-8") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                rc = main(cmd[3:])
        finally:
            torch.set_rng_state(rng[0])
            np.random.set_state(rng[1])
            random.setstate(rng[2])
            sys.stdout.flush()
    return rc


def fake_runner(cmd: list[str], log: Path, extra=None) -> int:
    """Stands in for `fairmt train` of a classification recipe: a results.json whose metrics are a smooth function of
    the run's overrides (a real trade-off: a larger FCL β, 0 when not swept, raises accuracy and the gap), written
    where the recipe would. ``extra(overrides)``: more keys of the results (e.g. ``info``)."""
    over = overrides(cmd)
    lr = float(over.get("training.learning_rate", 0.01))
    beta, seed = float(over.get("objective_args.fcl_beta", 0.0)), int(over["seed"])
    out = Path(json.loads(over["training.output_dir"]))
    out.mkdir(parents=True)
    acc = 70 + 10 * beta - 5 * abs(math.log10(lr) + 2) + 0.5 * seed
    gap = 2 + 8 * beta + 0.3 * seed
    split = lambda d: {"accuracy": acc - d, "gap": gap + d, "macro_f1": acc - 1, "scale": "percent"}  # noqa: E731
    results = {"dev": split(0), "test": split(1), "seed": seed, **(extra(over) if extra else {})}
    (out / "results.json").write_text(json.dumps(results))
    log.write_text("ok\n")
    return 0


WORKER = """
import json, os, sys, time
from pathlib import Path
from fairmt.sweep import engine
from fairmt.commands.train import resolve_recipe_path
from fairmt.sweep.spec import SweepSpec

out, ledger, storage, study, n, host, hang_at, seconds, grace = sys.argv[1:10]
if host != "-":
    engine.HOST = host  # a machine of its own: liveness of the other worker's trials by heartbeat only
tag = host if host != "-" else str(os.getpid())
runs = 0

def runner(cmd, log):
    global runs
    runs += 1
    over = dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))
    x, seed = int(over["x"]), int(over["seed"])
    with open(ledger, "a") as fh:  # one short O_APPEND write per run started
        fh.write(f"{x} {seed} {tag}\\n")
    if runs == int(hang_at):
        Path(ledger + ".hanging").write_text(f"{x} {seed}")
        time.sleep(600)  # killed here
    time.sleep(float(seconds))
    run = Path(json.loads(over["training.output_dir"]))
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps({"dev": {"accuracy": 50 + x + seed, "gap": x}}))
    log.write_text("ok")
    return 0

spec = SweepSpec(recipe="classification/fcl", recipe_path=str(resolve_recipe_path("classification/fcl")),
                 method="classification", overrides=[],
                 grid={"x": list(range(int(n)))}, grid_raw={"x": [str(i) for i in range(int(n))]}, ranges={},
                 seeds=[0, 1], objectives=[["dev.accuracy", "maximize"]], tradeoff=[], search=None, output_dir=out,
                 storage=storage, study_name=study, join=True, grace_period=float(grace))
outcome = engine.run_sweep(spec, runner=runner, echo=lambda line: None)
print(json.dumps({"ran": outcome.ran, "complete": outcome.complete, "failed": outcome.failed}))
"""
"""A worker joining a sweep of ``n`` settings × seeds 0, 1 (grid key ``x``), each run a stand-in that sleeps
``seconds`` and appends ``x seed tag`` to the ledger (tag: ``host``, or the process id when ``host`` is ``-``);
the ``hang_at``-th run (0: none) hangs until killed. Arguments: out ledger storage study n host hang_at seconds
grace."""


def worker_args(
    out,
    ledger,
    storage: str,
    study: str,
    n: int,
    host: str = "-",
    hang_at: int = 0,
    seconds: float = 0.3,
    grace: float = 600,
) -> list[str]:
    """The command line of one :data:`WORKER` (``python -c WORKER …``)."""
    import sys

    return [
        sys.executable,
        "-c",
        WORKER,
        str(out),
        str(ledger),
        storage,
        study,
        str(n),
        host,
        str(hang_at),
        str(seconds),
        str(grace),
    ]


def standin_data_root(monkeypatch, tmp_path: Path) -> Path:
    """FAIRMT_DATA at hate-speech folders with empty split files (one folder per language of Huang et al. 2020):
    what `fairmt sweep` checks before its first trial (:func:`fairmt.sweep.spec.check_trial_inputs`: the folder and
    the train/valid/test.tsv the run reads) for the hate-speech recipes whose runs the tests stand in for (the
    stand-in runs read no data)."""
    from fairmt.data.classification import HATESPEECH_SPLITS

    root = tmp_path / "standin-data"
    for language in ("English", "Italian", "Polish", "Portuguese", "Spanish"):
        folder = root / "hatespeech_huang2020" / language
        folder.mkdir(parents=True, exist_ok=True)
        for name in HATESPEECH_SPLITS.values():
            (folder / name).touch()
    monkeypatch.setenv("FAIRMT_DATA", str(root))
    return root
