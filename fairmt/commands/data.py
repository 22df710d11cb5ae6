"""``fairmt data download {winomt,geneval,bios,lexicons,flores200}``, ``fairmt data verify`` and
``fairmt data fairseq-prep``."""

from __future__ import annotations


def _download(args) -> int:
    from fairmt.data.download import download
    from fairmt.hub import use_timeout

    use_timeout(args.timeout)
    try:
        for name in args.datasets:
            report = download(
                name,
                dest=args.output_dir,
                base_url=args.base_url,
                force=args.overwrite,
                sha256=args.sha256,
                progress=not args.no_progress,
            )
            print(report)
    finally:
        use_timeout(None)  # the command's option ends with it (a Python caller may run another command)
    return 0


def _verify(args) -> int:
    from fairmt.data.download import verify

    ok = True
    for name in args.datasets:
        report = verify(name, args.root)
        print(report)
        ok &= report.passed
    return 0 if ok else 1


def _fairseq_prep(args) -> int:
    from fairmt.errors import FairmtError
    from fairmt.fairseq.prep import fairseq_prep

    if not args.output_dir:
        raise FairmtError("give --output-dir DIR: the folder for the binarised data and side files")
    if args.lang_pairs and (args.src_lang or args.lang):
        raise FairmtError("give either --lang-pairs (multilingual layout) or --src-lang/--lang (one pair), not both")
    counts = fairseq_prep(
        args.input,
        args.output_dir,
        src=args.src_lang or "en",
        tgt=args.lang or "de",
        valid_input=args.valid_input,
        valid_size=args.valid_size,
        srcdict=args.srcdict,
        tgtdict=args.tgtdict,
        joined_dictionary=args.joined_dictionary,
        sentencepiece_model=args.sentencepiece_model,
        balance=not args.no_balance,
        seed=args.seed,
        workers=args.workers,
        lang_pairs=args.lang_pairs,
        overwrite=args.overwrite,
    )
    args.out = args.output_dir
    sizes = ", ".join(f"{k}: {v} pairs" for k, v in counts.items())
    if args.lang_pairs:
        print(
            f"fairseq data for gacl_multilingual_translation in {args.out} ({sizes}); train with: fairseq-train "
            f"{args.out} --user-dir $(python -m fairmt.fairseq.user_dir) --task gacl_multilingual_translation "
            f"--lang-pairs {args.lang_pairs} --lang-dict {args.out}/langs.txt --encoder-langtok src "
            "--decoder-langtok --criterion gacl_kd ..."
        )
    else:
        print(
            f"fairseq data for gacl_translation in {args.out} ({sizes}); train with: fairseq-train {args.out} "
            f"--user-dir $(python -m fairmt.fairseq.user_dir) --task gacl_translation --criterion gacl_kd ..."
        )
    return 0


def _corpora(args) -> int:
    from fairmt.data.corpora import CORPORA, describe, fetch
    from fairmt.data.paths import cache_dir
    from fairmt.errors import FairmtError

    if not args.fetch:
        print(describe())
        return 0
    from fairmt.hub import use_timeout

    use_timeout(args.timeout)
    pins = {}
    for item in args.sha256:
        fname, sep, digest = item.partition("=")
        if not sep or len(digest) != 64:
            raise FairmtError(f"--sha256 {item!r}: expected FILE=DIGEST (a 64-hex-digit sha256)")
        pins[fname] = digest.lower()
    dest = args.output_dir or cache_dir()
    try:
        digests = fetch(args.fetch, dest, base_url=args.base_url, sha256=pins, progress=not args.no_progress)
    finally:
        use_timeout(None)  # the command's option ends with it
    for fname, d in digests.items():
        print(f"{d}  {fname}")
    folder = CORPORA[args.fetch].folder or args.fetch
    print(f"wrote {len(digests)} file(s) and SHA256SUMS to {dest}/{folder}")
    return 0


def register(groups) -> None:
    """Add ``download``, ``verify`` and ``fairseq-prep`` to the ``fairmt data`` group."""
    from fairmt.commands._options import alias, count, output_dir, seed, timeout_option

    p = groups["data"].add_parser(
        "download",
        help="fetch benchmark data (winomt, geneval, bios, lexicons, flores200) into the local cache, checking sha256",
        description="Fetch benchmark files into the data cache ($FAIRMT_CACHE/data or ~/.cache/fairmt/data) in the "
        "layout FAIRMT_DATA expects, verifying each file's pinned sha256. Datasets: winomt, geneval (mt_geneval), "
        "bios (the Bias-in-Bios sample of the offline classification recipes), lexicons (Zhao et al. 2018's WinoBias "
        "word lists, the GACL paper's lexicon), flores200.",
    )
    p.add_argument(
        "datasets", nargs="+", metavar="DATASET", help="winomt, geneval (or mt_geneval), bios, lexicons, flores200"
    )
    alias(
        p,
        "--dest",
        output_dir(
            p,
            "--output-dir",
            what="data folder",
            resumable=True,
            default=None,
            help="download into this folder instead of the cache (files already there and valid are kept)",
        ),
    )
    p.add_argument(
        "--base-url",
        default=None,
        help="a mirror laid out like the data folder (e.g. http://host/data, file:///srv/data) used instead of the "
        "upstream URLs; also the only source of files without an upstream URL",
    )
    p.add_argument(
        "--sha256", default=None, help="expected sha256 of a dataset archive (FLORES-200) not pinned in fairmt"
    )
    # one spelling in every command: --overwrite; --force (its name until 0.1) still works, with a note
    alias(
        p,
        "--force",
        p.add_argument(
            "--overwrite",
            action="store_true",
            help="download again even when files are present and valid, replacing them",
        ),
    )
    alias(p, "--quiet", p.add_argument("--no-progress", action="store_true", help="no progress bars"))
    timeout_option(p)
    p.set_defaults(handler=_download)

    c = groups["data"].add_parser(
        "corpora",
        help="list the papers' training corpora and datasets (WMT18 en-de, TED2020, News-Commentary v15, "
        "Bias-in-Bios, Civil Comments/WILDS, Moji, Huang et al. hate speech, CelebA, CheXpert) and fetch one",
        description="Without --fetch: where each training corpus of the papers comes from, its licence and how fairmt "
        "uses it, with the published split. With --fetch NAME: download its files into DEST/FOLDER (the folder the listing "
        "names; DEST defaults to the data cache, where the loaders look), print each file's sha256 and write SHA256SUMS; "
        "give those digests back with --sha256 FILE=DIGEST to verify a later download.",
    )
    c.add_argument("--fetch", metavar="NAME", default=None, help="download this corpus")
    alias(
        c,
        "--dest",
        output_dir(
            c,
            "--output-dir",
            what="data folder",
            resumable=True,
            default=None,
            help="folder to download into (default: the data cache)",
        ),
    )
    c.add_argument("--base-url", default=None, help="a mirror holding the corpus's files by name")
    c.add_argument(
        "--sha256", action="append", default=[], metavar="FILE=DIGEST", help="expected sha256 of a file (repeatable)"
    )
    alias(c, "--quiet", c.add_argument("--no-progress", action="store_true", help="no progress bars"))
    timeout_option(c)
    c.set_defaults(handler=_corpora)

    v = groups["data"].add_parser("verify", help="check a data folder's files against the pinned sha256 checksums")
    v.add_argument("datasets", nargs="+", metavar="DATASET", help="winomt, geneval, bios")
    v.add_argument("--root", default=None, help="the data folder (default: FAIRMT_DATA or the cache)")
    v.set_defaults(handler=_verify)

    f = groups["data"].add_parser(
        "fairseq-prep",
        help="prepare GACL data (one-gender sources, balanced, counterfactuals) and binarise it for fairseq-train",
        description="Run fairmt's GACL data preparation (keep sources of exactly one gender, balance male/female, add "
        "gender-swapped counterfactual sources), write text files plus the gender-label and counterfactual side files, "
        "and call fairseq-preprocess, so OUT is ready for `fairseq-train OUT --user-dir $(python -m "
        "fairmt.fairseq.user_dir) --task gacl_translation --criterion gacl_kd` (with --lang-pairs: --task "
        "gacl_multilingual_translation, M2M-100/NLLB language tokens). Needs fairseq (see docs/methods/gacl.md).",
    )
    alias(f, "--src", f.add_argument("--src-lang", default=None, help="source language code (file suffix), default en"))
    alias(f, "--tgt", f.add_argument("--lang", default=None, help="target language code (file suffix), default de"))
    f.add_argument(
        "--lang-pairs",
        default=None,
        metavar="PAIRS",
        help="en-de,en-fr: the multilingual layout of --task gacl_multilingual_translation "
        "(translation_multi_simple_epoch): every pair from the one .jsonl input, one joined dictionary "
        "(dict.txt, copied to dict.{lang}.txt) and langs.txt for --lang-dict; replaces --src-lang/--lang",
    )
    f.add_argument(
        "--input",
        required=True,
        metavar="PAIRS",
        help="training pairs: .jsonl ({translation: {src: .., tgt: ..}}) or .tsv",
    )
    alias(
        f,
        "--out",
        output_dir(
            f,
            "--output-dir",
            what="fairseq data folder",
            metavar="DIR",
            markers=("preprocess.log",),
            help="output folder (binarised data + side files); built elsewhere and moved into "
            "place when complete; an existing one is refused unless --overwrite (which "
            "replaces what fairmt wrote there, and nothing else)",
        ),
    )
    f.add_argument("--valid-input", default=None, metavar="PAIRS", help="validation pairs, prepared the same way")
    f.add_argument(
        "--valid-size",
        type=count(0, note="0: no validation split"),
        default=None,
        help="without --valid-input: hold out this many prepared pairs as valid (default min(500, 5%%); 0: none)",
    )
    f.add_argument(
        "--srcdict", default=None, metavar="D", help="reuse this fairseq source dictionary (e.g. the model's)"
    )
    f.add_argument("--tgtdict", default=None, metavar="D", help="reuse this fairseq target dictionary")
    f.add_argument(
        "--joined-dictionary", action="store_true", help="one dictionary for both sides (M2M-100/NLLB style)"
    )
    f.add_argument(
        "--sentencepiece-model",
        default=None,
        metavar="MODEL",
        help="encode all text with this SentencePiece model before binarising (after gender processing)",
    )
    f.add_argument("--no-balance", action="store_true", help="keep all one-gender pairs (no down-sampling)")
    f.add_argument("--seed", type=seed, default=0, help="seed of the balancing/shuffling")
    f.add_argument("--workers", type=count(1), default=1, help="fairseq-preprocess workers")
    f.set_defaults(handler=_fairseq_prep)
