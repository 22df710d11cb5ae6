"""`fairmt train RECIPE.yaml` end to end on a tiny model, with MT-GenEval dev accuracy for early stopping."""

import copy
import json

import pytest
import yaml

import procs
from fairmt.cli import main
from fairmt.commands.train import apply_overrides, available_methods, load_recipe
from fairmt.data.demo_corpus import demo_splits
from fairmt.errors import FairmtError
from gacl_helpers import tiny_model_dir, trained_tiny_model_dir


def test_overrides_and_recipe_errors(tmp_path):
    cfg = apply_overrides({"training": {"lr": 1}}, ["training.lr=2e-5", "peft.r=8", "data.train=x.jsonl"])
    assert cfg == {"training": {"lr": 2e-5}, "peft": {"r": 8}, "data": {"train": "x.jsonl"}}
    with pytest.raises(FairmtError, match="key=value"):
        apply_overrides({}, ["oops"])
    bad = tmp_path / "r.yaml"
    bad.write_text("model: x\n")
    with pytest.raises(FairmtError, match="no 'method'"):
        load_recipe(bad)
    bad.write_text("method: nope\n")
    assert main(["train", str(bad)]) == 2  # clear one-line error, no traceback
    assert "gacl" in available_methods()


def test_shipped_recipes_parse():
    from pathlib import Path

    from transformers import HfArgumentParser

    from fairmt.trainers.gacl import GACLConfig

    recipes = sorted((Path(__file__).parents[2] / "recipes" / "gacl").glob("*.yaml"))
    assert len(recipes) >= 8
    baselines = 0
    for r in recipes:
        cfg = load_recipe(r)
        assert cfg["method"] == "gacl"
        (args,) = HfArgumentParser(GACLConfig).parse_dict(cfg["training"])
        if args.gacl_lambda == 0:  # Table 2 baselines: plain fine-tuning
            baselines += 1
            assert args.kd_alpha == 0.0 and cfg["data"]["prepare"] in ("gacl", "gfst", "plain")
        else:
            assert args.kd_alpha == 0.4 and args.gacl_lambda == 1.0  # the released script's α and λ
        assert args.temperature == 1.0
        if "geneval" in cfg:
            assert cfg["geneval"]["patience"] == 10 and cfg["geneval"]["num_beams"] == 5
    assert baselines == 3


def test_dry_run_prints_the_resolved_official_config(capsys):
    from pathlib import Path

    recipe = Path(__file__).parents[2] / "recipes" / "gacl" / "small100_en-de_official.yaml"
    # every setting line says where it comes from (the released script, its code's defaults, the paper, fairmt)
    for line in recipe.read_text().splitlines():
        if (
            line.strip()
            and not line.lstrip().startswith("#")
            and not line.rstrip().endswith(":")
            and "report_to" not in line
        ):
            assert "#" in line and any(w in line.split("#", 1)[1] for w in ("sh:", "py:", "paper", "fairmt")), line
    # the official recipe asks for fp16: on a machine without a GPU the dry run says the real run would fail
    rc = main(["train", str(recipe), "training.max_steps=300", "--dry-run", "--verbose"])  # every resolved field
    printed = capsys.readouterr()
    import torch

    if not torch.cuda.is_available():
        assert "dry run: note: training.fp16: true, but this machine has no CUDA GPU" in printed.err
    assert rc in (0, 2)  # 2: the model is not in this machine's Hugging Face cache (a finding of its own)
    out = json.loads(printed.out)
    c = out["config"]
    assert c["class"] == "GACLConfig" and out["recipe"]["training"]["max_steps"] == 300
    expected = dict(
        gacl_variant="official",
        temperature=1.0,
        projection="linear",
        projection_weight_decay=1.0,
        kd_normalization="sentence",
        warmup_init_lr_ratio=0.1,
        positive_reduction="mean",
        kd_alpha=0.4,
        gacl_lambda=1.0,
        per_device_train_batch_size=8,
        learning_rate=4e-6,
        warmup_steps=200,
        lr_scheduler_type="inverse_sqrt",
        max_steps=300,
        eval_steps=100,
        load_best_model_at_end=True,
        metric_for_best_model="geneval_explicit_accuracy",
        fp16=True,
        seed=42,
        exclude_mt_loss=False,
    )
    assert {k: c[k] for k in expected} == expected
    # without the recipe's explicit keys the variant's presets give the same (official = released code)
    cfg = load_recipe(recipe, ["training.temperature=0.05"])
    for k in ("temperature", "projection", "kd_normalization", "warmup_init_lr_ratio"):
        cfg["training"].pop(k) if k != "temperature" else None
    from fairmt.recipes.gacl.runner import resolve_config

    args = resolve_config(cfg)
    assert (args.temperature, args.projection, args.kd_normalization, args.warmup_init_lr_ratio) == (
        0.05,
        "linear",
        "sentence",
        0.1,
    )


def test_gfst_target_side_filtering():
    from datasets import Dataset

    from fairmt.data.gacl import filter_target_gender, target_gender_detector

    de = target_gender_detector("de")
    assert (de("Er las sein Buch."), de("Die Frau las."), de("Die Mutter und ihr Mann."), de("Es regnet.")) == (
        "male",
        "female",
        None,
        None,
    )
    ds = Dataset.from_dict(
        {
            "src": ["He read his book.", "The woman read.", "She said he was right.", "It rains.", "The doctor left."],
            "tgt": [
                "Er las sein Buch.",
                "Der Mann las.",
                "Sie sagte, er habe recht.",
                "Es regnet.",
                "Die Ärztin ging, sagte die Frau.",
            ],
        }
    )
    out = filter_target_gender(ds, de)
    # row 1: English female, German male → dropped; row 2: German "er" only (sie is ambiguous) but the English is
    # mixed → kept by the target; row 3: no gender; row 4: English neutral, German female
    assert out["src"] == ["He read his book.", "She said he was right.", "The doctor left."]
    assert out["gender"] == [0, 0, 1]
    en = target_gender_detector("en")
    assert (en("She left."), en("He and she left.")) == ("female", None)
    with pytest.raises(FairmtError, match="target_gender_words"):
        target_gender_detector("tr")
    assert target_gender_detector("tr", {"male": ["adam"], "female": ["kadın"]})("Kadın geldi.") == "female"


@pytest.mark.data
def test_geneval_generation_settings_reach_the_callback(shared_data, monkeypatch):
    """``geneval.num_beams``, ``batch_size`` and ``max_new_tokens`` are what the recipe's MT-GenEval scorer generates
    with; left out, ``max_new_tokens`` is the callback's own default (one default, two readers)."""
    from fairmt.eval.geneval import GENEVAL_MAX_NEW_TOKENS
    from fairmt.recipes.gacl.runner import geneval_callback
    from fairmt.recipes.gacl.schema import typed_recipe

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    base = {"method": "gacl", "model": "m", "data": {"train": "t.jsonl"}, "geneval": {"lang": "de", "max_pairs": 2}}
    given = apply_overrides(
        copy.deepcopy(base), ["geneval.num_beams=2", "geneval.batch_size=3", "geneval.max_new_tokens=12"]
    )
    callback = geneval_callback(None, typed_recipe(given).geneval)
    assert callback.gen == {"batch_size": 3, "num_beams": 2, "max_new_tokens": 12}
    assert geneval_callback(None, typed_recipe(base).geneval).gen["max_new_tokens"] == GENEVAL_MAX_NEW_TOKENS == 128
    with pytest.raises(FairmtError, match="max_new_tokens"):
        typed_recipe(apply_overrides(copy.deepcopy(base), ["geneval.max_new_tokens=0"]))


@pytest.mark.slow
@pytest.mark.data
def test_train_recipe_with_geneval_early_stopping(tmp_path, shared_data, monkeypatch, capsys):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    model = tiny_model_dir(tmp_path / "model")
    _, balanced, _ = demo_splits()
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"translation": p.translation}) + "\n" for p in balanced[:160]))
    recipe = tmp_path / "gacl.yaml"
    recipe.write_text(
        yaml.safe_dump(
            {
                "method": "gacl",
                "model": str(model),
                "src_lang": "en",
                "tgt_lang": "de",
                "data": {"train": str(data), "max_length": 48, "eval_fraction": 0.1},
                "geneval": {"lang": "de", "split": "dev", "max_pairs": 4, "patience": 1, "max_new_tokens": 16},
                "training": {
                    "output_dir": str(tmp_path / "out"),
                    "per_device_train_batch_size": 8,
                    "max_steps": 6,
                    "eval_steps": 2,
                    "save_steps": 2,
                    "logging_steps": 2,
                    "learning_rate": 1e-3,
                    "use_cpu": True,
                    "report_to": [],
                    "disable_tqdm": True,
                },
            }
        )
    )
    assert main(["train", str(recipe), "training.max_steps=4"]) == 0
    state = json.loads((tmp_path / "out" / "checkpoint-4" / "trainer_state.json").read_text())
    evals = [h for h in state["log_history"] if "eval_geneval_accuracy" in h]
    assert len(evals) == 2 and all(0.0 <= h["eval_geneval_accuracy"] <= 100.0 for h in evals)
    assert state["best_metric"] is not None and state["global_step"] == 4
    assert (tmp_path / "out" / "model.safetensors").is_file()
    assert (tmp_path / "out" / "tokenizer_config.json").is_file()
    # results.json: the restored best checkpoint's dev evaluation, MT-GenEval test of the final model
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    best = state["best_model_checkpoint"]
    step = int(best.rsplit("-", 1)[1])
    chosen = next(h for h in evals if h["step"] == step)
    assert res["selection"]["best_checkpoint"] == best and res["selection"]["evaluated_step"] == step
    assert res["dev"]["loss"] == pytest.approx(chosen["eval_loss"])
    assert res["dev"]["geneval_explicit_accuracy"] == chosen["eval_geneval_explicit_accuracy"]
    assert set(res["test"]) == {"geneval_accuracy", "geneval_explicit_accuracy", "geneval_delta_g"}
    items = res["test_data"].pop("items")  # the test scoring's per-pair data (fairmt report's paired bootstrap)
    assert res["test_data"] == {"geneval_split": "test", "geneval_pairs": 4}
    assert len(items["correct_masculine"]) == len(items["correct_feminine"]) == 4
    # a data root with MT-GenEval dev only: the run stops before training, naming the way out
    dev_only = tmp_path / "dev_only" / "mt_geneval" / "sentences"
    dev_only.mkdir(parents=True)
    (dev_only / "dev").symlink_to(shared_data / "mt_geneval" / "sentences" / "dev")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "dev_only"))
    capsys.readouterr()
    assert main(["train", str(recipe), f"training.output_dir={tmp_path / 'no_test'}"]) == 2
    assert "geneval.test=false" in capsys.readouterr().err
    assert not list((tmp_path / "no_test").glob("checkpoint-*"))
    assert (
        main(
            [
                "train",
                str(recipe),
                "geneval.test=false",
                "training.max_steps=2",
                f"training.output_dir={tmp_path / 'no_test2'}",
            ]
        )
        == 0
    )
    assert "test" not in json.loads((tmp_path / "no_test2" / "results.json").read_text())


@pytest.mark.slow
def test_geneval_callback_shards_translation_over_ddp_processes(tmp_path, torchrun_pool):
    """Under DDP (2 CPU processes) each process translates every other sentence and the gathered translations and
    scores equal those of one process translating everything."""
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "support"
    model = trained_tiny_model_dir(tmp_path / "model")
    script = here / "ddp_geneval_script.py"
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    procs.in_process(script, model, one, cwd=tmp_path)
    torchrun_pool.run(script, model, two, cwd=tmp_path)
    r1, r2 = json.loads(one.read_text()), json.loads(two.read_text())
    assert (r1["world_size"], r2["world_size"]) == (1, 2)
    assert r1["counts"] == [10] and r2["counts"] == [6, 4]  # 5 + 5 sentences; 3 + 3 and 2 + 2 per process
    assert r2["hypotheses"] == r1["hypotheses"] and len(r1["hypotheses"][0]) == 5
    assert len(set(r1["hypotheses"][0] + r1["hypotheses"][1])) >= 5  # distinct translations: the order is checked
    assert r2["metrics"] == r1["metrics"] and "eval_geneval_accuracy" in r1["metrics"]


@pytest.mark.slow
def test_plain_baseline_recipe_with_a_plain_dev_set(tmp_path):
    """Handcrafted-style baseline: every pair as given (no gender column), L_MT only, evaluated on a plain dev
    file: eval_loss is L_MT and no L_GC is reported."""
    model = tiny_model_dir(tmp_path / "model")
    _, balanced, heldout = demo_splits()
    data, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    data.write_text("".join(json.dumps({"translation": p.translation}) + "\n" for p in balanced[:40]))
    dev.write_text("".join(json.dumps({"translation": p.translation}) + "\n" for p in heldout[:12]))
    recipe = tmp_path / "plain.yaml"
    recipe.write_text(
        yaml.safe_dump(
            {
                "method": "gacl",
                "model": str(model),
                "src_lang": "en",
                "tgt_lang": "de",
                "data": {"train": str(data), "prepare": "plain", "eval": str(dev), "max_length": 48},
                "training": {
                    "output_dir": str(tmp_path / "out"),
                    "per_device_train_batch_size": 8,
                    "max_steps": 4,
                    "eval_strategy": "steps",
                    "eval_steps": 2,
                    "save_strategy": "no",
                    "logging_steps": 2,
                    "learning_rate": 1e-3,
                    "use_cpu": True,
                    "report_to": [],
                    "disable_tqdm": True,
                    "kd_alpha": 0.0,
                    "gacl_lambda": 0.0,
                },
            }
        )
    )
    from fairmt.commands.train import run_recipe

    trainer = run_recipe(load_recipe(recipe))
    evals = [h for h in trainer.state.log_history if "eval_loss" in h]
    assert len(evals) == 2 and all(h["eval_loss"] == pytest.approx(h["eval_loss_mt"]) for h in evals)
    assert all("eval_loss_gc" not in h and h["eval_gc_batches"] == 0 for h in evals)
    assert (tmp_path / "out" / "model.safetensors").is_file()
    bad = tmp_path / "bad.yaml"
    bad.write_text(recipe.read_text().replace("gacl_lambda: 0.0", "gacl_lambda: 1.0"))
    assert main(["train", str(bad)]) == 2  # plain data cannot train the contrastive term: a one-line error


def test_prepare_data_modes():
    from datasets import Dataset

    from fairmt.recipes.gacl.runner import prepare_data

    src = ["He read his book.", "She read her book.", "The man ate.", "The woman ate.", "It rains.", "She came."]
    tgt = ["Er las sein Buch.", "Sie las ihr Buch.", "Der Mann aß.", "Die Frau aß.", "Es regnet.", "Der Mann kam."]
    ds = Dataset.from_dict({"src": src, "tgt": tgt})
    plain = prepare_data(ds, {"prepare": "plain"}, "de", 0)
    assert plain["src"] == src and "gender" not in plain.column_names
    gacl = prepare_data(ds, {}, "de", 0)
    assert gacl["gender"].count(0) == gacl["gender"].count(1) == 2  # 2 male, 3 female sources → 2 + 2
    assert "src_cf" in gacl.column_names
    gfst = prepare_data(ds, {"prepare": "gfst", "balance": False}, "de", 0)
    # "Sie las ihr Buch." has no unambiguous German gender word; "She came." → "Der Mann kam." disagrees
    assert gfst["src"] == ["He read his book.", "The man ate.", "The woman ate."] and gfst["gender"] == [0, 0, 1]
    balanced = prepare_data(ds, {"prepare": "gfst"}, "de", 0)
    assert sorted(balanced["gender"]) == [0, 1]
    with pytest.raises(FairmtError, match="data.prepare"):
        prepare_data(ds, {"prepare": "cda"}, "de", 0)


def test_data_seed_not_training_seed_draws_the_dev_split_and_the_balancing(tmp_path):
    """Issue 44 item 4: the eval_fraction split and the balancing subsample follow data.seed; two training seeds (a
    sweep's seeds) see the same dev rows and the same training rows, two data seeds different ones."""
    from fairmt.data.demo_corpus import demo_data
    from fairmt.data.parallel import read_parallel
    from fairmt.recipes.gacl.runner import resolved_sections, split_data

    rows = [p.translation for p in demo_data().finetune]
    male = [r for r in rows if " he " in f" {r['en'].lower()} "][:10]
    path = tmp_path / "pairs.jsonl"  # unbalanced (extra male rows): the balancing draws a subsample
    path.write_text("".join(json.dumps({"translation": r}) + "\n" for r in rows + male), encoding="utf-8")
    pairs = read_parallel(str(path), "en", "de")

    def drawn(**over):
        data = {"train": str(path), "eval_fraction": 0.2, **over.pop("data", {})}
        data_cfg, _ = resolved_sections({"model": "m", "data": data, "training": over})
        train, dev = split_data(pairs, data_cfg, "de", True)
        return sorted(train["src"]), sorted(dev["src"])

    assert resolved_sections({"model": "m", "data": {"train": "x"}})[0]["seed"] == 42
    base = drawn(seed=1)
    assert drawn(seed=2) == base
    other = drawn(seed=1, data={"seed": 7})
    assert other[1] != base[1] and other[0] != base[0]
    with pytest.raises(FairmtError, match="data.seed"):
        resolved_sections({"model": "m", "data": {"train": "x", "seed": -1}})
