"""GACLTrainer under two CPU processes (gloo, torchrun): the extra encoder views run inside the DDP forward, and
the contrastive loss over the gathered global batch equals the 1-process loss on the same 8 sentences."""

import json
from pathlib import Path

import pytest

import procs
from gacl_helpers import tiny_model_dir

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parents[1] / "support"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, torchrun_pool):
    """Every run the tests compare, in two launches of tests/support/ddp_gacl_script.py: one process (this one) with batch 8
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


# `accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml -m fairmt train` (two CPU processes, the GACL
# recipe): tests/cli/test_multiprocess_exit.py, with the other launches of whole `fairmt` commands
