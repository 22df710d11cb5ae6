"""The GACL paper's whole evaluation in one call: what ``fairmt eval mt-bias`` runs and ``fairmt.evaluate_mt_bias``
is (the command adds its flags' checks, printing and output files)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError


def check_langs(spec: str | Sequence[str] | None) -> list[str] | None:
    """``"de,ru"``, ``["de", "ru"]`` or ``"all"`` → the target languages (``None`` = each benchmark's own). An empty
    selection (``[]``, ``""``) is refused, never widened to every language."""
    from fairmt.eval.mtbias import FLORES_LANGS

    if spec is None:
        return None
    if not isinstance(spec, str) and not isinstance(spec, (list, tuple, set, frozenset)):
        raise FairmtError(
            f'langs must be a string ("de,ru", "all") or a list of language codes, got {type(spec).__name__}'
        )
    items = [spec] if isinstance(spec, str) else list(spec)
    langs = [x.strip() for item in items for x in str(item).split(",") if x.strip()]
    if not langs:
        raise FairmtError(
            f'langs is empty ({spec!r}): name the target languages ("de,ru"), or give "all" (or '
            "leave it out) for every benchmark's own"
        )
    if langs == ["all"]:
        return None
    bad = [x for x in langs if x not in FLORES_LANGS]
    if bad:
        raise FairmtError(f"unknown target language(s) {bad}; the benchmarks cover {', '.join(FLORES_LANGS)}")
    return langs


def check_benchmarks(spec: str | Sequence[str]) -> list[str]:
    from fairmt.eval.mtbias import BENCHMARKS

    items = spec.split(",") if isinstance(spec, str) else list(spec)
    benchmarks = [b.strip() for b in items if b.strip()]
    bad = [b for b in benchmarks if b not in BENCHMARKS]
    if bad or not benchmarks:
        raise FairmtError(f"--benchmarks: unknown {bad}; choose from {','.join(BENCHMARKS)}")
    return benchmarks


def check_id_lang(id_lang: str | None, langs: list[str] | None) -> str | None:
    """The in-domain language (``None`` or ``"none"``: no in-domain / out-of-domain split)."""
    from fairmt.eval.mtbias import FLORES_LANGS

    id_lang = None if id_lang is None or str(id_lang).lower() == "none" else id_lang
    if id_lang is not None and (id_lang not in FLORES_LANGS or (langs is not None and id_lang not in langs)):
        within = f"the languages scored ({', '.join(langs)})" if langs else f"{', '.join(FLORES_LANGS)}"
        raise FairmtError(
            f"--id-lang {id_lang}: the in-domain language must be one of {within}, or 'none' (no "
            "in-domain / out-of-domain split); an unknown one would leave the in-domain columns empty"
        )
    return id_lang


def _model_name(model: Any) -> str | None:
    if model is None:
        return None
    if isinstance(model, (str, Path)):
        return str(model)
    return getattr(model, "name_or_path", None) or getattr(model, "model_name", None) or type(model).__name__


DEFAULT_TRANSLATIONS_ROOT = "mt-bias-translations"


def api_translations_root() -> Path:
    """Where :func:`evaluate_mt_bias` called from Python puts its default translations folders (never the current
    folder, unasked): ``$FAIRMT_CACHE/mt-bias-translations`` (default ``~/.cache/fairmt/mt-bias-translations``).
    The command keeps ``./mt-bias-translations``, which it prints."""
    import os

    return Path(os.environ.get("FAIRMT_CACHE", Path.home() / ".cache" / "fairmt")) / DEFAULT_TRANSLATIONS_ROOT


def default_translations_dir(translator: Any, root: str | Path = DEFAULT_TRANSLATIONS_ROOT) -> Path:
    """The default translations folder of a model: ``<root>/<name>-<fingerprint>`` (``root``:
    ``mt-bias-translations``) — one folder (and translation cache) per model, so evaluating a second model never
    meets the first one's cache."""
    import re

    name = Path(str(getattr(translator, "model_name", None) or _model_name(translator) or "model")).name
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"
    return Path(root) / f"{name}-{translator.fingerprint()[:12]}"


def evaluate_mt_bias(
    model: Any = None,
    *,
    translations_dir: str | Path | None = None,
    langs: str | Sequence[str] | None = None,
    benchmarks: str | Sequence[str] = ("winomt", "geneval", "flores"),
    id_lang: str | None = "de",
    split: str = "test",
    compat: str | None = None,
    gold: str | Path | None = None,
    spm_model: str | Path | None = None,
    many2many: bool = False,
    keep_going: bool = False,
    output_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    name: str | None = None,
    backend: str | None = None,
    backend_options: dict | None = None,
    family: str | None = None,
    batch_size: int = 16,
    num_beams: int = 5,
    max_new_tokens: int = 200,
    say: Callable[[str], None] | None = None,
    notes: Callable[[str], None] | None = None,
    translations_root: str | Path | None = None,
) -> dict | None:
    """Translate with ``model`` (then score) or score ``translations_dir``: WinoMT, MT-GenEval and FLORES-200 with the
    paper's averages. Returns the dict ``fairmt eval mt-bias --json`` writes (``None`` on the helper processes of a
    multi-process run: rank 0 scores). The keywords are the command's options with its defaults.

    ``model``: a model folder or Hub id (``backend`` ``hf`` or ``ctranslate2``, ``backend_options`` to
    :func:`~fairmt.translate.backends.get_backend`), a loaded :class:`~fairmt.models.mt.TranslationModel`, any
    :class:`~fairmt.translate.backends.Translator`, or the endpoint's model name (``backend="openai"``). Translations
    go into ``output_dir`` (default ``<translations_root>/<model name>-<fingerprint>``, one per model; the root is
    :func:`api_translations_root`, ``~/.cache/fairmt/mt-bias-translations``, never the current folder unasked — the
    command passes ``./mt-bias-translations``), which ``translations_dir=`` re-scores. ``say`` gets the
    progress lines (default: none); ``notes`` the ``skipped:`` / ``error:`` / ``warning:`` lines (default: stderr;
    they are in the result too).

    >>> import fairmt
    >>> res = fairmt.evaluate_mt_bias("out/gacl", langs="de", benchmarks="geneval")  # doctest: +SKIP
    >>> res["geneval"]["per_lang"]["de"]["explicit_accuracy"]  # doctest: +SKIP
    """
    from fairmt.distributed import is_main_process
    from fairmt.eval.mtbias import score_translations_dir

    if (model is None) == (translations_dir is None):
        raise FairmtError("give a model to translate with, or translations_dir= to score (one of them)")
    benchmarks = check_benchmarks(benchmarks)
    langs = check_langs(langs)
    id_lang = check_id_lang(id_lang, langs)
    say = say or (lambda msg: None)
    if model is not None:
        from fairmt.model_eval.benchmarks import plan_suite, translate_suite
        from fairmt.translate import as_translator

        plan_suite(
            Path(output_dir or translations_root or api_translations_root()),
            langs=langs,
            benchmarks=benchmarks,
            split=split,
            compat=compat,
            gold=gold,
            many2many=many2many,
            say=say,
        )  # every benchmark's data before the model loads
        translator = as_translator(model, "en", "de", backend=backend, family=family, backend_options=backend_options)
        root = (
            Path(output_dir)
            if output_dir
            else default_translations_dir(
                translator, translations_root if translations_root is not None else api_translations_root()
            )
        )
        if "flores" in benchmarks and spm_model:
            from fairmt.eval.translation import find_spm_model

            find_spm_model(spm_model)  # a given model must exist: fail before translating
        translate_suite(
            translator,
            root,
            langs=langs,
            benchmarks=benchmarks,
            split=split,
            compat=compat,
            gold=gold,
            many2many=many2many,
            cache_dir=cache_dir,
            say=say,
            batch_size=batch_size,
            num_beams=num_beams,
            max_new_tokens=max_new_tokens,
        )
        if not is_main_process():  # one of several processes: it helped translate; rank 0 scores and reports
            return None
        say(f"translations written to {root} (re-score with --translations-dir {root})")
    else:
        root = Path(translations_dir)
    result = score_translations_dir(
        root,
        langs=langs,
        benchmarks=benchmarks,
        id_lang=id_lang,
        split=split,
        compat=compat,
        gold=gold,
        spm_model=spm_model,
        many2many=many2many,
        keep_going=keep_going,
        progress=say,
    )
    result["settings"]["translations_dir"] = str(root)
    result["settings"]["model"] = _model_name(model)
    result["settings"]["backend"] = (
        (getattr(translator, "name", None) or backend or "hf") if model is not None else None
    )
    model_label = Path(str(model)).name if isinstance(model, (str, Path)) else _model_name(model)
    result["settings"]["name"] = name or model_label or root.name
    if notes is None:
        import sys

        def notes(line: str) -> None:
            print(line, file=sys.stderr)

    for key in ("skipped", "error", "warning"):
        for line in result["errors" if key == "error" else key if key == "skipped" else "warnings"]:
            notes(f"{key}: {line}")
    if not any(result.get(b) for b in benchmarks):  # before any output is written: no file of empty tables
        raise FairmtError(
            f"{root}: nothing to score — no benchmark file of the layout was found "
            "(see `fairmt eval mt-bias --help`); nothing was written"
        )
    return result


__all__ = [
    "api_translations_root",
    "check_benchmarks",
    "check_id_lang",
    "check_langs",
    "default_translations_dir",
    "evaluate_mt_bias",
]
