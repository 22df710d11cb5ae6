"""The environment a command runs in is not the user's input, but a problem with it still gets one line.

Checked once, before any work (:func:`check_environment`, called by :func:`fairmt.cli.main`):

- a terminal that cannot encode what fairmt prints (``LANG=C`` with ``PYTHONIOENCODING`` unset: ASCII) gets
  replacement characters (``?``) instead of a ``UnicodeEncodeError`` in the middle of a table;
- a current folder deleted under the shell is one error line (every relative path would fail later);
- fairmt's own environment variables are checked like options (``FAIRMT_MAX_LINE_CHARS``,
  ``FAIRMT_MAX_IMAGE_PIXELS``);
- a home folder matplotlib cannot write its cache to (a read-only ``$HOME``) gets a private temporary cache folder
  (``MPLCONFIGDIR``) instead of matplotlib's warning inside fairmt's own output.
"""

from __future__ import annotations

import os
import sys

from fairmt.errors import FairmtError


def _replace_unencodable(stream) -> None:
    encoding = getattr(stream, "encoding", None)
    if not encoding or not hasattr(stream, "reconfigure"):
        return
    try:
        "±ΔΣ—é".encode(encoding)
        return  # it can print what fairmt prints
    except (LookupError, UnicodeEncodeError):
        pass
    try:
        stream.reconfigure(errors="replace")
    except (ValueError, OSError):  # a closed or detached stream: nothing to print to anyway
        pass


def check_environment() -> None:
    """See the module docstring; raises :class:`FairmtError` for a problem the user must fix."""
    for stream in (sys.stdout, sys.stderr):
        _replace_unencodable(stream)
    try:
        os.getcwd()
    except FileNotFoundError:
        raise FairmtError(
            "the current folder no longer exists (deleted or moved under this shell): cd to an existing "
            "folder and run the command again"
        ) from None
    from fairmt.data.images import max_image_pixels
    from fairmt.data.inputs import line_limit

    line_limit()
    max_image_pixels()
    if "MPLCONFIGDIR" not in os.environ:
        home_cfg = os.path.join(os.path.expanduser("~"), ".config", "matplotlib")
        probe = home_cfg if os.path.isdir(home_cfg) else os.path.dirname(home_cfg)
        while probe and not os.path.exists(probe):
            probe = os.path.dirname(probe)
        if probe and not os.access(probe, os.W_OK):
            import tempfile

            os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="fairmt-mpl-")
