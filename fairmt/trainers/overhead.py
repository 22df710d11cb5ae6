"""Per-run overhead of the Hugging Face Trainer on small models (Shen et al.'s MLP on fixed features).

:class:`LeanTrainMixin` gives the Trainer's data loaders (training, evaluation, test; FairBatch's) a data set of fixed feature
vectors as in-memory numpy columns (:class:`fairmt.data.classification.FeatureArrays`) when the data set is a
``datasets.Dataset`` of numeric columns only and the collator a
:class:`~fairmt.data.classification.ClassificationCollator`: a batch is then one slice per column (what a plain
PyTorch loop over tensors does) instead of ``datasets``' Arrow gather, a numpy array per row and a re-stack
(~15 ms of a ~30 ms step on Moji-sized batches). The same rows in the same order reach the collator, which makes the
same tensors; the arrays are built once per data set and Trainer (keyed by the data set's fingerprint). And without
gradient clipping the logged gradient norm is computed directly, not by a clipping call that multiplies every gradient
by 1 (:meth:`LeanTrainMixin._get_grad_norm`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LeanTrainMixin"]


class LeanTrainMixin:
    """Mix into a Trainer subclass (before ``Trainer``)."""

    def _feature_arrays(self, dataset: Any) -> Any:
        """``dataset`` as :class:`~fairmt.data.classification.FeatureArrays` where that is the same data for the
        collator, else ``dataset`` itself."""
        from fairmt.data.classification import ClassificationCollator, FeatureArrays

        collator = getattr(self, "data_collator", None)
        fingerprint = getattr(dataset, "_fingerprint", None)
        if (
            not isinstance(collator, ClassificationCollator)
            or fingerprint is None
            or getattr(self.args, "remove_unused_columns", False)
        ):
            return dataset
        cache = self.__dict__.setdefault("_feature_arrays_cache", {})
        if fingerprint not in cache:
            cache[fingerprint] = FeatureArrays.from_dataset(dataset, collator.columns())
        return cache[fingerprint] if cache[fingerprint] is not None else dataset

    def _get_dataloader(self, dataset: Any, *args: Any, **kwargs: Any):
        return super()._get_dataloader(self._feature_arrays(dataset), *args, **kwargs)

    def _get_grad_norm(self, model: Any, grad_norm: Any = None):
        """The gradient norm the Trainer logs, without clipping: transformers computes it every step through
        ``accelerator.clip_grad_norm_(params, inf)``, which also multiplies every gradient by 1 (a second pass over
        them) behind accelerate's per-call checks (~1.5 ms a step on Shen et al.'s MLP, 5 % of it); the same norm
        (``torch.nn.utils.get_total_norm``, what ``clip_grad_norm_`` computes) is taken directly where the gradients
        are whole and unscaled on this process (one process or DDP, no gradient scaler, no sharded mesh)."""
        import torch
        from accelerate.utils import DistributedType

        acc = self.accelerator
        if (
            grad_norm is not None
            or getattr(acc, "scaler", None) is not None
            or acc.distributed_type not in (DistributedType.NO, DistributedType.MULTI_GPU, DistributedType.MULTI_CPU)
            or self._has_mixed_mesh_grads(model)
        ):
            return super()._get_grad_norm(model, grad_norm=grad_norm)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        if not grads:
            return super()._get_grad_norm(model, grad_norm=grad_norm)
        return torch.nn.utils.get_total_norm(grads)
