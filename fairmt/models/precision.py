"""The dtype a frozen model runs in: the KD teacher of GACL (Trainer and fairseq criterion), the frozen reference
encoder of CCD, DPCE and ADEPT-F. One setting, ``teacher_dtype``:

* ``"auto"`` (the default): bfloat16 where the device runs it fast — a CUDA GPU with bf16 support, a CPU with
  bf16 instructions (``avx512_bf16`` or ``amx_bf16``) —, float32 otherwise. On a CPU without them bfloat16 matrix
  products are emulated and several times slower than float32 (0.25× measured on a 2-core AMD EPYC with AVX2 only:
  ``scripts/bench_gacl.py``'s ``bf16_matmul_speedup``), so a bf16 teacher would make every step slower, not faster;
* ``"bf16"``: bfloat16 (half the memory) everywhere; on a device where it is slower, a warning says so, once;
* ``"fp32"``: float32.

The device's answer is read from the device, not guessed from its name: ``torch.cuda.is_bf16_supported`` on CUDA,
the CPU's feature flags on a CPU (``/proc/cpuinfo``; elsewhere torch's own CPUID probe,
``torch.cpu._is_avx512_bf16_supported``), cached per device type (:func:`bf16_is_fast`). Other devices (MPS, XPU,
...) get float32 under ``auto``. A bfloat16 frozen model's outputs carry bf16 rounding (about 3 significant
digits): where a loss compares them with the student's own at the start of training (CCD's L_rep, the KD term),
``"fp32"`` keeps that exact.
"""

from __future__ import annotations

import enum
import functools
import warnings

import torch

from fairmt._deprecated import renamed_option
from fairmt.errors import FairmtError


class TeacherDtype(str, enum.Enum):
    """The values of ``teacher_dtype`` (a recipe's ``training.teacher_dtype``)."""

    AUTO = "auto"
    BF16 = "bf16"
    FP32 = "fp32"


TEACHER_DTYPES = tuple(d.value for d in TeacherDtype)
DEFAULT_TEACHER_DTYPE = TeacherDtype.AUTO.value
TEACHER_DTYPE_HELP = (
    "dtype of the frozen teacher / reference model: 'auto' (bf16 where the device runs it fast: "
    "CUDA with bf16 support, a CPU with avx512_bf16/amx_bf16; else fp32), 'bf16' or 'fp32'"
)

_WARNED: set[str] = set()  # device types the slow-bf16 warning was given for (once each)


class SlowBfloat16Warning(UserWarning):
    """bfloat16 was asked for a frozen model on a device where it is slower than float32."""


def check_teacher_dtype(value, name: str = "teacher_dtype") -> str:
    """``value`` as one of :data:`TEACHER_DTYPES` (a :class:`TeacherDtype` or its string), else a one-line error."""
    value = getattr(value, "value", value)
    if value not in TEACHER_DTYPES:
        raise FairmtError(f"{name} must be one of {', '.join(TEACHER_DTYPES)}, got {value!r}")
    return value


def _cpu_flags() -> set[str]:
    """The CPU's feature flags (Linux ``/proc/cpuinfo``; empty where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


@functools.cache
def bf16_is_fast(device_type: str) -> tuple[bool, str]:
    """(whether bfloat16 matrix products run at least as fast as float32 on this machine's ``device_type``, why),
    read from the device once per process."""
    if device_type == "cuda":
        if torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False):
            return True, f"CUDA device {torch.cuda.get_device_name()!r} supports bfloat16"
        return False, "the CUDA device has no native bfloat16 support"
    if device_type == "cpu":
        flags = _cpu_flags()
        native = sorted(flags & {"avx512_bf16", "amx_bf16"})
        if not native:  # not Linux, or flags unread: torch's own probe of the same CPUID bits
            for probe, flag in (("_is_avx512_bf16_supported", "avx512_bf16"), ("_is_amx_tile_supported", "amx_bf16")):
                if getattr(torch.cpu, probe, lambda: False)():
                    native.append(flag)
        if native:
            return True, f"the CPU has {' and '.join(native)}"
        return False, (
            "the CPU has no bfloat16 instructions (no avx512_bf16/amx_bf16; torch CPU capability "
            f"{torch.backends.cpu.get_cpu_capability()}): bfloat16 matrix products are emulated, slower "
            "than float32"
        )
    return False, f"bfloat16 speed on {device_type!r} devices is not known"


def bf16_matmul_speedup(device="cpu", shape: tuple[int, int, int] = (256, 256, 64000), repeats: int = 3) -> float:
    """float32 time / bfloat16 time of one ``(m × k) @ (k × n)`` product on ``device`` (default: a teacher's LM
    head, 256 tokens × d 256 × a 64k vocabulary), best of ``repeats`` each; process CPU time on a CPU (other
    processes on a shared machine do not inflate it), wall time on a GPU. Above 1: bfloat16 is faster. A measurement,
    for benchmarks' reports (``scripts/bench.py``); ``teacher_dtype: auto`` reads the device (:func:`bf16_is_fast`)."""
    import time

    device = torch.device(device)
    cpu = device.type == "cpu"
    clock = time.process_time if cpu else time.perf_counter
    m, k, n = shape
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
    best = {}
    for dtype in (torch.float32, torch.bfloat16):
        x, y = a.to(device, dtype), b.to(device, dtype)
        x @ y  # warm-up
        runs = []
        for _ in range(repeats):
            if not cpu:
                torch.cuda.synchronize(device)
            t0 = clock()
            x @ y
            if not cpu:
                torch.cuda.synchronize(device)
            runs.append(clock() - t0)
        best[dtype] = max(min(runs), 1e-9)
    return best[torch.float32] / best[torch.bfloat16]


def resolve_teacher_dtype(requested, device) -> tuple[torch.dtype, str]:
    """The dtype a frozen model on ``device`` gets for ``teacher_dtype=requested``, and why. An explicit ``"bf16"``
    on a device where it is slow warns (:class:`SlowBfloat16Warning`), once per device type and process."""
    requested = check_teacher_dtype(requested)
    device_type = torch.device(device).type
    if requested == "fp32":
        return torch.float32, "teacher_dtype 'fp32' asked"
    fast, why = bf16_is_fast(device_type)
    if requested == "bf16":
        if not fast and device_type not in _WARNED:
            _WARNED.add(device_type)
            warnings.warn(
                f"teacher_dtype 'bf16' on {device_type}, where {why}: the frozen teacher/reference "
                "model runs slower than in float32 (teacher_dtype 'auto' or 'fp32' avoids it; bf16 "
                "still halves its memory)",
                SlowBfloat16Warning,
                stacklevel=2,
            )
        return torch.bfloat16, "teacher_dtype 'bf16' asked" + ("" if fast else f" ({why})")
    return (torch.bfloat16 if fast else torch.float32), f"auto: {why}"


def apply_teacher_dtype(model: torch.nn.Module, requested, device) -> tuple[torch.dtype, str]:
    """Cast the frozen ``model``'s floating-point parameters and buffers to the dtype :func:`resolve_teacher_dtype`
    chooses; returns (dtype, why)."""
    dtype, why = resolve_teacher_dtype(requested, device)
    model.to(dtype)
    return dtype, why


def teacher_dtype_option(config, owner: str) -> str:
    """A Config's ``teacher_dtype``, checked, with the deprecated ``teacher_bf16`` (where the Config has it and it was
    set) mapped onto it with a ``DeprecationWarning`` (``True`` → ``"bf16"``, ``False`` → ``"fp32"``, what it
    meant). Called from the Config's ``__post_init__``; sets ``teacher_bf16`` back to ``None`` (its meaning now
    lives in ``teacher_dtype``, and a copy of the Config does not warn again)."""
    value = check_teacher_dtype(config.teacher_dtype, f"{owner}.teacher_dtype")
    old = getattr(config, "teacher_bf16", None)
    if old is None:
        return value
    if not isinstance(old, bool):
        raise FairmtError(f"{owner}.teacher_bf16 must be true or false, got {old!r}")
    mapped = renamed_option(f"{owner}.teacher_bf16", "teacher_dtype", old, {True: "bf16", False: "fp32"}, stacklevel=4)
    if value not in (DEFAULT_TEACHER_DTYPE, mapped):
        raise FairmtError(
            f"{owner}: teacher_bf16={old} (deprecated) contradicts teacher_dtype={value!r}: set teacher_dtype alone"
        )
    config.teacher_bf16 = None
    return mapped
