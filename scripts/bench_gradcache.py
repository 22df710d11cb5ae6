#!/usr/bin/env python
"""Peak memory of one CSCL training step: batch 512 with gradient caching vs batch 32 plain vs batch 512 plain.

Each configuration runs in a fresh child process (so peaks do not mix) that builds the same BERT-style encoder
from a config (no download), runs one ``FairContrastiveTrainer.training_step`` with the one-stage CSCL objective
(two dropout views, ``(1−γ)·CE + γ·L_sup + λ·L_CS``), and reports the step's peak memory:

* on CUDA: ``torch.cuda.max_memory_allocated`` minus the allocation before the step;
* on CPU: the peak resident set size (``getrusage(...).ru_maxrss``) minus the RSS just before the step — the
  torch CPU allocator is invisible to ``tracemalloc``, RSS sees everything.

The ratios are computed from the numbers of this one run::

    OMP_NUM_THREADS=1 python scripts/bench_gradcache.py [--seq-len 64 --hidden 128 --layers 2 --chunk 32]

Targets (``TARGETS``): the cached big batch needs at most 1.5× the peak memory of the plain small one (the point of
gradient caching: memory set by the chunk, not the batch) and at most a quarter of the plain big batch's. ``--quick``
(what ``scripts/bench.py`` runs): big batch 256 instead of 512; ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# measure -> (comparison, target); scripts/bench.py reads these from here (the one place they are kept)
TARGETS = {"cached_big_vs_plain_small_memory": ("<=", 1.5), "cached_big_vs_plain_big_memory": ("<=", 0.25)}


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(batch: int, chunk: int | None, a: argparse.Namespace) -> dict:
    """Run one step in this process and return its peak memory."""
    import resource
    import tempfile

    import torch
    from transformers import BertConfig, BertForSequenceClassification

    sys.path.insert(0, str(REPO))
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cuda = torch.cuda.is_available() and not a.cpu
    cfg = BertConfig(
        vocab_size=1000,
        hidden_size=a.hidden,
        num_hidden_layers=a.layers,
        num_attention_heads=4,
        intermediate_size=4 * a.hidden,
        max_position_embeddings=a.seq_len + 2,
        num_labels=8,
    )
    model = BertForSequenceClassification(cfg)
    g = torch.Generator().manual_seed(1)
    inputs = {
        "input_ids": torch.randint(5, 1000, (batch, a.seq_len), generator=g),
        "attention_mask": torch.ones(batch, a.seq_len, dtype=torch.long),
        "labels": torch.randint(0, 8, (batch,), generator=g),
        "group": torch.randint(0, 2, (batch,), generator=g),
    }
    with tempfile.TemporaryDirectory() as tmp:
        args = FairContrastiveConfig(
            output_dir=tmp,
            objective="cscl",
            gamma=0.3,
            cs_lambda=1.0,
            report_to=[],
            use_cpu=not cuda,
            per_device_train_batch_size=batch,
            gradcache_chunk_size=chunk,
        )
        trainer = FairContrastiveTrainer(model=model, args=args)
        trainer.current_gradient_accumulation_steps = 1
        model = trainer.model
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        else:
            before = _rss_bytes()
        t0 = time.perf_counter()
        loss = trainer.training_step(model, inputs)
        seconds = time.perf_counter() - t0
        if cuda:
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    return {
        "batch": batch,
        "chunk": chunk,
        "peak_bytes": int(peak),
        "seconds": round(seconds, 2),
        "loss": float(loss),
        "device": "cuda" if cuda else "cpu",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--big", type=int, default=512)
    ap.add_argument("--small", type=int, default=32)
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--cpu", action="store_true", help="measure on CPU even if CUDA is available")
    ap.add_argument("--quick", action="store_true", help="big batch 256 (default 512)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--child", nargs=2, metavar=("BATCH", "CHUNK"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        chunk = None if a.child[1] == "none" else int(a.child[1])
        print(json.dumps(child(int(a.child[0]), chunk, a)))
        return 0
    if a.quick:
        a.big = 256
    base = [sys.executable, __file__, "--seq-len", str(a.seq_len), "--hidden", str(a.hidden), "--layers", str(a.layers)]
    say = (lambda *x, **k: print(*x, **k, file=sys.stderr)) if a.json else print
    if a.cpu:
        base.append("--cpu")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = {}
    for name, batch, chunk in (
        ("plain_small", a.small, None),
        ("cached_big", a.big, a.chunk),
        ("plain_big", a.big, None),
    ):
        out = subprocess.run(
            base + ["--child", str(batch), "none" if chunk is None else str(chunk)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        runs[name] = json.loads(out.stdout.strip().splitlines()[-1])
        r = runs[name]
        say(
            f"{name:12s} batch {batch:4d} chunk {str(chunk):5s} peak {r['peak_bytes'] / 2**20:8.1f} MiB  "
            f"step {r['seconds']:.2f}s  loss {r['loss']:.4f}  ({r['device']})",
            flush=True,
        )
    small, cached, big = (runs[k]["peak_bytes"] for k in ("plain_small", "cached_big", "plain_big"))
    say(f"\ncached batch {a.big} / plain batch {a.small}: {cached / small:.2f}x peak memory")
    say(f"plain batch {a.big} / plain batch {a.small}: {big / small:.2f}x peak memory")
    say(f"cached batch {a.big} / plain batch {a.big}: {cached / big:.2f}x peak memory")
    say(f"config: seq_len {a.seq_len}, hidden {a.hidden}, layers {a.layers}, CSCL one-stage, two dropout views")
    if a.json:
        print(
            json.dumps(
                {
                    "cached_big_vs_plain_small_memory": round(cached / small, 3),
                    "cached_big_vs_plain_big_memory": round(cached / big, 3),
                    "plain_big_vs_plain_small_memory": round(big / small, 3),
                    "peak_mib": {k: round(r["peak_bytes"] / 2**20, 1) for k, r in runs.items()},
                    "step_seconds": {k: r["seconds"] for k, r in runs.items()},
                    "loss": {k: r["loss"] for k, r in runs.items()},
                    "setup": {
                        "big": a.big,
                        "small": a.small,
                        "chunk": a.chunk,
                        "seq_len": a.seq_len,
                        "hidden": a.hidden,
                        "layers": a.layers,
                        "device": runs["plain_small"]["device"],
                    },
                    "targets": {k: list(v) for k, v in TARGETS.items()},
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
