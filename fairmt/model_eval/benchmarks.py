"""Scoring a model: the benchmarks' sources translated by :mod:`fairmt.translate`, the strings scored by
:mod:`fairmt.eval`.

This is the one place where producing translations and scoring them meet. Evaluators never see a model and the
translation layer never scores; what turns a model into a benchmark score lives here, and every ``fairmt eval``
command given a ``--model`` (``winomt``, ``geneval``, ``flores``, ``mt-bias``) goes through it:

* :func:`translate_winomt`, :func:`translate_geneval`, :func:`translate_geneval_context` — a benchmark's sources
  translated through :func:`fairmt.translate.generate_translations` (batched, cached under ``cache_dir`` with one
  cache file per benchmark, language and split, resumable, sharded under torchrun / accelerate launch);
* :func:`evaluate_geneval`, :func:`evaluate_flores` — translated and scored in one call;
* :func:`translate_suite` — every benchmark of ``fairmt eval mt-bias`` translated into the folder layout that
  :func:`fairmt.eval.mtbias.score_translations_dir` scores.

During training, :class:`fairmt.model_eval.callbacks.GenEvalCallback` does the same with the model being trained.
Keyword arguments not named here (``batch_size``, ``num_beams``, ``max_new_tokens``, ``progress``; ``backend``,
``family``, ``backend_options`` when ``model`` is not yet a translator) go to
:func:`~fairmt.translate.generate_translations`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairmt.distributed import is_main_process
from fairmt.errors import FairmtError
from fairmt.eval.mtbias import (
    BENCHMARKS,
    FLORES_LANGS,
    GENEVAL_LANGS,
    RESOURCE_GROUPS,
    WINOMT_LANGS,
    _flores_code,
    flores_file,
    geneval_files,
    m2m_file,
    winomt_file,
)  # fmt: skip
from fairmt.translate import as_translator, flores_to_model_lang, generate_translations


def _pop_translator(model: Any, src_lang: str, tgt_lang: str, kwargs: dict):
    """A translator for ``model`` from the backend arguments in ``kwargs`` (removed from it)."""
    return as_translator(
        model,
        src_lang,
        tgt_lang,
        backend=kwargs.pop("backend", None),
        family=kwargs.pop("family", None),
        backend_options=kwargs.pop("backend_options", None),
    )


def translate_winomt(model: Any, gold, lang: str, *, cache_dir: str | Path | None = None, **kwargs) -> list[str]:
    """Translate the English sentences of a WinoMT gold set (:class:`~fairmt.eval.winomt.WinoMTGold`) into
    ``lang``; cached as ``winomt.en-<lang>.jsonl`` under ``cache_dir``."""
    cache = Path(cache_dir) / f"winomt.en-{lang}.jsonl" if cache_dir else None
    return generate_translations(
        model, [e.sentence for e in gold.entries], "en", lang, cache_path=cache, desc=f"WinoMT en-{lang}", **kwargs
    )


def translate_geneval(
    model: Any,
    lang: str,
    split: str = "test",
    *,
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    **kwargs,
) -> tuple[list[str], list[str]]:
    """Translate the English masculine and feminine sources of the MT-GenEval counterfactual set.

    ``limit`` keeps only the first ``limit`` pairs (e.g. a quick dev subset for early stopping).
    """
    from fairmt.eval.geneval import load_counterfactual

    data = load_counterfactual(lang, split)
    tm = _pop_translator(model, "en", lang, kwargs)
    tag = f"{split}[:{limit}]" if limit else split
    out = []
    for gender, src in (("masculine", data.masculine_sources), ("feminine", data.feminine_sources)):
        cache = Path(cache_dir) / f"geneval-{tag}-{gender}.en-{lang}.jsonl" if cache_dir else None
        out.append(
            generate_translations(
                tm,
                src[:limit] if limit else src,
                "en",
                lang,
                cache_path=cache,
                desc=f"MT-GenEval {gender} en→{lang}",
                **kwargs,
            )
        )
    return out[0], out[1]


def translate_geneval_context(
    model: Any, data, lang: str, split: str = "test", *, cache_dir: str | Path | None = None, **kwargs
) -> list[str]:
    """Translate the English sources of an MT-GenEval contextual set (``data``:
    :func:`fairmt.eval.geneval.load_contextual`); cached as ``geneval-context-<split>.en-<lang>.jsonl``."""
    cache = Path(cache_dir) / f"geneval-context-{split}.en-{lang}.jsonl" if cache_dir else None
    return generate_translations(model, data.sources, "en", lang, cache_path=cache, **kwargs)


def evaluate_geneval(
    model: Any,
    lang: str,
    split: str = "test",
    *,
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    compat: str | None = None,
    **kwargs,
):
    """Translate and score the MT-GenEval counterfactual set: a :class:`~fairmt.eval.geneval.GenEvalResult`.

    With ``limit`` only the first ``limit`` pairs are used and the result's split (and signature) reads
    ``dev[:limit]``, so a subset score is never mistaken for a full-set one.
    """
    from fairmt.eval.geneval import geneval_accuracy, load_counterfactual, score_counterfactual

    masc, fem = translate_geneval(model, lang, split, cache_dir=cache_dir, limit=limit, **kwargs)
    if not limit:
        return geneval_accuracy(masc, fem, lang, split, compat=compat)
    data = load_counterfactual(lang, split)
    return score_counterfactual(
        masc,
        fem,
        data.masculine_refs[:limit],
        data.feminine_refs[:limit],
        lang=lang,
        split=f"{split}[:{limit}]",
        compat=compat,
    )


def evaluate_flores(
    model: Any,
    lang_pair: str,
    *,
    split: str = "devtest",
    spm_model: str | Path | None = None,
    cache_dir: str | Path | None = None,
    compat: str | None = None,
    **kwargs,
):
    """Translate FLORES-200 ``split`` for ``lang_pair`` (``eng_Latn-deu_Latn``) and score spBLEU/chrF++
    (``compat="official"``: the text as it is, :func:`fairmt.eval.translation.translation_quality`)."""
    from fairmt.eval.translation import find_spm_model, parse_lang_pair, read_flores, translation_quality

    find_spm_model(spm_model)  # fail before translating, not after
    src_code, tgt_code = parse_lang_pair(lang_pair)
    sources, refs = read_flores(src_code, split), read_flores(tgt_code, split)
    tm = _pop_translator(model, "en", "de", kwargs)
    src, tgt = flores_to_model_lang(tm, src_code), flores_to_model_lang(tm, tgt_code)
    cache = Path(cache_dir) / f"flores200-{split}.{lang_pair}.jsonl" if cache_dir else None
    hyps = generate_translations(tm, sources, src, tgt, cache_path=cache, desc=f"FLORES-200 {lang_pair}", **kwargs)
    return translation_quality(hyps, refs, lang_pair=lang_pair, spm_model=spm_model, compat=compat)


def plan_suite(
    root: str | Path,
    *,
    langs: Sequence[str] | None = None,
    benchmarks: Sequence[str] = BENCHMARKS,
    split: str = "test",
    compat: str | None = None,
    gold: str | Path | None = None,
    many2many: bool = False,
    say=None,
) -> list[tuple[list[str], str, str, str, Any]]:
    """Read every benchmark's sources AND references (what scoring will read) and load WinoMT's gender detectors
    before anything is translated:
    the jobs of :func:`translate_suite` as ``(sources, src, tgt_flores, cache_tag, write)`` (``src`` "en" or a FLORES
    code). A missing benchmark file is one :class:`FairmtError` that lists all of them (nothing has been translated
    yet)."""
    from fairmt.eval.report import write_text_atomic

    root = Path(root)
    jobs: list = []
    missing: list[str] = []

    def wanted(defaults):
        return [x for x in (langs or defaults) if x in defaults]

    def lines_to(path: Path):
        def write(lines: list[str]) -> None:
            if is_main_process():
                path.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(path, "".join(" ".join(str(x).split()) + "\n" for x in lines))

        return write

    def read(what: str, fn):
        try:
            return fn()
        except FairmtError as err:
            missing.append(f"{what}: {err}")
            return None

    if "winomt" in benchmarks:
        from fairmt.eval.winomt.evaluate import load_gold
        from fairmt.eval.winomt.io import write_translations

        g = read("WinoMT", lambda: load_gold(gold, compat))
        if g is not None:
            sources = [e.sentence for e in g.entries]
            from fairmt.eval.winomt.detectors.registry import get_detector

            for lang in wanted(WINOMT_LANGS):
                if read(f"WinoMT {lang} gender detector", lambda lang=lang: get_detector(lang, compat)) is None:
                    continue  # (cached: scoring reuses it) a missing morphology model, before any translation

                def write(hyps, _path=winomt_file(root, lang), _src=sources):  # noqa: B008 - binds this language's file
                    if is_main_process():
                        _path.parent.mkdir(parents=True, exist_ok=True)
                        write_translations(_path, _src, hyps)

                jobs.append((sources, "en", _flores_code(lang), f"winomt.en-{lang}", write))
    if "geneval" in benchmarks:
        from fairmt.eval.geneval import CONTEXT_LANGS, load_contextual, load_counterfactual

        for lang in wanted(GENEVAL_LANGS):
            d = read(f"MT-GenEval en-{lang}", lambda lang=lang: load_counterfactual(lang, split))
            if d is None:
                continue
            files = geneval_files(root, lang)
            tgt = _flores_code(lang)
            jobs.append(
                (d.masculine_sources, "en", tgt, f"geneval-{split}-masculine.en-{lang}", lines_to(files["masculine"]))
            )
            jobs.append(
                (d.feminine_sources, "en", tgt, f"geneval-{split}-feminine.en-{lang}", lines_to(files["feminine"]))
            )
            if lang in CONTEXT_LANGS:
                try:
                    c = load_contextual(lang, split)
                except FairmtError as err:  # the contextual set is optional: say so, go on
                    (say or print)(f"MT-GenEval contextual set en→{lang} not translated: {err}")
                    continue
                jobs.append((c.sources, "en", tgt, f"geneval-{split}-context.en-{lang}", lines_to(files["context"])))
    if "flores" in benchmarks:
        from fairmt.eval.translation import read_flores

        src = read("FLORES-200", lambda: read_flores("eng_Latn"))
        if src is not None:
            for lang in wanted(FLORES_LANGS):
                if (
                    read(f"FLORES-200 references en-{lang}", lambda lang=lang: read_flores(_flores_code(lang)))
                    is not None
                ):
                    jobs.append(
                        (
                            src,
                            "en",
                            _flores_code(lang),
                            f"flores200-devtest.en-{lang}",
                            lines_to(flores_file(root, lang)),
                        )
                    )
            if many2many:
                codes = [c for grp in RESOURCE_GROUPS.values() for c in grp]
                texts = {s: read(f"FLORES-200 {s}", lambda s=s: read_flores(s)) for s in codes}
                for s in codes:
                    for t in codes:
                        if s != t and texts[s] is not None and texts[t] is not None:
                            jobs.append((texts[s], s, t, f"flores200-devtest.{s}-{t}", lines_to(m2m_file(root, s, t))))
    if missing:
        gone = sorted({m.split(":", 1)[0].split(" ")[0] for m in missing})
        raise FairmtError(
            f"benchmark data missing, nothing translated: {'; '.join(missing)} — get it (`fairmt data download`) "
            f"or leave {', '.join(gone)} out of --benchmarks"
        )
    return jobs


def translate_suite(
    model: Any,
    root: str | Path,
    *,
    langs: Sequence[str] | None = None,
    benchmarks: Sequence[str] = BENCHMARKS,
    split: str = "test",
    compat: str | None = None,
    gold: str | Path | None = None,
    many2many: bool = False,
    cache_dir: str | Path | None = None,
    say=None,
    **gen_kwargs,
) -> Path:
    """Translate every benchmark's sources with ``model`` — a model path / Hub id (the ``hf`` backend) or any
    :class:`~fairmt.translate.backends.Translator` (``ctranslate2``, ``openai``, ``causal-lm``) — through the cached,
    resumable runner (sharded over processes under torchrun / accelerate launch) into the folder layout
    :func:`fairmt.eval.mtbias.score_translations_dir` reads; returns the folder. Only the main process writes the
    folder. Every benchmark's data is read first (:func:`plan_suite`): a missing file stops the run before the first
    sentence is translated."""
    root = Path(root)
    jobs = plan_suite(
        root, langs=langs, benchmarks=benchmarks, split=split, compat=compat, gold=gold, many2many=many2many, say=say
    )
    cache = Path(cache_dir) if cache_dir else root / ".cache"
    tm = as_translator(model, "en", "de", family=gen_kwargs.pop("family", None))
    for sources, s, t, tag, write in jobs:
        desc = tag if s == "en" else f"FLORES-200 {s}→{t}"
        src = "en" if s == "en" else flores_to_model_lang(tm, s)  # English: "en", as every cache was made
        write(
            generate_translations(
                tm,
                sources,
                src,
                flores_to_model_lang(tm, t),
                cache_path=cache / f"{tag}.jsonl",
                desc=desc,
                **gen_kwargs,
            )
        )
    return root


__all__ = [
    "evaluate_flores", "evaluate_geneval", "plan_suite", "translate_geneval", "translate_geneval_context", "translate_suite",
    "translate_winomt",
]  # fmt: skip
