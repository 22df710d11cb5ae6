"""CCD's validation split (fairmt.recipes.ccd.validation) and the recipe's data/measurement helpers around it."""

import csv
import json

import numpy as np
import pytest

from fairmt.errors import FairmtError
from fairmt.recipes.ccd.validation import PROBE_TESTS, probe_tests, probe_words, split_bias_ir


def _seat_words(shared_data):
    words = set()
    for f in (shared_data / "embedding_bias" / "seat").glob("weat*.jsonl"):
        d = json.loads(f.read_text())
        words |= {w.lower() for s in ("targ1", "targ2", "attr1", "attr2") for w in d[s]["examples"]}
    return words


def test_probe_shares_no_word_with_seat(shared_data):
    """The probe is a held-out measure: none of its words is a SEAT 6-8b word, nor appears in a SEAT sentence."""
    seat = _seat_words(shared_data)
    assert len(seat) > 60
    assert not probe_words() & seat
    sentence_tokens = set()
    for f in (shared_data / "embedding_bias" / "seat").glob("sent-weat*.jsonl"):
        d = json.loads(f.read_text())
        for s in ("targ1", "targ2", "attr1", "attr2"):
            for text in d[s]["examples"]:
                sentence_tokens |= {w.strip(".,'\"").lower() for w in text.split()}
    assert not probe_words() & sentence_tokens


def test_probe_tests_sets_and_templates():
    tests = probe_tests()
    assert [t.name for t in tests] == list(PROBE_TESTS)
    for t in tests:
        for s in (t.targ1, t.targ2, t.attr1, t.attr2):
            assert len(s) >= 40 and len(set(s)) == len(s)
            assert all(x.endswith(".") and x[0].isupper() for x in s)
    nouns = next(t for t in tests if t.name == "nouns-career")
    assert "This is a husband." in nouns.targ1
    assert not any(" a an " in x or " a a " in x or " an a " in x for t in tests for x in t.attr1 + t.attr2)
    assert "This is an employee." in nouns.attr1 and "A queen is a person." in nouns.targ2
    names = next(t for t in tests if t.name == "names-career")
    assert "Mary is a person." in names.targ2 and "This is David." in names.targ1


def test_bias_ir_split_is_stratified_disjoint_and_seeded(shared_data):
    from fairmt.eval.embedding.bias_ir import load_bias_ir

    queries = load_bias_ir(shared_data / "embedding_bias" / "bias_ir")
    val, test = split_bias_ir(queries, 0.5, seed=0)
    ids_v, ids_t = {q.q_id for q in val}, {q.q_id for q in test}
    assert not ids_v & ids_t and ids_v | ids_t == {q.q_id for q in queries} and len(queries) == 117
    cats = {q.category for q in queries}
    assert {q.category for q in val} == cats == {q.category for q in test}
    for c in cats:
        n = sum(q.category == c for q in queries)
        assert sum(q.category == c for q in val) == n // 2
    assert [q.q_id for q in split_bias_ir(queries, 0.5, seed=0)[0]] == [q.q_id for q in val]
    assert {q.q_id for q in split_bias_ir(queries, 0.5, seed=1)[0]} != ids_v
    with pytest.raises(FairmtError, match="fraction"):
        split_bias_ir(queries, 1.0)


def test_cached_encoder_embeds_each_distinct_text_once():
    from fairmt.recipes.ccd.measure import cached_encoder

    calls = []

    def enc(texts):
        calls.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=float)

    run = cached_encoder(enc)
    got = run(["aa", "b", "aa", "ccc"])
    assert got.tolist() == [[2, 2], [1, 0], [2, 2], [3, 0]]
    assert run(["b", "dd"]).tolist() == [[1, 0], [2, 0]]
    assert calls == [["aa", "b", "ccc"], ["dd"]]


def test_prepare_data_csv_sentences_eda_and_utility_validation(tmp_path):
    """A CSV source split into sentences, EDA variants of the training tuples only, disjoint utility sets."""
    from fairmt.recipes.ccd.data import prepare_data

    src = tmp_path / "bios.csv"
    bios = [
        f"She is a {p} in {c}. Her patients like her. The weather was {w}."
        for p in ("doctor", "nurse", "lawyer", "teacher", "pilot", "chef", "judge", "baker", "farmer", "poet")
        for c, w in (("Paris", "fine"), ("Rome", "cold"), ("Oslo", "warm"))
    ]
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["hard_text", "gender"])
        w.writerows([b, "F"] for b in bios)
    cfg = {
        "cda_source": {"path": str(src), "field": "hard_text", "sentences": True},
        "test_size": 10,
        "eval_size": 5,
        "utility_size": 1,
        "utility_validation_size": 2,
        "seed": 0,
    }
    plain = prepare_data(cfg)
    # 30 bios x 2 gendered sentences, deduplicated: "Her patients like her." once, 10 professions x 3 weathers
    assert plain["stats"]["cda"]["n_input"] == 90 and plain["stats"]["n_train"] == 31 - 15
    assert len(plain["neutral"]) == 1 and len(plain["neutral_validation"]) == 2
    assert not set(plain["neutral"]) & set(plain["neutral_validation"])
    eda = prepare_data({**cfg, "eda": {"num_aug": 2, "alpha": 0.2}})
    assert eda["test"] == plain["test"] and eda["eval"] == plain["eval"]
    assert len(eda["train"]) > len(plain["train"]) and eda["stats"]["eda"]["n_variants"] == 2 * len(plain["train"])
    held = {r["neutral"] for r in plain["test"] + plain["eval"]}
    assert not held & {r["neutral"] for r in eda["train"]}
    with pytest.raises(FairmtError, match="column"):
        prepare_data({**cfg, "cda_source": {"path": str(src)}})


def test_evaluation_settings_refuse_unknown_keys():
    from fairmt.recipes.ccd.measure import evaluation_settings

    s = evaluation_settings({"evaluation": {"suites": ["seat", "bias-ir"], "validation": True}})
    assert s["suites"] == ["seat", "bias_ir"] and s["bias_ir_validation"] == 0.5
    assert evaluation_settings({})["bias_ir_validation"] is None
    with pytest.raises(FairmtError, match="evaluation.seat_samples"):
        evaluation_settings({"evaluation": {"seat_samples": 10}})


def test_validation_selectors_refuse_what_they_cannot_measure():
    from fairmt.recipes.ccd.measure import validation_selector

    data = {"eval": [{"neutral": "they run", "male": "he runs", "female": "she runs"}], "groups": ("male", "female")}
    settings = {"batch_size": 8}
    with pytest.raises(FairmtError, match="unknown validation selector 'probe'"):
        validation_selector("probe", None, None, data, settings, None, None)
    with pytest.raises(FairmtError, match="Bias-IR validation queries"):
        validation_selector("bias_ir_avg_dev", None, None, data, settings, None, None)
    with pytest.raises(FairmtError, match="evaluation.validation: true"):
        validation_selector("val_bias", None, None, data, settings, ["q"], None)
    assert callable(validation_selector("probe_avg_abs", None, None, data, settings, None, None))


def test_recipe_results_are_names_the_sweep_knows(tmp_path):
    """Every number a real run of ccd/minilm_cda wrote (scripts/results, plus the dev/test summaries) is a metric
    name ``fairmt sweep`` accepts, and the README's sweep over the recipe passes the sweep's checks (dev objectives;
    a test objective is refused)."""
    from pathlib import Path

    pytest.importorskip("optuna")
    from fairmt.commands.train import load_recipe
    from fairmt.recipes.ccd.measure import summary_sections
    from fairmt.sweep.results import flatten, matches, metric_patterns
    from fairmt.sweep.spec import build_spec

    res = json.loads((Path(__file__).parents[2] / "scripts/results/ccd_minilm_cda_seed0.json").read_text())
    res.update(summary_sections(res))
    assert res["dev"]["probe_avg_abs"] == res["validation"]["after"]["probe_avg_abs"]
    assert res["test"]["bias_ir_avg_dev"] == res["after"]["bias_ir"]["avg_dev"]
    assert set(res["dev"]) == {"cced_gap", "probe_avg_abs", "bias_ir_avg_dev", "utility_spearman", "utility_nn1"}
    patterns = metric_patterns("ccd", load_recipe("ccd/minilm_cda"))
    unknown = [n for n in flatten(res) if not matches(n, patterns)]
    assert not unknown
    spec = build_spec(
        "ccd/minilm_cda",
        [],
        ["training.learning_rate=1e-5,3e-5,1e-4"],
        [],
        "3",
        ["dev.probe_avg_abs:min", "dev.bias_ir_avg_dev:min"],
        None,
        output_dir=str(tmp_path / "s"),
    )
    assert spec.method == "ccd" and spec.objectives[0] == ["dev.probe_avg_abs", "minimize"]
    with pytest.raises(FairmtError, match="test metric"):
        build_spec("ccd/minilm_cda", [], [], [], "3", ["test.seat_avg_abs:min"], None, output_dir=str(tmp_path / "t"))
