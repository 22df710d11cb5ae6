"""Run by tests/trainers/test_fair_contrastive_trainer.py: two FCL steps (CE + SupCon − FCL) with 1 or 2 processes.

python ddp_fair_contrastive_script.py OUT.json PER_DEVICE_BATCH
torchrun --standalone --nproc_per_node 2 ddp_fair_contrastive_script.py OUT.json 8
"""

import sys

import torch
from datasets import Dataset

from ddp_helpers import fcl_rows, teardown, write_run_report  # beside this script
from fairmt.data.classification import ClassificationCollator
from fairmt.models.text_classifiers import MLPClassifier
from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

torch.set_num_threads(1)
out, bs = sys.argv[1], int(sys.argv[2])
rows = fcl_rows()
torch.manual_seed(0)
model = MLPClassifier(16, 3, hidden_dim=32, dropout=0.0)  # no dropout: the runs must be comparable step by step
args = FairContrastiveConfig(
    output_dir=out + ".run",
    objective="fcl",
    views="none",
    fcl_alpha=1.0,
    fcl_beta=0.5,
    per_device_train_batch_size=bs,
    learning_rate=5e-2,
    max_steps=2,
    logging_steps=1,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
    dataloader_drop_last=True,
    ddp_timeout=120,
)
trainer = FairContrastiveTrainer(
    model=model, args=args, train_dataset=Dataset.from_list(rows), data_collator=ClassificationCollator()
)
trainer.train()
write_run_report(trainer, out, "loss_fcl")
teardown()
