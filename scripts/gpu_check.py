#!/usr/bin/env python
"""GPU checks for the trainers, in one run, on a SMaLL-100-sized randomly initialised model (for the lent GPU machine).

    python scripts/gpu_check.py                 # d 1024, 12:3 layers, 128k vocabulary, bf16, on the GPU
    python scripts/gpu_check.py --tiny --steps 3   # the same checks on a tiny model (a CPU smoke run)

Prints one JSON object:

* ``gacl_vs_plain_tokens_per_s`` — training tokens/s of GACLTrainer (paper variant: dropout view + counterfactual,
  KD teacher in the default ``teacher_dtype: auto``, bf16 on a GPU with bf16 support) over the stock ``Seq2SeqTrainer``
  on the same model, batches and precision, one GPU (target ≥ 0.55); ``tokens_per_s`` holds both figures (source +
  target tokens, padding excluded);
* ``zero2_ok`` / ``fsdp2_ok`` — every GACL step under DeepSpeed ZeRO-2 and FSDP2 (single process, launched through
  torchrun so the engines initialise as under ``accelerate launch``) ran and logged a finite loss;
  ``null`` with a reason in ``skipped`` when the engine is not installed / not runnable here;
* ``peak_memory_mb`` — ``torch.cuda.max_memory_allocated`` per run (peak RSS growth on a CPU);
* ``sweep_fork`` — a ``fairmt sweep`` trial forked from the trial server (``fairmt/sweep/forked.py``) trains on the
  GPU: a worker process opens the server as ``fairmt sweep`` does, asks ``torch.cuda.is_available()`` as checking
  a recipe does, then runs ``fairmt train gacl/tiny_offline`` (2 steps, on the GPU where there is one) through the
  server; ``ok`` when it exited 0 and was forked (``null`` with the reason where no server could start).

Each measurement runs in a fresh subprocess, so one run's memory does not count against another's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def model_and_rows(tiny: bool, n_rows: int, seq_len: int):
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.manual_seed(0)
    d, vocab, heads = (64, 4000, 4) if tiny else (1024, 128112, 16)
    cfg = M2M100Config(
        vocab_size=vocab,
        d_model=d,
        encoder_layers=12,
        decoder_layers=3,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=4 * d,
        decoder_ffn_dim=4 * d,
        max_position_embeddings=256,
        dropout=0.1,
        attention_dropout=0.1,
        activation_dropout=0.0,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    g = torch.Generator().manual_seed(1)
    rows = []
    for i in range(n_rows):
        ids = torch.randint(4, vocab, (seq_len,), generator=g).tolist()
        cf = list(ids)
        cf[3] = int(torch.randint(4, vocab, (1,), generator=g))  # the swapped gender word
        rows.append(
            {
                "input_ids": ids,
                "attention_mask": [1] * seq_len,
                "cf_input_ids": cf,
                "cf_attention_mask": [1] * seq_len,
                "gender": i % 2,
                "labels": torch.randint(4, vocab, (seq_len,), generator=g).tolist(),
            }
        )
    return M2M100ForConditionalGeneration(cfg), rows


def sweep_fork(opts: dict) -> dict:
    """The ``sweep_fork`` check, in this (fresh) process: see the module docstring."""
    import torch

    from fairmt.sweep import forked
    from fairmt.sweep.engine import run_subprocess, trial_server

    out = Path(opts["out"]) / "sweep_fork"
    out.mkdir(parents=True, exist_ok=True)
    with trial_server(True) as server:
        if server is None:
            return {"ok": None, "why": forked.why_not()}
        cuda = torch.cuda.is_available()  # the worker asks after the fork, as checking a recipe does
        cmd = [sys.executable, "-m", "fairmt", "train", "gacl/tiny_offline", f"model={out / 'original'}"]
        cmd += [f"data.train={out / 'finetune.jsonl'}", f"training.output_dir={out / 'run'}"]
        cmd += ["tiny_model.pretrain_steps=2", "training.max_steps=2", "training.eval_steps=2"]
        cmd += [f"training.use_cpu={'false' if cuda else 'true'}"]
        rc = run_subprocess(cmd, out / "train.log")
    log = (out / "train.log").read_text(encoding="utf-8", errors="replace")
    was_forked = "# forked from the sweep worker's trial server" in log
    tail = [ln for ln in log.splitlines() if ln.strip()][-3:]
    return {"ok": rc == 0 and was_forked, "rc": rc, "forked": was_forked, "cuda": cuda, "log_tail": tail}


def worker(mode: str, opts: dict) -> dict:
    """One measured run in this process; returns its figures."""
    if mode == "sweep_fork":
        return sweep_fork(opts)
    import torch
    from datasets import Dataset
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, TrainerCallback, default_data_collator

    from fairmt.data.gacl import GenderContrastiveCollator
    from fairmt.trainers.gacl import GACLConfig, GACLTrainer

    cuda = torch.cuda.is_available()
    steps, bs, seq = opts["steps"], opts["batch"], opts["seq_len"]
    model, rows = model_and_rows(opts["tiny"], (steps + opts["warmup"]) * bs, seq)
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    class Clock(TrainerCallback):  # time the steps after the warm-up ones
        def __init__(self):
            self.start, self.losses = None, []

        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == opts["warmup"]:
                if cuda:
                    torch.cuda.synchronize()
                self.start = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                self.losses.append(float(logs["loss"]))

    common = dict(
        output_dir=opts["out"] + f"/{mode}",
        per_device_train_batch_size=bs,
        max_steps=steps + opts["warmup"],
        learning_rate=1e-4,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        bf16=cuda,
        use_cpu=not cuda,
        remove_unused_columns=False,
        dataloader_drop_last=True,
        seed=0,
    )
    if mode == "zero2":
        common["deepspeed"] = {
            "zero_optimization": {"stage": 2},
            "bf16": {"enabled": cuda},
            "train_micro_batch_size_per_gpu": "auto",
            "gradient_accumulation_steps": "auto",
        }
    if mode == "fsdp2":
        common.update(
            fsdp=True,
            fsdp_config={"version": 2, "auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "reshard_after_forward": True},
        )
    clock = Clock()
    ds = Dataset.from_list(rows)
    if mode == "plain":
        plain = ds.remove_columns(["cf_input_ids", "cf_attention_mask", "gender"])
        trainer = Seq2SeqTrainer(
            model=model,
            args=Seq2SeqTrainingArguments(**common),
            train_dataset=plain,
            data_collator=default_data_collator,
            callbacks=[clock],
        )  # fixed length: nothing to pad
    else:
        args = GACLConfig(**common, gacl_variant="paper", kd_alpha=0.4)
        trainer = GACLTrainer(
            model=model,
            args=args,
            train_dataset=ds,
            callbacks=[clock],
            data_collator=GenderContrastiveCollator(pad_token_id=1),
        )
    trainer.train()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - clock.start
    tokens = steps * bs * 2 * seq  # source + target tokens per measured step (no padding: fixed length)
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else _rss_mb()
    first, last = clock.losses[0], clock.losses[-1]
    return {
        "tokens_per_s": tokens / seconds,
        "peak_memory_mb": round(peak, 1),
        "first_loss": first,
        "last_loss": last,
        "ok": len(clock.losses) == steps + opts["warmup"] and all(map(_finite, clock.losses)),
    }


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")


def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(mode: str, opts: dict) -> tuple[dict | None, str | None]:
    out = Path(opts["out"]) / f"{mode}.json"
    cmd = [sys.executable, __file__, "--worker", mode, "--opts", json.dumps(opts), "--result", str(out)]
    if mode in ("zero2", "fsdp2"):  # the engines initialise from the torchrun environment, as under accelerate
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"] + cmd[1:]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc.returncode != 0 or not out.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return None, " | ".join(tail)[-500:]
    return json.loads(out.read_text()), None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="measured steps per run (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="unmeasured steps first (default 3)")
    ap.add_argument("--batch", type=int, default=8, help="sentences per step (default 8)")
    ap.add_argument("--seq-len", type=int, default=32, help="tokens per sentence (default 32)")
    ap.add_argument("--tiny", action="store_true", help="a tiny model (CPU smoke run)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--opts", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        result = worker(a.worker, json.loads(a.opts))
        if int(os.environ.get("RANK", "0")) == 0:
            Path(a.result).write_text(json.dumps(result))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        opts = {
            "steps": a.steps,
            "warmup": a.warmup,
            "batch": a.batch,
            "seq_len": a.seq_len,
            "tiny": a.tiny,
            "out": tmp,
        }
        runs, skipped = {}, {}
        for mode in ("plain", "gacl", "zero2", "fsdp2"):
            if mode == "zero2" and not _importable("deepspeed"):
                skipped[mode] = "deepspeed is not installed (pip install fairmt[deepspeed])"
                continue
            runs[mode], err = run_child(mode, opts)
            if err:
                skipped[mode] = err
        fork, err = run_child("sweep_fork", opts)
        if err:
            fork = {"ok": False, "why": err}
    import torch

    plain, gacl = runs.get("plain"), runs.get("gacl")
    report = {
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "model": "tiny" if a.tiny else "d1024 12:3 vocab128112",
        "gacl_vs_plain_tokens_per_s": round(gacl["tokens_per_s"] / plain["tokens_per_s"], 3)
        if plain and gacl
        else None,
        "tokens_per_s": {m: round(r["tokens_per_s"], 1) for m, r in runs.items() if r},
        "zero2_ok": runs["zero2"]["ok"] if runs.get("zero2") else None,
        "fsdp2_ok": runs["fsdp2"]["ok"] if runs.get("fsdp2") else None,
        "peak_memory_mb": {m: r["peak_memory_mb"] for m, r in runs.items() if r},
        "first_last_loss": {m: [round(r["first_loss"], 4), round(r["last_loss"], 4)] for m, r in runs.items() if r},
        "skipped": skipped,
        "sweep_fork": fork,
    }
    print(json.dumps(report, indent=1))
    return 0 if plain and gacl else 1


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


if __name__ == "__main__":
    sys.exit(main())
