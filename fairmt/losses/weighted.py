"""Instance-weighted cross-entropy for balanced training (fairlib's ``BT: Reweighting``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

WEIGHT_COLUMN = "instance_weight"


def weighted_cross_entropy(
    logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """``mean_i(w_i · CE(logits_i, y_i))`` — the batch mean of the weighted per-example losses, as fairlib
    (``torch.mean(loss * instance_weights)``; not ``Σ w·CE / Σ w``); plain mean CE when ``weights`` is None.

    Example:
        >>> logits = torch.tensor([[2.0, 0.0], [0.0, 2.0]]); y = torch.tensor([0, 0])
        >>> float(weighted_cross_entropy(logits, y, torch.tensor([1.0, 0.0])))  # only the first row counts, /2
        0.0634...
    """
    if weights is None:
        return F.cross_entropy(logits.float(), labels.long())
    per = F.cross_entropy(logits.float(), labels.long(), reduction="none")
    return (per * weights.to(per.dtype)).mean()
