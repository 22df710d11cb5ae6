"""Sharded training (FSDP2, DeepSpeed ZeRO) for every fairmt trainer.

:class:`ShardingMixin` goes before ``Trainer``/``Seq2SeqTrainer`` in a trainer's bases. It fixes what the stock stack
(transformers 5.23, accelerate 1.15, torch 2.13, deepspeed 0.19) gets wrong for the models fairmt trains:

1. **Tied embeddings of encoder–decoder models under FSDP2.** M2M-100, NLLB-200 and SMaLL-100 keep one embedding
   matrix in three modules (``model.shared``, ``encoder.embed_tokens``, ``decoder.embed_tokens``) plus the tied
   ``lm_head``. accelerate's FSDP2 preparation puts ``shared`` and ``lm_head`` into one FSDP unit and leaves the two
   other embedding modules in the root unit, so the first forward fails ("Parameter 'model.shared.weight' is shared
   with a parameter already managed by another FSDP group") — with the plain ``Seq2SeqTrainer`` too. Before the
   model is prepared, :func:`share_tied_embedding_modules` makes the encoder and decoder use the input-embedding
   *module* itself (what transformers 4 did), which puts every use of the matrix in the same unit. Same weights,
   same outputs, same state-dict keys. For BERT-like encoders, whose ``BertEmbeddings`` block accelerate wraps and
   whose word embedding it then shards a second time, blocks holding the input embedding are left to the root unit
   (:func:`wrap_classes_without_input_embedding`); and a final ``save_model`` under a sharded state dict gathers a
   full one (the stock Trainer writes no weights then).
2. **FSDP on CPU processes.** accelerate ignores the FSDP plugin when it runs on CPU (``MULTI_CPU``, gloo) and
   silently trains with DDP instead. FSDP2 (``torch.distributed.fsdp.fully_shard``) does run on CPU with gloo, so
   for FSDP2 the mixin switches accelerate to its FSDP path there (useful for testing sharded code without a GPU);
   FSDP1 needs an accelerator and is refused on a machine without one, naming the FSDP2 config to use instead.
3. **Frozen models under DeepSpeed ZeRO-3.** A KD teacher or frozen reference copied from a model loaded under an
   active ZeRO-3 config holds parameter stubs: :func:`frozen_copy` gathers the parameters into a whole copy,
   :func:`outside_zero3_init` loads a teacher path unpartitioned, and :func:`check_not_zero3_partitioned` refuses a
   partitioned frozen module instead of computing with empty tensors. DeepSpeed checks its config only at the first
   step; :func:`check_deepspeed_config` validates the ZeRO section when the trainer is built.
"""

from __future__ import annotations

import copy
import os
from contextlib import contextmanager
from typing import Any

from torch import nn

from fairmt.errors import FairmtError

FSDP2_CONFIG_HINT = "recipes/accelerate/fsdp2.yaml (fsdp_version: 2)"


def share_tied_embedding_modules(model: nn.Module) -> list[str]:
    """Replace every embedding module whose weight *is* the input-embedding weight (same class, same scale) by the
    input-embedding module itself; returns the replaced module names. Models without such aliases are unchanged."""
    get = getattr(model, "get_input_embeddings", None)
    shared = get() if callable(get) else None
    weight = getattr(shared, "weight", None)
    if shared is None or weight is None:
        return []
    replaced = []
    for name, module in list(model.named_modules(remove_duplicate=False)):
        if module is shared or not name or getattr(module, "weight", None) is not weight:
            continue
        if type(module) is not type(shared) or getattr(module, "embed_scale", None) != getattr(
            shared, "embed_scale", None
        ):
            continue  # a projection tied to the matrix (lm_head) or an embedding that scales differently
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, shared)
        replaced.append(name)
    return replaced


def wrap_classes_without_input_embedding(model: nn.Module, names: list[str] | None) -> list[str] | None:
    """The FSDP2 wrap classes (``names``, default the model's ``_no_split_modules``) less those whose blocks contain
    the input-embedding module, or None when nothing needs to change.

    accelerate shards the input embedding as a unit of its own after wrapping the blocks; when a wrapped block
    already holds it (BERT's ``BertEmbeddings``, RoBERTa's ``RobertaEmbeddings``) its parameters are sharded twice
    and ``fully_shard`` fails. Leaving that block to the root unit keeps one sharding per parameter."""
    get = getattr(model, "get_input_embeddings", None)
    embedding = get() if callable(get) else None
    if embedding is None:
        return None
    names = list(names if names is not None else getattr(model, "_no_split_modules", None) or [])
    holders = {
        type(m).__name__ for m in model.modules() if m is not embedding and any(x is embedding for x in m.modules())
    }
    keep = [n for n in names if n not in holders]
    return keep if keep != names else None


def _has_accelerator() -> bool:
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "is_available"):
        return bool(acc.is_available())
    return torch.cuda.is_available()


def _requested_fsdp_version(args: Any) -> int | None:
    """The FSDP version asked for by the training arguments or by ``accelerate launch`` (None: no FSDP)."""
    if getattr(args, "fsdp", None):  # transformers 5 defaults to FSDP2
        cfg = getattr(args, "fsdp_config", None) or {}
        return int(cfg.get("version", cfg.get("fsdp_version", 2)))
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        return int(os.environ.get("FSDP_VERSION", "1"))
    return None


def check_deepspeed_config(args: Any) -> None:
    """Validate the ``zero_optimization`` section of the training arguments' DeepSpeed config with DeepSpeed's own
    schema before any model is prepared (DeepSpeed itself checks it only inside ``deepspeed.initialize``, at the first
    training step). ``"auto"`` values are the Trainer's to fill and are not checked."""
    hf_config = getattr(args, "hf_deepspeed_config", None)
    if hf_config is None:
        return
    zero = {k: v for k, v in (hf_config.config.get("zero_optimization") or {}).items() if v != "auto"}
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig

    try:
        DeepSpeedZeroConfig(**zero)
    except Exception as err:  # pydantic's ValidationError: one line per bad field
        detail = ": ".join(" ".join(line.split()) for line in str(err).splitlines()[1:3])  # field: message
        raise FairmtError(f"invalid DeepSpeed config (training.deepspeed): zero_optimization: {detail}") from None


def check_not_zero3_partitioned(module: nn.Module | None, what: str) -> None:
    """Refuse a frozen helper model (KD teacher, frozen reference encoder) whose parameters were partitioned by
    DeepSpeed ZeRO-3: it would compute with empty parameter stubs outside the engine."""
    if module is None:
        return
    if is_zero3_partitioned(module):
        raise FairmtError(
            f"the {what} was partitioned by DeepSpeed ZeRO-3 (its parameters are ZeRO stubs); keep it out of "
            "partitioning: load it before the DeepSpeed config is active or with zero3_init_flag: false, or use "
            "ZeRO-2 / FSDP2"
        )


def is_zero3_partitioned(module: nn.Module) -> bool:
    """True when DeepSpeed ZeRO-3 has partitioned the module's parameters (they carry a ``ds_id``)."""
    return any(hasattr(p, "ds_id") for p in module.parameters())


@contextmanager
def outside_zero3_init():
    """Load models inside this block unpartitioned even while a ZeRO-3 config is active (transformers'
    ``from_pretrained`` otherwise partitions every model it loads then): for frozen helpers such as a KD teacher,
    which DeepSpeed's engine never manages."""
    try:
        import transformers.integrations.deepspeed as hf_ds
    except ImportError:  # pragma: no cover - transformers always has it
        yield
        return
    saved = hf_ds._hf_deepspeed_config_weak_ref
    hf_ds._hf_deepspeed_config_weak_ref = None
    try:
        yield
    finally:
        hf_ds._hf_deepspeed_config_weak_ref = saved


def frozen_copy(model: nn.Module) -> nn.Module:
    """A whole (unpartitioned) copy of ``model`` for a frozen teacher/reference. A plain ``deepcopy`` unless ZeRO-3
    has partitioned the model (loaded while a ZeRO-3 config was active): then the parameters are gathered and loaded
    into a fresh model of the same class, built outside ZeRO-3's partitioning."""
    if not is_zero3_partitioned(model):
        return copy.deepcopy(model)
    config = getattr(model, "config", None)
    if config is None or hasattr(model, "peft_config"):
        raise FairmtError(
            f"cannot copy the ZeRO-3-partitioned {type(model).__name__} as a frozen model; pass the frozen model "
            "(e.g. teacher_model_name_or_path) explicitly"
        )
    import deepspeed

    with deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=None):
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with outside_zero3_init():
        fresh = type(model)(config)
    fresh.load_state_dict(state)  # same class and config: every key matches
    return fresh


class ShardingMixin:
    """Mix into a fairmt ``Trainer`` subclass, before ``Trainer``: FSDP2 on tied encoder–decoder embeddings, FSDP2 on
    CPU processes, and a clear refusal of FSDP1 without an accelerator (see the module docstring)."""

    def create_accelerator_and_postprocess(self) -> None:
        version = _requested_fsdp_version(self.args)
        if version == 1 and not _has_accelerator():
            raise FairmtError(
                "FSDP1 (fsdp_version: 1, e.g. recipes/accelerate/fsdp.yaml) needs a GPU or another accelerator and "
                f"this machine has none; use FSDP2 instead: {FSDP2_CONFIG_HINT}"
            )
        check_deepspeed_config(self.args)
        super().create_accelerator_and_postprocess()
        if version == 2 and not self.is_fsdp_enabled:
            from accelerate.state import PartialState
            from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

            state = self.accelerator.state
            if state.distributed_type == DistributedType.MULTI_CPU:  # accelerate dropped the plugin on CPU
                # from the training arguments, or (accelerate launch --config_file) from the environment
                state.fsdp_plugin = FullyShardedDataParallelPlugin(**(self.args.fsdp_plugin_args or {}))
                # both shared states: a later AcceleratorState() re-reads the type from PartialState
                state.distributed_type = PartialState().distributed_type = DistributedType.FSDP
                self.is_fsdp_enabled = True

    def _wrap_model(self, model: nn.Module, training: bool = True, dataloader: Any = None) -> nn.Module:
        plugin = getattr(self.accelerator.state, "fsdp_plugin", None)
        if self.is_fsdp_enabled and getattr(plugin, "fsdp_version", 1) == 2:
            inner = self.accelerator.unwrap_model(model)
            share_tied_embedding_modules(inner)
            names = wrap_classes_without_input_embedding(inner, plugin.transformer_cls_names_to_wrap)
            if names is not None:
                plugin.transformer_cls_names_to_wrap = names
        return super()._wrap_model(model, training=training, dataloader=dataloader)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        """Under FSDP with a sharded state dict, the stock ``save_model`` writes no weights for the final model
        (checkpoints hold the shards); fairmt gathers a full state dict for it, so ``output_dir`` holds a model that
        ``from_pretrained`` loads. Checkpoints (``_internal_call``) stay sharded."""
        plugin = getattr(self.accelerator.state, "fsdp_plugin", None) if self.is_fsdp_enabled else None
        if plugin is None or _internal_call or "FULL_STATE_DICT" in str(plugin.state_dict_type):
            return super().save_model(output_dir, _internal_call=_internal_call)
        previous = plugin.state_dict_type
        plugin.set_state_dict_type("FULL_STATE_DICT")
        try:
            return super().save_model(output_dir, _internal_call=_internal_call)
        finally:
            plugin.set_state_dict_type(previous)
