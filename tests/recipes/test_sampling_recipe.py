"""The published protocol as one recipe run (method: sampling) on stand-ins in the official CelebA and CheXpert
layouts with a tiny random ResNet; the readers; resuming; the dry run of every recipe."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from fairmt.cli import main
from fairmt.data.images import read_celeba, read_chexpert
from fairmt.errors import FairmtError
from image_standins import CELEBA_ATTRS, make_celeba, make_chexpert

SAMPLING_RECIPES = ["celeba_resnet50", "celeba_resnet50_simclr", "chexpert_resnet50", "chexpert_resnet50_simclr"]


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    from fairmt.models.vision import tiny_resnet

    root = tmp_path_factory.mktemp("standins")
    return {
        "celeba": make_celeba(root / "celeba"),
        "chexpert": make_chexpert(root / "chexpert"),
        "backbone": tiny_resnet(root / "tiny_resnet", image_size=16),
    }


def _tiny(standins, dataset, out):
    return [
        f"data.root={standins[dataset]}",
        f"model.backbone={standins['backbone']}",
        "model.projection_dim=16",
        f"output_dir={out}",
        "training.per_device_train_batch_size=8",
        "training.per_device_eval_batch_size=16",
        "training.dataloader_num_workers=0",
        "training.logging_steps=1",
        "stage1.num_train_epochs=1",
        "stage2.num_train_epochs=1",
        "clusters.n_init=2",
    ]


# ---------------------------------------------------------------------------------------------- readers
def test_read_celeba_official_layout(standins):
    root = standins["celeba"]
    data = read_celeba(root)
    assert len(data) == 40 and data.partition.tolist() == [0] * 24 + [1] * 8 + [2] * 8
    lines = (root / "list_attr_celeba.txt").read_text().splitlines()[2:]
    for name, col in (("Attractive", "Attractive"), ("Wavy_Hair", "Wavy_Hair")):
        want = [1 if line.split()[1 + CELEBA_ATTRS.index(col)] == "1" else 0 for line in lines]
        assert data.targets[name].tolist() == want
    assert data.groups["Male"].tolist() == [
        1 if line.split()[1 + CELEBA_ATTRS.index("Male")] == "1" else 0 for line in lines
    ]
    assert data.dataset[0]["path"].endswith("img_align_celeba/000001.jpg")
    test = read_celeba(root, splits=["test"], targets=["smiling"], protected=[])
    assert len(test) == 8 and set(test.targets) == {"Smiling"}
    assert len(read_celeba(root, max_samples=5)) == 5
    with pytest.raises(FairmtError, match="unknown target attribute 'Beauty'"):
        read_celeba(root, targets=["Beauty"])
    with pytest.raises(FairmtError, match="CelebA: folder .* not found.*mmlab"):
        read_celeba(root / "nowhere")
    with pytest.raises(FairmtError, match="no data.root"):
        read_celeba(None)


def test_read_celeba_broken_files(tmp_path):
    root = make_celeba(tmp_path / "c", n=6)
    attr = root / "list_attr_celeba.txt"
    attr.write_text("\n".join(attr.read_text().splitlines()[:-1]) + "\n")  # a cut file
    with pytest.raises(FairmtError, match="announces 6 images but 5 rows"):
        read_celeba(root)
    root = make_celeba(tmp_path / "d", n=6)
    for p in (root / "img_align_celeba").iterdir():
        p.unlink()
    with pytest.raises(FairmtError, match="000001.jpg not found"):
        read_celeba(root)


def test_celeba_hub_copy_offline_gives_one_line_naming_the_data_set(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(FairmtError) as err:
        read_celeba(source="hub")
    msg = str(err.value)
    assert msg.startswith("CelebA: cannot load the Hub copy flwrlabs/celeba") and "\n" not in msg
    assert "data.root" in msg


def test_read_chexpert_uncertainty_policies_against_the_csv(standins):
    root = standins["chexpert"]
    rows = []
    for split in ("train", "valid"):
        with open(root / "CheXpert-v1.0-small" / f"{split}.csv", newline="") as fh:
            rows += list(csv.DictReader(fh))
    for policy, u in (("zeros", 0), ("ones", 1), ("ignore", -1)):
        data = read_chexpert(root, uncertain=policy)
        assert len(data) == 44
        for finding in ("Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Pleural Effusion"):
            want = [{"1.0": 1, "0.0": 0, "": 0, "-1.0": u}[r[finding]] for r in rows]
            assert data.targets[finding].tolist() == want, (policy, finding)
    data = read_chexpert(root / "CheXpert-v1.0-small")  # the data set folder itself works too
    assert data.groups["Sex"].tolist() == [{"Female": 0, "Male": 1}.get(r["Sex"], -1) for r in rows]
    assert data.groups["Age"].tolist() == [int(int(r["Age"]) >= 60) for r in rows]
    assert Path(data.dataset[0]["path"]).is_file() and data.partition.tolist() == [0] * 36 + [1] * 8
    frontal = read_chexpert(root, frontal_only=True, splits="train")
    assert len(frontal) == 27 and "9 lateral views dropped" in frontal.notes[1]
    with pytest.raises(FairmtError, match="unknown finding"):
        read_chexpert(root, findings=["Flu"])
    with pytest.raises(FairmtError, match="CheXpert: no train.csv.*register"):
        read_chexpert(root / "CheXpert-v1.0-small" / "train")
    with pytest.raises(FairmtError, match="uncertain"):
        read_chexpert(root, uncertain="maybe")


# ---------------------------------------------------------------------------------------------- dry run
@pytest.mark.parametrize("name", SAMPLING_RECIPES)
def test_dry_run_shows_every_resolved_value(name, capsys):
    rc = main(["train", f"sampling/{name}", "--dry-run"])  # no image folder here: the dry run says so (exit 2)
    printed = capsys.readouterr()
    assert rc == 0 or (rc == 2 and "dry run: the real run would fail: data.root" in printed.err), printed.err
    out = json.loads(printed.out)
    cfg, resolved = out["config"], out["config"]["resolved"]
    assert cfg["clusters"]["n_clusters"] == 4 and cfg["model"]["projection_dim"] == 128
    s1, s2 = resolved["stage1"], resolved["stage2"]
    assert s1["objective"] == "simclr" and s1["per_device_train_batch_size"] == 256 and s1["num_train_epochs"] == 30
    assert s1["sampling_temperature"] == 0.5 and s2["sampling_temperature"] == 0.5
    assert s2["objective"] == ("simclr" if name.endswith("simclr") else "sampling_pretrain")
    if not name.endswith("simclr"):
        assert s2["epsilon"] == 0.1 and s2["num_negatives"] == 1 and s2["cluster_refit"] == "once"
    assert "learning_rate" in s1 and "lr_scheduler_type" in s2 and len(s1) > 100  # every TrainingArguments field


@pytest.mark.parametrize("name", ["sampling/hatespeech_gru", "classification/sampling"])
def test_text_variant_recipe_under_both_names(name, capsys):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # a classification recipe: sampling IS the Config's name there
        rc = main(["train", name, "--dry-run"])  # the hate-speech data may be absent here: the dry run says so (exit 2)
    printed = capsys.readouterr()
    assert rc == 0 or (rc == 2 and "the hate-speech data folder" in printed.err), printed.err
    cfg = json.loads(printed.out)["config"]
    assert cfg["objective"] == "sampling" and cfg["objective_args"]["cluster_refit"] == "every_n_steps"
    assert cfg["stages"]["train"]["objective"] == "sampling"  # FairnessSamplingConfig's CE + μ·NT-Xent, as named


def test_sampling_recipe_objectives_are_named_as_their_config_names_them():
    """Issue 50: a sampling recipe's objective is the FairnessSamplingConfig objective its stage 2 trains with (the
    Config's own ``sampling`` is CE + μ·NT-Xent on a classifier: the classification runner's, sampling/hatespeech_gru)."""
    import typing

    from fairmt.recipes.sampling.runner import resolve_config
    from fairmt.recipes.sampling.schema import RENAMED_OBJECTIVES, SamplingRecipe
    from fairmt.trainers.sampling import SAMPLING_OBJECTIVES

    objectives = set(typing.get_args(SamplingRecipe.model_fields["objective"].annotation))
    assert objectives == {"sampling_pretrain", "simclr"} and objectives <= set(SAMPLING_OBJECTIVES)
    assert SamplingRecipe.model_fields["objective"].default == "sampling_pretrain"
    assert set(RENAMED_OBJECTIVES.values()) <= objectives and not set(RENAMED_OBJECTIVES) & objectives
    for objective in sorted(objectives):
        resolved = resolve_config({"method": "sampling", "objective": objective})["resolved"]
        assert (resolved["stage1"]["objective"], resolved["stage2"]["objective"]) == ("simclr", objective)


def test_the_older_spelling_sampling_resolves_as_sampling_pretrain_with_a_notice():
    import warnings

    from fairmt.recipes.sampling.runner import fingerprint, resolve_config

    recipe = {"method": "sampling", "stage2": {"epsilon": 0.2}, "output_dir": "run"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the Config's name: no notice
        new = resolve_config({**recipe, "objective": "sampling_pretrain"})
    with pytest.warns(FutureWarning) as caught:
        old = resolve_config({**recipe, "objective": "sampling"})
    notices = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert notices == [
        "recipe key objective: sampling is deprecated: use objective='sampling_pretrain' instead "
        "(the old option goes in fairmt 0.2)"
    ]
    assert old == new and fingerprint(old) == fingerprint(new)


def test_a_run_folder_begun_under_the_older_spelling_resumes(tmp_path):
    """A run folder whose run.json holds the fingerprint of objective: sampling (before the rename) is the same
    recipe's: it resumes; another recipe's run is still refused."""
    from fairmt.recipes.sampling.runner import fingerprint, prepare_run_dir, resolve_config

    cfg = resolve_config({"method": "sampling", "output_dir": str(tmp_path / "run")})
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"fingerprint": fingerprint({**cfg, "objective": "sampling"})}))
    assert prepare_run_dir(cfg, overwrite=False) == run
    assert json.loads((run / "run.json").read_text())["fingerprint"] == fingerprint(cfg)  # now the current one
    other = resolve_config({"method": "sampling", "objective": "simclr", "output_dir": str(run)})
    (run / "run.json").write_text(json.dumps({"fingerprint": fingerprint({**other, "objective": "sampling"})}))
    with pytest.raises(FairmtError, match="holds another recipe's run"):
        prepare_run_dir(other, overwrite=False)


def test_bad_recipe_keys_fail_at_once(capsys):
    assert main(["train", "sampling/celeba_resnet50", "stage2.epsilonn=0.2", "--dry-run"]) == 2
    assert "stage2.epsilonn; did you mean 'epsilon'" in capsys.readouterr().err
    assert main(["train", "sampling/celeba_resnet50", "stage2.seed=1", "--dry-run"]) == 2
    assert "set by the recipe itself" in capsys.readouterr().err
    assert main(["train", "sampling/celeba_resnet50", "objective=magic", "--dry-run"]) == 2
    assert "objective must be one of" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- end to end
@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["celeba", "chexpert"])
def test_fair_recipe_and_its_baseline_end_to_end_on_standins(dataset, standins, tmp_path, capsys):
    fair, base = tmp_path / "fair", tmp_path / "simclr"
    assert main(["train", f"sampling/{dataset}_resnet50", *_tiny(standins, dataset, fair)]) == 0
    res = json.loads((fair / "results.json").read_text())
    # issue 44 item 13: the run ends with its before → after table, stage 1 (SimCLR) → stage 2
    printed = capsys.readouterr().out.rstrip().splitlines()
    head = next(
        i for i, x in enumerate(printed) if x == f"  what {res['objective']} changed: stage 1 (SimCLR) → stage 2"
    )
    s1, s2 = (res["stages"][s]["subgroups"]["cluster_dominance_ratio"] for s in ("stage1", "stage2"))
    assert "cluster dominance ratio ↓" in printed[head + 1] and f"{s1:.4f} → {s2:.4f}" in printed[head + 1]
    # measures, then 2 per probe, then the line naming training-seed noise (issue 53)
    assert len(printed) - head - 1 == 3 + 2 * len(res["stages"]["stage1"]["probe"]) + 1
    from fairmt.eval.report import ONE_RUN_NOTE
    from report_helpers import assert_reportable

    assert printed[-1].strip() == ONE_RUN_NOTE
    assert_reportable(fair / "results.json", tmp_path / "report", compile_latex=dataset == "celeba")
    targets = (
        ["Attractive", "Wavy_Hair"]
        if dataset == "celeba"
        else ["Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Pleural Effusion"]
    )
    assert res["n"] == (40 if dataset == "celeba" else 44)
    for stage in ("stage1", "stage2"):
        sub = res["stages"][stage]["subgroups"]
        assert sub["n_clusters"] == 4 and sum(sub["cluster_sizes"]) == res["n"]
        assert 0.25 <= sub["cluster_dominance_ratio"] <= 1 and 0 < sub["representation_entropy"] <= 2
        assert set(res["stages"][stage]["probe"]) == set(targets)
        for t in targets:
            p = res["stages"][stage]["probe"][t]
            assert 0 <= p["accuracy"] <= 1 and p["n_train"] + p["n_test"] <= res["n"]
            assert set(p["fairness_by_attribute"]) == ({"Male", "Young"} if dataset == "celeba" else {"Sex", "Age"})
    # clusters fitted once on stage 1, saved, used as given by stage 2
    clusters = json.loads((fair / "clusters" / "clusters.json").read_text())
    assert clusters["n_clusters"] == 4 and clusters["seed"] == 0 and sum(clusters["cluster_sizes"]) == res["n"]
    assert res["stages"]["stage1"]["subgroups"]["cluster_sizes"] == clusters["cluster_sizes"]
    info2 = json.loads((fair / "stage2" / "done.json").read_text())
    assert info2["objective"] == "sampling_pretrain" and [h["event"] for h in info2["cluster_history"]] == ["given"]
    assert np.array_equal(np.load(fair / "clusters" / "cluster_labels.npy").shape, (res["n"],))
    with np.load(fair / "stage2" / "embeddings.npz") as emb:
        assert emb["projection"].shape == (res["n"], 16) and emb["backbone"].shape == (res["n"], 64)
        assert {f"y_{targets[0]}", "backbone", "projection"} <= set(emb.files)
    assert "Cluster Dominance Ratio" in (fair / "results.md").read_text()
    # the probe predictions are readable by fairmt eval classification
    probe = fair / f"probe_stage2_{targets[0]}.jsonl"
    assert main(["eval", "classification", "--predictions", str(probe), "--no-leakage", "--json", "-"]) == 0
    capsys.readouterr()
    # a rerun of the same recipe resumes: every stage is done, nothing is trained again
    stamps = {p: p.stat().st_mtime_ns for p in (fair / "stage1" / "done.json", fair / "stage2" / "done.json")}
    assert main(["train", f"sampling/{dataset}_resnet50", *_tiny(standins, dataset, fair)]) == 0
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    # an unfinished stage 2 is redone from the saved stage 1 and clusters
    (fair / "stage2" / "done.json").unlink()
    assert main(["train", f"sampling/{dataset}_resnet50", *_tiny(standins, dataset, fair)]) == 0
    assert (fair / "stage1" / "done.json").stat().st_mtime_ns == stamps[fair / "stage1" / "done.json"]
    assert (fair / "stage2" / "done.json").is_file()
    # a different recipe in the same folder is refused
    assert main(["train", f"sampling/{dataset}_resnet50", *_tiny(standins, dataset, fair), "stage2.epsilon=0.3"]) == 2
    assert "another recipe's run" in capsys.readouterr().err
    # the baseline pair, sharing the fair run's stage 1
    assert (
        main(["train", f"sampling/{dataset}_resnet50_simclr", *_tiny(standins, dataset, base), f"stage1_from={fair}"])
        == 0
    )
    res_b = json.loads((base / "results.json").read_text())
    assert not (base / "stage1").exists()
    assert res_b["stages"]["stage1"] == res["stages"]["stage1"]
    assert json.loads((base / "stage2" / "done.json").read_text())["objective"] == "simclr"
    # stage 1 records the data it was trained on (what stage1_from is checked against)
    assert json.loads((fair / "stage1" / "done.json").read_text())["data_fingerprint"]["n"] == res["n"]


@pytest.mark.slow
def test_synthetic_recipe_fits_clusters_once_and_refuses_foreign_folders(standins, tmp_path, capsys):
    out = tmp_path / "run"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("mine")
    args = [
        "data.dataset=synthetic",
        "data.n=48",
        "data.image_size=16",
        "data.targets=[shape]",
        "data.protected=[colour]",
        f"model.backbone={standins['backbone']}",
        "model.projection_dim=8",
        "training.per_device_train_batch_size=12",
        "training.dataloader_num_workers=0",
        "stage1.num_train_epochs=1",
        "stage2.num_train_epochs=2",
        "clusters.n_init=1",
    ]
    assert main(["train", "sampling/celeba_resnet50", *args, f"output_dir={tmp_path / 'other'}"]) == 2
    assert "files of something else" in capsys.readouterr().err
    assert main(["train", "sampling/celeba_resnet50", *args, f"output_dir={out}"]) == 0
    info = json.loads((out / "stage2" / "done.json").read_text())
    assert [h["event"] for h in info["cluster_history"]] == ["given"]  # no refit over 2 epochs
    res = json.loads((out / "results.json").read_text())
    assert res["dataset"] == "synthetic_shapes" and set(res["stages"]["stage2"]["probe"]) == {"shape"}
    assert main(["train", "sampling/celeba_resnet50", *args, f"output_dir={out}", "seed=1", "--overwrite"]) == 0
    assert json.loads((out / "results.json").read_text())["seed"] == 1


@pytest.mark.data
@pytest.mark.slow
def test_text_variant_recipe_runs_on_the_real_hate_speech_data(shared_data, monkeypatch, tmp_path):
    """sampling/hatespeech_gru (also classification/sampling) end to end: CE + μ·NT-Xent on Algorithm 1's pairs over
    the whole training set, K-means refitted every 30 steps; gender only scored."""
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    assert (
        main(
            [
                "train",
                "sampling/hatespeech_gru",
                "training.num_train_epochs=1",
                "model.embed_dim=16",
                "model.hidden_dim=16",
                "training.per_device_train_batch_size=128",
                f"output_dir={tmp_path}",
                "save_predictions=false",
            ]
        )
        == 0
    )
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["objective"] == "sampling" and res["dataset"] == "hatespeech" and res["test"]["scale"] == "percent"
    assert res["info"]["train_log"][0]["loss_ntxent"] > 0 and "loss_ce" in res["info"]["train_log"][0]
    from report_helpers import assert_reportable  # issue 53: the run's results make a report

    assert_reportable(tmp_path / "results.json", tmp_path / "report", compile_latex=False)
