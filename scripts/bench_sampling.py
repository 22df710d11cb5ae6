#!/usr/bin/env python
"""Cost of one fairness-driven-sampling step against one plain SimCLR step, batch 256, tiny random ResNet.

Both steps go through ``FairnessSamplingTrainer.training_step`` (kornia views, forward, NT-Xent, backward) plus the
optimizer step, on the same synthetic 32-pixel images:

* ``simclr`` — N images, two augmented views each: 2N encoded;
* ``fair`` (the default, ``negative_source="encode"``) — Algorithm 1's batch of N anchors, their N nearest
  same-cluster positives and N drawn negatives: 3N encoded; its time includes drawing the pairs (the batch
  sampler's positives look-up and negative sampling over the whole set, which runs in the main process);
* ``fair_bank`` — anchors and positives encoded (2N), negatives taken from the stored embeddings.

Decoding and collating the rows (DataLoader workers in a real run) is timed apart and not in the ratios; the index
refresh (embedding the whole set + the per-cluster NearestNeighbors) is timed once and reported amortised over an
epoch. Steps are interleaved (simclr, fair, fair_bank, simclr, ...) and the medians compared, all in one run::

    OMP_NUM_THREADS=1 python scripts/bench_sampling.py [--json] [--batch 256 --n 2048 --repeats 7]

Target: ``TARGETS`` below (issue 24's). ``--quick`` (what ``scripts/bench.py`` runs): 3 timed rounds after 1 warm-up.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

# measure -> (comparison, target); scripts/bench.py reads these from here (the one place they are kept)
TARGETS = {"fair_vs_simclr": ("<=", 1.3)}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--n", type=int, default=2048, help="training-set size (the index Z)")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--json", action="store_true", help="print the result as JSON only")
    p.add_argument("--quick", action="store_true", help="3 timed rounds after 1 warm-up")
    a = p.parse_args(argv)
    if a.quick:
        a.repeats, a.warmup = 3, 1

    from _bench_common import bench_torch, print_result, trainer_folder

    torch = bench_torch(threads=1)
    with trainer_folder("bench-sampling-") as tmp:  # removed at the end (mkdtemp left one per run in /tmp)
        out = _measure(a, torch, tmp)
    return print_result(out, a.json)


def _measure(a, torch, tmp: str) -> dict:
    from fairmt.data.images import ImageCollator, SimCLRAugmentation, processor_stats, synthetic_shapes
    from fairmt.data.sampling import IndexedCollator
    from fairmt.models.vision import build_simclr_model, load_image_processor, tiny_resnet
    from fairmt.trainers.sampling import FairnessSamplingConfig, FairnessSamplingTrainer

    folder = tiny_resnet(Path(tmp) / "resnet", image_size=a.image_size)
    processor = load_image_processor(str(folder))
    collator = ImageCollator(processor)
    augment = SimCLRAugmentation(*processor_stats(processor))
    data = synthetic_shapes(a.n, seed=0, image_size=a.image_size)

    def trainer(objective, **kw):
        torch.manual_seed(0)
        args = FairnessSamplingConfig(
            output_dir=f"{tmp}/{objective}",
            objective=objective,
            report_to=[],
            use_cpu=True,
            disable_tqdm=True,
            per_device_train_batch_size=a.batch,
            per_device_eval_batch_size=512,
            learning_rate=1e-3,
            max_steps=100,
            dataloader_drop_last=True,
            **kw,
        )
        t = FairnessSamplingTrainer(
            model=build_simclr_model(str(folder)),
            args=args,
            train_dataset=data.dataset,
            data_collator=collator,
            augmentation=augment,
        )
        t.create_optimizer_and_scheduler(num_training_steps=100)
        t.current_gradient_accumulation_steps = 1  # what train() sets before its first step
        return t

    # index_refresh_steps=0: the refresh is timed apart below, not inside a step
    runs = {
        "simclr": trainer("simclr"),
        "fair": trainer("sampling_pretrain", index_refresh_steps=0),
        "fair_bank": trainer("sampling_pretrain", negative_source="bank", index_refresh_steps=0),
    }
    t0 = time.perf_counter()
    runs["fair"].build_index()  # embeds all n images, K-means (K=4), positives by NearestNeighbors
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    runs["fair"].refresh_index(runs["fair"].model)  # what a refresh costs (embedding + positives)
    refresh_s = time.perf_counter() - t0
    runs["fair_bank"].build_index()
    from fairmt.data.sampling import FairPairBatchSampler

    samplers = {
        name: iter(
            _forever(
                FairPairBatchSampler(runs[name].pair_index, a.batch, 1, drop_last=True, with_negatives=name == "fair")
            )
        )
        for name in ("fair", "fair_bank")
    }
    indexed = IndexedCollator(collator)
    rows = data.dataset
    times: dict[str, list[float]] = {k: [] for k in runs}
    sample_s: dict[str, list[float]] = {"fair": [], "fair_bank": []}
    collate_s: dict[str, list[float]] = {k: [] for k in runs}
    perm = torch.randperm(a.n, generator=torch.Generator().manual_seed(0)).tolist()
    for r in range(a.warmup + a.repeats):
        for name, tr in runs.items():
            t0 = time.perf_counter()
            if name == "simclr":
                idx = perm[(r * a.batch) % (a.n - a.batch) :][: a.batch]
                ts = 0.0
            else:
                idx = next(samplers[name])
                ts = time.perf_counter() - t0
            t1 = time.perf_counter()
            batch = indexed([{**rows[i], "sample_index": i} for i in idx])
            tc = time.perf_counter() - t1
            t2 = time.perf_counter()
            tr.training_step(tr.model, batch)
            tr.optimizer.step()
            tr.optimizer.zero_grad()
            tt = time.perf_counter() - t2
            if r >= a.warmup:
                times[name].append(tt + ts)
                collate_s[name].append(tc)
                if name in sample_s:
                    sample_s[name].append(ts)
    med = {k: statistics.median(v) for k, v in times.items()}
    steps_per_epoch = a.n // a.batch
    out = {
        "fair_vs_simclr": round(med["fair"] / med["simclr"], 3),
        "fair_bank_vs_simclr": round(med["fair_bank"] / med["simclr"], 3),
        "fair_vs_simclr_per_encoded_image": round((med["fair"] / 3) / (med["simclr"] / 2), 3),
        "step_s": {k: round(v, 4) for k, v in med.items()},
        "pair_drawing_ms_per_batch": {k: round(1000 * statistics.median(v), 2) for k, v in sample_s.items()},
        "pair_drawing_share_of_fair_step": round(statistics.median(sample_s["fair"]) / med["fair"], 4),
        "images_encoded_per_step": {"simclr": 2 * a.batch, "fair": 3 * a.batch, "fair_bank": 2 * a.batch},
        "collate_s_not_in_ratio": {k: round(statistics.median(v), 4) for k, v in collate_s.items()},
        "index_build_s": round(build_s, 3),
        "index_refresh_s": round(refresh_s, 3),
        "index_refresh_share_per_epoch": round(refresh_s / (steps_per_epoch * med["fair"]), 4),
        "batch": a.batch,
        "n": a.n,
        "image_size": a.image_size,
        "repeats": a.repeats,
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        "torch_threads": torch.get_num_threads(),
        "note": "medians of interleaved steps in one run; a shared machine makes absolute times noisy",
        "targets": {k: list(v) for k, v in TARGETS.items()},
    }
    return out


def _forever(sampler):
    while True:
        yield from sampler


if __name__ == "__main__":
    main()
