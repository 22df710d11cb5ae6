"""Parallel-data readers, GACL data preparation, the gender-balanced sampler and the collator."""

import json

import pytest
import torch
from datasets import Dataset

from fairmt.data.gacl import (
    GenderBalancedSampler,
    GenderContrastiveCollator,
    balance_genders,
    filter_single_gender,
    prepare_gacl_pairs,
    tokenize_gacl,
)
from fairmt.data.parallel import from_hf_dataset, read_aligned_files, read_jsonl, read_parallel, read_tsv
from fairmt.errors import FairmtError

PAIRS = [
    ("He is a doctor.", "Er ist Arzt."),
    ("She is a doctor.", "Sie ist Ärztin."),
    ("The weather is fine.", "Das Wetter ist schön."),
    ("He met his sister.", "Er traf seine Schwester."),
    ("His father sings.", "Sein Vater singt."),
    ("Her daughter sings.", "Ihre Tochter singt."),
    ("Her son sings.", "Ihr Sohn singt."),
    ("The actress smiled.", "Die Schauspielerin lächelte."),
]


def test_readers(tmp_path):
    j = tmp_path / "d.jsonl"
    j.write_text("".join(json.dumps({"translation": {"en": s, "de": t}}) + "\n" for s, t in PAIRS) + "\n")
    t = tmp_path / "d.tsv"
    t.write_text("".join(f"{s}\t{d}\n" for s, d in PAIRS))
    (tmp_path / "a.en").write_text("\n".join(s for s, _ in PAIRS))
    (tmp_path / "a.de").write_text("\n".join(d for _, d in PAIRS))
    for ds in (
        read_jsonl(j),
        read_tsv(t),
        read_parallel(j),
        read_parallel(t),
        read_aligned_files(tmp_path / "a.en", tmp_path / "a.de"),
        from_hf_dataset(Dataset.from_dict({"translation": [{"en": s, "de": d} for s, d in PAIRS]})),
    ):
        assert ds["src"] == [s for s, _ in PAIRS] and ds["tgt"] == [d for _, d in PAIRS]
    (tmp_path / "b.de").write_text("one\ntwo\n")
    with pytest.raises(FairmtError, match="same number of lines"):
        read_aligned_files(tmp_path / "a.en", tmp_path / "b.de")
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\nonly one column\n")
    with pytest.raises(FairmtError, match=r"bad.tsv:2: expected 2 tab-separated columns"):
        read_tsv(bad)
    badj = tmp_path / "bad.jsonl"
    badj.write_text('{"translation": {"en": "x"}}\n')
    with pytest.raises(FairmtError, match=r"bad.jsonl:1"):
        read_jsonl(badj)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(FairmtError, match="empty"):
        read_jsonl(tmp_path / "empty.jsonl")


def test_filter_balance_counterfactuals():
    ds = Dataset.from_dict({"src": [s for s, _ in PAIRS], "tgt": [d for _, d in PAIRS]})
    f = filter_single_gender(ds)
    # the neutral sentence and the two-gender ones ("He met his sister.", "Her son sings.") are dropped
    assert f["src"] == [
        "He is a doctor.",
        "She is a doctor.",
        "His father sings.",
        "Her daughter sings.",
        "The actress smiled.",
    ]
    assert f["gender"] == [0, 1, 0, 1, 1]
    b = balance_genders(f, seed=0)
    assert sorted(b["gender"]) == [0, 0, 1, 1]
    p = prepare_gacl_pairs(ds, seed=0)
    for src, cf in zip(p["src"], p["src_cf"]):
        assert cf != src and cf.split()[-1] == src.split()[-1]
    assert dict(zip(p["src"], p["src_cf"]))["Her daughter sings."] == "His son sings."
    with pytest.raises(FairmtError, match="1 female|0 male"):
        balance_genders(f.filter(lambda r: r["gender"] == 1))
    with pytest.raises(FairmtError, match="empty"):
        prepare_gacl_pairs(ds.select([]))


def test_sampler_makes_every_even_batch_balanced():
    genders = [0] * 30 + [1] * 12
    s = GenderBalancedSampler(genders, seed=3)
    order = list(s)
    assert len(order) == len(s) == 24 and len(set(order)) == 24
    for start in range(0, 24, 4):
        assert sorted(genders[i] for i in order[start : start + 4]) == [0, 0, 1, 1]
    s.set_epoch(1)
    assert list(s) != order  # reshuffled each epoch
    with pytest.raises(FairmtError, match="both genders"):
        GenderBalancedSampler([0, 0, 0])


def test_collator_pads_and_requires_gender():
    c = GenderContrastiveCollator(pad_token_id=1)
    feats = [
        {
            "input_ids": [5, 6, 2],
            "attention_mask": [1, 1, 1],
            "labels": [7, 2],
            "cf_input_ids": [5, 9, 2],
            "cf_attention_mask": [1, 1, 1],
            "gender": 0,
        },
        {
            "input_ids": [5, 2],
            "attention_mask": [1, 1],
            "labels": [8, 9, 2],
            "cf_input_ids": [4, 2],
            "cf_attention_mask": [1, 1],
            "gender": 1,
        },
    ]
    b = c(feats)
    assert b["input_ids"].tolist() == [[5, 6, 2], [5, 2, 1]]
    assert b["labels"].tolist() == [[7, 2, -100], [8, 9, 2]]
    assert b["cf_attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert b["gender"].dtype == torch.long and b["gender"].tolist() == [0, 1]
    plain = {k: v for k, v in feats[0].items() if k != "gender"}
    assert "gender" not in c([plain])  # a plain (evaluation) batch
    with pytest.raises(FairmtError, match="'gender' column and others not"):
        c([plain, feats[1]])
    with pytest.raises(FairmtError, match="counterfactual"):
        c([feats[0], {k: v for k, v in feats[1].items() if not k.startswith("cf_")}])


def test_tokenize_gacl_never_hashes_the_encoder():
    """``encode`` is a bound method of a model: datasets' default cache key pickled and hashed every weight of it on
    each call. The key is a fresh one instead, so the encoder's owner is never pickled."""
    ds = prepare_gacl_pairs(
        Dataset.from_dict(
            {
                "src": ["The doctor said he left.", "The nurse said she left."],
                "tgt": ["Der Arzt sagte, er ging.", "Die Pflegerin sagte, sie ging."],
            }
        )
    )

    class Model:  # stands for a TranslationModel: counts the times it is pickled
        pickled = 0

        def __reduce_ex__(self, protocol):
            Model.pickled += 1
            return (Model, ())

        def encode(self, sources, targets=None, max_length=None):
            out = {"input_ids": [[len(s)] for s in sources], "attention_mask": [[1] for _ in sources]}
            return {**out, "labels": [[len(t)] for t in targets]} if targets is not None else out

    model = Model()
    first, second = tokenize_gacl(ds, model.encode), tokenize_gacl(ds, model.encode)
    assert Model.pickled == 0, "datasets pickled the model to hash the tokenising function"
    assert first["input_ids"] == second["input_ids"] == [[len(s)] for s in ds["src"]]
    assert first["cf_input_ids"] == [[len(s)] for s in ds["src_cf"]] and first._fingerprint != second._fingerprint
