"""FairnessSamplingTrainer by really training: a tiny random ResNet on synthetic coloured shapes (SimCLR and
Algorithm 1), and the text extension on fixed features (CE + μ·NT-Xent with refitted clusters)."""

import math

import numpy as np
import pytest
import torch
from datasets import Dataset

from fairmt.data.classification import ClassificationCollator
from fairmt.data.images import ImageCollator, SimCLRAugmentation, processor_stats, synthetic_shapes
from fairmt.data.sampling import fit_latent_subgroups
from fairmt.errors import FairmtError
from fairmt.losses import nt_xent_loss
from fairmt.models.text_classifiers import MLPClassifier
from fairmt.models.vision import build_simclr_model, load_image_processor, tiny_resnet
from fairmt.trainers.sampling import FairnessSamplingConfig, FairnessSamplingTrainer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tiny_resnet(tmp_path_factory.mktemp("tiny_resnet"), image_size=32)
    processor = load_image_processor(str(folder))
    return {
        "backbone": str(folder),
        "collator": ImageCollator(processor),
        "augment": SimCLRAugmentation(*processor_stats(processor)),
        "data": synthetic_shapes(160, seed=0),
    }


def _image_args(tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=32,
        per_device_eval_batch_size=64,
        num_train_epochs=2,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        learning_rate=1e-3,
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    base.update(kw)
    return FairnessSamplingConfig(**base)


def _trainer(images, tmp_path, model=None, **kw):
    extra = {k: kw.pop(k) for k in ("latent_subgroups", "index_embeddings", "augmentation") if k in kw}
    extra.setdefault("augmentation", images["augment"])
    torch.manual_seed(0)
    model = model or build_simclr_model(images["backbone"], projection_dim=16)
    return FairnessSamplingTrainer(
        model=model,
        args=_image_args(tmp_path, **kw),
        train_dataset=images["data"].dataset,
        data_collator=images["collator"],
        **extra,
    )


def _fixed_views_loss(trainer, images, n=64):
    """NT-Xent of one fixed batch under two fixed augmentation draws (same seeds before and after training)."""
    batch = images["collator"](images["data"].dataset[:n])
    model, augment = trainer.model, trainer.augmentation
    with torch.no_grad():
        torch.manual_seed(123)
        v1 = augment(batch["pixel_values"])
        v2 = augment(batch["pixel_values"])
        z = model(pixel_values=torch.cat([v1, v2])).projection
    return float(nt_xent_loss(z[:n], z[n:], 0.5))


def test_simclr_stage_lowers_the_nt_xent_and_uses_two_views_per_image(images, tmp_path):
    # milder crops than SimCLR's 0.08-1 so that a 78k-parameter ResNet learns within 60 steps on 32-pixel shapes
    augment = SimCLRAugmentation(*processor_stats(images["collator"].processor), crop_scale=(0.5, 1.0))
    trainer = _trainer(
        images, tmp_path, objective="simclr", num_train_epochs=12, learning_rate=1e-2, augmentation=augment
    )
    before = _fixed_views_loss(trainer, images)
    seen = []
    real = trainer.objective_terms

    def spy(model, inputs):
        seen.append(inputs["pixel_values"].shape[0])
        return real(model, inputs)

    trainer.objective_terms = spy
    trainer.train()
    after = _fixed_views_loss(trainer, images)
    assert after < before - 0.05, (before, after)
    assert seen[0] == 32  # a SimCLR batch holds N images; the two views are made on the fly
    assert trainer.pair_index is None and trainer.cluster_history == []  # no clusters in the baseline
    with pytest.raises(FairmtError, match="augmentation"):
        _trainer(images, tmp_path / "x", objective="simclr", max_steps=1, augmentation=None).train()


def brute_positive_distance(Z, labels, i):
    d = np.sqrt(((Z.astype(np.float64) - Z[i]) ** 2).sum(1))
    d[(labels != labels[i]) | (np.arange(len(Z)) == i)] = np.inf
    return float(d.min())


def test_algorithm_1_batches_clusters_fitted_once_and_gradients(images, tmp_path):
    trainer = _trainer(
        images, tmp_path, objective="sampling_pretrain", num_train_epochs=3, n_clusters=4, index_refresh_steps=None
    )  # the per-epoch refresh (an extension; the default 0 builds Z once)
    loader = trainer.get_train_dataloader()
    index = trainer.pair_index
    Z, labels = index.Z, index.labels
    assert len(Z) == 160 and np.allclose(np.linalg.norm(Z, axis=1), 1.0, atol=1e-5)  # one normalised space
    batch = next(iter(loader))
    si = batch["sample_index"].numpy()
    assert batch["pixel_values"].shape[0] == len(si) == 3 * 32  # [anchors | positives | negatives]
    a, p, q = si[:32], si[32:64], si[64:]
    for i, j, k in zip(a, p, q):
        assert labels[j] == labels[i] and j != i
        assert np.linalg.norm(Z[i].astype(np.float64) - Z[j]) == pytest.approx(
            brute_positive_distance(Z, labels, i), abs=1e-6
        )  # the nearest same-cluster sample of all 160
        assert labels[k] != labels[i]  # exactly one negative, from another cluster
    # gradients reach the backbone and the projection head through all three groups
    model = trainer.model
    model.zero_grad()
    loss, terms = trainer.objective_terms(model, batch)
    loss.backward()
    for name in ("backbone.embedder.embedder.convolution.weight", "projection.2.weight"):
        grad = dict(model.named_parameters())[name].grad
        assert grad is not None and float(grad.abs().sum()) > 0, name
    assert set(terms) == {"ntxent"}
    trainer.train()
    # K-means fitted once (cluster_refit="once"); Z refreshed at each epoch boundary (index_refresh_steps=None)
    assert [h["event"] for h in trainer.cluster_history] == ["fit"]
    assert np.array_equal(trainer.pair_index.labels, labels)
    assert trainer.pair_index.version == 1 + 2  # built, then refreshed after epochs 1 and 2
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert {"loss_ntxent", "cluster_dominance_ratio", "representation_entropy", "neg_share_c0"} <= set(logs[0])


def test_given_subgroups_are_kept_and_bank_negatives(images, tmp_path):
    first = _trainer(images, tmp_path / "a", objective="sampling_pretrain", max_steps=1)
    z = first.embed_dataset()
    sub = fit_latent_subgroups(z, 4, seed=1, n_init=2)
    trainer = _trainer(
        images,
        tmp_path / "b",
        objective="sampling_pretrain",
        model=first.model,
        num_train_epochs=2,
        latent_subgroups=sub,
        index_embeddings=z,
        negative_source="bank",
        index_refresh_steps=2,
    )
    batch = next(iter(trainer.get_train_dataloader()))
    assert batch["pixel_values"].shape[0] == 64  # anchors and positives only; negatives come from Z
    assert np.array_equal(trainer.pair_index.Z, z)  # the given Z, no extra embedding pass
    trainer.train()
    assert [h["event"] for h in trainer.cluster_history] == ["given"]
    assert np.array_equal(trainer.pair_index.labels, sub.labels)
    assert trainer.pair_index.version == 1 + 4  # 10 steps, refreshed every 2
    assert all(math.isfinite(h["loss"]) for h in trainer.state.log_history if "loss" in h)
    with pytest.raises(FairmtError, match="160"):
        _trainer(
            images,
            tmp_path / "c",
            objective="sampling_pretrain",
            latent_subgroups=fit_latent_subgroups(z[:40], 4, n_init=1),
        )


# ---------------------------------------------------------------------------------- the text extension
def _rows(n=120, d=12, seed=0, with_group=True):
    """Four latent subgroups of sizes 60/20/10/10 % (no group label needed); the task label is y = i % 2."""
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
        output_dir=str(tmp_path),
        per_device_train_batch_size=32,
        num_train_epochs=6,
        logging_steps=4,
        report_to=[],
        save_strategy="no",
        learning_rate=3e-3,
        use_cpu=True,
        seed=0,
        n_clusters=4,
        num_negatives=8,
        cluster_refit="every_n_steps",
        cluster_refresh_steps=5,
        disable_tqdm=True,
    )
    base.update(kw)
    return FairnessSamplingConfig(**base)


def test_text_variant_trains_without_groups_and_refits_clusters(tmp_path):
    rows = _rows(with_group=False)
    model = MLPClassifier(12, 2, hidden_dim=24)
    trainer = FairnessSamplingTrainer(
        model=model,
        args=_args(tmp_path, objective="sampling", sampling_weight=0.5),
        train_dataset=Dataset.from_list(rows),
        data_collator=ClassificationCollator(),
    )
    trainer.train()
    steps = trainer.state.global_step
    assert steps == 24
    # fitted before step 0 and then every 5 steps, each time over the whole training set
    assert [h["step"] for h in trainer.cluster_history] == list(range(0, steps, 5))
    assert all(sum(h["cluster_sizes"]) == 120 and len(h["cluster_sizes"]) == 4 for h in trainer.cluster_history)
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert {"loss_ce", "loss_ntxent", "cluster_dominance_ratio", "representation_entropy"} <= set(logs[0])
    assert logs[-1]["loss_ce"] < logs[0]["loss_ce"]
    assert float(trainer.pair_index.cluster_probs.sum()) == pytest.approx(1.0)


def test_text_pretraining_ignores_the_group_column(tmp_path):
    ds = Dataset.from_list(_rows())
    model = MLPClassifier(12, 2, hidden_dim=24)
    head = model.classifier.weight.detach().clone()
    trainer = FairnessSamplingTrainer(
        model=model,
        args=_args(tmp_path, objective="sampling_pretrain", num_train_epochs=8),
        train_dataset=ds,
        data_collator=ClassificationCollator(),
    )
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert "loss_ce" not in logs[0] and logs[-1]["loss_ntxent"] < logs[0]["loss_ntxent"]
    assert torch.equal(model.classifier.weight, head)
    rows = _rows()
    for r in rows:
        r["group"] = 1 - r["group"]
    models = []
    for data in (ds, Dataset.from_list(rows)):
        torch.manual_seed(0)
        m = MLPClassifier(12, 2, hidden_dim=24)
        FairnessSamplingTrainer(
            model=m,
            args=_args(tmp_path / "x", objective="sampling_pretrain", max_steps=3),
            train_dataset=data,
            data_collator=ClassificationCollator(),
        ).train()
        models.append(m)
    for pa, pb in zip(models[0].parameters(), models[1].parameters()):
        assert torch.equal(pa, pb)


def test_config_validation_and_missing_labels(tmp_path):
    with pytest.raises(FairmtError, match="objective"):
        _args(tmp_path, objective="cscl")
    with pytest.raises(FairmtError, match="n_clusters"):
        _args(tmp_path, n_clusters=1)
    with pytest.raises(FairmtError, match="cluster_refit"):
        _args(tmp_path, cluster_refit="sometimes")
    with pytest.raises(FairmtError, match="does nothing with cluster_refit='once'"):
        _args(tmp_path, cluster_refit="once")  # a refit interval without refits: an old recipe, say
    assert _args(tmp_path, cluster_refresh_steps=None).cluster_refresh_steps == 50
    with pytest.raises(FairmtError, match="negative_source"):
        _args(tmp_path, negative_source="batch")
    with pytest.raises(FairmtError, match="index_refresh_steps"):
        _args(tmp_path, index_refresh_steps=-2)
    assert FairnessSamplingConfig(output_dir=str(tmp_path), use_cpu=True).num_negatives == 1  # as published
    rows = [{"features": r["features"]} for r in _rows(with_group=False)]
    with pytest.raises(FairmtError, match="labels"):
        FairnessSamplingTrainer(
            model=MLPClassifier(12, 2),
            args=_args(tmp_path / "ce", objective="sampling", max_steps=1),
            train_dataset=Dataset.from_list(rows),
            data_collator=ClassificationCollator(),
        ).train()
    with pytest.raises(FairmtError, match="at least 4"):
        FairnessSamplingTrainer(
            model=MLPClassifier(12, 2),
            args=_args(tmp_path / "k", max_steps=1),
            train_dataset=Dataset.from_list(_rows()[:3]),
            data_collator=ClassificationCollator(),
        ).train()


def test_two_processes_split_the_anchors_and_stay_in_sync(tmp_path, torchrun_pool):
    """torchrun, 2 CPU processes × 8 anchors: every process builds the same index and draws the same batch sequence,
    accelerate hands each every other batch, so an epoch's anchors are split without overlap; replicas stay equal."""
    import json
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "support"
    out = tmp_path / "two.json"
    torchrun_pool.run(here / "ddp_sampling_script.py", out, "sampling_pretrain", 8, cwd=tmp_path)
    r = json.loads(out.read_text())
    assert r["world_size"] == 2 and r["steps"] == 8  # 64 anchors / (2 × 8) = 4 steps per epoch, 2 epochs
    assert r["checksums"][0] == pytest.approx(r["checksums"][1], rel=1e-12)
    first_epoch = [set(i for b in ranks[:4] for i in b) for ranks in r["anchors"]]
    assert not first_epoch[0] & first_epoch[1] and len(first_epoch[0] | first_epoch[1]) == 64
    assert all(math.isfinite(h["loss_ntxent"]) for h in r["logs"])
