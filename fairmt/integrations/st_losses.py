"""CCD as a sentence-transformers loss that wraps the user's own loss: the debiasing term beside any training.

:class:`CCDLoss` is a ``torch.nn.Module`` loss for ``SentenceTransformerTrainer(loss=...)`` (the alternative to the
Trainer swap, :class:`fairmt.trainers.ccd.CCDTrainer`, which trains on the tuples alone). Each step it computes the
user's loss on the user's batch, draws the next ``tuples_per_step`` CCD tuples (a neutral text and one text per
group), embeds them with the model being trained and the neutral texts with a frozen copy of the model as it was
when the loss was made, and adds the CCD loss of "LLM-Assisted Content Conditional Debiasing for Fair Text
Embedding" (Li et al., 2024, Eqs. 2-4), computed by :func:`fairmt.losses.ccd.ccd_loss` (one implementation)::

    L      = L_user + λ · L_CCD
    L_CCD  = L_bias + β · L_rep
    L_bias = Σ_i Σ_{j≠i} | d(f(S^{a_i}), f(S^n)) − d(f(S^{a_j}), f(S^n)) |,   d(a, b) = exp(−‖a − b‖² / 2ρ²)
    L_rep  = ‖ f(S^n) − f_orig(S^n) ‖

(batch means; ``λ`` = ``weight``). ρ is fixed when the loss is made, from the frozen model's group-to-neutral
distances over the tuples (:func:`fairmt.losses.ccd.estimate_rho`, ``rho_estimator``: ``"median"`` by default —
the paper's ``"variance"`` makes the kernel flat on a unit-norm encoder such as all-MiniLM-L6-v2, see
:mod:`fairmt.losses.ccd`), or given as ``rho=``. The forward returns a dict of loss components (the user's loss
under ``base``, or its own components, and the weighted ``ccd_bias`` and ``ccd_rep``): the Trainer sums them and
logs each.

Example::

    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from fairmt.integrations import CCDLoss

    model = SentenceTransformer(path)
    loss = CCDLoss(model, MultipleNegativesRankingLoss(model), tuples="train_tuples.jsonl", weight=1.0)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=pairs, loss=loss)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from fairmt.errors import FairmtError
from fairmt.losses.ccd import RHO_ESTIMATORS, ccd_loss, estimate_rho, tuple_distances


def _read_tuples(tuples: Any, groups: Sequence[str] | None) -> tuple[list[dict[str, str]], list[str]]:
    """CCD tuples from a JSONL path (the format of ``fairmt eval embeddings --cced-tuples``), a list of dicts or a
    ``datasets.Dataset`` with a ``neutral`` column and one column per group."""
    from fairmt.eval.embedding.cced import load_tuples

    if isinstance(tuples, (str, Path)):
        rows, names = load_tuples(tuples, groups)
        return [{"neutral": t.neutral, **{g: t.groups[g] for g in names}} for t in rows], list(names)
    rows = [dict(r) for r in tuples]
    if not rows:
        raise FairmtError("CCDLoss: no tuples given: the CCD term needs (neutral, one text per group) tuples")
    names = list(groups) if groups else [k for k, v in rows[0].items() if k != "neutral" and isinstance(v, str)]
    if len(names) < 2:
        raise FairmtError(
            f"CCDLoss: a tuple needs a 'neutral' text and at least two groups, got keys {sorted(rows[0])}"
        )
    for i, r in enumerate(rows):
        bad = [k for k in ("neutral", *names) if not isinstance(r.get(k), str) or not r[k].strip()]
        if bad:
            raise FairmtError(f"CCDLoss: tuple {i} has no text for {bad}")
    return rows, names


class CCDLoss(torch.nn.Module):
    """The user's sentence-transformers loss plus ``weight`` × the CCD loss on tuples (see the module docstring).

    Args:
        model: the ``SentenceTransformer`` being trained (the one the wrapped loss was made with).
        loss: the user's own loss (e.g. ``MultipleNegativesRankingLoss(model)``); ``None`` trains on CCD alone.
        tuples: CCD tuples: a JSONL path, a list of ``{"neutral", "<group>", ...}`` dicts or a ``Dataset``.
        groups: the group keys, in order (default: every string key of the first tuple besides ``neutral``).
        weight: λ, the weight of the CCD term. beta: β, the weight of L_rep within it (1, the paper's).
        rho: the kernel bandwidth; default estimated from the frozen model (``rho_estimator``: variance, std or
            median, the default; see :mod:`fairmt.losses.ccd`).
        tuples_per_step: tuples drawn per step (in a fixed, seeded order, cycling through them).
        seed: the order of the tuples.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        loss: torch.nn.Module | None,
        tuples: Any,
        *,
        groups: Sequence[str] | None = None,
        weight: float = 1.0,
        beta: float = 1.0,
        rho: float | None = None,
        rho_estimator: str = "median",
        tuples_per_step: int = 8,
        seed: int = 0,
    ):
        super().__init__()
        if not (float(weight) > 0):
            raise FairmtError(f"CCDLoss: weight must be > 0, got {weight}")
        if not (float(beta) >= 0):
            raise FairmtError(f"CCDLoss: beta must be ≥ 0, got {beta}")
        if rho_estimator not in RHO_ESTIMATORS:
            raise FairmtError(f"CCDLoss: unknown rho_estimator {rho_estimator!r}; choose one of {RHO_ESTIMATORS}")
        if int(tuples_per_step) < 1:
            raise FairmtError(f"CCDLoss: tuples_per_step must be ≥ 1, got {tuples_per_step}")
        if not hasattr(model, "tokenize") and not hasattr(model, "preprocess"):
            raise FairmtError(f"CCDLoss: model must be a SentenceTransformer, got {type(model).__name__}")
        self.model, self.loss = model, loss
        self.tuples, self.groups = _read_tuples(tuples, groups)
        self.weight, self.beta = float(weight), float(beta)
        self.tuples_per_step = min(int(tuples_per_step), len(self.tuples))
        self._order = torch.randperm(len(self.tuples), generator=torch.Generator().manual_seed(int(seed))).tolist()
        self._next = 0
        # f_orig: the model as it is now, frozen (kept out of this module's parameters and state dict)
        self.__dict__["reference"] = copy.deepcopy(model).eval().requires_grad_(False)
        self.rho = float(rho) if rho is not None else self._estimate_rho(rho_estimator)
        if not self.rho > 0:
            raise FairmtError(f"CCDLoss: rho must be positive, got {self.rho}")
        self.rho_estimator = None if rho is not None else rho_estimator

    # ------------------------------------------------------------------ helpers
    def _embed(self, model: torch.nn.Module, texts: list[str]) -> torch.Tensor:
        from fairmt.trainers.ccd import st_features

        device = next(self.model.parameters()).device
        feats = {k: v.to(device) for k, v in st_features(self.model, texts).items()}
        return model(feats)["sentence_embedding"]

    def _batch(self, rows: list[dict[str, str]], model: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
        texts = [r["neutral"] for r in rows] + [r[g] for g in self.groups for r in rows]
        emb = self._embed(model, texts).view(1 + len(self.groups), len(rows), -1)
        return emb[0], emb[1:].transpose(0, 1)  # (B, d), (B, G, d)

    @torch.no_grad()
    def _estimate_rho(self, estimator: str) -> float:
        dists = []
        for start in range(0, len(self.tuples), 32):
            neutral, groups = self._batch(self.tuples[start : start + 32], self.reference)
            dists.append(tuple_distances(neutral, groups).float().cpu())
        return estimate_rho(torch.cat(dists).flatten(), estimator)

    def _draw(self) -> list[dict[str, str]]:
        rows = []
        for _ in range(self.tuples_per_step):
            rows.append(self.tuples[self._order[self._next]])
            self._next = (self._next + 1) % len(self._order)
        return rows

    # ------------------------------------------------------------------ the loss
    def forward(
        self, sentence_features: Sequence[Mapping[str, torch.Tensor]] | None = None, labels: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """The user's loss on its batch (``base``, or its own components) and the weighted CCD terms on the next
        tuples (``ccd_bias`` = λ·L_bias, ``ccd_rep`` = λ·β·L_rep); their sum is the loss trained."""
        out: dict[str, torch.Tensor] = {}
        if self.loss is not None:
            base = self.loss(sentence_features, labels)
            out.update(base if isinstance(base, Mapping) else {"base": base})
        ref = self.reference
        device = next(self.model.parameters()).device
        if next(ref.parameters()).device != device:
            ref.to(device)
        rows = self._draw()
        neutral, groups = self._batch(rows, self.model)
        with torch.no_grad():
            neutral_orig = self._embed(ref, [r["neutral"] for r in rows])
        terms = ccd_loss(neutral, groups, neutral_orig, rho=self.rho, beta=self.beta)
        out["ccd_bias"] = self.weight * terms.bias
        out["ccd_rep"] = self.weight * self.beta * terms.rep
        return out

    def get_config_dict(self) -> dict[str, Any]:
        """What sentence-transformers writes into the model card's training section."""
        return {
            "loss": type(self.loss).__name__ if self.loss is not None else None,
            "weight": self.weight,
            "beta": self.beta,
            "rho": self.rho,
            "rho_estimator": self.rho_estimator,
            "groups": self.groups,
            "tuples": len(self.tuples),
            "tuples_per_step": self.tuples_per_step,
        }

    @property
    def citation(self) -> str:
        from fairmt.citations import bibtex

        return bibtex("ccd2024")


__all__ = ["CCDLoss"]
