"""Thin runners that turn a model into what the embedding-bias evaluators consume.

* :class:`EmbeddingRunner` — sentence embeddings (SEAT, CCED, Bias-IR), batched and cached per text, with a
  selectable pooling:

  - ``"mean"``  — mean of the last hidden states over all tokens of the input, special tokens included (what
    bias-bench's SEAT runner does, one sentence at a time; here batched with the attention mask, same result);
  - ``"first"`` — the last hidden state of the first input token ([CLS] / <s>), as sent-bias does for BERT;
  - ``"model"`` — the model's own sentence-transformers pipeline (its pooling and normalisation), for a folder
    with ``modules.json``;
  - ``"auto"``  — ``"model"`` for a sentence-transformers folder, ``"mean"`` otherwise;
  - ``"cls"`` (= ``"first"``), ``"max"``, ``"pooler"`` — as :attr:`fairmt.trainers.ccd.CCDConfig.pooling`: the
    names are one set (:data:`fairmt.models.pooling_names.SENTENCE_POOLINGS`).

* :class:`MaskedLMRunner` — masked-token log-probabilities for CrowS-Pairs and masked-word probabilities for
  StereoSet. It refuses a checkpoint that has no trained masked-LM head (e.g. a bare encoder such as
  all-MiniLM-L6-v2), instead of silently scoring with a randomly initialised head.

The evaluators never load models; they receive these runners (or plain functions / arrays).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.models.encoders import is_sentence_transformers_dir  # noqa: F401  (also imported from here)
from fairmt.models.pooling_names import SENTENCE_POOLINGS as POOLINGS  # one set with CCDConfig.pooling


def _check_model_dir(path: str | Path) -> Path:
    """A local folder, a ``pkg:`` / alias reference, or a Hub id that is cached or reachable
    (:func:`fairmt.hub.resolve_model_ref`, :func:`~fairmt.hub.require_model`)."""
    from fairmt.hub import require_model, resolve_model_ref

    return Path(require_model(resolve_model_ref(path), "encoder"))


def loading(path, what: str):
    from fairmt.hub import loading as _loading

    return _loading(path, what)


class EmbeddingRunner:
    """Sentence embeddings from a local model folder (or an already loaded model), with a per-text cache."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        pooling: str = "mean",
        batch_size: int = 32,
        max_length: int = 512,
        device: str = "cpu",
        progress: bool = False,
    ):
        if pooling not in POOLINGS or pooling == "auto":
            raise FairmtError(
                f"unknown pooling {pooling!r}; use one of {', '.join(p for p in POOLINGS if p != 'auto')}"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.progress = progress
        self._cache: dict[str, np.ndarray] = {}

    @classmethod
    def from_path(cls, path: str | Path, pooling: str = "auto", **kwargs: Any) -> EmbeddingRunner:
        """Load the model at ``path`` for ``pooling`` (see the module docstring)."""
        p = _check_model_dir(path)
        if pooling not in POOLINGS:
            raise FairmtError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
        st = is_sentence_transformers_dir(p)
        if pooling == "auto":
            pooling = "model" if st else "mean"
        device = kwargs.pop("device", None)  # None: where the model loads (sentence-transformers: its own choice)
        if pooling == "model":
            if not st:
                raise FairmtError(
                    f"--pooling model needs a sentence-transformers folder (with modules.json); {p} has none: "
                    "use --pooling mean or first"
                )
            from sentence_transformers import SentenceTransformer

            with loading(p, "encoder"):
                st_model = SentenceTransformer(str(p), device=device)
                return cls(st_model, None, "model", device=str(st_model.device), **kwargs)
        from transformers import AutoModel, AutoTokenizer

        with loading(p, "encoder"):
            model = AutoModel.from_pretrained(str(p))
            model = (model.to(device) if device else model).eval()
            return cls(model, AutoTokenizer.from_pretrained(str(p)), pooling, device=str(model.device), **kwargs)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        if self.pooling == "model":
            return np.asarray(
                self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
            )
        import torch

        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        with torch.no_grad():
            out = self.model(**enc)
        from fairmt.models.pooling import pool

        pooled = pool(out.last_hidden_state, enc["attention_mask"], self.pooling, getattr(out, "pooler_output", None))
        return pooled.float().cpu().numpy()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings (n, dim) of ``texts``, in order; texts already seen come from the cache."""
        # longest first (as sentence-transformers does): batches of similar length waste less padding
        todo = sorted((t for t in dict.fromkeys(texts) if t not in self._cache), key=len, reverse=True)
        batches = range(0, len(todo), self.batch_size)
        if self.progress and len(todo) > self.batch_size:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc=f"encoding ({self.pooling} pooling)")
        for i in batches:
            chunk = todo[i : i + self.batch_size]
            for t, v in zip(chunk, self._encode_batch(chunk)):
                self._cache[t] = v
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    __call__ = encode


class NotMaskedLMError(FairmtError):
    """The model has no trained masked-LM head (or no mask token): CrowS-Pairs and StereoSet do not apply to it."""


class MaskedLMRunner:
    """Masked-LM scores for CrowS-Pairs (:class:`~fairmt.eval.embedding.crows.MaskedLMScorer`) and StereoSet."""

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 64, device: str = "cpu"):
        if getattr(tokenizer, "mask_token_id", None) is None:
            raise NotMaskedLMError(
                "the tokenizer has no mask token: CrowS-Pairs and StereoSet need a masked language model"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.device = device

    @classmethod
    def from_path(cls, path: str | Path, **kwargs: Any) -> MaskedLMRunner:
        """Load a masked LM; a clear error when the checkpoint has no trained masked-LM head."""
        p = _check_model_dir(path)
        from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

        with loading(p, "masked language model"):
            config = AutoConfig.from_pretrained(str(p))
        archs = config.architectures or []
        if not any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in archs):
            raise NotMaskedLMError(
                f"{p} is not a masked language model (architectures {archs}); CrowS-Pairs and StereoSet score "
                "masked-token probabilities: give a *ForMaskedLM checkpoint, or run only seat,cced,bias-ir"
            )
        with loading(p, "masked language model"):
            model, info = AutoModelForMaskedLM.from_pretrained(str(p), output_loading_info=True)
        missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k]
        if missing:
            raise NotMaskedLMError(
                f"{p}: the masked-LM head is missing from the checkpoint ({missing[:3]}...); it would be random"
            )
        with loading(p, "masked language model's tokenizer"):
            tok = AutoTokenizer.from_pretrained(str(p))
        device = kwargs.pop("device", None)  # None: where the model loads
        model = (model.to(device) if device else model).eval()
        return cls(model, tok, device=str(model.device), **kwargs)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with special tokens."""
        return list(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def _log_softmax_at(self, batch_ids: list[list[int]], positions: list[int]) -> Any:
        import torch

        ids = torch.tensor(batch_ids, device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        rows = torch.arange(len(positions), device=self.device)
        return torch.log_softmax(logits[rows, torch.tensor(positions, device=self.device)].float(), dim=-1)

    def masked_log_probs(self, token_ids: Sequence[int], positions: Sequence[int]) -> list[float]:
        """log P(token_ids[p] | token_ids with p masked), one forward row per position (one mask per row)."""
        token_ids = list(token_ids)
        out: list[float] = []
        mask_id = self.tokenizer.mask_token_id
        for i in range(0, len(positions), self.batch_size):
            pos = list(positions[i : i + self.batch_size])
            batch = []
            for p in pos:
                row = list(token_ids)
                row[p] = mask_id
                batch.append(row)
            lp = self._log_softmax_at(batch, pos)
            out.extend(lp[range(len(pos)), [token_ids[p] for p in pos]].tolist())
        return out

    def fill_probs(self, context: str, word: str) -> list[float]:
        """StereoSet: probability of each sub-token of ``word`` at a single mask put in place of ``BLANK``.

        As the official ``IntrasentenceLoader``: sub-token k is predicted with sub-tokens < k decoded and written
        in front of the mask. One pair of :meth:`fill_probs_many`.
        """
        return self.fill_probs_many([(context, word)])[0]

    def fill_probs_many(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        """:meth:`fill_probs` of each ``(context, word)`` pair, in order, the rows of all pairs batched together.

        Rows (one per sub-token) are sorted by length and run ``batch_size`` at a time, so that a whole dev file
        takes a few hundred forward passes instead of one per sentence; a pair that occurs twice is run once (the
        same word in two sentences of one example gets the same score, as a tie, not two nearly equal floats).
        """
        import torch

        tok = self.tokenizer
        unique = list(dict.fromkeys(pairs))
        rows: list[tuple[str, int, int, int]] = []  # (text, target piece, pair index, piece index)
        n_pieces = []
        for i, (context, word) in enumerate(unique):
            if "BLANK" not in context:
                raise FairmtError(f"StereoSet context {context!r} has no BLANK")
            pieces = tok.encode(word, add_special_tokens=False)
            n_pieces.append(len(pieces))
            for k, piece in enumerate(pieces):
                prefix = tok.decode(pieces[:k])
                rows.append((context.replace("BLANK", f"{prefix}{tok.mask_token}"), piece, i, k))
        got: list[list[float]] = [[0.0] * n for n in n_pieces]
        ids = tok([r[0] for r in rows], add_special_tokens=True)["input_ids"] if rows else []
        order = sorted(range(len(rows)), key=lambda j: len(ids[j]))
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        for b in range(0, len(order), self.batch_size):
            chunk = order[b : b + self.batch_size]
            width = max(len(ids[j]) for j in chunk)
            input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            for r, j in enumerate(chunk):
                input_ids[r, : len(ids[j])] = torch.tensor(ids[j])
                attention[r, : len(ids[j])] = 1
            is_mask = (input_ids == tok.mask_token_id) & attention.bool()
            if not bool(is_mask.any(1).all()):
                bad = next(rows[j][0] for r, j in enumerate(chunk) if not bool(is_mask[r].any()))
                raise FairmtError(f"StereoSet context {bad!r} lost its mask when tokenized")
            # A context with BLANK twice (one in the dev set) gets the mask at both places, as the official loader's
            # context.replace("BLANK", ...); the official scorer (batch size 1) then reads the FIRST mask's row.
            first = is_mask.int().argmax(1)
            with torch.no_grad():
                logits = self.model(
                    input_ids=input_ids.to(self.device), attention_mask=attention.to(self.device)
                ).logits
            at = torch.arange(len(chunk), device=logits.device)
            probs = logits[at, first.to(logits.device)].float().softmax(-1)
            targets = torch.tensor([rows[j][1] for j in chunk], device=probs.device)
            for r, p in zip(chunk, probs[at, targets].tolist()):
                got[rows[r][2]][rows[r][3]] = p
        by_pair = dict(zip(unique, got))
        return [list(by_pair[p]) for p in pairs]


__all__ = ["EmbeddingRunner", "MaskedLMRunner", "POOLINGS", "is_sentence_transformers_dir"]
