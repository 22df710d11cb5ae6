"""A stand-in for ``python -m fairmt`` in the trial server's tests (tests/cli/test_sweep_forked.py): what a forked trial
sees of its process, as JSON on stdout, and the ways a trial ends."""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    what = argv[1]
    if what == "report":
        with open(f"/proc/{os.getpid()}/comm") as fh:
            comm = fh.read().strip()
        print(
            json.dumps(
                {
                    "argv": argv,
                    "sys_argv": sys.argv,
                    "cwd": os.getcwd(),
                    "late": os.environ.get("LATE"),
                    "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
                    "stdin": sys.stdin.read(),
                    "pid": os.getpid(),
                    "ppid": os.getppid(),
                    "comm": comm,
                    "preloaded": "tabnanny" in sys.modules,
                    "sigint": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
                    "sigterm": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
                }
            )
        )
        print("to stderr", file=sys.stderr)
        return 0
    if what == "exit":
        return int(argv[2])
    if what == "raise":
        raise RuntimeError("a bug in the trial")
    if what == "exit-steps":  # a non-daemon thread and an atexit handler: both run before the trial's exit
        out = Path(argv[2])
        threading.Thread(target=lambda: (time.sleep(0.3), (out / "thread").write_text("joined"))).start()
        atexit.register(lambda: (out / "atexit").write_text("ran"))
        return 3
    if what == "sleep":  # until a signal ends it; says when it sleeps
        # written whole, then renamed: the test reads it as soon as it exists (a plain write_text let it read the
        # empty file between its creation and the write)
        Path(argv[2] + ".tmp").write_text(str(os.getpid()))
        os.replace(argv[2] + ".tmp", argv[2])
        time.sleep(120)
        return 0
    raise SystemExit(f"unknown stand-in command {what}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
