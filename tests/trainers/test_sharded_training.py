"""Sharded training for the fairmt trainers on two CPU processes (gloo): FSDP2 (fully_shard) and DeepSpeed ZeRO-2/3
compute what one process (or DDP) computes, checkpoint and resume, never save the KD teacher, and write a loadable
final model.

accelerate 1.15 runs FSDP only on accelerators and silently trains with DDP on CPU processes; fairmt's ShardingMixin
switches it to FSDP2 there (fairmt/trainers/sharding.py), which is what these tests exercise — the same
``fsdp2_prepare_model`` path a GPU run takes. DeepSpeed 0.19 runs on CPU processes with its CPU accelerator when the
training arguments say ``use_cpu``.
"""

import json
import os
import sys
from pathlib import Path

import pytest
import torch

import procs
from fairmt.errors import FairmtError
from fairmt.trainers.sharding import check_not_zero3_partitioned, share_tied_embedding_modules

HERE = Path(__file__).resolve().parents[1] / "support"
SCRIPT = str(HERE / "sharded_script.py")


# ---- fast, in-process -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["m2m100", "nllb"])
def test_tied_embedding_modules_become_one_module_with_identical_outputs(tmp_path, arch):
    from gacl_helpers import load, tiny_model_dir

    tm = load(tiny_model_dir(tmp_path / "m", arch=arch, dropout=0.0))
    model = tm.model.eval()
    batch = tm.encode(["The doctor finished her work."], ["Die Ärztin beendete ihre Arbeit."], max_length=32)
    ids, labels = torch.tensor(batch["input_ids"]), torch.tensor(batch["labels"])
    before_keys = list(model.state_dict())
    with torch.no_grad():
        before = model(input_ids=ids, labels=labels).logits
    replaced = share_tied_embedding_modules(model)
    assert sorted(replaced) == ["model.decoder.embed_tokens", "model.encoder.embed_tokens"]
    assert model.model.encoder.embed_tokens is model.model.shared is model.model.decoder.embed_tokens
    with torch.no_grad():
        after = model(input_ids=ids, labels=labels).logits
    assert torch.equal(before, after)
    assert list(model.state_dict()) == before_keys
    assert share_tied_embedding_modules(model) == []  # idempotent


def test_untied_or_rescaled_embeddings_are_left_alone():
    from transformers import BertConfig, BertModel

    bert = BertModel(
        BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    )
    assert share_tied_embedding_modules(bert) == []
    assert share_tied_embedding_modules(torch.nn.Linear(3, 3)) == []


def _fcl_trainer(tmp_path, **kw):
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    args = FairContrastiveConfig(
        output_dir=str(tmp_path / "o"), use_cpu=True, report_to=[], objective="fcl", views="none", **kw
    )
    return FairContrastiveTrainer(model=MLPClassifier(4, 2, hidden_dim=8), args=args, train_dataset=[{"x": 1}])


def test_fsdp1_without_an_accelerator_is_refused_naming_the_fsdp2_config(tmp_path, monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: FSDP1 is allowed")
    with pytest.raises(FairmtError, match=r"FSDP1 .*fsdp2\.yaml"):
        _fcl_trainer(tmp_path, fsdp=True, fsdp_config={"version": 1})
    # the same request made by `accelerate launch --config_file recipes/accelerate/fsdp.yaml`
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    monkeypatch.setenv("FSDP_VERSION", "1")
    with pytest.raises(FairmtError, match="FSDP1"):
        _fcl_trainer(tmp_path)


def test_zero3_partitioned_frozen_model_is_refused():
    frozen = torch.nn.Linear(4, 4)
    check_not_zero3_partitioned(frozen, "KD teacher")  # an ordinary module passes
    check_not_zero3_partitioned(None, "KD teacher")
    frozen.weight.ds_id = 7  # what deepspeed.zero.Init leaves on a partitioned parameter
    with pytest.raises(FairmtError, match="KD teacher was partitioned by DeepSpeed ZeRO-3"):
        check_not_zero3_partitioned(frozen, "KD teacher")


# ---- two processes ----------------------------------------------------------------------------------------------
# One job per engine runs every training the tests compare (tests/support/sharded_script.py): one process with the whole
# batch (in the pytest process), DDP, FSDP2, ZeRO-2 and ZeRO-3 on the two processes of the torchrun pool with half of
# it each (a torchrun launch per engine cost ~15 s of CPU before its first step). A job starts
# when the first test that needs it asks for it.

# per engine, the jobs it runs (METHOD:PER_DEVICE_BATCH[:resume]); the one-process batch is the global one
JOBS = {
    "one": ["gacl-paper:8", "gacl-official:8", "ccd:8", "fcl:16"],
    "ddp": ["gacl-paper:4:resume", "ccd:4"],
    "fsdp2": ["gacl-paper:4:resume", "gacl-official:4", "ccd:4", "fcl:8"],
    "zero2": ["gacl-paper:4:resume", "fcl:8"],
    "zero3": ["gacl-paper:4:resume", "ccd:4"],
}


class ShardedRuns:
    """The results of the launches in JOBS, launched on first use: ``runs("fsdp2", "ccd")`` is (report, params)."""

    def __init__(self, work: Path, pool):
        self.work, self.pool, self.launched = work, pool, set()

    def __call__(self, engine: str, method: str):
        if engine not in self.launched:
            self.launched.add(engine)  # once, also when it fails: the next test reports the missing output
            if engine == "one":  # in this process: no interpreter start and imports for two-step runs
                procs.in_process(SCRIPT, self.work, engine, *JOBS[engine], cwd=self.work)
            else:  # DDP, FSDP2 and ZeRO alike: the test run's torchrun pool (2 gloo processes, as a torchrun launch)
                self.pool.run(SCRIPT, self.work, engine, *JOBS[engine], cwd=self.work, timeout=400)
        out = self.work / f"{engine}-{method}.json"
        assert out.is_file(), f"the {engine} launch wrote no {out.name} (it failed in an earlier test)"
        return json.loads(out.read_text()), torch.load(str(out) + ".pt")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The inputs of every sharded run: a tiny M2M-100 (``model/``, no dropout: the runs see identical
    representations), a tiny BERT and CDA tuples for CCD."""
    from gacl_helpers import tiny_model_dir
    from tiny_encoders import write_ccd_inputs

    work = tmp_path_factory.mktemp("sharded")
    tiny_model_dir(work / "model", dropout=0.0)
    write_ccd_inputs(work)
    return work


@pytest.fixture(scope="module")
def runs(work, torchrun_pool):
    return ShardedRuns(work, torchrun_pool)


def _same_as_ddp(runs, engine, expected_type):
    """GACL paper variant with KD teacher under ``engine``: as one process (batch 8) and DDP (4 + 4, resumed)."""
    (one, _), (ddp, p_ddp) = runs("one", "gacl-paper"), runs("ddp", "gacl-paper")
    sharded, p_sharded = runs(engine, "gacl-paper")
    assert ddp["distributed_type"] == "DistributedType.MULTI_CPU" and sharded["distributed_type"] == expected_type
    assert one["world_size"] == 1 and ddp["world_size"] == sharded["world_size"] == 2
    # the contrastive and KD terms see the same 8 sentences in step 1 (candidates gathered across processes)
    assert sharded["logs"][0]["loss_gc"] == pytest.approx(one["logs"][0]["loss_gc"], rel=1e-5)
    assert sharded["logs"][0]["loss_kd"] == pytest.approx(one["logs"][0]["loss_kd"], abs=1e-6)
    # sharding changes nothing in the maths: the same losses and weights as DDP after two optimizer steps
    for a, b in zip(ddp["logs"], sharded["logs"], strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5)
    assert p_sharded.shape == p_ddp.shape and (p_sharded - p_ddp).abs().max() < 1e-5
    # resume_from_checkpoint from checkpoint-2: step 3 as DDP's resumed step 3
    assert sharded["resumed_global_step"] == 3
    assert sharded["resumed_logs"][-1]["loss"] == pytest.approx(ddp["resumed_logs"][-1]["loss"], rel=1e-5)
    return p_sharded


@pytest.mark.slow
def test_gacl_paper_fsdp2_equals_ddp_and_one_process_and_resumes(work, runs):
    p_fsdp = _same_as_ddp(runs, "fsdp2", "DistributedType.FSDP")
    from ddp_helpers import full_parameters
    from gacl_helpers import load

    start = full_parameters(load(work / "model").model)
    assert (p_fsdp - start).abs().max() > 1e-4  # the weights did move: not two untouched copies compared
    # the sharded checkpoint holds the student's parameters only (the KD teacher is never saved)
    from torch.distributed.checkpoint import FileSystemReader

    shards = work / "fsdp2-gacl-paper.json.run" / "checkpoint-2" / "pytorch_model_fsdp_0"
    saved = set(FileSystemReader(str(shards)).read_metadata().state_dict_metadata)
    assert saved == {f"model.{k}" for k in load(work / "model").model.state_dict()}


@pytest.mark.slow
def test_gacl_official_fsdp2_matches_one_process(runs):
    (one, _), (fsdp, _) = runs("one", "gacl-official"), runs("fsdp2", "gacl-official")
    assert fsdp["distributed_type"] == "DistributedType.FSDP" and len(fsdp["logs"]) == 2
    assert fsdp["logs"][0]["loss_gc"] == pytest.approx(one["logs"][0]["loss_gc"], rel=1e-5)
    assert fsdp["logs"][0]["loss_kd"] == pytest.approx(one["logs"][0]["loss_kd"], abs=1e-6)


@pytest.mark.slow
def test_ccd_fsdp2_matches_one_process(runs):
    (one, _), (_, p_ddp), (fsdp, p_fsdp) = runs("one", "ccd"), runs("ddp", "ccd"), runs("fsdp2", "ccd")
    assert fsdp["distributed_type"] == "DistributedType.FSDP"
    for a, b in zip(one["logs"], fsdp["logs"]):
        assert b["loss_bias"] == pytest.approx(a["loss_bias"], rel=1e-4)
    # Adam turns float noise in near-zero gradients into lr-sized steps, so the weights are compared with DDP
    # (same per-process arithmetic), not with one process
    assert (p_fsdp - p_ddp).abs().max() < 1e-6


@pytest.mark.slow
def test_fair_contrastive_fsdp2_matches_one_process(runs):
    (one, p_one), (fsdp, p_fsdp) = runs("one", "fcl"), runs("fsdp2", "fcl")
    assert fsdp["distributed_type"] == "DistributedType.FSDP"
    for k in ("loss_scl", "loss_fcl"):
        assert fsdp["logs"][0][k] == pytest.approx(one["logs"][0][k], rel=1e-5)
    assert (p_fsdp - p_one).abs().max() < 1e-5


@pytest.mark.slow
def test_accelerate_launch_with_the_fsdp2_config_trains_and_saves_a_loadable_model(work, tmp_path):
    """The shipped FSDP2 accelerate config through `accelerate launch -m fairmt train`: sharded checkpoints, and a
    final model (gathered from the shards) that from_pretrained loads."""
    import yaml

    from fairmt.data.demo_corpus import demo_splits
    from fairmt.models import load_translation_model

    _, balanced, _ = demo_splits()
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"translation": p.translation}) + "\n" for p in balanced[:96]))
    recipe = tmp_path / "r.yaml"
    out = tmp_path / "out"
    recipe.write_text(
        yaml.safe_dump(
            {
                "method": "gacl",
                "model": str(work / "model"),
                "data": {"train": str(data), "max_length": 48},
                "training": {
                    "output_dir": str(out),
                    "per_device_train_batch_size": 4,
                    "max_steps": 2,
                    "logging_steps": 1,
                    "report_to": [],
                    "disable_tqdm": True,
                    "dataloader_drop_last": True,
                    "save_strategy": "steps",
                    "save_steps": 2,
                    "learning_rate": 1e-2,
                },
            }
        )
    )
    config = HERE.parents[1] / "recipes" / "accelerate" / "fsdp2.yaml"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = procs.run(
        [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            str(config),
            "--mixed_precision",
            "no",
            "-m",
            "fairmt",
            "train",
            str(recipe),
            "training.use_cpu=true",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "checkpoint-2" / "pytorch_model_fsdp_0").is_dir()
    trained = load_translation_model(str(out), "en", "de").model
    start = load_translation_model(str(work / "model"), "en", "de").model
    diffs = [(a - b).abs().max().item() for a, b in zip(trained.parameters(), start.parameters())]
    assert max(diffs) > 1e-4  # the saved model is the trained one, gathered whole


deepspeed_needed = pytest.mark.needs("deepspeed")  # tests/support/needs.py


@pytest.mark.slow
@deepspeed_needed
@pytest.mark.parametrize("stage", [2, 3])
def test_gacl_paper_deepspeed_zero_equals_ddp_and_resumes(runs, stage):
    """ZeRO-2 and ZeRO-3 (parameters partitioned; the KD teacher stays a whole frozen copy, also when the resuming
    run loads the student under the active ZeRO-3 config)."""
    _same_as_ddp(runs, f"zero{stage}", "DistributedType.DEEPSPEED")


@pytest.mark.slow
@deepspeed_needed
def test_ccd_deepspeed_zero3_matches_one_process(runs):
    (one, _), (zero, _) = runs("one", "ccd"), runs("zero3", "ccd")
    assert zero["distributed_type"] == "DistributedType.DEEPSPEED"
    for a, b in zip(one["logs"], zero["logs"], strict=True):
        assert b["loss_bias"] == pytest.approx(a["loss_bias"], rel=1e-4)


@pytest.mark.slow
@deepspeed_needed
def test_fair_contrastive_deepspeed_zero2_matches_one_process(runs):
    (one, p_one), (zero, p_zero) = runs("one", "fcl"), runs("zero2", "fcl")
    assert zero["distributed_type"] == "DistributedType.DEEPSPEED"
    for k in ("loss_scl", "loss_fcl"):
        assert zero["logs"][0][k] == pytest.approx(one["logs"][0][k], rel=1e-5)
    assert (p_zero - p_one).abs().max() < 1e-5


@deepspeed_needed
def test_an_invalid_deepspeed_config_is_refused_before_training(tmp_path, torchrun_pool):
    """DeepSpeed validates its config only inside deepspeed.initialize (the first step); the trainers check the ZeRO
    section with DeepSpeed's own schema when they are built. Run away from the pytest process: TrainingArguments with
    a DeepSpeed config set process-wide state (ACCELERATE_USE_DEEPSPEED, accelerate's singleton) that would leak into
    other tests. A job of the torchrun pool (which puts the environment and transformers' DeepSpeed config back after
    every job, and runs the ZeRO jobs above) rather than a fresh interpreter of its own (~6 s of imports): each of its
    two processes checks, and writes what it saw."""
    script = tmp_path / "check.py"
    script.write_text("""
import os
import sys
from test_sharded_training import _fcl_trainer
from fairmt.errors import FairmtError
from pathlib import Path
tmp = Path(sys.argv[1])
seen = []
try:
    _fcl_trainer(tmp, deepspeed={"zero_optimization": {"stage": 7}, "train_micro_batch_size_per_gpu": "auto"})
    seen.append("NOT REFUSED")
except FairmtError as err:
    seen.append(f"REFUSED {err}")
_fcl_trainer(tmp / "ok", deepspeed={"zero_optimization": {"stage": 2, "overlap_comm": "auto"},
                                    "train_micro_batch_size_per_gpu": "auto"})  # a valid one passes
seen.append("VALID OK")
(tmp / f"rank{os.environ['RANK']}.txt").write_text("\\n".join(seen))
""")
    torchrun_pool.run(script, tmp_path, cwd=tmp_path, timeout=300)
    for rank in (0, 1):
        seen = (tmp_path / f"rank{rank}.txt").read_text()
        assert (
            "REFUSED invalid DeepSpeed config (training.deepspeed): zero_optimization: stage: Input should be 0, "
            "1, 2" in seen
        )
        assert "VALID OK" in seen
