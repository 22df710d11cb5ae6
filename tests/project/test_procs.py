"""tests/support/procs.py: a child that outlives its time limit is killed with everything it started (no orphans), and the
test fails naming the command; groups left running when a test ends are reaped."""

from __future__ import annotations

import sys

import pytest

import procs

# a parent that starts a grandchild in the same process group, prints its pid and sleeps
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(child.pid, flush=True)
time.sleep(120)
"""


def test_a_timeout_kills_the_whole_group_and_fails_naming_the_command(tmp_path):
    out = tmp_path / "pid"
    code = PARENT.replace("print(child.pid, flush=True)", f"open({str(out)!r}, 'w').write(str(child.pid))")
    with pytest.raises(pytest.fail.Exception, match=r"did not finish in 3 s \(killed with its process group\)"):
        procs.run([sys.executable, "-c", code], timeout=3)
    grandchild = int(out.read_text())
    assert procs.wait_for(lambda: not procs.alive(grandchild), timeout=10), "the grandchild outlived the timeout"


def test_a_timeout_kills_descendants_in_sessions_of_their_own(tmp_path):
    """As torchrun's ranks: started with start_new_session, out of the launcher's process group. A rank that is not
    killed also keeps the output pipes open, so the test would wait for it to end on its own."""
    out, finished = tmp_path / "pid", tmp_path / "finished"
    rank = tmp_path / "rank.py"
    rank.write_text(f"import time\ntime.sleep(20)\nopen({str(finished)!r}, 'w').write('x')\n")
    code = (
        f"import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, {str(rank)!r}], start_new_session=True)\n"
        f"open({str(out)!r}, 'w').write(str(child.pid))\n"
        f"time.sleep(120)\n"
    )
    with pytest.raises(pytest.fail.Exception, match=r"did not finish in 3 s"):
        procs.run([sys.executable, "-c", code], timeout=3)
    grandchild = int(out.read_text())
    assert procs.wait_for(lambda: not procs.alive(grandchild), timeout=10), (
        "the rank-like grandchild outlived the timeout"
    )
    assert not finished.exists(), "the grandchild was not killed: it ran to its end"


def test_reap_kills_groups_a_test_left_running():
    proc = procs.start([sys.executable, "-c", PARENT], stdout=procs.subprocess.PIPE, text=True)
    grandchild = int(proc.stdout.readline())
    assert procs.alive(grandchild)
    left = procs.reap()
    assert len(left) == 1 and "-c" in left[0]
    assert procs.wait_for(lambda: not procs.alive(grandchild), timeout=10) and proc.poll() is not None


def test_run_returns_like_subprocess_run_and_check_fails_the_test():
    done = procs.run([sys.executable, "-c", "print('hi'); import sys; sys.exit(0)"], timeout=60)
    assert done.returncode == 0 and done.stdout == "hi\n"
    with pytest.raises(pytest.fail.Exception, match="exit status 3"):
        procs.run([sys.executable, "-c", "import sys; sys.exit(3)"], check=True, timeout=60)
