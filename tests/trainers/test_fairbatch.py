"""FairBatch (Roh et al. 2021, fairlib's DyBT FairBatch with the EO / stratified_y objective): the λ update against a
hand computation, the per-cell batch composition against counts, and the Trainer sampler end to end."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from fairmt.data.fairbatch import FairBatchSampler
from fairmt.errors import FairmtError

# 40 rows: class 0 — group 0: 12, group 1: 8; class 1 — group 0: 5, group 1: 15
Y = [0] * 20 + [1] * 20
G = [0] * 12 + [1] * 8 + [0] * 5 + [1] * 15


def test_initial_lambdas_and_cell_sizes_are_the_data_proportions():
    s = FairBatchSampler(Y, G, 10, loss_fn=lambda: np.zeros(40))
    assert s.lam == pytest.approx({(0, 0): 0.6, (0, 1): 0.4, (1, 0): 0.25, (1, 1): 0.75})
    # round(λ · B · n_y / N) = round(λ · 10 · 20 / 40)
    assert s.cell_sizes() == {(0, 0): 3, (0, 1): 2, (1, 0): 1, (1, 1): 4}  # round(1.25) = 1, round(3.75) = 4
    assert len(s) == 4


def test_lambda_update_by_hand():
    losses = np.zeros(40)
    losses[:12], losses[12:20] = 1.0, 3.0  # class 0: group 1 has the larger loss
    losses[20:25], losses[25:40] = 0.5, 0.1  # class 1: group 0 has the larger loss
    s = FairBatchSampler(Y, G, 10, loss_fn=lambda: losses, alpha=0.1)
    s.adjust(losses)
    # class 0: L_y = (12·1 + 8·3)/20 = 1.8; |1 − 1.8| = 0.8, |3 − 1.8| = 1.2 → g* = 1, L_{0,1} > L_0 → a = +0.1:
    # λ_{0,1} = 0.4 + 0.1 = 0.5, λ_{0,0} = 0.6 − 0.1 = 0.5 (sum 1)
    assert s.lam[(0, 0)] == pytest.approx(0.5) and s.lam[(0, 1)] == pytest.approx(0.5)
    # class 1: L_y = (5·0.5 + 15·0.1)/20 = 0.2; |0.5 − 0.2| = 0.3 > |0.1 − 0.2| → g* = 0, a = +0.1:
    # λ_{1,0} = 0.35, λ_{1,1} = 0.65
    assert s.lam[(1, 0)] == pytest.approx(0.35) and s.lam[(1, 1)] == pytest.approx(0.65)
    # α = 0.5: class 0 → λ = (0.5 − 0.5, 0.5 + 0.5) = (0, 1); class 1 → (0.35 + 0.5, 0.65 − 0.5) = (0.85, 0.15)
    s.alpha = 0.5
    s.adjust(losses)
    assert s.lam[(0, 0)] == pytest.approx(0.0) and s.lam[(0, 1)] == pytest.approx(1.0)
    assert s.lam[(1, 0)] == pytest.approx(0.85) and s.lam[(1, 1)] == pytest.approx(0.15)
    # again: class 0 → (−0.5, 1.5), shifted by 0.5 → (0, 2), normalised → (0, 1); class 1 → (1.35, −0.35) → (1, 0)
    s.adjust(losses)
    assert s.lam[(0, 0)] == pytest.approx(0.0) and s.lam[(0, 1)] == pytest.approx(1.0)
    assert s.lam[(1, 0)] == pytest.approx(1.0) and s.lam[(1, 1)] == pytest.approx(0.0)
    assert len(s.history) == 3


def test_batches_follow_the_cell_sizes_and_cover_each_cell_without_repeats():
    losses = np.zeros(40)
    losses[12:20] = 2.0
    s = FairBatchSampler(Y, G, 10, loss_fn=lambda: losses, alpha=0.1, seed=1)
    batches = list(s)
    sizes = s.cell_sizes()  # after this epoch's update
    assert len(batches) == 4
    for b in batches:
        assert dict(Counter((Y[i], G[i]) for i in b)) == {c: k for c, k in sizes.items() if k}
    # within the epoch a cell's rows repeat only once it is used up (without replacement, wrapping around)
    for c, _k in sizes.items():
        rows = [i for b in batches for i in b if (Y[i], G[i]) == c]
        n_cell = sum(1 for y, g in zip(Y, G) if (y, g) == c)
        assert len(set(rows)) == min(len(rows), n_cell)
    again = FairBatchSampler(Y, G, 10, loss_fn=lambda: losses, alpha=0.1, seed=1)
    assert list(again) == batches  # seeded


def test_fairbatch_errors():
    with pytest.raises(FairmtError, match="no training row in"):
        FairBatchSampler([0, 0, 1, 1], [0, 1, 0, 0], 2, loss_fn=lambda: np.zeros(4))
    with pytest.raises(FairmtError, match="fewer than one batch"):
        FairBatchSampler(Y, G, 100, loss_fn=lambda: np.zeros(40))
    s = FairBatchSampler(Y, G, 10, loss_fn=lambda: np.zeros(3))
    with pytest.raises(FairmtError, match="40 finite per-example losses"):
        list(s)


def test_trainer_draws_fairbatch_batches_and_adapts_every_epoch(tmp_path):
    import torch
    from datasets import Dataset

    from fairmt.data.classification import ClassificationCollator
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 6)).astype(np.float32)
    x[:, 0] += 2.0 * np.array(Y)
    x[:, 1] += np.where(np.array(G) == 1, 1.0, -1.0) * np.array(Y)  # class 1 easier for group 1
    ds = Dataset.from_dict({"features": x, "labels": Y, "group": G})
    torch.manual_seed(0)
    model = MLPClassifier(6, 2, hidden_dim=8, dropout=0.0)
    args = FairContrastiveConfig(
        output_dir=str(tmp_path),
        objective="ce",
        fairbatch=True,
        fairbatch_alpha=0.05,
        per_device_train_batch_size=10,
        num_train_epochs=3,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        learning_rate=1e-2,
    )
    trainer = FairContrastiveTrainer(model=model, args=args, train_dataset=ds, data_collator=ClassificationCollator())
    trainer.train()
    s = trainer.fairbatch_sampler
    assert s is not None and len(s.history) == 3  # one λ update per epoch
    assert trainer.state.global_step == 3 * 4
    assert s.history[0] != s.history[-1]
    for y in (0, 1):
        assert sum(s.lam[(y, g)] for g in (0, 1)) == pytest.approx(1.0)


@pytest.mark.slow
def test_fairbatch_recipe_line_on_the_moji_standin(tmp_path, monkeypatch, capsys):
    """`fairmt train classification/fcl_ce objective_args.fairbatch=true` on the shipped Moji stand-in."""
    import json

    from fair_standins import write_moji
    from fairmt.cli import main

    write_moji(tmp_path / "data" / "moji")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    out = tmp_path / "run"
    rc = main(
        [
            "train",
            "classification/fcl_ce",
            "data.moji_split_sizes=[40,2,2]",
            "data.moji_n_train=100",
            "training.num_train_epochs=2",
            "training.per_device_train_batch_size=16",
            "training.per_device_eval_batch_size=32",
            "model.hidden_dim=16",
            "save_predictions=false",
            "objective_args.fairbatch=true",
            "objective_args.fairbatch_alpha=0.05",
            f"output_dir={out}",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 0, captured.err[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["config"]["stages"]["train"]["fairbatch"] is True
    state = json.loads(next(out.glob("checkpoint-*/trainer_state.json")).read_text())
    assert state["global_step"] % (100 // 16) == 0  # ⌊N / B⌋ FairBatch batches per epoch
