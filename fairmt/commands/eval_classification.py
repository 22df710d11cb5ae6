"""``fairmt eval classification``: fairness metrics of a classifier's predictions (JSONL in, table/JSON out).

Each line of ``--predictions`` is one JSON object with ``label``, ``pred`` and ``group`` (ints or strings; one type
per column across the file) and optionally ``hidden`` (a list of numbers: the representation before the classifier
layer, for leakage@h), ``logits`` (a list of numbers, for leakage@ŷ; otherwise the one-hot ``pred`` is used) and
``score`` (the probability of the positive class, or a list of per-class probabilities: for AUC-ROC). A two-class
task reports the positive class's F1 (``--positive-class``, default the larger label) beside macro-F1; ΔEO is summed
over the positive class only (``--eo-classes positive``, the formula CSCL prints) or over both classes
(``--eo-classes all``, the CSCL authors' released evaluation: twice the former); the signature names both choices.
``--train-predictions`` (same format) trains the leakage probes, as Shen et al.; without it leakage is 5-fold
cross-validated on the evaluated file. ``--group-columns gender,age`` reads several protected attributes per line
(keys of their own, instead of ``group``) and scores every metric over their cross-product groups. Metric
definitions: :mod:`fairmt.eval.classification`.

Registration is cheap: numpy/scikit-learn are imported inside the handler only.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairmt.data.jsonl import iter_jsonl
from fairmt.errors import FairmtError

REQUIRED = ("label", "pred", "group")


@dataclass
class PredictionFile:
    """Parallel columns read from a predictions JSONL file (``hidden``/``logits`` are ``None`` when absent)."""

    path: str
    labels: list
    preds: list
    groups: list
    hidden: list[list[float]] | None
    logits: list[list[float]] | None
    scores: list | None = None


def _kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "str"
    return None


def _vector(value: Any, key: str, where: str) -> list[float]:
    import math

    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise FairmtError(f"{where}: {key!r} must be a non-empty list of numbers")
    bad = next((v for v in value if not math.isfinite(v)), None)
    if bad is not None:
        raise FairmtError(
            f"{where}: {key!r} holds {bad}: every value must be a finite number (NaN/Infinity cannot be scored)"
        )
    return [float(v) for v in value]


def read_predictions(
    path: str | Path,
    num_classes: int | None = None,
    classes: list[str] | None = None,
    group_columns: list[str] | None = None,
) -> PredictionFile:
    """Read and validate a predictions JSONL file; every error names the file and line and says what to fix.

    ``group_columns``: several protected attributes, each a key of every line (an integer or a string), read instead
    of ``group``; ``groups`` is then ``{attribute: values}`` (intersectional groups)."""
    p = Path(path)
    required = ("label", "pred", *(group_columns or ["group"]))
    cols: dict[str, list] = {k: [] for k in required}
    cols.update({"hidden": [], "logits": [], "score": []})
    kinds: dict[str, tuple[str, int]] = {}
    widths: dict[str, tuple[int, int]] = {}
    for lineno, obj in iter_jsonl(p, hint="; write one JSON object per line", what="predictions"):
        where = f"{p}:{lineno}"
        if not isinstance(obj, dict):
            raise FairmtError(f"{where}: expected a JSON object with keys {', '.join(required)}")
        missing = [k for k in required if k not in obj]
        if missing:
            raise FairmtError(f"{where}: missing key(s) {', '.join(missing)}; each line needs {', '.join(required)}")
        for key in required:
            value = obj[key]
            kind = _kind(value)
            if kind is None:
                raise FairmtError(f"{where}: {key!r} must be an integer or a string, got {value!r}")
            first = kinds.setdefault(key, (kind, lineno))
            if first[0] != kind:
                raise FairmtError(
                    f"{where}: {key!r} is a {kind} but line {first[1]} has a {first[0]}; use one type per column"
                )
            if key in ("label", "pred"):
                if kind == "int" and (value < 0 or (num_classes is not None and value >= num_classes)):
                    bound = f"[0, {num_classes})" if num_classes is not None else "non-negative integers"
                    raise FairmtError(f"{where}: {key} {value} is out of range {bound}")
                if kind == "str" and classes is not None and value not in classes:
                    raise FairmtError(f"{where}: {key} {value!r} is not one of --classes {','.join(classes)}")
                if kind == "str" and num_classes is not None:
                    raise FairmtError(f"{where}: --num-classes needs integer labels; use --classes for strings")
                if kind == "int" and classes is not None:
                    raise FairmtError(f"{where}: --classes names string labels; use --num-classes for integers")
            cols[key].append(value)
        for key in ("hidden", "logits"):
            has = key in obj
            vec = _vector(obj[key], key, where) if has else None
            if key not in widths:
                widths[key] = (len(vec) if vec is not None else -1, lineno)
            width, first_line = widths[key]
            if has != (width >= 0):
                state = "has" if has else "lacks"
                raise FairmtError(
                    f"{where}: {state} {key!r} unlike line {first_line}; give it on every line or on none"
                )
            if vec is not None:
                if len(vec) != width:
                    raise FairmtError(f"{where}: {key!r} has {len(vec)} values but line {first_line} has {width}")
                cols[key].append(vec)
        has = "score" in obj
        if "score" not in widths:
            widths["score"] = (_score_width(obj["score"], where) if has else -2, lineno)
        width, first_line = widths["score"]
        if has != (width != -2):
            state = "has" if has else "lacks"
            raise FairmtError(f"{where}: {state} 'score' unlike line {first_line}; give it on every line or on none")
        if has:
            if _score_width(obj["score"], where) != width:
                raise FairmtError(
                    f"{where}: 'score' has another shape than on line {first_line} (one probability, or "
                    "one list of per-class probabilities of the same length, on every line)"
                )
            cols["score"].append(obj["score"])
    if not cols["label"]:
        raise FairmtError(f"{p}: no predictions (the file is empty)")
    return PredictionFile(
        path=str(p),
        labels=cols["label"],
        preds=cols["pred"],
        groups={k: cols[k] for k in group_columns} if group_columns else cols["group"],
        hidden=cols["hidden"] or None,
        logits=cols["logits"] or None,
        scores=cols["score"] or None,
    )


def _score_width(value: Any, where: str) -> int:
    """-1 for one number (the positive class's probability), else the length of a list of per-class numbers."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _vector([value], "score", where)  # finite
        return -1
    return len(_vector(value, "score", where))


def register(groups: dict) -> None:
    """Add ``classification`` to the ``eval`` group."""
    p = groups["eval"].add_parser(
        "classification",
        help="fairness of a classifier's predictions: accuracy, F1, AUC, GAP, ΔEO, leakage",
        description=" ".join(__doc__.split("\n\n")[1].split()).replace("``", ""),
    )
    p.add_argument(
        "--predictions", required=True, help="JSONL: one {label, pred, group[, hidden][, logits][, score]} per line"
    )
    p.add_argument("--train-predictions", help="the same for the training split (trains the leakage SVMs)")
    from fairmt.commands._options import count, number, output_file, seed

    p.add_argument("--num-classes", type=count(2), help="integer labels must lie in [0, K)")
    p.add_argument("--classes", help="comma-separated string labels (all task classes, in order)")
    p.add_argument(
        "--eo-classes",
        choices=("positive", "all"),
        default=None,
        help="ΔEO of a two-class task over the positive class only (positive, default: the formula CSCL "
        "prints) or over both classes (all: the CSCL authors' released evaluation, 2x)",
    )
    p.add_argument("--all-classes-eo", action="store_true", help="the same as --eo-classes all (older spelling)")
    p.add_argument(
        "--positive-class",
        default=None,
        help="the positive class of a two-class task (F1, AUC, ΔEO): a label as the predictions write it "
        "(default: the larger label)",
    )
    p.add_argument(
        "--group-columns",
        default=None,
        metavar="A,B",
        help="several protected attributes, each a key of every line (e.g. gender,age; read instead of "
        "'group'): every metric over the cross-product groups (keys 'v1|v2'; a combination with no "
        "example is skipped with a warning, or fails with --strict)",
    )
    p.add_argument("--no-leakage", action="store_true", help="skip the leakage probes")
    p.add_argument(
        "--svm-c", type=number(0.0, low_open=True), default=1.0, help="C of the LinearSVC leakage probes (default 1)"
    )
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--strict", action="store_true", help="fail on an empty group or class instead of warning")
    output_file(
        p,
        "--json",
        what="JSON result",
        stdout=True,
        dest="json_out",
        metavar="OUT",
        help="write the result as JSON ('-' prints JSON only)",
    )
    output_file(p, "--markdown", what="Markdown table", help="write the summary table as Markdown here")
    p.set_defaults(handler=run_classification)


def run_classification(args: argparse.Namespace) -> int:
    """Handler of ``fairmt eval classification``."""
    import warnings

    from fairmt.eval.classification import classification_metrics
    from fairmt.eval.report import format_table, markdown_table, write_json, write_text_atomic

    if args.all_classes_eo and args.eo_classes == "positive":
        raise FairmtError("--all-classes-eo contradicts --eo-classes positive; give one of them")
    eo_classes = "all" if args.all_classes_eo else (args.eo_classes or "positive")
    if args.num_classes is not None and args.num_classes < 2:
        raise FairmtError(f"--num-classes must be at least 2, got {args.num_classes}")
    classes = [c.strip() for c in args.classes.split(",") if c.strip()] if args.classes else None
    group_columns = None
    if args.group_columns is not None:
        group_columns = [c.strip() for c in args.group_columns.split(",") if c.strip()]
        clash = sorted(set(group_columns) & {"label", "pred", "hidden", "logits", "score"})
        if not group_columns or clash or len(set(group_columns)) != len(group_columns):
            raise FairmtError(
                f"--group-columns {args.group_columns!r}: give distinct keys of the prediction lines, "
                f"comma-separated{f' (not {clash})' if clash else ''}"
            )
    ev = read_predictions(args.predictions, args.num_classes, classes, group_columns)
    tr = (
        read_predictions(args.train_predictions, args.num_classes, classes, group_columns)
        if args.train_predictions
        else None
    )

    def first_group(f):
        return [v[0] for v in f.groups.values()] if isinstance(f.groups, dict) else [f.groups[0]]

    if tr is not None:
        if [type(v) for v in first_group(tr)] != [type(v) for v in first_group(ev)] or type(tr.labels[0]) is not type(
            ev.labels[0]
        ):
            raise FairmtError(f"{tr.path}: label/group types differ from {ev.path}; use the same ids in both files")
        if ev.hidden is not None and tr.hidden is None and not args.no_leakage:
            raise FairmtError(f"{tr.path}: has no 'hidden' vectors but {ev.path} does; leakage@h needs both")
        if ev.logits is not None and tr.logits is None and not args.no_leakage:
            raise FairmtError(f"{tr.path}: has no 'logits' but {ev.path} does; leakage@ŷ needs both (or neither)")
    leak = not args.no_leakage
    positive = args.positive_class
    if positive is not None and isinstance(ev.labels[0], int):
        try:
            positive = int(positive)
        except ValueError:
            raise FairmtError(f"--positive-class {positive!r}: the labels of {ev.path} are integers") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kept in result.warnings and printed below
        result = classification_metrics(
            ev.labels,
            ev.preds,
            ev.groups,
            hidden=ev.hidden if leak else None,
            logits=ev.logits if leak else None,
            train_hidden=tr.hidden if (tr is not None and leak) else None,
            train_preds=tr.preds if tr is not None else None,
            train_logits=tr.logits if tr is not None else None,
            train_groups=tr.groups if (tr is not None and leak) else None,
            classes=classes,
            num_classes=args.num_classes,
            leakage_yhat=leak,
            scores=ev.scores,
            positive_class=positive,
            eo_classes=eo_classes,
            svm_C=args.svm_c,
            seed=args.seed,
            strict=args.strict,
        )
    summary = result.summary(percent=True)  # percent, as every fairmt report
    from fairmt.eval.classification import ONE_CLASS

    if any(n.startswith(ONE_CLASS) for n in result.notes):  # one gold class: no GAP/ΔEO worth a number
        summary = {k: v for k, v in summary.items() if k not in ("gap", "ppr_gap", "fpr_gap", "delta_eo")}
    columns = [
        k
        for k in ("accuracy", "f1", "macro_f1", "micro_f1", "auc", "gap", "delta_eo", "leakage_h", "leakage_yhat")
        if k in summary
    ]
    row = {k: summary[k] for k in columns}
    quiet = args.json_out == "-"  # JSON alone on stdout, as every eval command
    if not quiet:
        print(format_table([row], columns, digits=2))
        print(f"n={result.n} classes={result.n_classes} groups={result.n_groups}  {result.signature}")
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json_out:
        from fairmt.outputs import json_text

        rest = {
            k: v
            for k, v in result.to_percent_dict().items()
            if k not in summary
            and v is not None
            and not (
                k in ("gap", "ppr_gap", "fpr_gap", "delta_eo", "delta_tpr", "delta_fpr", "gap_by_class")
                and any(n.startswith(ONE_CLASS) for n in result.notes)
            )
        }
        from fairmt.eval.reporting.formats import CLASSIFICATION

        data = {"format": CLASSIFICATION, **summary, **rest}
        if quiet:
            print(json_text(data))
        else:
            write_json(data, args.json_out)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.markdown, markdown_table([row], columns, digits=2))
    return 0
