"""Fairness-driven sampling Trainer: trains without demographic labels, refits latent subgroups on schedule."""

import pytest
import torch
from datasets import Dataset

from fairmt.data.classification import ClassificationCollator
from fairmt.errors import FairmtError
from fairmt.models.text_classifiers import MLPClassifier
from fairmt.trainers.sampling import FairnessSamplingConfig, FairnessSamplingTrainer

pytestmark = pytest.mark.slow


def _rows(n=120, d=12, seed=0, with_group=True):
    """Four latent subgroups of sizes 60/30/20/10 % (no group label needed); the task label is y = i % 2."""
    fixed = torch.Generator().manual_seed(7)
    centers = torch.randn(4, d, generator=fixed) * 3
    task = torch.randn(d, generator=fixed)
    g = torch.Generator().manual_seed(seed)
    sizes = [int(n * f) for f in (0.6, 0.2, 0.1, 0.1)]
    rows = []
    for c, size in enumerate(sizes):
        for i in range(size):
            y = i % 2
            x = centers[c] + (y - 0.5) * 2 * task + 0.3 * torch.randn(d, generator=g)
            r = {"features": x.tolist(), "labels": y}
            if with_group:
                r["group"] = int(c == 0)
            rows.append(r)
    return rows


def _args(tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path), per_device_train_batch_size=32, num_train_epochs=6, logging_steps=4,
        report_to=[], save_strategy="no", learning_rate=3e-3, use_cpu=True, seed=0, n_clusters=4,
        num_negatives=8, cluster_refresh_steps=5,
    )
    base.update(kw)
    return FairnessSamplingConfig(**base)


def test_sampling_trains_without_groups_and_refits_clusters(tmp_path):
    rows = _rows(with_group=False)
    model = MLPClassifier(12, 2, hidden_dim=24)
    trainer = FairnessSamplingTrainer(
        model=model, args=_args(tmp_path, objective="sampling", sampling_weight=0.5),
        train_dataset=Dataset.from_list(rows), data_collator=ClassificationCollator(),
    )
    trainer.train()
    steps = trainer.state.global_step
    assert steps == 24
    # fitted before step 0 and then every 5 steps
    assert [h["step"] for h in trainer.cluster_history] == list(range(0, steps, 5))
    first = trainer.cluster_history[0]
    assert sum(first["cluster_sizes"]) == 120 and len(first["cluster_sizes"]) == 4
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert {"loss_ce", "loss_ntxent", "cluster_dominance_ratio", "representation_entropy"} <= set(logs[0])
    assert logs[-1]["loss_ce"] < logs[0]["loss_ce"]
    assert trainer.cluster_probs is not None and float(trainer.cluster_probs.sum()) == pytest.approx(1.0)


def test_sampling_pretrain_lowers_the_nt_xent_and_ignores_the_group_column(tmp_path):
    ds = Dataset.from_list(_rows())
    model = MLPClassifier(12, 2, hidden_dim=24)
    head = model.classifier.weight.detach().clone()
    trainer = FairnessSamplingTrainer(
        model=model, args=_args(tmp_path, objective="sampling_pretrain", num_train_epochs=8, weight_decay=0.0),
        train_dataset=ds, data_collator=ClassificationCollator(),
    )
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert "loss_ce" not in logs[0]
    assert logs[-1]["loss_ntxent"] < logs[0]["loss_ntxent"]
    assert torch.equal(model.classifier.weight, head)
    # same run with shuffled group labels gives the same model: the group is never read in training
    rows = _rows()
    for r in rows:
        r["group"] = 1 - r["group"]
    torch.manual_seed(0)
    m_a = MLPClassifier(12, 2, hidden_dim=24)
    torch.manual_seed(0)
    m_b = MLPClassifier(12, 2, hidden_dim=24)
    for m, data in ((m_a, ds), (m_b, Dataset.from_list(rows))):
        FairnessSamplingTrainer(
            model=m, args=_args(tmp_path / "x", objective="sampling_pretrain", max_steps=3),
            train_dataset=data, data_collator=ClassificationCollator(),
        ).train()
    for pa, pb in zip(m_a.parameters(), m_b.parameters()):
        assert torch.equal(pa, pb)


def test_sampling_config_validation(tmp_path):
    with pytest.raises(FairmtError, match="objective"):
        _args(tmp_path, objective="cscl")
    with pytest.raises(FairmtError, match="n_clusters"):
        _args(tmp_path, n_clusters=1)


def test_too_few_samples_for_k_means(tmp_path):
    trainer = FairnessSamplingTrainer(
        model=MLPClassifier(12, 2), args=_args(tmp_path, n_clusters=4, max_steps=1),
        train_dataset=Dataset.from_list(_rows()[:3]), data_collator=ClassificationCollator(),
    )
    with pytest.raises(FairmtError, match="at least 4"):
        trainer.train()


def test_sampling_pretrain_needs_no_labels_at_all(tmp_path):
    rows = [{"features": r["features"]} for r in _rows(with_group=False)]
    model = MLPClassifier(12, 2, hidden_dim=24)
    trainer = FairnessSamplingTrainer(
        model=model, args=_args(tmp_path, objective="sampling_pretrain", max_steps=4),
        train_dataset=Dataset.from_list(rows), data_collator=ClassificationCollator(),
    )
    trainer.train()
    assert trainer.state.global_step == 4 and trainer.cluster_history
    with pytest.raises(FairmtError, match="labels"):
        FairnessSamplingTrainer(
            model=model, args=_args(tmp_path / "ce", objective="sampling", max_steps=1),
            train_dataset=Dataset.from_list(rows), data_collator=ClassificationCollator(),
        ).train()
