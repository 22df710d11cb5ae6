"""CSCL's augmentations: CLM insert / substitute through transformers' fill-mask pipeline on a tiny local masked LM,
and EDA's four copies of which a batch draws one at random."""

from collections import Counter

import pytest
import torch

from fairmt.data.augment.clm import ContextualAugmenter, clm_augment
from fairmt.data.augment.eda import EDA, STOP_WORDS
from fairmt.data.classification import ClassificationCollator
from fairmt.errors import FairmtError

WORDS = (
    "doctor nurse patient ward treated cared surgery hospital quickly kindly morning night visited helped "
    "family she he the a in of and was"
).split()


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    out = tmp_path_factory.mktemp("mlm")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}).save_pretrained(out)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertForMaskedLM(cfg).save_pretrained(out)
    return str(out)


TEXTS = [
    "the doctor treated the patient in the ward and the nurse cared for the family in the morning and she "
    "visited the hospital at night",
    "He helped the nurse quickly",
]


def test_clm_substitute_changes_n_content_words_and_keeps_the_rest(tiny_mlm):
    aug = ContextualAugmenter(tiny_mlm, action="substitute", rate=0.1, seed=0)
    out = aug(TEXTS)
    for src, dst in zip(TEXTS, out):
        a, b = src.split(), dst.split()
        assert len(a) == len(b)
        changed = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        assert len(changed) == aug.count(len(a))  # 25 words at rate 0.1 -> 2; 5 words -> 1 (at least one)
        assert all(a[i].lower() not in STOP_WORDS for i in changed)
        assert all(b[i] in WORDS or b[i].lower() in WORDS or b[i].capitalize() == b[i] for i in changed)
    assert [aug.count(len(t.split())) for t in TEXTS] == [2, 1]
    # the capitalisation of a replaced word is kept, and a seed gives the same draws
    assert ContextualAugmenter(tiny_mlm, action="substitute", rate=0.1, seed=0)(TEXTS) == out
    cap = ContextualAugmenter(tiny_mlm, action="substitute", rate=0.5, seed=1)(["Doctor Nurse Patient"])[0]
    assert all(w[0].isupper() for w in cap.split())


def test_clm_insert_adds_n_masked_lm_words(tiny_mlm):
    aug = ContextualAugmenter(tiny_mlm, action="insert", rate=0.1, seed=0)
    out = aug(TEXTS)
    for src, dst in zip(TEXTS, out):
        a, b = src.split(), dst.split()
        assert len(b) == len(a) + aug.count(len(a))
        extra = Counter(b) - Counter(a)
        assert sum(extra.values()) == aug.count(len(a)) and all(w in WORDS for w in extra)
    assert clm_augment(TEXTS, tiny_mlm, action="insert", rate=0.1, seed=0) == out


def test_clm_bad_options_and_missing_model_are_one_clear_error(tiny_mlm, tmp_path):
    with pytest.raises(FairmtError, match="action must be one of insert, substitute"):
        ContextualAugmenter(tiny_mlm, action="delete")
    with pytest.raises(FairmtError, match=r"rate must be in \(0, 1\)"):
        ContextualAugmenter(tiny_mlm, rate=1.5)
    with pytest.raises(FairmtError, match="cannot load the masked LM") as err:
        ContextualAugmenter(str(tmp_path / "no-such-model"))
    assert "\n" not in str(err.value)


def test_eda_makes_four_copies_and_the_collator_draws_one_per_example_and_batch():
    eda = EDA(alpha=0.1, synonyms={"doctor": ["physician"], "patient": ["invalid"]}, seed=0)
    copies = eda.copies(TEXTS, num_aug=4)
    assert [len(c) for c in copies] == [4, 4] and len(set(copies[0])) > 1
    with pytest.raises(FairmtError, match="num_aug must be"):
        eda.copies(TEXTS, num_aug=0)

    class _Tok:  # records what it was asked to tokenize
        def __init__(self):
            self.calls = []

        def __call__(self, texts, **_):
            self.calls.append(list(texts))
            return {
                "input_ids": torch.zeros(len(texts), 2, dtype=torch.long),
                "attention_mask": torch.ones(len(texts), 2, dtype=torch.long),
            }

    tok = _Tok()
    collator = ClassificationCollator(tok, seed=0)
    rows = [{"text": "x", "text_views": ["a", "b", "c", "d"], "labels": 0, "group": 0} for _ in range(3)]
    drawn = Counter()
    for _ in range(40):
        batch = collator(rows)
        assert {"view_input_ids", "view_attention_mask"} <= set(batch)
        drawn.update(tok.calls[-1])
    assert set(drawn) == {"a", "b", "c", "d"} and min(drawn.values()) > 15  # uniform draws, 120 of them
    again = ClassificationCollator(_Tok(), seed=0)
    again(rows)
    assert again.tokenizer.calls[-1] == tok.calls[1]  # the same seed draws the same first batch
    with pytest.raises(FairmtError, match="empty 'text_views' list"):
        collator([{"text": "x", "text_views": [], "labels": 0, "group": 0}])
