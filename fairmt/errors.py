"""Exceptions shared by every layer. Messages name the bad input and say what to do."""

from __future__ import annotations


class FairmtError(ValueError):
    """Bad input to a fairmt component: a file, a flag, a language code, a batch."""

    def __init__(self, *args: object) -> None:
        # PyTorch's DataLoader re-raises a worker's exception as ``type(exc)(message)`` where the message wraps the
        # worker's whole traceback ("Caught FairmtError in DataLoader worker process 0. Original Traceback ...").
        # Keep only the worker's own one-line message, so the CLI still prints one line.
        if len(args) == 1 and isinstance(args[0], str) and "Original Traceback" in args[0] and \
                args[0].startswith("Caught "):
            last = [ln for ln in args[0].splitlines() if ln.strip()][-1]
            for prefix in ("fairmt.errors.FairmtError: ", "FairmtError: "):
                if last.startswith(prefix):
                    args = (last[len(prefix):],)
        super().__init__(*args)
