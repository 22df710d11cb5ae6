"""Run by tests/trainers/test_ccd_trainer.py: two CCD training steps with 1 or 2 processes; writes the logs to a JSON file.

python ddp_ccd_script.py MODEL_DIR TUPLES.jsonl OUT.json PER_DEVICE_BATCH
torchrun --standalone --nproc_per_node 2 ddp_ccd_script.py MODEL_DIR TUPLES.jsonl OUT.json 4
"""

import sys

import torch
from transformers import AutoModel, AutoTokenizer

from ddp_helpers import teardown, write_run_report  # beside this script
from fairmt.data.augment.tuples import read_tuples, tuples_to_dataset
from fairmt.trainers.ccd import CCDConfig, CCDTrainer

torch.set_num_threads(1)
model_dir, tuples, out, bs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
args = CCDConfig(
    output_dir=out + ".run",
    per_device_train_batch_size=bs,
    learning_rate=1e-3,
    max_steps=2,
    logging_steps=1,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
    rho_estimator="median",
    dataloader_drop_last=True,
    ddp_timeout=120,
)
trainer = CCDTrainer(
    model=AutoModel.from_pretrained(model_dir),
    args=args,
    train_dataset=tuples_to_dataset(read_tuples(tuples)),
    processing_class=AutoTokenizer.from_pretrained(model_dir),
)
trainer.train()
write_run_report(trainer, out, "loss_bias", rho=trainer.rho)
teardown()
