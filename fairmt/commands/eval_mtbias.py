"""``fairmt eval mt-bias`` (the GACL paper's whole evaluation: WinoMT ×10, MT-GenEval ×8, FLORES-200 ×12, with the
paper's averages); ``fairmt report`` (:mod:`fairmt.commands.report`) puts several runs side by side. See
:mod:`fairmt.eval.mtbias`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fairmt.errors import FairmtError
from fairmt.outputs import json_text


def register(groups) -> None:
    from fairmt.commands._options import PLOT_SUFFIXES, alias, count, device, output_dir, output_file

    p = groups["eval"].add_parser(
        "mt-bias",
        help="the GACL paper's evaluation in one run: WinoMT (10 languages), MT-GenEval (8), FLORES-200 (12)",
        description="Score a model (translating first) or a translations folder on WinoMT, MT-GenEval and FLORES-200 "
        "with the averages of Lee et al. (EMNLP 2023): in-domain (--id-lang) / out-of-domain as Table 2, all "
        "languages as Table 3, many-to-many FLORES by resource group as Table 4 (--many2many). Folder layout: "
        "winomt/en-LANG.txt ('source ||| translation'), geneval/{masculine,feminine,context}.LANG.txt, "
        "flores/LANG.txt, flores_m2m/SRC-TGT.txt (FLORES codes).",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", help="translate with this model (Hub id or local folder) first")
    src.add_argument("--translations-dir", metavar="DIR", help="score this translations folder (layout above)")
    output_dir(
        p,
        "--output-dir",
        what="translations folder",
        resumable=True,
        metavar="DIR",
        help="with --model: where the translations folder is written (default: "
        "mt-bias-translations/MODELNAME-FINGERPRINT, one folder per model); a rerun with the same model "
        "resumes in it",
    )
    alias(
        p,
        "--src",
        p.add_argument("--src-lang", default="en", help="source language (the benchmarks are English-source: en)"),
    )
    alias(
        p,
        "--langs",
        p.add_argument(
            "--lang",
            nargs="+",
            default=None,
            metavar="LANG",
            help="target languages: de, de,ru, de ru or all (default all: each "
            "benchmark's languages, WinoMT 10, MT-GenEval 8, FLORES 12)",
        ),
    )
    p.add_argument("--benchmarks", default="winomt,geneval,flores", help="comma list of winomt, geneval, flores")
    p.add_argument("--id-lang", default="de", help="the in-domain direction en→LANG (Table 2); 'none' for no split")
    p.add_argument("--split", default="test", choices=["dev", "test"], help="MT-GenEval split")
    p.add_argument("--compat", choices=["acl2019"], help="WinoMT: reproduce the 2019 evaluator")
    p.add_argument("--gold", metavar="FILE", help="WinoMT gold file (default as in `fairmt eval winomt`)")
    p.add_argument("--spm-model", metavar="FILE", help="the FLORES-200 SentencePiece model (spBLEU)")
    p.add_argument("--many2many", action="store_true", help="also FLORES-200 many-to-many over the resource groups")
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="score the other languages when one language's files are wrong (the errors are listed)",
    )
    output_file(
        p,
        "--json",
        what="JSON results",
        stdout=True,
        metavar="OUT",
        help="write the results as JSON ('-' prints JSON only)",
    )
    output_file(p, "--markdown", what="Markdown tables", metavar="OUT", help="write Table 2/3-style Markdown")
    output_file(
        p,
        "--plot",
        what="plot",
        suffixes=PLOT_SUFFIXES,
        metavar="OUT",
        help="write a per-language WinoMT bar chart (Figure 4 style)",
    )
    p.add_argument("--name", default=None, help="the model's name in tables (default: the model or folder name)")
    g = p.add_argument_group("generation (--model)")
    g.add_argument("--batch-size", type=count(1), default=16, help="sentences per batch (default 16)")
    g.add_argument("--num-beams", type=count(1), default=5, help="beam size (default 5, as the paper)")
    g.add_argument("--max-new-tokens", type=count(1), default=200, help="generation budget (default 200)")
    g.add_argument("--family", choices=["small100", "nllb", "m2m100"], help="model family if not detectable")
    output_dir(
        g,
        "--cache-dir",
        what="translation cache",
        resumable=True,
        metavar="DIR",
        help="translation cache (default: OUTPUT_DIR/.cache; resumable)",
    )
    g.add_argument("--device", type=device, default=None, help="e.g. cuda, cuda:1 (default: where the model loads)")
    from fairmt.commands._backend import add_backend_arguments

    add_backend_arguments(g)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``fairmt eval mt-bias``: :func:`fairmt.model_eval.mt_bias.evaluate_mt_bias` (also
    ``fairmt.evaluate_mt_bias``) on the translator the flags ask for, then the tables and files."""
    from fairmt.eval.mtbias import markdown_tables, per_language_plot
    from fairmt.eval.report import write_text_atomic
    from fairmt.model_eval.mt_bias import check_benchmarks, check_id_lang, check_langs

    if args.src_lang != "en":
        raise FairmtError(
            f"--src-lang {args.src_lang}: WinoMT, MT-GenEval and the paper's FLORES-200 directions are "
            "English-source; use --src-lang en"
        )
    check_benchmarks(args.benchmarks)
    check_id_lang(args.id_lang, check_langs(args.lang))  # the flags' errors before any model loads
    quiet = args.json == "-"

    def say(msg: str) -> None:
        if not quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    from fairmt.commands._backend import make_translator, uses_model
    from fairmt.model_eval.mt_bias import DEFAULT_TRANSLATIONS_ROOT, evaluate_mt_bias

    if not args.translations_dir and not uses_model(args):
        raise FairmtError("give --translations-dir DIR, or --model PATH (--backend openai: --api-model NAME)")
    if uses_model(args):  # every benchmark's data before the model loads and anything is translated
        from fairmt.model_eval.benchmarks import plan_suite
        from fairmt.model_eval.mt_bias import check_benchmarks as _cb

        plan_suite(
            Path(args.output_dir or "."),
            langs=check_langs(args.lang),
            benchmarks=_cb(args.benchmarks),
            split=args.split,
            compat=args.compat,
            gold=args.gold,
            many2many=args.many2many,
            say=say,
        )
    translator = make_translator(args, "en", "de") if uses_model(args) else None
    result = evaluate_mt_bias(
        translator,
        translations_dir=None if translator is not None else args.translations_dir,
        langs=args.lang,
        benchmarks=args.benchmarks,
        id_lang=args.id_lang,
        split=args.split,
        compat=args.compat,
        gold=args.gold,
        spm_model=args.spm_model,
        many2many=args.many2many,
        keep_going=args.keep_going,
        output_dir=args.output_dir,
        cache_dir=args.cache_dir,
        batch_size=args.batch_size,
        num_beams=args.num_beams,
        max_new_tokens=args.max_new_tokens,
        say=say,
        translations_root=DEFAULT_TRANSLATIONS_ROOT,
    )  # the command's default: ./mt-bias-translations
    if result is None:  # one of several processes: it helped translate; rank 0 scores and reports
        return 0
    root = Path(result["settings"]["translations_dir"])
    result["settings"]["model"] = args.model or getattr(args, "api_model", None)
    result["settings"]["backend"] = getattr(args, "backend", "hf") if uses_model(args) else None
    name = args.name or (Path(args.model).name if args.model else (args.api_model or root.name))
    result["settings"]["name"] = name
    md = markdown_tables(result, name)
    if quiet:
        print(json_text(result))
    else:
        print(md)
        if args.json:
            write_text_atomic(args.json, json_text(result) + "\n")
            print(f"wrote JSON to {args.json}", file=sys.stderr)
    if args.markdown:
        write_text_atomic(args.markdown, md)
    plotted = True
    if args.plot:
        from fairmt.eval.report import draw_plot

        plotted = draw_plot(
            args.plot,
            lambda: per_language_plot(result, args.plot, title=f"{name}: WinoMT accuracy and ΔG per language"),
        )
    return 1 if result["errors"] or not plotted else 0
