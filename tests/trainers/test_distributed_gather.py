"""A 2-process gloo run of GACL with cross-process candidates gives the loss and gradients of 1 process on the
concatenated batch."""

import pytest
import torch

from fairmt.losses import gacl_loss

D_IN, D = 6, 5


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, D_IN, generator=g)
    x_cf = torch.randn(8, D_IN, generator=g)
    noise = torch.randn(8, D, generator=g) * 0.1
    genders = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1])
    w = torch.randn(D, D_IN, generator=g)
    return x, x_cf, noise, genders, w


def _loss(w, x, x_cf, noise, genders, gather):
    h = x @ w.T
    return gacl_loss(h, genders, h_dropout=h + noise, h_counterfactual=x_cf @ w.T, temperature=0.5, gather=gather)


# one job of the test run's torchrun pool (tests/support/torchrun_pool.py: two gloo processes, torch imported once per
# pytest worker) rather than two fresh interpreters of its own
_RANK_JOB = """
import os
import sys

import torch
import torch.distributed as dist

from ddp_helpers import teardown
from fairmt.distributed import gather_with_grad
from test_distributed_gather import _data, _loss

if not dist.is_initialized():  # the pool's first job
    dist.init_process_group("gloo")
rank = dist.get_rank()
x, x_cf, noise, genders, w = _data()
w = w.clone().requires_grad_(True)
sl = slice(4 * rank, 4 * rank + 4)
loss = _loss(w, x[sl], x_cf[sl], noise[sl], genders[sl], gather=True)
loss.backward()
# DDP averages gradients over processes; do the same by hand.
grad = w.grad.clone()
dist.all_reduce(grad)
grad /= 2
lt = loss.detach().clone()
dist.all_reduce(lt)
# SupCon-style usage of the gather too: features gathered, labels local
f = gather_with_grad(x[sl] @ w.detach().T)
torch.save({"world": dist.get_world_size(), "loss": float(lt / 2), "grad": grad, "shape": tuple(f.shape)},
           os.path.join(sys.argv[1], f"rank{rank}.pt"))
teardown()
"""


@pytest.mark.slow
def test_two_processes_match_one_process_on_concatenated_batch(tmp_path, torchrun_pool):
    x, x_cf, noise, genders, w = _data()
    w1 = w.clone().requires_grad_(True)
    loss1 = _loss(w1, x, x_cf, noise, genders, gather=False)
    loss1.backward()

    script = tmp_path / "rank_job.py"
    script.write_text(_RANK_JOB)
    torchrun_pool.run(script, tmp_path, cwd=tmp_path, timeout=120)
    for rank in (0, 1):
        out = torch.load(tmp_path / f"rank{rank}.pt")
        assert out["world"] == 2 and out["shape"] == (8, D)
        assert out["loss"] == pytest.approx(loss1.item(), rel=1e-5)
        torch.testing.assert_close(out["grad"], w1.grad, rtol=1e-5, atol=1e-6)
    # sanity: the comparison can fail — without the cross-process gather the loss differs
    half = _loss(w.clone(), x[:4], x_cf[:4], noise[:4], genders[:4], gather=False)
    assert half.item() != pytest.approx(loss1.item(), rel=1e-3)
