"""spBLEU and chrF++ (FLORES-200 conventions) as a Hugging Face ``evaluate`` metric, backed by fairmt."""

import datasets
import evaluate

from fairmt.citations import bibtex
from fairmt.evaluate_modules._batches import PerExampleInputs

_DESCRIPTION = """Corpus spBLEU (sacrebleu BLEU on the FLORES-200 SentencePiece tokenisation) and chrF++ of
translations against one reference each. The SentencePiece model is checked against the official FLORES-200 model
(size and sha256): with any other model the BLEU score is reported as `bleu_spm_nonstandard` ("spBLEU*"), `spbleu`
is None and `note` says why, exactly as `fairmt eval flores` does."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: translations, one per reference.
    references: one reference per translation (strings).
    spm_model: path of the FLORES-200 SentencePiece model (default: $FAIRMT_FLORES200_SPM, then sacrebleu's cache).
    lang_pair: labels the result, e.g. "eng_Latn-deu_Latn".
Returns:
    spbleu (or bleu_spm_nonstandard), chrfpp, bleu_label, n, the sacrebleu signatures, spm_model, spm_model_sha256,
    note.
Example:
    >>> m = evaluate.load(fairmt.evaluate_module("flores"))
    >>> m.compute(predictions=hyps, references=refs, spm_model="flores200_sacrebleu_tokenizer_spm.model")
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Flores(PerExampleInputs, evaluate.Metric):
    module = "flores"
    per_example = ()

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=bibtex("nllb2022flores200"),
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            reference_urls=["https://github.com/facebookresearch/flores", "https://github.com/mjpost/sacrebleu"],
        )

    def _compute(self, predictions, references, spm_model=None, lang_pair=""):
        from dataclasses import asdict

        from fairmt.eval.translation import translation_quality

        return asdict(
            translation_quality(list(predictions), list(references), lang_pair=lang_pair, spm_model=spm_model)
        )
