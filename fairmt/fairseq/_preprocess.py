"""``python -m fairmt.fairseq._preprocess JOBS.json``: several ``fairseq-preprocess`` runs in ONE process.

``JOBS.json`` holds ``[[what, argv], ...]``; each ``argv`` is parsed by fairseq's own preprocessing parser and handed
to ``fairseq_cli.preprocess.main``, in order (a later job may use a dictionary an earlier one wrote). fairseq is
imported once instead of once per run (seconds each). On a failure the line ``fairmt-preprocess-failed: WHAT`` goes
to stderr before the traceback, ``fairmt-preprocess-error: TYPE: MESSAGE``
after it (the one line the parent reports), and the exit status is 1. Used by :func:`fairmt.fairseq.prep.fairseq_prep`,
in a fresh interpreter or, through :func:`forked_main`, in a fork of the caller.
"""

import json
import sys
import traceback


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as fh:
        jobs = json.load(fh)
    from fairseq import options
    from fairseq_cli.preprocess import main as preprocess

    for what, job in jobs:
        try:
            preprocess(options.get_preprocessing_parser().parse_args(job))
        except (Exception, SystemExit) as err:  # noqa: BLE001  (report which run failed, whatever fairseq raised)
            print(f"fairmt-preprocess-failed: {what}", file=sys.stderr)
            traceback.print_exc()
            message = " ".join(str(err).split()) or "no message"
            print(f"fairmt-preprocess-error: {type(err).__name__}: {message}", file=sys.stderr)  # the parent's one line
            return 1
    return 0


def forked_main(argv: list[str]) -> int:
    """:func:`main` in a fork (:func:`fairmt.forking.run_forked`) of a process that may have imported
    ``fairseq_cli.preprocess`` already: that module runs again, so its logging set-up (the root logger at INFO, to
    stdout: what ``preprocess.log`` records) is a fresh interpreter's, and its logger starts without the handlers an
    earlier run in the parent process added (the log files of other folders)."""
    import logging

    sys.modules.pop("fairseq_cli.preprocess", None)
    logging.getLogger("fairseq_cli.preprocess").handlers.clear()
    return main(argv)


if __name__ == "__main__":
    sys.exit(main())
