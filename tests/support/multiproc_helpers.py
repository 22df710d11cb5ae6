"""Launches of multi-process ``fairmt`` commands for the tests (issue 36): each under a watchdog, and the tiny GACL
recipe they train.

A launcher (``torchrun``, ``accelerate launch``) returns only once all its ranks have exited, so a launch that ends
with code 0 within :data:`LIMIT` is "every process exited by itself"; one that does not is killed with its process
group and the ranks (tests/support/procs.py) and fails the test after LIMIT seconds, not pytest-timeout's 15 minutes.

One launch (the launcher and two ranks importing torch, transformers and fairmt) costs about 30 s of CPU: 8-10 s
of wall time on a quiet 2-core machine, 30-40 s at load 6-8.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

import procs

LIMIT = 150  # seconds per launch: far below pytest-timeout's 15 minutes, far above a launch at load 8
# launches in a row per entry of tests/cli/test_multiprocess_exit.py: 1 in the suite; 5 re-sample issue 36's rare hang
# at exit (docs/development.md, "the stress version")
REPEATS = int(os.environ.get("FAIRMT_TEST_EXIT_REPEATS", "1"))
ROOT = Path(__file__).resolve().parents[2]  # the checkout (recipes/, docs/)
TIMING_KEYS = ("runtime", "per_second", "flos")  # log_history entries that are not results


def env(extra: dict | None = None) -> dict:
    return procs.env({"TQDM_DISABLE": "1", **(extra or {})})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(cmd: list, cwd: Path, env: dict) -> float:
    """Run one launch under the watchdog; its wall time. Fails the test (with the output) on a non-zero exit."""
    t0 = time.monotonic()
    procs.run([str(c) for c in cmd], cwd=cwd, env=env, timeout=LIMIT, check=True)
    return time.monotonic() - t0


def write_gacl_recipe(root: Path) -> Path:
    """A tiny GACL recipe (tiny M2M-100 model, 96 balanced demo sentences, 2 steps of 4 sentences per process,
    losses logged every step, a checkpoint at step 2) in ``root``; its output folder is set per launch."""
    import yaml

    from fairmt.data.demo_corpus import demo_splits
    from gacl_helpers import tiny_model_dir

    model = tiny_model_dir(root / "model", dropout=0.0)
    _, balanced, _ = demo_splits()
    data = root / "train.jsonl"
    data.write_text("".join(json.dumps({"translation": p.translation}) + "\n" for p in balanced[:96]))
    recipe = root / "recipe.yaml"
    recipe.write_text(
        yaml.safe_dump(
            {
                "method": "gacl",
                "model": str(model),
                "data": {"train": str(data), "max_length": 48},
                "training": {
                    "output_dir": str(root / "unused"),
                    "per_device_train_batch_size": 4,
                    "max_steps": 2,
                    "logging_steps": 1,
                    "report_to": [],
                    "disable_tqdm": True,
                    "dataloader_drop_last": True,
                    "save_strategy": "steps",
                    "save_steps": 2,
                },
            }
        )
    )
    return recipe


def train_args(recipe: Path, out: Path) -> list:
    return ["-m", "fairmt", "train", recipe, "training.use_cpu=true", f"training.output_dir={out}"]


def logged(out: Path) -> list[dict]:
    """Every logged number per step of a run (losses, loss terms, gradient norm, learning rate), timings left out."""
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    return [{k: v for k, v in h.items() if not any(t in k for t in TIMING_KEYS)} for h in state["log_history"]]


def assert_same_logs(a: list[dict], b: list[dict], tol: float = 1e-6) -> None:
    assert [sorted(x) for x in a] == [sorted(x) for x in b]
    for x, y in zip(a, b):
        for k in x:
            assert y[k] == pytest.approx(x[k], abs=tol), (k, x, y)


def readme_two_node_commands() -> list[str]:
    """The two ``torchrun`` lines of the "Several machines" block of docs/scaling-out.md (node rank 0, then 1)."""
    import re

    text = (ROOT / "docs" / "scaling-out.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- two-node-commands -->\n(?:<!--.*?-->\n)?```bash\n(.*?)```", text, flags=re.S)
    assert block, "docs/scaling-out.md has no two-node-commands block"
    lines = [ln for ln in block.group(1).splitlines() if ln.startswith("torchrun ")]
    assert len(lines) == 2 and [" --node-rank 0 " in lines[0], " --node-rank 1 " in lines[1]] == [True, True], lines
    return lines


def two_node_commands(port: int, args: list) -> list[list[str]]:
    """The README's two-node launch, as run here: each line's launcher options up to ``-m fairmt`` (``torchrun`` as
    ``python -m torch.distributed.run``, NODE0_ADDR:29400 → 127.0.0.1:PORT), then ``args`` (``-m fairmt ...``)."""
    commands = []
    for line in readme_two_node_commands():
        words = line.replace("NODE0_ADDR:29400", f"127.0.0.1:{port}").split()
        launcher = words[1 : words.index("-m")]
        commands.append([str(c) for c in procs.python("-m", "torch.distributed.run", *launcher, *args)])
    return commands


def two_nodes(args: list, cwd: Path, env: dict) -> float:
    """Both launchers of :func:`two_node_commands` at once, each under the watchdog; both must exit with 0."""
    t0 = time.monotonic()
    nodes = [
        procs.start(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cmd in two_node_commands(free_port(), args)
    ]
    outs = [procs.finish(p, timeout=LIMIT) for p in nodes]
    for p, (out, err) in zip(nodes, outs):
        assert p.returncode == 0, f"node exited with {p.returncode}\n{out[-3000:]}\n{err[-3000:]}"
    return time.monotonic() - t0
