"""The classification Trainers' columnar data path (fairmt.data.classification.FeatureArrays, switched on by
fairmt.trainers.overhead.LeanTrainMixin): the same rows reach the collator as from the ``datasets.Dataset``, the
collator makes the same tensors, and a Trainer trained through it ends at the same weights as through the row path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from datasets import Dataset

from fairmt.data.classification import ClassificationCollator, ColumnBatch, FeatureArrays, with_array_features


def _cols(n=10, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "features": rng.normal(size=(n, d)).astype(np.float32),
        "labels": rng.integers(0, 2, n),
        "group": rng.integers(0, 2, n),
        "instance_weight": rng.random(n),
    }


def test_columns_are_the_rows_of_the_dataset_also_after_a_selection():
    cols = _cols()
    ds = with_array_features(Dataset.from_dict(cols))
    fa = FeatureArrays.from_dataset(ds)
    assert len(fa) == 10 and fa.column_names == list(ds.column_names)
    for k, v in cols.items():
        np.testing.assert_array_equal(fa[k], v)
    sel = ds.select([7, 2, 2, 0])  # balanced resampling's view: its rows, in its order, repeats kept
    fs = FeatureArrays.from_dataset(sel)
    np.testing.assert_array_equal(fs["features"], cols["features"][[7, 2, 2, 0]])
    np.testing.assert_array_equal(fs["labels"], cols["labels"][[7, 2, 2, 0]])
    # two Arrow chunks (a concatenation) read as one matrix
    from datasets import concatenate_datasets

    both = concatenate_datasets([Dataset.from_dict(cols), Dataset.from_dict(_cols(seed=1))])
    np.testing.assert_array_equal(
        FeatureArrays.from_dataset(both)["features"], np.concatenate([cols["features"], _cols(seed=1)["features"]])
    )


def test_row_path_is_kept_for_text_token_ids_ragged_features_and_unknown_columns():
    base = {"labels": [0, 1], "group": [1, 0]}
    assert FeatureArrays.from_dataset(Dataset.from_dict({**base, "text": ["a", "b"]})) is None
    assert FeatureArrays.from_dataset(Dataset.from_dict({**base, "input_ids": [[1, 2], [3, 4]]})) is None
    assert FeatureArrays.from_dataset(Dataset.from_dict({**base, "features": [[1.0, 2.0], [3.0]]})) is None
    ds = Dataset.from_dict({**base, "features": [[1.0, 2.0], [3.0, 4.0]], "age": [3, 4]})
    assert FeatureArrays.from_dataset(ds) is not None
    assert FeatureArrays.from_dataset(ds, ClassificationCollator().columns()) is None  # 'age' is not the collator's
    # a transform changes what a row is: the row path keeps it
    assert FeatureArrays.from_dataset(ds.with_transform(lambda b: b)) is None
    assert FeatureArrays.from_dataset(ds.with_format("numpy", columns=["features", "labels"])) is None


def test_collator_makes_the_same_tensors_from_columns_as_from_rows():
    cols = _cols()
    ds = with_array_features(Dataset.from_dict(cols))
    idx = [4, 0, 9, 4]
    by_rows = ClassificationCollator()(ds.__getitems__(idx))
    batch = FeatureArrays.from_dataset(ds).__getitems__(idx)
    assert isinstance(batch, ColumnBatch)
    by_cols = ClassificationCollator()(batch)
    assert sorted(by_rows) == sorted(by_cols) == ["features", "group", "instance_weight", "labels"]
    for k in by_rows:
        assert by_rows[k].dtype == by_cols[k].dtype
        assert torch.equal(by_rows[k], by_cols[k]), k


def _train(tmp_path, name, columnar: bool, lean_norm: bool = True):
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    cols = _cols(n=48, d=6)
    cols.pop("instance_weight")
    train = with_array_features(Dataset.from_dict(cols))
    dev = with_array_features(Dataset.from_dict(_cols(n=16, d=6, seed=3)))
    torch.manual_seed(0)
    model = MLPClassifier(6, 2, hidden_dim=8, num_layers=2, dropout=0.0)
    args = FairContrastiveConfig(
        output_dir=str(tmp_path / name),
        objective="ce",
        num_train_epochs=2,
        per_device_train_batch_size=10,
        per_device_eval_batch_size=7,
        learning_rate=1e-2,
        eval_strategy="epoch",
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=5,
        logging_steps=1,
        max_grad_norm=0.0,
    )
    trainer = FairContrastiveTrainer(
        model=model, args=args, train_dataset=train, eval_dataset=dev, data_collator=ClassificationCollator()
    )
    if not columnar:
        trainer._feature_arrays = lambda d: d
    if not lean_norm:  # transformers' own: accelerator.clip_grad_norm_(params, inf)
        from transformers import Trainer

        trainer._get_grad_norm = lambda model, grad_norm=None: Trainer._get_grad_norm(trainer, model, grad_norm)
    assert isinstance(trainer.get_train_dataloader().dataset, FeatureArrays) == columnar
    assert isinstance(trainer.get_eval_dataloader().dataset, FeatureArrays) == columnar
    trainer.train()
    norms = [h["grad_norm"] for h in trainer.state.log_history if "grad_norm" in h]
    assert len(norms) == trainer.state.global_step  # logged at every step (logging_steps=1)
    return trainer.evaluate()["eval_loss"], [p.detach().clone() for p in model.parameters()], norms


def test_trainer_through_the_columns_ends_where_the_row_path_does(tmp_path):
    """... and the gradient norm it logs (computed directly, without a clipping call) is transformers' own."""
    loss_c, w_c, n_c = _train(tmp_path, "cols", True)
    loss_r, w_r, n_r = _train(tmp_path, "rows", False, lean_norm=False)
    assert loss_c == pytest.approx(loss_r, abs=0, rel=0)
    assert all(torch.equal(a, b) for a, b in zip(w_c, w_r))
    assert n_c == n_r and len(set(n_c)) > 1
