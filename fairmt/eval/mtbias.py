"""The GACL paper's whole evaluation (Lee et al., EMNLP 2023, Tables 2–4, Figures 3–4) in one call.

A run is a *translations folder* — written by :func:`fairmt.model_eval.translate_suite` from a model, or by the
user — with this layout (WinoMT's own ``source ||| translation`` format for WinoMT, one sentence a line elsewhere)::

    DIR/winomt/en-<lang>.txt          WinoMT gold sentences (en.txt of the gold used) and their translations
    DIR/geneval/masculine.<lang>.txt  MT-GenEval counterfactual set (split chosen), translations of the masculine
    DIR/geneval/feminine.<lang>.txt   ... and of the feminine English sources
    DIR/geneval/context.<lang>.txt    MT-GenEval contextual set (optional)
    DIR/flores/<lang>.txt             FLORES-200 devtest, en→lang hypotheses
    DIR/flores_m2m/<src>-<tgt>.txt    FLORES-200 devtest many-to-many (FLORES codes), for --many2many

:func:`score_translations_dir` scores every file present and says in ``skipped`` what was not there. Beside the
gender scores it gives translation quality — MT-GenEval's ``chrfpp`` against the own-gender references, FLORES-200's
spBLEU/chrF++ — and per language the count of degenerate translations (:mod:`fairmt.eval.degenerate`), one line
each in ``warnings``: a degenerate output can be 100 % gender-accurate.

Averages (``average``/``in_domain``/``out_of_domain``) follow the paper: in-domain is the ``id_lang`` direction the
model was fine-tuned on, out-of-domain the mean over the other languages (Table 2), ``average`` the mean over all
languages (Table 3). Bias gaps are averaged both signed (``delta_g``) and as absolute values (``abs_delta_g``: the
paper's tables print |ΔG|, |ΔS|, |ΔR|; we read them as the mean of per-language absolute gaps).

One ΔG: the GACL paper's "ΔG = Acc_male − Acc_female measures the difference in accuracy of male sentences and
female sentences" (§4.2), ``delta_g`` — used by its Tables 2, 3 and 5 and Figure 4 for WinoMT, and the ΔG of every
fairmt table, JSON, report and model card. The 2019 WinoMT evaluator (Stanovsky et al., 2019) prints F1_male −
F1_female as "ΔG"; fairmt calls it ΔG_F1 (``delta_g_f1``). On WinoMT, Acc_male equals the recall of male, so ΔG equals
ΔR as both papers define it. MT-GenEval's ΔG and E-ΔG are accuracy gaps in every paper (``delta_g``,
``explicit_delta_g``). Results written before this naming (a WinoMT ``delta_g_acc`` beside an F1 ``delta_g``) are read
through :func:`upgrade_winomt`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairmt._deprecated import moved_names
from fairmt.errors import FairmtError

WINOMT_LANGS = ("ar", "cs", "de", "es", "fr", "he", "it", "pl", "ru", "uk")
"""The ten WinoMT target languages of the GACL paper."""
GENEVAL_LANGS = ("ar", "de", "es", "fr", "hi", "it", "pt", "ru")
FLORES_LANGS = tuple(sorted(set(WINOMT_LANGS) | set(GENEVAL_LANGS)))
"""The union of the two benchmarks' languages: the paper's 12 FLORES-200 directions."""

RESOURCE_GROUPS = {
    # Mohammadshahi et al. (2022) resource levels, the five languages per level the GACL paper samples (Appendix,
    # Table 6)
    "high": ("fra_Latn", "deu_Latn", "ita_Latn", "rus_Cyrl", "spa_Latn"),
    "medium": ("arb_Arab", "bul_Cyrl", "zho_Hans", "kor_Hang", "tur_Latn"),
    "low": ("afr_Latn", "amh_Ethi", "bos_Latn", "ceb_Latn", "kaz_Cyrl"),
    "very_low": ("bel_Cyrl", "hrv_Latn", "tgl_Latn", "npi_Deva", "oci_Latn"),
}
BENCHMARKS = ("winomt", "geneval", "flores")
FORMAT_VERSION = 1

WINOMT_KEYS = ("accuracy", "delta_g", "delta_g_f1", "delta_s", "delta_r")
GENEVAL_KEYS = ("accuracy", "explicit_accuracy", "delta_g", "explicit_delta_g", "contextual_accuracy", "chrfpp")
FLORES_KEYS = ("spbleu", "bleu_spm_nonstandard", "chrfpp")
_GAPS = {"delta_g", "delta_g_f1", "delta_s", "delta_r", "explicit_delta_g"}


def upgrade_winomt(result: dict) -> dict:
    """A copy of an mt-bias result whose WinoMT rows use fairmt's one ΔG: a result written before it (``delta_g_acc``
    the accuracy gap, ``delta_g`` the F1 gap; ``abs_``-prefixed in the averages) gets ``delta_g`` = the accuracy gap
    and ``delta_g_f1`` = the F1 gap; a current result is returned as it is."""
    w = result.get("winomt") if isinstance(result, dict) else None
    if not isinstance(w, dict) or not any(
        isinstance(r, dict) and ("delta_g_acc" in r or "abs_delta_g_acc" in r) for r in w.values()
    ):
        return result
    rows = {}
    for k, row in w.items():
        row = dict(row) if isinstance(row, dict) else row
        if isinstance(row, dict):
            for pre in ("", "abs_"):
                if f"{pre}delta_g_acc" in row:
                    row[f"{pre}delta_g_f1"] = row.get(f"{pre}delta_g")
                    row[f"{pre}delta_g"] = row.pop(f"{pre}delta_g_acc")
        rows[k] = row
    return {**result, "winomt": rows}


# ------------------------------------------------------------------------------------------------ layout


def winomt_file(root: Path, lang: str) -> Path:
    return root / "winomt" / f"en-{lang}.txt"


def geneval_files(root: Path, lang: str) -> dict[str, Path]:
    g = root / "geneval"
    return {
        "masculine": g / f"masculine.{lang}.txt",
        "feminine": g / f"feminine.{lang}.txt",
        "context": g / f"context.{lang}.txt",
    }


def flores_file(root: Path, lang: str) -> Path:
    return root / "flores" / f"{lang}.txt"


def m2m_file(root: Path, src: str, tgt: str) -> Path:
    return root / "flores_m2m" / f"{src}-{tgt}.txt"


def _quality(hyps: list[str], refs: list[str], lang_pair: str, spm_model, have_spm: bool) -> dict:
    """spBLEU (or spBLEU* with another SentencePiece model) and chrF++; without any SentencePiece model chrF++ only
    (``spbleu`` and ``bleu_spm_nonstandard`` None, a note saying why)."""
    from dataclasses import asdict

    from fairmt.eval.translation import translation_quality

    if have_spm:
        return asdict(translation_quality(hyps, refs, lang_pair=lang_pair, spm_model=spm_model))
    if len(hyps) != len(refs):
        raise FairmtError(f"{len(hyps)} hypotheses but {len(refs)} references for {lang_pair}")
    from fairmt.eval.degenerate import chrfpp_corpus_and_statistics
    from fairmt.eval.translation import chrf_items

    chrfpp, chrf_sig, stats = chrfpp_corpus_and_statistics(hyps, refs)
    return {
        "lang_pair": lang_pair,
        "n": len(refs),
        "spbleu": None,
        "bleu_spm_nonstandard": None,
        "chrfpp": chrfpp,
        "items": chrf_items(stats),
        "bleu_label": None,
        "bleu_signature": None,
        "chrf_signature": chrf_sig,
        "spm_model": None,
        "spm_model_sha256": None,
        "note": "no FLORES-200 SentencePiece model was found: spBLEU not computed (pass --spm-model)",
    }


def _has_spm(spm_model) -> bool:
    from fairmt.eval.translation import find_spm_model

    try:
        find_spm_model(spm_model)
    except FairmtError:
        if spm_model is not None:  # a path the user gave must exist
            raise
        return False
    return True


def _flores_code(lang: str) -> str:
    from fairmt.models.languages import ISO_TO_NLLB

    if lang in ISO_TO_NLLB:
        return ISO_TO_NLLB[lang]
    raise FairmtError(f"no FLORES-200 code known for language {lang!r}")


# ------------------------------------------------------------------------------------------------ averages


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


def average(per_lang: dict[str, dict], keys: Sequence[str], langs: Sequence[str]) -> dict:
    """Mean of each metric over ``langs`` (those scored), with ``abs_<gap>`` = mean of absolute gaps."""
    rows = [per_lang[x] for x in langs if x in per_lang]
    out: dict[str, Any] = {"languages": [x for x in langs if x in per_lang], "n_languages": len(rows)}
    for k in keys:
        out[k] = _mean([r.get(k) for r in rows])
        if k in _GAPS:
            out[f"abs_{k}"] = _mean([abs(r[k]) if r.get(k) is not None else None for r in rows])
    return out


def _summaries(per_lang: dict[str, dict], keys: Sequence[str], id_lang: str | None) -> dict:
    langs = list(per_lang)
    out = {"average": average(per_lang, keys, langs)}
    if id_lang:
        out["in_domain"] = average(per_lang, keys, [id_lang])
        out["out_of_domain"] = average(per_lang, keys, [x for x in langs if x != id_lang])
    return out


# ------------------------------------------------------------------------------------------------ scoring


def _winomt_row(res) -> dict:
    conf = res.confusion

    def acc(g: str) -> float | None:
        row = conf.get(g, {})
        total = sum(row.values())
        return 100.0 * row.get(g, 0) / total if total else None

    am, af = acc("male"), acc("female")
    return {
        "accuracy": res.accuracy,
        "delta_g": (am - af) if am is not None and af is not None else None,
        "delta_g_f1": res.delta_g_f1,
        "delta_s": res.delta_s,
        "delta_r": res.delta_r,
        "acc_male": am,
        "acc_female": af,
        "f1_male": res.f1_male,
        "f1_female": res.f1_female,
        "n": res.n,
        "n_unknown": res.n_unknown,
        "signature": res.signature,
        "items": res.items,
    }


class _Collector:
    def __init__(self, keep_going: bool):
        self.keep_going = keep_going
        self.errors: list[str] = []
        self.skipped: list[str] = []

    def run(self, what: str, fn):
        try:
            return fn()
        except FairmtError as err:
            if not self.keep_going:
                raise FairmtError(
                    f"{what}: {err} (--keep-going scores the other languages and lists this error)"
                ) from None
            self.errors.append(f"{what}: {err}")
            return None


def _check_line_counts(
    root: Path, geneval_langs: Sequence[str], flores_langs: Sequence[str], split: str, col: _Collector
) -> None:
    """Read the MT-GenEval and FLORES-200 translation files that are there and check their line counts, before any
    benchmark is scored: without ``--keep-going`` a wrong file is an error, and it should not come after minutes of
    scoring the files before it. The errors are the ones scoring would raise (same wording)."""
    from fairmt.eval.geneval import load_counterfactual, read_lines
    from fairmt.eval.translation import read_flores

    for lang in geneval_langs:
        files = geneval_files(root, lang)
        if files["masculine"].is_file() and files["feminine"].is_file():

            def check(lang=lang, files=files):
                n = len(load_counterfactual(lang, split).masculine_refs)
                read_lines(files["masculine"], expected=n)
                read_lines(files["feminine"], expected=n)

            col.run(f"MT-GenEval {lang}", check)
    for lang in flores_langs:
        f = flores_file(root, lang)
        if f.is_file():

            def check_flores(f=f, lang=lang):
                read_lines(f, expected=len(read_flores(_flores_code(lang))), allow_empty=True)

            col.run(f"FLORES-200 {lang}", check_flores)


def score_translations_dir(
    root: str | Path,
    *,
    langs: Sequence[str] | None = None,
    benchmarks: Sequence[str] = BENCHMARKS,
    id_lang: str | None = "de",
    split: str = "test",
    compat: str | None = None,
    gold: str | Path | None = None,
    spm_model: str | Path | None = None,
    many2many: bool = False,
    keep_going: bool = False,
    progress=None,
) -> dict:
    """Score a translations folder (layout in the module docstring); returns the documented JSON layout."""
    root = Path(root)
    if not root.is_dir():
        raise FairmtError(f"{root}: translations folder not found")
    unknown = [b for b in benchmarks if b not in BENCHMARKS]
    if unknown:
        raise FairmtError(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHMARKS)}")
    say = progress or (lambda msg: None)
    col = _Collector(keep_going)
    out: dict[str, Any] = {"format": FORMAT_VERSION}
    t0 = time.perf_counter()

    def wanted(defaults: Sequence[str]) -> list[str]:
        return [x for x in (langs or defaults) if x in defaults]

    def present(bench: str, folder: Path, candidates: list[str], exists) -> list[str]:
        """The languages whose files are there; one ``skipped`` line for the whole benchmark or its missing ones."""
        if not folder.is_dir():
            col.skipped.append(f"{bench}: no {folder} folder")
            return []
        have = [x for x in candidates if exists(x)]
        missing = [x for x in candidates if x not in have]
        if missing:
            col.skipped.append(f"{bench}: no file for {', '.join(missing)} in {folder}")
        return have

    if not keep_going:  # a file with a wrong line count stops the run before anything is scored
        _check_line_counts(
            root,
            wanted(GENEVAL_LANGS) if "geneval" in benchmarks else [],
            wanted(FLORES_LANGS) if "flores" in benchmarks else [],
            split,
            col,
        )

    if "winomt" in benchmarks:
        from fairmt.eval.winomt.evaluate import evaluate_winomt, load_gold

        per: dict[str, dict] = {}
        todo = present("winomt", root / "winomt", wanted(WINOMT_LANGS), lambda x: winomt_file(root, x).is_file())
        gold_obj = load_gold(gold, compat) if todo else None
        for lang in todo:
            f = winomt_file(root, lang)
            say(f"WinoMT en→{lang}")
            res = col.run(
                f"WinoMT {lang} ({f})", lambda f=f, lang=lang: evaluate_winomt(f, lang, gold_obj, compat=compat)
            )
            if res is not None:
                per[lang] = _winomt_row(res)
        out["winomt"] = {**per, **_summaries(per, WINOMT_KEYS, id_lang)} if per else {}

    if "geneval" in benchmarks:
        from fairmt.eval.geneval import (
            CONTEXT_LANGS,
            geneval_accuracy,
            geneval_contextual_accuracy,
            load_counterfactual,
            read_lines,
        )

        per = {}
        both = lambda x: geneval_files(root, x)["masculine"].is_file() and geneval_files(root, x)["feminine"].is_file()  # noqa: E731
        for lang in present("geneval", root / "geneval", wanted(GENEVAL_LANGS), both):
            files = geneval_files(root, lang)
            say(f"MT-GenEval en→{lang}")

            def one(lang=lang, files=files):
                n = len(load_counterfactual(lang, split).masculine_refs)
                m = read_lines(files["masculine"], expected=n)
                f = read_lines(files["feminine"], expected=n)
                from dataclasses import asdict

                row = {**asdict(geneval_accuracy(m, f, lang, split)), "contextual_accuracy": None}
                if files["context"].is_file() and lang in CONTEXT_LANGS:
                    c = geneval_contextual_accuracy(read_lines(files["context"]), lang, split)
                    row["contextual_accuracy"] = c.accuracy
                    row["contextual_signature"] = c.signature
                return row

            row = col.run(f"MT-GenEval {lang}", one)
            if row is not None:
                per[lang] = row
        no_context = [x for x in per if x in CONTEXT_LANGS and not geneval_files(root, x)["context"].is_file()]
        if no_context:
            col.skipped.append(
                f"geneval contextual: no file for {', '.join(no_context)} in {root / 'geneval'} "
                "(context.LANG.txt; contextual_accuracy is null)"
            )
        out["geneval"] = {**per, **_summaries(per, GENEVAL_KEYS, id_lang)} if per else {}

    if "flores" in benchmarks:
        from fairmt.eval.degenerate import degenerate_counts
        from fairmt.eval.geneval import read_lines
        from fairmt.eval.translation import read_flores

        per = {}
        todo = present("flores", root / "flores", wanted(FLORES_LANGS), lambda x: flores_file(root, x).is_file())
        have_spm = _has_spm(spm_model) if todo or many2many else False
        if (todo or many2many) and not have_spm:
            col.skipped.append(
                "flores: spBLEU not computed (no FLORES-200 SentencePiece model: pass --spm-model); chrF++ only"
            )
        for lang in todo:
            f = flores_file(root, lang)
            say(f"FLORES-200 en→{lang}")

            def one(lang=lang, f=f):
                code = _flores_code(lang)
                refs = read_flores(code)
                hyps = read_lines(f, expected=len(refs), allow_empty=True)
                return {
                    **_quality(hyps, refs, f"eng_Latn-{code}", spm_model, have_spm),
                    "degenerate": degenerate_counts(hyps, lang, references=refs),
                }

            row = col.run(f"FLORES-200 {lang}", one)
            if row is not None:
                per[lang] = row
        out["flores"] = {**per, **_summaries(per, FLORES_KEYS, id_lang)} if per else {}
        if many2many:
            out["flores_many2many"] = score_many2many(root, spm_model=spm_model, col=col, say=say, have_spm=have_spm)

    out["settings"] = {
        "translations_dir": str(root),
        "src": "en",
        "id_lang": id_lang,
        "split": split,
        "compat": compat,
        "gold": str(gold) if gold else None,
        "benchmarks": list(benchmarks),
        "langs": list(langs) if langs else None,
        "many2many": many2many,
        "fairmt": _version(),
    }
    say(f"scored in {time.perf_counter() - t0:.1f} s")
    out["warnings"] = degenerate_warnings(out)
    out["skipped"] = col.skipped
    out["errors"] = col.errors
    return out


def degenerate_warnings(result: dict) -> list[str]:
    """One line per benchmark and language with degenerate translations (:mod:`fairmt.eval.degenerate`): empty,
    repetitive, wrong-script or unrelated lines, beside which a gender accuracy means little."""
    from fairmt.eval.degenerate import describe

    lines = []
    for bench, label in (("geneval", "MT-GenEval"), ("flores", "FLORES-200")):
        for lang, row in (result.get(bench) or {}).items():
            line = describe(f"{label} {lang}", row.get("degenerate")) if len(lang) <= 3 else None
            if line:
                lines.append(line)
    return lines


def _degenerate_cell(*rows: dict) -> str:
    parts = [r["degenerate"] for r in rows if r and r.get("degenerate")]
    if not parts:
        return "–"
    return f"{sum(p['degenerate'] for p in parts)}/{sum(p['n'] for p in parts)}"


def model_card_results(result: dict) -> list[dict]:
    """The per-language results of an mt-bias run, as the result dicts the model card writer reads (one per
    benchmark and language; averages are not model-index entries)."""
    out: list[dict] = []
    result = upgrade_winomt(result)
    for lang, row in (result.get("winomt") or {}).items():
        if len(lang) <= 3:
            out.append({"lang": lang, **row})
    for lang, row in (result.get("geneval") or {}).items():
        if len(lang) <= 3:
            out.append({k: v for k, v in row.items() if not k.startswith("contextual")})
    for lang, row in (result.get("flores") or {}).items():
        if len(lang) <= 3:
            out.append(row)
    return out


def score_many2many(
    root: Path, *, spm_model=None, col: _Collector | None = None, say=None, have_spm: bool | None = None
) -> dict:
    """spBLEU of every ``flores_m2m/<src>-<tgt>.txt`` present, averaged by resource group as the paper's Table 4:
    ``to_<group>`` (target in the group), ``from_<group>`` (source in the group) and ``x2x`` (all directions)."""
    from fairmt.eval.geneval import read_lines
    from fairmt.eval.translation import read_flores

    col = col or _Collector(False)
    have_spm = _has_spm(spm_model) if have_spm is None else have_spm
    codes = [c for g in RESOURCE_GROUPS.values() for c in g]
    group_of = {c: g for g, cs in RESOURCE_GROUPS.items() for c in cs}
    pairs: dict[str, dict] = {}
    for s in codes:
        for t in codes:
            f = m2m_file(root, s, t)
            if s == t or not f.is_file():
                continue
            (say or (lambda m: None))(f"FLORES-200 {s}→{t}")

            def one(s=s, t=t, f=f):
                refs = read_flores(t)
                q = _quality(read_lines(f, expected=len(refs), allow_empty=True), refs, f"{s}-{t}", spm_model, have_spm)
                return {k: q[k] for k in ("spbleu", "bleu_spm_nonstandard", "chrfpp")}

            row = col.run(f"FLORES-200 {s}-{t}", one)
            if row is not None:
                pairs[f"{s}-{t}"] = row
    if not pairs:
        col.skipped.append(f"flores many2many: no {root / 'flores_m2m'}/<src>-<tgt>.txt files")
        return {}

    def bleu(r: dict) -> float | None:
        return r["spbleu"] if r["spbleu"] is not None else r["bleu_spm_nonstandard"]

    if not have_spm:  # chrF++ by resource group, then
        bleu = lambda r: r["chrfpp"]  # noqa: E731

    out: dict[str, Any] = {"pairs": pairs}
    for g in RESOURCE_GROUPS:
        out[f"to_{g}"] = _mean([bleu(r) for k, r in pairs.items() if group_of[k.split("-", 1)[1]] == g])
        out[f"from_{g}"] = _mean([bleu(r) for k, r in pairs.items() if group_of[k.split("-", 1)[0]] == g])
    out["x2x"] = _mean([bleu(r) for r in pairs.values()])
    out["n_directions"] = len(pairs)
    out["metric"] = (
        "chrF++ (no SentencePiece model)"
        if not have_spm
        else "spBLEU"
        if all(r["spbleu"] is not None for r in pairs.values())
        else "spBLEU* (non-official SPM model)"
    )
    return out


def _version() -> str:
    from fairmt import __version__

    return __version__


# ------------------------------------------------------------------------------------------------ reports


def _fmt(v: Any, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _bleu(d: dict) -> float | None:
    if not d:
        return None
    return d.get("spbleu") if d.get("spbleu") is not None else d.get("bleu_spm_nonstandard")


def markdown_tables(result: dict, name: str = "model") -> str:
    """Markdown shaped like the paper's Table 2 (in-/out-of-domain) and Table 3 (all languages), then per language."""
    from fairmt.eval.reporting.escape import markdown

    name = markdown(name)  # a run's name is data: no HTML, pipe or newline gets into the table
    result = upgrade_winomt(result)
    w, g, f = result.get("winomt") or {}, result.get("geneval") or {}, result.get("flores") or {}
    id_lang = result.get("settings", {}).get("id_lang")
    bleu_name = "spBLEU" if all(f.get(k, {}).get("spbleu") is not None for k in f if len(k) <= 3) else "spBLEU*"
    lines = []
    if id_lang:
        wi, wo = w.get("in_domain", {}), w.get("out_of_domain", {})
        gi, go = g.get("in_domain", {}), g.get("out_of_domain", {})
        fi, fo = f.get("in_domain", {}), f.get("out_of_domain", {})
        lines += [
            f"**In-domain (en→{id_lang}) and out-of-domain (Table 2 layout)**",
            "",
            f"| Method | WinoMT ID Acc. | ID \\|ΔG\\| | OOD Acc. | OOD \\|ΔG\\| | MT-GenEval ID E-Acc. | ID \\|ΔG\\| "
            f"| OOD E-Acc. | OOD \\|ΔG\\| | {bleu_name} ID | {bleu_name} OOD |",
            "|---|" + "---|" * 10,
            f"| {name} | {_fmt(wi.get('accuracy'))} | {_fmt(wi.get('abs_delta_g'))} | {_fmt(wo.get('accuracy'))} "
            f"| {_fmt(wo.get('abs_delta_g'))} | {_fmt(gi.get('explicit_accuracy'))} | "
            f"{_fmt(gi.get('abs_explicit_delta_g'))} | {_fmt(go.get('explicit_accuracy'))} | "
            f"{_fmt(go.get('abs_explicit_delta_g'))} | {_fmt(_bleu(fi))} | {_fmt(_bleu(fo))} |",
            "",
        ]
    wa, ga, fa = w.get("average", {}), g.get("average", {}), f.get("average", {})
    lines += [
        "**Averaged over all languages (Table 3 layout)**",
        "",
        f"| Method | WinoMT Acc. | \\|ΔG\\| | \\|ΔS\\| | \\|ΔR\\| | MT-GenEval E-Acc. | \\|E-ΔG\\| | Acc. | \\|ΔG\\| "
        f"| MT-GenEval chrF++ | FLORES {bleu_name} | FLORES chrF++ |",
        "|---|" + "---|" * 11,
        f"| {name} | {_fmt(wa.get('accuracy'))} | {_fmt(wa.get('abs_delta_g'))} | {_fmt(wa.get('abs_delta_s'))} "
        f"| {_fmt(wa.get('abs_delta_r'))} | {_fmt(ga.get('explicit_accuracy'))} | "
        f"{_fmt(ga.get('abs_explicit_delta_g'))} | {_fmt(ga.get('accuracy'))} | {_fmt(ga.get('abs_delta_g'))} | "
        f"{_fmt(ga.get('chrfpp'))} | {_fmt(_bleu(fa))} | {_fmt(fa.get('chrfpp'))} |",
        "",
        "MT-GenEval chrF++: the translations against MT-GenEval's own-gender references (quality beside the "
        "gender accuracy: a degenerate output can be gender-accurate).",
        "",
        "ΔG of WinoMT is the GACL paper's Acc_male − Acc_female (`delta_g`); ΔG_F1 is the 2019 evaluator's "
        "F1_male − F1_female (`delta_g_f1` in the JSON).",
        "",
    ]
    per = sorted({k for d in (w, g, f) for k in d if len(k) <= 3})
    if per:
        lines += [
            "**Per language**",
            "",
            "| lang | MT-GenEval E-Acc. | MT-GenEval chrF++ | FLORES "
            f"{bleu_name} | FLORES chrF++ | degenerate | WinoMT Acc. | ΔG | ΔG_F1 | ΔS | MT-GenEval Acc. |",
            "|---|" + "---|" * 10,
        ]
        for x in per:
            wx, gx, fx = w.get(x, {}), g.get(x, {}), f.get(x, {})
            lines.append(
                f"| {x} | {_fmt(gx.get('explicit_accuracy'))} | {_fmt(gx.get('chrfpp'))} | {_fmt(_bleu(fx))} "
                f"| {_fmt(fx.get('chrfpp'))} | {_degenerate_cell(gx, fx)} | {_fmt(wx.get('accuracy'))} "
                f"| {_fmt(wx.get('delta_g'))} | {_fmt(wx.get('delta_g_f1'))} | {_fmt(wx.get('delta_s'))} "
                f"| {_fmt(gx.get('accuracy'))} |"
            )
        lines += [
            "",
            "degenerate: empty, repetitive, wrong-script or unrelated (fluent, but sentence chrF++ < 20 against "
            "the reference) translations (MT-GenEval and FLORES lines; rules in `fairmt.eval.degenerate`).",
        ]
    m2m = result.get("flores_many2many") or {}
    if m2m:
        groups = list(RESOURCE_GROUPS)
        lines += [
            "",
            f"**Many-to-many FLORES-200 ({m2m.get('metric')}, Table 4 layout)**",
            "",
            "| " + " | ".join(["Method"] + [f"→{g}" for g in groups] + [f"{g}→" for g in groups] + ["X2X"]) + " |",
            "|---|" + "---|" * (2 * len(groups) + 1),
            "| "
            + " | ".join(
                [name]
                + [_fmt(m2m.get(f"to_{g}")) for g in groups]
                + [_fmt(m2m.get(f"from_{g}")) for g in groups]
                + [_fmt(m2m.get("x2x"))]
            )
            + " |",
        ]
    return "\n".join(lines) + "\n"


def per_language_plot(result: dict, path: str | Path, title: str = "") -> list[str]:
    """Per-language WinoMT accuracy and ΔG (accuracy gap), as the paper's Figure 4; returns what was not drawn
    (:func:`fairmt.eval.report.draw_plot`)."""
    from fairmt.eval.report import NothingToPlot, bar_chart

    w = upgrade_winomt(result).get("winomt") or {}
    rows = [{"lang": k, "accuracy": v["accuracy"], "ΔG": v.get("delta_g")} for k, v in w.items() if len(k) <= 3]
    if not rows:
        raise NothingToPlot("no WinoMT language was scored (the plot is WinoMT accuracy and ΔG per language)")
    return bar_chart(
        rows,
        "lang",
        ["accuracy", "ΔG"],
        path,
        title=title or "WinoMT accuracy and ΔG (Acc_male − Acc_female)",
        ylabel="%, percentage points for ΔG",
    )


_SETTINGS_COMPARED = ("compat", "split", "gold", "id_lang")
"""Scoring settings of a run (``settings`` of its JSON) that change its numbers; the metric signatures carry the
rest."""


def run_signatures(result: dict) -> dict[str, str]:
    """What determined each number of an mt-bias run, as flat ``key → value`` pairs that two runs can be compared
    on: the metric signature per benchmark and language (``winomt:de``, ``geneval:de``, ``flores:de:chrF++``,
    ``flores:de:BLEU``; the fairmt version inside a signature is left out — a new release with the same metric keeps
    its version number in the signature), the languages each average is over (``languages:winomt``), and the
    scoring settings (``settings:compat`` ...)."""
    import re

    def strip_version(sig: str) -> str:
        return re.sub(r"\|fairmt:[^|]*", "", sig)

    out: dict[str, str] = {}
    settings = result.get("settings") or {}
    for key in _SETTINGS_COMPARED:
        out[f"settings:{key}"] = str(settings.get(key))
    for bench in BENCHMARKS:
        section = result.get(bench) or {}
        langs = [k for k in section if len(k) <= 3]
        if langs:
            out[f"languages:{bench}"] = ",".join(sorted(langs))
        for lang in langs:
            row = section[lang]
            if bench == "flores":
                for label, key in (("chrF++", "chrf_signature"), ("BLEU", "bleu_signature")):
                    if row.get(key):
                        out[f"flores:{lang}:{label}"] = strip_version(str(row[key]))
            elif row.get("signature"):
                out[f"{bench}:{lang}"] = strip_version(str(row["signature"]))
    return out


def _column_benchmark(column: str) -> str:
    return "winomt" if column.startswith("winomt") else "geneval" if column.startswith("geneval") else "flores"


def signature_differences(results: Sequence[dict], names: Sequence[str]) -> list[dict]:
    """Every signature (:func:`run_signatures`) in which a run differs from the first run: one dict per difference
    with ``run``, ``key``, ``first`` and ``this`` (None where one run has no such entry). A key only one of the two
    runs has (a language scored in one run only) counts only for ``languages:`` and ``settings:`` — a per-language
    signature compares like with like."""
    if not results:
        return []
    base = run_signatures(results[0])
    out = []
    for name, r in zip(names[1:], results[1:]):
        sigs = run_signatures(r)
        for key in sorted(set(base) | set(sigs)):
            a, b = base.get(key), sigs.get(key)
            if a == b or ((a is None or b is None) and not key.startswith(("languages:", "settings:"))):
                continue
            out.append({"run": name, "key": key, "first": a, "this": b})
    return out


def _benchmarks_touched(key: str) -> set[str]:
    kind, _, rest = key.partition(":")
    if kind == "settings":  # compat → WinoMT, split → MT-GenEval, gold → WinoMT, id_lang → every average
        return {"compat": {"winomt"}, "gold": {"winomt"}, "split": {"geneval"}}.get(rest, set(BENCHMARKS))
    if kind == "languages":
        return {rest}
    return {kind}


COMPARISON_COLUMNS = [
    "geneval_e_acc",
    "geneval_chrfpp",
    "bleu",
    "chrfpp",
    "winomt_acc",
    "degenerate",
    "geneval_abs_edg",
    "winomt_abs_dg",
    "winomt_abs_ds",
    "geneval_acc",
    "geneval_abs_dg",
]
"""``fairmt report``'s columns: explicit accuracy and translation quality first, then WinoMT, the degenerate-output
count, the gaps, and the official MT-GenEval accuracy last (a degenerate output can make it 100)."""


def compare_runs(results: Sequence[dict], names: Sequence[str]) -> list[dict]:
    """One row per run with the Table 3 averages and their deltas to the first run, the run's signatures
    (:func:`run_signatures`) and ``differs`` — the signatures in which it differs from the first run (the columns
    they touch are marked † by :func:`comparison_markdown`)."""
    rows = []
    results = [upgrade_winomt(r) for r in results]
    diffs = signature_differences(results, names)
    for name, r in zip(names, results):
        wa = (r.get("winomt") or {}).get("average", {})
        ga = (r.get("geneval") or {}).get("average", {})
        fa = (r.get("flores") or {}).get("average", {})
        degenerate = [
            row["degenerate"]
            for b in ("geneval", "flores")
            for k, row in (r.get(b) or {}).items()
            if len(k) <= 3 and isinstance(row.get("degenerate"), dict)
        ]
        rows.append(
            {
                "model": name,
                "geneval_e_acc": ga.get("explicit_accuracy"),
                "geneval_chrfpp": ga.get("chrfpp"),
                "bleu": _bleu(fa),
                "chrfpp": fa.get("chrfpp"),
                "winomt_acc": wa.get("accuracy"),
                "degenerate": sum(d["degenerate"] for d in degenerate) if degenerate else None,
                "degenerate_of": sum(d["n"] for d in degenerate) if degenerate else None,
                "geneval_abs_edg": ga.get("abs_explicit_delta_g"),
                "winomt_abs_dg": wa.get("abs_delta_g"),
                "winomt_abs_ds": wa.get("abs_delta_s"),
                "geneval_acc": ga.get("accuracy"),
                "geneval_abs_dg": ga.get("abs_delta_g"),
                "signatures": run_signatures(r),
                "differs": [{k: d[k] for k in ("key", "first", "this")} for d in diffs if d["run"] == name],
            }
        )
    base = rows[0] if rows else {}
    for row in rows[1:]:
        for k in COMPARISON_COLUMNS:
            if k != "degenerate" and row[k] is not None and base.get(k) is not None:
                row[f"Δ{k}"] = row[k] - base[k]
    return rows


def comparison_markdown(rows: Sequence[dict]) -> str:
    """The comparison table; a value whose run was scored differently from the first run (another metric signature,
    other languages in the average, another --compat/--split/gold) is marked †, and each difference is listed."""
    from fairmt.eval.reporting.escape import markdown, markdown_code

    cols = COMPARISON_COLUMNS
    out = ["| model | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    notes = []
    for r in rows:
        touched = {b for d in r.get("differs", []) for b in _benchmarks_touched(d["key"])}
        cells = []
        for c in cols:
            if c == "degenerate":
                v = "–" if r.get(c) is None else f"{r[c]}/{r['degenerate_of']}"
            else:
                v = _fmt(r.get(c))
            d = r.get(f"Δ{c}")
            mark = " †" if _column_benchmark(c) in touched and r.get(c) is not None and c != "degenerate" else ""
            cells.append(v + (f" ({d:+.1f})" if d is not None else "") + mark)
        out.append(f"| {markdown(r['model'])} | " + " | ".join(cells) + " |")
        for d in r.get("differs", []):
            notes.append(
                f"- † {markdown(r['model'])}: {markdown(d['key'])} is {markdown_code(d['this'])}, the first "
                f"run's is {markdown_code(d['first'])}"
            )
    text = (
        "\n".join(out) + "\n\nIn brackets: the difference to the first model. geneval_chrfpp: chrF++ of the "
        "MT-GenEval translations against their own-gender references; bleu/chrfpp: FLORES-200; degenerate: empty, "
        "repetitive, wrong-script or unrelated (sentence chrF++ < 20) translations.\n"
    )
    if notes:
        text += (
            "\n**† Scored under different settings from the first run — these numbers are not comparable as "
            "they stand:**\n\n" + "\n".join(notes) + "\n"
        )
    return text


def scatter_plot(rows: Sequence[dict], path: str | Path) -> list[str]:
    """spBLEU (or chrF++ when not every run has spBLEU) against WinoMT accuracy, one point per model (the paper's
    Figure 3); returns one line per run left out (:func:`fairmt.eval.report.draw_plot`)."""
    from fairmt.eval.report import NothingToPlot

    xkey = "bleu" if all(r.get("bleu") is not None for r in rows) else "chrfpp"
    xname = "spBLEU" if xkey == "bleu" else "chrF++"
    pts = [
        (r[xkey], r["winomt_acc"], r["model"])
        for r in rows
        if r.get(xkey) is not None and r.get("winomt_acc") is not None
    ]
    missing = [
        f"{r['model']}: no "
        + " and no ".join(n for n, k in ((xname, xkey), ("WinoMT accuracy", "winomt_acc")) if r.get(k) is None)
        for r in rows
        if r.get(xkey) is None or r.get("winomt_acc") is None
    ]
    if not pts:
        raise NothingToPlot(f"no run has both {xname} (FLORES) and WinoMT accuracy")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.scatter([p[0] for p in pts], [p[1] for p in pts])
    from fairmt.eval.reporting.escape import mpl

    for x, y, name in pts:
        ax.annotate(mpl(name), (x, y), textcoords="offset points", xytext=(4, 4), fontsize="small")
    ax.set_xlabel(xname)
    ax.set_ylabel("WinoMT accuracy (%)")
    ax.grid(linewidth=0.3, alpha=0.5)
    fig.tight_layout()
    from fairmt.eval.report import save_figure_atomic

    save_figure_atomic(fig, path)
    return missing


__all__ = [
    "BENCHMARKS",
    "COMPARISON_COLUMNS",
    "FLORES_LANGS",
    "GENEVAL_LANGS",
    "RESOURCE_GROUPS",
    "WINOMT_LANGS",
    "average",
    "compare_runs",
    "comparison_markdown",
    "degenerate_warnings",
    "markdown_tables",
    "per_language_plot",
    "run_signatures",
    "scatter_plot",
    "score_many2many",
    "score_translations_dir",
    "signature_differences",
]


__getattr__ = moved_names(__name__, {"translate_suite": "fairmt.model_eval"})  # moved (translating is not scoring)
