"""``fairmt eval geneval`` (MT-GenEval gender accuracy) and ``fairmt eval flores`` (spBLEU / chrF++).

Both score a file of translations, or translate with ``--model`` first (batched beam search, cached and resumable
under ``--cache-dir``). File-based evaluation imports neither torch nor transformers.
"""

from __future__ import annotations

import sys
from pathlib import Path

GENEVAL_COLUMNS = [
    "lang",
    "n",
    "explicit_accuracy",
    "chrfpp",
    "degenerate",
    "accuracy",
    "acc_m",
    "acc_f",
    "delta_g",
    "explicit_delta_g",
    "hypothesis_accuracy",
]
CONTEXT_COLUMNS = ["lang", "n", "accuracy", "explicit_accuracy"]
FLORES_COLUMNS = ["lang_pair", "n", "bleu_label", "bleu", "chrfpp"]


def expand_langs(values: list[str], every) -> list[str]:
    """The one ``--lang`` convention of every eval command: ``de``, ``de,ru``, ``de ru`` or ``all``."""
    from fairmt.errors import FairmtError

    langs = [x.strip() for v in values for x in str(v).split(",") if x.strip()]
    if "all" in langs:
        if len(langs) > 1:
            raise FairmtError("--lang all cannot be combined with other languages")
        return list(every)
    if not langs:
        raise FairmtError("--lang is empty")
    return list(dict.fromkeys(langs))


def _lang_path(template: str | None, lang: str, multi: bool) -> str | None:
    from fairmt.errors import FairmtError

    if template is None:
        return None
    if "{lang}" in template:
        return template.replace("{lang}", lang)
    if multi:
        raise FairmtError(f"{template}: with several --lang values the file name must contain {{lang}}")
    return template


def _gen_kwargs(args) -> dict:
    return dict(
        batch_size=args.batch_size,
        num_beams=args.num_beams,
        max_new_tokens=args.max_new_tokens,
    )


def _load_model(args, src: str, tgt: str):
    """The translator of --model / --backend (:func:`fairmt.commands._backend.make_translator`)."""
    from fairmt.commands._backend import make_translator

    return make_translator(args, src, tgt)


def _geneval_files(args, lang: str, multi: bool):
    """Score one language from --masculine/--feminine files, with errors naming file and line."""
    from fairmt.errors import FairmtError
    from fairmt.eval.geneval import geneval_accuracy, load_counterfactual, read_lines

    m_path = _lang_path(args.masculine, lang, multi)
    f_path = _lang_path(args.feminine, lang, multi)
    if Path(m_path).resolve() == Path(f_path).resolve():
        raise FairmtError(f"--masculine and --feminine are the same file ({m_path}); give the two translation files")
    data = load_counterfactual(lang, args.split)
    n = len(data.masculine_refs)
    masc = read_lines(m_path, allow_empty=args.allow_empty)
    fem = read_lines(f_path, allow_empty=args.allow_empty)
    if len(masc) != len(fem):
        raise FairmtError(
            f"mismatched masculine/feminine files: {m_path} has {len(masc)} lines, {f_path} has {len(fem)}; "
            f"line i of both must translate pair i of MT-GenEval {args.split} ({lang}, {n} pairs)"
        )
    for path, lines, sources in ((m_path, masc, data.masculine_sources), (f_path, fem, data.feminine_sources)):
        if len(lines) != n:
            extra = f"line {n + 1} is extra" if len(lines) > n else f"it ends after line {len(lines)}"
            raise FairmtError(
                f"{path}: has {len(lines)} lines but MT-GenEval {args.split} ({lang}) has {n} pairs ({extra}); "
                "did you give the right --split and --lang?"
            )
        eng = sum(a.strip() == b.strip() for a, b in zip(lines, sources))
        if eng > n // 2:
            raise FairmtError(
                f"{path}: {eng} of {n} lines equal the English source; give the translations, not the sources"
            )
    return geneval_accuracy(masc, fem, lang, args.split, compat=args.compat)


def _geneval_context(args, lang: str, multi: bool):
    from fairmt.commands._backend import uses_model
    from fairmt.errors import FairmtError
    from fairmt.eval.geneval import geneval_contextual_accuracy, load_contextual, read_lines

    data = load_contextual(lang, args.split)
    if uses_model(args):
        from fairmt.model_eval import translate_geneval_context

        hyps = translate_geneval_context(
            _load_model(args, "en", lang), data, lang, args.split, cache_dir=args.cache_dir, **_gen_kwargs(args)
        )
    else:
        path = _lang_path(args.translations, lang, multi)
        if path is None:
            raise FairmtError("the contextual set needs --translations FILE (or --model)")
        hyps = read_lines(path, expected=len(data.sources), allow_empty=args.allow_empty)
    return geneval_contextual_accuracy(hyps, lang, args.split, compat=args.compat)


def _run_geneval(args) -> int:
    from fairmt.commands._backend import uses_model
    from fairmt.errors import FairmtError
    from fairmt.eval.geneval import CONTEXT_LANGS, GENEVAL_LANGS, check_lang, check_split

    check_split(args.split)
    every = GENEVAL_LANGS if args.set == "counterfactual" else CONTEXT_LANGS
    langs = [check_lang(lang, args.set) for lang in expand_langs(args.lang, every)]
    multi = len(langs) > 1
    results = []
    if args.set == "contextual":
        results = [_geneval_context(args, lang, multi) for lang in langs]
    elif uses_model(args):
        from fairmt.model_eval import evaluate_geneval

        tm = _load_model(args, "en", langs[0])
        for lang in langs:
            results.append(
                evaluate_geneval(
                    tm, lang, args.split, cache_dir=args.cache_dir, compat=args.compat, **_gen_kwargs(args)
                )
            )
    else:
        if not (args.masculine and args.feminine):
            raise FairmtError("give --masculine FILE and --feminine FILE (translations), or --model PATH")
        results = [_geneval_files(args, lang, multi) for lang in langs]
    columns = CONTEXT_COLUMNS if args.set == "contextual" else GENEVAL_COLUMNS
    metrics = ["explicit_accuracy", "accuracy"] + (
        [] if args.set == "contextual" else ["chrfpp", "delta_g", "explicit_delta_g"]
    )
    return 0 if _report(args, results, columns, metrics, "lang", f"MT-GenEval {args.set} ({args.split})") else 1


def _row(result) -> dict:
    from fairmt.eval.report import as_dict

    row = as_dict(result)
    if "accuracy_masculine" in row:
        row["acc_m"], row["acc_f"] = row["accuracy_masculine"], row["accuracy_feminine"]
    if "bleu_label" in row:  # a FLORES result
        row["bleu"] = result.bleu
    if isinstance(row.get("degenerate"), dict):
        row["degenerate"] = f"{row['degenerate']['degenerate']}/{row['degenerate']['n']}"
    return row


def _summary(results, metrics: list[str]) -> dict:
    from fairmt.eval.report import as_dict
    from fairmt.eval.reporting.formats import GENEVAL, TRANSLATION, declared

    fmt = TRANSLATION if hasattr(results[0], "bleu_label") else GENEVAL
    if len(results) == 1:
        return declared(as_dict(results[0]), fmt)
    out = {"format": fmt, "per_language": [as_dict(r) for r in results]}
    for m in metrics:
        vals = [getattr(r, m) for r in results if getattr(r, m, None) is not None]
        out[m] = sum(vals) / len(vals) if vals else None
    out["signature"] = " ; ".join(r.signature for r in results) if hasattr(results[0], "signature") else ""
    return out


def _report(args, results, columns, metrics, label, title) -> bool:
    """Print and write the results; False when a --plot asked for was not (wholly) drawn (exit 1, after every
    other output is written: :func:`fairmt.eval.report.draw_plot`)."""
    from fairmt.distributed import is_main_process
    from fairmt.eval.report import bar_chart, draw_plot, format_table, markdown_table, write_json, write_text_atomic

    if not is_main_process():  # one of several processes (torchrun / accelerate launch): rank 0 reports
        return True

    rows = [_row(r) for r in results]
    summary = _summary(results, metrics)
    if args.json:
        if args.json == "-":
            from fairmt.outputs import json_text

            print(json_text(summary))
        else:
            write_json(summary, args.json)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        sigs = "\n".join(f"- `{getattr(r, 'signature', '') or r.bleu_signature}`" for r in results)
        write_text_atomic(args.markdown, f"### {title}\n\n{markdown_table(rows, columns, digits=2)}\n{sigs}\n")
    plotted = (
        draw_plot(args.plot, lambda: bar_chart(rows, label, metrics, args.plot, title=title)) if args.plot else True
    )
    if args.json != "-":
        print(title)
        print(format_table(rows, columns, digits=2))
        for r in results:
            for sig in (
                getattr(r, "signature", None),
                getattr(r, "bleu_signature", None),
                getattr(r, "chrf_signature", None),
            ):
                if sig:
                    print(f"  {sig}")
            if getattr(r, "note", ""):
                print(f"  note: {r.note}", file=sys.stderr)
    from fairmt.eval.degenerate import describe

    for r in results:  # beside the numbers, whatever the output format: a degenerate output can score 100 %
        line = describe(f"{title} {getattr(r, 'lang', '')}".strip(), getattr(r, "degenerate", None))
        if line:
            print(f"warning: {line}", file=sys.stderr)
    return plotted


def _run_flores(args) -> int:
    from fairmt.commands._backend import uses_model
    from fairmt.errors import FairmtError
    from fairmt.eval.geneval import read_lines
    from fairmt.eval.translation import find_spm_model, parse_lang_pair, read_flores, translation_quality

    pairs = _flores_pairs(args)
    multi = len(pairs) > 1
    find_spm_model(args.spm_model)  # fail early with advice
    for pair in pairs:
        parse_lang_pair(pair)
    results = []
    tm = _load_model(args, "en", "de") if uses_model(args) else None  # languages are set per pair
    for pair in pairs:
        _, tgt = parse_lang_pair(pair)
        if tm is not None:
            from fairmt.model_eval import evaluate_flores

            results.append(
                evaluate_flores(
                    tm,
                    pair,
                    split=args.split,
                    spm_model=args.spm_model,
                    cache_dir=args.cache_dir,
                    compat=args.compat,
                    **_gen_kwargs(args),
                )
            )
        else:
            if not args.hypotheses:
                raise FairmtError("give --hypotheses FILE (translations of the FLORES-200 source), or --model PATH")
            path = args.hypotheses.replace("{lang_pair}", pair).replace("{lang}", pairs[pair])
            if multi and path == args.hypotheses:
                raise FairmtError(
                    f"{args.hypotheses}: with several languages the file name must contain {{lang}} (or {{lang_pair}})"
                )
            refs = read_flores(tgt, args.split)
            hyps = read_lines(path, expected=len(refs), allow_empty=args.allow_empty)
            results.append(
                translation_quality(hyps, refs, lang_pair=pair, spm_model=args.spm_model, compat=args.compat)
            )
    return (
        0 if _report(args, results, FLORES_COLUMNS, ["bleu", "chrfpp"], "lang_pair", f"FLORES-200 {args.split}") else 1
    )


def _flores_pairs(args) -> dict[str, str]:
    """``--lang de,ru`` (English source, the one language convention) or ``--lang-pair``: FLORES-200 pair → the name
    ``{lang}`` stands for in file names (the language code given, or the pair's target code)."""
    from fairmt.errors import FairmtError

    if args.lang_pair:
        return {p: p.split("-")[-1] for p in (x.strip() for v in args.lang_pair for x in v.split(",")) if p}
    from fairmt.models.languages import ISO_TO_NLLB

    pairs = {}
    for lang in expand_langs(args.lang, sorted(ISO_TO_NLLB)):
        if lang not in ISO_TO_NLLB:
            raise FairmtError(f"--lang {lang}: no FLORES-200 code known for it; give --lang-pair eng_Latn-XXX_Xxxx")
        pairs[f"eng_Latn-{ISO_TO_NLLB[lang]}"] = lang
    return pairs


def _common(p, model_help: str) -> None:
    from fairmt.commands._options import PLOT_SUFFIXES, count, device, output_dir, output_file

    p.add_argument("--model", default=None, help=model_help)
    p.add_argument(
        "--family", choices=["small100", "nllb", "m2m100"], default=None, help="model family if not detectable"
    )
    p.add_argument("--device", type=device, default=None, help="e.g. cuda, cuda:1 (default: where the model loads)")
    p.add_argument("--batch-size", type=count(1), default=16)
    p.add_argument("--num-beams", type=count(1), default=5)
    p.add_argument("--max-new-tokens", type=count(1), default=200)
    output_dir(
        p,
        "--cache-dir",
        what="translation cache",
        resumable=True,
        default=None,
        help="cache translations here (JSONL) and resume an interrupted run",
    )
    from fairmt.commands._backend import add_backend_arguments

    add_backend_arguments(p)
    p.add_argument("--allow-empty", action="store_true", help="accept empty translation lines (default: an error)")
    from fairmt.eval.geneval import COMPATS

    p.add_argument(
        "--compat",
        choices=COMPATS,
        default=None,
        help="official: read the text exactly as the reference scorer does (no Unicode normalisation; "
        "the signature says text:raw|compat:official), as --compat acl2019 does for WinoMT",
    )
    output_file(
        p,
        "--json",
        what="JSON results",
        stdout=True,
        default=None,
        metavar="OUT",
        help="write the results as JSON ('-' prints JSON only)",
    )
    output_file(p, "--markdown", what="Markdown table", default=None, metavar="OUT", help="write a Markdown table")
    output_file(
        p,
        "--plot",
        what="plot",
        suffixes=PLOT_SUFFIXES,
        default=None,
        metavar="OUT",
        help="write a per-language bar chart (PNG/PDF/SVG)",
    )


def register(groups) -> None:
    """Add ``geneval`` and ``flores`` to the ``fairmt eval`` group."""
    from fairmt.eval.geneval import CONTEXT_LANGS

    g = groups["eval"].add_parser(
        "geneval",
        help="MT-GenEval gender accuracy (accuracy, explicit accuracy, ΔG, E-ΔG) of translations or a model",
        description="Score MT-GenEval translations. Counterfactual set: --masculine FILE --feminine FILE, line i "
        "translating line i of geneval-sentences-{masculine,feminine}-SPLIT.en_LANG.en; contextual set: "
        "--set contextual --translations FILE (target sentence only; text before a last <sep> is dropped). "
        "File names may contain {lang} to score several --lang values at once.",
    )
    g.add_argument(
        "--lang",
        nargs="+",
        required=True,
        metavar="LANG",
        help=f"target language(s): de, de,ru, de ru or all, among {', '.join(CONTEXT_LANGS)} (nl: contextual only)",
    )
    g.add_argument("--split", default="test", help="dev or test (default: test)")
    g.add_argument("--set", choices=["counterfactual", "contextual"], default="counterfactual")
    g.add_argument("--masculine", default=None, metavar="FILE", help="translations of the masculine sources")
    g.add_argument("--feminine", default=None, metavar="FILE", help="translations of the feminine sources")
    g.add_argument("--translations", default=None, metavar="FILE", help="contextual set: translations, one per line")
    _common(g, "translate with this model (Hub name or folder) instead of reading files")
    g.set_defaults(handler=_run_geneval)

    f = groups["eval"].add_parser(
        "flores",
        help="spBLEU (FLORES-200 SentencePiece) and chrF++ on FLORES-200 of translations or a model",
        description="Score translations of FLORES-200 (fetched with `fairmt data download flores200`). A "
        "SentencePiece model other than the official one gives spBLEU* (bleu_spm_nonstandard), not spBLEU.",
    )
    which = f.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--lang",
        nargs="+",
        metavar="LANG",
        help="target language(s) of English-source translation, as every eval command: de, de,ru, "
        "de ru (FLORES-200 codes are looked up: de = eng_Latn-deu_Latn)",
    )
    which.add_argument(
        "--lang-pair",
        nargs="+",
        metavar="SRC-TGT",
        help="any FLORES-200 direction(s) by code, e.g. eng_Latn-deu_Latn or fra_Latn-deu_Latn",
    )
    f.add_argument("--split", default="devtest", choices=["dev", "devtest"])
    f.add_argument(
        "--hypotheses", default=None, metavar="FILE", help="translations, one per line ({lang_pair} allowed)"
    )
    f.add_argument(
        "--spm-model", default=None, metavar="FILE", help="the FLORES-200 SentencePiece model file (offline)"
    )
    _common(f, "translate with this model (Hub name or folder) instead of reading --hypotheses")
    f.set_defaults(handler=_run_flores)
