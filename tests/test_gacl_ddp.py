"""GACLTrainer under two CPU processes (gloo, torchrun): the extra encoder views run inside the DDP forward, and
the contrastive loss over the gathered global batch equals the 1-process loss on the same 8 sentences."""

import json
import os
import sys
from pathlib import Path

import pytest
import procs
from gacl_helpers import tiny_model_dir

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent


def _run(cmd, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE)}
    proc = procs.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, torchrun_pool):
    """Every run the tests compare, in two launches of tests/ddp_gacl_script.py: one process (this one) with batch 8
    (paper, official) and two processes with 4 each (paper, official, paper without gathering across processes)."""
    work = tmp_path_factory.mktemp("gacl_ddp")
    model = tiny_model_dir(work / "model", dropout=0.0)  # no dropout: both runs see identical representations
    script = str(HERE / "ddp_gacl_script.py")
    (work / "one").mkdir()
    (work / "two").mkdir()
    procs.in_process(script, model, work / "one", 8, "paper", "official", cwd=work)
    torchrun_pool.run(script, model, work / "two", 4, "paper", "official", "paper:mean:local", cwd=work)
    return lambda launch, job: json.loads((work / launch / f"{job}.json").read_text())


@pytest.mark.parametrize("variant", ["paper", "official"])
def test_two_process_run_matches_one_process(runs, variant):
    r1, r2 = runs("one", f"{variant}-mean-gather"), runs("two", f"{variant}-mean-gather")
    assert r1["world_size"] == 1 and r2["world_size"] == 2
    first1, first2 = r1["logs"][0], r2["logs"][0]
    # same 8 sentences in step 1 (2 × 4 consecutive per-device batches of the balanced order = 1 × 8)
    assert first2["loss_gc"] == pytest.approx(first1["loss_gc"], rel=1e-4)
    assert first2["loss_kd"] == pytest.approx(first1["loss_kd"], abs=1e-5)
    assert len(r2["logs"]) == 2  # the second step (after a DDP gradient sync) ran too
    # candidates from both processes: 8 in all, 4 per gender → 3 same-gender + the dropout view per anchor
    assert first2["gc_positives"] == first1["gc_positives"] == 4
    assert first2["gc_negatives"] == first1["gc_negatives"] == (4 if variant == "official" else 5)


def test_gather_across_processes_off_keeps_candidates_local(runs):
    local = runs("two", "paper-mean-local")
    assert local["world_size"] == 2
    first = local["logs"][0]
    # 4 rows per process, 2 per gender: 1 same-gender + the dropout view; 2 other-gender + the counterfactual
    assert (first["gc_positives"], first["gc_negatives"]) == (2, 3)


def test_accelerate_launch_recipe_runs_two_processes(tmp_path):
    """The shipped 2-CPU-process accelerate config + `fairmt train`: two processes really run (each step consumes
    2 × the per-device batch), as `accelerate launch -m fairmt train` would on GPUs."""
    import yaml

    from fairmt.data.demo_corpus import demo_splits

    model = tiny_model_dir(tmp_path / "model")
    _, balanced, _ = demo_splits()
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"translation": p.translation}) + "\n" for p in balanced[:96]))
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({
        "method": "gacl", "model": str(model), "data": {"train": str(data), "max_length": 48},
        "training": {"output_dir": str(tmp_path / "out"), "per_device_train_batch_size": 4, "max_steps": 2,
                     "logging_steps": 1, "report_to": [], "disable_tqdm": True, "dataloader_drop_last": True,
                     "save_strategy": "steps", "save_steps": 2},
    }))
    config = HERE.parent / "recipes" / "accelerate" / "cpu_2proc.yaml"
    _run([sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config), "-m", "fairmt", "train",
          str(recipe), "training.use_cpu=true"], tmp_path)
    state = json.loads((tmp_path / "out" / "checkpoint-2" / "trainer_state.json").read_text())
    first = [h for h in state["log_history"] if "loss_gc" in h][0]
    assert first["epoch"] == pytest.approx(8 / 96)  # 2 processes × 4 sentences per step, 96 balanced sentences
    assert (tmp_path / "out" / "model.safetensors").is_file()
