"""Dev-set model selection: compute_metrics, the selection rules, and the callback inside a real training run."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from fairmt.errors import FairmtError
from fairmt.eval.classification import classification_metrics
from fairmt.eval.selection import (
    EvalRecord,
    FairnessSelectionCallback,
    fairness_compute_metrics,
    select_checkpoint,
)


class _EvalPred:
    def __init__(self, predictions, label_ids):
        self.predictions, self.label_ids = predictions, label_ids


def test_compute_metrics_matches_classification_metrics():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(60, 3))
    labels = rng.integers(0, 3, 60)
    groups = rng.integers(0, 2, 60)
    hidden = rng.normal(size=(60, 5)) + groups[:, None]
    ref = classification_metrics(labels, logits.argmax(-1), groups)
    # groups carried in the label ids, hidden in the predictions
    out = fairness_compute_metrics(with_leakage=True)(_EvalPred((logits, hidden), (labels, groups)))
    assert out["accuracy"] == ref.accuracy and out["gap"] == ref.gap and out["delta_eo"] == ref.delta_eo
    assert out["macro_f1"] == ref.macro_f1
    assert out["dto"] == pytest.approx(math.hypot(1 - ref.accuracy, ref.gap))
    assert 0.5 < out["leakage_h"] <= 1.0
    # groups given in dev-set order instead
    out2 = fairness_compute_metrics(groups)(_EvalPred(logits, labels))
    assert out2["gap"] == ref.gap and "leakage_h" not in out2
    with pytest.raises(FairmtError, match="pass groups="):
        fairness_compute_metrics()(_EvalPred(logits, labels))
    with pytest.raises(FairmtError, match="59 groups for 60"):
        fairness_compute_metrics(groups[:59])(_EvalPred(logits, labels))


RECORDS = [
    EvalRecord(step=10, loss=0.50, accuracy=0.80, gap=0.30),
    EvalRecord(step=20, loss=0.40, accuracy=0.86, gap=0.20),
    EvalRecord(step=30, loss=0.45, accuracy=0.84, gap=0.05),
    EvalRecord(step=40, loss=0.60, accuracy=0.87, gap=0.25),
]


def test_selection_rules_hand_computed():
    assert select_checkpoint(RECORDS, "loss").step == 20
    assert select_checkpoint(RECORDS, "accuracy").step == 40
    # absolute DTO: sqrt(.2²+.3²)=.361, sqrt(.14²+.2²)=.244, sqrt(.16²+.05²)=.168, sqrt(.13²+.25²)=.282
    assert select_checkpoint(RECORDS, "dto", normalise=False).step == 30
    # normalised: acc / .87, (1 − gap) / .95 -> step 30: (.9655, 1.0) is the closest to (1, 1)
    assert select_checkpoint(RECORDS, "dto", normalise=True).step == 30
    # Shen et al.: within 0.01 of the best accuracy (.87): steps 20 (.86) and 40; lower GAP -> 20
    assert select_checkpoint(RECORDS, "accuracy_then_gap", tolerance=0.01).step == 20
    assert select_checkpoint(RECORDS, "accuracy_then_gap", tolerance=0.05).step == 30


def test_normalisation_can_change_the_choice():
    recs = [EvalRecord(step=1, accuracy=0.50, gap=0.20), EvalRecord(step=2, accuracy=0.45, gap=0.10)]
    # absolute optimum (1, 1): hypot(.50, .20) = .539 < hypot(.55, .10) = .559 -> step 1
    assert select_checkpoint(recs, "dto", normalise=False).step == 1
    # normalised by the best accuracy .50 and the best 1 − GAP .90:
    #   step 1 -> (1, .8/.9): distance .111; step 2 -> (.45/.5, 1): distance .100 -> step 2
    assert select_checkpoint(recs, "dto", normalise=True).step == 2


def test_selection_errors():
    with pytest.raises(FairmtError, match="criterion"):
        select_checkpoint(RECORDS, "f1")
    with pytest.raises(FairmtError, match="no dev-set evaluation"):
        select_checkpoint([], "dto")
    with pytest.raises(FairmtError, match="no dev gap"):
        select_checkpoint([EvalRecord(step=1, accuracy=0.5)], "dto")
    with pytest.raises(FairmtError, match="test set"):
        FairnessSelectionCallback(dev_prefix="test")


@pytest.mark.slow
def test_callback_keeps_the_best_dev_checkpoint_and_ignores_test(tmp_path):
    from test_adversarial import _rows, _tiny_bert

    from fairmt.data.classification import ClassificationCollator
    from fairmt.trainers.adversarial import AdversarialConfig, AdversarialTrainer

    callback = FairnessSelectionCallback("dto", normalise=True)
    args = AdversarialConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=16,
        per_device_train_batch_size=16,
        learning_rate=2e-3,
        eval_strategy="steps",
        eval_steps=4,
        save_strategy="steps",
        save_steps=4,
        logging_steps=4,
        report_to=[],
        use_cpu=True,
        seed=0,
        adv_hidden_size=16,
        adv_lambda=0.3,
        disable_tqdm=True,
        metric_for_best_model="dto",
        greater_is_better=False,
        load_best_model_at_end=True,
    )
    trainer = AdversarialTrainer(
        model=_tiny_bert(),
        args=args,
        train_dataset=_rows(),
        eval_dataset=_rows(48, seed=1),
        data_collator=ClassificationCollator(pad_id=0),
        compute_metrics=fairness_compute_metrics(),
        callbacks=[callback],
    )
    trainer.train()
    assert [r.step for r in callback.records] == [4, 8, 12, 16]
    assert all(r.checkpoint and r.dto is not None and r.loss is not None for r in callback.records)
    expected = select_checkpoint(callback.records, "dto", normalise=True)
    assert callback.best.step == expected.step
    best_dir = tmp_path / "out" / "best-dto"
    assert callback.best_checkpoint == str(best_dir)
    assert (best_dir / "model.safetensors").read_bytes() == (
        tmp_path / "out" / f"checkpoint-{expected.step}" / "model.safetensors"
    ).read_bytes()
    report = json.loads((tmp_path / "out" / "selection.json").read_text())
    assert report["best"]["step"] == expected.step and len(report["records"]) == 4
    # the Trainer's own mechanism with the absolute DTO agrees with select_checkpoint(normalise=False)
    absolute = select_checkpoint(callback.records, "dto", normalise=False)
    assert trainer.state.best_model_checkpoint.endswith(f"checkpoint-{absolute.step}")
    # a test-set evaluation never enters the selection
    n = len(callback.records)
    trainer.evaluate(_rows(16, seed=5), metric_key_prefix="test")
    assert len(callback.records) == n
    assert os.path.isdir(best_dir)


def test_callback_events_without_a_trainer(tmp_path):
    """Event-level behaviour: test metrics ignored, rotation-deleted checkpoints skipped, copy revised."""
    from types import SimpleNamespace

    args = SimpleNamespace(output_dir=str(tmp_path), should_save=True)
    cb = FairnessSelectionCallback("loss")

    def step(n, loss, save=True):
        state = SimpleNamespace(global_step=n)
        cb.on_evaluate(args, state, None, metrics={"eval_loss": loss, "eval_runtime": 0.1})
        if save:
            ckpt = tmp_path / f"checkpoint-{n}"
            ckpt.mkdir()
            (ckpt / "weights.bin").write_text(str(n))
            cb.on_save(args, state, None)

    step(10, 0.9)
    assert (tmp_path / "best-loss" / "weights.bin").read_text() == "10"
    step(20, 0.5)
    assert (tmp_path / "best-loss" / "weights.bin").read_text() == "20"
    cb.on_evaluate(args, SimpleNamespace(global_step=25), None, metrics={"test_loss": 0.01})  # never selected
    step(30, 0.7)
    assert [r.step for r in cb.records] == [10, 20, 30]
    # checkpoint-20 rotated away (save_total_limit): its copy in best-loss is still the choice
    import shutil

    shutil.rmtree(tmp_path / "checkpoint-20")
    cb.on_train_end(args, SimpleNamespace(global_step=30), None)
    assert cb.best.step == 20 and (tmp_path / "best-loss" / "weights.bin").read_text() == "20"
    assert cb.best_checkpoint == str(tmp_path / "best-loss")
    report = json.loads((tmp_path / "selection.json").read_text())
    assert report["best"]["step"] == 20 and report["criterion"] == "loss" and len(report["records"]) == 3
    # a record whose checkpoint is gone and was never copied cannot be chosen
    cb2 = FairnessSelectionCallback("loss", copy_best=False)
    cb = cb2  # step() reports to the callback bound to `cb`
    step(40, 0.1)
    step(50, 0.2)
    shutil.rmtree(tmp_path / "checkpoint-40")
    cb2.on_train_end(args, SimpleNamespace(global_step=50), None)
    assert cb2.best.step == 50 and cb2.best_checkpoint == str(tmp_path / "checkpoint-50")
    # a DTO callback refuses dev metrics without accuracy/GAP
    with pytest.raises(FairmtError, match="fairness_compute_metrics"):
        FairnessSelectionCallback("dto").on_evaluate(
            args, SimpleNamespace(global_step=1), None, metrics={"eval_loss": 0.3}
        )


def _drive(callback, tmp_path, records):
    """Feed (accuracy, gap, loss) evaluations to the callback as a Trainer would (evaluate, then save), creating the
    checkpoint folders; returns the control object of each step."""
    from types import SimpleNamespace

    from transformers import TrainerControl

    args = SimpleNamespace(output_dir=str(tmp_path), should_save=True)
    controls = []
    for i, (acc, gap, loss) in enumerate(records, start=1):
        state = SimpleNamespace(global_step=10 * i)
        control = TrainerControl()
        callback.on_evaluate(args, state, control, metrics={"eval_accuracy": acc, "eval_gap": gap, "eval_loss": loss})
        os.makedirs(tmp_path / f"checkpoint-{10 * i}")
        callback.on_save(args, state, control)
        controls.append(control)
    callback.on_train_end(args, SimpleNamespace(global_step=10 * len(records)), TrainerControl())
    return controls


def test_accuracy_then_gap_with_patience_stops_and_prunes(tmp_path):
    """Shen et al.'s rule (best dev accuracy, then the lowest GAP within a tolerance) with early stopping: the chosen
    evaluation can move back in time when a better accuracy narrows the window; checkpoints that fell out of the
    window are deleted as training goes, the latest is always kept."""
    cb = FairnessSelectionCallback("accuracy_then_gap", tolerance=0.03, patience=2, prune=True, copy_best=False)
    evals = [(0.80, 0.30, 0.5), (0.86, 0.20, 0.4), (0.84, 0.05, 0.45), (0.85, 0.10, 0.5), (0.855, 0.12, 0.6)]
    controls = _drive(cb, tmp_path, evals)
    assert [c.should_training_stop for c in controls] == [False, False, False, False, True]
    assert cb.best.step == 30 and cb.stopped_early_at == 50
    assert cb.best_checkpoint == str(tmp_path / "checkpoint-30")
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("checkpoint-"))
    assert left == ["checkpoint-20", "checkpoint-30", "checkpoint-40", "checkpoint-50"]  # 10: acc .80 < .86 − .03
    report = json.loads((tmp_path / "selection.json").read_text())
    assert report["criterion"] == "accuracy_then_gap" and report["patience"] == 2
    assert report["stopped_early_at_step"] == 50 and report["best"]["step"] == 30


def test_loss_with_patience_is_ordinary_early_stopping_and_keeps_only_best_and_latest(tmp_path):
    cb = FairnessSelectionCallback("loss", patience=3, prune=True, copy_best=False)
    evals = [(0.5, 0.1, 0.9), (0.6, 0.1, 0.7), (0.6, 0.1, 0.8), (0.6, 0.1, 0.75), (0.6, 0.1, 0.71)]
    controls = _drive(cb, tmp_path, evals)
    assert [c.should_training_stop for c in controls] == [False, False, False, False, True]
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("checkpoint-"))
    assert left == ["checkpoint-20", "checkpoint-50"] and cb.best.step == 20
    with pytest.raises(FairmtError, match="patience must be a positive number"):
        FairnessSelectionCallback("loss", patience=0)


# the issue-27 case: DTO picks a near-constant early epoch (GAP 0, accuracy 21 %) over useful models
DEGENERATE = [(0.21, 0.00, 3.2), (0.50, 0.65, 2.0), (0.62, 0.72, 1.5), (0.66, 0.75, 1.4), (0.58, 0.80, 1.6)]


def _records(evals):
    return [
        EvalRecord(step=10 * i, accuracy=a, gap=g, loss=loss, dto=math.sqrt((1 - a) ** 2 + g**2))
        for i, (a, g, loss) in enumerate(evals, start=1)
    ]


def test_accuracy_floor_excludes_a_model_degenerate_on_dev():
    """Brute force: without a floor the absolute DTO chooses the 21 % model; with the floor 0.8 the choice is the
    smallest DTO among records with accuracy ≥ 0.8 × 0.66; the floor never applies to loss or accuracy."""
    from fairmt.eval.selection import degenerate_choice

    recs = _records(DEGENERATE)
    assert select_checkpoint(recs, "dto", normalise=False).step == 10
    floor = 0.8 * max(r.accuracy for r in recs)
    allowed = [r for r in recs if r.accuracy >= floor]
    brute = min(allowed, key=lambda r: math.sqrt((1 - r.accuracy) ** 2 + r.gap**2))
    chosen = select_checkpoint(recs, "dto", normalise=False, accuracy_floor=0.8)
    assert chosen.step == brute.step == 30
    assert select_checkpoint(recs, "accuracy_then_gap", tolerance=0.6, accuracy_floor=0.8).step == 30
    assert select_checkpoint(recs, "loss", accuracy_floor=0.99).step == 40
    # the note: the guard changed the choice / an unguarded degenerate choice / nothing to say
    unguarded = select_checkpoint(recs, "dto", normalise=False)
    note = degenerate_choice(recs, chosen, "dto", 0.8, unguarded=unguarded, scale=100)
    assert "step 10 (dev accuracy 21.00, GAP 0.00)" in note and "step 30 selected instead" in note
    note = degenerate_choice(recs, unguarded, "dto", None, unguarded=unguarded)
    assert "degenerate on dev" in note and "selection_accuracy_floor" in note
    assert degenerate_choice(recs, chosen, "dto", 0.8, unguarded=chosen) is None
    assert degenerate_choice(recs, unguarded, "loss", None) is None


def test_callback_with_a_floor_keeps_what_can_still_be_chosen_and_warns_once(tmp_path, recwarn):
    """During training the floor rises with the best accuracy: the 21 % epoch is the DTO choice until better
    epochs arrive, then excluded; pruning never deletes a checkpoint that can still become the choice, the final
    choice is the brute-force one, selection.json says what happened, and the run warns once."""
    cb = FairnessSelectionCallback(
        "dto", normalise=False, prune=True, copy_best=False, accuracy_floor=0.8, percent=True
    )
    _drive(cb, tmp_path, [(100 * a, 100 * g, loss) for a, g, loss in DEGENERATE])  # percent, as the recipes log
    assert cb.best.step == 30 and cb.best.accuracy == pytest.approx(0.62)  # stored as fractions
    assert cb.best_checkpoint == str(tmp_path / "checkpoint-30")
    assert (tmp_path / "checkpoint-30").is_dir()
    report = json.loads((tmp_path / "selection.json").read_text())
    assert report["accuracy_floor"] == 0.8 and "step 30 selected instead" in report["note"]
    assert "dev accuracy 21.00" in report["note"]  # printed on the logs' percent scale
    ours = [w for w in recwarn.list if "model selection" in str(w.message)]
    assert len(ours) == 1
    # no floor: the degenerate model is chosen, with a warning that says so
    plain = FairnessSelectionCallback("dto", normalise=False, copy_best=False)
    _drive(plain, tmp_path / "plain", DEGENERATE)
    assert plain.best.step == 10 and "degenerate on dev" in plain.note
    with pytest.raises(FairmtError, match="accuracy_floor"):
        FairnessSelectionCallback("dto", accuracy_floor=1.5)


def test_prune_with_a_floor_never_loses_the_final_choice(tmp_path):
    """Random evaluation sequences: with pruning and the floor, the checkpoint chosen at the end always exists and
    is the brute-force choice over all evaluations."""
    rng = np.random.default_rng(0)
    for trial in range(30):
        evals = [(float(a), float(g), 1.0) for a, g in zip(rng.uniform(0.05, 0.9, 6), rng.uniform(0, 0.5, 6))]
        d = tmp_path / str(trial)
        cb = FairnessSelectionCallback("dto", normalise=False, prune=True, copy_best=False, accuracy_floor=0.8)
        _drive(cb, d, evals)
        brute = select_checkpoint(_records(evals), "dto", normalise=False, accuracy_floor=0.8)
        assert cb.best.step == brute.step, (trial, evals)
        assert os.path.isdir(cb.best_checkpoint)


def test_compute_metrics_in_percent_is_100_times_the_fractions():
    logits = np.array([[2.0, 0.1], [0.2, 1.0], [1.5, 0.3], [0.1, 0.9], [1.0, 0.2], [0.3, 2.0]])
    pred = _EvalPred((logits, None), (np.array([0, 1, 1, 1, 0, 0]), np.array([0, 0, 0, 1, 1, 1])))
    frac = fairness_compute_metrics(num_classes=2)(pred)
    pct = fairness_compute_metrics(num_classes=2, percent=True)(pred)
    assert set(frac) == set(pct) and all(pct[k] == pytest.approx(100 * frac[k]) for k in frac)


def test_each_metrics_caveat_is_warned_once_per_run():
    """Inside caveats_once (a classification run) the same empty (class, group) cell, scored every epoch, warns
    once; a new caveat still warns; outside the block every call warns again; results keep all their caveats."""
    import warnings

    from fairmt.eval.classification import caveats_once

    labels, groups = [0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 0]  # class 2 has no group-1 example
    other = [0, 0, 1, 1, 2, 2], [0, 1, 0, 0, 0, 1]  # class 1 has no group-1 example

    def score(ls, gs):
        return classification_metrics(ls, ls, gs, num_classes=3)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with caveats_once():
            results = [score(labels, groups) for _ in range(26)]  # 26 epochs
            score(*other)
        score(labels, groups)
    msgs = [str(w.message) for w in caught if "classification metrics" in str(w.message)]
    assert len(msgs) == 3, msgs
    assert "class 2" in msgs[0] and "class 1" in msgs[1] and "class 2" in msgs[2]
    assert all(r.warnings for r in results)


def test_patience_can_wait_for_the_dev_loss(tmp_path):
    """The shipped-sample case: DTO's choice (step 20) stays for 5 evaluations while the dev loss keeps falling.
    The rule alone stops at step 70; waiting for the loss never stops earlier, here not at all until the loss has
    been flat for `patience` evaluations."""
    evals = [
        (0.09, 0.0, 3.30),
        (0.20, 0.26, 3.23),
        (0.14, 0.0, 3.10),
        (0.14, 0.26, 2.95),
        (0.11, 0.26, 2.83),
        (0.11, 0.26, 2.75),
        (0.11, 0.26, 2.69),
        (0.43, 0.63, 2.27),
        (0.40, 0.68, 2.30),
        (0.40, 0.68, 2.31),
    ]
    alone = FairnessSelectionCallback("dto", normalise=False, patience=5, copy_best=False)
    stops = [c.should_training_stop for c in _drive(alone, tmp_path / "a", evals)]
    assert stops.index(True) == 6  # at step 70
    waits = FairnessSelectionCallback(
        "dto", normalise=False, patience=2, copy_best=False, accuracy_floor=0.8, patience_waits_for_loss=True
    )
    stops = [c.should_training_stop for c in _drive(waits, tmp_path / "w", evals)]
    # loss lowest at step 80 (and DTO's choice under the floor is step 80 then): stop 2 evaluations later
    assert stops.index(True) == 9 and waits.best.step == 80
    report = json.loads((tmp_path / "w" / "selection.json").read_text())
    assert report["patience_waits_for_loss"] is True
