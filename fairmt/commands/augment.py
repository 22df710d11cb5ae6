"""``fairmt augment cda|llm``: make CCD tuple datasets (neutral, male, female) from raw text.

* ``fairmt augment cda --input news.jsonl --field translation.en --output tuples.jsonl`` — rule-based CDA with the
  project lexicon; tuples failing the polarity check are dropped (``--keep-wrong-polarity`` keeps them).
* ``fairmt augment llm --input news.txt --output tuples.jsonl --url http://host/v1 --model NAME`` — LLM
  augmentation (OpenAI-compatible endpoint; the key is read from ``--api-key-env``, default ``OPENAI_API_KEY``)
  or ``--local-model PATH`` (a transformers causal LM), after ``--search-rounds`` rounds of polarity-guided
  prompt search on ``--search-size`` texts. Tuples are appended to ``--output`` as they come; texts that fail
  after all retries go to ``--failures`` (default ``<output>.failures.jsonl``). Prints the union polarity
  accuracy.
"""

from __future__ import annotations

import json
from pathlib import Path


def register(groups) -> None:
    from fairmt.commands._options import count, http_url, number, output_file

    p = groups["top"].add_parser("augment", help="make CCD tuples (neutral/male/female) by CDA or with an LLM")
    sub = p.add_subparsers(dest="augment_command", metavar="METHOD")
    sub.required = True

    def common(q):
        q.add_argument("--input", required=True, help="text file (one per line) or JSONL (with --field)")
        q.add_argument("--field", default=None, help="dotted key of the text in a JSONL input, e.g. translation.en")
        output_file(
            q,
            "--output",
            what="tuple file",
            required=True,
            help="tuple JSONL to write (an existing file is refused unless --overwrite)",
        )
        q.add_argument("--limit", type=count(1), default=None, help="use only the first N input texts")
        output_file(
            q,
            "--json",
            what="summary JSON",
            default=None,
            help="write the summary (counts, polarity accuracy) as JSON here",
        )

    c = sub.add_parser("cda", help="rule-based counterfactual augmentation with the gender lexicon")
    common(c)
    c.add_argument("--keep-ungendered", action="store_true", help="keep texts with no gendered word")
    c.add_argument("--keep-wrong-polarity", action="store_true", help="keep tuples failing the polarity check")
    c.set_defaults(handler=_run_cda)

    m = sub.add_parser("llm", help="LLM augmentation with polarity-guided prompt search (CCD paper, Alg. 1)")
    common(m)
    m.add_argument(
        "--url", type=http_url, default=None, help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"
    )
    m.add_argument("--model", default=None, help="model name at the endpoint")
    m.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    m.add_argument("--local-model", default=None, help="a local transformers causal LM folder instead of --url")
    m.add_argument("--timeout", type=number(0.0, low_open=True), default=60.0, help="seconds per request")
    m.add_argument("--retries", type=count(0), default=3, help="retries after a timeout / 5xx / malformed reply")
    m.add_argument(
        "--backoff",
        type=number(0.0),
        default=None,
        help="seconds before the first retry, doubled after each (default: OpenAIChatClient's backoff)",
    )
    m.add_argument(
        "--search-rounds",
        type=count(0, note="0: no prompt search"),
        default=10,
        help="prompt-search rounds K (paper: 10; 0 = none)",
    )
    m.add_argument("--search-size", type=count(1), default=50, help="texts the prompt search runs on")
    m.add_argument(
        "--corrector",
        choices=("cda", "interactive"),
        default="cda",
        help="who corrects the chosen wrong example: the lexicon (cda) or you (interactive)",
    )
    m.add_argument("--examples", default=None, help="JSONL of few-shot examples {passage, versions} to start from")
    output_file(
        m,
        "--failures",
        what="failures file",
        default=None,
        help="JSONL for texts that failed (default <output>.failures.jsonl)",
    )
    m.add_argument(
        "--keep-wrong-polarity",
        action="store_true",
        help="also write tuples failing the polarity check (default: dropped and counted, as in cda)",
    )
    m.add_argument("--all-texts", action="store_true", help="also augment texts with no gendered word")
    m.add_argument("--max-new-tokens", type=count(1), default=256, help="generation budget (local model)")
    m.set_defaults(handler=_run_llm)


def _texts(args) -> list[str]:
    from fairmt.data.augment.tuples import read_texts

    texts = read_texts(args.input, args.field)
    return texts[: args.limit] if args.limit is not None else texts


def _summary(args, summary: dict) -> None:
    from fairmt.eval.report import write_text_atomic
    from fairmt.outputs import json_text

    print(json_text(summary))
    if args.json:
        write_text_atomic(args.json, json_text(summary) + "\n")


def _run_cda(args) -> int:
    """Everything the run needs is checked before the first text is rewritten: the outputs (--output, --json: where
    they can be written, not existing unless --overwrite, none of them an input; by the parser's declared outputs),
    the verb lexicon (:func:`~fairmt.data.augment.cda.check_cda_tools`) and the whole input read."""
    from fairmt.data.augment.cda import AGREEMENT_SCOPE, cda_augment, check_cda_tools
    from fairmt.data.augment.tuples import union_polarity_accuracy, write_tuples

    check_cda_tools()
    texts = _texts(args)
    rows, stats = cda_augment(
        texts, require_gendered=not args.keep_ungendered, drop_wrong_polarity=not args.keep_wrong_polarity
    )
    summary = {k: v for k, v in stats.to_dict().items() if k != "failed_examples"}
    if not rows:
        from fairmt.errors import FairmtError

        raise FairmtError(
            f"no tuple was produced from {stats.n_input} texts ({stats.n_not_gendered} with no gendered English word, "
            f"{stats.n_failed_polarity} failed the polarity check, {stats.n_failed_agreement} the agreement check); "
            f"nothing written to {args.output}. CDA rewrites English text with gendered words (he, she, mother, ...)"
        )
    write_tuples(args.output, rows)
    summary["agreement_checked"] = AGREEMENT_SCOPE
    if rows:
        rep = union_polarity_accuracy(rows)
        summary.update(
            union_polarity_accuracy=rep.union_accuracy,
            per_version_accuracy=rep.per_version_accuracy,
            signature=rep.signature,
        )
    summary["output"] = args.output
    _summary(args, summary)
    return 0


def _client(args):
    from fairmt.errors import FairmtError

    if args.local_model:
        from fairmt.data.augment.llm import TransformersChatClient

        return TransformersChatClient.from_pretrained(args.local_model, max_new_tokens=args.max_new_tokens)
    if not args.url or not args.model:
        raise FairmtError("fairmt augment llm needs --url and --model (an OpenAI-compatible endpoint) or --local-model")
    from fairmt.data.augment.llm import OpenAIChatClient

    backoff = {} if args.backoff is None else {"backoff": args.backoff}  # the client's default unless given
    return OpenAIChatClient(
        args.url, args.model, api_key_env=args.api_key_env, timeout=args.timeout, max_retries=args.retries, **backoff
    )


def _examples(path):
    from fairmt.data.augment.llm import DEFAULT_GENDER_EXAMPLES, FewShotExample
    from fairmt.errors import FairmtError

    if not path:
        return list(DEFAULT_GENDER_EXAMPLES)
    from fairmt.data.inputs import iter_jsonl

    out = []
    for lineno, obj in iter_jsonl(path, what="few-shot examples"):
        try:
            out.append(FewShotExample(obj["passage"], dict(obj["versions"])))
        except (KeyError, TypeError, ValueError):
            raise FairmtError(f'{path}:{lineno}: expected {{"passage": ..., "versions": {{...}}}}') from None
    return out


def _run_llm(args) -> int:
    from dataclasses import asdict

    from fairmt.data.augment.llm import (
        augment_texts,
        cda_corrector,
        interactive_corrector,
        polarity_guided_prompt_search,
    )
    from fairmt.data.augment.tuples import write_tuples
    from fairmt.data.gender import detect_gender
    from fairmt.outputs import check_output_file

    inputs = [p for p in (args.input, args.examples, args.local_model) if p]
    fail_path = Path(args.failures or f"{args.output}.failures.jsonl")
    examples_path = Path(args.output).with_suffix(".examples.jsonl")
    derived = ([] if args.failures else [(fail_path, "failures file")]) + (
        [(examples_path, "prompt-search examples file")] if args.search_rounds > 0 else []
    )
    for path, what in derived:  # outputs named after --output: checked as the declared ones were
        check_output_file(path, what, overwrite=args.overwrite, inputs=inputs)
    texts = _texts(args)
    if not args.all_texts:
        texts = [t for t in texts if detect_gender(t) != "none"]
    examples = _examples(args.examples)  # every input file is read before the client connects / loads
    client = _client(args)
    summary: dict = {}
    if args.search_rounds > 0 and texts:
        corrector = cda_corrector if args.corrector == "cda" else interactive_corrector()
        search = polarity_guided_prompt_search(
            texts[: args.search_size], client, examples, args.search_rounds, corrector
        )
        examples = search.examples
        summary["prompt_search"] = {"rounds": [asdict(r) for r in search.rounds], "n_examples": len(examples)}
        from fairmt.outputs import write_file

        write_file(
            examples_path,
            "".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in examples),
            what="the prompt-search examples",
        )

    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    from fairmt.outputs import write_file

    write_file(out, "", what="the tuples")
    write_file(fail_path, "", what="the failures file")

    written = {"n_written": 0, "n_dropped_wrong_polarity": 0}

    def on_tuple(row):
        if not args.keep_wrong_polarity and not row["polarity_ok"]:
            written["n_dropped_wrong_polarity"] += 1
            return
        write_tuples(out, [row], append=True)
        written["n_written"] += 1

    def on_failure(fail):
        from fairmt.outputs import append_text

        append_text(fail_path, json.dumps(asdict(fail), ensure_ascii=False) + "\n", what="the failures file")

    res = augment_texts(texts, client, examples, on_tuple=on_tuple, on_failure=on_failure, progress=True)
    summary.update(res.summary(), **written, output=str(out), failures=str(fail_path))
    _summary(args, summary)
    if texts and written["n_written"] == 0:  # e.g. an unreachable endpoint: every text failed
        import sys

        print(
            f"fairmt: error: no tuple was produced from {len(texts)} texts ({summary.get('n_failed', 0)} failed, "
            f"{written['n_dropped_wrong_polarity']} dropped for polarity); see {fail_path}",
            file=sys.stderr,
        )
        return 1
    return 0
