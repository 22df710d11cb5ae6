"""The image-sampling recipes check the batch against the data before any stage trains, and ``stage1_from`` against
the data its stage 1 was trained on (issue 45): stand-in CelebA folders in the official layout, a tiny ResNet, no
training."""

from __future__ import annotations

import json

import pytest

from fairmt.cli import main
from fairmt.data.images import read_celeba
from fairmt.recipes.sampling.runner import data_fingerprint
from image_standins import make_celeba


@pytest.fixture(scope="module")
def two_sets(tmp_path_factory):
    from fairmt.models.vision import tiny_resnet

    root = tmp_path_factory.mktemp("guards")
    return {
        "a": make_celeba(root / "a", n=40, seed=0),
        "b": make_celeba(root / "b", n=40, seed=1),
        "backbone": tiny_resnet(root / "tiny_resnet", image_size=16),
    }


def _args(sets, which, out, *extra):
    return [
        "train",
        "sampling/celeba_resnet50",
        f"data.root={sets[which]}",
        f"model.backbone={sets['backbone']}",
        "model.projection_dim=8",
        "training.dataloader_num_workers=0",
        f"output_dir={out}",
        *extra,
    ]


def _one_line(capsys, *expected):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("fairmt: error: "), err
    for text in expected:
        assert text in err, err


@pytest.mark.parametrize(
    "extra,expected",
    [
        (
            [],
            ["stage1: batch size 256 is larger than the 40 images", "stage1.per_device_train_batch_size to at most 40"],
        ),
        (
            ["data.max_samples=3", "training.per_device_train_batch_size=8"],
            ["batch size 8 is larger than the 3 images of the data set (data.max_samples)", "at most 3"],
        ),
        (["data.max_samples=1", "training.dataloader_drop_last=false"], ["has 1 image(s)", "at least 2"]),
    ],
)
def test_a_batch_larger_than_the_data_is_one_line_before_any_stage(two_sets, tmp_path, capsys, extra, expected):
    assert main(_args(two_sets, "a", tmp_path / "run", *extra)) == 2
    _one_line(capsys, *expected)
    assert not (tmp_path / "run" / "stage1").exists()  # nothing trained


def test_the_data_fingerprint_tells_sets_of_the_same_size_apart(two_sets, tmp_path):
    a, b = read_celeba(two_sets["a"]), read_celeba(two_sets["b"])
    assert len(a) == len(b) == 40
    fa = data_fingerprint(a)
    assert fa == data_fingerprint(read_celeba(two_sets["a"])) and fa["n"] == 40
    assert fa["sha256"] != data_fingerprint(b)["sha256"]
    # the same file names, one image rewritten with another size: another data set
    import shutil

    c = tmp_path / "c"
    shutil.copytree(two_sets["a"], c)
    img = sorted((c / "img_align_celeba").iterdir())[5]
    img.write_bytes(img.read_bytes() + b"\0")
    assert data_fingerprint(read_celeba(c))["sha256"] != fa["sha256"]


def test_stage1_from_a_run_on_other_data_of_the_same_size_is_refused(two_sets, tmp_path, capsys):
    """A stage 1 recorded on set b (40 images), reused for set a (40 images): refused in one line before anything
    is trained; the same record on set a passes the check (and the run goes on to read the stage's embeddings)."""
    other = tmp_path / "other-run"
    (other / "stage1").mkdir(parents=True)
    done = {"objective": "simclr", "steps": 1, "data_fingerprint": data_fingerprint(read_celeba(two_sets["b"]))}
    (other / "stage1" / "done.json").write_text(json.dumps(done))
    small = ["training.per_device_train_batch_size=8"]
    assert main(_args(two_sets, "a", tmp_path / "run", *small, f"stage1_from={other}")) == 2
    _one_line(capsys, f"stage1_from: {other} was trained on other data", "celeba, 40 images", "file names and sizes")
    assert not (tmp_path / "run" / "stage2").exists()
    done["data_fingerprint"] = data_fingerprint(read_celeba(two_sets["a"]))
    (other / "stage1" / "done.json").write_text(json.dumps(done))
    assert main(_args(two_sets, "a", tmp_path / "run2", *small, f"stage1_from={other}")) == 2
    _one_line(capsys, "cannot read", "embeddings.npz")  # past the data check
