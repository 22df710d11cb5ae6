"""GACL trainer options of the released code (issue 15) and evaluation semantics (issues 17, 19), on a tiny model."""

import math

import pytest

from fairmt.errors import FairmtError
from fairmt.trainers.gacl import GACLConfig, GACLTrainer, LinearProjectionHead
from gacl_helpers import collator, gacl_dataset, load, tiny_model_dir

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("tiny") / "m2m")


def cfg(tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=8,
        per_device_eval_batch_size=8,
        learning_rate=3e-3,
        max_steps=4,
        logging_steps=2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    base.update(kw)
    return GACLConfig(**base)


def test_variant_presets_resolve():
    official = GACLConfig(output_dir="o", gacl_variant="official", report_to=[])
    assert (official.temperature, official.projection, official.kd_normalization, official.warmup_init_lr_ratio) == (
        1.0,
        "linear",
        "sentence",
        0.1,
    )
    assert official.pairs().positive_reduction == "mean" and not official.pairs().counterfactual_negative
    paper = GACLConfig(output_dir="o", report_to=[])
    assert (paper.temperature, paper.projection, paper.kd_normalization, paper.warmup_init_lr_ratio) == (
        1.0,
        "none",
        "token",
        0.0,
    )
    assert paper.pairs().positive_reduction == "mean"  # scale independent of the batch size by default
    assert GACLConfig(output_dir="o", report_to=[], positive_reduction="sum").pairs().positive_reduction == "sum"
    assert GACLConfig(output_dir="o", report_to=[], projection_dim=8).projection == "mlp"
    user = GACLConfig(output_dir="o", gacl_variant="official", temperature=0.05, projection="none", report_to=[])
    assert (user.temperature, user.projection) == (0.05, "none")  # the user's settings win over the preset
    for bad in (
        dict(projection="conv"),
        dict(kd_normalization="batch"),
        dict(warmup_init_lr_ratio=2.0),
        dict(positive_reduction="max"),
        dict(projection="linear", projection_dim=8),
    ):
        with pytest.raises(FairmtError):
            GACLConfig(output_dir="o", report_to=[], **bad)


def test_linear_head_and_its_weight_decay_group(model_dir, tmp_path):
    tm = load(model_dir)
    trainer = GACLTrainer(
        model=tm.model,
        args=cfg(tmp_path, gacl_variant="official", weight_decay=0.01),
        train_dataset=gacl_dataset(tm),
        data_collator=collator(tm),
        processing_class=tm.tokenizer,
    )
    head = tm.model.gacl_projection_head
    assert isinstance(head, LinearProjectionHead)
    drop, lin = head.net
    assert drop.p == tm.model.config.dropout == 0.1
    assert (lin.in_features, lin.out_features) == (tm.model.config.d_model,) * 2
    opt = trainer.create_optimizer()
    head_ids = {id(p) for p in head.parameters()}
    by_wd = {}
    for g in opt.param_groups:
        by_wd.setdefault(g["weight_decay"], set()).update(id(p) for p in g["params"])
    assert by_wd[1.0] == head_ids
    names = {id(p): n for n, p in tm.model.named_parameters()}
    assert all(not names[i].endswith("bias") and "layer_norm" not in names[i] for i in by_wd[0.01])
    assert any(names[i].endswith("bias") for i in by_wd[0.0])
    assert sum(len(s) for s in by_wd.values()) == sum(1 for p in tm.model.parameters() if p.requires_grad)
    trainer.train()  # the head trains (dropout on, weight decay 1.0)
    # a direct save_pretrained (not through the Trainer) keeps the head out of the model's weights too
    from safetensors import safe_open

    tm.model.save_pretrained(tmp_path / "direct")
    with safe_open(str(tmp_path / "direct" / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert keys and not any("gacl_projection_head" in k for k in keys)


def test_fairseq_warmup_start_matches_reference(model_dir, tmp_path):
    """inverse_sqrt with warmup_init_lr = 0.1·lr: fairseq's lr = init + step·(lr − init)/W during warm-up, then
    lr·sqrt(W / step)."""
    tm = load(model_dir)
    lr, warm = 1e-3, 5
    trainer = GACLTrainer(
        model=tm.model,
        args=cfg(
            tmp_path,
            gacl_variant="official",
            learning_rate=lr,
            warmup_steps=warm,
            lr_scheduler_type="inverse_sqrt",
            max_steps=12,
        ),
        train_dataset=gacl_dataset(tm),
        data_collator=collator(tm),
        processing_class=tm.tokenizer,
    )
    trainer.create_optimizer_and_scheduler(num_training_steps=12)
    got = []
    for _ in range(12):
        got.append(trainer.optimizer.param_groups[0]["lr"])
        trainer.optimizer.step()
        trainer.lr_scheduler.step()
    init = 0.1 * lr
    ref = [init + s * (lr - init) / warm if s < warm else lr * math.sqrt(warm / s) for s in range(12)]
    assert got == pytest.approx(ref, rel=1e-9)
    assert got[0] == pytest.approx(1e-4)


def test_exclude_mt_loss_drops_the_mt_term(model_dir, tmp_path):
    tm = load(model_dir)
    ds = gacl_dataset(tm)
    for alpha in (0.4, 0.0):
        trainer = GACLTrainer(
            model=tm.model,
            args=cfg(tmp_path, exclude_mt_loss=True, kd_alpha=alpha, logging_steps=1, max_steps=2),
            train_dataset=ds,
            data_collator=collator(tm),
            processing_class=tm.tokenizer,
        )
        trainer.train()
        h = [h for h in trainer.state.log_history if "loss_gc" in h][0]
        expected = (h["loss_kd"] if alpha else 0.0) + h["loss_gc"]  # L_KD at weight 1 as the released code
        assert h["loss"] == pytest.approx(expected, rel=1e-3)
        assert h["gc_positives"] == 4 and h["gc_negatives"] == 5  # batch 8 = 4 + 4: dropout view, counterfactual


def test_evaluation_is_drop_in(model_dir, tmp_path):
    tm = load(model_dir)
    ds = gacl_dataset(tm)
    plain = ds.remove_columns(["gender", "cf_input_ids", "cf_attention_mask"])
    male = ds.filter(lambda r: r["gender"] == 0).select(range(9))  # single-gender batches
    kw = dict(data_collator=collator(tm), processing_class=tm.tokenizer, train_dataset=ds)
    trainer = GACLTrainer(
        model=tm.model,
        args=cfg(tmp_path),
        eval_dataset={"plain": plain.select(range(16)), "male": male, "gacl": ds.select(range(16))},
        **kw,
    )
    m = trainer.evaluate()
    assert m["eval_plain_loss"] == pytest.approx(m["eval_plain_loss_mt"])
    assert "eval_plain_loss_kd" in m and "eval_plain_loss_gc" not in m and m["eval_plain_gc_batches"] == 0
    assert "eval_male_loss_gc" not in m and m["eval_male_gc_batches"] == 0  # undefined there: skipped, no error
    assert m["eval_gacl_gc_batches"] == 2 and m["eval_gacl_loss_gc"] > 0
    assert m["eval_gacl_loss"] == pytest.approx(m["eval_gacl_loss_mt"])
    # the same rows, plain or GACL-prepared, give the same eval_loss (L_MT): defined once
    assert m["eval_gacl_loss"] == pytest.approx(m["eval_plain_loss"], rel=1e-5)
    # with predict_with_generate, eval_loss is still L_MT
    gen = GACLTrainer(
        model=tm.model,
        args=cfg(tmp_path, predict_with_generate=True, generation_max_length=8),
        eval_dataset=ds.select(range(16)),
        compute_metrics=lambda p: {"n": float(len(p.predictions))},
        **kw,
    )
    g = gen.evaluate()
    assert g["eval_loss"] == pytest.approx(m["eval_gacl_loss"], rel=1e-5) and g["eval_n"] == 16
    assert g["eval_loss_gc"] == pytest.approx(m["eval_gacl_loss_gc"], rel=1e-5)
    with pytest.raises(FairmtError, match="lacks"):
        GACLTrainer(model=tm.model, args=cfg(tmp_path), eval_dataset=plain.remove_columns("labels"), **kw)
    with pytest.raises(FairmtError, match="empty"):
        GACLTrainer(model=tm.model, args=cfg(tmp_path), eval_dataset=plain.select([]), **kw)


def test_trainer_model_card_carries_the_gacl_settings_and_citation(model_dir, tmp_path):
    tm = load(model_dir)
    trainer = GACLTrainer(
        model=tm.model,
        args=cfg(tmp_path, gacl_variant="official", kd_alpha=0.3),
        train_dataset=gacl_dataset(tm),
        data_collator=collator(tm),
        processing_class=tm.tokenizer,
    )
    trainer.create_model_card(model_name="tiny-gacl")
    card = (tmp_path / "out" / "README.md").read_text()
    assert "## GACL + KD training (fairmt)" in card
    assert "| variant | official |" in card and "| L_KD weight α | 0.3 |" in card and "| projection | linear |" in card
    assert "| counterfactual negative | False |" in card  # the official variant's pair set
    assert "Target-Agnostic Gender-Aware Contrastive Learning" in card and "2023.emnlp-main.1046" in card
