"""CCED, the content-conditional embedding gap of CCD, as a Hugging Face ``evaluate`` metric (fairmt)."""

import datasets
import evaluate

from fairmt.citations import bibtex
from fairmt.evaluate_modules._batches import PerExampleInputs

_DESCRIPTION = """Content-conditional equal-distance gap: for each tuple (a neutral text and its versions for each
group, e.g. male/female), the distances from the neutral embedding to each group's embedding should be equal; the
gap is the mean over tuples of the mean absolute pairwise difference of those distances (0 is best). Takes
embeddings (any encoder); same number as `fairmt eval embeddings --suite cced` on the same embeddings."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the neutral texts' embeddings, one vector per tuple.
    references: per tuple, one embedding per group, in the order of `groups`.
    groups: the group names (default ["male", "female"]).
    normalize: L2-normalise the embeddings first (default False); pooling: labels the signature.
Returns:
    gap, n, groups, mean_distance, pair_gap, pair_signed, signature.
Example:
    >>> m = evaluate.load(fairmt.evaluate_module("cced"))
    >>> m.compute(predictions=neutral_emb, references=[[m, f] for m, f in zip(male_emb, female_emb)])
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class CCED(PerExampleInputs, evaluate.Metric):
    module = "cced"
    per_example = ()

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=bibtex("ccd2024"),
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("float64")),
                    "references": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
                }
            ),
        )

    def _compute(self, predictions, references, groups=None, normalize=False, pooling="unknown"):
        from dataclasses import asdict

        import numpy as np

        from fairmt.errors import FairmtError
        from fairmt.eval.embedding.cced import cced_gap

        if not isinstance(pooling, str) or not pooling or "|" in pooling:
            raise FairmtError(
                f"cced: pooling names how the vectors were pooled (a word such as 'mean', recorded in the "
                f"signature), got {pooling!r}"
            )
        if not isinstance(normalize, bool):
            raise FairmtError(f"cced: normalize must be True or False, got {normalize!r}")
        groups = list(groups or ["male", "female"])
        refs = [list(r) for r in references]
        bad = [i for i, r in enumerate(refs) if len(r) != len(groups)]
        if bad:
            raise FairmtError(
                f"cced: reference {bad[0]} has {len(refs[bad[0]])} embeddings for {len(groups)} groups {groups}"
            )
        neutral = np.asarray(predictions, dtype=np.float64)
        embs = {g: np.asarray([r[k] for r in refs], dtype=np.float64) for k, g in enumerate(groups)}
        return asdict(cced_gap(neutral, embs, normalize=normalize, pooling=pooling))
