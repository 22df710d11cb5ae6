"""Resuming means resuming: a checkpoint given as ``training.resume_from_checkpoint`` (which lands on the Trainer's
arguments, which the Trainer itself never reads) is resumed from by every recipe family's Trainer, or refused in one
line where the family cannot; the tiny recipe's model appears only once it is built."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from fairmt.errors import FairmtError


def _trainer(out, **extra):
    from datasets import Dataset
    from transformers import TrainerCallback

    from ddp_helpers import fcl_rows
    from fairmt.data.classification import ClassificationCollator
    from fairmt.models.text_classifiers import MLPClassifier
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer

    class Steps(TrainerCallback):
        def __init__(self):
            self.begin, self.logged = None, []

        def on_train_begin(self, args, state, control, **kw):
            self.begin = state.global_step

        def on_log(self, args, state, control, logs=None, **kw):
            if "loss" in (logs or {}):
                self.logged.append(state.global_step)

    seen = Steps()
    args = FairContrastiveConfig(
        output_dir=str(out),
        objective="ce",
        views="none",
        per_device_train_batch_size=16,
        max_steps=4,
        save_steps=2,
        save_strategy="steps",
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        **extra,
    )
    trainer = FairContrastiveTrainer(
        model=MLPClassifier(16, 3, hidden_dim=8, dropout=0.0),
        args=args,
        train_dataset=Dataset.from_list(fcl_rows()),
        data_collator=ClassificationCollator(),
        callbacks=[seen],
    )
    return trainer, seen


def test_resume_from_checkpoint_in_the_training_arguments_resumes_at_that_checkpoint(tmp_path):
    out = tmp_path / "run"
    first, seen = _trainer(out)
    first.train()
    assert seen.begin == 0 and seen.logged[0] == 1
    # the recipe's training.resume_from_checkpoint=RUN/checkpoint-2: set on the arguments, train() called plainly
    again, seen = _trainer(out, resume_from_checkpoint=str(out / "checkpoint-2"))
    again.train()
    assert seen.begin == 2 and seen.logged[0] == 3 and again.state.global_step == 4
    latest, seen = _trainer(out, resume_from_checkpoint="true")  # "true": the last complete one
    latest.train()
    assert seen.begin == 4 and seen.logged == []


def test_a_missing_checkpoint_in_the_training_arguments_is_refused(tmp_path):
    trainer, _ = _trainer(tmp_path / "run", resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-16"))
    with pytest.raises(FairmtError, match=r"checkpoint-16: no such checkpoint folder"):
        trainer.train()


def test_every_recipe_family_trains_with_the_trainer_that_honours_the_key():
    """gacl, ccd (and dpce, adept-f), classification (FCL/CSCL/CE, adversarial, sampling objective) and image
    sampling: each recipe's Trainer resumes through :class:`FaultGuardMixin` (the test above), ahead of the stock
    ``Trainer.train`` in its method order."""
    from transformers import Trainer

    from fairmt.trainers.adept import ADEPTTrainer
    from fairmt.trainers.adversarial import AdversarialTrainer
    from fairmt.trainers.ccd import CCDTrainer
    from fairmt.trainers.dpce import DPCETrainer
    from fairmt.trainers.fair_contrastive import FairContrastiveTrainer
    from fairmt.trainers.faults import FaultGuardMixin
    from fairmt.trainers.gacl import GACLTrainer
    from fairmt.trainers.sampling import FairnessSamplingTrainer

    for cls in (
        GACLTrainer,
        CCDTrainer,
        DPCETrainer,
        ADEPTTrainer,
        FairContrastiveTrainer,
        AdversarialTrainer,
        FairnessSamplingTrainer,
    ):
        mro = cls.__mro__
        assert mro.index(FaultGuardMixin) < mro.index(Trainer), cls
        for before in mro[: mro.index(FaultGuardMixin)]:  # a train() ahead of the mixin's must hand on to it
            if "train" in before.__dict__:
                assert "super().train(" in inspect.getsource(before.__dict__["train"]), (cls, before)


def test_image_sampling_refuses_a_checkpoint_by_path_in_one_line():
    from fairmt.recipes.sampling.schema import check_stages as validate

    for section in ("training", "stage1", "stage2"):
        with pytest.raises(FairmtError, match=rf"{section}\.resume_from_checkpoint: a sampling run resumes by itself"):
            validate({section: {"resume_from_checkpoint": "run/stage1/checkpoint-16"}})


def test_two_stage_classification_refuses_a_checkpoint_outside_its_first_stage(tmp_path):
    from fairmt.recipes.classification.runner import _stage_configs

    cfg = {
        "objective": "cscl_pretrain",
        "output_dir": str(tmp_path),
        "seed": 0,
        "objective_args": {},
        "stage2": {},
        "training": {"resume_from_checkpoint": str(tmp_path / "checkpoint-16")},
        "model": {"pooling": "cls"},
    }
    with pytest.raises(FairmtError, match=r"resumes its first stage only, from a checkpoint in .*stage1"):
        _stage_configs(cfg)
    cfg["training"]["resume_from_checkpoint"] = str(tmp_path / "stage1" / "checkpoint-16")
    stages = _stage_configs(cfg)
    assert stages["stage1"][1]["resume_from_checkpoint"].endswith("stage1/checkpoint-16")
    assert "resume_from_checkpoint" not in stages["stage2"][1]


# ------------------------------------------------------------------------------- the tiny recipe's model


def _tiny_config(tmp_path):
    return {
        "model": str(tmp_path / "original"),
        "data": {"train": str(tmp_path / "finetune.jsonl")},
        "tiny_model": {"pretrain_steps": 5, "seed": 0},
    }


def test_a_tiny_model_build_cut_off_leaves_no_model_folder(tmp_path, monkeypatch):
    import fairmt.recipes.gacl.tiny as demo

    def killed(out_dir, *a, **k):  # config.json is written before the steps, as the real build does
        Path(out_dir, "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "build_original", killed)
    with pytest.raises(KeyboardInterrupt):
        demo.prepare_tiny_recipe(_tiny_config(tmp_path))
    assert not (tmp_path / "original").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no partial folder left beside it either

    built = []

    def build(out_dir, *a, **k):
        Path(out_dir, "config.json").write_text("{}")
        built.append(out_dir)

    monkeypatch.setattr(demo, "build_original", build)
    demo.prepare_tiny_recipe(_tiny_config(tmp_path))
    assert (tmp_path / "original" / "config.json").is_file() and len(built) == 1
    assert json.loads((tmp_path / "original" / demo.TINY_MARKER).read_text()) == {"pretrain_steps": 5, "seed": 0}
    demo.prepare_tiny_recipe(_tiny_config(tmp_path))  # finished: reused, not built again
    assert len(built) == 1


def test_a_model_folder_an_older_build_left_unfinished_is_refused(tmp_path, monkeypatch):
    import fairmt.recipes.gacl.tiny as demo

    (tmp_path / "original").mkdir()
    (tmp_path / "original" / "config.json").write_text("{}")
    monkeypatch.setattr(demo, "build_original", lambda *a, **k: pytest.fail("must not build over it"))
    with pytest.raises(FairmtError, match=r"original exists but is not a finished tiny model .*remove it and rerun"):
        demo.prepare_tiny_recipe(_tiny_config(tmp_path))
