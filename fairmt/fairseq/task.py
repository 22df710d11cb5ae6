"""fairseq task ``gacl_translation``: fairseq's ``translation`` plus, per sentence, the gender label and the
binarised counterfactual (gender-swapped) source, batched together (``sample["gacl"]``).

Files it reads beside fairseq's ``{split}.{src}-{tgt}.{lang}.{bin,idx}`` (``fairmt data fairseq-prep`` writes
them): ``{split}.{src}-{tgt}.gender`` (one label a line: 0 male, 1 female) and ``{split}.{src}-{tgt}.cf.{bin,idx}``
(the counterfactual sources, binarised with the source dictionary).

``--balanced-genders``: training batches (splits whose name starts with ``train``) hold exactly ``--batch-size``
sentences, half male, half female, cut from :class:`fairmt.data.gacl.GenderBalancedSampler`'s order (the HF
trainer's sampler), so in-batch negatives always exist. Under ``--distributed-world-size K`` one global batch of
``K × batch-size`` sentences is cut first and process ``r`` takes its ``r``-th slice, so K processes see the same
global batches as one process with a K times larger ``--batch-size`` (``--max-tokens`` is not used for these
batches). Validation batches are fairseq's usual ones (every sentence; L_GC is skipped on one-gender batches).

The helpers here (side files, :class:`GACLPairDataset`, the balanced batches) also serve
``gacl_multilingual_translation`` (:mod:`fairmt.fairseq.multilingual`). Both tasks record the built model's encoder
size and dropout (``task.gacl_model_dims``) for the criterion's projection head.
"""

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from fairseq import utils
from fairseq.data import (
    AppendTokenDataset,
    BaseWrapperDataset,
    StripTokenDataset,
    TruncateDataset,
    data_utils,
    iterators,
)
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fairmt.errors import COUNT, SIZE, FairmtError, Range
from fairmt.fairseq.prep import side_file_paths

logger = logging.getLogger(__name__)


TASK_RANGES: dict[
    str, Range
] = {  # each numeric option's range (a module constant, as the criterion's CRITERION_RANGES:
    "max_source_positions": COUNT,
    "max_target_positions": COUNT,  # fairseq turns class attributes into options)
    "upsample_primary": Range(1, integer=True, also=(-1,)),
    "num_batch_buckets": SIZE,
    "required_seq_len_multiple": COUNT,
}
"""The ranges of the numeric options of fairmt's fairseq tasks (``gacl_translation``'s dataclass, fairseq's
``TranslationConfig`` fields included, and ``gacl_multilingual_translation``'s arguments), checked when fairseq sets
the task up (:meth:`BalancedBatchesMixin.setup_task`) with the criterion's wording: ``--max-source-positions 0`` is
one line naming the option and its range, not a truncation to nothing."""


def check_task_ranges(cfg) -> None:
    """One :class:`FairmtError` naming the first option of :data:`TASK_RANGES` outside its range (options the task's
    configuration lacks are skipped)."""
    for name, rng in TASK_RANGES.items():
        value = getattr(cfg, name, None)
        if isinstance(value, str):  # an unresolved interpolation (${dataset.…}) is fairseq's to resolve
            continue
        rng.check(f"--{name.replace('_', '-')}", value)


@dataclass
class GACLTranslationConfig(TranslationConfig):
    balanced_genders: bool = field(
        default=False,
        metadata={
            "help": "training batches of exactly --batch-size sentences (even), half male, half female "
            "(fairmt's GenderBalancedSampler); needed for in-batch negatives"
        },
    )


def read_genders(path: Path, n: int, task: str = "gacl_translation") -> np.ndarray:
    """The labels of a gender side file (0/1 a line), checked against the number of sentences ``n``."""
    if not path.is_file():
        raise FairmtError(
            f"gender label file {path} not found: {task} needs one label (0 male, 1 female) per sentence "
            "beside the binarised data; make the folder with `fairmt data fairseq-prep`"
        )
    labels = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            if s not in ("0", "1"):
                raise FairmtError(f"{path}:{lineno}: gender label must be 0 (male) or 1 (female), got {s!r}")
            labels.append(int(s))
    if len(labels) != n:
        raise FairmtError(f"{path} has {len(labels)} gender labels but the split has {n} sentence pairs")
    return np.asarray(labels, dtype=np.int64)


class GACLPairDataset(BaseWrapperDataset):
    """A ``LanguagePairDataset`` whose items also carry ``gender`` and ``cf`` (counterfactual source tokens); the
    collater adds ``sample["gacl"] = {"gender", "cf_src_tokens", "cf_src_lengths"}`` in the batch's row order."""

    def __init__(self, dataset, genders: np.ndarray, cf, split: str, left_pad_source: bool):
        super().__init__(dataset)
        self.genders = genders
        self.cf = cf
        self.split = split
        self.left_pad_source = left_pad_source

    def __getitem__(self, index):
        item = self.dataset[index]
        item["gender"] = int(self.genders[index])
        item["cf"] = self.cf[index]
        return item

    def collater(self, samples):
        # the wrapped collater sorts the rows by length; it runs on positions as ids so the rows are found again
        # (ids repeat when several language pairs share a batch), then the real ids go back in
        batch = self.dataset.collater([{**s, "id": k} for k, s in enumerate(samples)])
        if not batch or "id" not in batch:
            return batch
        rows = [samples[int(k)] for k in batch["id"]]
        batch["id"] = torch.tensor([r["id"] for r in rows], dtype=batch["id"].dtype)
        d = self.dataset.src_dict
        batch["gacl"] = {
            "gender": torch.tensor([r["gender"] for r in rows], dtype=torch.long),
            "cf_src_tokens": data_utils.collate_tokens(
                [r["cf"] for r in rows], d.pad(), d.eos(), left_pad=self.left_pad_source
            ),
            "cf_src_lengths": torch.tensor([r["cf"].numel() for r in rows], dtype=torch.long),
        }
        return batch


def load_side_files(
    data_path, split: str, src: str, tgt: str, n: int, src_dict, dataset_impl, task: str, reversed_name: bool = True
):
    """``(genders, counterfactual source dataset)`` of one split and direction, checked against its ``n`` pairs."""
    gender_file, cf_prefix = side_file_paths(data_path, split, src, tgt)
    if reversed_name and not Path(f"{cf_prefix}.idx").exists():  # fairseq also accepts the reversed pair name
        rev_gender, rev_cf = side_file_paths(data_path, split, tgt, src)
        if Path(f"{rev_cf}.idx").exists():
            gender_file, cf_prefix = rev_gender, rev_cf
    genders = read_genders(gender_file, n, task)
    cf = data_utils.load_indexed_dataset(str(cf_prefix), src_dict, dataset_impl)
    if cf is None:
        raise FairmtError(
            f"counterfactual source file {cf_prefix}.bin/.idx not found: {task} needs the binarised "
            "gender-swapped sources; make the folder with `fairmt data fairseq-prep`"
        )
    if len(cf) != n:
        raise FairmtError(
            f"counterfactual source file {cf_prefix}.bin has {len(cf)} sentences but the split has {n} "
            "sentence pairs: it must hold one counterfactual per source, in the same order"
        )
    return genders, cf


def model_dims(model) -> tuple[int, float]:
    """``(encoder output size, dropout)`` of a fairseq encoder-decoder (for the criterion's projection head)."""
    inner = model
    while hasattr(inner, "module") and isinstance(inner.module, torch.nn.Module):
        inner = inner.module
    enc = inner.encoder
    dim = getattr(getattr(enc, "cfg", None), "encoder", None)
    dim = getattr(dim, "embed_dim", None) or getattr(getattr(inner, "args", None), "encoder_embed_dim", None)
    if dim is None and getattr(enc, "embed_tokens", None) is not None:
        dim = enc.embed_tokens.embedding_dim
    if dim is None:
        raise FairmtError(
            f"cannot tell the encoder output size of {type(inner).__name__} for --gacl-projection; "
            "use --gacl-projection none"
        )
    dropout = getattr(getattr(enc, "dropout_module", None), "p", None)
    return int(dim), float(dropout or 0.0)


def gender_of(dataset, index: int) -> int:
    """The gender label of ``dataset[index]`` through fairseq's multilingual samplers (virtual indices)."""
    if isinstance(dataset, GACLPairDataset):
        return int(dataset.genders[index])
    if hasattr(dataset, "_get_dataset_and_index"):  # SampledMultiDataset / SampledMultiEpochDataset
        k, j = dataset._get_dataset_and_index(index)
        return gender_of(dataset.datasets[k], int(j))
    raise FairmtError(f"--balanced-genders: {type(dataset).__name__} holds no gender labels")


def balanced_batch_iterator(
    task,
    dataset,
    max_tokens,
    max_sentences,
    max_positions,
    ignore_invalid_inputs,
    seed,
    num_shards,
    shard_id,
    num_workers,
    epoch,
    data_buffer_size,
    skip_remainder_batch,
    grouped_shuffling,
):
    """Batches of exactly ``max_sentences``, half male, half female (:class:`GenderBalancedSampler`'s order); with
    ``num_shards`` K one global batch of K × max_sentences is cut and shard r takes its r-th slice."""
    if not max_sentences or max_sentences % 2:
        raise FairmtError(f"--balanced-genders needs an even --batch-size (sentences per process), got {max_sentences}")
    if max_tokens:
        logger.warning("--balanced-genders: batches hold exactly --batch-size sentences; --max-tokens is ignored")
    from fairmt.data.gacl import GenderBalancedSampler

    per, total = int(max_sentences), int(max_sentences) * num_shards
    cache = {}

    def plan(ep):
        # the multilingual samplers draw their (virtual) indices per epoch: labels and order follow the epoch
        if hasattr(dataset, "set_epoch"):
            dataset.set_epoch(ep)
        key = "all" if not hasattr(dataset, "_get_dataset_and_index") else ep
        if key not in cache:
            with data_utils.numpy_seed(seed):
                indices = dataset.ordered_indices()
            if max_positions is not None:
                indices = task.filter_indices_by_size(indices, dataset, max_positions, ignore_invalid_inputs)
            keep = [int(i) for i in indices]
            sampler = GenderBalancedSampler([gender_of(dataset, i) for i in keep], seed=seed)  # names missing genders
            n_batches = len(sampler) // total
            if n_batches == 0:
                raise FairmtError(
                    f"--balanced-genders: {len(sampler)} balanced sentences cannot fill one global batch of {total} "
                    f"(--batch-size {per} × {num_shards} processes)"
                )
            cache.clear()
            cache[key] = keep, sampler, n_batches
        return cache[key]

    plan(epoch)  # errors now, not at the first batch

    def batches(_dataset, ep):
        keep, sampler, n_batches = plan(ep)
        sampler.set_epoch(ep)
        order = [keep[j] for j in sampler]
        return [order[k * total + shard_id * per : k * total + (shard_id + 1) * per] for k in range(n_batches)]

    # every process holds its own slice of the same global batches: one shard as far as fairseq knows
    return iterators.EpochBatchIterator(
        dataset=dataset,
        collate_fn=dataset.collater,
        batch_sampler=batches,
        seed=seed,
        num_shards=1,
        shard_id=0,
        num_workers=num_workers,
        epoch=epoch,
        buffer_size=data_buffer_size,
        skip_remainder_batch=skip_remainder_batch,
        grouped_shuffling=grouped_shuffling,
    )


class BalancedBatchesMixin:
    """Mix into a fairseq task (before the task class): a training split :meth:`balanced` says yes to is batched by
    :func:`balanced_batch_iterator` (half male, half female); every other dataset by the task's own iterator. The
    task's numeric options are checked against :data:`TASK_RANGES` when fairseq sets it up."""

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        check_task_ranges(cfg)
        return super().setup_task(cfg, **kwargs)

    def balanced(self, dataset) -> bool:  # pragma: no cover - each task says which datasets
        raise NotImplementedError

    def get_batch_iterator(
        self,
        dataset,
        max_tokens=None,
        max_sentences=None,
        max_positions=None,
        ignore_invalid_inputs=False,
        required_batch_size_multiple=1,
        seed=1,
        num_shards=1,
        shard_id=0,
        num_workers=0,
        epoch=1,
        data_buffer_size=0,
        disable_iterator_cache=False,
        skip_remainder_batch=False,
        grouped_shuffling=False,
        update_epoch_batch_itr=False,
    ):
        if not self.balanced(dataset):
            return super().get_batch_iterator(
                dataset,
                max_tokens=max_tokens,
                max_sentences=max_sentences,
                max_positions=max_positions,
                ignore_invalid_inputs=ignore_invalid_inputs,
                required_batch_size_multiple=required_batch_size_multiple,
                seed=seed,
                num_shards=num_shards,
                shard_id=shard_id,
                num_workers=num_workers,
                epoch=epoch,
                data_buffer_size=data_buffer_size,
                disable_iterator_cache=disable_iterator_cache,
                skip_remainder_batch=skip_remainder_batch,
                grouped_shuffling=grouped_shuffling,
                update_epoch_batch_itr=update_epoch_batch_itr,
            )
        return balanced_batch_iterator(
            self,
            dataset,
            max_tokens,
            max_sentences,
            max_positions,
            ignore_invalid_inputs,
            seed,
            num_shards,
            shard_id,
            num_workers,
            epoch,
            data_buffer_size,
            skip_remainder_batch,
            grouped_shuffling,
        )


@register_task("gacl_translation", dataclass=GACLTranslationConfig)
class GACLTranslationTask(BalancedBatchesMixin, TranslationTask):
    """``translation`` + gender labels and counterfactual sources for the ``gacl_kd`` criterion."""

    cfg: GACLTranslationConfig

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        base = self.datasets[split]
        paths = utils.split_paths(self.cfg.data)
        data_path = paths[(epoch - 1) % len(paths)]
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        genders, cf = load_side_files(
            data_path, split, src, tgt, len(base), self.src_dict, self.cfg.dataset_impl, "gacl_translation"
        )
        if self.cfg.truncate_source:  # as translation's loader does to the sources
            eos = self.src_dict.eos()
            cf = AppendTokenDataset(TruncateDataset(StripTokenDataset(cf, eos), self.cfg.max_source_positions - 1), eos)
        self.datasets[split] = GACLPairDataset(base, genders, cf, split, self.cfg.left_pad_source)
        logger.info(f"gacl_translation {split}: {int((genders == 0).sum())} male, {int((genders == 1).sum())} female")

    def balanced(self, dataset) -> bool:
        return bool(
            self.cfg.balanced_genders and isinstance(dataset, GACLPairDataset) and dataset.split.startswith("train")
        )

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        self.gacl_model_dims = model_dims(model)  # the criterion's projection head is sized from it
        return model
