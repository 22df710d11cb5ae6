"""Run by tests/recipes/test_gacl_recipe.py: one evaluation with GenEvalCallback under 1 or 2 processes.

python ddp_geneval_script.py MODEL_DIR OUT.json
torchrun --standalone --nproc_per_node 2 ddp_geneval_script.py MODEL_DIR OUT.json
"""

import json
import sys

import torch

from ddp_helpers import teardown  # beside this script
from fairmt.data.demo_corpus import demo_splits
from fairmt.data.gacl import GenderContrastiveCollator
from fairmt.eval.geneval import GenEvalCounterfactualData
from fairmt.model_eval.callbacks import GenEvalCallback
from fairmt.models.mt import load_translation_model
from fairmt.trainers.gacl import GACLConfig, GACLTrainer
from gacl_helpers import gacl_dataset  # beside this script

torch.set_num_threads(1)
model_dir, out = sys.argv[1], sys.argv[2]
tm = load_translation_model(model_dir, "en", "de")
_, _, heldout = demo_splits()
m, f = heldout[:5], heldout[5:10]  # 5 pairs: an uneven split over 2 processes
data = GenEvalCounterfactualData(
    lang="de",
    split="dev",
    masculine_sources=[p.en for p in m],
    feminine_sources=[p.en for p in f],
    masculine_refs=[p.de for p in m],
    feminine_refs=[p.de for p in f],
)
args = GACLConfig(
    output_dir=out + ".run",
    per_device_eval_batch_size=2,
    report_to=[],
    use_cpu=True,
    disable_tqdm=True,
    remove_unused_columns=False,
    kd_alpha=0.0,
    ddp_timeout=120,
)
trainer = GACLTrainer(
    model=tm.model,
    args=args,
    eval_dataset=gacl_dataset(tm, n=4),
    data_collator=GenderContrastiveCollator(tm.tokenizer.pad_token_id),
)
cb = GenEvalCallback(tm, "de", data=data, max_new_tokens=12)
trainer.add_callback(cb)
metrics = trainer.evaluate()
counts = [cb.translated_here]
if trainer.args.world_size > 1:
    counts = [None] * trainer.args.world_size
    torch.distributed.all_gather_object(counts, cb.translated_here)
if trainer.is_world_process_zero():
    with open(out, "w") as fh:
        json.dump(
            {
                "world_size": trainer.args.world_size,
                "counts": counts,
                "hypotheses": cb.last_hypotheses,
                "metrics": {k: v for k, v in metrics.items() if k.startswith("eval_geneval")},
            },
            fh,
        )
teardown()
