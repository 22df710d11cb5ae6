"""WinoMT (Stanovsky et al., 2019) as a Hugging Face ``evaluate`` metric, backed by fairmt's evaluator."""

import datasets
import evaluate

from fairmt.citations import bibtex
from fairmt.evaluate_modules._batches import PerExampleInputs

_DESCRIPTION = """Gender accuracy of professions in English→XX translations of the WinoMT challenge set: aligns each
source with its translation (built-in fast_align), finds the translated profession, detects its grammatical gender
with the language's morphological analyser and reports accuracy, ΔG = Acc(male) − Acc(female) (the GACL paper's),
ΔG_F1 = F1(male) − F1(female) (the 2019 evaluator's "ΔG"), ΔS = acc(pro) − acc(anti) and ΔR = recall(male) −
recall(female), in percent. Same numbers as `fairmt eval winomt`."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the target-language translations, one per gold line, in gold order.
    references: the WinoMT gold lines, `gender<TAB>index<TAB>sentence<TAB>profession` (e.g. the lines of
        `aggregates/en.txt`).
    lang: target language code (de, es, fr, it, ru, uk, he, ar, pl, cs, ...).
    sources: optional English sources (default: the gold sentences).
    compat: None, or "acl2019" to reproduce the 2019 evaluator.
Returns:
    accuracy, delta_g, delta_g_f1, delta_s (None without pro/anti marks), delta_r, f1/precision/recall per gender,
    acc_pro, acc_anti, n, n_unknown, n_unaligned, confusion, signature.
Example:
    >>> import evaluate, fairmt
    >>> m = evaluate.load(fairmt.evaluate_module("winomt"))
    >>> m.compute(predictions=translations, references=gold_lines, lang="de")["accuracy"]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class WinoMT(PerExampleInputs, evaluate.Metric):
    module = "winomt"
    per_example = ("sources",)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=bibtex("stanovsky2019winomt"),
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            reference_urls=["https://github.com/gabrielStanovsky/mt_gender"],
        )

    def _compute(self, predictions, references, lang=None, sources=None, compat=None):
        from dataclasses import asdict

        from fairmt.errors import FairmtError
        from fairmt.eval.winomt.evaluate import evaluate_winomt, gold_from_lines

        if not lang:
            raise FairmtError("winomt: give lang=, the target language (e.g. lang='de')")
        gold = gold_from_lines(references, compat=compat)
        if sources is not None:
            sources = list(sources)
            if len(sources) != len(gold):
                raise FairmtError(
                    f"winomt: sources has {len(sources)} entries but references has {len(gold)}; give "
                    "one source sentence per example (or leave sources out)"
                )
        return asdict(evaluate_winomt(list(predictions), lang, gold, sources=sources, compat=compat))
