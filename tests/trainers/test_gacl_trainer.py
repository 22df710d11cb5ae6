"""GACLTrainer trained for a few steps on a tiny M2M-100 model: losses, gradients, dropout, PEFT, resume, push."""

import shutil
from pathlib import Path

import pytest
import torch

from fairmt.errors import FairmtError
from fairmt.trainers.gacl import GACLConfig, GACLTrainer
from gacl_helpers import collator, gacl_dataset, load, tiny_model_dir

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("tiny") / "m2m")


@pytest.fixture(scope="module")
def model_dir_nodrop(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("tiny0") / "m2m", dropout=0.0)


def cfg(tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        max_steps=12,
        logging_steps=4,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    base.update(kw)
    return GACLConfig(**base)


@pytest.mark.parametrize("variant", ["paper", "official"])
def test_training_lowers_the_loss_and_logs_each_term(model_dir, tmp_path, variant):
    tm = load(model_dir)
    ds = gacl_dataset(tm)
    # τ = 0.1: at the default τ = 1 the contrastive term moves too little in 40 tiny steps to see it fall
    trainer = GACLTrainer(
        model=tm.model,
        args=cfg(tmp_path, gacl_variant=variant, max_steps=40, logging_steps=10, temperature=0.1),
        train_dataset=ds,
        data_collator=collator(tm),
        processing_class=tm.tokenizer,
    )
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss_gc" in h]
    assert len(logs) == 4
    assert all({"loss_mt", "loss_kd", "loss_gc"} <= set(h) for h in logs)
    assert logs[-1]["loss"] < logs[0]["loss"]
    assert logs[-1]["loss_mt"] < logs[0]["loss_mt"]
    assert logs[-1]["loss_gc"] <= logs[0]["loss_gc"]
    # total = (1 − α)·L_MT + α·L_KD + λ·L_GC (per-step means, so equal up to rounding of the logged values)
    h = logs[-1]
    assert h["loss"] == pytest.approx(0.6 * h["loss_mt"] + 0.4 * h["loss_kd"] + h["loss_gc"], rel=1e-3)


def test_contrastive_gradient_reaches_encoder_only(model_dir_nodrop, tmp_path):
    """With α = 1 and the teacher equal to the student (no dropout), L_KD has zero gradient: what is left is
    λ·L_GC, which must reach the encoder layers and not the decoder layers."""
    tm = load(model_dir_nodrop)
    ds = gacl_dataset(tm)
    trainer = GACLTrainer(
        model=tm.model,
        args=cfg(tmp_path, kd_alpha=1.0),
        train_dataset=ds,
        data_collator=collator(tm),
        processing_class=tm.tokenizer,
    )
    batch = next(iter(trainer.get_train_dataloader()))
    tm.model.zero_grad()
    tm.model.train()
    trainer.compute_loss(tm.model, batch).backward()
    enc = [p.grad for n, p in tm.model.named_parameters() if ".encoder.layers." in n]
    dec = [p.grad for n, p in tm.model.named_parameters() if ".decoder.layers." in n]
    assert all(g is not None for g in enc) and sum(float(g.abs().sum()) for g in enc) > 0
    assert all(g is None or float(g.abs().max()) < 1e-7 for g in dec)
    assert all(not p.requires_grad for p in trainer.teacher.parameters())
    # L_MT and L_KD share one log-softmax; L_MT must equal the model's own cross-entropy, L_KD be 0 (teacher = student)
    tm.model.train()
    with torch.no_grad():
        own = tm.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]
        ).loss
    assert float(trainer._terms["loss_mt"][-1]) == pytest.approx(float(own), rel=1e-5)
    assert float(trainer._terms["loss_kd"][-1]) == pytest.approx(0.0, abs=1e-6)


def test_dropout_views_stay_on_after_evaluation(model_dir, tmp_path):
    tm = load(model_dir)
    ds = gacl_dataset(tm)
    trainer = GACLTrainer(
        model=tm.model,
        args=cfg(tmp_path),
        train_dataset=ds,
        eval_dataset=ds.select(range(16)),
        data_collator=collator(tm),
        processing_class=tm.tokenizer,
    )
    metrics = trainer.evaluate()
    assert "eval_loss" in metrics and not tm.model.training
    seen = []
    hook = tm.model.get_encoder().register_forward_hook(lambda m, a, o: seen.append((m.training, o.last_hidden_state)))
    batch = next(iter(trainer.get_train_dataloader()))
    trainer.current_gradient_accumulation_steps = 1  # set by train(); we call one training step directly
    trainer.training_step(tm.model, batch)
    hook.remove()
    # one batched encoder call on [x; x (dropout view); x_cf], in train mode
    assert len(seen) == 1 and seen[0][0]
    b, t = batch["input_ids"].shape
    states = seen[0][1]
    assert states.shape[0] == 3 * b
    mask = batch["attention_mask"].bool()
    main, view = states[:b, :t][mask], states[b : 2 * b, :t][mask]
    assert not torch.allclose(main, view)  # two different dropout masks for the same sentences
    assert not trainer.teacher.training


def test_bad_input_errors(model_dir, tmp_path):
    tm = load(model_dir)
    ds = gacl_dataset(tm)
    kw = dict(data_collator=collator(tm), processing_class=tm.tokenizer)
    with pytest.raises(FairmtError, match="no 'gender' column"):
        GACLTrainer(model=tm.model, args=cfg(tmp_path), train_dataset=ds.remove_columns("gender"), **kw)
    with pytest.raises(FairmtError, match="empty"):
        GACLTrainer(model=tm.model, args=cfg(tmp_path), train_dataset=ds.select([]), **kw)
    with pytest.raises(FairmtError, match="cf_input_ids"):
        GACLTrainer(
            model=tm.model,
            args=cfg(tmp_path),
            train_dataset=ds.remove_columns(["cf_input_ids", "cf_attention_mask"]),
            **kw,
        )
    with pytest.raises(FairmtError, match="remove_unused_columns"):
        cfg(tmp_path, remove_unused_columns=True)
    male = ds.filter(lambda r: r["gender"] == 0)
    trainer = GACLTrainer(
        model=tm.model, args=cfg(tmp_path, balanced_batches=False, max_steps=1), train_dataset=male, **kw
    )
    with pytest.raises(FairmtError, match="one gender only"):
        trainer.train()


def test_projection_head_resume_and_push_to_hub(model_dir, tmp_path, monkeypatch):
    """Checkpoints keep the projection head beside (not inside) the weights, resume restores it, and
    push_to_hub uploads the student only (no teacher)."""
    from huggingface_hub import HfApi

    tm = load(model_dir)
    ds = gacl_dataset(tm)
    args = cfg(tmp_path, projection_dim=16, max_steps=4, save_strategy="steps", save_steps=2)
    trainer = GACLTrainer(
        model=tm.model, args=args, train_dataset=ds, data_collator=collator(tm), processing_class=tm.tokenizer
    )
    trainer.train()
    ck = Path(args.output_dir) / "checkpoint-2"
    assert (ck / GACLTrainer.HEAD_FILE).is_file()
    from safetensors.torch import load_file

    keys = load_file(str(ck / "model.safetensors")).keys()
    assert not any("projection" in k for k in keys)
    head_at_4 = {k: v.clone() for k, v in tm.model.gacl_projection_head.state_dict().items()}

    tm2 = load(model_dir)
    args2 = cfg(tmp_path, projection_dim=16, max_steps=4, save_strategy="steps", save_steps=2)
    t2 = GACLTrainer(
        model=tm2.model, args=args2, train_dataset=ds, data_collator=collator(tm2), processing_class=tm2.tokenizer
    )
    t2.train(resume_from_checkpoint=str(ck))
    assert t2.state.global_step == 4
    for k, v in tm2.model.gacl_projection_head.state_dict().items():  # same data order, same steps → same head
        torch.testing.assert_close(v, head_at_4[k], rtol=1e-4, atol=1e-5)

    hub = tmp_path / "hub"
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kw: type("R", (), {"repo_id": repo_id})())

    def upload_folder(self, repo_id, folder_path, **kw):
        shutil.copytree(folder_path, hub, dirs_exist_ok=True)
        return type("C", (), {"commit_url": "local", "oid": "0"})()

    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    t2.args.hub_model_id = "me/gacl-tiny"
    t2.push_to_hub()
    weights = load_file(str(hub / "model.safetensors"))
    n_student = sum(p.numel() for n, p in tm2.model.named_parameters() if "projection" not in n)
    assert sum(v.numel() for v in weights.values()) <= n_student  # tied embeddings may be stored once
    assert not any("teacher" in f.name for f in hub.iterdir())
    reloaded = load(hub)
    assert reloaded.translate(["The doctor read her book."], num_beams=1, max_new_tokens=5)


def test_lora_adapter_trains_and_teacher_is_adapter_free(model_dir, tmp_path):
    from peft import LoraConfig, TaskType, get_peft_model

    tm = load(model_dir)
    ds = gacl_dataset(tm)
    model = get_peft_model(
        tm.model, LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    )
    trainer = GACLTrainer(
        model=model,
        args=cfg(tmp_path, max_steps=6, learning_rate=1e-2),
        train_dataset=ds,
        data_collator=collator(tm),
        processing_class=tm.tokenizer,
    )
    assert not any("lora" in n for n, _ in trainer.teacher.named_parameters())
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer.train()
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all("lora_" in n for n in changed)
    assert any(".encoder." in n for n in changed)
    trainer.save_model(str(tmp_path / "adapter"))
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert not (tmp_path / "adapter" / "model.safetensors").exists()
