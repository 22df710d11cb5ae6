"""Run by tests/trainers/test_sharded_training.py: two optimizer steps of fairmt trainers, on one process, with DDP, or
sharded with FSDP2 or DeepSpeed ZeRO — several trainings, one after the other, in one launch (each launch of two
processes costs ~15 s of CPU before its first step).

    python sharded_script.py WORKDIR one JOB...
    torchrun --standalone --nproc_per_node 2 sharded_script.py WORKDIR ENGINE JOB...

ENGINE: ddp, fsdp2, zero2 or zero3 (DeepSpeed). JOB: ``METHOD:PER_DEVICE_BATCH`` or ``METHOD:PER_DEVICE_BATCH:resume``.

METHOD: gacl-paper (counterfactual negatives, KD teacher), gacl-official (no-grad dropout view, KD teacher), ccd,
fcl. WORKDIR holds the inputs the test built (``model/`` for GACL, ``bert/`` + ``tuples.jsonl`` for CCD). With
``resume`` the run saves a checkpoint at step 2, then a second trainer resumes from it for one more step. Rank 0
writes the logs, the world size, the distributed type and every parameter (gathered whole) to
WORKDIR/ENGINE-METHOD.json / .json.pt; the run folder is WORKDIR/ENGINE-METHOD.json.run. Every trainer seeds itself
(``seed=0``), so a job computes what it would compute in a launch of its own.
"""

import copy
import json
import sys
from pathlib import Path

import torch

from ddp_helpers import fcl_rows, full_parameters, teardown  # beside this script

torch.set_num_threads(1)
work, engine, jobs = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
if engine not in ("one", "ddp", "fsdp2", "zero2", "zero3") or not jobs:
    raise SystemExit(
        f"usage: sharded_script.py WORKDIR one|ddp|fsdp2|zero2|zero3 METHOD:BATCH[:resume]... ({sys.argv})"
    )
if engine.startswith("zero"):
    # DeepSpeed's CPU communication backend JIT-compiles its shared-memory all-reduce kernel (deepspeed_shm_comm,
    # ~40 s of CPU in every fresh environment) when it starts; the kernel serves inference_all_reduce only, never
    # ZeRO training, which goes through torch.distributed (gloo) either way
    # (the module, not the ``torch`` attribute of the deepspeed.comm package, which is torch itself)
    import importlib

    importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None


# as recipes/accelerate/fsdp2.yaml: one FSDP unit per block the model lists in _no_split_modules (M2M-100 encoder and
# decoder layers, BERT embeddings and layers; none for the MLP, which is one root unit)
SHARDING = {
    "fsdp2": {
        "fsdp": True,
        "fsdp_config": {
            "version": 2,
            "reshard_after_forward": True,
            "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "state_dict_type": "SHARDED_STATE_DICT",
        },
    },
    # AdamW as the Trainer's default (DeepSpeed's own optimizer would differ); runs on CPU processes with use_cpu.
    # torch_adam: DeepSpeed builds torch.optim.AdamW, the DDP run's optimizer, instead of JIT-compiling its FusedAdam
    # CPU op (about 90 s of compilation in every fresh environment, i.e. every CI run)
    **{
        f"zero{stage}": {
            "deepspeed": {
                "zero_optimization": {"stage": stage},
                "train_micro_batch_size_per_gpu": "auto",
                "gradient_accumulation_steps": "auto",
                "gradient_clipping": "auto",
                "optimizer": {
                    "type": "AdamW",
                    "params": {
                        "lr": "auto",
                        "weight_decay": "auto",
                        "betas": "auto",
                        "eps": "auto",
                        "torch_adam": True,
                    },
                },
            }
        }
        for stage in (2, 3)
    },
}.get(engine, {})


def build(method, bs, output_dir, resume, max_steps=2):
    kw = dict(
        per_device_train_batch_size=bs,
        max_steps=max_steps,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        dataloader_drop_last=True,
        ddp_timeout=120,
        save_strategy="steps" if resume else "no",
        save_steps=2,
        output_dir=output_dir,
    )
    if method.startswith("gacl"):
        from fairmt.trainers.gacl import GACLConfig, GACLTrainer
        from gacl_helpers import collator, gacl_dataset, load

        tm = load(work / "model")
        args = GACLConfig(
            **kw, **copy.deepcopy(SHARDING), learning_rate=1e-3, kd_alpha=0.4, gacl_variant=method.split("-")[1]
        )
        return GACLTrainer(
            model=tm.model,
            args=args,
            train_dataset=gacl_dataset(tm),
            data_collator=collator(tm),
            processing_class=tm.tokenizer,
        ), "loss_gc"
    if method == "ccd":
        from transformers import AutoModel, AutoTokenizer

        from fairmt.data.augment.tuples import read_tuples, tuples_to_dataset
        from fairmt.trainers.ccd import CCDConfig, CCDTrainer

        args = CCDConfig(**kw, **copy.deepcopy(SHARDING), learning_rate=1e-3, rho_estimator="median")
        return CCDTrainer(
            model=AutoModel.from_pretrained(work / "bert"),
            args=args,
            train_dataset=tuples_to_dataset(read_tuples(work / "tuples.jsonl")),
            processing_class=AutoTokenizer.from_pretrained(work / "bert"),
        ), "loss_bias"
    if method == "fcl":
        from datasets import Dataset

        from fairmt.data.classification import ClassificationCollator
        from fairmt.models.text_classifiers import MLPClassifier
        from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

        torch.manual_seed(0)
        args = FairContrastiveConfig(
            **kw,
            **copy.deepcopy(SHARDING),
            objective="fcl",
            views="none",
            fcl_alpha=1.0,
            fcl_beta=0.5,
            learning_rate=5e-2,
        )
        return FairContrastiveTrainer(
            model=MLPClassifier(16, 3, hidden_dim=32, dropout=0.0),
            args=args,
            train_dataset=Dataset.from_list(fcl_rows()),
            data_collator=ClassificationCollator(),
        ), "loss_fcl"
    raise SystemExit(f"unknown method {method}")


def run(method, bs, resume):
    out = str(work / f"{engine}-{method}.json")
    trainer, key = build(method, bs, out + ".run", resume)
    trainer.train()
    report = {
        "world_size": trainer.args.world_size,
        "distributed_type": str(trainer.accelerator.distributed_type),
        "logs": [h for h in trainer.state.log_history if key in h],
    }
    if engine == "zero3":  # partitioned parameters: gather them whole for the comparison
        import deepspeed

        with deepspeed.zero.GatheredParameters(list(trainer.model.parameters())):
            params = full_parameters(trainer.model)
    else:
        params = full_parameters(trainer.model_wrapped)
    if resume:
        trainer, _ = build(method, bs, out + ".run", resume, max_steps=3)
        trainer.train(resume_from_checkpoint=out + ".run/checkpoint-2")
        report["resumed_logs"] = [h for h in trainer.state.log_history if key in h]
        report["resumed_global_step"] = trainer.state.global_step
    if trainer.is_world_process_zero():
        Path(out).write_text(json.dumps(report))
        torch.save(params, out + ".pt")


for job in jobs:
    method, bs, *flags = job.split(":")
    if flags not in ([], ["resume"]):
        raise SystemExit(f"bad job {job!r}: METHOD:BATCH[:resume]")
    run(method, int(bs), resume=bool(flags))
teardown()
