"""A full disk is a full disk: every file fairmt writes goes through one writer (a temporary file beside the target,
fsync, rename — :func:`fairmt.outputs.write_file`); a write that fails is one line naming the file, what was being
written and the free space, leaves no torn file, and the command does not exit 0. Exercised with a file-size limit
(``ulimit -f``: ``RLIMIT_FSIZE``, SIGXFSZ ignored so the write fails with EFBIG) and /dev/full — no root needed."""

from __future__ import annotations

import errno
import json
import resource
import signal
from pathlib import Path

import pytest

import procs
from fairmt.errors import FairmtError
from fairmt.outputs import save_folder, write_json
from hostile_campaign import FileSizeLimit


def _limit(nbytes: int):
    def set_limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return set_limit


def test_a_write_past_the_file_size_limit_is_one_line_and_the_old_file_stays_whole(tmp_path):
    target = tmp_path / "results.json"
    target.write_text('{"old": 1}\n')
    with FileSizeLimit(4096), pytest.raises(FairmtError) as err:
        write_json(target, {"values": list(range(5000))}, what="the run's results")
    line = str(err.value)
    assert "\n" not in line and str(target) in line and "the run's results" in line
    assert "file too large" in line and " free there" in line
    assert json.loads(target.read_text()) == {"old": 1}  # never torn, never 0 bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]  # the temporary file is gone


def test_a_model_folder_that_cannot_be_saved_whole_is_not_left_behind(tmp_path):
    def save(folder):
        Path(folder, "config.json").write_text("{}")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(
        FairmtError,
        match=r"could not write the trained model to .*model: no space left on the device "
        r"\(.* free there\)",
    ):
        save_folder(tmp_path / "model", save, what="the trained model")
    assert list(tmp_path.iterdir()) == []
    save_folder(tmp_path / "model", lambda f: Path(f, "config.json").write_text("{}"))
    assert [p.name for p in tmp_path.iterdir()] == ["model"] and (tmp_path / "model" / "config.json").is_file()


def test_the_safetensors_error_of_a_full_disk_is_the_same_line(tmp_path):
    import torch
    from safetensors.torch import save_file

    with FileSizeLimit(2048), pytest.raises(FairmtError, match=r"could not write the weights to .*w: .*free"):
        save_folder(
            tmp_path / "w",
            lambda f: save_file({"x": torch.zeros(4096)}, str(Path(f, "model.safetensors"))),
            what="the weights",
        )
    assert list(tmp_path.iterdir()) == []


def test_eval_classification_json_under_ulimit_f_does_not_exit_0(tmp_path):
    rows = [{"label": i % 2, "pred": (i // 3) % 2, "group": "FM"[(i // 2) % 2]} for i in range(40)]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "r.json"
    proc = procs.run(
        procs.python("-m", "fairmt", "eval", "classification", "--predictions", preds, "--json", out),
        env=procs.env(),
        preexec_fn=_limit(256),
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fairmt: error: could not write") and str(out) in last and "file too large" in last
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl"]


def test_stdout_on_dev_full_is_one_line_not_a_traceback():
    with open("/dev/full", "w") as full:
        proc = procs.run(procs.python("-m", "fairmt", "recipes"), env=procs.env(), stdout=full, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "fairmt: error: could not write to standard output: no space left on the device"


def test_a_checkpoint_that_fills_the_disk_stops_training_in_one_line(tmp_path):
    from test_resume_given import _trainer

    trainer, _ = _trainer(tmp_path / "run")
    with FileSizeLimit(1024), pytest.raises(FairmtError) as err:
        trainer.train()
    line = str(err.value)
    assert "\n" not in line and "the checkpoint of step 2" in line and "checkpoint-2" in line and "free there" in line


def _moji(root: Path) -> Path:
    """Fairlib's prepared Moji layout, 8 rows of 4 features per cell (a classification run of about a second)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for split in ("train", "dev", "test"):
        (root / split).mkdir(parents=True)
        for i, cell in enumerate(("pos_pos", "pos_neg", "neg_pos", "neg_neg")):
            np.save(root / split / f"{cell}.npy", (rng.normal(size=(8, 4)) + i).astype(np.float32))
    return root


@pytest.mark.parametrize("fills", ["model", "results.json"])
def test_a_classification_run_whose_folder_fills_up_exits_2_with_the_writers_line(fills, tmp_path, monkeypatch, capsys):
    """The real recipe path (``fairmt train classification/...``, in this process): the disk fills while the run
    saves its selected model, or its results — the writer's flush to the disk (``os.fsync``) of a file in the run
    folder fails with ENOSPC. The run does not exit 0, prints no scores, leaves no torn ``results.json``."""
    import os

    from fairmt.cli import main

    run = tmp_path / "run"
    real_fsync = os.fsync
    hit = []

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.startswith(f"{run}/.{fills}."):  # the writer's temporary file / folder beside the target
            hit.append(path)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    rc = main(
        [
            "train",
            "classification/fcl_moji",
            f"data.root={_moji(tmp_path / 'moji')}",
            "training.num_train_epochs=1",
            "model.hidden_dim=8",
            "--output-dir",
            str(run),
        ]
    )
    out, err = capsys.readouterr()
    assert hit and rc == 2, (rc, err[-2000:])
    lines = [ln for ln in err.splitlines() if ln.startswith("fairmt: error:")]
    what = "the trained model" if fills == "model" else "the run's results"
    assert len(lines) == 1 and lines[0].startswith(
        f"fairmt: error: could not write {what} to {run / fills}: no space left on the device ("
    ), err[-2000:]
    assert " free there)" in lines[0] and "Traceback" not in err
    assert "accuracy ↑" not in out and "results:" not in out  # no scores printed as if the run had ended well
    assert not (run / "results.json").exists()
    assert not [p for p in run.iterdir() if p.name.startswith(f".{fills}.")]  # no temporary left behind
