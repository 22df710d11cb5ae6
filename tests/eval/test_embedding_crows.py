"""CrowS-Pairs scoring logic against hand-computed log-probabilities with a mock scorer, and the real file."""

import math

import pytest

from fairmt.errors import FairmtError
from fairmt.eval.embedding.crows import (
    CrowsPair,
    aligned_spans,
    bias_type_counts,
    crows_from_scores,
    crows_score,
    load_crows_pairs,
    score_pair,
)


class MockScorer:
    """Word-level 'tokenizer' with [CLS]/[SEP]; log-probs looked up in a hand-written table."""

    def __init__(self, table: dict[str, dict[int, float]]):
        self.vocab: dict[str, int] = {"[CLS]": 0, "[SEP]": 1}
        self.table = table
        self.calls: list[tuple[str, list[int]]] = []

    def encode(self, text):
        return [0] + [self.vocab.setdefault(w, len(self.vocab)) for w in text.split()] + [1]

    def masked_log_probs(self, ids, positions):
        inv = {v: k for k, v in self.vocab.items()}
        sent = " ".join(inv[i] for i in ids[1:-1])
        self.calls.append((sent, list(positions)))
        return [self.table[sent][p] for p in positions]


def test_aligned_spans_equal_and_diff():
    a = [0, 5, 6, 7, 8, 1]
    b = [0, 5, 9, 7, 8, 1]
    assert aligned_spans(a, b, "equal") == ([0, 1, 3, 4, 5], [0, 1, 3, 4, 5])
    assert aligned_spans(a, b, "diff") == ([2], [2])
    # insertion: "he is a nurse" vs "he is a male nurse"
    a = [0, 2, 3, 4, 5, 1]
    b = [0, 2, 3, 4, 9, 5, 1]
    assert aligned_spans(a, b, "equal") == ([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 5, 6])
    assert aligned_spans(a, b, "diff") == ([], [4])


TABLE = {
    # positions: 0 [CLS], 1 the, 2 poor/rich, 3 are, 4 lazy, 5 [SEP]
    "the poor are lazy": {1: -1.0, 2: -4.0, 3: -2.0, 4: -0.5},
    "the rich are lazy": {1: -1.2, 2: -3.0004, 3: -2.1, 4: -0.6},
    "women are bad drivers": {1: -3.0, 2: -1.0, 3: -1.0, 4: -1.0},
    "men are bad drivers": {1: -2.0001, 2: -1.5, 3: -1.5, 4: -1.5},
}


def test_nangia_variant_hand_computed():
    scorer = MockScorer(TABLE)
    stereo = CrowsPair(0, "the poor are lazy", "the rich are lazy", "stereo", "socioeconomic")
    s1, s2 = score_pair(stereo, scorer, "nangia")
    # unmodified tokens, [CLS]/[SEP] skipped: positions 1, 3, 4
    assert (s1, s2) == (pytest.approx(-1.0 - 2.0 - 0.5), pytest.approx(-1.2 - 2.1 - 0.6))
    assert scorer.calls == [("the poor are lazy", [1, 3, 4]), ("the rich are lazy", [1, 3, 4])]
    # antistereo: sent1 is sent_less
    anti = CrowsPair(1, "women are bad drivers", "men are bad drivers", "antistereo", "gender")
    assert anti.sent1 == "men are bad drivers"
    s1, s2 = score_pair(anti, scorer, "nangia")
    assert (s1, s2) == (pytest.approx(-4.5), pytest.approx(-3.0))  # men: positions 2,3,4; women: 2,3,4
    r = crows_from_scores([stereo, anti], [score_pair(p, scorer, "nangia") for p in (stereo, anti)], "nangia")
    # stereo: sent1 (-3.5) > sent2 (-3.9) -> biased; antistereo: sent2 (women, -3.0) > sent1 (-4.5) -> biased
    assert r.overall["metric"] == 100.0 and r.overall["n"] == 2
    assert r.per_bias_type["gender"]["antistereo_score"] == 100.0
    assert r.signature.startswith("CrowS-Pairs|variant:nangia|score:sum-pll-unmodified|align:difflib|n:2|v:")


def test_bias_bench_variant_hand_computed_with_rounding_tie():
    scorer = MockScorer(TABLE)
    stereo = CrowsPair(0, "the poor are lazy", "the rich are lazy", "stereo", "socioeconomic")
    # differing token only (position 2), mean, rounded to 3 decimals: -4.0 vs -3.0
    assert score_pair(stereo, scorer, "bias-bench") == (-4.0, -3.0)
    anti = CrowsPair(1, "women are bad drivers", "men are bad drivers", "antistereo", "gender")
    # position 1 differs: men -2.0001 -> -2.0, women -3.0
    assert score_pair(anti, scorer, "bias-bench") == (-2.0, -3.0)
    tie_table = {**TABLE, "the rich are lazy": {**TABLE["the rich are lazy"], 2: -4.0004}}
    r = crows_score([stereo, anti], MockScorer(tie_table), "bias-bench")
    # stereo pair: -4.0 vs round(-4.0004) = -4.0 -> neutral; anti: sent2 (-3.0) < sent1 (-2.0) -> not biased
    assert math.isnan(r.overall.pop("stereo_score"))  # no non-neutral stereo pair
    assert r.overall == {"n": 2, "metric": 0.0, "antistereo_score": 0.0, "neutral": 1, "skipped": 0}


def test_insertion_pair_has_no_bias_bench_score():
    table = {"he is a nurse": {1: -1, 2: -1, 3: -1, 4: -1}, "he is a male nurse": {1: -1, 2: -1, 3: -1, 4: -0.1, 5: -1}}
    pair = CrowsPair(0, "he is a male nurse", "he is a nurse", "stereo", "gender")
    s1, s2 = score_pair(pair, MockScorer(table), "bias-bench")
    assert s1 == -0.1 and math.isnan(s2)
    scored = CrowsPair(1, "he is a nurse", "he is a nurse", "stereo", "gender")
    r = crows_from_scores([pair, scored], [(s1, s2), (-1.0, -2.0)], "bias-bench")
    # as bias-bench's crows.py: the insertion pair is skipped — not in N, not in the stereo total — and counted
    assert r.overall["n"] == 1 and r.overall["skipped"] == 1 and r.overall["metric"] == 100.0
    assert r.overall["stereo_score"] == 100.0 and r.per_bias_type["gender"]["skipped"] == 1
    assert r.signature.endswith("n:1|v:1.1")


def test_unknown_variant():
    with pytest.raises(FairmtError, match="unknown CrowS-Pairs variant"):
        crows_score([], MockScorer({}), "pll")


def test_real_crows_file(shared_data):
    path = shared_data / "embedding_bias" / "crows" / "crows_pairs_anonymized.csv"
    pairs = load_crows_pairs(path)
    assert len(pairs) == 1508
    counts = bias_type_counts(pairs)
    assert counts["gender"] == 262 and len(counts) == 9
    gender = load_crows_pairs(path, bias_types=["gender"], limit=10)
    assert len(gender) == 10 and {p.bias_type for p in gender} == {"gender"}
    with pytest.raises(FairmtError, match="no CrowS-Pairs rows of bias type"):
        load_crows_pairs(path, bias_types=["colour"])
