"""``teacher_dtype`` (fairmt.models.precision): what ``auto`` chooses from the device's capability (read, and mocked
as fast), the warning an explicit bf16 gives where it is slow (once), the dtype the frozen models really get (the
GACL teacher, CCD's and DPCE/ADEPT-F's frozen references, a trained step through a bf16 reference), the deprecated
``teacher_bf16`` still working, and bad values refused in the Config and in a recipe."""

from __future__ import annotations

import warnings

import pytest
import torch

from fairmt.errors import FairmtError
from fairmt.models import precision
from fairmt.models.precision import (
    SlowBfloat16Warning,
    bf16_is_fast,
    resolve_teacher_dtype,
)


@pytest.fixture(autouse=True)
def fresh_probe():
    """Each test reads the device afresh and may get the slow-bf16 warning once."""
    bf16_is_fast.cache_clear()
    precision._WARNED.clear()
    yield
    bf16_is_fast.cache_clear()
    precision._WARNED.clear()


def _cpu(monkeypatch, flags: set[str], torch_probe: bool = False):
    """A CPU with these /proc/cpuinfo flags (and torch's own CPUID probe answering ``torch_probe``)."""
    monkeypatch.setattr(precision, "_cpu_flags", lambda: set(flags))
    for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        monkeypatch.setattr(torch.cpu, name, lambda: torch_probe, raising=False)


def _fast(monkeypatch):
    """The capability probe says bfloat16 is fast on every device."""
    monkeypatch.setattr(precision, "bf16_is_fast", lambda device_type: (True, "mocked fast"))


# ---------------------------------------------------------------------------------------------- choosing


def test_auto_is_fp32_on_this_cpu():
    """This machine's CPU has no bf16 instructions (issue 55's 2-core AVX2 EPYC): auto keeps float32."""
    flags = precision._cpu_flags()
    has_bf16 = bool(flags & {"avx512_bf16", "amx_bf16"})
    dtype, why = resolve_teacher_dtype("auto", "cpu")
    assert dtype == (torch.bfloat16 if has_bf16 else torch.float32), why
    if not has_bf16:
        assert why.startswith("auto: the CPU has no bfloat16 instructions")


@pytest.mark.parametrize(
    "flags,probe,expected",
    [
        ({"avx2", "avx512f"}, False, torch.float32),
        ({"avx2", "avx512f", "avx512_bf16"}, False, torch.bfloat16),
        ({"avx2", "amx_tile", "amx_bf16"}, False, torch.bfloat16),
        (set(), True, torch.bfloat16),  # /proc/cpuinfo unreadable: torch's CPUID probe answers
        (set(), False, torch.float32),
    ],
)
def test_auto_reads_the_cpu_flags(monkeypatch, flags, probe, expected):
    _cpu(monkeypatch, flags, probe)
    dtype, why = resolve_teacher_dtype("auto", "cpu")
    assert dtype == expected
    assert why.startswith("auto: ")
    if expected == torch.bfloat16 and flags:
        assert "bf16" in why


def test_auto_is_bf16_when_the_probe_says_fast_and_fp32_on_an_unknown_device(monkeypatch):
    _fast(monkeypatch)
    assert resolve_teacher_dtype("auto", "cpu") == (torch.bfloat16, "auto: mocked fast")
    assert resolve_teacher_dtype("fp32", "cpu")[0] == torch.float32
    monkeypatch.undo()
    bf16_is_fast.cache_clear()
    assert resolve_teacher_dtype("auto", "meta")[0] == torch.float32  # no known bf16 speed: float32


def test_the_probe_is_read_once_per_device_type(monkeypatch):
    reads = []
    monkeypatch.setattr(precision, "_cpu_flags", lambda: reads.append(1) or set())
    for _ in range(3):
        resolve_teacher_dtype("auto", "cpu")
    assert len(reads) == 1


def test_explicit_bf16_where_slow_warns_once(monkeypatch):
    _cpu(monkeypatch, {"avx2"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert resolve_teacher_dtype("bf16", "cpu")[0] == torch.bfloat16
    slow = [w for w in caught if issubclass(w.category, SlowBfloat16Warning)]
    assert len(slow) == 1
    assert "teacher_dtype 'bf16' on cpu" in str(slow[0].message) and "slower than in float32" in str(slow[0].message)


def test_explicit_bf16_where_fast_and_auto_do_not_warn(monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowBfloat16Warning)
        resolve_teacher_dtype("auto", "cpu")
        _fast(monkeypatch)
        resolve_teacher_dtype("bf16", "cpu")


def test_bad_value_is_one_line():
    with pytest.raises(FairmtError, match=r"^teacher_dtype must be one of auto, bf16, fp32, got 'fp16'$"):
        resolve_teacher_dtype("fp16", "cpu")


# ---------------------------------------------------------------------------------------------- the GACL teacher


def _gacl_model():
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.manual_seed(0)
    cfg = M2M100Config(
        vocab_size=64,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=32,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    return M2M100ForConditionalGeneration(cfg)


def _gacl_args(tmp_path, **kw):
    from fairmt.trainers.gacl import GACLConfig

    return GACLConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True, **kw)


def _teacher_dtypes(tmp_path, **kw) -> set[torch.dtype]:
    from fairmt.trainers.gacl import GACLTrainer

    trainer = GACLTrainer(model=_gacl_model(), args=_gacl_args(tmp_path, **kw))
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}  # the student is never cast
    return {p.dtype for p in trainer.teacher.parameters()}


def test_gacl_default_is_auto_and_the_teacher_gets_the_chosen_dtype(tmp_path, monkeypatch):
    assert _gacl_args(tmp_path).teacher_dtype == "auto"
    expected = resolve_teacher_dtype("auto", "cpu")[0]
    assert _teacher_dtypes(tmp_path) == {expected}
    _fast(monkeypatch)
    assert _teacher_dtypes(tmp_path) == {torch.bfloat16}
    assert _teacher_dtypes(tmp_path, teacher_dtype="fp32") == {torch.float32}


@pytest.mark.parametrize("old,new", [(True, torch.bfloat16), (False, torch.float32)])
def test_deprecated_teacher_bf16_still_works(tmp_path, old, new):
    with pytest.warns(DeprecationWarning, match=r"GACLConfig.teacher_bf16 is deprecated: use teacher_dtype="):
        args = _gacl_args(tmp_path, teacher_bf16=old)
    assert args.teacher_dtype == ("bf16" if old else "fp32") and args.teacher_bf16 is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _teacher_dtypes(tmp_path, teacher_bf16=old) == {new}


def test_deprecated_flag_contradicting_teacher_dtype_is_refused(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(FairmtError, match="contradicts teacher_dtype='fp32'"):
            _gacl_args(tmp_path, teacher_bf16=True, teacher_dtype="fp32")
        assert _gacl_args(tmp_path, teacher_bf16=True, teacher_dtype="bf16").teacher_dtype == "bf16"


def test_gacl_config_refuses_a_bad_teacher_dtype(tmp_path):
    with pytest.raises(FairmtError, match="teacher_dtype must be one of auto, bf16, fp32, got 'half'"):
        _gacl_args(tmp_path, teacher_dtype="half")


def test_recipe_key_is_checked_before_anything_loads():
    from fairmt.recipes._checks import check_training
    from fairmt.trainers.gacl import GACLConfig

    check_training({"teacher_dtype": "fp32"}, [GACLConfig])
    with pytest.raises(FairmtError, match=r"recipe key training.teacher_dtype must be one of auto, bf16, fp32"):
        check_training({"teacher_dtype": "fp16"}, [GACLConfig])


# ---------------------------------------------------------------------------------------------- frozen references


def _bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(
        BertConfig(
            vocab_size=40,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=16,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    )


def _features():
    ids = torch.randint(5, 40, (3, 6), generator=torch.Generator().manual_seed(0))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _ccd(tmp_path, **kw):
    from fairmt.trainers.ccd import CCDConfig, CCDTrainer

    args = CCDConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, save_strategy="no", rho=1.0, **kw)
    return CCDTrainer(model=_bert(), args=args, data_collator=lambda rows: rows)


def _dpce(tmp_path, **kw):
    from fairmt.trainers.dpce import DPCEConfig, DPCETrainer

    args = DPCEConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, save_strategy="no", **kw)
    return DPCETrainer(model=_bert(), args=args, data_collator=lambda rows: rows)


def test_ccd_reference_gets_the_chosen_dtype_and_its_embeddings_are_float32(tmp_path, monkeypatch):
    expected = resolve_teacher_dtype("auto", "cpu")[0]
    assert {p.dtype for p in _ccd(tmp_path).reference_model.parameters()} == {expected}
    _fast(monkeypatch)
    trainer = _ccd(tmp_path)
    assert {p.dtype for p in trainer.reference_model.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}
    emb = trainer.embed_reference(_features())
    assert emb.dtype == torch.float32
    exact = _ccd(tmp_path, teacher_dtype="fp32")
    assert {p.dtype for p in exact.reference_model.parameters()} == {torch.float32}
    ref = exact.embed_reference(_features())
    torch.testing.assert_close(emb, ref, rtol=0.05, atol=0.05)  # bf16 rounding only


def test_dpce_adept_reference_gets_the_chosen_dtype(tmp_path, monkeypatch):
    from fairmt.trainers.adept import ADEPTConfig, ADEPTTrainer

    _fast(monkeypatch)
    trainer = _dpce(tmp_path)
    assert {p.dtype for p in trainer.reference_model.parameters()} == {torch.bfloat16}
    states = trainer.reference_states(_features())
    assert states.dtype == torch.float32 and states.shape == (3, 6, 2, 16)
    assert {p.dtype for p in _dpce(tmp_path, teacher_dtype="fp32").reference_model.parameters()} == {torch.float32}
    adept = ADEPTTrainer(
        model=_bert(),
        args=ADEPTConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, teacher_dtype="bf16"),
        data_collator=lambda rows: rows,
    )
    assert {p.dtype for p in adept.reference_model.parameters()} == {torch.bfloat16}
