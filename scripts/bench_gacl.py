#!/usr/bin/env python
"""Time GACL + KD training steps against plain fine-tuning, in one run, on one SMaLL-100-shaped model and batch.

Modes (each: forward, backward and an AdamW step on the same batch, a fresh copy of the same model):

* ``plain``               — stock ``Seq2SeqTrainer`` step (L_MT only);
* ``gacl_paper``          — GACL as the paper states it + KD: extra encoder pass on [x; x_cf] with gradient,
                            teacher forward;
* ``gacl_paper_detached_view`` — the paper's pairs with the dropout view computed without gradient (as the
                            official code does), saving the view's encoder backward;
* ``official_variant``    — fairmt's implementation of the official code's variant + KD: one extra *encoder-only*
                            no-grad pass for the dropout view, no counterfactual, teacher forward;
* ``official_algorithm``  — the official code's algorithm as published: a second full no-grad forward of encoder
                            AND decoder for the dropout view, plus the teacher forward.

Memory on a CPU: glibc hands every freed block over 32 MB back to the kernel, and the next allocation of the
vocabulary-sized logits or the embedding gradient faults its pages in again; in this VM that costs 150–450 ms of a
~900 ms step and varies from run to run with the heap's state (the same code measured 1.56× and 1.86×). A GPU has
no such cost: PyTorch's caching allocator reuses freed blocks. So on a CPU the benchmark first sets glibc to keep
freed memory for reuse (``mallopt``: no mmap'd blocks, no trimming) — the CPU analogue of the caching allocator,
the same for every mode; ``--system-malloc`` measures with glibc's defaults instead.

Every KD mode runs its teacher the same way, by default as a user gets it: ``teacher_dtype: auto``
(:mod:`fairmt.models.precision`: bfloat16 where the device runs it fast — CUDA with bf16 support, a CPU with
``avx512_bf16``/``amx_bf16`` —, float32 otherwise); ``--teacher-dtype bf16|fp32`` measures another choice. The JSON's
``setup.teacher`` names the dtype chosen and why (``requested``, ``dtype``, ``why``), ``setup.teacher_dtypes`` the
dtype each KD mode's teacher really holds.

The model keeps SMaLL-100's 12:3 encoder:decoder depth and a large vocabulary, scaled down to run on a CPU
(``--d-model``, ``--vocab``). Step times are the median over interleaved rounds (modes take turns, so machine
noise hits all of them alike); on a CPU they are the process's CPU time, which other processes on a shared
machine do not inflate. Peak memory: ``torch.cuda.max_memory_allocated`` on a GPU; on a CPU, the peak RSS
growth of a fresh subprocess per mode over its state after building the model(s). Prints a table, or one JSON
object with ``--json`` (keys ``gacl_vs_plain``, ``official_variant_vs_official_algorithm``, ``step_seconds``,
``peak_memory_mb``, ``flops_vs_plain``). Targets: ``TARGETS`` below. ``flops_vs_plain`` is each mode's work (the
floating-point operations of its matrix products in one step, :func:`step_flops`) over plain fine-tuning's: where
the time ratio of an implementation without overhead lands (the optimizer step and element-wise work, alike in every
mode and not counted, pull it a little below). At this shape the paper's GACL + KD does 1.99× plain's work (an
encoder pass with gradient over the dropout view and the counterfactual — twice the batch through 12 layers — and a
float32 teacher forward), so ``gacl_vs_plain`` ≤ 1.8 is out of reach with a float32 teacher, whatever the code;
``gacl_paper_detached_view`` does 1.77×. ``--quick`` (what ``scripts/bench.py`` runs): the same shape and ratios, fewer rounds, no memory
subprocesses.

The machine decides what a bf16 teacher costs: ``setup.bf16_matmul_speedup`` is the float32 / bfloat16 time of one
LM-head-shaped matrix product measured first (:func:`fairmt.models.precision.bf16_matmul_speedup`). On a CPU without
bf16 instructions it is about 0.25 (bfloat16 emulated: 4× slower), and a bf16 teacher made GACL + KD 2.65× plain
fine-tuning on a 2-core AVX2-only EPYC; ``auto`` chooses float32 there. With ``--teacher-dtype bf16`` where it is
slow the JSON carries a ``warning``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ("plain", "gacl_paper", "gacl_paper_detached_view", "official_variant", "official_algorithm")
# measure -> (comparison, target); scripts/bench.py reads these from here (the one place they are kept)
TARGETS = {"gacl_vs_plain": ("<=", 1.8), "official_variant_vs_official_algorithm": ("<=", 0.9)}


def build(args):
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.manual_seed(0)
    cfg = M2M100Config(
        vocab_size=args.vocab,
        d_model=args.d_model,
        encoder_layers=12,
        decoder_layers=3,
        encoder_attention_heads=args.heads,
        decoder_attention_heads=args.heads,
        encoder_ffn_dim=4 * args.d_model,
        decoder_ffn_dim=4 * args.d_model,
        max_position_embeddings=256,
        dropout=0.1,
        attention_dropout=0.1,
        activation_dropout=0.0,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    model = M2M100ForConditionalGeneration(cfg)
    g = torch.Generator().manual_seed(1)
    b, t = args.batch, args.seq_len
    ids = torch.randint(4, args.vocab, (b, t), generator=g)
    cf = ids.clone()
    cf[:, 3] = torch.randint(4, args.vocab, (b,), generator=g)  # the swapped gender word
    batch = {
        "input_ids": ids,
        "attention_mask": torch.ones(b, t, dtype=torch.long),
        "labels": torch.randint(4, args.vocab, (b, t), generator=g),
        "cf_input_ids": cf,
        "cf_attention_mask": torch.ones(b, t, dtype=torch.long),
        "gender": torch.tensor([0, 1] * (b // 2)),
    }
    return model, batch


def official_algorithm_trainer_cls():
    """The official code's algorithm: the dropout view comes from a second full (encoder + decoder) forward."""
    import torch

    from fairmt.losses import gacl_loss, mt_kd_loss
    from fairmt.models.pooling import pool
    from fairmt.trainers.gacl import GACLTrainer

    class OfficialAlgorithmTrainer(GACLTrainer):
        """Same loss code as fairmt's (fused L_MT + L_KD), so the ratio measures the algorithm alone."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            inputs = {k: v for k, v in inputs.items() if not k.startswith("cf_")}
            genders = inputs.pop("gender")
            call = {k: v for k, v in inputs.items() if k != "labels"}
            call["decoder_input_ids"] = self._shift_right(inputs["labels"])
            out = model(**call)
            with torch.no_grad():
                view = model(**call)  # second full forward (encoder and decoder) for the dropout view
            mask = inputs["attention_mask"]
            loss, _, _ = mt_kd_loss(
                out.logits,
                self._teacher_logits(inputs),
                inputs["labels"],
                self.args.kd_alpha,
                kd_normalization=self.args.kd_normalization,
            )
            head = getattr(self.accelerator.unwrap_model(model), "gacl_projection_head", None) or (lambda x: x)
            with torch.no_grad():
                h_view = head(pool(view.encoder_last_hidden_state, mask))
            loss_gc = gacl_loss(
                head(pool(out.encoder_last_hidden_state, mask)),
                genders,
                h_dropout=h_view,
                pairs=self.pairs,
                temperature=self.args.temperature,
            )
            return loss + self.args.gacl_lambda * loss_gc

    return OfficialAlgorithmTrainer


def make_trainer(mode, model, args, out):
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    from fairmt.trainers.gacl import GACLConfig, GACLTrainer

    common = dict(
        output_dir=out,
        per_device_train_batch_size=args.batch,
        learning_rate=1e-5,
        report_to=[],
        use_cpu=args.device == "cpu",
        save_strategy="no",
        disable_tqdm=True,
    )
    if mode == "plain":
        return Seq2SeqTrainer(model=model, args=Seq2SeqTrainingArguments(**common))
    kd = dict(teacher_dtype=args.teacher_dtype)
    if mode == "gacl_paper":
        return GACLTrainer(model=model, args=GACLConfig(gacl_variant="paper", **kd, **common))
    if mode == "gacl_paper_detached_view":
        return GACLTrainer(model=model, args=GACLConfig(gacl_variant="paper", detach_dropout_view=True, **kd, **common))
    if mode == "official_variant":
        return GACLTrainer(model=model, args=GACLConfig(gacl_variant="official", **kd, **common))
    return official_algorithm_trainer_cls()(model=model, args=GACLConfig(gacl_variant="official", **kd, **common))


def one_step(trainer, model, batch):
    inputs = dict(batch)
    if type(trainer).__name__ == "Seq2SeqTrainer":
        inputs = {k: v for k, v in inputs.items() if k in ("input_ids", "attention_mask", "labels")}
    inputs = trainer._prepare_inputs(inputs)
    trainer.training_step(model, inputs)
    trainer.optimizer.step()
    trainer.optimizer.zero_grad(set_to_none=True)


def setup(mode, base, args, tmp, copy_model=True):
    trainer = make_trainer(mode, copy.deepcopy(base) if copy_model else base, args, os.path.join(tmp, mode))
    trainer.create_optimizer()
    trainer.current_gradient_accumulation_steps = 1
    model = trainer.model
    model.train()
    return trainer, model


def bf16_matmul_speedup(args) -> float:
    """float32 time / bfloat16 time of one (tokens × d) @ (d × vocab) product, the teacher's largest, on this
    machine (best of 3 each, process time on a CPU)."""
    from fairmt.models.precision import bf16_matmul_speedup as measure

    return measure(args.device, (args.batch * args.seq_len, args.d_model, args.vocab))


def teacher_dtypes(runs) -> dict:
    """The dtype each KD mode's teacher really holds (teacher_dtype's choice, checked rather than assumed)."""
    return {
        m: str(next(trainer.teacher.parameters()).dtype).replace("torch.", "")
        for m, (trainer, _) in runs.items()
        if getattr(trainer, "teacher", None) is not None
    }


def step_flops(runs, batch) -> dict:
    """Each mode's floating-point operations in one training step (``torch.utils.flop_counter``: the matrix products
    and attention of the forward and backward passes; element-wise work is not counted), counted on a step that also
    serves as a warm-up. Their ratio to plain fine-tuning is where the time ratio of an implementation without
    overhead lands: work every mode does alike and the counter leaves out (the AdamW step, element-wise passes) pulls
    the time ratio a little below it, overhead pushes it above."""
    from torch.utils.flop_counter import FlopCounterMode

    flops = {}
    for m, (trainer, model) in runs.items():
        with FlopCounterMode(display=False) as counter:
            one_step(trainer, model, batch)
        flops[m] = counter.get_total_flops()
    return flops


def time_all(args) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    # On a CPU, the process's own CPU time: unlike wall time it does not count the time other processes take
    # from this one on a shared machine (with --threads 1 it equals the compute time). On a GPU, wall time.
    clock = time.process_time if args.device == "cpu" else time.perf_counter
    base, batch = build(args)
    with tempfile.TemporaryDirectory() as tmp:
        runs = {m: setup(m, base, args, tmp) for m in MODES}
        args.teacher_dtypes = teacher_dtypes(runs)
        args.flops = step_flops(runs, batch)
        times = {m: [] for m in MODES}
        for r in range(args.warmup + args.rounds):
            for m in MODES:
                trainer, model = runs[m]
                if args.device != "cpu":
                    torch.cuda.synchronize()
                t0 = clock()
                one_step(trainer, model, batch)
                if args.device != "cpu":
                    torch.cuda.synchronize()
                if r >= args.warmup:
                    times[m].append(clock() - t0)
    return {m: statistics.median(v) for m, v in times.items()}


def peak_memory_one(mode, args) -> float:
    """Peak memory (MB) of one mode's training steps, measured in this (fresh) process."""
    import torch

    torch.set_num_threads(args.threads)
    base, batch = build(args)
    with tempfile.TemporaryDirectory() as tmp:
        trainer, model = setup(mode, base, args, tmp, copy_model=False)
        if args.device != "cpu":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = torch.cuda.memory_allocated()
        else:  # reset the peak-RSS mark to the current RSS (Linux clear_refs 5); the new peak minus it is what training adds
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            start = _status_kb("VmRSS")
        for _ in range(2):
            one_step(trainer, model, batch)
        if args.device != "cpu":
            return (torch.cuda.max_memory_allocated() - start) / 2**20
        return (_status_kb("VmHWM") - start) / 1024


def cache_freed_memory() -> bool:
    """Make glibc keep freed memory for reuse (like a GPU caching allocator); False where that is not possible."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not sys.platform.startswith("linux") or not name:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):  # not glibc
        return False
    m_trim_threshold, m_mmap_max = -1, -4
    return bool(libc.mallopt(m_mmap_max, 0)) and bool(libc.mallopt(m_trim_threshold, 2**31 - 1))


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{key} not in /proc/self/status")


def main(argv=None):
    from fairmt.models.precision import DEFAULT_TEACHER_DTYPE, TEACHER_DTYPES

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=64000)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument(
        "--quick",
        action="store_true",
        help="the same shape and ratios with 4 rounds, 1 warm-up round and no memory subprocesses",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument(
        "--teacher-dtype",
        choices=TEACHER_DTYPES,
        default=DEFAULT_TEACHER_DTYPE,
        help=f"the KD teacher's teacher_dtype, the same for every KD mode (default: {DEFAULT_TEACHER_DTYPE}, "
        "a user's default: bf16 where the device runs it fast, else fp32)",
    )
    p.add_argument(
        "--system-malloc",
        action="store_true",
        help="on a CPU, keep glibc's default allocator policy (freed large blocks go back to the kernel)",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the per-mode memory subprocesses")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--_memory-mode", dest="memory_mode", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.warmup, args.no_memory = 4, 1, True
    args.caching_malloc = args.device == "cpu" and not args.system_malloc and cache_freed_memory()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    if args.device != "cpu":
        import torch

        torch.set_default_device(args.device)
    if args.memory_mode:
        print(json.dumps({"peak_mb": peak_memory_one(args.memory_mode, args)}))
        return 0

    import contextlib

    from fairmt.models.precision import resolve_teacher_dtype

    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):  # --json: the JSON object alone
        chosen, why = resolve_teacher_dtype(args.teacher_dtype, args.device)
        speedup = bf16_matmul_speedup(args)
        steps = time_all(args)
    chosen = str(chosen).replace("torch.", "")
    memory = {}
    if not args.no_memory:
        passthrough = [a for a in (argv if argv is not None else sys.argv[1:]) if a not in ("--json",)]
        for m in MODES:
            out = subprocess.run(
                [sys.executable, __file__, *passthrough, "--_memory-mode", m],
                capture_output=True,
                text=True,
                check=True,
            )
            memory[m] = round(json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"], 1)
    result = {
        "gacl_vs_plain": round(steps["gacl_paper"] / steps["plain"], 3),
        "official_variant_vs_official_algorithm": round(steps["official_variant"] / steps["official_algorithm"], 3),
        "gacl_detached_view_vs_plain": round(steps["gacl_paper_detached_view"] / steps["plain"], 3),
        "step_seconds": {m: round(s, 4) for m, s in steps.items()},
        "flops_vs_plain": {m: round(f / args.flops["plain"], 3) for m, f in args.flops.items()},
        "peak_memory_mb": memory,
        "setup": {
            "d_model": args.d_model,
            "layers": "12:3",
            "vocab": args.vocab,
            "batch": args.batch,
            "seq_len": args.seq_len,
            "rounds": args.rounds,
            "device": args.device,
            "threads": args.threads,
            "teacher": {"requested": args.teacher_dtype, "dtype": chosen, "why": why},
            "teacher_dtypes": args.teacher_dtypes,
            "bf16_matmul_speedup": round(speedup, 2),
            "cpu_caching_malloc": args.caching_malloc,
        },
        "targets": {k: list(v) for k, v in TARGETS.items()},
    }
    slow_bf16 = chosen == "bfloat16" and speedup < 1.0
    if slow_bf16:
        result["warning"] = (
            f"bfloat16 matrix products run at {speedup:.2f}x the float32 speed here: the bf16 teacher "
            "costs more than a float32 one (teacher_dtype auto would choose float32), and "
            "gacl_vs_plain is not comparable with figures from a machine with fast bf16"
        )
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"SMaLL-100-shaped model (12:3 layers, d={args.d_model}, vocab {args.vocab}), batch {args.batch}×{args.seq_len}, "
        f"median of {args.rounds} interleaved rounds on {args.device}"
        + (" (glibc keeps freed memory)" if args.caching_malloc else "")
    )
    for m in MODES:
        mem = f"{memory[m]:8.1f} MB" if m in memory else ""
        print(f"  {m:26s} {steps[m] * 1000:8.1f} ms/step  {mem}")
    print(
        f"  GACL+KD (paper) / plain:                    {result['gacl_vs_plain']:.2f}×  (target ≤ {TARGETS['gacl_vs_plain'][1]})"
    )
    floor = result["flops_vs_plain"]
    print(f"  GACL+KD (paper, detached dropout view) / plain: {result['gacl_detached_view_vs_plain']:.2f}×")
    print(
        "  the work itself (FLOPs / plain's): "
        + ", ".join(f"{m} {floor[m]:.2f}×" for m in MODES if m != "plain")
        + " (where an implementation without overhead lands)"
    )
    print(
        f"  official variant / official algorithm:      {result['official_variant_vs_official_algorithm']:.2f}×  "
        f"(target ≤ {TARGETS['official_variant_vs_official_algorithm'][1]})"
    )
    print(f"  teacher_dtype {args.teacher_dtype}: {chosen} ({why}); teacher dtypes held: {args.teacher_dtypes}")
    print(f"  bf16 matmul speed: {speedup:.2f}× fp32 on this machine")
    if slow_bf16:
        print(f"  WARNING: {result['warning']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
