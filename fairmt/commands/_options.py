"""Option types and declarations every ``fairmt`` command uses, so that one rule holds everywhere:

* **numbers** are parsed by range-checked types (:func:`count`, :func:`seed`, :func:`number`): ``--batch-size 0``,
  ``--n-samples -5``, ``--svm-c nan`` or ``--timeout 0`` fail while the arguments are parsed, as one line naming the
  option and the allowed range — never as a negative p-value, an empty table or a traceback hours later. A count
  has one meaning everywhere: a positive number of things; where 0 means something else (``--search-rounds 0``: no
  search, ``--n-clusters 0``: skip the measures), the option says so and its type allows it explicitly;
* **devices** (:func:`device`) are checked for their spelling at parse time and for their presence before any work
  (:func:`check_device`, called by the CLI boundary);
* **outputs** are declared with :func:`output_file` / :func:`output_dir`: the CLI checks every declared output once,
  before the command runs (:mod:`fairmt.outputs`), and a command with an output gets ``--overwrite`` (an existing
  output is refused without it; with it, a file named as the output is replaced, and a folder loses what fairmt
  wrote there and nothing else);
* **old spellings** of an option (``--langs`` for ``--lang``) are declared with :func:`alias`: they still work for a
  release and print a note naming the new spelling.

Cheap to import (argparse only): ``fairmt --help`` never pays for torch.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------------- numeric types


def _checked(fn: Callable, kind: str, low, high, note: str = "") -> Callable:
    fn.fairmt_checked = (kind, low, high, note)  # the guard test reads this: every numeric option is range-checked
    fn.__name__ = kind  # argparse names the type in "invalid <name> value" messages
    return fn


def count(low: int = 1, *, what: str = "a whole number", note: str = "") -> Callable[[str], int]:
    """An integer ≥ ``low`` (default 1: a count of things). ``note`` says what ``low`` itself means when it is 0."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what} ≥ {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {what} ≥ {low}{note and f' ({note})'}, got {value}")
        return value

    return _checked(parse, "count", low, None, note)


def seed(text: str) -> int:
    """A random seed: an integer in [0, 2**32) (numpy's range)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number in [0, 2^32), got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be a whole number in [0, 2^32), got {value}")
    return value


_checked(seed, "seed", 0, 2**32 - 1)


def number(
    low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> Callable[[str], float]:
    """A finite float in the interval ``[low, high]`` (``low_open`` / ``high_open`` exclude the bound)."""
    lo = "" if low is None else f"{'(' if low_open else '['}{low:g}"
    hi = "" if high is None else f"{high:g}{')' if high_open else ']'}"
    if low is not None and high is not None:
        rule = f"a number in {lo}, {hi}"
    elif low is not None:
        rule = f"a number {'>' if low_open else '≥'} {low:g}"
    elif high is not None:
        rule = f"a number {'<' if high_open else '≤'} {high:g}"
    else:
        rule = "a finite number"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r} (not a finite number)")
        if low is not None and (value < low or (low_open and value == low)):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text}")
        if high is not None and (value > high or (high_open and value == high)):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text}")
        return value

    return _checked(parse, "number", low, high)


def fraction(text: str) -> float:
    """A share strictly between 0 and 1 (a test split, a held-out part)."""
    return _fraction(text)


_fraction = number(0.0, 1.0, low_open=True, high_open=True)
_checked(fraction, "fraction", 0.0, 1.0)

# ---------------------------------------------------------------------------------------------- other types

_DEVICE = re.compile(r"^(cpu|cuda|cuda:\d+|mps|xpu|xpu:\d+)$")


def device(text: str) -> str:
    """A torch device name: cpu, cuda, cuda:N, mps, xpu, xpu:N (checked for presence by :func:`check_device`)."""
    if not _DEVICE.match(text.strip()):
        raise argparse.ArgumentTypeError(f"unknown device {text!r}: give cpu, cuda, cuda:N or mps")
    return text.strip()


_checked(device, "device", None, None)


def check_device(name: str | None) -> None:
    """Refuse a device this machine does not have, before any work (imports torch only for a non-CPU device)."""
    from fairmt.errors import FairmtError

    if not name or name == "cpu":
        return
    import torch

    kind, _, index = name.partition(":")
    if kind == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise FairmtError(
                f"--device {name}: this machine has no CUDA GPU (torch {torch.__version__} sees none); use --device cpu"
            )
        if index and int(index) >= n:
            raise FairmtError(
                f"--device {name}: this machine has {n} CUDA GPU(s) (cuda:0{f' to cuda:{n - 1}' if n > 1 else ''})"
            )
    elif kind == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise FairmtError(f"--device {name}: Apple MPS is not available on this machine; use --device cpu")
    elif kind == "xpu" and not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        raise FairmtError(f"--device {name}: no Intel XPU is available on this machine; use --device cpu")


def http_url(text: str) -> str:
    """An http(s) URL with a host (an endpoint)."""
    from urllib.parse import urlparse

    parsed = urlparse(text.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(f"must be an http:// or https:// URL with a host, got {text!r}")
    try:
        parsed.port  # noqa: B018  (a malformed port raises here)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None
    return text.strip()


_checked(http_url, "url", None, None)


def executable(text: str) -> str:
    """A program: a path to an executable file, or a name found on ``PATH``."""
    import shutil

    found = (
        shutil.which(text)
        if os.sep not in text
        else (text if os.path.isfile(text) and os.access(text, os.X_OK) else None)
    )
    if found is None:
        why = "not found" if not os.path.exists(text) else "a folder" if os.path.isdir(text) else "not executable"
        raise argparse.ArgumentTypeError(f"{text!r} is {why}: give an executable program (chmod +x, or its full path)")
    return found


_checked(executable, "program", None, None)


# ---------------------------------------------------------------------------------------------- outputs


@dataclass(frozen=True)
class Output:
    """What an output option writes: a ``file`` (``suffixes``: the formats the writer supports; ``stdout``: ``-``
    prints instead) or a ``dir`` (``resumable``: a rerun continues in it, so an existing folder is not refused;
    otherwise ``--overwrite`` removes what fairmt wrote there, ``markers`` naming the writer's marker files for
    folders from before fairmt's manifest, see :mod:`fairmt.outputs`)."""

    kind: str
    what: str
    suffixes: tuple[str, ...] | None = None
    stdout: bool = False
    resumable: bool = False
    markers: tuple[str, ...] = ()


PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp", ".svgz")


def ensure_overwrite(parser: argparse.ArgumentParser) -> None:
    """Give a command that declares an output the ``--overwrite`` flag (the CLI does it for every command)."""
    if (
        any(getattr(a, "fairmt_output", None) for a in parser._actions)
        and "--overwrite" not in parser._option_string_actions
    ):
        parser.add_argument(
            "--overwrite", action="store_true", help="replace existing output files or folders (default: refuse them)"
        )


def output_file(
    parser, *flags: str, what: str, suffixes: Iterable[str] | None = None, stdout: bool = False, **kwargs
) -> argparse.Action:
    """Add an option naming an output file (checked before the command runs; see the module docstring)."""
    action = parser.add_argument(*flags, **kwargs)
    action.fairmt_output = Output("file", what, tuple(suffixes) if suffixes is not None else None, stdout)
    return action


def output_dir(
    parser, *flags: str, what: str, resumable: bool = False, markers: Iterable[str] = (), **kwargs
) -> argparse.Action:
    """Add an option naming an output folder (checked before the command runs; see the module docstring)."""
    action = parser.add_argument(*flags, **kwargs)
    action.fairmt_output = Output("dir", what, resumable=resumable, markers=tuple(markers))
    return action


def check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every declared output of ``parser`` that ``args`` gives, checked against :mod:`fairmt.outputs`' rules and
    against every path the command reads (no output may be one of its inputs), and two outputs never the same file."""
    from fairmt.errors import FairmtError
    from fairmt.outputs import check_output_dir, check_output_file, input_paths

    overwrite = bool(getattr(args, "overwrite", False))
    declared = [a for a in parser._actions if getattr(a, "fairmt_output", None) is not None]
    out_dests = {a.dest for a in declared}
    inputs = input_paths(
        getattr(args, a.dest, None)
        for a in parser._actions
        if a.dest not in out_dests and a.dest not in ("help", "handler")
    )
    seen: dict[str, str] = {}
    for action in declared:
        value = getattr(args, action.dest, None)
        spec: Output = action.fairmt_output
        if value is None or (spec.stdout and value == "-"):
            continue
        flag = action.option_strings[0] if action.option_strings else action.dest
        if spec.kind == "file":
            check_output_file(
                value, f"{spec.what} ({flag})", overwrite=overwrite, suffixes=spec.suffixes, inputs=inputs
            )
        else:
            check_output_dir(
                value,
                f"{spec.what} ({flag})",
                overwrite=overwrite,
                resumable=spec.resumable,
                inputs=inputs,
                flag=flag,
                markers=spec.markers,
            )
        key = os.path.realpath(os.path.expanduser(str(value)))
        if key in seen:
            raise FairmtError(f"{value}: given to both {seen[key]} and {flag}; each output needs its own path")
        seen[key] = flag


# ---------------------------------------------------------------------------------------------- old spellings


class _Deprecated(argparse.Action):
    """An old spelling kept for a release: stores as the new spelling does, and says so on stderr."""

    def __init__(self, option_strings, dest, new: str = "", store: str = "store", **kwargs):
        self.new, self.store = new, store
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(
            f"fairmt: note: {option_string} is the old spelling of {self.new} (it goes in fairmt 0.2)", file=sys.stderr
        )
        if self.store == "const":
            setattr(namespace, self.dest, self.const)
        elif self.store == "append":
            setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])
        else:
            setattr(namespace, self.dest, values)


def timeout_option(parser) -> argparse.Action:
    """``--timeout SECONDS`` of a command that talks to the network (checked like every number: > 0, finite); it
    wins over ``FAIRMT_NET_TIMEOUT``, and both default to :data:`fairmt.hub.DEFAULT_TIMEOUT_S` (one source)."""
    from fairmt.hub import CONNECT_TIMEOUT_S, DEFAULT_TIMEOUT_S, TIMEOUT_ENV

    return parser.add_argument(
        "--timeout",
        type=number(0.0, low_open=True),
        default=None,
        metavar="SECONDS",
        help=f"seconds each network call may wait for the other side (connecting waits at most "
        f"{CONNECT_TIMEOUT_S:g}) before it fails in one line (default: ${TIMEOUT_ENV}, else "
        f"{DEFAULT_TIMEOUT_S:g})",
    )


def alias(parser, old: str, new_action: argparse.Action) -> argparse.Action:
    """Accept ``old`` (an earlier spelling) for ``new_action``'s option, hidden from --help, with a note."""
    if new_action.nargs == 0:
        kwargs = {"nargs": 0, "const": new_action.const, "store": "const"}
    else:
        kwargs = {
            "nargs": new_action.nargs,
            "type": new_action.type,
            "choices": new_action.choices,
            "metavar": new_action.metavar,
            "store": "append" if isinstance(new_action, argparse._AppendAction) else "store",
        }
    action = parser.add_argument(
        old,
        action=_Deprecated,
        dest=new_action.dest,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        new=new_action.option_strings[0],
        **kwargs,
    )
    action.fairmt_alias_of = new_action.option_strings[0]
    return action
