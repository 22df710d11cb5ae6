"""The one pooling function the trainers and runners share, against per-row loops."""

import pytest
import torch

from fairmt.errors import FairmtError
from fairmt.models.pooling import pool


def test_pooling_modes_match_loops():
    torch.manual_seed(0)
    h = torch.randn(3, 4, 5)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    mean = torch.stack([h[i, : int(mask[i].sum())].mean(0) for i in range(3)])
    mx = torch.stack([h[i, : int(mask[i].sum())].max(0).values for i in range(3)])
    assert torch.allclose(pool(h, mask, "mean"), mean)
    assert torch.allclose(pool(h, mask, "max"), mx)
    assert torch.equal(pool(h, mask, "cls"), h[:, 0]) and torch.equal(pool(h, mask, "first"), h[:, 0])
    assert torch.allclose(pool(h, None, "mean"), h.mean(1))
    assert torch.equal(pool(h[:, 0], mask, "mean"), h[:, 0])  # already one vector per row
    out = torch.randn(3, 5)
    assert torch.equal(pool(h, mask, "pooler", pooler_output=out), out)
    with pytest.raises(FairmtError, match="no pooler_output"):
        pool(h, mask, "pooler")
    with pytest.raises(FairmtError, match="unknown pooling"):
        pool(h, mask, "median")
