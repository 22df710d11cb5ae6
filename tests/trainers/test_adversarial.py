"""Gradient reversal, adversaries and the AdversarialTrainer on a tiny BERT classifier built from a config."""

from __future__ import annotations

import os

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from fairmt.errors import FairmtError
from fairmt.trainers.adversarial import (
    ADVERSARY_FILE,
    AdversarialConfig,
    AdversarialTrainer,
    Adversary,
    AdversaryEnsemble,
    GradientReversal,
    difference_loss,
    grad_reverse,
)


def test_grl_is_identity_forward_and_reverses_gradients():
    torch.manual_seed(0)
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, dtype=torch.float64)
    y = grad_reverse(x, 0.7)
    assert torch.equal(y, x)
    (y * w).sum().backward()
    assert torch.allclose(x.grad, -0.7 * w)
    # autograd check: the numerical Jacobian of the forward is +I, the analytic (backward) one is −λ·I, so gradcheck
    # fails for λ = 1 and passes only for λ = −1 (which makes the backward the true derivative)
    x2 = torch.randn(4, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(lambda t: grad_reverse(t, 1.0), (x2,), raise_exception=False)
    assert torch.autograd.gradcheck(lambda t: grad_reverse(t, -1.0), (x2,))
    jac = torch.autograd.functional.jacobian(lambda t: grad_reverse(t, 2.0), x2)
    # functional.jacobian uses the backward pass: the reversed, scaled identity
    assert torch.allclose(jac, -2.0 * torch.eye(4, dtype=torch.float64))


def test_grl_in_a_network_flips_the_encoder_gradient_only():
    torch.manual_seed(0)
    enc, head = nn.Linear(4, 3), nn.Linear(3, 2)
    x, a = torch.randn(8, 4), torch.randint(0, 2, (8,))

    def grads(module_between):
        enc.zero_grad(), head.zero_grad()
        nn.functional.cross_entropy(head(module_between(enc(x))), a).backward()
        return enc.weight.grad.clone(), head.weight.grad.clone()

    g_enc, g_head = grads(nn.Identity())
    r_enc, r_head = grads(GradientReversal(0.5))
    assert torch.allclose(r_enc, -0.5 * g_enc, atol=1e-7)
    assert torch.allclose(r_head, g_head)  # the adversary itself still minimises its loss


def test_conditional_adversary_and_difference_loss():
    adv = Adversary(input_dim=6, num_groups=3, hidden_dim=5, n_layers=2, num_labels=4)
    logits, hid = adv(torch.randn(7, 6), torch.randint(0, 4, (7,)))
    assert logits.shape == (7, 3) and hid.shape == (7, 5)
    assert adv.body[0].in_features == 10  # h ⊕ one-hot(y)
    with pytest.raises(FairmtError, match="task labels"):
        adv(torch.randn(7, 6))
    # loop references, summed over the pairs i < j: the reference code's Ĥ_i Ĥ_jᵀ (batch × batch, default) and the
    # paper's Ĥ_iᵀ Ĥ_j (hidden × hidden)
    torch.manual_seed(1)
    hs = [torch.randn(6, 4, dtype=torch.float64) for _ in range(3)]
    unit = [[[x / (sum(v * v for v in row) ** 0.5 + 1e-6) for x in row] for row in h.tolist()] for h in hs]
    ref_batch = ref_hidden = 0.0
    for i in range(3):
        for j in range(i + 1, 3):
            a, b = unit[i], unit[j]
            ref_batch += sum(sum(a[r][k] * b[c][k] for k in range(4)) ** 2 for r in range(6) for c in range(6)) / 36
            ref_hidden += sum(sum(a[n][r] * b[n][c] for n in range(6)) ** 2 for r in range(4) for c in range(4)) / 16
    assert float(difference_loss(hs)) == pytest.approx(ref_batch, rel=1e-9)
    assert float(difference_loss(hs, orientation="hidden")) == pytest.approx(ref_hidden, rel=1e-9)
    assert ref_batch != pytest.approx(ref_hidden)
    with pytest.raises(FairmtError, match="orientation"):
        difference_loss(hs, orientation="rows")
    # Ĥ_1ᵀĤ_2 = Σ_b ĥ_1(b) ĥ_2(b)ᵀ: zero when each example activates only one adversary; one adversary → 0
    e1 = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    e2 = torch.tensor([[0.0, 0.0], [3.0, 1.0]])
    assert float(difference_loss([e1, e2], orientation="hidden")) == pytest.approx(0.0)
    assert float(difference_loss([e1, e1])) > 0.1
    assert float(difference_loss([e1])) == 0.0
    assert len(AdversaryEnsemble(3, input_dim=6, num_groups=2)(torch.randn(2, 6))) == 3


def _tiny_bert(num_labels=2):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=40,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=num_labels,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return BertForSequenceClassification(config)


def _rows(n=64, seed=0):
    """Token-id rows: the task label is token 5/6 at position 1, the group leaks through token 7/8 at position 2."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        y = int(torch.randint(0, 2, (1,), generator=g))
        a = int(torch.randint(0, 2, (1,), generator=g))
        noise = torch.randint(10, 40, (5,), generator=g).tolist()
        rows.append({"input_ids": [1, 5 + y, 7 + a, *noise, 2], "labels": y, "group": a})
    return rows


def _trainer(tmp_path, **overrides):
    from fairmt.data.classification import ClassificationCollator

    kwargs = dict(
        output_dir=str(tmp_path / "out"),
        max_steps=24,
        per_device_train_batch_size=16,
        learning_rate=2e-3,
        logging_steps=6,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
        adv_hidden_size=16,
        disable_tqdm=True,
    )
    kwargs.update(overrides)
    args = AdversarialConfig(**kwargs)
    return AdversarialTrainer(
        model=_tiny_bert(),
        args=args,
        train_dataset=_rows(),
        eval_dataset=_rows(32, seed=1),
        data_collator=ClassificationCollator(pad_id=0),
    )


@pytest.mark.slow
def test_adversarial_trainer_trains_and_adversary_learns(tmp_path):
    trainer = _trainer(
        tmp_path, n_adversaries=3, diff_lambda=10.0, adv_lambda=0.5, save_strategy="steps", save_steps=24
    )
    adv_before = [p.detach().clone() for p in trainer.adversary.parameters()]
    enc_before = trainer.model.bert.encoder.layer[0].attention.self.query.weight.detach().clone()
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss_ce" in h]
    assert len(logs) == 4
    for h in logs:
        assert {"loss_ce", "loss_adv", "loss_diff", "adv_accuracy"} <= set(h)
    assert logs[-1]["loss_ce"] < logs[0]["loss_ce"]  # the task is learnt
    # the adversaries (a separate parameter group of the same optimizer) were updated, and so was the encoder
    assert len(trainer.optimizer.param_groups) == 3
    moved = [not torch.equal(b, p.detach()) for b, p in zip(adv_before, trainer.adversary.parameters())]
    assert all(moved)
    assert not torch.equal(enc_before, trainer.model.bert.encoder.layer[0].attention.self.query.weight)
    # checkpoint carries the adversaries
    ckpt = tmp_path / "out" / "checkpoint-24"
    assert (ckpt / ADVERSARY_FILE).is_file()
    state = load_file(ckpt / ADVERSARY_FILE)
    assert set(state) == set(trainer.adversary.state_dict())
    # evaluation: CE only, predictions carry (logits, hidden), label ids (labels, group)
    out = trainer.predict(_rows(8, seed=2))
    logits, hidden = out.predictions
    labels, groups = out.label_ids
    assert logits.shape == (8, 2) and hidden.shape == (8, 32) and labels.shape == groups.shape == (8,)


@pytest.mark.slow
def test_one_step_gradients_reach_adversary_and_are_reversed_into_the_encoder(tmp_path):
    trainer = _trainer(tmp_path, adv_lambda=1.0, adv_conditional=False, pooling="cls")  # h = the [CLS] state below
    model = trainer.model
    model.train()
    batch = trainer.data_collator(_rows(16))
    # gradient of the full loss vs gradient of CE alone: the difference on the encoder is −(∂ adv / ∂ encoder)
    model.zero_grad(), trainer.adversary.zero_grad()
    trainer.compute_loss(model, batch).backward()
    w = model.bert.encoder.layer[1].output.dense.weight
    g_total = w.grad.clone()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in trainer.adversary.parameters())
    g_adv_head = trainer.adversary.adversaries[0].head.weight.grad.clone()

    model.zero_grad(), trainer.adversary.zero_grad()
    inputs = {k: v for k, v in batch.items() if k not in ("labels", "group")}
    out = model(**inputs, output_hidden_states=True)
    rep = out.hidden_states[-1][:, 0]
    ce = nn.functional.cross_entropy(out.logits, batch["labels"])
    adv = nn.functional.cross_entropy(trainer.adversary(rep)[0][0], batch["group"])
    (ce - adv).backward()  # what the GRL must produce for the encoder
    assert torch.allclose(w.grad, g_total, atol=1e-6)
    model.zero_grad(), trainer.adversary.zero_grad()
    nn.functional.cross_entropy(trainer.adversary(rep.detach())[0][0], batch["group"]).backward()
    assert torch.allclose(trainer.adversary.adversaries[0].head.weight.grad, g_adv_head, atol=1e-6)


def test_config_and_batch_errors(tmp_path):
    with pytest.raises(FairmtError, match="remove_unused_columns"):
        AdversarialConfig(output_dir=str(tmp_path), remove_unused_columns=True, report_to=[])
    with pytest.raises(FairmtError, match="num_groups"):
        AdversarialConfig(output_dir=str(tmp_path), num_groups=1, report_to=[])
    trainer = _trainer(tmp_path)
    trainer.model.train()
    batch = trainer.data_collator(_rows(4))
    batch.pop("group")
    with pytest.raises(FairmtError, match="no 'group' column"):
        trainer.compute_loss(trainer.model, batch)
    batch = trainer.data_collator(_rows(4))
    batch["group"] = torch.tensor([0, 1, 2, 0])
    with pytest.raises(FairmtError, match=r"group ids must lie in \[0, 2\)"):
        trainer.compute_loss(trainer.model, batch)
    assert os.environ.get("OMP_NUM_THREADS") == "1"


_DDP_SCRIPT = r"""
import os, sys, torch
sys.path.insert(0, sys.argv[2])
from test_adversarial import _rows, _tiny_bert
from fairmt.data.classification import ClassificationCollator
from fairmt.trainers.adversarial import AdversarialConfig, AdversarialTrainer
out = sys.argv[1]
args = AdversarialConfig(output_dir=out, max_steps=4, per_device_train_batch_size=8, learning_rate=2e-3,
    logging_steps=2, save_strategy="no", report_to=[], use_cpu=True, seed=0, adv_hidden_size=16,
    n_adversaries=2, diff_lambda=1.0, disable_tqdm=True, dataloader_drop_last=True)
tr = AdversarialTrainer(model=_tiny_bert(), args=args, train_dataset=_rows(),
                        data_collator=ClassificationCollator(pad_id=0))
tr.train()
assert tr.accelerator.num_processes == 2
torch.save({"adv": tr.adversary.state_dict(), "model": tr.model.state_dict(),
            "adv_loss": [h["loss_adv"] for h in tr.state.log_history if "loss_adv" in h]},
           os.path.join(out, "rank%s.pt" % os.environ["RANK"]))
from ddp_helpers import teardown
teardown()
"""


@pytest.mark.slow
def test_two_processes_keep_the_adversaries_in_sync(tmp_path, torchrun_pool):
    """Under DDP (2 CPU processes, gloo) each rank sees different batches; the adversaries' gradients are averaged,
    so their weights stay identical across ranks, like the model's."""
    script = tmp_path / "ddp.py"
    script.write_text(_DDP_SCRIPT)
    torchrun_pool.run(
        script,
        tmp_path,
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"),
        cwd=tmp_path,
        timeout=240,
    )
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in (0, 1))
    assert r0["adv_loss"] != r1["adv_loss"]  # the ranks trained on different batches
    for k in r0["adv"]:
        assert torch.equal(r0["adv"][k], r1["adv"][k]), k
    for k in r0["model"]:
        assert torch.equal(r0["model"][k], r1["model"][k]), k


@pytest.mark.slow
def test_adversarial_trainer_on_a_feature_mlp(tmp_path):
    """Shen et al.'s setting: a trained MLP encoder over frozen sentence embeddings (2-D hidden states)."""
    text_classifiers = pytest.importorskip("fairmt.models.text_classifiers")
    from fairmt.data.classification import ClassificationCollator

    g = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(96):
        y, a = int(torch.randint(0, 3, (1,), generator=g)), int(torch.randint(0, 2, (1,), generator=g))
        x = torch.randn(12, generator=g)
        x[y] += 2.0
        x[5] += 2.0 * a  # the group is linearly decodable
        rows.append({"features": x.tolist(), "labels": y, "group": a})
    torch.manual_seed(0)
    model = text_classifiers.MLPClassifier(input_dim=12, num_labels=3, hidden_dim=24)
    args = AdversarialConfig(
        output_dir=str(tmp_path),
        max_steps=30,
        per_device_train_batch_size=32,
        learning_rate=5e-3,
        logging_steps=10,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
        adv_hidden_size=16,
        n_adversaries=2,
        diff_lambda=1.0,
        disable_tqdm=True,
    )
    trainer = AdversarialTrainer(model=model, args=args, train_dataset=rows, data_collator=ClassificationCollator())
    assert trainer.adversary.adversaries[0].body[0].in_features == 24 + 3  # h (24) ⊕ one-hot label (3)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss_ce" in h]
    assert len(logs) == 3 and logs[-1]["loss_ce"] < logs[0]["loss_ce"]
    assert all("loss_diff" in h and 0.0 <= h["adv_accuracy"] <= 1.0 for h in logs)


@pytest.mark.slow
def test_adversary_learns_and_its_gradients_are_reset_every_optimizer_step(tmp_path):
    """The stock Trainer zeroes only the model's gradients; the adversaries' must be reset too, or they accumulate
    over the whole run and the adversary never learns. With λ = 0 (no reversal) the adversary must learn to decode a
    linearly decodable group."""
    text_classifiers = pytest.importorskip("fairmt.models.text_classifiers")
    from fairmt.data.classification import ClassificationCollator

    g = torch.Generator().manual_seed(1)
    rows = []
    for _ in range(256):
        y, a = int(torch.randint(0, 2, (1,), generator=g)), int(torch.randint(0, 2, (1,), generator=g))
        x = torch.randn(8, generator=g)
        x[y] += 1.5
        x[4] += 3.0 * a
        rows.append({"features": x.tolist(), "labels": y, "group": a})
    torch.manual_seed(0)
    model = text_classifiers.MLPClassifier(input_dim=8, num_labels=2, hidden_dim=16)
    args = AdversarialConfig(
        output_dir=str(tmp_path),
        max_steps=200,
        per_device_train_batch_size=32,
        learning_rate=3e-3,
        logging_steps=50,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
        adv_hidden_size=16,
        adv_lambda=0.0,
        adv_learning_rate=1e-2,
        adv_conditional=False,
        disable_tqdm=True,
        gradient_accumulation_steps=2,
    )
    trainer = AdversarialTrainer(model=model, args=args, train_dataset=rows, data_collator=ClassificationCollator())
    seen = []

    from transformers import TrainerCallback

    class Spy(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            seen.append(all(p.grad is None or not p.grad.any() for p in trainer.adversary.parameters()))

    trainer.add_callback(Spy())
    trainer.train()
    assert seen and all(seen)  # reset after every optimizer step
    logs = [h["adv_accuracy"] for h in trainer.state.log_history if "adv_accuracy" in h]
    assert logs[-1] > logs[0] + 0.03, logs
    # on the final representations the adversary decodes the group about as well as a fresh linear SVM
    from sklearn.svm import LinearSVC

    model.eval()
    batch = ClassificationCollator()(rows)
    with torch.no_grad():
        h = model(features=batch["features"], output_hidden_states=True).hidden_states[-1]
        adv_acc = float((trainer.adversary(h)[0][0].argmax(-1) == batch["group"]).float().mean())
    svm_acc = LinearSVC(dual="auto").fit(h.numpy(), batch["group"].numpy()).score(h.numpy(), batch["group"].numpy())
    assert adv_acc > 0.85 and adv_acc > svm_acc - 0.05, (adv_acc, svm_acc)


@pytest.mark.slow
def test_resume_restores_the_adversaries(tmp_path):
    trainer = _trainer(tmp_path, max_steps=8, save_strategy="steps", save_steps=8, n_adversaries=2)
    trainer.train()
    saved = load_file(tmp_path / "out" / "checkpoint-8" / ADVERSARY_FILE)
    fresh = _trainer(tmp_path, max_steps=8, save_strategy="no", n_adversaries=2)
    assert not all(torch.equal(v, fresh.adversary.state_dict()[k]) for k, v in saved.items())
    fresh.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-8"))  # already at max_steps: loads only
    assert all(torch.equal(v, fresh.adversary.state_dict()[k]) for k, v in saved.items())
