"""CSCL and FCL as their papers ran them (issue 23): one-view FCL by default, one representation for the contrastive
terms, the head and leakage@h, a fixed encoder in stage 2, the stage-1 dev objective, released-FCL and ablation
switches in the trainer, and the fairlib weighting of diverse adversaries."""

import numpy as np
import pytest
import torch
from datasets import Dataset
from transformers import BertConfig, BertForSequenceClassification

from fairmt.data.classification import ClassificationCollator
from fairmt.errors import FairmtError
from fairmt.losses import fcl_loss, supcon_loss
from fairmt.models.encoder_classifier import MLPHead, TransformerClassifier
from fairmt.models.text_classifiers import MLPClassifier
from fairmt.trainers.fair_contrastive import (
    FairContrastiveConfig,
    FairContrastiveTrainer,
    HeadOnFeatures,
    encoder_features,
    eval_frozen_modules,
    freeze_encoder,
)


def _feature_rows(n=32, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = []
    for i in range(n):
        y, a = i % 2, (i // 2) % 2
        x = torch.randn(d, generator=g) + 2.0 * y + 0.5 * a
        rows.append({"features": x.tolist(), "labels": y, "group": a})
    return rows


def _token_rows(n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = []
    for i in range(n):
        y, a = i % 2, (i // 2) % 2
        ids = [2] + torch.randint(5 + 10 * y, 15 + 10 * y, (5,), generator=g).tolist() + [40 + a, 3]
        rows.append({"input_ids": ids, "labels": y, "group": a})
    return rows


def _args(tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=16,
        num_train_epochs=1,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        learning_rate=1e-3,
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    base.update(kw)
    return FairContrastiveConfig(**base)


def _tiny_bert_config(dropout=0.0, **kw):
    return BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        **kw,
    )


def _batch(rows):
    return ClassificationCollator()(rows)


# ------------------------------------------------------------------------------------- item 1: FCL views default
def test_views_left_unset_mean_one_view_for_fcl_and_dropout_views_for_cscl(tmp_path):
    assert _args(tmp_path, objective="fcl").views == "none"
    assert _args(tmp_path, objective="fcl_pretrain").views == "none"
    assert _args(tmp_path, objective="cscl").views == "dropout"
    assert _args(tmp_path, objective="cscl_pretrain").views == "dropout"
    assert _args(tmp_path, objective="ce").views == "none"
    assert _args(tmp_path, objective="fcl", views="dropout").views == "dropout"  # an explicit value is honoured
    with pytest.raises(FairmtError, match="views must be one of dropout, augment, none"):
        _args(tmp_path, objective="fcl", views="two")


def test_fcl_from_python_trains_on_the_published_single_view_loss(tmp_path):
    """The loss of one batch is Eq. 2 on one view; two dropout views (the old default) give another number."""
    torch.manual_seed(0)
    model = MLPClassifier(8, 2, hidden_dim=8, dropout=0.0)  # no dropout: a second view is an exact copy
    rows = _feature_rows(16)
    batch = _batch(rows)
    h = model(batch["features"]).hidden_states[-1]
    one_view = fcl_loss(h, batch["labels"], batch["group"])
    two_views = fcl_loss(torch.stack([h, h], 1), batch["labels"], batch["group"])
    got = {}
    for views in (None, "dropout"):
        trainer = FairContrastiveTrainer(
            model=model,
            args=_args(tmp_path, objective="fcl", fcl_alpha=0.0, fcl_beta=1.0, views=views),
            data_collator=ClassificationCollator(),
        )
        model.train()
        got[views] = float(trainer.compute_loss(model, batch).detach())
    assert got[None] == pytest.approx(float(one_view.loss), rel=1e-6)
    assert got["dropout"] == pytest.approx(float(two_views.loss), rel=1e-6)
    assert abs(got[None] - got["dropout"]) > 0.1  # each sample's copy is an extra positive in both terms


# ------------------------------------------------------------------------- item 2: one representation everywhere
def _capture_head_input(model, name="classifier"):
    seen = []
    head = getattr(model, name)
    handle = head.register_forward_pre_hook(lambda _m, args: seen.append(args[0]))
    return seen, handle


@pytest.mark.parametrize("kind", ["transformer_classifier", "bert_for_sequence_classification"])
def test_the_gradient_of_l_sup_reaches_exactly_the_tensor_the_head_consumes(tmp_path, kind):
    torch.manual_seed(0)
    if kind == "transformer_classifier":
        model = TransformerClassifier(_tiny_bert_config().to_dict(), 2, pooling="cls", head_layers=2)
    else:
        model = BertForSequenceClassification(_tiny_bert_config(num_labels=2))
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective="cscl_pretrain", cs_lambda=0.0),
        data_collator=ClassificationCollator(),
    )
    batch = _batch(_token_rows(8))
    inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask")}
    seen, handle = _capture_head_input(model)
    model.train()
    rep, logits = trainer.representation_and_logits(model, inputs)
    handle.remove()
    assert rep is seen[0]  # the very tensor the classifier read
    assert logits.shape == (8, 2)
    l_sup = supcon_loss(torch.stack([rep, rep], 1), batch["labels"])
    (grad,) = torch.autograd.grad(l_sup, seen[0], retain_graph=True)
    assert float(grad.abs().sum()) > 0
    # ... and through it the whole encoder below the head learns from L_sup (BERT: its pooler too, which the
    # second stage then freezes with the rest of the encoder)
    l_sup.backward()
    enc = model.encoder if kind == "transformer_classifier" else model.bert
    assert enc.embeddings.word_embeddings.weight.grad.abs().sum() > 0
    if kind == "bert_for_sequence_classification":
        assert model.bert.pooler.dense.weight.grad.abs().sum() > 0
        assert freeze_encoder(model) == ["classifier.weight", "classifier.bias"]


def test_last_hidden_state_pooling_is_a_different_vector_from_the_bert_head_input(tmp_path):
    """With pooling=cls on a stock BertForSequenceClassification L_sup never reaches the pooler the head reads —
    the mismatch the default (pooling=head) removes."""
    torch.manual_seed(0)
    model = BertForSequenceClassification(_tiny_bert_config(num_labels=2))
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective="cscl_pretrain", cs_lambda=0.0, pooling="cls"),
        data_collator=ClassificationCollator(),
    )
    batch = _batch(_token_rows(8))
    rep, _ = trainer.representation_and_logits(model, {k: batch[k] for k in ("input_ids", "attention_mask")})
    supcon_loss(torch.stack([rep, rep], 1), batch["labels"]).backward()
    assert model.bert.pooler.dense.weight.grad is None


def test_leakage_representation_is_the_head_input(tmp_path):
    """predict() returns as `hidden` (what leakage@h is fitted on) the vector the head consumed."""
    torch.manual_seed(0)
    model = TransformerClassifier(_tiny_bert_config().to_dict(), 2, pooling="mean", head_layers=2)
    trainer = FairContrastiveTrainer(
        model=model, args=_args(tmp_path, objective="cscl"), data_collator=ClassificationCollator()
    )
    rows = _token_rows(8)
    seen, handle = _capture_head_input(model)
    pred = trainer.predict(Dataset.from_list(rows))
    handle.remove()
    logits, hidden = pred.predictions
    assert torch.allclose(torch.as_tensor(hidden), torch.cat(seen).detach(), atol=1e-6)
    assert isinstance(model.classifier, MLPHead) and model.classifier.layers == 2


def test_transformer_classifier_saves_and_reloads_without_the_original_encoder(tmp_path):
    torch.manual_seed(0)
    enc_dir = tmp_path / "enc"
    from transformers import BertModel

    BertModel(_tiny_bert_config()).save_pretrained(enc_dir)
    model = TransformerClassifier.from_encoder(str(enc_dir), 3, pooling="cls", head_layers=2, labels=["a", "b", "c"])
    assert torch.equal(
        model.encoder.embeddings.word_embeddings.weight,
        BertModel.from_pretrained(enc_dir).embeddings.word_embeddings.weight,
    )
    model.save_pretrained(tmp_path / "saved")
    import shutil

    shutil.rmtree(enc_dir)
    again = TransformerClassifier.from_pretrained(tmp_path / "saved").eval()
    batch = _batch(_token_rows(4))
    model.eval()
    assert torch.allclose(
        again(batch["input_ids"], batch["attention_mask"]).logits,
        model(batch["input_ids"], batch["attention_mask"]).logits,
        atol=1e-6,
    )
    assert again.labels == ["a", "b", "c"]
    with pytest.raises(FairmtError, match="model.pooling must be one of cls, mean"):
        TransformerClassifier(_tiny_bert_config().to_dict(), 2, pooling="max")
    with pytest.raises(FairmtError, match="head_layers must be 1"):
        TransformerClassifier(_tiny_bert_config().to_dict(), 2, head_layers=3)


# -------------------------------------------------------------------------- item 3: stage 2 on a fixed encoder
def test_stage_two_keeps_the_frozen_encoder_in_eval_mode(tmp_path):
    torch.manual_seed(0)
    model = TransformerClassifier(_tiny_bert_config(dropout=0.5).to_dict(), 2, pooling="cls", head_layers=2)
    freeze_encoder(model)
    modes, reps = [], []
    model.encoder.register_forward_hook(lambda m, _i, _o: modes.append(m.training))
    model.classifier.register_forward_pre_hook(lambda _m, args: reps.append(args[0].detach().clone()))
    rows = _token_rows(16)
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective="ce", num_train_epochs=2, per_device_train_batch_size=16),
        train_dataset=Dataset.from_list(rows),
        data_collator=ClassificationCollator(),
    )
    trainer.train()
    assert modes == [False, False]  # two training steps, encoder dropout off in both
    assert model.classifier.net[2].training  # the head's own dropout is still on while it trains
    model.eval()
    batch = _batch(rows)
    with torch.no_grad():
        reference = model.encode(batch["input_ids"], batch["attention_mask"])
    for rep in reps:  # each step's rows (shuffled) are exactly the eval-mode representations: no dropout noise
        assert float(torch.cdist(rep, reference).min(dim=1).values.max()) < 1e-5


def test_without_frozen_eval_the_frozen_encoder_would_drop_out(tmp_path):
    torch.manual_seed(0)
    model = TransformerClassifier(_tiny_bert_config(dropout=0.5).to_dict(), 2, pooling="cls")
    freeze_encoder(model)
    modes = []
    model.encoder.register_forward_hook(lambda m, _i, _o: modes.append(m.training))
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective="ce", frozen_modules_eval=False),
        train_dataset=Dataset.from_list(_token_rows(16)),
        data_collator=ClassificationCollator(),
    )
    trainer.train()
    assert modes == [True]


def test_eval_frozen_modules_leaves_trainable_and_parameter_free_modules_alone():
    model = BertForSequenceClassification(_tiny_bert_config(num_labels=2, dropout=0.1))
    freeze_encoder(model)
    model.train()
    eval_frozen_modules(model)
    assert not model.bert.training and not model.bert.encoder.layer[0].training
    assert model.training and model.classifier.training and model.dropout.training


def test_head_on_cached_features_trains_the_full_models_head(tmp_path):
    torch.manual_seed(0)
    model = MLPClassifier(8, 2, hidden_dim=8, dropout=0.3, head_layers=2)
    freeze_encoder(model)
    rows = _feature_rows(32)
    collator = ClassificationCollator()
    feats = encoder_features(model, [collator(rows[i : i + 8]) for i in range(0, 32, 8)])
    assert feats.shape == (32, 8) and model.training  # computed in eval mode, training mode restored
    model.eval()
    with torch.no_grad():
        direct = model(collator(rows)["features"]).hidden_states[-1]
    assert torch.allclose(torch.as_tensor(feats), direct, atol=1e-6)
    head0 = [p.detach().clone() for p in model.classifier.parameters()]
    enc0 = [p.detach().clone() for p in model.encoder.parameters()]
    cached = [{"features": f.tolist(), "labels": r["labels"], "group": r["group"]} for f, r in zip(feats, rows)]
    trainer = FairContrastiveTrainer(
        model=HeadOnFeatures(model),
        args=_args(tmp_path, objective="ce", num_train_epochs=5),
        train_dataset=Dataset.from_list(cached),
        data_collator=collator,
    )
    trainer.train()
    assert all(not torch.equal(a, b) for a, b in zip(head0, model.classifier.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(enc0, model.encoder.parameters()))
    model.eval()
    with torch.no_grad():
        full = model(collator(rows)["features"]).logits
        head_only = HeadOnFeatures(model).eval()(torch.as_tensor(feats)).logits
    assert torch.allclose(full, head_only, atol=1e-6)
    assert set(HeadOnFeatures(model).state_dict()) == {f"classifier.{k}" for k in model.classifier.state_dict()}
    with pytest.raises(FairmtError, match="no head_forward"):
        HeadOnFeatures(torch.nn.Linear(2, 2))


# ------------------------------------------------------------------------------- stage 1: the dev objective
def _dev_trainer(tmp_path, dropout, objective):
    torch.manual_seed(0)
    model = MLPClassifier(8, 2, hidden_dim=8, dropout=dropout)
    rows = _feature_rows(16)
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective=objective, per_device_eval_batch_size=16),
        eval_dataset=Dataset.from_list(rows),
        data_collator=ClassificationCollator(),
    )
    return trainer, model, rows


def test_pretrain_stage_evaluates_its_own_objective_on_dev(tmp_path):
    trainer, model, rows = _dev_trainer(tmp_path, 0.0, "fcl_pretrain")
    got = trainer.evaluate()["eval_loss"]
    batch = _batch(rows)
    model.eval()
    with torch.no_grad():
        h = model(batch["features"]).hidden_states[-1]
    assert got == pytest.approx(float(fcl_loss(h, batch["labels"], batch["group"]).loss), rel=1e-5)
    ce = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective="fcl", per_device_eval_batch_size=16),
        eval_dataset=Dataset.from_list(rows),
        data_collator=ClassificationCollator(),
    )
    with torch.no_grad():
        want_ce = float(torch.nn.functional.cross_entropy(model(batch["features"]).logits, batch["labels"]))
    assert ce.evaluate()["eval_loss"] == pytest.approx(want_ce, rel=1e-5)  # one-stage objectives: dev CE


def test_pretrain_dev_objective_keeps_dropout_views_stochastic(tmp_path):
    trainer, model, _ = _dev_trainer(tmp_path, 0.5, "cscl_pretrain")
    a, b = trainer.evaluate()["eval_loss"], trainer.evaluate()["eval_loss"]
    assert a != b  # two dropout draws, as in training
    assert not any(m.training for m in model.modules())  # and dropout is switched off again afterwards


# ----------------------------------------------------------------------- item 9 and 12 in the trainer
def test_released_fcl_and_the_ablation_weights_in_the_trainer(tmp_path):
    torch.manual_seed(0)
    model = MLPClassifier(8, 2, hidden_dim=8, dropout=0.0)
    batch = _batch(_feature_rows(16))
    out = model(batch["features"])
    h, logits = out.hidden_states[-1], out.logits
    ce = torch.nn.functional.cross_entropy(logits, batch["labels"])
    released = _args(tmp_path, objective="fcl", fcl_variant="released")
    assert released.temperature == 0.01 and released.normalize is False
    assert _args(tmp_path, objective="fcl").temperature == 0.1 and _args(tmp_path, objective="fcl").normalize is True
    assert _args(tmp_path, objective="fcl", fcl_variant="released", temperature=0.5).temperature == 0.5
    cases = {
        "released": (
            dict(fcl_variant="released"),
            lambda t: t.scl - t.fcl,
            fcl_loss(h, batch["labels"], batch["group"], variant="released"),
        ),
        "ce+scl": (dict(fcl_fcl_weight=0.0), lambda t: t.scl, fcl_loss(h, batch["labels"], batch["group"])),
        "ce-fcl": (dict(fcl_scl_weight=0.0), lambda t: -t.fcl, fcl_loss(h, batch["labels"], batch["group"])),
        "eo": (
            dict(fcl_group_term="eo"),
            lambda t: t.scl - t.fcl,
            fcl_loss(h, batch["labels"], batch["group"], group_term="eo"),
        ),
    }
    for name, (kw, combine, terms) in cases.items():
        trainer = FairContrastiveTrainer(
            model=model,
            args=_args(tmp_path, objective="fcl", fcl_alpha=0.7, fcl_beta=0.3, **kw),
            data_collator=ClassificationCollator(),
        )
        model.train()
        got = float(trainer.compute_loss(model, batch).detach())
        assert got == pytest.approx(float(0.7 * ce + 0.3 * combine(terms)), rel=1e-5), name
    with pytest.raises(FairmtError, match="fcl_variant must be one of paper, released"):
        _args(tmp_path, objective="fcl", fcl_variant="fairlib")
    with pytest.raises(FairmtError, match="fcl_group_term must be one of g, eo"):
        _args(tmp_path, objective="fcl", fcl_group_term="EO")
    with pytest.raises(FairmtError, match="pooling must be one of head, cls, mean"):
        _args(tmp_path, objective="fcl", pooling="pooler")


# ------------------------------------------------------------------- item 10: diverse adversaries as fairlib
def _fairlib_reference_grads(model, adversary, batch, lam, lam_diff, conditional):
    """Loop transcription of fairlib's batch update (networks/utils.py train_epoch + adv/discriminator.py
    adv_train_batch): each discriminator k on CE_k(h.detach()) + λ_diff·Σ_{j≠k} Diff(h_k, h_j), its own gradient;
    the encoder on CE − Σ_k λ·CE_k / K, no gradient reversal (the discriminators' grads from it are discarded)."""
    from fairmt.trainers.adversarial import difference_loss

    out = model(batch["features"])
    h, logits = out.hidden_states[-1], out.logits
    y, a = batch["labels"], batch["group"]
    cond = y if conditional else None
    k = len(adversary.adversaries)
    disc_grads = []
    for i, d in enumerate(adversary.adversaries):
        lg, hk = d(h.detach(), cond)
        loss = torch.nn.functional.cross_entropy(lg, a)
        for j, d2 in enumerate(adversary.adversaries):
            if j != i:
                loss = loss + lam_diff * difference_loss([hk, d2(h.detach(), cond)[1]])
        disc_grads.append(torch.autograd.grad(loss, list(d.parameters())))
    main = torch.nn.functional.cross_entropy(logits, y)
    for d in adversary.adversaries:
        main = main - lam * torch.nn.functional.cross_entropy(d(h, cond)[0], a) / k
    enc_grads = torch.autograd.grad(main, list(model.parameters()))
    return enc_grads, disc_grads


@pytest.mark.parametrize("conditional", [False, True])
def test_fairlib_weighting_gives_fairlibs_gradients_in_one_joint_step(tmp_path, conditional):
    from fairmt.trainers.adversarial import AdversarialConfig, AdversarialTrainer

    torch.manual_seed(0)
    model = MLPClassifier(8, 2, hidden_dim=8, dropout=0.0)
    lam, lam_diff = 0.7, 100.0
    args = AdversarialConfig(
        output_dir=str(tmp_path),
        report_to=[],
        use_cpu=True,
        n_adversaries=3,
        adv_lambda=lam,
        diff_lambda=lam_diff,
        adv_conditional=conditional,
        adv_hidden_size=6,
    )
    assert args.adv_weighting == "fairlib"
    trainer = AdversarialTrainer(model=model, args=args, data_collator=ClassificationCollator())
    batch = _batch(_feature_rows(16))
    model.train()
    trainer.compute_loss(model, batch).backward()
    enc_ref, disc_ref = _fairlib_reference_grads(model, trainer.adversary, batch, lam, lam_diff, conditional)
    for p, g in zip(model.parameters(), enc_ref):
        assert torch.allclose(p.grad, g, atol=1e-6)
    for d, grads in zip(trainer.adversary.adversaries, disc_ref):
        for p, g in zip(d.parameters(), grads):
            assert torch.allclose(p.grad, g, atol=1e-5)

    # "mean" averages the adversaries' CE: the encoder gradient is unchanged, an adversary's is K times smaller
    # against the penalty; with λ_diff/K it is exactly fairlib's divided by K (the documented conversion)
    for weighting, diff, scale in (("mean", lam_diff / 3, 3.0), ("mean", lam_diff, None)):
        model.zero_grad()
        mean_args = AdversarialConfig(
            output_dir=str(tmp_path),
            report_to=[],
            use_cpu=True,
            n_adversaries=3,
            adv_lambda=lam,
            diff_lambda=diff,
            adv_conditional=conditional,
            adv_hidden_size=6,
            adv_weighting=weighting,
        )
        other = AdversarialTrainer(model=model, args=mean_args, data_collator=ClassificationCollator())
        other.adversary.load_state_dict(trainer.adversary.state_dict())
        other.compute_loss(model, batch).backward()
        for p, g in zip(model.parameters(), enc_ref):
            assert torch.allclose(p.grad, g, atol=1e-6)
        p0, g0 = next(other.adversary.adversaries[0].parameters()), disc_ref[0][0]
        if scale is not None:
            assert torch.allclose(p0.grad * scale, g0, atol=1e-5)
        else:
            assert not torch.allclose(p0.grad * 3.0, g0, atol=1e-3)
    with pytest.raises(FairmtError, match="adv_weighting must be one of fairlib, mean"):
        AdversarialConfig(output_dir=str(tmp_path), report_to=[], adv_weighting="sum")


# --------------------------------------------------------------------------- recipes: bad values, frozen [CLS]
@pytest.mark.parametrize(
    "override, message",
    [
        ("metrics.eo_classes=both", "recipe key metrics.eo_classes must be one of positive, all, got 'both'"),
        ("selection=test_accuracy", "recipe key selection must be one of loss, dto, accuracy, accuracy_then_gap"),
        ("model.pooling=max", "recipe key model.pooling must be one of cls, mean, got 'max'"),
        ("data.dataset=imsitu", "recipe key data.dataset must be one of bios, bios_split, jigsaw, moji, hatespeech"),
        ("data.augment=mixup", "recipe key data.augment must be one of eda, backtranslate, clm_insert, clm_substitute"),
        ("patience=0", "recipe key patience must be a positive number of epochs or null, got 0"),
        ("objective_args.fcl_variant=fairlib", "fcl_variant must be one of paper, released, got 'fairlib'"),
        ("objective_args.views=three", "views must be one of dropout, augment, none, got 'three'"),
        ("objective_args.temprature=0.1", "unknown recipe key objective_args.temprature; did you mean 'temperature'?"),
    ],
)
def test_bad_recipe_values_fail_in_one_line_before_anything_is_written(override, message, tmp_path, capsys):
    from fairmt.cli import main

    out = tmp_path / "run"
    assert main(["train", "classification/fcl_moji", override, f"output_dir={out}"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()  # nothing half-written


def test_a_dataset_absent_offline_fails_before_training_with_the_fetch_command(tmp_path, monkeypatch, capsys):
    from fairmt.cli import main

    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "empty"))
    assert main(["train", "classification/fcl_moji", f"output_dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert "Moji" in err and "fairmt data corpora --fetch moji" in err and err.count("\n") == 1


def test_dry_run_shows_every_resolved_value_without_loading_a_model(capsys):
    import json as _json

    from fairmt.cli import main

    rc = main(["train", "classification/cscl_bios_bert", "--dry-run"])  # bert-base-uncased / the data may be absent
    printed = capsys.readouterr()
    assert rc == 0 or (rc == 2 and "dry run: the real run would fail" in printed.err), printed.err
    shown = _json.loads(printed.out)["config"]
    s1, s2 = shown["stages"]["stage1"], shown["stages"]["stage2"]
    assert (s1["objective"], s1["views"], s1["temperature"], s1["cs_lambda"], s1["eval_objective"]) == (
        "cscl_pretrain",
        "augment",
        2.0,
        5.0,
        True,
    )
    assert (s2["objective"], s2["num_train_epochs"], s2["learning_rate"], s2["per_device_train_batch_size"]) == (
        "ce",
        7,
        2e-5,
        32,
    )
    assert (
        shown["model"]["head_layers"] == 2 and shown["stage1_patience"] == 3 and shown["metrics"]["eo_classes"] == "all"
    )


def test_frozen_embedder_cls_features_are_the_raw_cls_state_and_mean_is_normalised(tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from fairmt.recipes.classification.runner import embed_texts
    from tiny_encoders import write_tiny_bert

    texts = ["she is a nurse", "he is a surgeon in the city"]
    bert = write_tiny_bert(tmp_path / "bert", texts)
    cls = embed_texts(texts, str(bert), pooling="cls", normalize=False)
    mean = embed_texts(texts, str(bert), pooling="mean", normalize=True)
    tok, enc = AutoTokenizer.from_pretrained(bert), AutoModel.from_pretrained(bert).eval()
    b = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = enc(**b).last_hidden_state
    assert np.allclose(cls, states[:, 0].numpy(), atol=1e-5)
    m = (states * b["attention_mask"][..., None]).sum(1) / b["attention_mask"].sum(1, keepdim=True)
    assert np.allclose(mean, torch.nn.functional.normalize(m, dim=-1).numpy(), atol=1e-5)
    assert not np.allclose(np.linalg.norm(cls, axis=1), 1.0)


def test_frozen_embedder_batches_by_length_and_returns_the_rows_in_the_texts_order(tmp_path):
    """embed_texts runs texts of similar length together (less padding); each row is still its own text's
    embedding, as the text alone, unpadded, gives it."""
    from transformers import AutoModel, AutoTokenizer

    from fairmt.recipes.classification.runner import embed_texts
    from tiny_encoders import write_tiny_bert

    texts = ["he", "she is a nurse in the city hospital", "a surgeon", "she is a nurse", "he is a surgeon in the city"]
    bert = write_tiny_bert(tmp_path / "bert", texts)
    got = embed_texts(texts, str(bert), pooling="mean", normalize=False, batch_size=2)
    tok, enc = AutoTokenizer.from_pretrained(bert), AutoModel.from_pretrained(bert).eval()
    with torch.no_grad():
        alone = [enc(**tok([t], return_tensors="pt")).last_hidden_state[0].mean(0).numpy() for t in texts]
    assert np.allclose(got, np.stack(alone), atol=1e-5)
