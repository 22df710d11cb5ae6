"""Write WinoMT, MT-GenEval and FLORES-200 (spBLEU/chrF++) results into a model card's ``model-index``.

The Hub reads evaluation results from the ``model-index`` block of a repository's ``README.md`` metadata.
:func:`eval_results` turns fairmt result objects into :class:`huggingface_hub.EvalResult` entries (task
``translation``; one entry per metric, the signature kept in ``metric_args``); :func:`write_model_card` creates
a card or updates an existing one (e.g. the one ``Trainer.create_model_card`` wrote) in place: entries for the
same dataset/config/metric are replaced, others kept, and a readable table with the signatures is put between
``<!-- fairmt-eval -->`` markers in the card text. ``ModelCard.push_to_hub`` (or the Trainer's ``push_to_hub``,
which uploads the folder) publishes it.

Non-standard BLEU (a SentencePiece model other than the official FLORES-200 one) is written as metric type
``bleu_spm_nonstandard`` named ``spBLEU*``, never as spBLEU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

START = "<!-- fairmt-eval-start -->"
END = "<!-- fairmt-eval-end -->"

WINOMT_DATASET = ("winomt", "WinoMT")
GENEVAL_DATASET = ("mt_geneval", "MT-GenEval")
FLORES_DATASET = ("facebook/flores", "FLORES-200")


def _get(result: Any, key: str, default: Any = None) -> Any:
    if isinstance(result, dict):
        return result.get(key, default)
    return getattr(result, key, default)


def _er(dataset: tuple[str, str], config: str, split: str, metric_type: str, name: str, value: float, signature: str,
        task: tuple[str, str] = ("translation", "Translation"), digits: int = 2):
    from huggingface_hub import EvalResult

    return EvalResult(
        task_type=task[0],
        task_name=task[1],
        dataset_type=dataset[0],
        dataset_name=f"{dataset[1]} ({config})",
        dataset_config=config,
        dataset_split=split,
        metric_type=metric_type,
        metric_name=name,
        metric_value=round(float(value), digits),
        metric_args={"signature": signature} if signature else None,
    )


def winomt_eval_results(result: Any, lang: str | None = None, split: str = "test") -> list:
    """Entries for a WinoMT result (any object or dict with ``accuracy``, ``delta_g``, ``delta_g_f1``, ``delta_s``,
    ``delta_r``), each with the result's signature.

    "WinoMT ΔG" is fairmt's one ΔG, the GACL paper's "ΔG = Acc_male − Acc_female" (§4.2); the 2019 evaluator's
    F1_male − F1_female is "WinoMT ΔG_F1". A result written before this naming (``delta_g_acc`` beside an F1
    ``delta_g``) is read as such. ``lang`` defaults to the result's ``lang`` attribute/key.
    """
    lang = lang or _get(result, "lang")
    if not lang:
        raise FairmtError("WinoMT result has no language: pass lang= (e.g. 'de')")
    sig = _get(result, "signature", "") or ""
    cfg = f"en-{lang}"
    out = []
    values = {k: _get(result, k) for k in ("accuracy", "delta_g", "delta_g_f1", "delta_s", "delta_r")}
    if _get(result, "delta_g_acc") is not None:  # an mt-bias row written before the one ΔG: delta_g was the F1 gap
        values["delta_g_f1"], values["delta_g"] = values["delta_g"], _get(result, "delta_g_acc")
    elif not (hasattr(result, "delta_g_f1") or (isinstance(result, dict) and "delta_g_f1" in result)) \
            and values["delta_g"] is not None:  # an older `eval winomt` result, its delta_g the F1 gap:
        values["delta_g_f1"], values["delta_g"] = values["delta_g"], values["delta_r"]  # Acc_g = recall_g on WinoMT
    for key, mtype, name in (
        ("accuracy", "accuracy", f"WinoMT accuracy (en-{lang})"),
        ("delta_g", "delta_g", f"WinoMT ΔG (en-{lang})"),
        ("delta_g_f1", "delta_g_f1", f"WinoMT ΔG_F1 (en-{lang})"),
        ("delta_s", "delta_s", f"WinoMT ΔS (en-{lang})"),
        ("delta_r", "delta_r", f"WinoMT ΔR (en-{lang})"),
    ):
        value = values[key]
        if value is not None:
            out.append(_er(WINOMT_DATASET, cfg, split, mtype, name, value, sig))
    if not out:
        raise FairmtError("WinoMT result holds none of accuracy, delta_g, delta_s, delta_r")
    return out


def geneval_eval_results(result: Any) -> list:
    """Entries for a :class:`~fairmt.eval.geneval.GenEvalResult` or ``GenEvalContextResult``."""
    lang, split, sig = result.lang, result.split, result.signature
    subset = getattr(result, "subset", "counterfactual")
    cfg = f"{subset}-en-{lang}"
    keys = [("accuracy", "accuracy", "accuracy"), ("explicit_accuracy", "explicit_accuracy", "explicit accuracy")]
    if subset == "counterfactual":
        keys += [
            ("delta_g", "delta_g", "ΔG"),
            ("explicit_delta_g", "explicit_delta_g", "E-ΔG"),
        ]
    return [
        _er(GENEVAL_DATASET, cfg, split, mtype, f"MT-GenEval {label} ({subset}, en-{lang})", getattr(result, key), sig)
        for key, mtype, label in keys
    ]


def translation_eval_results(result: Any, split: str = "devtest") -> list:
    """Entries for a :class:`~fairmt.eval.translation.TranslationQualityResult` (spBLEU or spBLEU*, chrF++)."""
    cfg = result.lang_pair or "unknown"
    if result.spbleu is not None:
        bleu = _er(FLORES_DATASET, cfg, split, "bleu", f"spBLEU ({cfg})", result.spbleu, result.bleu_signature)
    else:
        bleu = _er(
            FLORES_DATASET, cfg, split, "bleu_spm_nonstandard",
            f"spBLEU* ({cfg}; non-standard SentencePiece model, not comparable with spBLEU)",
            result.bleu_spm_nonstandard, result.bleu_signature,
        )
    chrf = _er(FLORES_DATASET, cfg, split, "chrf", f"chrF++ ({cfg})", result.chrfpp, result.chrf_signature)
    return [bleu, chrf]


EMBEDDING_TASK = ("feature-extraction", "Sentence embedding bias")
CLASSIFICATION_TASK = ("text-classification", "Text classification fairness")
SEAT_DATASET = ("seat", "SEAT")
CCED_DATASET = ("cced", "CCED")
BIAS_IR_DATASET = ("grep_biasir", "Grep-BiasIR")
CROWS_DATASET = ("crows_pairs", "CrowS-Pairs")
STEREOSET_DATASET = ("stereoset", "StereoSet")


def embedding_eval_results(payload: dict) -> list:
    """Entries for a `fairmt eval embeddings --json` result (the headline number of each suite that ran)."""
    out = []
    if payload.get("seat"):
        s = payload["seat"]
        sig = next(iter(s["tests"].values()), {}).get("signature", "")
        out.append(_er(SEAT_DATASET, "sent-weat", "test", "effect_size", "SEAT average |effect size|",
                       s["avg_abs_effect_size"], sig, EMBEDDING_TASK))
    if payload.get("cced"):
        c = payload["cced"]
        out.append(_er(CCED_DATASET, "+".join(c.get("groups", [])) or "gender", "test", "cced_gap", "CCED gap",
                       c["gap"], c.get("signature", ""), EMBEDDING_TASK))
    if payload.get("bias_ir"):
        b = payload["bias_ir"]
        out.append(_er(BIAS_IR_DATASET, "default", "test", "avg_dev", "Bias-IR average deviation from parity",
                       b["avg_dev"], b.get("signature", ""), EMBEDDING_TASK))
    for variant, c in (payload.get("crows") or {}).items():
        overall = c.get("overall", {})
        if overall.get("metric") is not None:
            out.append(_er(CROWS_DATASET, variant, "test", "stereotype_score", f"CrowS-Pairs metric ({variant})",
                           overall["metric"], c.get("signature", ""), EMBEDDING_TASK))
    if payload.get("stereoset"):
        st = payload["stereoset"]
        overall = st.get("overall", {})
        for key, name in (("lms", "LMS"), ("ss", "SS"), ("icat", "ICAT")):
            if overall.get(key) is not None:
                out.append(_er(STEREOSET_DATASET, "intrasentence", "dev", key, f"StereoSet {name}", overall[key],
                               st.get("signature", ""), EMBEDDING_TASK))
    return out


def classification_eval_results(result: dict, dataset: str = "custom") -> list:
    """Entries for a `fairmt eval classification --json` result (percent)."""
    ds = (dataset, dataset)
    out = []
    for key, name in (("accuracy", "accuracy"), ("macro_f1", "macro-F1"), ("gap", "GAP (TPR RMS gap)"),
                      ("delta_eo", "ΔEO"), ("leakage_h", "leakage@h"), ("leakage_yhat", "leakage@ŷ")):
        if result.get(key) is not None:
            out.append(_er(ds, "default", "test", key, name, result[key], result.get("signature", ""),
                           CLASSIFICATION_TASK))
    return out


_FAMILY_TASK = {"mt": ("translation", "Translation"), "classification": CLASSIFICATION_TASK,
                "embeddings": EMBEDDING_TASK, "probe": ("feature-extraction", "Representation fairness (linear probes)")}
_FAMILY_DATASET = {"mt": GENEVAL_DATASET, "embeddings": SEAT_DATASET}
_GROUP_DATASET = {"SEAT": SEAT_DATASET, "SEAT effect size d (0 best)": SEAT_DATASET, "CCED": CCED_DATASET,
                  "Bias-IR": BIAS_IR_DATASET, "StereoSet": STEREOSET_DATASET,
                  "CrowS-Pairs (50 best)": CROWS_DATASET, "WinoMT": WINOMT_DATASET,
                  "WinoMT Acc. per language": WINOMT_DATASET, "MT-GenEval": GENEVAL_DATASET,
                  "FLORES-200": FLORES_DATASET}


def report_eval_results(path: str | Path) -> list:
    """``EvalResult`` entries for any result file ``fairmt report`` reads (a recipe's results, a linear probe, ...):
    the measures of its table (:mod:`fairmt.eval.reporting`) for the trained model — the ``after`` row of a
    before/after recipe, stage 2 of a sampling run — each named as in the report (group, measure, unit), with the
    run's dataset and signatures."""
    from fairmt.eval.reporting import build_tables, read_runs

    row = read_runs(path)[-1]
    (table,) = build_tables([row])
    task = _FAMILY_TASK[row.family]
    dataset = str(row.settings.get("dataset") or "")
    sig = " ; ".join(f"{k}={v}" for k, v in row.signatures.items())[:500]
    out = []
    for m in table.columns:
        v = row.values.get(m.key)
        if v is None or m.key == "tradeoff":  # Shen et al.'s Tradeoff is relative to the models compared
            continue
        ds = _GROUP_DATASET.get(m.group) or ((dataset, dataset) if dataset else _FAMILY_DATASET.get(row.family,
                                                                                                     ("custom", "custom")))
        unit = table.unit(m)
        name = f"{m.group} {m.label}" + (f" ({unit})" if unit else "")
        digits = 2 if unit in ("%", "0–100") else 4  # percent and 0-100 scores to 2 decimals, the rest to 4
        out.append(_er(ds, dataset or "default", "test", m.key.replace(":", "_"), name, v, sig, task, digits))
    if not out:
        raise FairmtError(f"{path}: no measure of the trained model to put into a model card")
    return out


def eval_results(results: Iterable[Any]) -> list:
    """``EvalResult`` entries for a mix of fairmt results (MT-GenEval, FLORES-200, WinoMT objects or dicts)."""
    from fairmt.eval.geneval import GenEvalContextResult, GenEvalResult
    from fairmt.eval.translation import TranslationQualityResult

    from huggingface_hub import EvalResult

    out = []
    for r in results:
        if isinstance(r, EvalResult):  # already an entry (report_eval_results)
            out.append(r)
            continue
        if isinstance(r, dict) and "suites" in r and "model" in r:  # `fairmt eval embeddings --json`
            out += embedding_eval_results(r)
            continue
        if isinstance(r, dict) and "macro_f1" in r and "gap" in r:  # `fairmt eval classification --json`
            out += classification_eval_results(r)
            continue
        if isinstance(r, dict) and "chrfpp" in r and "explicit_accuracy" not in r:  # a FLORES result (`eval flores`)
            r = _from_dict(TranslationQualityResult, r)
        elif isinstance(r, dict) and "explicit_accuracy" in r and "lang" in r:  # MT-GenEval JSON
            r = _from_dict(GenEvalResult if "delta_g" in r else GenEvalContextResult, r)
        if isinstance(r, (GenEvalResult, GenEvalContextResult)):
            out += geneval_eval_results(r)
        elif isinstance(r, TranslationQualityResult):
            out += translation_eval_results(r)
        elif _get(r, "delta_s") is not None or _get(r, "delta_r") is not None:
            out += winomt_eval_results(r)
        else:
            keys = sorted(r)[:8] if isinstance(r, dict) else type(r).__name__
            raise FairmtError(
                f"do not know how to put this result into a model card ({keys}): the model-index holds WinoMT, "
                "MT-GenEval and FLORES-200 results"
            )
    return out


def _from_dict(cls, data: dict):
    """A result dataclass from its JSON (fields it does not have are ignored, missing ones must have defaults)."""
    names = {f.name for f in dataclasses.fields(cls)}
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except TypeError as err:
        raise FairmtError(f"not a complete {cls.__name__} JSON: {err}") from None


def _key(e) -> tuple:
    return (e.task_type, e.dataset_type, e.dataset_config, e.dataset_split, e.metric_type)


def _table(entries: Sequence) -> str:
    from fairmt.eval.report import markdown_table

    rows = [
        {
            "dataset": e.dataset_name,
            "split": e.dataset_split,
            "metric": e.metric_name,
            "value": float(e.metric_value),
            "signature": (e.metric_args or {}).get("signature", ""),
        }
        for e in entries
    ]
    return markdown_table(rows, ["dataset", "split", "metric", "value", "signature"], digits=2)


_DATASET_BENCHMARK = {WINOMT_DATASET[0]: "winomt", GENEVAL_DATASET[0]: "geneval", FLORES_DATASET[0]: "flores",
                      SEAT_DATASET[0]: "seat", CCED_DATASET[0]: "cced", CROWS_DATASET[0]: "crows",
                      STEREOSET_DATASET[0]: "stereoset", BIAS_IR_DATASET[0]: "bias_ir"}
_MEASURES = {
    "winomt": "WinoMT: whether the gender of an English occupation noun, fixed by coreference in the sentence, is kept "
              "in the translation (automatic alignment and morphological analysis: their errors are part of the score; "
              "binary gender only; template sentences, not natural text).",
    "geneval": "MT-GenEval: whether translations of sentences with explicit gender cues use the words of the "
               "right-gender reference (counterfactual pairs scored together); a word-overlap check, not a judgement "
               "of fluency, and it says nothing about ambiguous sentences.",
    "flores": "FLORES-200: general translation quality (spBLEU, chrF++) on Wikimedia-domain sentences; it does not "
              "measure bias.",
    "seat": "SEAT: association between sentence embeddings of template sentences (names, gendered terms) and "
            "attribute sets; small template sets, and a low score does not show the absence of bias downstream.",
    "cced": "CCED: whether a neutral sentence's embedding is equally far from its male and female versions; it "
            "depends on the tuples used and measures one kind of bias (gender, binary).",
    "crows": "CrowS-Pairs: the masked LM's preference for the more stereotypical sentence of a pair (50 is "
             "parity); crowd-written pairs with known noise.",
    "stereoset": "StereoSet: stereotype score (SS, 50 is parity) and language-model score (LMS) of the masked LM; "
                 "intrasentence dev set only.",
    "bias_ir": "Grep-BiasIR: whether retrieval with the embeddings favours documents about men or women for "
               "gender-neutral queries (ranking of a small fixed set).",
}


def _limitations(entries: Sequence) -> str:
    kinds = [_DATASET_BENCHMARK[k] for k in dict.fromkeys(e.dataset_type for e in entries)
             if k in _DATASET_BENCHMARK and _DATASET_BENCHMARK[k] in _MEASURES]
    lines = [f"- {_MEASURES[k]}" for k in kinds]
    lines.append("- None of them measures non-binary gender, bias in generation beyond these test sets, or harms in "
                 "deployment; a better score on one language pair need not carry over to others.")
    return "### What these results measure (limitations)\n\n" + "\n".join(lines) + "\n"


def _citation(method: str | None, entries: Sequence) -> str:
    from fairmt.citations import citations_for

    benchmarks = [_DATASET_BENCHMARK[e.dataset_type] for e in entries if e.dataset_type in _DATASET_BENCHMARK]
    bib = citations_for(method, list(dict.fromkeys(benchmarks)))
    return f"### Citation\n\n```bibtex\n{bib}\n```\n" if bib else ""


def build_model_card(
    results: Iterable[Any],
    *,
    model_name: str,
    existing: Any | None = None,
    base_model: str | None = None,
    languages: Sequence[str] | None = None,
    license: str | None = None,
    method: str | None = "gacl",
):
    """A :class:`huggingface_hub.ModelCard` holding ``results`` in its ``model-index``, with what the benchmarks do
    and do not measure and the BibTeX of ``method`` (``gacl``, ``ccd``, ...; None: none) and of each benchmark.

    ``existing`` (a ``ModelCard``) is updated instead of starting from the default template: its metadata and
    text are kept, results for the same dataset/config/split/metric are replaced.
    """
    from huggingface_hub import ModelCard, ModelCardData

    new = eval_results(results)
    if existing is None:
        data = ModelCardData(model_name=model_name, base_model=base_model, language=list(languages) if languages else None,
                             license=license, tags=["fairmt", "translation", "gender-bias"])
        card = ModelCard.from_template(data, model_id=model_name)
    else:
        card = existing
        card.data.model_name = card.data.model_name or model_name
        for attr, value in (("base_model", base_model), ("license", license)):
            if value is not None:
                setattr(card.data, attr, value)
        if languages:
            card.data.language = list(languages)
    keep = [e for e in (card.data.eval_results or []) if _key(e) not in {_key(n) for n in new}]
    card.data.eval_results = keep + new
    section = f"{START}\n## Evaluation (fairmt)\n\n{_table(card.data.eval_results)}\n{_limitations(card.data.eval_results)}"
    section += f"\n{_citation(method, card.data.eval_results)}{END}"
    text = card.text
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    card.text = text
    # ModelCard keeps the serialised content; rebuild it from data + text
    return ModelCard(f"---\n{card.data.to_yaml()}\n---\n{card.text}")


def write_model_card(
    path: str | Path,
    results: Iterable[Any],
    *,
    model_name: str,
    base_model: str | None = None,
    languages: Sequence[str] | None = None,
    license: str | None = None,
    method: str | None = "gacl",
) -> Path:
    """Create or update ``README.md`` (``path`` may be the model folder or the file) with ``results``.

    Returns the README path. The folder can then be pushed with ``Trainer.push_to_hub`` or
    ``huggingface_hub.upload_folder``.
    """
    from huggingface_hub import ModelCard

    p = Path(path)
    readme = p / "README.md" if p.is_dir() or not p.suffix else p
    existing = ModelCard.load(readme) if readme.is_file() else None
    card = build_model_card(
        results, model_name=model_name, existing=existing, base_model=base_model, languages=languages, license=license,
        method=method,
    )
    readme.parent.mkdir(parents=True, exist_ok=True)
    from fairmt.outputs import write_file

    write_file(readme, str(card), what="the model card")  # as ModelCard.save writes it, through the one writer
    return readme


def read_eval_results(readme: str | Path) -> list[dict]:
    """The ``model-index`` results of a README as plain dicts (for checks and tables)."""
    from huggingface_hub import ModelCard

    card = ModelCard.load(Path(readme))
    return [dataclasses.asdict(e) for e in (card.data.eval_results or [])]


__all__ = [
    "build_model_card",
    "eval_results",
    "geneval_eval_results",
    "read_eval_results",
    "report_eval_results",
    "translation_eval_results",
    "winomt_eval_results",
    "write_model_card",
]
