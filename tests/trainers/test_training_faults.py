"""Training faults: a non-finite loss stops the run naming the step and the terms (the last checkpoint stays good);
a run killed (SIGKILL) while saving resumes from the last complete checkpoint."""

import os
import signal
import sys
from pathlib import Path

import pytest
import torch

import procs
from fairmt.errors import FairmtError
from fairmt.trainers.faults import checkpoint_complete, last_complete_checkpoint

HERE = Path(__file__).resolve().parents[1] / "support"

SCRIPT = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[2])
import torch
from datasets import Dataset
from transformers.trainer_callback import TrainerState
from ddp_helpers import fcl_rows
from fairmt.data.classification import ClassificationCollator
from fairmt.models.text_classifiers import MLPClassifier
from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

out, kill_at, lr = sys.argv[1], int(sys.argv[3]), float(sys.argv[4])
save = TrainerState.save_to_json
def save_or_die(self, path):
    if self.global_step == kill_at:  # killed while the checkpoint is being written: model saved, state not
        with open(path, "w") as fh:
            fh.write('{"global_step": ')
        os.kill(os.getpid(), signal.SIGKILL)
    return save(self, path)
TrainerState.save_to_json = save_or_die
torch.manual_seed(0)
args = FairContrastiveConfig(output_dir=out, objective="ce", views="none", per_device_train_batch_size=16,
    learning_rate=lr, max_steps=6, save_steps=2, save_strategy="steps", logging_steps=1, report_to=[], use_cpu=True,
    disable_tqdm=True, seed=0)
trainer = FairContrastiveTrainer(model=MLPClassifier(16, 3, hidden_dim=32, dropout=0.0), args=args,
    train_dataset=Dataset.from_list(fcl_rows()), data_collator=ClassificationCollator())
trainer.train(resume_from_checkpoint=True if len(sys.argv) > 5 else None)
print("global_step", trainer.state.global_step)
"""


def _killed_run(tmp_path, kill_at: int) -> tuple[int, str]:
    """SCRIPT killed (SIGKILL) while it saves checkpoint ``kill_at``: its exit status and output. It runs in a fork of
    this process where this process can fork (fairmt.forking: torch, transformers and the trainers imported already;
    a fresh interpreter spent ~8 s of CPU importing them), else in a fresh interpreter."""
    from fairmt import forking

    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    args = [tmp_path / "out", HERE, kill_at, "1e-3"]
    if forking.ready_to_fork() is None:
        code, out, err = forking.run_forked(lambda: procs.in_process(script, *args, cwd=tmp_path))
        return code, out + err
    cmd = [sys.executable, str(script), *map(str, args)]
    proc = procs.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return proc.returncode, proc.stdout + proc.stderr


def test_killed_while_saving_resumes_from_the_last_complete_checkpoint(tmp_path, capsys):
    code, output = _killed_run(tmp_path, kill_at=4)
    assert code == -signal.SIGKILL, output[-2000:]
    out = tmp_path / "out"
    assert (out / "checkpoint-4").is_dir() and not checkpoint_complete(out / "checkpoint-4")  # torn
    assert last_complete_checkpoint(out) == out / "checkpoint-2"
    # the resumed run is not about the process: the same script in this process (no fresh interpreter's ~5 s of
    # imports); what it patches (TrainerState.save_to_json, a no-op wrapper with kill_at -1) and seeds is put back
    from transformers.trainer_callback import TrainerState

    capsys.readouterr()
    script, save, rng = tmp_path / "run.py", TrainerState.save_to_json, torch.get_rng_state()
    try:
        procs.in_process(script, out, HERE, -1, "1e-3", "resume", cwd=tmp_path)
    finally:
        TrainerState.save_to_json = save
        torch.set_rng_state(rng)
    assert "global_step 6" in capsys.readouterr().out and checkpoint_complete(out / "checkpoint-6")


def test_a_torn_checkpoint_given_by_path_is_refused_naming_the_good_one(tmp_path):
    from datasets import Dataset

    from ddp_helpers import fcl_rows
    from fairmt.data.classification import ClassificationCollator
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    out = tmp_path / "out"
    (out / "checkpoint-2").mkdir(parents=True)
    (out / "checkpoint-2" / "trainer_state.json").write_text('{"global_step": 2}')
    (out / "checkpoint-4").mkdir()
    (out / "checkpoint-4" / "trainer_state.json").write_text('{"global_st')
    args = FairContrastiveConfig(output_dir=str(out), objective="ce", views="none", report_to=[], use_cpu=True)
    trainer = FairContrastiveTrainer(
        model=MLPClassifier(16, 3, hidden_dim=8),
        args=args,
        train_dataset=Dataset.from_list(fcl_rows()),
        data_collator=ClassificationCollator(),
    )
    with pytest.raises(
        FairmtError,
        match=r"checkpoint-4 cannot be resumed from: trainer_state.json .*resume from .*checkpoint-2, the last complete one",
    ):
        trainer.train(resume_from_checkpoint=str(out / "checkpoint-4"))


def test_a_nan_loss_stops_the_run_at_its_step_and_the_last_checkpoint_stays_good(tmp_path):
    from datasets import Dataset
    from safetensors.torch import load_file

    from ddp_helpers import fcl_rows
    from fairmt.data.classification import ClassificationCollator
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    rows = fcl_rows()
    for r in rows[32:]:  # the second half of the data is broken
        r["features"] = [float("nan")] * len(r["features"])
    out = tmp_path / "out"
    args = FairContrastiveConfig(
        output_dir=str(out),
        objective="ce",
        views="none",
        per_device_train_batch_size=16,
        max_steps=4,
        save_steps=1,
        save_strategy="steps",
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    trainer = FairContrastiveTrainer(
        model=MLPClassifier(16, 3, hidden_dim=8, dropout=0.0),
        args=args,
        train_dataset=Dataset.from_list(rows),
        data_collator=ClassificationCollator(),
    )
    trainer._get_train_sampler = lambda *a, **k: torch.utils.data.SequentialSampler(trainer.train_dataset)
    with pytest.raises(
        FairmtError, match=r"training stopped at step 3: the loss is nan .*last good checkpoint is .*checkpoint-2"
    ):
        trainer.train()
    weights = load_file(str(out / "checkpoint-2" / "model.safetensors"))
    assert all(torch.isfinite(v).all() for v in weights.values())  # loadable, finite
    assert not (out / "checkpoint-3").exists()


def test_train_runs_with_the_heap_frozen_and_unfreezes_after_unless_the_caller_manages_it(tmp_path, monkeypatch):
    """Every fairmt Trainer (FaultGuardMixin) trains with the objects alive at its start frozen out of the garbage
    collector, so the Trainer's gc.collect() per training loop does not walk the imported libraries; afterwards the
    collector is as it was. A caller that froze objects itself, or said it manages the collector (this test run's
    conftest does both), is left alone."""
    import gc
    from types import SimpleNamespace

    from datasets import Dataset
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from ddp_helpers import fcl_rows
    from fairmt.data.classification import ClassificationCollator
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers import faults
    from fairmt.trainers.faults import FaultGuardMixin

    class Plain(FaultGuardMixin, Trainer):  # no other fairmt mixin: the freeze is FaultGuardMixin's
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            logits = model(inputs["features"]).logits
            return torch.nn.functional.cross_entropy(logits, inputs["labels"])

    class Seen(TrainerCallback):
        counts: list = []

        def on_step_begin(self, args, state, control, **kw):
            self.counts.append(gc.get_freeze_count())

    def train():
        Seen.counts = []
        args = TrainingArguments(
            output_dir=str(tmp_path / "o"),
            max_steps=2,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            remove_unused_columns=False,
            disable_tqdm=True,
        )
        Plain(
            model=MLPClassifier(16, 3, hidden_dim=8),
            args=args,
            train_dataset=Dataset.from_list(fcl_rows()),
            data_collator=ClassificationCollator(),
            callbacks=[Seen()],
        ).train()
        return Seen.counts

    frozen_by_caller = gc.get_freeze_count()
    told = faults.collector_managed_by_caller(False)  # this test run's conftest says it manages the collector
    gc.unfreeze()
    try:
        counts = train()
        assert len(counts) == 2 and all(c > 0 for c in counts)  # frozen while training
        assert gc.get_freeze_count() == 0  # and as it was afterwards
        gc.freeze()
        before = gc.get_freeze_count()
        counts = train()  # the caller froze objects itself: nothing more is frozen, nothing unfrozen
        assert counts and all(c <= before for c in counts) and gc.get_freeze_count() > 0
        gc.unfreeze()
        # a caller that says it manages the collector: nothing frozen although nothing was, and the frozen objects
        # are not counted (the count walks them all): the trainer's gc has no get_freeze_count to call
        assert faults.collector_managed_by_caller(True) is False
        uncounted = SimpleNamespace(**{k: getattr(gc, k) for k in ("isenabled", "freeze", "unfreeze", "collect")})
        monkeypatch.setattr(faults, "gc", uncounted)
        counts = train()
        assert counts == [0, 0] and gc.get_freeze_count() == 0
    finally:
        monkeypatch.undo()
        faults.collector_managed_by_caller(told)
        gc.unfreeze()
        if frozen_by_caller:
            gc.freeze()
