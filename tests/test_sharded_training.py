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
import procs
import torch

from fairmt.errors import FairmtError
from fairmt.trainers.sharding import check_not_zero3_partitioned, share_tied_embedding_modules

HERE = Path(__file__).parent
SCRIPT = str(HERE / "sharded_script.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]


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

    bert = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32))
    assert share_tied_embedding_modules(bert) == []
    assert share_tied_embedding_modules(torch.nn.Linear(3, 3)) == []


def _fcl_trainer(tmp_path, **kw):
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    args = FairContrastiveConfig(output_dir=str(tmp_path / "o"), use_cpu=True, report_to=[], objective="fcl",
                                 views="none", **kw)
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

def _run(args, cwd, out):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE)}
    proc = procs.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(Path(out).read_text()), torch.load(str(out) + ".pt")


def _runs(work, method, batch, *modes):
    """1 process with the whole batch, then each mode ('ddp'/'fsdp2', with 'resume' appended) on 2 processes."""
    results = {"one": _run([sys.executable, SCRIPT, method, str(work), str(work / "one.json"), str(batch)],
                           work, work / "one.json")}
    for mode in modes:
        name = mode.split()[0]
        out = work / f"{name}.json"
        flags = [] if name == "ddp" else [name]
        results[name] = _run(TORCHRUN + [SCRIPT, method, str(work), str(out), str(batch // 2), *flags,
                                         *mode.split()[1:]], work, out)
    return results


@pytest.fixture(scope="module")
def gacl_work(tmp_path_factory):
    from gacl_helpers import tiny_model_dir

    work = tmp_path_factory.mktemp("fsdp2_gacl")
    tiny_model_dir(work / "model", dropout=0.0)  # no dropout: the runs see identical representations
    return work


@pytest.fixture(scope="module")
def gacl_reference(gacl_work):
    """GACL paper variant with KD teacher: one process (batch 8) and DDP on two processes (4 + 4, resumed once)."""
    return _runs(gacl_work, "gacl-paper", 8, "ddp resume")


def _same_as_ddp(reference, sharded, p_sharded, engine):
    (one, _), (ddp, p_ddp) = reference["one"], reference["ddp"]
    assert ddp["distributed_type"] == "DistributedType.MULTI_CPU" and sharded["distributed_type"] == engine
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


@pytest.mark.slow
def test_gacl_paper_fsdp2_equals_ddp_and_one_process_and_resumes(gacl_work, gacl_reference):
    fsdp, p_fsdp = _run(TORCHRUN + [SCRIPT, "gacl-paper", str(gacl_work), str(gacl_work / "fsdp2.json"), "4", "fsdp2",
                                    "resume"], gacl_work, gacl_work / "fsdp2.json")
    _same_as_ddp(gacl_reference, fsdp, p_fsdp, "DistributedType.FSDP")
    from ddp_helpers import full_parameters
    from gacl_helpers import load

    start = full_parameters(load(gacl_work / "model").model)
    assert (p_fsdp - start).abs().max() > 1e-4  # the weights did move: not two untouched copies compared
    # the sharded checkpoint holds the student's parameters only (the KD teacher is never saved)
    from torch.distributed.checkpoint import FileSystemReader

    shards = gacl_work / "fsdp2.json.run" / "checkpoint-2" / "pytorch_model_fsdp_0"
    saved = set(FileSystemReader(str(shards)).read_metadata().state_dict_metadata)
    assert saved == {f"model.{k}" for k in load(gacl_work / "model").model.state_dict()}


@pytest.mark.slow
def test_gacl_official_fsdp2_matches_one_process(gacl_work):
    r = _runs(gacl_work, "gacl-official", 8, "fsdp2")
    (one, _), (fsdp, _) = r["one"], r["fsdp2"]
    assert fsdp["distributed_type"] == "DistributedType.FSDP" and len(fsdp["logs"]) == 2
    assert fsdp["logs"][0]["loss_gc"] == pytest.approx(one["logs"][0]["loss_gc"], rel=1e-5)
    assert fsdp["logs"][0]["loss_kd"] == pytest.approx(one["logs"][0]["loss_kd"], abs=1e-6)


@pytest.mark.slow
def test_ccd_fsdp2_matches_one_process(tmp_path):
    from tiny_encoders import write_ccd_inputs

    write_ccd_inputs(tmp_path)
    r = _runs(tmp_path, "ccd", 8, "ddp", "fsdp2")
    (one, _), (ddp, p_ddp), (fsdp, p_fsdp) = r["one"], r["ddp"], r["fsdp2"]
    assert fsdp["distributed_type"] == "DistributedType.FSDP"
    for a, b in zip(one["logs"], fsdp["logs"]):
        assert b["loss_bias"] == pytest.approx(a["loss_bias"], rel=1e-4)
    # Adam turns float noise in near-zero gradients into lr-sized steps, so the weights are compared with DDP
    # (same per-process arithmetic), not with one process
    assert (p_fsdp - p_ddp).abs().max() < 1e-6


@pytest.mark.slow
def test_fair_contrastive_fsdp2_matches_one_process(tmp_path):
    r = _runs(tmp_path, "fcl", 16, "fsdp2")
    (one, p_one), (fsdp, p_fsdp) = r["one"], r["fsdp2"]
    assert fsdp["distributed_type"] == "DistributedType.FSDP"
    for k in ("loss_scl", "loss_fcl"):
        assert fsdp["logs"][0][k] == pytest.approx(one["logs"][0][k], rel=1e-5)
    assert (p_fsdp - p_one).abs().max() < 1e-5


@pytest.mark.slow
def test_accelerate_launch_with_the_fsdp2_config_trains_and_saves_a_loadable_model(gacl_work, tmp_path):
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
    recipe.write_text(yaml.safe_dump({
        "method": "gacl", "model": str(gacl_work / "model"), "data": {"train": str(data), "max_length": 48},
        "training": {"output_dir": str(out), "per_device_train_batch_size": 4, "max_steps": 2, "logging_steps": 1,
                     "report_to": [], "disable_tqdm": True, "dataloader_drop_last": True, "save_strategy": "steps",
                     "save_steps": 2, "learning_rate": 1e-2},
    }))
    config = HERE.parent / "recipes" / "accelerate" / "fsdp2.yaml"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = procs.run([sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config),
                      "--mixed_precision", "no", "-m", "fairmt", "train", str(recipe), "training.use_cpu=true"],
                     cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "checkpoint-2" / "pytorch_model_fsdp_0").is_dir()
    trained = load_translation_model(str(out), "en", "de").model
    start = load_translation_model(str(gacl_work / "model"), "en", "de").model
    diffs = [(a - b).abs().max().item() for a, b in zip(trained.parameters(), start.parameters())]
    assert max(diffs) > 1e-4  # the saved model is the trained one, gathered whole


deepspeed_needed = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("deepspeed") is None,
    reason="deepspeed is not installed (pip install 'fairmt[deepspeed]'; CI installs it)",
)


@pytest.mark.slow
@deepspeed_needed
@pytest.mark.parametrize("stage", [2, 3])
def test_gacl_paper_deepspeed_zero_equals_ddp_and_resumes(gacl_work, gacl_reference, stage):
    """ZeRO-2 and ZeRO-3 (parameters partitioned; the KD teacher stays a whole frozen copy, also when the resuming
    run loads the student under the active ZeRO-3 config)."""
    out = gacl_work / f"zero{stage}.json"
    run, params = _run(TORCHRUN + [SCRIPT, "gacl-paper", str(gacl_work), str(out), "4", f"zero{stage}", "resume"],
                       gacl_work, out)
    _same_as_ddp(gacl_reference, run, params, "DistributedType.DEEPSPEED")


@pytest.mark.slow
@deepspeed_needed
def test_ccd_deepspeed_zero3_matches_one_process(tmp_path):
    from tiny_encoders import write_ccd_inputs

    write_ccd_inputs(tmp_path)
    r = _runs(tmp_path, "ccd", 8, "zero3")
    (one, _), (zero, _) = r["one"], r["zero3"]
    assert zero["distributed_type"] == "DistributedType.DEEPSPEED"
    for a, b in zip(one["logs"], zero["logs"], strict=True):
        assert b["loss_bias"] == pytest.approx(a["loss_bias"], rel=1e-4)


@pytest.mark.slow
@deepspeed_needed
def test_fair_contrastive_deepspeed_zero2_matches_one_process(tmp_path):
    r = _runs(tmp_path, "fcl", 16, "zero2")
    (one, p_one), (zero, p_zero) = r["one"], r["zero2"]
    assert zero["distributed_type"] == "DistributedType.DEEPSPEED"
    for k in ("loss_scl", "loss_fcl"):
        assert zero["logs"][0][k] == pytest.approx(one["logs"][0][k], rel=1e-5)
    assert (p_zero - p_one).abs().max() < 1e-5


def test_an_invalid_deepspeed_config_is_refused_before_training(tmp_path):
    """DeepSpeed validates its config only inside deepspeed.initialize (the first step); the trainers check the ZeRO
    section with DeepSpeed's own schema when they are built. Run in a child process: TrainingArguments with a DeepSpeed
    config set process-wide state (ACCELERATE_USE_DEEPSPEED, accelerate's singleton) that would leak into other tests."""
    pytest.importorskip("deepspeed", reason="deepspeed is not installed")
    code = """
import sys
from test_sharded_training import _fcl_trainer
from fairmt.errors import FairmtError
from pathlib import Path
tmp = Path(sys.argv[1])
try:
    _fcl_trainer(tmp, deepspeed={"zero_optimization": {"stage": 7}, "train_micro_batch_size_per_gpu": "auto"})
    print("NOT REFUSED")
except FairmtError as err:
    print("REFUSED", err)
_fcl_trainer(tmp / "ok", deepspeed={"zero_optimization": {"stage": 2, "overlap_comm": "auto"},
                                    "train_micro_batch_size_per_gpu": "auto"})  # a valid one passes
print("VALID OK")
"""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE)}
    proc = procs.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                     timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "REFUSED invalid DeepSpeed config (training.deepspeed): zero_optimization: stage: Input should be 0, 1, 2" \
        in proc.stdout
    assert "VALID OK" in proc.stdout
