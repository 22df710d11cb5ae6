"""A tiny randomly initialised BERT with a word-level tokenizer, and CCD tuples, written like Hub folders/files."""

from pathlib import Path

import torch

SUBJECTS = ["he", "she", "his father", "her mother", "the man", "the woman", "my brother", "my sister"]
PREDICATES = [
    "is a doctor",
    "works at the bank",
    "cooks dinner",
    "writes code",
    "drives a truck",
    "teaches children",
    "fixes cars",
    "likes to dance",
    "runs the company",
    "cleans the house",
]


def ccd_tuples() -> list[dict]:
    from fairmt.data.augment.cda import cda_augment

    rows, _ = cda_augment([f"{s} {p} ." for s in SUBJECTS for p in PREDICATES])
    return rows


def write_tiny_bert(out: Path, texts: list[str]) -> Path:
    """A 2-layer BERT (hidden 32, no dropout) whose vocabulary holds every lower-cased word of ``texts``."""
    from transformers import BertConfig, BertModel, BertTokenizer

    words = sorted({w for t in texts for w in t.lower().split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}).save_pretrained(out)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    BertModel(cfg).save_pretrained(out)
    return out


def write_ccd_inputs(work: Path) -> None:
    """``work/bert`` (tiny BERT) and ``work/tuples.jsonl`` (CDA tuples of the template sentences)."""
    from fairmt.data.augment.tuples import write_tuples

    rows = ccd_tuples()
    write_tuples(work / "tuples.jsonl", rows)
    write_tiny_bert(work / "bert", [r[k] for r in rows for k in ("neutral", "male", "female")])
