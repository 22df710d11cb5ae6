"""Run by tests/trainers/test_gacl_ddp.py: GACL training runs of two steps on 1 or 2 processes, one after the other in one
launch (a two-process launch costs ~15 s of CPU before its first step); each writes its logs to a JSON file.

    python ddp_gacl_script.py MODEL_DIR OUT_DIR PER_DEVICE_BATCH JOB...
    torchrun --standalone --nproc_per_node 2 ddp_gacl_script.py MODEL_DIR OUT_DIR 4 JOB...

JOB: ``VARIANT[:REDUCTION[:GATHER]]`` — official|paper, mean|sum, gather|local (defaults mean, gather); the run's
logs go to OUT_DIR/VARIANT-REDUCTION-GATHER.json. Every trainer seeds itself (``seed=0``) and loads the model from
disk, so a run computes what it would in a launch of its own.
"""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from ddp_helpers import teardown  # noqa: E402
from fairmt.trainers.gacl import GACLConfig, GACLTrainer  # noqa: E402
from gacl_helpers import collator, gacl_dataset, load  # noqa: E402

torch.set_num_threads(1)
model_dir, out_dir, bs, jobs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
if not jobs:
    raise SystemExit("usage: ddp_gacl_script.py MODEL_DIR OUT_DIR PER_DEVICE_BATCH VARIANT[:REDUCTION[:GATHER]]...")
for job in jobs:
    variant, reduction, gather = (job.split(":") + ["mean", "gather"][job.count(":") :])[:3]
    out = out_dir / f"{variant}-{reduction}-{gather}.json"
    tm = load(model_dir)
    args = GACLConfig(
        output_dir=str(out) + ".run",
        per_device_train_batch_size=bs,
        learning_rate=1e-3,
        max_steps=2,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
        kd_alpha=0.4,
        gacl_variant=variant,
        positive_reduction=reduction,
        gather_across_processes=gather == "gather",
        dataloader_drop_last=True,
        ddp_timeout=120,
    )
    trainer = GACLTrainer(
        model=tm.model,
        args=args,
        train_dataset=gacl_dataset(tm),
        data_collator=collator(tm),
        processing_class=tm.tokenizer,
    )
    trainer.train()
    if trainer.is_world_process_zero():
        logs = [h for h in trainer.state.log_history if "loss_gc" in h]
        out.write_text(json.dumps({"logs": logs, "world_size": trainer.args.world_size}))
teardown()
