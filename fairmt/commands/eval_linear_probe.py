"""``fairmt eval linear-probe``: a logistic-regression probe on frozen embeddings (accuracy, positive-class F1,
AUC-ROC on a seeded 80/20 split) and the latent-subgroup measures of the embedding space (cluster dominance ratio,
representation entropy, subgroup separation distance), as Martin & Ogbuokiri evaluate fairness-driven sampling.

Input (``--embeddings``): an ``.npz`` with named arrays — the ``embeddings.npz`` a ``method: sampling`` recipe writes
per stage holds ``backbone``, ``projection``, ``y_<target>`` and ``g_<attribute>`` — or a JSONL file with one
``{"embedding": [...], "label": 0|1[, "group": int]}`` per line. ``--group`` (a protected attribute, evaluation only)
adds GAP and ΔEO of the probe's predictions. Definitions: :mod:`fairmt.eval.linear_probe`.

Registration is cheap: numpy/scikit-learn are imported inside the handler only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fairmt.errors import FairmtError
from fairmt.outputs import json_text


def _npz(path: Path, keys: dict[str, str | None]) -> dict:
    import numpy as np

    try:
        f = np.load(path, allow_pickle=False)
        names = set(f.files)
    except (OSError, ValueError, AttributeError) as err:  # AttributeError: an .npy array, not an archive
        raise FairmtError(f"{path}: not a readable .npz file ({err})") from None
    with f:
        missing = [f"{k!r} ({what})" for what, k in keys.items() if k is not None and k not in names]
        if missing:
            raise FairmtError(f"{path}: no array {', '.join(missing)}; it holds {sorted(names)}")
        out = {}
        for what, k in keys.items():
            if k is None:
                out[what] = None
                continue
            try:
                arr = f[k]
            except ValueError as err:  # an object array: numpy refuses to unpickle it (allow_pickle=False)
                raise FairmtError(
                    f"{path}: array {k!r} ({what}) holds Python objects, which fairmt does not load "
                    f"(no pickles: {err}); save numbers (np.savez with numeric arrays)"
                ) from None
            if arr.dtype.kind not in "biuf":
                raise FairmtError(
                    f"{path}: array {k!r} ({what}) holds {arr.dtype} values, not numbers; save "
                    "numeric arrays (labels and groups as integers)"
                )
            out[what] = arr
        return out


def _jsonl(path: Path, embedding_key: str, label_key: str, group_key: str | None) -> dict:
    import numpy as np

    from fairmt.data.inputs import iter_jsonl

    X, y, g, width = [], [], [], None
    for line, obj in iter_jsonl(path, hint="; write one JSON object per line", what="embeddings"):
        where = f"{path}:{line}"
        if not isinstance(obj, dict) or embedding_key not in obj or label_key not in obj:
            raise FairmtError(f"{where}: each line needs {embedding_key!r} (a list of numbers) and {label_key!r}")
        vec = obj[embedding_key]
        if (
            not isinstance(vec, list)
            or not vec
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vec)
        ):
            raise FairmtError(f"{where}: {embedding_key!r} must be a non-empty list of numbers")
        if not all(np.isfinite(vec)):
            raise FairmtError(
                f"{where}: {embedding_key!r} holds a non-finite value (NaN/Infinity): it cannot be probed"
            )
        width = len(vec) if width is None else width
        if len(vec) != width:
            raise FairmtError(f"{where}: {embedding_key!r} has {len(vec)} values but the first line has {width}")
        lab = obj[label_key]
        if not isinstance(lab, int) or isinstance(lab, bool):
            raise FairmtError(f"{where}: {label_key!r} must be an integer, got {lab!r}")
        X.append(vec)
        y.append(lab)
        if group_key is not None:
            grp = obj.get(group_key)
            if not isinstance(grp, int) or isinstance(grp, bool):
                raise FairmtError(f"{where}: {group_key!r} must be an integer on every line, got {grp!r}")
            g.append(grp)
    if not X:
        raise FairmtError(f"{path}: no embeddings (the file is empty)")
    return {
        "embeddings": np.asarray(X, dtype=np.float64),
        "labels": np.asarray(y),
        "groups": np.asarray(g) if group_key is not None else None,
        "subgroups": None,
    }


def run_linear_probe(args: argparse.Namespace) -> int:
    """Handler of ``fairmt eval linear-probe``."""
    import numpy as np

    from fairmt.eval.linear_probe import linear_probe
    from fairmt.eval.report import format_table, markdown_table, write_text_atomic

    path = Path(args.embeddings)
    if not path.is_file():
        raise FairmtError(f"{path}: embeddings file not found; give an .npz or a .jsonl file")
    if path.suffix == ".npz":
        arrays = _npz(
            path,
            {
                "embeddings": args.embedding_key or "embeddings",
                "labels": args.label,
                "groups": args.group,
                "subgroups": args.subgroup_key,
            },
        )
    else:
        arrays = _jsonl(path, args.embedding_key or "embedding", args.label, args.group)
        if args.subgroup_key:
            raise FairmtError("--subgroup-key names an array of an .npz file; a JSONL input has one embedding per line")
    emb = np.asarray(arrays["embeddings"])
    if emb.dtype.kind in "fc" and not np.isfinite(emb).all():
        row = int(np.argwhere(~np.isfinite(emb))[0][0])
        raise FairmtError(
            f"{path}: the embeddings hold a non-finite value (NaN/Infinity) in row {row}: they cannot be probed"
        )
    labels = arrays["labels"]
    if not np.issubdtype(np.asarray(labels).dtype, np.integer):
        raise FairmtError(f"{path}: labels {args.label!r} must be integers, got {np.asarray(labels).dtype}")
    result = linear_probe(
        arrays["embeddings"],
        labels,
        target=args.label,
        groups=arrays["groups"],
        test_fraction=args.test_fraction,
        seed=args.seed,
        standardize=not args.no_standardize,
        C=args.C,
        max_iter=args.max_iter,
        subgroup_embeddings=arrays["subgroups"],
        n_clusters=None if args.n_clusters == 0 else args.n_clusters,
    )
    row = result.summary()
    columns = [
        k
        for k in (
            "target",
            "accuracy",
            "f1",
            "auc_roc",
            "gap",
            "delta_eo",
            "cluster_dominance_ratio",
            "representation_entropy",
            "subgroup_separation_distance",
        )
        if k in row
    ]
    quiet = args.json_out == "-"
    if not quiet:
        print(format_table([row], columns, digits=4))
        print(f"n_train={result.n_train} n_test={result.n_test}  {result.signature}")
        if result.subgroups:
            print(f"subgroups: sizes {result.subgroups['cluster_sizes']}  {result.subgroups['signature']}")
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.json_out:
        from fairmt.eval.reporting.formats import LINEAR_PROBE, declared

        data = declared(result.to_dict(), LINEAR_PROBE)
        if quiet:
            print(json_text(data))
        else:
            write_text_atomic(args.json_out, json_text(data) + "\n")
    if args.markdown:
        write_text_atomic(args.markdown, markdown_table([row], columns, digits=4))
    return 0


def register(groups: dict) -> None:
    """Add ``linear-probe`` to the ``eval`` group."""
    p = groups["eval"].add_parser(
        "linear-probe",
        help="logistic-regression probe on frozen embeddings (accuracy, F1, AUC-ROC) and latent-subgroup measures",
        description=" ".join(__doc__.split("\n\n")[0].split()).replace("``", ""),
    )
    p.add_argument("--embeddings", required=True, help=".npz (named arrays) or .jsonl ({embedding, label[, group]})")
    p.add_argument(
        "--embedding-key",
        default=None,
        help="array (npz) or key (jsonl) of the embeddings (default: embeddings / embedding)",
    )
    p.add_argument("--label", default="label", help="array (npz, e.g. y_Attractive) or key (jsonl) of the labels")
    p.add_argument("--group", default=None, help="array/key of a protected attribute (evaluation only)")
    p.add_argument(
        "--subgroup-key",
        default=None,
        help="npz array to compute the latent-subgroup measures on (default: the probed embeddings)",
    )
    from fairmt.commands._options import count, fraction, number, output_file, seed

    p.add_argument(
        "--n-clusters",
        type=count(0, note="0 skips the latent-subgroup measures"),
        default=4,
        help="K of the latent subgroups (0: skip the measures)",
    )
    p.add_argument("--test-fraction", type=fraction, default=0.2)
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument(
        "--C", type=number(0.0, low_open=True), default=1.0, help="inverse L2 strength of the logistic regression"
    )
    p.add_argument("--max-iter", type=count(1), default=1000)
    p.add_argument("--no-standardize", action="store_true", help="do not z-score the features first")
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
    p.set_defaults(handler=run_linear_probe)
