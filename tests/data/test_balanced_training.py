"""Balanced training (fairlib's BT / BTObj): instance weights and resampled / downsampled sets against counts on a
fixed example, the weighted CE against a loop, and the recipe option on the Moji stand-in."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import torch

from fairmt.data.balanced import balanced_indices, balanced_weights, cell_counts
from fairmt.errors import FairmtError

# 20 rows: cells (y, g) with counts (0,0) 8, (0,1) 2, (1,0) 3, (1,1) 7; n_y: 10, 10; n_g: 11, 9
Y = [0] * 10 + [1] * 10
G = [0] * 8 + [1] * 2 + [0] * 3 + [1] * 7


def test_cell_counts_of_the_fixed_example():
    assert cell_counts(Y, G) == {(0, 0): 8, (0, 1): 2, (1, 0): 3, (1, 1): 7}
    assert cell_counts(Y, G, "y") == {0: 10, 1: 10} and cell_counts(Y, G, "g") == {0: 11, 1: 9}


@pytest.mark.parametrize(
    "target, expected",
    [
        # joint: (n / 4 cells) / n_{y,g} = 5 / n_{y,g}
        ("joint", {(0, 0): 5 / 8, (0, 1): 5 / 2, (1, 0): 5 / 3, (1, 1): 5 / 7}),
        # y: (20 / 2) / n_y = 1 everywhere (the classes are balanced already)
        ("y", {(0, 0): 1.0, (0, 1): 1.0, (1, 0): 1.0, (1, 1): 1.0}),
        # g: (20 / 2) / n_g
        ("g", {(0, 0): 10 / 11, (0, 1): 10 / 9, (1, 0): 10 / 11, (1, 1): 10 / 9}),
        # eo: n_y / n_{y,g}
        ("eo", {(0, 0): 10 / 8, (0, 1): 10 / 2, (1, 0): 10 / 3, (1, 1): 10 / 7}),
    ],
)
def test_weights_against_counts(target, expected):
    w = balanced_weights(Y, G, target)
    assert w.shape == (20,)
    for i, (y, g) in enumerate(zip(Y, G)):
        assert w[i] == pytest.approx(expected[(y, g)])
    # what the weights balance: the weighted mass of each balanced key is equal
    mass = Counter()
    for i, (y, g) in enumerate(zip(Y, G)):
        key = {"joint": (y, g), "y": y, "g": g, "eo": (y, g)}[target]
        mass[key] += w[i]
    if target == "eo":  # within each class, each group carries n_y
        assert mass[(0, 0)] == pytest.approx(mass[(0, 1)]) == pytest.approx(10)
        assert mass[(1, 0)] == pytest.approx(mass[(1, 1)]) == pytest.approx(10)
    else:
        assert len(set(round(v, 9) for v in mass.values())) == 1 and sum(mass.values()) == pytest.approx(20)


@pytest.mark.parametrize(
    "target, method, expected",
    [
        ("joint", "downsample", {(0, 0): 2, (0, 1): 2, (1, 0): 2, (1, 1): 2}),  # min cell 2
        ("joint", "resample", {(0, 0): 5, (0, 1): 5, (1, 0): 5, (1, 1): 5}),  # 20 / 4
        ("eo", "downsample", {(0, 0): 2, (0, 1): 2, (1, 0): 3, (1, 1): 3}),  # per class, its smallest group
        ("eo", "resample", {(0, 0): 5, (0, 1): 5, (1, 0): 5, (1, 1): 5}),  # per class n_y / 2
    ],
)
def test_sampled_cells_against_counts(target, method, expected):
    idx = balanced_indices(Y, G, target, method, seed=3)
    got = Counter((Y[i], G[i]) for i in idx)
    assert dict(got) == expected
    if method == "downsample":
        assert len(set(idx.tolist())) == len(idx)  # without replacement
    # seeded: the same draw again, another with another seed
    assert balanced_indices(Y, G, target, method, seed=3).tolist() == idx.tolist()


@pytest.mark.parametrize(
    "target, method, expected",
    [
        ("y", "downsample", {0: 10, 1: 10}),
        ("y", "resample", {0: 10, 1: 10}),
        ("g", "downsample", {0: 9, 1: 9}),
        ("g", "resample", {0: 10, 1: 10}),
    ],
)
def test_sampled_y_and_g_targets(target, method, expected):
    idx = balanced_indices(Y, G, target, method, seed=0)
    values = Y if target == "y" else G
    assert dict(Counter(values[i] for i in idx)) == expected


def test_eo_with_an_empty_cell_is_an_error_for_sampling_and_skipped_for_weights():
    y, g = [0, 0, 1, 1, 1], [0, 1, 0, 0, 0]  # class 1 has no group-1 example
    with pytest.raises(FairmtError, match="class 1 has no example of group"):
        balanced_indices(y, g, "eo", "downsample")
    assert balanced_weights(y, g, "eo").tolist() == [2.0, 2.0, 1.0, 1.0, 1.0]  # n_y / n_{y,g}
    with pytest.raises(FairmtError, match="target must be one of"):
        balanced_weights(y, g, "stratified")
    with pytest.raises(FairmtError, match="method"):
        balanced_indices(y, g, "joint", "reweight")


def test_weighted_cross_entropy_is_fairlibs_batch_mean():
    from fairmt.losses import weighted_cross_entropy

    torch.manual_seed(0)
    logits, labels, w = torch.randn(6, 3), torch.tensor([0, 1, 2, 0, 1, 2]), torch.rand(6) * 3
    want = sum(w[i] * -torch.log_softmax(logits[i], 0)[labels[i]] for i in range(6)) / 6
    assert float(weighted_cross_entropy(logits, labels, w)) == pytest.approx(float(want), rel=1e-6)
    assert float(weighted_cross_entropy(logits, labels)) == pytest.approx(
        float(torch.nn.functional.cross_entropy(logits, labels))
    )


def test_trainer_ce_uses_the_instance_weights(tmp_path):
    """The CE the Trainers log is the weighted one when the batch carries instance weights (collator → Trainer)."""
    from datasets import Dataset

    from fairmt.data.classification import ClassificationCollator
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    y, g = [0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 0, 1, 1, 1]
    w = balanced_weights(y, g, "joint")  # (8 / 4) / n_{y,g}: 2/3 for the cells of 3, 2 for those of 1
    ds = Dataset.from_dict({"features": x, "labels": y, "group": g, "instance_weight": w.tolist()})
    torch.manual_seed(0)
    model = MLPClassifier(4, 2, hidden_dim=5, dropout=0.0)
    args = FairContrastiveConfig(output_dir=str(tmp_path), objective="ce", report_to=[], use_cpu=True)
    trainer = FairContrastiveTrainer(model=model, args=args, train_dataset=ds, data_collator=ClassificationCollator())
    batch = ClassificationCollator()([ds[i] for i in range(8)])
    model.train()
    loss = trainer.compute_loss(model, batch).detach()
    with torch.no_grad():
        logits = model(features=batch["features"]).logits
    per = torch.nn.functional.cross_entropy(logits, batch["labels"], reduction="none")
    assert float(loss) == pytest.approx(float((per * torch.tensor(w, dtype=torch.float32)).mean()), rel=1e-5)
    assert float(loss) != pytest.approx(float(per.mean()), rel=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize(
    "recipe, balance",
    [
        ("fcl_ce", ["balance.method=downsample", "balance.target=eo"]),
        ("fcl_adversarial", ["balance.method=reweight", "balance.target=joint", "objective_args.adv_hidden_size=8"]),
        ("fcl_moji", ["balance.method=resample", "balance.target=joint"]),
    ],
)
def test_balanced_recipe_on_the_moji_standin(recipe, balance, tmp_path, monkeypatch, capsys):
    """The recipe option on the shipped Moji stand-in: the training rows the Trainer saw are balanced as asked, the
    predictions (and leakage) still cover the whole training split."""
    from fair_standins import write_moji
    from fairmt.cli import main

    root = tmp_path / "data"
    write_moji(root / "moji")
    monkeypatch.setenv("FAIRMT_DATA", str(root))
    out = tmp_path / "run"
    fast = [
        "data.moji_split_sizes=[40,2,2]",
        "data.moji_n_train=100",
        "training.num_train_epochs=2",
        "training.per_device_train_batch_size=32",
        "training.per_device_eval_batch_size=32",
        "training.logging_steps=1",
        "model.hidden_dim=16",
        "save_predictions=false",
    ]
    rc = main(["train", f"classification/{recipe}", *fast, *balance, f"output_dir={out}"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err[-3000:]
    res = json.loads((out / "results.json").read_text())
    info = res["info"]["balance"]
    before, after = info["counts_before"], info["counts_after"]
    assert info["n_before"] == sum(before.values()) and info["n_after"] == sum(after.values())
    assert len(set(before.values())) > 1  # the stand-in is imbalanced (fairlib's Moji proportions)
    if info["method"] == "reweight":
        assert after == before
        n = info["n_before"]
        for cell, c in before.items():
            assert info["weights"][cell] == pytest.approx((n / len(before)) / c)
    elif info["target"] == "eo":
        for label in {k.split("|")[0] for k in after}:
            sizes = [c for k, c in after.items() if k.split("|")[0] == label]
            assert len(set(sizes)) == 1
            assert sizes[0] == min(c for k, c in before.items() if k.split("|")[0] == label)
    else:
        assert set(after.values()) == {info["n_before"] // len(before)}
    assert res["config"]["balance"] == {"method": info["method"], "target": info["target"]}
    steps = json.loads(next(out.glob("checkpoint-*/trainer_state.json")).read_text())["global_step"]
    epochs = res["config"]["training"]["num_train_epochs"]
    assert steps <= epochs * -(-info["n_after"] // 32)  # the Trainer iterated over the balanced rows
