"""MT-GenEval (Currey et al., 2022) counterfactual accuracy as a Hugging Face ``evaluate`` metric (fairmt)."""

import datasets
import evaluate

from fairmt.citations import bibtex
from fairmt.evaluate_modules._batches import PerExampleInputs

_DESCRIPTION = """Gender accuracy on MT-GenEval's counterfactual set: a translation is correct when it contains none of
the words that are only in the reference of the other gender (explicit accuracy: and at least one word only in its
own). `accuracy` is the official pair-level number (both translations of a masculine/feminine pair correct), in
percent; the per-translation means are `hypothesis_accuracy` and `hypothesis_explicit_accuracy`. Same numbers as
`fairmt eval geneval`."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: translations. For the pair-level numbers give the masculine sources' translations followed by the
        feminine ones (2n lines); `references` then holds the n masculine references followed by the n feminine
        ones, and `counterfactual_references` the n feminine followed by the n masculine ones.
    references: each translation's own-gender reference.
    counterfactual_references: each translation's other-gender reference.
    lang: target language code (labels the result), split: labels the result (default "test").
Returns:
    accuracy, explicit_accuracy, per-gender accuracies, delta_g, hypothesis_accuracy, hypothesis_explicit_accuracy,
    n, signature; with the pairs also chrfpp (chrF++ against the own-gender references, chrf_signature) and
    degenerate (counts of empty, repetitive, wrong-script and unrelated translations). Without the
    masculine-then-feminine layout only the per-translation numbers are defined: accuracy and explicit_accuracy are then
    None and `note` says why.
Example:
    >>> m = evaluate.load(fairmt.evaluate_module("mt_geneval"))
    >>> m.compute(predictions=hyps, references=own_refs, counterfactual_references=other_refs, lang="de")
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class MTGenEval(PerExampleInputs, evaluate.Metric):
    module = "mt_geneval"
    per_example = ("counterfactual_references",)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=bibtex("currey2022geneval"),
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            reference_urls=["https://github.com/amazon-science/machine-translation-gender-eval"],
        )

    def _compute(self, predictions, references, counterfactual_references=None, lang="xx", split="test"):
        from dataclasses import asdict

        from fairmt.errors import FairmtError
        from fairmt.eval.geneval import SPLITS, _pct, geneval_signature, judge, score_counterfactual

        if not isinstance(lang, str) or not lang:
            raise FairmtError(f"mt_geneval: lang must be a language code such as 'de', got {lang!r}")
        if split not in SPLITS:
            raise FairmtError(f"mt_geneval: split must be one of {', '.join(SPLITS)}, got {split!r}")
        hyps, own = list(predictions), list(references)
        other = list(counterfactual_references or [])
        if len(other) != len(own):
            raise FairmtError(
                f"mt_geneval: {len(own)} references but {len(other)} counterfactual_references; give one of each "
                "per translation"
            )
        n2 = len(own)
        half = n2 // 2
        if n2 and n2 % 2 == 0 and own[half:] == other[:half] and other[half:] == own[:half]:
            result = score_counterfactual(hyps[:half], hyps[half:], own[:half], own[half:], lang=lang, split=split)
            return asdict(result)
        judged = [judge(h, o, c) for h, o, c in zip(hyps, own, other)]
        return {
            "lang": lang,
            "split": split,
            "n": n2,
            "accuracy": None,
            "explicit_accuracy": None,
            "hypothesis_accuracy": _pct(sum(j.correct for j in judged), n2),
            "hypothesis_explicit_accuracy": _pct(sum(j.explicit_correct for j in judged), n2),
            "signature": geneval_signature("counterfactual", split, lang, n2),
            "note": "pair-level accuracy needs the masculine translations followed by the feminine ones (see the "
            "module card); only the per-translation numbers are computed",
        }
