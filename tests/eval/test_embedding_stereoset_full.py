"""The whole shipped StereoSet dev file through `fairmt eval embeddings` (a tiny random masked LM whose vocabulary
covers it): every intrasentence example is scored — the two contexts with BLANK twice included, as the official scorer
does — and each finished suite's results are on disk before a later suite runs."""

import json

import pytest
import torch

from fairmt.cli import main
from fairmt.eval.embedding.crows import load_crows_pairs
from fairmt.eval.embedding.encode import MaskedLMRunner
from fairmt.eval.embedding.stereoset import load_stereoset

pytestmark = pytest.mark.data
STEREOSET = "embedding_bias/stereoset/stereoset_dev_langtest2.7.0.jsonl"
CROWS = "embedding_bias/crows/crows_pairs_anonymized.csv"


@pytest.fixture(scope="module")
def mlm_dir(shared_data, tmp_path_factory):
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    examples = load_stereoset(shared_data / STEREOSET, splits=["intrasentence"])
    texts = [e.context for e in examples] + [s.sentence for e in examples for s in e.sentences]
    texts += [t for p in load_crows_pairs(shared_data / CROWS, limit=5) for t in (p.sent_more, p.sent_less)]
    norm, pre = BertNormalizer(lowercase=True), BertPreTokenizer()
    words = sorted({w for t in texts for w, _ in pre.pre_tokenize_str(norm.normalize_str(t))})
    path = tmp_path_factory.mktemp("ss_mlm")
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tok = BertTokenizer(str(path / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
    )
    BertForMaskedLM(cfg).eval().save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_a_context_with_two_blanks_is_read_at_the_first_mask(mlm_dir):
    runner = MaskedLMRunner.from_path(mlm_dir)
    context = "brahmin is very BLANK and is strict about BLANK"
    got = runner.fill_probs(context, "religious")
    tok, model = runner.tokenizer, runner.model
    enc = tok(context.replace("BLANK", tok.mask_token), return_tensors="pt")
    first = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        probs = model(**enc).logits[0, first].softmax(-1)
    assert got == pytest.approx([float(probs[tok.convert_tokens_to_ids("religious")])], rel=1e-5)


def test_the_full_dev_file_is_scored_and_written(shared_data, mlm_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    out = tmp_path / "emb.json"
    rc = main(
        ["eval", "embeddings", "--model", str(mlm_dir), "--suite", "stereoset", "--json", str(out), "--no-progress"]
    )
    assert rc == 0
    res = json.loads(out.read_text())
    n = len(load_stereoset(shared_data / STEREOSET, splits=["intrasentence"]))
    assert (
        res["completed"] == ["stereoset"] and res["stereoset"]["contexts_with_several_blanks"] == 2
    )  # lines 2318, 3868
    assert res["stereoset"]["overall"]["count"] == n  # every example scored, none dropped
    assert 0 <= res["stereoset"]["overall"]["lms"] <= 100


def test_finished_suites_are_kept_when_a_later_one_fails(shared_data, mlm_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    bad = tmp_path / "stereoset.jsonl"
    bad.write_text('{"type": "intrasentence", "broken": \n')
    out = tmp_path / "emb.json"
    argv = [
        "eval",
        "embeddings",
        "--model",
        str(mlm_dir),
        "--suite",
        "crows,stereoset",
        "--limit",
        "5",
        "--json",
        str(out),
        "--no-progress",
    ]
    # a bad input file fails before any suite runs (every input is read before the model loads)
    rc = main([*argv, "--stereoset-gold", str(bad)])
    assert rc == 2 and str(bad) in capsys.readouterr().err and not out.exists()
    # a suite failing while it scores: the suites finished before it are in the JSON
    from fairmt.errors import FairmtError
    from fairmt.eval.embedding import stereoset

    def boom(*args, **kwargs):
        raise FairmtError("scoring failed")

    monkeypatch.setattr(stereoset, "intrasentence_predictions", boom)
    rc = main(argv)
    assert rc == 2 and "scoring failed" in capsys.readouterr().err
    res = json.loads(out.read_text())
    assert res["completed"] == ["crows"] and "stereoset" not in res and res["crows"]
