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

huggingface_hub 2.x calls the ``model-index`` "legacy" and reads evaluation results from ``.eval_results/*.yaml``
files in the repository: :func:`eval_results_files` writes one per benchmark whose data set is on the Hub
(:data:`HUB_DATASET_IDS`, the one mapping from fairmt's benchmark names to Hub dataset ids); the others stay in the
model-index only (their dataset ``type`` is then fairmt's name of the benchmark). Values are written at full
precision (the card's table shows 4 significant digits); a value that is not a finite number is left out of both and
named in the card's text. Strings that come from result files (signatures, data set and run names) are escaped for
Markdown in the card's body (:func:`markdown_text`) and written on one line, control characters shown as escapes, in
its YAML (:func:`plain_text`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

START = "<!-- fairmt-eval-start -->"
END = "<!-- fairmt-eval-end -->"

HUB_DATASET_IDS = {
    "flores": "facebook/flores",
    "crows": "nyu-mll/crows_pairs",
    "stereoset": "McGill-NLP/stereoset",
    "bios": "LabHC/bias_in_bios",
}
"""fairmt's benchmarks (and data sets) that have a data set on the Hugging Face Hub → its id: the model-index's
dataset ``type`` and the ``dataset.id`` of the ``.eval_results`` files. WinoMT, MT-GenEval, SEAT, CCED and
Grep-BiasIR have none (they are distributed on GitHub): model-index only."""
_HUB_IDS = frozenset(HUB_DATASET_IDS.values())

WINOMT_DATASET = ("winomt", "WinoMT")
GENEVAL_DATASET = ("mt_geneval", "MT-GenEval")
FLORES_DATASET = (HUB_DATASET_IDS["flores"], "FLORES-200")
HELD_OUT_DATASET = ("fairmt_demo_held_out", "fairmt demo held-out sentences")

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_CONTROL.update({c: f"\\u{c:04x}" for c in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def plain_text(value: Any) -> str:
    """``value`` as one line of plain text: every control character (newline, tab, ESC of a terminal escape, ...)
    shown as its ``\\xNN`` escape and the line separators and bidirectional overrides as ``\\uNNNN``, so a string
    from a result file can neither start a line, drive a terminal nor reorder the text around it."""
    return str(value).translate(_CONTROL)


def markdown_text(value: Any) -> str:
    """``value`` as text in a Markdown card (a table cell or a line): :func:`plain_text` (one line, no control
    characters), then the report layer's Markdown escaping (:func:`fairmt.eval.reporting.escape.markdown`: HTML as
    entities, table pipes and inline marks escaped), so raw HTML, links, emphasis, table columns and headings from a
    result file show as the text they are. One Markdown escaper for cards and reports."""
    from fairmt.eval.reporting.escape import markdown

    return markdown(plain_text(value))


def _finite(value: Any) -> bool:
    import math

    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _get(result: Any, key: str, default: Any = None) -> Any:
    if isinstance(result, dict):
        return result.get(key, default)
    return getattr(result, key, default)


def _er(
    dataset: tuple[str, str],
    config: str,
    split: str,
    metric_type: str,
    name: str,
    value: float,
    signature: str,
    task: tuple[str, str] = ("translation", "Translation"),
):
    """One model-index entry, its value at full precision (a value that is not a number stays as it is here and is
    left out by :func:`build_model_card`), its strings on one line (:func:`plain_text`)."""
    from huggingface_hub import EvalResult

    config = plain_text(config)
    return EvalResult(
        task_type=task[0],
        task_name=task[1],
        dataset_type=plain_text(dataset[0]),
        dataset_name=plain_text(f"{dataset[1]} ({config})"),
        dataset_config=config,
        dataset_split=plain_text(split),
        metric_type=plain_text(metric_type),
        metric_name=plain_text(name),
        metric_value=float(value) if _finite(value) else value,
        metric_args={"signature": plain_text(signature)} if signature else None,
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
    elif (
        not (hasattr(result, "delta_g_f1") or (isinstance(result, dict) and "delta_g_f1" in result))
        and values["delta_g"] is not None
    ):  # an older `eval winomt` result, its delta_g the F1 gap:
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


def degenerate_note(counts: dict | None) -> str:
    """What goes beside a gender score of translations some of which are degenerate (``"; 600 of 600 translations
    degenerate"``), or ``""`` (none flagged, or not checked)."""
    if not isinstance(counts, dict) or not counts.get("degenerate"):
        return ""
    return f"; {int(counts['degenerate'])} of {int(counts.get('n') or 0)} translations degenerate"


def geneval_eval_results(result: Any) -> list:
    """Entries for a :class:`~fairmt.eval.geneval.GenEvalResult` or ``GenEvalContextResult``. Where translations
    were flagged degenerate (:mod:`fairmt.eval.degenerate`: a model can be 100 % gender-accurate writing
    "ariariari…"), each score's name says how many, and the count is an entry of its own
    (``degenerate_translations``) beside them."""
    lang, split, sig = result.lang, result.split, result.signature
    subset = getattr(result, "subset", "counterfactual")
    cfg = f"{subset}-en-{lang}"
    keys = [("accuracy", "accuracy", "accuracy"), ("explicit_accuracy", "explicit_accuracy", "explicit accuracy")]
    if subset == "counterfactual":
        keys += [
            ("delta_g", "delta_g", "ΔG"),
            ("explicit_delta_g", "explicit_delta_g", "E-ΔG"),
        ]
    counts = getattr(result, "degenerate", None)
    note = degenerate_note(counts)
    out = [
        _er(
            GENEVAL_DATASET,
            cfg,
            split,
            mtype,
            f"MT-GenEval {label} ({subset}, en-{lang}{note})",
            getattr(result, key),
            sig,
        )
        for key, mtype, label in keys
    ]
    if note and counts:  # a note only for a dict of counts
        out.append(
            _er(
                GENEVAL_DATASET,
                cfg,
                split,
                "degenerate_translations",
                f"MT-GenEval degenerate translations ({subset}, en-{lang}; of {int(counts.get('n') or 0)})",
                int(counts["degenerate"]),
                sig,
            )
        )
    return out


def translation_eval_results(result: Any, split: str = "devtest") -> list:
    """Entries for a :class:`~fairmt.eval.translation.TranslationQualityResult` (spBLEU or spBLEU*, chrF++)."""
    cfg = result.lang_pair or "unknown"
    if result.spbleu is not None:
        bleu = _er(FLORES_DATASET, cfg, split, "bleu", f"spBLEU ({cfg})", result.spbleu, result.bleu_signature)
    else:
        bleu = _er(
            FLORES_DATASET,
            cfg,
            split,
            "bleu_spm_nonstandard",
            f"spBLEU* ({cfg}; non-standard SentencePiece model, not comparable with spBLEU)",
            result.bleu_spm_nonstandard,
            result.bleu_signature,
        )
    chrf = _er(FLORES_DATASET, cfg, split, "chrf", f"chrF++ ({cfg})", result.chrfpp, result.chrf_signature)
    return [bleu, chrf]


EMBEDDING_TASK = ("feature-extraction", "Sentence embedding bias")
CLASSIFICATION_TASK = ("text-classification", "Text classification fairness")
SEAT_DATASET = ("seat", "SEAT")
CCED_DATASET = ("cced", "CCED")
BIAS_IR_DATASET = ("grep_biasir", "Grep-BiasIR")
CROWS_DATASET = (HUB_DATASET_IDS["crows"], "CrowS-Pairs")
STEREOSET_DATASET = (HUB_DATASET_IDS["stereoset"], "StereoSet")

SUITE_TASKS = {"seat": "SEAT", "cced": "CCED", "bias_ir": "Bias-IR"}
"""The embedding suites that are also sentence-transformers evaluators (:mod:`fairmt.integrations.st_evaluators`,
whose ``description`` this is) → their task name. sentence-transformers' model card makes the task type of an
evaluator's results from it (``description.lower().replace(" ", "-")``) and names each metric ``<suite>_<metric>``;
fairmt's card gives the same metric the same shape (:func:`suite_task`), so one metric has one task type and one
metric type on the Hub, whichever card wrote it."""
SUITE_HEADLINES = {"seat": "avg_abs_effect_size", "cced": "gap", "bias_ir": "avg_dev"}
"""Each suite's headline metric (the evaluators' ``primary_metric`` is ``<suite>_<headline>``)."""


def suite_task(suite: str) -> tuple[str, str]:
    """The (task type, task name) of an embedding suite's results, as sentence-transformers' card writes them."""
    name = SUITE_TASKS[suite]
    return name.lower().replace(" ", "-"), name


def embedding_eval_results(payload: dict) -> list:
    """Entries for a `fairmt eval embeddings --json` result (the headline number of each suite that ran)."""
    out = []
    if payload.get("seat"):
        s = payload["seat"]
        first_test: dict = next(iter(s["tests"].values()), {})
        sig = first_test.get("signature", "")
        out.append(
            _er(
                SEAT_DATASET,
                "sent-weat",
                "test",
                "seat_avg_abs_effect_size",
                "SEAT average |effect size|",
                s["avg_abs_effect_size"],
                sig,
                suite_task("seat"),
            )
        )
    if payload.get("cced"):
        c = payload["cced"]
        out.append(
            _er(
                CCED_DATASET,
                "+".join(map(str, c.get("groups", []))) or "gender",
                "test",
                "cced_gap",
                "CCED gap",
                c["gap"],
                c.get("signature", ""),
                suite_task("cced"),
            )
        )
    if payload.get("bias_ir"):
        b = payload["bias_ir"]
        out.append(
            _er(
                BIAS_IR_DATASET,
                "default",
                "test",
                "bias_ir_avg_dev",
                "Bias-IR average deviation from parity",
                b["avg_dev"],
                b.get("signature", ""),
                suite_task("bias_ir"),
            )
        )
    for variant, c in (payload.get("crows") or {}).items():
        overall = c.get("overall", {})
        if overall.get("metric") is not None:
            out.append(
                _er(
                    CROWS_DATASET,
                    variant,
                    "test",
                    "stereotype_score",
                    f"CrowS-Pairs metric ({variant})",
                    overall["metric"],
                    c.get("signature", ""),
                    EMBEDDING_TASK,
                )
            )
    if payload.get("stereoset"):
        st = payload["stereoset"]
        overall = st.get("overall", {})
        for key, name in (("lms", "LMS"), ("ss", "SS"), ("icat", "ICAT")):
            if overall.get(key) is not None:
                out.append(
                    _er(
                        STEREOSET_DATASET,
                        "intrasentence",
                        "dev",
                        key,
                        f"StereoSet {name}",
                        overall[key],
                        st.get("signature", ""),
                        EMBEDDING_TASK,
                    )
                )
    return out


def hub_dataset(name: str) -> tuple[str, str]:
    """The model-index (type, name) of a data set a result names: its Hub id where :data:`HUB_DATASET_IDS` knows one
    (``bios`` → ``LabHC/bias_in_bios``), else the name itself."""
    name = str(name)
    return HUB_DATASET_IDS.get(name.lower(), name), name


def classification_eval_results(result: dict, dataset: str = "custom") -> list:
    """Entries for a `fairmt eval classification --json` result (percent)."""
    ds = hub_dataset(dataset)
    out = []
    for key, name in (
        ("accuracy", "accuracy"),
        ("macro_f1", "macro-F1"),
        ("gap", "GAP (TPR RMS gap)"),
        ("delta_eo", "ΔEO"),
        ("leakage_h", "leakage@h"),
        ("leakage_yhat", "leakage@ŷ"),
    ):
        if result.get(key) is not None:
            out.append(
                _er(ds, "default", "test", key, name, result[key], result.get("signature", ""), CLASSIFICATION_TASK)
            )
    return out


_FAMILY_TASK = {
    "mt": ("translation", "Translation"),
    "classification": CLASSIFICATION_TASK,
    "embeddings": EMBEDDING_TASK,
    "probe": ("feature-extraction", "Representation fairness (linear probes)"),
}
_FAMILY_DATASET = {"mt": GENEVAL_DATASET, "embeddings": SEAT_DATASET}
_GROUP_SUITE = {SEAT_DATASET: "seat", CCED_DATASET: "cced", BIAS_IR_DATASET: "bias_ir"}
_GROUP_DATASET = {
    "SEAT": SEAT_DATASET,
    "SEAT effect size d (0 best)": SEAT_DATASET,
    "CCED": CCED_DATASET,
    "Bias-IR": BIAS_IR_DATASET,
    "StereoSet": STEREOSET_DATASET,
    "CrowS-Pairs (50 best)": CROWS_DATASET,
    "WinoMT": WINOMT_DATASET,
    "WinoMT Acc. per language": WINOMT_DATASET,
    "MT-GenEval": GENEVAL_DATASET,
    "FLORES-200": FLORES_DATASET,
}


def _metric_type(key: str) -> str:
    """A report measure's key as a model-index metric type; SEAT's as sentence-transformers' evaluator names them
    (``seat_avg_abs_effect_size``, ``seat_<test>_effect_size``; CCED's and Bias-IR's keys are theirs already)."""
    import re

    if key == "seat_avg_abs":
        return f"seat_{SUITE_HEADLINES['seat']}"
    if key.startswith("seat:"):
        return "seat_" + re.sub(r"[^0-9A-Za-z]+", "_", key[5:]).strip("_").lower() + "_effect_size"
    return key.replace(":", "_")


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
        ds = _GROUP_DATASET.get(m.group) or (
            hub_dataset(dataset) if dataset else _FAMILY_DATASET.get(row.family, ("custom", "custom"))
        )
        unit = table.unit(m)
        name = f"{m.group} {m.label}" + (f" ({unit})" if unit else "")
        suite = _GROUP_SUITE.get(ds)  # an embedding suite: the shape sentence-transformers' card gives it
        out.append(
            _er(
                ds,
                dataset or "default",
                "test",
                _metric_type(m.key),
                name,
                v,
                sig,
                suite_task(suite) if suite else task,
            )
        )
    if not out:
        raise FairmtError(f"{path}: no measure of the trained model to put into a model card")
    return out


def held_out_eval_results(change: dict, rows: Sequence[tuple]) -> list:
    """Entries for a tiny GACL recipe's held-out gender scores (the ``held_out_gender`` of its ``results.json``,
    :func:`fairmt.recipes.gacl.tiny.tiny_before_after`): the trained model's (``after``) numbers, each named with
    its label in ``rows`` (``(label, key, format, better)``: :data:`fairmt.recipes.gacl.tiny.BEFORE_AFTER_ROWS`, the
    lines the recipe prints) and the original's value beside it. Refused in one line when the block holds no number."""
    if not isinstance(change, dict) or not isinstance(change.get("after"), dict):
        raise FairmtError("held_out_gender holds no 'after' scores of the trained model")
    before: dict = b if isinstance(b := change.get("before"), dict) else {}
    n = change.get("n")
    what = plain_text(change.get("set") or HELD_OUT_DATASET[1])
    out = []
    for label, key, _fmt, _better in rows:
        value = change["after"].get(key)
        if value is None or isinstance(value, bool):
            continue
        was: Any = before.get(key)
        shown = f"; original {float(was):.{SHOWN_DIGITS}g}" if _finite(was) else ""
        out.append(
            _er(
                HELD_OUT_DATASET,
                "en-de",
                "test",
                key.replace("+", "p"),
                f"{label} ({what}, {n} sentences; trained model{shown})",
                value,
                "",
                ("translation", "Translation"),
            )
        )
    if not out:
        raise FairmtError(f"held_out_gender holds none of the scores a card carries ({', '.join(r[1] for r in rows)})")
    return out


def eval_results(results: Iterable[Any]) -> list:
    """``EvalResult`` entries for a mix of fairmt results (MT-GenEval, FLORES-200, WinoMT objects or dicts)."""
    from huggingface_hub import EvalResult

    from fairmt.eval.geneval import GenEvalContextResult, GenEvalResult
    from fairmt.eval.translation import TranslationQualityResult

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


SHOWN_DIGITS = 4
"""Significant digits of the values in the card's table (the YAML and ``.eval_results`` hold them in full)."""


def _table(entries: Sequence) -> str:
    """The card's table of results: every string escaped (:func:`markdown_text`), values to :data:`SHOWN_DIGITS`
    significant digits."""
    columns = ["dataset", "split", "metric", "value", "signature"]
    lines = ["| " + " | ".join(columns) + " |", "|---|---|---|---:|---|"]
    for e in entries:
        cells = [
            e.dataset_name,
            e.dataset_split,
            e.metric_name,
            f"{float(e.metric_value):.{SHOWN_DIGITS}g}",
            (e.metric_args or {}).get("signature", ""),
        ]
        lines.append("| " + " | ".join(markdown_text(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


EVAL_RESULTS_FOLDER = ".eval_results"


def _task_id(e) -> str:
    """The ``task_id`` of an entry in its benchmark's ``.eval_results`` file: metric, configuration and split."""
    import re

    raw = f"{e.metric_type}-{e.dataset_config or 'default'}-{e.dataset_split or 'test'}"
    return re.sub(r"[^0-9A-Za-z_.+-]+", "_", raw)


def hub_entries(entries: Sequence) -> list:
    """The entries whose data set is on the Hub (:data:`HUB_DATASET_IDS`) and whose value is a finite number: those
    an ``.eval_results`` file can hold."""
    return [e for e in entries if e.dataset_type in _HUB_IDS and _finite(e.metric_value)]


def eval_results_files(entries: Sequence, repo_id: str | None = None) -> dict[str, str]:
    """The ``.eval_results/*.yaml`` files (the format huggingface_hub ≥ 2 reads: :class:`huggingface_hub.
    EvalResultEntry`) of ``entries`` whose data set is on the Hub: one file per data set, named after it
    (``.eval_results/facebook__flores.yaml``), one item per metric, configuration and split (``task_id``), the value
    at full precision, the metric's name and signature in ``notes``, the model card as ``source`` when ``repo_id``
    is given. ``{path in the repository: YAML text}``; empty when no entry has a Hub data set."""
    import yaml
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    by_dataset: dict[str, list] = {}
    for e in hub_entries(entries):
        sig = (e.metric_args or {}).get("signature", "")
        note = plain_text(f"{e.metric_name}; split {e.dataset_split}" + (f"; signature {sig}" if sig else ""))
        source = (
            {"source_url": f"https://huggingface.co/{repo_id}", "source_name": "fairmt model card"} if repo_id else {}
        )
        by_dataset.setdefault(e.dataset_type, []).append(
            EvalResultEntry(
                dataset_id=e.dataset_type, task_id=_task_id(e), value=float(e.metric_value), notes=note, **source
            )
        )
    return {
        f"{EVAL_RESULTS_FOLDER}/{ds.replace('/', '__')}.yaml": yaml.safe_dump(
            eval_result_entries_to_yaml(items), sort_keys=False, allow_unicode=True, width=1000
        )
        for ds, items in by_dataset.items()
    }


_DATASET_BENCHMARK = {
    WINOMT_DATASET[0]: "winomt",
    GENEVAL_DATASET[0]: "geneval",
    FLORES_DATASET[0]: "flores",
    SEAT_DATASET[0]: "seat",
    CCED_DATASET[0]: "cced",
    CROWS_DATASET[0]: "crows",
    STEREOSET_DATASET[0]: "stereoset",
    BIAS_IR_DATASET[0]: "bias_ir",
    HELD_OUT_DATASET[0]: "held_out",
}
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
    "held_out": "fairmt demo held-out sentences: gender accuracy, ΔG and chrF++ of a tiny recipe's model on the "
    "template sentences of `fairmt demo`'s test split (occupations in both genders); a check that the "
    "method changes what it should, not a benchmark, and not comparable with published numbers.",
    "bias_ir": "Grep-BiasIR: whether retrieval with the embeddings favours documents about men or women for "
    "gender-neutral queries (ranking of a small fixed set).",
}


def _limitations(entries: Sequence) -> str:
    kinds = [
        _DATASET_BENCHMARK[k]
        for k in dict.fromkeys(e.dataset_type for e in entries)
        if k in _DATASET_BENCHMARK and _DATASET_BENCHMARK[k] in _MEASURES
    ]
    lines = [f"- {_MEASURES[k]}" for k in kinds]
    lines.append(
        "- None of them measures non-binary gender, bias in generation beyond these test sets, or harms in "
        "deployment; a better score on one language pair need not carry over to others."
    )
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
    sources: Sequence[str] | None = None,
):
    """A :class:`huggingface_hub.ModelCard` holding ``results`` in its ``model-index``, with what the benchmarks do
    and do not measure and the BibTeX of ``method`` (``gacl``, ``ccd``, ...; None: none) and of each benchmark.

    ``existing`` (a ``ModelCard``) is updated instead of starting from the default template: its metadata and
    text are kept, results for the same dataset/config/split/metric are replaced. ``sources``: where the results
    come from (file and run names), listed under the table as text. A result that is not a finite number (NaN) is
    never written into the model-index: the text names it instead.
    """
    from huggingface_hub import ModelCard, ModelCardData

    new = eval_results(results)
    left_out = [e for e in new if not _finite(e.metric_value)]
    new = [e for e in new if _finite(e.metric_value)]
    if existing is None:
        data = ModelCardData(
            model_name=model_name,
            base_model=base_model,
            language=list(languages) if languages else None,
            license=license,
            tags=[
                "fairmt",
                *dict.fromkeys(
                    "translation"
                    if e.task_type == "translation"
                    else "text-classification"
                    if e.task_type == "text-classification"
                    else "sentence-embeddings"
                    for e in new
                ),
                "gender-bias",
            ],
        )
        card = ModelCard.from_template(data, model_id=model_name)
    else:
        card = existing
        card.data.model_name = card.data.model_name or model_name
        for attr, value in (("base_model", base_model), ("license", license)):
            if value is not None:
                setattr(card.data, attr, value)
        if languages:
            card.data.language = list(languages)
    keep = [
        e for e in (card.data.eval_results or []) if _key(e) not in {_key(n) for n in new} and _finite(e.metric_value)
    ]
    card.data.eval_results = keep + new
    extra = ""
    if left_out:
        extra += (
            "Not a number, so left out of the results: "
            + "; ".join(markdown_text(f"{e.metric_name} ({e.metric_value})") for e in left_out)
            + ".\n\n"
        )
    if sources:
        extra += "Results from: " + "; ".join(markdown_text(x) for x in sources) + ".\n\n"
    on_hub = hub_entries(card.data.eval_results)
    if on_hub:
        extra += (
            f"The results on data sets hosted on the Hub ({', '.join(sorted({e.dataset_type for e in on_hub}))}) "
            f"are also in `{EVAL_RESULTS_FOLDER}/` (huggingface_hub's evaluation-results format); the others "
            "are in the card's `model-index` only.\n\n"
        )
    section = (
        f"{START}\n## Evaluation (fairmt)\n\n{_table(card.data.eval_results)}\n{extra}"
        f"{_limitations(card.data.eval_results)}"
    )
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
    repo_id: str | None = None,
) -> Path:
    """Create or update ``README.md`` (``path`` may be the model folder or the file) with ``results``, and beside it
    the ``.eval_results/*.yaml`` files of the results whose data set is on the Hub (:func:`eval_results_files`;
    ``repo_id``, where given, is their ``source``).

    Returns the README path. The folder can then be pushed with ``Trainer.push_to_hub`` or
    ``huggingface_hub.upload_folder``.
    """
    from huggingface_hub import ModelCard

    p = Path(path)
    readme = p / "README.md" if p.is_dir() or not p.suffix else p
    existing = ModelCard.load(readme) if readme.is_file() else None
    card = build_model_card(
        results,
        model_name=model_name,
        existing=existing,
        base_model=base_model,
        languages=languages,
        license=license,
        method=method,
    )
    readme.parent.mkdir(parents=True, exist_ok=True)
    from fairmt.outputs import write_file

    write_file(readme, str(card), what="the model card")  # as ModelCard.save writes it, through the one writer
    for rel, text in eval_results_files(card.data.eval_results or [], repo_id).items():
        (readme.parent / rel).parent.mkdir(parents=True, exist_ok=True)
        write_file(readme.parent / rel, text, what="the model's evaluation results")
    return readme


def read_eval_results(readme: str | Path) -> list[dict]:
    """The ``model-index`` results of a README as plain dicts (for checks and tables)."""
    from huggingface_hub import ModelCard

    card = ModelCard.load(Path(readme))
    return [dataclasses.asdict(e) for e in (card.data.eval_results or [])]


__all__ = [
    "HUB_DATASET_IDS",
    "SUITE_TASKS",
    "build_model_card",
    "degenerate_note",
    "eval_results",
    "eval_results_files",
    "geneval_eval_results",
    "held_out_eval_results",
    "hub_dataset",
    "hub_entries",
    "markdown_text",
    "plain_text",
    "read_eval_results",
    "report_eval_results",
    "suite_task",
    "translation_eval_results",
    "winomt_eval_results",
    "write_model_card",
]
