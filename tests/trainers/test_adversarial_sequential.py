"""``adv_update="sequential"``: fairlib's adversary update order (each discriminator steps first on
CE_k + λ_diff·Σ Diff, then the encoder against the updated discriminators), against a plain-PyTorch transcription of
fairlib 0.1's ``train_epoch`` / ``adv_train_batch`` on a fixed batch."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from fairmt.data.classification import ClassificationCollator
from fairmt.errors import FairmtError
from fairmt.models.text_classifiers import MLPClassifier
from fairmt.trainers.adversarial import AdversarialConfig, AdversarialTrainer


def _rows(n: int = 24, seed: int = 0) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    rows = []
    for i in range(n):
        y, a = i % 3, (i // 3) % 2
        x = torch.randn(10, generator=g)
        x[y] += 1.5
        x[6] += 1.5 * a
        rows.append({"features": x.tolist(), "labels": y, "group": a})
    return rows


def _diff_loss(d1: torch.Tensor, d2: torch.Tensor) -> torch.Tensor:
    """fairlib's DiffLoss (Domain Separation Networks): rows L2-normalised (norm detached, + 1e-6), mean of the
    squared batch × batch products."""
    n1 = d1 / (torch.norm(d1, p=2, dim=1, keepdim=True).detach() + 1e-6)
    n2 = d2 / (torch.norm(d2, p=2, dim=1, keepdim=True).detach() + 1e-6)
    return torch.mean((n1 @ n2.t()).pow(2))


def _fairlib_steps(model, discs, batch, *, steps, lr, adv_lr, lam, lam_diff, conditional):
    """A transcription of fairlib's training step with adversarial debiasing (adv_update_frequency "Batch"):
    the main loss CE; the discriminators, one after another, each with its own Adam on its CE plus λ_diff·Diff to
    every other discriminator over the detached hidden states; then the hidden states again and
    loss −= λ·CE_k / K for each (updated) discriminator; one Adam step of the main model."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    d_opts = [torch.optim.Adam(d.parameters(), lr=adv_lr) for d in discs]
    x, y, g = batch["features"], batch["labels"], batch["group"]
    cond = y if conditional else None
    k = len(discs)
    for _ in range(steps):
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(features=x).logits, y)
        hs = model.encoder(x).detach()
        for d, d_opt in zip(discs, d_opts):
            d_opt.zero_grad()
            adv_loss = F.cross_entropy(d(hs, cond)[0], g)
            if k > 1 and lam_diff > 0:
                current = d(hs, cond)[1]
                for d2 in discs:
                    if d2 is not d:
                        adv_loss = adv_loss + lam_diff * _diff_loss(current, d2(hs, cond)[1])
            adv_loss.backward()
            d_opt.step()
            d_opt.zero_grad()
        hs = model.encoder(x)
        for d in discs:
            loss = loss - lam * F.cross_entropy(d(hs, cond)[0], g) / k
        opt.zero_grad()
        loss.backward()
        opt.step()


def _trainer(tmp_path, steps, **kw):
    torch.manual_seed(0)
    model = MLPClassifier(10, 3, hidden_dim=12, dropout=0.0, head_layers=1)
    rows = _rows()
    options = dict(
        output_dir=str(tmp_path),
        max_steps=steps,
        per_device_train_batch_size=len(rows),
        learning_rate=1e-2,
        lr_scheduler_type="constant",
        max_grad_norm=0.0,
        weight_decay=0.0,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
        adv_hidden_size=8,
        adv_dropout=0.0,
        disable_tqdm=True,
        logging_steps=1,
        adv_learning_rate=3e-3,
        adv_lambda=0.8,
        n_adversaries=3,
        diff_lambda=0.1,
        adv_conditional=False,
    )
    args = AdversarialConfig(**{**options, **kw})
    return AdversarialTrainer(model=model, args=args, train_dataset=rows, data_collator=ClassificationCollator())


@pytest.mark.parametrize("conditional", [False, True])
def test_sequential_update_equals_the_fairlib_transcription(tmp_path, conditional):
    steps = 3
    trainer = _trainer(tmp_path, steps, adv_update="sequential", adv_conditional=conditional)
    model0, discs0 = copy.deepcopy(trainer.model), copy.deepcopy(list(trainer.adversary.adversaries))
    batch = ClassificationCollator()(_rows())
    trainer.train()
    _fairlib_steps(
        model0, discs0, batch, steps=steps, lr=1e-2, adv_lr=3e-3, lam=0.8, lam_diff=0.1, conditional=conditional
    )
    for (name, p), q in zip(trainer.model.named_parameters(), model0.parameters()):
        assert torch.allclose(p.detach(), q.detach(), atol=1e-6), name
    for d, d0 in zip(trainer.adversary.adversaries, discs0):
        for (name, p), q in zip(d.named_parameters(), d0.parameters()):
            assert torch.allclose(p.detach(), q.detach(), atol=1e-6), name
    # the runs really moved (not a comparison of untouched weights)
    fresh = _trainer(tmp_path / "fresh", steps, adv_update="sequential", adv_conditional=conditional)
    moved = max(
        float((p - q).detach().abs().max()) for p, q in zip(trainer.model.parameters(), fresh.model.parameters())
    )
    assert moved > 1e-3
    logs = [h for h in trainer.state.log_history if "loss_disc" in h]
    assert len(logs) == steps and all("loss_adv" in h for h in logs)
    assert len(trainer.optimizer.param_groups) <= 2  # the model's groups only: the discriminators have their own


def test_joint_update_differs_from_the_sequential_one(tmp_path):
    """The two orders give different encoders from the same weights (why a recipe must say which it runs)."""
    seq, joint = _trainer(tmp_path / "s", 3, adv_update="sequential"), _trainer(tmp_path / "j", 3, adv_update="joint")
    seq.train()
    joint.train()
    gap = max(float((p - q).detach().abs().max()) for p, q in zip(seq.model.parameters(), joint.model.parameters()))
    assert gap > 1e-4


def test_sequential_config_errors_and_checkpoint(tmp_path):
    with pytest.raises(FairmtError, match="adv_update must be one of"):
        AdversarialConfig(output_dir=str(tmp_path), adv_update="alternating", use_cpu=True)
    with pytest.raises(FairmtError, match="adv_weighting=mean applies to adv_update=joint"):
        AdversarialConfig(output_dir=str(tmp_path), adv_update="sequential", adv_weighting="mean", use_cpu=True)
    trainer = _trainer(tmp_path, 2, adv_update="sequential", save_strategy="steps", save_steps=2, save_only_model=False)
    trainer.train()
    ckpt = tmp_path / "checkpoint-2"
    states = torch.load(ckpt / "adversary_optimizers.pt", weights_only=True)
    assert len(states) == 3 and all(s["state"] for s in states)
    # resume: the discriminators' optimizers come back with their moments
    again = _trainer(tmp_path / "again", 2, adv_update="sequential")
    again.create_optimizer_and_scheduler(num_training_steps=2)
    again._load_optimizer_and_scheduler(str(ckpt))
    for o, s in zip(again.adversary_optimizers(), states):
        assert torch.equal(o.state_dict()["state"][0]["exp_avg"], s["state"][0]["exp_avg"])
