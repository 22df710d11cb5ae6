"""FairBatch as a Trainer sampler: the training DataLoader of :class:`~fairmt.trainers.fair_contrastive.
FairContrastiveTrainer` and :class:`~fairmt.trainers.adversarial.AdversarialTrainer` draws its batches with
:class:`fairmt.data.fairbatch.FairBatchSampler` when the Config sets ``fairbatch=True`` (step ``fairbatch_alpha``).
At the start of every epoch the sampler asks for the current model's per-example CE on the whole training set (one
pass in eval mode, ``per_device_eval_batch_size`` rows at a time) and adapts each group's share within each class."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from fairmt.data.fairbatch import FairBatchSampler
from fairmt.errors import FairmtError
from fairmt.losses.weighted import WEIGHT_COLUMN
from fairmt.models.pooling import representation_and_logits

__all__ = ["FairBatchMixin"]


class FairBatchMixin:
    """Mix into a classification Trainer (before ``Trainer``); reads ``args.fairbatch``, ``args.fairbatch_alpha``,
    ``args.group_column`` and ``args.pooling``."""

    fairbatch_sampler: FairBatchSampler | None = None

    def _fairbatch_losses(self) -> np.ndarray:
        model, a = self.model, self.args
        was_training = model.training
        model.eval()
        ds = getattr(self, "_feature_arrays", lambda d: d)(self.train_dataset)  # LeanTrainMixin's columns
        loader = DataLoader(ds, batch_size=a.per_device_eval_batch_size, shuffle=False, collate_fn=self.data_collator)
        out = []
        try:
            with torch.no_grad():
                for batch in loader:
                    batch = self._prepare_inputs(batch)
                    labels = batch["labels"].long()
                    inputs = {
                        k: v
                        for k, v in batch.items()
                        if k not in ("labels", a.group_column, WEIGHT_COLUMN) and not k.startswith("view_")
                    }
                    _, logits = representation_and_logits(model, inputs, a.pooling)
                    out.append(F.cross_entropy(logits.float(), labels, reduction="none").cpu())
        finally:
            model.train(was_training)
        return torch.cat(out).numpy()

    def get_train_dataloader(self) -> DataLoader:
        a = self.args
        if not getattr(a, "fairbatch", False):
            return super().get_train_dataloader()
        if a.world_size > 1:
            raise FairmtError("fairbatch runs on one process (its sampler sees the whole training set)")
        ds = self.train_dataset
        try:
            labels, groups = ds["labels"], ds[a.group_column]
        except (KeyError, TypeError):
            raise FairmtError(
                f"fairbatch needs a datasets.Dataset with 'labels' and {a.group_column!r} columns"
            ) from None
        self.fairbatch_sampler = FairBatchSampler(
            labels, groups, a.per_device_train_batch_size, self._fairbatch_losses, alpha=a.fairbatch_alpha, seed=a.seed
        )
        loader = DataLoader(
            getattr(self, "_feature_arrays", lambda d: d)(ds),
            batch_sampler=self.fairbatch_sampler,
            collate_fn=self.data_collator,
            num_workers=a.dataloader_num_workers,
            pin_memory=a.dataloader_pin_memory,
        )
        return self.accelerator.prepare(loader)
