"""``fairmt eval winomt``: WinoMT gender-bias scores of translations (a file) or of a model (``--model``).

File-based evaluation imports neither torch nor transformers (spaCy only for es/fr), so it starts fast; with
``--model`` the sentences are first translated by :func:`fairmt.model_eval.translate_winomt` (batched,
cached under ``--cache-dir``, resumable).
"""

from __future__ import annotations

import sys
from pathlib import Path

COLUMNS = ["lang", "accuracy", "delta_g", "delta_g_f1", "delta_s", "delta_r", "f1_male", "f1_female", "n"]


def register(groups) -> None:
    """Add ``winomt`` to the ``eval`` sub-commands."""
    from fairmt.commands._options import PLOT_SUFFIXES, count, device, executable, output_dir, output_file

    p = groups["eval"].add_parser(
        "winomt",
        help="WinoMT: accuracy, ΔG, ΔS, ΔR of gendered professions in translations",
        description="Score English→XX translations on WinoMT (Stanovsky et al., 2019). Aligns source and "
        "translation with a built-in fast_align, detects the gender of the translated profession, and reports "
        "accuracy, ΔG = Acc(male) − Acc(female) (the GACL paper's; delta_g), ΔG_F1 = F1(male) − F1(female) (the 2019 "
        "evaluator's ΔG; delta_g_f1), ΔS = acc(pro) − acc(anti), ΔR = recall(male) − recall(female).",
    )
    p.add_argument(
        "--lang", nargs="+", required=True, metavar="LANG", help="target language(s): de, de,ru, de ru or all"
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--translations",
        metavar="FILE",
        help="'source ||| translation' file in gold order; with several languages a name containing {lang} or a "
        "directory holding en-{lang}.txt",
    )
    src.add_argument("--model", metavar="PATH", help="translate the gold sentences with this model first")
    p.add_argument(
        "--gold",
        metavar="FILE",
        help="gold file (default: $FAIRMT_DATA/winomt/aggregates_acl2019/en.txt when present — the 2019 version the "
        "shipped translations follow — else the current upstream winomt/aggregates/en.txt)",
    )
    p.add_argument(
        "--compat",
        choices=["acl2019"],
        help="reproduce the 2019 evaluator (rounding, unaligned words, the 2016 Ukrainian dictionary)",
    )
    p.add_argument("--aligner", default="fast_align", choices=["fast_align", "eflomal"], help="word aligner")
    p.add_argument("--aligner-bin", metavar="PATH", type=executable, help="use this external fast_align binary instead")
    output_file(
        p,
        "--json",
        what="JSON results",
        stdout=True,
        metavar="OUT",
        help="write the results as JSON ('-' prints JSON only)",
    )
    output_file(p, "--markdown", what="Markdown table", metavar="OUT", help="write a Markdown table")
    output_file(
        p,
        "--plot",
        what="plot",
        suffixes=PLOT_SUFFIXES,
        metavar="OUT",
        help="write a per-language bar chart (PNG/PDF/SVG)",
    )
    p.add_argument(
        "--detector",
        action="append",
        default=[],
        metavar="LANG=MODULE:FACTORY",
        help="use your own gender detector for a language (a callable returning a "
        "fairmt.eval.winomt.detectors.GenderDetector); repeatable, e.g. nl=my_pkg.dutch:make",
    )
    g = p.add_argument_group("generation (--model)")
    g.add_argument("--batch-size", type=count(1), default=16)
    g.add_argument("--num-beams", type=count(1), default=5)
    g.add_argument("--max-new-tokens", type=count(1), default=200)
    output_dir(
        g,
        "--cache-dir",
        what="translation cache",
        resumable=True,
        metavar="DIR",
        help="cache translations here (resumable)",
    )
    g.add_argument("--family", choices=["small100", "nllb", "m2m100"], help="model family if not detectable")
    g.add_argument("--device", type=device, default=None, help="e.g. cuda, cuda:1 (default: where the model loads)")
    from fairmt.commands._backend import add_backend_arguments

    add_backend_arguments(g)
    p.set_defaults(handler=run)


def _languages(spec: str, translations: str | None) -> list[str]:
    from fairmt.errors import FairmtError
    from fairmt.eval.winomt.detectors import available_languages

    known = available_languages()
    if [x.strip() for x in spec.split(",") if x.strip()] == ["all"]:
        langs = known
        if translations and Path(translations).is_dir():
            present = sorted(p.stem[3:] for p in Path(translations).glob("en-*.txt"))
            langs = [lang for lang in known if lang in present]
            skipped = [lang for lang in present if lang not in known]
            if skipped:
                print(
                    f"fairmt: skipping {', '.join(skipped)}: no gender detector for "
                    f"{'it' if len(skipped) == 1 else 'them'} (add one with --detector LANG=MODULE:FACTORY)",
                    file=sys.stderr,
                )
            if not langs:
                raise FairmtError(f"{translations}: no en-XX.txt file for any of {', '.join(known)}")
        return langs
    langs = [x.strip() for x in spec.split(",") if x.strip()]
    for lang in langs:
        if lang not in known:
            raise FairmtError(f"unknown WinoMT language '{lang}': choose from {', '.join(known)} (or 'all')")
    if not langs:
        raise FairmtError("--lang is empty")
    return langs


def _register_user_detectors(specs: list[str]) -> None:
    """``LANG=MODULE:FACTORY`` → the factory registered for LANG (replacing a built-in detector)."""
    import importlib

    from fairmt.errors import FairmtError
    from fairmt.eval.winomt.detectors import register_detector

    for spec in specs:
        lang, _, target = spec.partition("=")
        module, _, attr = target.partition(":")
        if not (lang and module and attr):
            raise FairmtError(f"--detector {spec!r}: expected LANG=MODULE:FACTORY, e.g. nl=my_pkg.dutch:make")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as err:
            raise FairmtError(f"--detector {spec!r}: cannot load {module}:{attr} ({err})") from None
        if not callable(factory):
            raise FairmtError(f"--detector {spec!r}: {module}:{attr} is not callable")
        try:  # made once here, so that a factory that fails does so before any work, as one line
            detector = factory()
        except Exception as err:  # noqa: BLE001 - the user's code: any failure is reported, naming it
            raise FairmtError(f"--detector {spec!r}: {module}:{attr}() failed: {type(err).__name__}: {err}") from None
        if not callable(getattr(detector, "detect", None)):
            raise FairmtError(
                f"--detector {spec!r}: {module}:{attr}() returned {type(detector).__name__}, not a "
                "gender detector (an object with a detect method: fairmt.eval.winomt.detectors."
                "GenderDetector)"
            )
        register_detector(lang, lambda detector=detector: detector, overwrite=True)


def _translation_file(template: str, lang: str, multi: bool) -> str:
    from fairmt.errors import FairmtError

    if Path(template).is_dir():
        return str(Path(template) / f"en-{lang}.txt")
    if "{lang}" in template:
        return template.replace("{lang}", lang)
    if multi:
        raise FairmtError(
            f"{template}: with several languages give a directory of en-XX.txt files or a name containing {{lang}}"
        )
    return template


def run(args) -> int:
    """Handler: evaluate each language, print a table (or write JSON/Markdown/plot)."""
    from fairmt.commands._backend import make_translator, uses_model
    from fairmt.distributed import is_main_process
    from fairmt.errors import FairmtError
    from fairmt.eval.report import bar_chart, format_table, markdown_table, write_json, write_text_atomic
    from fairmt.eval.winomt.align import get_aligner
    from fairmt.eval.winomt.evaluate import evaluate_winomt, load_gold

    if not args.translations and not uses_model(args):
        raise FairmtError("give --translations FILE, or --model PATH (--backend openai: --api-model NAME)")
    _register_user_detectors(args.detector)
    langs = _languages(",".join(args.lang), args.translations)
    translator = None if args.translations else make_translator(args, "en", langs[0])
    multi = len(langs) > 1
    gold = load_gold(args.gold, args.compat)
    aligner = get_aligner(args.aligner, args.aligner_bin)
    results = []
    for lang in langs:
        if args.translations:
            translations = _translation_file(args.translations, lang, multi)
        else:
            from fairmt.model_eval import translate_winomt

            translations = translate_winomt(
                translator,
                gold,
                lang,
                cache_dir=args.cache_dir,
                batch_size=args.batch_size,
                num_beams=args.num_beams,
                max_new_tokens=args.max_new_tokens,
            )
        if not is_main_process():  # one of several processes: it helped translate; rank 0 scores and reports
            continue
        results.append(evaluate_winomt(translations, lang, gold, aligner=aligner, compat=args.compat))
    if not is_main_process():
        return 0
    rows = [r.row() for r in results]
    if args.json == "-":  # the convention of every eval command: JSON alone on stdout
        from fairmt.outputs import json_text

        print(json_text(_summary(results)))
    elif args.json:
        write_json(_summary(results), args.json)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        sigs = "\n".join(f"- `{r.signature}`" for r in results)
        write_text_atomic(args.markdown, markdown_table(rows, COLUMNS) + "\n" + sigs + "\n")
    plotted = True
    if args.plot:
        from fairmt.eval.report import draw_plot

        system = Path(args.translations).name if args.translations else Path(str(translator.model_name)).name
        plotted = draw_plot(
            args.plot,
            lambda: bar_chart(
                rows,
                "lang",
                ["accuracy", "delta_g", "delta_s", "delta_r"],
                args.plot,
                title=f"WinoMT — {system} ({'compat ' + args.compat if args.compat else 'fairmt default mode'})",
            ),
        )
    if args.json != "-":
        print(format_table(rows, COLUMNS))
        for r in results:
            print(r.signature)
    for what, path in (("JSON", args.json), ("Markdown", args.markdown), ("plot", args.plot if plotted else None)):
        if path and path != "-":
            print(f"wrote {what} to {path}", file=sys.stderr)
    return 0 if plotted else 1


def _summary(results) -> dict:
    """One result as a dict; several as ``{"per_language": [...], "<metric>": mean, ...}`` (as eval geneval)."""
    from fairmt.eval.report import as_dict
    from fairmt.eval.reporting.formats import WINOMT, declared

    if len(results) == 1:
        return declared(as_dict(results[0]), WINOMT)
    out: dict = {"format": WINOMT, "per_language": [as_dict(r) for r in results]}
    for m in ("accuracy", "delta_g", "delta_g_f1", "delta_s", "delta_r"):
        vals = [getattr(r, m) for r in results if getattr(r, m, None) is not None]
        out[m] = sum(vals) / len(vals) if vals else None
    return out
