"""Run by tests/trainers/test_sampling.py: fairness-driven sampling (Algorithm 1 batches) and SimCLR with 1 or 2 processes.

python ddp_sampling_script.py OUT.json OBJECTIVE PER_DEVICE_BATCH
torchrun --standalone --nproc_per_node 2 ddp_sampling_script.py OUT.json OBJECTIVE 8
"""

import sys

import torch
from datasets import Dataset

from ddp_helpers import fcl_rows, teardown, write_run_report  # beside this script
from fairmt.data.classification import ClassificationCollator
from fairmt.models.text_classifiers import MLPClassifier
from fairmt.trainers.sampling import FairnessSamplingConfig, FairnessSamplingTrainer

torch.set_num_threads(1)
out, objective, bs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [{"features": r["features"]} for r in fcl_rows(n=64)]
torch.manual_seed(0)
model = MLPClassifier(16, 3, hidden_dim=32, dropout=0.1 if objective == "simclr" else 0.0)
args = FairnessSamplingConfig(
    output_dir=out + ".run",
    objective=objective,
    per_device_train_batch_size=bs,
    learning_rate=5e-2,
    num_train_epochs=2,
    logging_steps=1,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
    dataloader_drop_last=True,
    ddp_timeout=120,
    n_clusters=4,
    kmeans_n_init=2,
    index_refresh_steps=0,
)
trainer = FairnessSamplingTrainer(
    model=model, args=args, train_dataset=Dataset.from_list(rows), data_collator=ClassificationCollator()
)
anchors = []
real = trainer.objective_terms


def spy(m, inputs):
    if "sample_index" in inputs:
        n = len(inputs["sample_index"]) // 3
        anchors.append(inputs["sample_index"][:n].tolist())
    return real(m, inputs)


trainer.objective_terms = spy
trainer.train()
gathered = [anchors]
if trainer.args.world_size > 1:
    gathered = [None] * trainer.args.world_size
    torch.distributed.all_gather_object(gathered, anchors)
write_run_report(
    trainer,
    out,
    "loss_ntxent",
    anchors=gathered,
    steps=trainer.state.global_step,
    labels=None if trainer.pair_index is None else trainer.pair_index.labels.tolist(),
)
teardown()
