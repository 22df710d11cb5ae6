"""Contextual-LM augmentation (Kobayashi, 2018): a masked language model proposes words to insert or to substitute.

Chi et al. (2022, CSCL, App. B.3) use it as two of their four augmentations ("CLM insert", "CLM substitute") through
nlpaug's ``ContextualWordEmbsAug`` with RoBERTa-base and an augmentation rate of 0.1. Here the proposals come from
transformers' ``fill-mask`` pipeline, so any masked LM works (``roberta-base`` as the paper, ``bert-base-uncased``,
a local folder):

* ``substitute``: ``n`` randomly chosen words (not stop words) are, one after another, replaced by the mask token and
  the masked LM's ``top_k`` proposals for that position are drawn from uniformly (the original word, sub-word pieces
  and non-words excluded); the capitalisation of the replaced word is kept;
* ``insert``: ``n`` times, the mask token is inserted at a random position and filled the same way.

``n = min(aug_max, max(1, int(rate·len(words))))`` on whitespace words — nlpaug's count (``aug_p``, ``aug_min=1``,
``aug_max=10``), with its default of five candidates (``top_k=5``). Deterministic for a given ``seed`` (and model).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from fairmt.data.augment.eda import STOP_WORDS
from fairmt.errors import FairmtError

CLM_ACTIONS = ("insert", "substitute")
_WORD = re.compile(r"^[A-Za-z][A-Za-z'-]*$")


class ContextualAugmenter:
    """Insert or substitute words with a masked LM's proposals; see the module docstring.

    Args:
        model: a ``fill-mask`` pipeline, or a masked-LM name or folder (loaded with its tokenizer).
        action: ``insert`` or ``substitute``.
        rate: fraction of the words changed (CSCL: 0.1).
        top_k: proposals drawn from at each position (nlpaug's default 5).
        aug_max: at most this many changes per text (nlpaug's 10).
        seed: seed of the internal ``random.Random``.
        batch_size: texts per fill-mask call.

    Example::

        >>> aug = ContextualAugmenter("roberta-base", action="substitute", rate=0.1, seed=0)   # doctest: +SKIP
        >>> aug(["the doctor treated the patient in the ward"])                             # doctest: +SKIP
    """

    def __init__(
        self,
        model: Any,
        action: str = "substitute",
        rate: float = 0.1,
        top_k: int = 5,
        aug_max: int = 10,
        seed: int = 0,
        batch_size: int = 32,
        device: Any = None,
    ) -> None:
        if action not in CLM_ACTIONS:
            raise FairmtError(f"CLM augmentation action must be one of {', '.join(CLM_ACTIONS)}, got {action!r}")
        if not 0.0 < rate < 1.0:
            raise FairmtError(f"CLM augmentation rate must be in (0, 1), got {rate}")
        if top_k < 1 or aug_max < 1:
            raise FairmtError(f"top_k and aug_max must be ≥ 1, got {top_k} and {aug_max}")
        self.fill = model if callable(model) and hasattr(model, "tokenizer") else _fill_mask(model, device)
        mask = getattr(self.fill.tokenizer, "mask_token", None)
        if not mask:
            raise FairmtError(f"the tokenizer of {model!r} has no mask token: CLM augmentation needs a masked LM")
        self.mask = mask
        self.action = action
        self.rate = rate
        self.top_k = top_k
        self.aug_max = aug_max
        self.batch_size = batch_size
        self.rng = random.Random(seed)

    def count(self, n_words: int) -> int:
        """Number of changes for a text of ``n_words`` words."""
        return min(self.aug_max, max(1, int(self.rate * n_words)))

    def _proposals(self, masked: list[str], exclude: list[str | None]) -> list[list[str]]:
        outs = self.fill(masked, top_k=self.top_k * 4, batch_size=self.batch_size)
        if masked and isinstance(outs[0], dict):  # a single input gives a flat list
            outs = [outs]
        result = []
        for cands, old in zip(outs, exclude):
            words = []
            for c in cands:
                w = str(c.get("token_str", "")).strip()
                if not _WORD.match(w) or (old is not None and w.lower() == old.lower()) or w in words:
                    continue
                words.append(w)
                if len(words) == self.top_k:
                    break
            result.append(words)
        return result

    def __call__(self, texts: Sequence[str]) -> list[str]:
        """One augmented copy of each text."""
        docs = [t.split() for t in texts]
        plans: list[list[int]] = []
        for words in docs:
            if self.action == "substitute":
                pool = [i for i, w in enumerate(words) if _WORD.match(w) and w.lower() not in STOP_WORDS]
                self.rng.shuffle(pool)
                plans.append(pool[: self.count(len(words))] if words else [])
            else:
                plans.append([-1] * (self.count(len(words)) if words else 0))
        for step in range(max((len(p) for p in plans), default=0)):
            todo = [i for i, p in enumerate(plans) if step < len(p)]
            masked, positions, originals = [], [], []
            for i in todo:
                words = list(docs[i])
                if self.action == "substitute":
                    pos = plans[i][step]
                    originals.append(words[pos])
                    words[pos] = self.mask
                else:
                    pos = self.rng.randint(0, len(words))
                    originals.append(None)
                    words.insert(pos, self.mask)
                positions.append(pos)
                masked.append(" ".join(words))
            for i, pos, old, cands in zip(todo, positions, originals, self._proposals(masked, originals)):
                if not cands:
                    continue  # the model proposed no usable word here: the text stays as it is at this position
                new = self.rng.choice(cands)
                if old is not None:
                    docs[i][pos] = _align_case(old, new)
                else:
                    docs[i].insert(pos, new)
        return [" ".join(words) for words in docs]


def _align_case(old: str, new: str) -> str:
    if old.isupper() and len(old) > 1:
        return new.upper()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _fill_mask(name_or_path: str, device: Any = None):
    from transformers import pipeline

    try:
        return pipeline("fill-mask", model=name_or_path, tokenizer=name_or_path, device=device)
    except (OSError, ValueError) as err:
        raise FairmtError(
            f"cannot load the masked LM {name_or_path!r} for CLM augmentation ({str(err).splitlines()[0]}); give a "
            "local folder or a Hub name reachable from here (CSCL used roberta-base)"
        ) from None


def clm_augment(
    texts: Sequence[str], model: Any, action: str = "substitute", rate: float = 0.1, seed: int = 0, **kwargs: Any
) -> list[str]:
    """One CLM-insert or CLM-substitute view of every text (see :class:`ContextualAugmenter`)."""
    return ContextualAugmenter(model, action=action, rate=rate, seed=seed, **kwargs)(texts)
