"""Guards for the costs of a GACL + KD step that a timing cannot catch on a shared machine (issue 28).

* the student's encoder runs the number of times the trainer's docstring states (paper: once, on [x; x; x_cf];
  official: twice, the dropout view without gradient) and the teacher once — counted with forward hooks;
* the teacher runs without gradient (no_grad or inference mode), in the dtype asked (``teacher_dtype``), and gets no
  gradients;
* the loss reads nothing back from the device: no ``.item()``/``bool()``/``.tolist()`` and no data-dependent-shape
  op (boolean indexing, ``nonzero``) in fairmt's code during ``compute_loss``, and exactly one read per training
  step — the fault guard's.

Each guard is shown to fail on a trainer that breaks its property (the ``*_catches_*`` tests).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest
import torch

import fairmt
from fairmt.errors import FairmtError

B, T = 8, 7
FAIRMT_DIR = str(Path(fairmt.__file__).resolve().parent)
TORCH_DIR = str(Path(torch.__file__).resolve().parent)


def _model():
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.manual_seed(0)
    cfg = M2M100Config(
        vocab_size=96,
        d_model=16,
        encoder_layers=2,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=32,
        dropout=0.1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    return M2M100ForConditionalGeneration(cfg)


def _batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(4, 96, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    ids[0, -2:], mask[0, -2:] = 1, 0  # one padded source
    cf = ids.clone()
    cf[:, 1] = torch.randint(4, 96, (B,), generator=g)
    labels = torch.randint(4, 96, (B, T), generator=g)
    labels[1, -3:] = -100  # one padded target
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": labels,
        "cf_input_ids": cf,
        "cf_attention_mask": mask.clone(),
        "gender": torch.tensor([0, 1] * (B // 2)),
    }


def _trainer(tmp_path, cls=None, **kw):
    from fairmt.trainers.gacl import GACLConfig, GACLTrainer

    args = GACLConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=B,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        **kw,
    )
    trainer = (cls or GACLTrainer)(model=_model(), args=args)
    trainer.create_optimizer()
    trainer.current_gradient_accumulation_steps = 1
    trainer.model.train()
    return trainer


def _step(trainer, batch=None):
    trainer.training_step(trainer.model, trainer._prepare_inputs(batch or _batch()))


@contextlib.contextmanager
def _forward_calls(module):
    """Record (rows, gradient enabled, inference mode) of every forward call of ``module``."""
    calls = []

    def hook(mod, args, kwargs, output):
        ids = kwargs.get("input_ids", args[0] if args else None)
        rows = None if ids is None else ids.shape[0]
        calls.append((rows, torch.is_grad_enabled(), torch.is_inference_mode_enabled()))

    handle = module.register_forward_hook(hook, with_kwargs=True)
    try:
        yield calls
    finally:
        handle.remove()


def _encoder_calls(trainer):
    with _forward_calls(trainer.model.get_encoder()) as student:
        with _forward_calls(trainer.teacher.get_encoder()) as teacher:
            _step(trainer)
    return student, teacher


# ---- the encoder runs the documented number of times -----------------------------------------------------------


def test_paper_step_runs_the_student_encoder_once_on_three_views(tmp_path):
    student, teacher = _encoder_calls(_trainer(tmp_path, gacl_variant="paper"))
    assert student == [(3 * B, True, False)]  # [x; x; x_cf], with gradient, in one call
    assert [rows for rows, _, _ in teacher] == [B]


def test_official_step_runs_the_student_encoder_twice(tmp_path):
    student, teacher = _encoder_calls(_trainer(tmp_path, gacl_variant="official"))
    assert student == [(B, True, False), (B, False, False)]  # x with gradient, its dropout view without
    assert [rows for rows, _, _ in teacher] == [B]


def test_encoder_guard_catches_a_separate_counterfactual_pass(tmp_path):
    """A trainer that encodes the counterfactuals in a call of their own (the cost this guard exists for)."""
    from fairmt.trainers.gacl import GACLTrainer

    class SeparateCounterfactual(GACLTrainer):
        def compute_loss(self, model, inputs, **kw):
            model.get_encoder()(input_ids=inputs["cf_input_ids"], attention_mask=inputs["cf_attention_mask"])
            return super().compute_loss(model, inputs, **kw)

    student, _ = _encoder_calls(_trainer(tmp_path, cls=SeparateCounterfactual, gacl_variant="paper"))
    assert student != [(3 * B, True, False)] and len(student) == 2


# ---- the teacher: no gradient, in the dtype asked -------------------------------------------------------------------


def _teacher_report(trainer):
    with _forward_calls(trainer.teacher) as calls:
        _step(trainer)
    dtypes = {p.dtype for p in trainer.teacher.parameters()}
    got_grads = any(p.grad is not None for p in trainer.teacher.parameters())
    trainable = any(p.requires_grad for p in trainer.teacher.parameters())
    return calls, dtypes, got_grads, trainable


@pytest.mark.parametrize("bf16", [True, False])
@pytest.mark.filterwarnings("ignore::fairmt.models.precision.SlowBfloat16Warning")
def test_teacher_runs_without_gradient_in_the_requested_dtype(tmp_path, bf16):
    calls, dtypes, got_grads, trainable = _teacher_report(_trainer(tmp_path, teacher_dtype="bf16" if bf16 else "fp32"))
    assert len(calls) == 1
    _, grad_enabled, inference = calls[0]
    assert not grad_enabled or inference
    assert dtypes == {torch.bfloat16 if bf16 else torch.float32}
    assert not got_grads and not trainable


def test_teacher_guard_catches_a_teacher_run_with_gradient(tmp_path):
    from fairmt.trainers.gacl import GACLTrainer

    class GradTeacher(GACLTrainer):
        def _teacher_logits(self, inputs):
            return self.teacher(
                input_ids=inputs["input_ids"],
                attention_mask=inputs["attention_mask"],
                decoder_input_ids=self._shift_right(inputs["labels"]),
            ).logits

    calls, _, _, _ = _teacher_report(_trainer(tmp_path, cls=GradTeacher, teacher_dtype="fp32"))
    _, grad_enabled, inference = calls[0]
    assert grad_enabled and not inference  # what the guard above refuses


# ---- no host read in the loss; one per step (the fault guard's) ------------------------------------------------------

_READS = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__", "cpu", "numpy")
# ops whose output size depends on the data: on an accelerator they wait for the device
_DATA_DEPENDENT = {
    "aten::nonzero",
    "aten::nonzero_numpy",
    "aten::masked_select",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::unique_dim",
    "aten::repeat_interleave",
    "aten::_local_scalar_dense",
}


def _caller_in_fairmt(frame) -> bool:
    """Whether the first calling frame outside torch (and outside this file) is fairmt's code."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name != __file__ and not name.startswith(TORCH_DIR):
            return name.startswith(FAIRMT_DIR)
        frame = frame.f_back
    return False


def _in_loss(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "compute_loss":
            return True
        frame = frame.f_back
    return False


_MASK_INDEXING = {"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_"}
"""Ops that run a ``nonzero`` inside their kernel when an index is a boolean (or uint8) mask: ``x[mask]``,
``x[mask] = v``."""


def _owner(frame) -> str | None:
    """``path:line`` of the innermost frame outside torch and this file; None when the op comes through this file's
    read wrappers (counted there already)."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name == __file__:
            if frame.f_code.co_name == "read":
                return None
        elif not name.startswith(TORCH_DIR):
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _data_dependent(func, args, kwargs) -> str | None:
    """The name of ``func`` when its output's size depends on the data (None otherwise)."""
    name = func._schema.name
    if name in _DATA_DEPENDENT:
        return name
    if name in _MASK_INDEXING:
        indices = kwargs.get("indices", args[1] if len(args) > 1 else ())
        if any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices or ()):
            return f"{name} (boolean mask)"
    return None


@contextlib.contextmanager
def host_reads():
    """Count the reads from the device that fairmt's own code makes: Python-level reads (``.item()``, ``bool()``,
    ``.tolist()``, ...) by patching ``torch.Tensor``, and data-dependent-shape ops (boolean indexing, ``nonzero``)
    seen by a ``TorchDispatchMode`` with the Python frame that called them. Yields a list of
    ``(what, where, inside compute_loss)``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    found = []
    originals = {name: getattr(torch.Tensor, name) for name in _READS}

    def wrap(name, fn):
        def read(self, *args, **kwargs):
            caller = sys._getframe(1)
            if _caller_in_fairmt(caller):
                found.append((name, f"{caller.f_code.co_filename}:{caller.f_lineno}", _in_loss(caller)))
            return fn(self, *args, **kwargs)

        return read

    class DataDependentOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            what = _data_dependent(func, args, kwargs)
            if what is not None:
                caller = sys._getframe(1)
                owner = _owner(caller)
                if owner is not None and owner.startswith(FAIRMT_DIR):
                    found.append((what, owner, _in_loss(caller)))
            return func(*args, **kwargs)

    for name, fn in originals.items():
        setattr(torch.Tensor, name, wrap(name, fn))
    try:
        with DataDependentOps():
            yield found
    finally:
        for name, fn in originals.items():
            setattr(torch.Tensor, name, fn)


def _step_reads(trainer):
    inputs = trainer._prepare_inputs(_batch())
    with host_reads() as found:
        trainer.training_step(trainer.model, inputs)
    return found


@pytest.mark.parametrize("variant", ["paper", "official"])
def test_loss_reads_nothing_from_the_device_and_the_step_once(tmp_path, variant):
    """compute_loss makes no host read; the whole training step makes one, the fault guard's."""
    found = _step_reads(_trainer(tmp_path, gacl_variant=variant))
    assert [r for r in found if r[2]] == []
    assert len(found) == 1 and "trainers/faults.py" in found[0][1], found


def test_one_gender_batch_still_fails_the_step_from_that_one_read(tmp_path):
    """The one-gender check moved out of the loss into the fault guard's read: the step still stops, before the
    optimizer step, naming the cause."""
    trainer = _trainer(tmp_path, gacl_variant="paper", balanced_batches=False)
    batch = _batch()
    batch["gender"] = torch.zeros(B, dtype=torch.long)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    with pytest.raises(FairmtError, match="one gender only"):
        _step(trainer, batch)
    assert all(torch.equal(a, p) for a, p in zip(before, trainer.model.parameters()))  # no optimizer step ran
    # outside a training step the check is immediate
    with pytest.raises(FairmtError, match="one gender only"):
        trainer.compute_loss(trainer.model, trainer._prepare_inputs(batch))


def test_host_read_guard_catches_an_item_and_a_boolean_index_in_the_loss(tmp_path, monkeypatch):
    import fairmt.losses.gacl as gacl_mod
    import fairmt.trainers.gacl as trainer_mod

    real = gacl_mod.gacl_loss

    def logging_loss(*args, **kwargs):  # what a per-step `.item()` for logging would add
        out = real(*args, **kwargs)
        out[0].item()
        return out

    monkeypatch.setattr(trainer_mod, "gacl_loss", logging_loss)
    trainer = _trainer(tmp_path, gacl_variant="paper")
    assert [what for what, _, in_loss in _step_reads(trainer) if in_loss] == ["item"]

    from fairmt.losses import distill

    real_kd = distill.mt_kd_loss

    def gathering_kd(s, t, labels, *args, **kwargs):  # the label positions gathered by boolean indexing
        keep = labels != -100
        s[keep]
        return real_kd(s, t, labels, *args, **kwargs)

    monkeypatch.setattr(trainer_mod, "gacl_loss", real)
    monkeypatch.setattr(trainer_mod, "mt_kd_loss", gathering_kd)
    assert "aten::index (boolean mask)" in [what for what, _, in_loss in _step_reads(trainer) if in_loss]
