"""Gradient caching gives the gradients of the plain full-batch step."""

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from fairmt.errors import FairmtError
from fairmt.losses import cs_infonce_loss, supcon_loss
from fairmt.trainers.gradcache import RandContext, cached_backward, split_batch


def _model(dropout: float) -> BertForSequenceClassification:
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=60,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=3,
        max_position_embeddings=32,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    return BertForSequenceClassification(cfg).train()


def _batch(n=24, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 60, (n, 10), generator=g)
    mask = torch.ones_like(ids)
    mask[::3, 7:] = 0
    return (
        {"input_ids": ids, "attention_mask": mask},
        torch.randint(0, 3, (n,), generator=g),
        torch.randint(0, 2, (n,), generator=g),
    )


def _forward(model):
    def f(b):
        out = model(**b, output_hidden_states=True)
        return out.hidden_states[-1][:, 0], out.logits

    return f


def _loss(labels, groups):
    def loss_fn(outs):
        reps = torch.stack([outs[0], outs[2]], dim=1)
        ce = torch.nn.functional.cross_entropy(outs[1], labels)
        return 0.9 * ce + 0.1 * supcon_loss(reps, labels) + 2.0 * cs_infonce_loss(reps, labels, groups)

    return loss_fn


def _grads(model):
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def test_cached_gradients_equal_plain_full_batch_without_dropout():
    inputs, labels, groups = _batch()
    model = _model(0.0)
    f = _forward(model)
    loss_fn = _loss(labels, groups)
    plain = loss_fn([*f(inputs), *f(inputs)])
    plain.backward()
    want = _grads(model)
    model.zero_grad()
    got_loss = cached_backward(f, [inputs, inputs], loss_fn, chunk_size=5)
    got = _grads(model)
    assert float(got_loss) == pytest.approx(float(plain), rel=1e-5)
    assert want.keys() == got.keys() and len(want) > 10
    for name in want:
        assert torch.allclose(got[name], want[name], atol=1e-6, rtol=1e-4), name


def test_cached_gradients_equal_plain_with_dropout_views():
    """With dropout, the same RNG stream drives the reference (chunk-wise forwards with grad) and the cache."""
    inputs, labels, groups = _batch()
    model = _model(0.1)
    f = _forward(model)
    loss_fn = _loss(labels, groups)
    torch.manual_seed(123)
    outs = []
    for view in (inputs, inputs):
        parts = [f(c) for c in split_batch(view, 6)]
        outs += [torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])]
    ref = loss_fn(outs)
    ref.backward()
    want = _grads(model)
    model.zero_grad()
    torch.manual_seed(123)
    got_loss = cached_backward(f, [inputs, inputs], loss_fn, chunk_size=6)
    got = _grads(model)
    assert float(got_loss) == pytest.approx(float(ref), rel=1e-5)
    for name in want:
        assert torch.allclose(got[name], want[name], atol=1e-6, rtol=1e-4), name
    # the two dropout views really differ (otherwise the test would not exercise the RNG replay)
    torch.manual_seed(5)
    a, b = f(inputs)[0], f(inputs)[0]
    assert not torch.allclose(a, b)


def test_rand_context_replays_dropout():
    model = _model(0.3)
    inputs, _, _ = _batch(8)
    ctx = RandContext(inputs["input_ids"])
    with torch.no_grad():
        first = model(**inputs).logits
    with ctx:
        again = model(**inputs).logits
    assert torch.equal(first, again)


def test_split_batch_rejects_ragged_inputs():
    with pytest.raises(FairmtError, match="share dim 0"):
        split_batch({"a": torch.zeros(4, 2), "b": torch.zeros(3)}, 2)
    with pytest.raises(FairmtError, match=">= 1"):
        split_batch({"a": torch.zeros(4, 2)}, 0)


def test_trainer_gradcache_step_matches_plain_step(tmp_path):
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    inputs, labels, groups = _batch(16)
    batch = {**inputs, "labels": labels, "group": groups}
    grads = {}
    for chunk in (None, 4):
        model = _model(0.0)
        args = FairContrastiveConfig(
            output_dir=str(tmp_path / str(chunk)),
            objective="cscl",
            gamma=0.3,
            cs_lambda=2.0,
            gradcache_chunk_size=chunk,
            report_to=[],
            use_cpu=True,
            per_device_train_batch_size=16,
        )
        trainer = FairContrastiveTrainer(model=model, args=args)
        trainer.current_gradient_accumulation_steps = 1  # set by the training loop otherwise
        loss = trainer.training_step(model, dict(batch))
        grads[chunk] = (float(loss), _grads(model))
    assert grads[4][0] == pytest.approx(grads[None][0], rel=1e-5)
    for name, g in grads[None][1].items():
        assert torch.allclose(grads[4][1][name], g, atol=1e-6, rtol=1e-4), name
