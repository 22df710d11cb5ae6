"""`fairmt train RECIPE.yaml` end to end on a tiny model, with MT-GenEval dev accuracy for early stopping."""

import json

import pytest
import yaml
from gacl_helpers import tiny_model_dir, trained_tiny_model_dir

from fairmt.cli import main
from fairmt.commands.train import apply_overrides, available_methods, load_recipe
from fairmt.data.demo_corpus import demo_splits
from fairmt.errors import FairmtError


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

    recipes = sorted((Path(__file__).parents[1] / "recipes" / "gacl").glob("*.yaml"))
    assert len(recipes) >= 3
    for r in recipes:
        cfg = load_recipe(r)
        assert cfg["method"] == "gacl"
        (args,) = HfArgumentParser(GACLConfig).parse_dict(cfg["training"])
        assert args.kd_alpha == 0.4 and args.gacl_lambda == 1.0


@pytest.mark.slow
@pytest.mark.data
def test_train_recipe_with_geneval_early_stopping(tmp_path, shared_data, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    model = tiny_model_dir(tmp_path / "model")
    _, balanced, _ = demo_splits()
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"translation": p.translation}) + "\n" for p in balanced[:160]))
    recipe = tmp_path / "gacl.yaml"
    recipe.write_text(yaml.safe_dump({
        "method": "gacl", "model": str(model), "src_lang": "en", "tgt_lang": "de",
        "data": {"train": str(data), "max_length": 48, "eval_fraction": 0.1},
        "geneval": {"lang": "de", "split": "dev", "max_pairs": 4, "patience": 1},
        "training": {"output_dir": str(tmp_path / "out"), "per_device_train_batch_size": 8, "max_steps": 6,
                     "eval_steps": 2, "save_steps": 2, "logging_steps": 2, "learning_rate": 1e-3, "use_cpu": True,
                     "report_to": [], "disable_tqdm": True},
    }))
    assert main(["train", str(recipe), "training.max_steps=4"]) == 0
    state = json.loads((tmp_path / "out" / "checkpoint-4" / "trainer_state.json").read_text())
    evals = [h for h in state["log_history"] if "eval_geneval_accuracy" in h]
    assert len(evals) == 2 and all(0.0 <= h["eval_geneval_accuracy"] <= 100.0 for h in evals)
    assert state["best_metric"] is not None and state["global_step"] == 4
    assert (tmp_path / "out" / "model.safetensors").is_file()
    assert (tmp_path / "out" / "tokenizer_config.json").is_file()


@pytest.mark.slow
def test_geneval_callback_shards_translation_over_ddp_processes(tmp_path):
    """Under DDP (2 CPU processes) each process translates every other sentence and the gathered translations and
    scores equal those of one process translating everything."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).parent
    model = trained_tiny_model_dir(tmp_path / "model")
    script = str(here / "ddp_geneval_script.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(here.parent), str(here)])}
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    for cmd in ([sys.executable, script, str(model), str(one)],
                [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", script, str(model), str(two)]):
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r1, r2 = json.loads(one.read_text()), json.loads(two.read_text())
    assert (r1["world_size"], r2["world_size"]) == (1, 2)
    assert r1["counts"] == [10] and r2["counts"] == [6, 4]  # 5 + 5 sentences; 3 + 3 and 2 + 2 per process
    assert r2["hypotheses"] == r1["hypotheses"] and len(r1["hypotheses"][0]) == 5
    assert len(set(r1["hypotheses"][0] + r1["hypotheses"][1])) >= 5  # distinct translations: the order is checked
    assert r2["metrics"] == r1["metrics"] and "eval_geneval_accuracy" in r1["metrics"]
