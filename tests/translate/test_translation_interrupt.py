"""Ctrl-C during a long translation: no traceback, how many translations are cached, that a rerun resumes, exit 130.

A real ``python -m fairmt eval geneval --model`` subprocess in its own session gets SIGINT once its cache holds a
few batches, as a terminal's Ctrl-C would deliver it to the foreground process group.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import procs

pytest.importorskip("torch")

PAIRS = [
    ("He is a doctor.", "Er ist Arzt."),
    ("She is a doctor.", "Sie ist Ärztin."),
    ("The nurse is here.", "Die Krankenschwester ist hier."),
    ("We are going home.", "Wir gehen nach Hause."),
] * 3
N = 3000  # sentences per gender: far more than the tiny model translates before the signal


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from fairmt.models.tiny import build_tiny_translation_model

    return build_tiny_translation_model(tmp_path_factory.mktemp("tiny") / "m2m", PAIRS, arch="m2m100", d_model=16)


def _fake_geneval(root: Path, n: int) -> None:
    d = root / "mt_geneval" / "sentences" / "test"
    d.mkdir(parents=True)
    for g, pron, ref in (("masculine", "He", "Er ist Arzt."), ("feminine", "She", "Sie ist Ärztin.")):
        (d / f"geneval-sentences-{g}-test.en_de.en").write_text("".join(f"{pron} is a doctor {i}.\n" for i in range(n)))
        (d / f"geneval-sentences-{g}-test.en_de.de").write_text((ref + "\n") * n)


def _cached_lines(path: Path) -> int:
    try:
        return max(0, len(path.read_text(encoding="utf-8").splitlines()) - 1)  # less the header line
    except OSError:
        return 0


def _ignores_sigint(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGINT (its SigIgn mask in /proc; False where there is no /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = int(status.split("SigIgn:", 1)[1].split()[0], 16)
    return bool(mask >> (signal.SIGINT - 1) & 1)


def test_ctrl_c_reports_the_cache_and_exits_130(tiny_dir, tmp_path):
    from fairmt.translate import read_cache

    _fake_geneval(tmp_path / "data", N)
    cache_dir = tmp_path / "cache"
    cache = cache_dir / "geneval-test-masculine.en-de.jsonl"
    env = {
        **os.environ,
        "FAIRMT_DATA": str(tmp_path / "data"),
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "FAIRMT_NO_PROGRESS": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "fairmt",
        "eval",
        "geneval",
        "--lang",
        "de",
        "--model",
        str(tiny_dir),
        "--num-beams",
        "1",
        "--max-new-tokens",
        "3",
        "--batch-size",
        "2",
        "--cache-dir",
        str(cache_dir),
        "--json",
        str(tmp_path / "out.json"),
    ]
    proc = procs.start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # SIGINT must reach Python's handler: ignored (inherited from a shell that started pytest in the background, which
    # procs.start undoes) the child would translate all 2 × N sentences and the test would only time out
    assert not _ignores_sigint(proc.pid), "the child ignores SIGINT: Ctrl-C cannot be tested"
    deadline = time.monotonic() + 120
    while _cached_lines(cache) < 6:  # a few batches translated and flushed
        assert proc.poll() is None, f"finished before the signal: {proc.communicate()}"
        assert time.monotonic() < deadline, "no translation was cached within 120 s"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = procs.finish(proc, timeout=60)  # fails the test (killing the group) if the signal did not stop it
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    m = re.search(
        r"fairmt: interrupted: (\d+) of (\d+) translations of this set are cached in (\S+) .*run the same "
        r"command again to resume",
        err,
    )
    assert m, err
    cached, total = int(m[1]), int(m[2])
    assert total == N and 0 < cached < N
    assert Path(m[3]) == cache
    assert len(read_cache(cache)) == cached  # the number printed is what a rerun will reuse
    assert not (tmp_path / "out.json").exists()  # no result written from a half-translated set
