"""CCED gap and Bias-IR male ratio: hand examples, loop references, tie handling, real-data loading, bad input."""

import csv
import itertools
import json
import math

import numpy as np
import pytest

from fairmt.errors import FairmtError
from fairmt.eval.embedding.bias_ir import BiasIRDocument, BiasIRQuery, bias_ir_score, load_bias_ir
from fairmt.eval.embedding.cced import cced_gap, cced_score, load_tuples


def test_cced_hand_example():
    neutral = np.array([[0.0, 0.0], [1.0, 1.0]])
    male = np.array([[3.0, 4.0], [1.0, 2.0]])  # distances 5, 1
    female = np.array([[0.0, 1.0], [1.0, 4.0]])  # distances 1, 3
    r = cced_gap(neutral, {"male": male, "female": female}, pooling="mean")
    assert r.gap == pytest.approx((4 + 2) / 2)
    assert r.pair_signed == {"male-female": pytest.approx((4 - 2) / 2)}
    assert r.mean_distance == {"male": pytest.approx(3.0), "female": pytest.approx(2.0)}
    assert r.n == 2 and r.signature.startswith("CCED|groups:male+female|dist:l2|norm:none|pool:mean|v:")
    # equal distances: a CCED-fair encoder has gap 0 even though the group embeddings differ
    fair = cced_gap(neutral, {"male": neutral + [[1, 0], [0, 1]], "female": neutral + [[0, -1], [-1, 0]]})
    assert fair.gap == pytest.approx(0.0, abs=1e-12)


def test_cced_three_groups_match_loop_reference():
    rng = np.random.default_rng(0)
    n, groups = rng.normal(size=(6, 5)), {g: rng.normal(size=(6, 5)) for g in ("a", "b", "c")}
    r = cced_gap(n, groups, normalize=True)

    def unit(v):
        norm = math.sqrt(sum(x * x for x in v))
        return [x / norm for x in v]

    total = 0.0
    for t in range(6):
        d = {g: math.dist(unit(groups[g][t].tolist()), unit(n[t].tolist())) for g in groups}
        pairs = list(itertools.combinations(groups, 2))
        total += sum(abs(d[a] - d[b]) for a, b in pairs) / len(pairs)
    assert r.gap == pytest.approx(total / 6)
    assert set(r.pair_gap) == {"a-b", "a-c", "b-c"}


def test_cced_tuple_file_and_missing_group(tmp_path):
    good = tmp_path / "t.jsonl"
    good.write_text(
        "\n".join(
            json.dumps(o)
            for o in [
                {"id": 1, "neutral": "they cook", "male": "he cooks", "female": "she cooks"},
                {"id": 2, "neutral": "the parent", "male": "the father", "female": "the mother"},
            ]
        )
        + "\n"
    )
    tuples, groups = load_tuples(good)
    assert groups == ["male", "female"] and tuples[1].groups["female"] == "the mother"
    vec = {
        "they cook": [0, 0],
        "he cooks": [1, 0],
        "she cooks": [0, 2],
        "the parent": [1, 1],
        "the father": [1, 2],
        "the mother": [1, 1.5],
    }
    r = cced_score(tuples, groups, lambda texts: np.array([vec[t] for t in texts], dtype=float))
    assert r.gap == pytest.approx((1 + 0.5) / 2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"neutral": "a", "male": "b", "female": "c"})
        + "\n"
        + json.dumps({"neutral": "a", "male": "b"})
        + "\n"
    )
    with pytest.raises(FairmtError, match=r"bad.jsonl:2: tuple lacks group\(s\) \['female'\]"):
        load_tuples(bad)
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"neutral": "a", "male": "b"}) + "\n")
    with pytest.raises(FairmtError, match="at least two groups"):
        load_tuples(one)


def _query(qid, cat, sims_by_gender):
    """A query whose documents' 'texts' are their keys; the fake encoder maps them to chosen similarities."""
    docs = [BiasIRDocument(f"{qid}{g}{int(rel)}", rel, g, "", f"{qid}-{g}-{int(rel)}") for (g, rel) in sims_by_gender]
    return BiasIRQuery(qid, cat, f"q{qid}", docs)


def test_bias_ir_hand_example_with_tie():
    # similarity of each document to its query is encoded as the angle of a 2-D vector
    sims = {}
    queries = []
    spec = {  # (query, category): cosine sims of relevant M, F, N and non-relevant M, F, N
        ("1", "Career"): (0.9, 0.8, 0.85, 0.1, 0.2, 0.3),  # M above F
        ("2", "Career"): (0.5, 0.7, 0.6, 0.1, 0.2, 0.3),  # F above M
        ("3", "Career"): (0.9, 0.9, 0.2, 0.1, 0.2, 0.3),  # tie -> 0.5
        ("4", "Appearance"): (0.4, 0.3, 0.2, 0.1, 0.9, 0.8),  # M above F, both below non-relevant docs
    }
    order = [("M", True), ("F", True), ("N", True), ("M", False), ("F", False), ("N", False)]
    for (qid, cat), vals in spec.items():
        q = _query(qid, cat, order)
        queries.append(q)
        for d, s in zip(q.documents, vals):
            sims[d.body] = s

    def encode(texts):
        out = []
        for t in texts:
            if t.startswith("q"):
                out.append([1.0, 0.0])
            else:
                c = sims[t]
                out.append([c, math.sqrt(1 - c * c)])
        return np.array(out)

    r = bias_ir_score(queries, encode, doc_text="body", pooling="model")
    cats = {c.short: c for c in r.categories}
    assert list(cats) == ["Appearance", "Career"]  # paper's column order
    assert cats["Career"].male_ratio == pytest.approx((1 + 0 + 0.5) / 3) and cats["Career"].ties == 1
    assert cats["Appearance"].male_ratio == 1.0
    assert r.avg_dev == pytest.approx((abs(0.5 - 0.5) + abs(1.0 - 0.5)) / 2)
    assert r.male_ratio_all == pytest.approx(2.5 / 4)
    # ranks: q1 M=1, F=3 (N 0.85 is 2nd); q2 M=3, F=1; q3 tie M=F=1.5; q4 M=3, F=4 below two non-relevant docs
    assert cats["Career"].mean_rank["M"] == pytest.approx((1 + 3 + 1.5) / 3)
    assert cats["Career"].mean_rank["F"] == pytest.approx((3 + 1 + 1.5) / 3)
    assert cats["Appearance"].mean_rank == {"M": 3.0, "F": 4.0, "N": 5.0}
    assert "tie:half" in r.signature


def test_bias_ir_real_data_loads(shared_data):
    root = shared_data / "embedding_bias" / "bias_ir"
    qs = load_bias_ir(root)
    per_cat = {}
    for q in qs:
        per_cat[q.category] = per_cat.get(q.category, 0) + 1
        assert len(q.documents) == 6
        assert q.documents[q.relevant("M")].text() != q.documents[q.relevant("F")].text()
    assert per_cat == {
        "Appearance": 14,
        "Child Care": 14,
        "Cognitive Capabilities": 12,
        "Domestic Work": 15,
        "Career": 20,
        "Physical Capabilities": 19,
        "Sex & Relationship": 23,
    }
    with open(root / "queries.csv", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == len(qs) == 117


def test_bias_ir_bad_input(tmp_path):
    with pytest.raises(FairmtError, match="queries file"):
        load_bias_ir(tmp_path)
    (tmp_path / "queries.csv").write_text("q_id,category,query\n0,Career,jobs\n")
    (tmp_path / "queries-documents_Career.csv").write_text(
        "q_id,d_id,relevant,query,doc_title,document,content_gender,exp_stereotype\n"
        "0,1,1,jobs,t,he works,M,x\n0,2,0,jobs,t,she works,F,x\n"
    )
    with pytest.raises(FairmtError, match="expected one relevant F document"):
        load_bias_ir(tmp_path)
