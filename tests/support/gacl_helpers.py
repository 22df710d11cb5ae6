"""Shared builders for the GACL trainer tests (tiny model + the demo corpus)."""

from __future__ import annotations

from datasets import Dataset

from fairmt.data.demo_corpus import demo_splits
from fairmt.data.gacl import GenderContrastiveCollator, prepare_gacl_pairs, tokenize_gacl
from fairmt.models import load_translation_model
from fairmt.models.tiny import build_tiny_translation_model, train_tiny_translation_model


def tiny_model_dir(path, arch="m2m100", dropout=0.1):
    _, balanced, heldout = demo_splits()
    return build_tiny_translation_model(
        path,
        [(p.en, p.de) for p in balanced + heldout],
        arch=arch,
        d_model=32,
        ffn_dim=64,
        encoder_layers=2,
        decoder_layers=1,
        dropout=dropout,
        vocab_size=300,
    )


def gacl_dataset(tm, n=None):
    _, balanced, _ = demo_splits()
    pairs = balanced if n is None else balanced[:n]
    ds = Dataset.from_dict({"src": [p.en for p in pairs], "tgt": [p.de for p in pairs]})
    return tokenize_gacl(prepare_gacl_pairs(ds, seed=0), tm.encode, max_length=48)


def load(path):
    return load_translation_model(str(path), "en", "de")


def collator(tm):
    return GenderContrastiveCollator(tm.tokenizer.pad_token_id)


def trained_tiny_model_dir(path, steps=300):
    """A tiny en→de model fine-tuned for a few seconds on the demo corpus (``fairmt.models.tiny``'s plain MT loop,
    the one ``fairmt demo`` uses), so that its greedy translations differ from sentence to sentence (a random one says
    the same thing for every input; 300 steps give 8 different translations of the first 10 held-out sentences)."""
    model_dir = tiny_model_dir(path)
    _, balanced, _ = demo_splits()
    return train_tiny_translation_model(model_dir, [(p.en, p.de) for p in balanced], steps=steps)
