"""The classification family's fixed encoders: a frozen sentence encoder's embeddings (cached on disk by content), and
a trained encoder's representations of every split (the head stage's features)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError


def _model_path(name: str) -> str:
    from fairmt.hub import require_model, resolve_model_ref

    return require_model(resolve_model_ref(name), "encoder")


def embed_texts(
    texts: list[str],
    name_or_path: str,
    max_length: int = 128,
    batch_size: int = 32,
    cache_dir: str | None = None,
    pooling: str = "mean",
    normalize: bool = True,
) -> np.ndarray:
    """Fixed sentence embeddings of a frozen encoder, cached on disk by content: ``mean`` — the masked mean of the
    last hidden state (the all-MiniLM-L6-v2 recipe), ``cls`` — the ``[CLS]`` state (the BERT features of Ravfogel et
    al. and Shen et al.); L2-normalised when ``normalize``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from fairmt.models.pooling import pool

    path = _model_path(name_or_path)
    key = hashlib.sha256(json.dumps([path, max_length, pooling, normalize, texts]).encode()).hexdigest()[:16]
    cache = Path(cache_dir) / f"emb-{key}.npy" if cache_dir else None
    if cache is not None and cache.exists():
        return load_embedding_cache(cache, len(texts))
    from fairmt.hub import loading

    with loading(path, "encoder"):
        tok = AutoTokenizer.from_pretrained(path)
        enc = AutoModel.from_pretrained(path).eval()
    # batches of texts of similar length (longest first): each is padded to its own longest, so the encoder runs on
    # about the tokens the texts have (the 280 biographies: 22k tokens instead of 36k in text order), and the rows
    # go back to the texts' order
    encoded = tok(texts, truncation=True, max_length=max_length) if texts else {"input_ids": []}
    order = sorted(range(len(texts)), key=lambda i: -len(encoded["input_ids"][i]))
    parts = []
    with torch.no_grad():
        for s in range(0, len(order), batch_size):
            rows = order[s : s + batch_size]
            b = tok.pad({k: [v[i] for i in rows] for k, v in encoded.items()}, return_tensors="pt")
            h = pool(enc(**b).last_hidden_state, b["attention_mask"], pooling)
            parts.append((torch.nn.functional.normalize(h, dim=-1) if normalize else h).numpy())
    in_order = np.concatenate(parts).astype(np.float32)
    X = np.empty_like(in_order)
    X[order] = in_order
    if cache is not None:  # through a temporary file and a rename: two runs sharing the cache never tear it
        cache.parent.mkdir(parents=True, exist_ok=True)
        from fairmt.outputs import writing

        with writing(cache, what="the embedding cache", binary=True) as fh:
            np.save(fh, X)
    return X


def load_embedding_cache(cache: Path, n: int) -> np.ndarray:
    """A cached embedding matrix of ``n`` rows; a damaged file is named, with what to do."""
    try:
        X = np.load(cache, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise FairmtError(
            f"{cache}: damaged embedding cache ({' '.join(str(err).split())[:160]}); delete it and run "
            "again (the embeddings are computed again)"
        ) from None
    if X.ndim != 2 or X.shape[0] != n or not np.isfinite(X).all():
        raise FairmtError(
            f"{cache}: damaged embedding cache (shape {X.shape}{', non-finite values' if X.ndim == 2 and X.shape[0] == n else ''}, "
            f"expected {n} finite rows); delete it and run again"
        )
    return X


def _split_features(model, datasets, collator, batch_size: int) -> dict[str, np.ndarray]:
    """A fixed encoder's representations of every split, computed once in eval mode (``encoder_features``)."""
    from fairmt.trainers.fair_contrastive import encoder_features

    device = "cuda" if _cuda() else "cpu"
    model.to(device)
    out = {}
    for name, ds in datasets.items():
        batches = (
            collator([ds[j] for j in range(i, min(i + batch_size, len(ds)))]) for i in range(0, len(ds), batch_size)
        )
        out[name] = encoder_features(model, batches, device=device)
    return out


def _cached_feature_datasets(model, datasets, collator, kwargs) -> dict[str, Any]:
    """The fixed encoder's representations of every split as feature data sets (the second stage's input)."""
    from datasets import Dataset

    from fairmt.data.classification import with_array_features

    feats = _split_features(model, datasets, collator, int(kwargs["per_device_eval_batch_size"]))
    return {
        name: with_array_features(
            Dataset.from_dict({"features": feats[name], "labels": ds["labels"], "group": ds["group"]})
        )
        for name, ds in datasets.items()
    }


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
