"""The ``fairmt`` command.

Sub-commands live in :mod:`fairmt.commands`, one module per area, each exposing ``register(groups)`` where
``groups`` maps ``"top"``, ``"eval"`` and ``"data"`` to argparse sub-parser collections. Registration must stay
cheap: a command module imports torch/transformers only inside its handler, so ``fairmt eval winomt`` on a
translation file never pays for them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

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
)


def build_parser() -> argparse.ArgumentParser:
    from fairmt import __version__

    parser = argparse.ArgumentParser(
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
    return parser


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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.error("no handler for this command")
    try:
        rc = handler(args)
    except FairmtError as err:  # bad input: one clear line, no traceback
        print(f"fairmt: error: {err}", file=sys.stderr)
        return 2
    _exit_after_distributed_run(int(rc or 0))
    return int(rc or 0)


def _exit_after_distributed_run(rc: int) -> None:
    """After a multi-process training run, leave at once (logs flushed): with torch 2.13 + gloo a process can abort
    while the interpreter tears down C++ state after the work is done ("terminate called without an active
    exception", exit -6), and a launcher or scheduler would report a finished run as failed. Only for the command
    line, never when ``main`` is called from Python."""
    train = sys.modules.get("fairmt.commands.train")
    if train is None or not getattr(train, "DISTRIBUTED_RUN_ENDED", False) or not _invoked_as_command():
        return
    import logging
    import os

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def _invoked_as_command() -> bool:
    main_module = sys.modules.get("__main__")
    spec = getattr(main_module, "__spec__", None)
    name = getattr(spec, "name", "") or ""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name in ("fairmt", "fairmt.__main__", "fairmt.cli") or script == "fairmt"


if __name__ == "__main__":  # python -m fairmt.cli
    sys.exit(main())
