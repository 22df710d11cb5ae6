"""Progress bars that suit where the output goes.

On a terminal, tqdm draws its bars as it always does. In a log file or a pipe (Slurm, CI, ``fairmt demo 2>log``),
carriage-return bars make one unreadable line per stage; there, :func:`line_progress` puts a filter in front of
``sys.stderr`` for the command's run: every tqdm bar (fairmt's, the Trainer's, transformers' and datasets' — they
all write ``\\r`` + status to the stream) becomes one plain line each time it passes a multiple of
``FAIRMT_PROGRESS_STEP`` percent (default 10) and when it ends, with tqdm's own elapsed time, ETA and rate; a bar
without a total gets a line at most every ``FAIRMT_PROGRESS_SECONDS`` seconds (default 30) and at its end. Cursor
movements are dropped; any other text passes unchanged, in order.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time

_PERCENT = re.compile(r"(\d{1,3})%\|")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TOTAL = re.compile(r"\|\s*\d+(?:\.\d+)?[kMG]?/(\d+(?:\.\d+)?[kMG]?)\s")
_COUNT = re.compile(r"\s\d+(?:\.\d+)?[kMG]?(?:it|B)?(?:/\d+(?:\.\d+)?[kMG]?)?\s\[")


def _env_number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


class LineProgressStream:
    """A text stream in front of ``stream`` that turns carriage-return progress bars into occasional lines."""

    def __init__(self, stream, step: float | None = None, seconds: float | None = None):
        self._stream = stream
        self.step = step or _env_number("FAIRMT_PROGRESS_STEP", 10)
        self.seconds = seconds or _env_number("FAIRMT_PROGRESS_SECONDS", 30)
        self._status: str | None = None  # the bar being drawn now (after a \r), not yet ended by \n
        self._printed: str | None = None  # the last status line written out
        self._last: dict[str, tuple[float, float]] = {}  # bar key -> (last bucket, time of its last line)

    # the file-object surface tqdm, logging and print use
    def write(self, text: str) -> int:
        text = _ANSI.sub("", str(text))
        i = 0
        while i < len(text):
            j = min((k for k in (text.find("\r", i), text.find("\n", i)) if k >= 0), default=len(text))
            chunk, sep = text[i:j], text[j] if j < len(text) else ""
            if self._status is not None:  # inside a bar: this chunk is (part of) its status
                self._status += chunk
            elif chunk:
                self._stream.write(chunk)
            if sep == "\r":
                self._bar_update()
                self._status = ""
            elif sep == "\n":
                if self._status is not None:  # a bar left on screen at its end: its last state, once
                    self._bar_update(final=True)
                    self._status = None
                else:
                    self._stream.write("\n")
            i = j + 1 if sep else j
        return len(text)

    def _bar_update(self, final: bool = False) -> None:
        status = (self._status or "").rstrip()
        if not status:
            return
        match = _PERCENT.search(status)
        total = _TOTAL.search(status)
        desc = status[: match.start()] if match is not None else _COUNT.split(status, 1)[0]
        key = f"{desc.strip()}|{total.group(1) if total else ''}"  # the bar: its description and total
        now = time.monotonic()
        bucket, when = self._last.get(key, (-1.0, now))
        if match is not None:
            pct = float(match.group(1))
            new_bucket = pct // self.step if pct < 100 else float("inf")
            due = new_bucket > bucket  # a new multiple of the step, or the end (100 %) once
        else:
            new_bucket = bucket
            due = final or now - when >= self.seconds or key not in self._last
        if due and status != self._printed:
            self._stream.write(status + "\n")
            self._printed = status
            self._last[key] = (new_bucket, now)
        elif key not in self._last:
            self._last[key] = (bucket, now)
        self.flush()

    def flush(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            self._stream.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name):  # encoding, fileno, errors, buffer ...: the real stream's
        return getattr(self._stream, name)


def wants_line_progress(stream=None) -> bool:
    """Whether bars on ``stream`` (default stderr) should be lines: it is not a terminal."""
    stream = sys.stderr if stream is None else stream
    if isinstance(stream, LineProgressStream):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return True


@contextlib.contextmanager
def line_progress():
    """For the body, ``sys.stderr`` is a :class:`LineProgressStream` when stderr is not a terminal."""
    if not wants_line_progress():
        yield
        return
    saved = sys.stderr
    sys.stderr = LineProgressStream(saved)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            if sys.stderr._status:  # a bar cut off mid-draw (an error): its last state, then the error
                sys.stderr.write("\n")
        sys.stderr.flush()
        sys.stderr = saved
