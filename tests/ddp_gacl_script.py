"""Run by tests/test_gacl_ddp.py: one GACL training step, 1 or 2 processes, writes the first log to a JSON file.

    python ddp_gacl_script.py MODEL_DIR OUT.json PER_DEVICE_BATCH [official|paper] [mean|sum] [gather|local]
    torchrun --standalone --nproc_per_node 2 ddp_gacl_script.py MODEL_DIR OUT.json 4
"""

import json
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from ddp_helpers import teardown  # noqa: E402
from gacl_helpers import collator, gacl_dataset, load  # noqa: E402

from fairmt.trainers.gacl import GACLConfig, GACLTrainer  # noqa: E402

torch.set_num_threads(1)
model_dir, out, bs = sys.argv[1], sys.argv[2], int(sys.argv[3])
variant = sys.argv[4] if len(sys.argv) > 4 else "paper"
reduction = sys.argv[5] if len(sys.argv) > 5 else "mean"
gather = (sys.argv[6] if len(sys.argv) > 6 else "gather") == "gather"
tm = load(model_dir)
ds = gacl_dataset(tm)
args = GACLConfig(
    output_dir=out + ".run", per_device_train_batch_size=bs, learning_rate=1e-3, max_steps=2, logging_steps=1,
    report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True, seed=0, kd_alpha=0.4, gacl_variant=variant,
    positive_reduction=reduction, gather_across_processes=gather, dataloader_drop_last=True, ddp_timeout=120,
)
trainer = GACLTrainer(model=tm.model, args=args, train_dataset=ds, data_collator=collator(tm), processing_class=tm.tokenizer)
trainer.train()
if trainer.is_world_process_zero():
    logs = [h for h in trainer.state.log_history if "loss_gc" in h]
    with open(out, "w") as f:
        json.dump({"logs": logs, "world_size": trainer.args.world_size}, f)
teardown()
