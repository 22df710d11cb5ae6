"""Facts of the paper cards that live in code, not configuration (issue 51): each card entry that states what the
code does is checked against the code here, so the card fails when the code changes."""

from __future__ import annotations

import json

import pytest
import torch

from fairmt.commands.train import load_recipe
from fairmt.recipes.cards import card_of_config

CSCL_BERT = [
    "classification/cscl_bios_bert",
    "classification/cscl_jigsaw_bert",
    "classification/cscl_one_stage_bios_bert",
]


def _tiny_classifier():
    from transformers import BertConfig

    from fairmt.models.encoder_classifier import TransformerClassifier

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    return TransformerClassifier(cfg.to_dict(), num_labels=3, pooling="cls", head_layers=2).eval()


@pytest.mark.parametrize("name", CSCL_BERT)
def test_cscl_card_says_which_vector_is_contrasted(name, capsys):
    """`fairmt recipes --paper` names the vector: the raw last-layer [CLS] state, not the release's tanh(W·[CLS])."""
    from fairmt.cli import main

    assert main(["recipes", "--paper", name, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (dep,) = [d for d in data["departures"] if d["key"] == "model.pooling"]
    assert dep["recipe"] == "cls" and dep["paper"] is None and dep["kind"] == "paper-silent choice"
    assert "raw last-layer [CLS] hidden state" in dep["reason"] and "no dense layer, no tanh" in dep["reason"]
    assert "tanh(W·[CLS])" in dep["reason"]
    stage = "train" if "one_stage" in name else "stage1"
    got = {s["key"]: s["recipe"] for s in data["settings"]}
    assert got.get(f"stages.{stage}.normalize", False) is False
    config = load_recipe(name)
    assert config["model"]["type"] == "finetune" and config["model"]["pooling"] == "cls"


def test_the_contrasted_vector_is_the_raw_last_layer_cls_state():
    """What the CSCL trainer contrasts (the representation `pooling: head` takes from a TransformerClassifier, as the
    resolved stage-1 Config sets it) is exactly last_hidden_state[:, 0]: no pooler dense, no tanh."""
    from fairmt.models.pooling import representation_and_logits

    model = _tiny_classifier()
    ids = torch.randint(1, 50, (4, 7))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    with torch.no_grad():
        rep, logits = representation_and_logits(model, {"input_ids": ids, "attention_mask": mask}, "head")
        raw = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0]
        pooled = model.encoder(input_ids=ids, attention_mask=mask).pooler_output  # BERT's tanh(W·[CLS])
    assert torch.equal(rep, raw)
    assert not torch.allclose(rep, pooled)
    assert rep.abs().max() > 1.0  # not squashed by a tanh
    assert torch.allclose(logits, model.classifier(raw))
    for name in ("classification/cscl_bios_bert", "classification/cscl_one_stage_bios_bert"):
        stage = "train" if "one_stage" in name else "stage1"
        from fairmt.recipes.cards import resolved_values

        assert resolved_values(load_recipe(name))["stages"][stage]["pooling"] == "head"


def test_cscl_cards_have_no_problems():
    for name in CSCL_BERT:
        card = card_of_config(load_recipe(name))
        assert not card.problems, card.problems


@pytest.mark.parametrize(
    ("page", "prefix", "seeds"), [("cscl.md", "classification/cscl_", 5), ("fcl.md", "classification/fcl", 10)]
)
def test_reproducing_commands_run_the_papers_seeds(page, prefix, seeds):
    """Chi et al. ran five seeds (§4), Shen et al. ten (Table 1): the cards say so (`seed`) and every sweep command
    on the reproducing page runs that many."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "reproducing" / page).read_text(encoding="utf-8")
    sweeps = [line for line in text.splitlines() if line.startswith(f"fairmt sweep {prefix}")]
    assert sweeps
    assert all(re.search(rf"--seeds {seeds}\b", line) for line in sweeps), sweeps
    card = card_of_config(load_recipe(f"{prefix}bios_bert" if "cscl" in prefix else f"{prefix}_moji"))
    (seed,) = [d for d in card.departures if d.key == "seed"]
    assert f"--seeds {seeds}" in seed.reason and seed.kind == "paper-silent choice"


def test_cscl_terms_are_means_over_anchors_not_the_printed_sums():
    """Card fact (CSCL): Eqs. 1-2 print L_sup and L_CS as sums over the 2N anchors while CE is a batch mean; fairmt's
    L_CS (and L_sup) is the mean over the anchors: the printed sum / 2N (slow reference from Eq. 2, uniform weights)."""
    import math

    from fairmt.losses.fair_contrastive import cs_infonce_loss

    torch.manual_seed(0)
    n, tau = 6, 0.5
    z = torch.randn(n, 2, 4)
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    a = torch.tensor([0, 0, 1, 1, 1, 0])
    got = cs_infonce_loss(z, y, a, temperature=tau, normalize=False, anchor_weighting="uniform")
    flat = [z[j, v] for v in range(2) for j in range(n)]  # view-major, as the loss lays them out
    sample = [j for _ in range(2) for j in range(n)]
    printed_sum = 0.0
    for i in range(2 * n):

        def s(k, i=i):
            return math.exp(float(flat[i] @ flat[k]) / tau)

        cell = [k for k in range(2 * n) if k != i and y[sample[k]] == y[sample[i]] and a[sample[k]] == a[sample[i]]]
        pos = next(k for k in range(2 * n) if k != i and sample[k] == sample[i])
        printed_sum += -math.log(s(pos) / sum(s(k) for k in cell))
    assert float(got) == pytest.approx(printed_sum / (2 * n), rel=1e-5)


def test_representation_entropy_is_better_higher():
    """Card fact (sampling): fairmt reports representation entropy as better when higher (uniform clusters reach the
    maximum, log2 K bits); the paper's Table 1 marks it ↓ while its §4.2 text calls the drop 'a minor trade off'."""
    import inspect

    from fairmt.eval.classification import latent_subgroup_metrics
    from fairmt.recipes.sampling import runner

    uniform = latent_subgroup_metrics(cluster_sizes=[25, 25, 25, 25]).representation_entropy
    skewed = latent_subgroup_metrics(cluster_sizes=[70, 10, 10, 10]).representation_entropy
    assert uniform == pytest.approx(2.0) and skewed < uniform
    source = inspect.getsource(runner)
    assert '("representation entropy (bits) ↑", "representation_entropy", "higher")' in source
    assert '("representation_entropy", "Representation Entropy ↑")' in source


def test_fcl_reports_no_time_column():
    """Card fact (FCL): Table 1's Time column (GPU time relative to CE, 'averaged over 10 runs') is not a metric of
    the classification runner's results: the runs record wall seconds (info) only."""
    from fairmt.eval.classification import classification_metrics

    summary = classification_metrics([0, 1, 1, 0], [0, 1, 0, 0], [0, 0, 1, 1]).summary(percent=True)
    assert not any("time" in k for k in summary)


@pytest.mark.parametrize(
    "name",
    [
        "classification/cscl_bios_bert",
        "classification/cscl_one_stage_bios_bert",
        "sampling/celeba_resnet50",
        "classification/fcl_moji",
    ],
)
def test_card_facts_are_shown_and_checked(name, capsys):
    from fairmt.cli import main

    assert main(["recipes", "--paper", name, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["facts"] and all(f["test"].startswith("tests/recipes/test_card_facts.py::") for f in data["facts"])
    assert main(["recipes", "--paper", name]) == 0
    assert "In the code (each checked by its test):" in capsys.readouterr().out


def test_a_fact_whose_test_is_gone_fails_the_card():
    from fairmt.commands.train import builtin_recipes
    from fairmt.recipes.cards import card_path, check_card, read_card

    path = builtin_recipes()["classification/fcl_moji"]
    card = read_card(card_path(path))
    card["facts"] = [{**card["facts"][0], "test": "tests/recipes/test_card_facts.py::test_no_such_test"}]
    problems = check_card(card, load_recipe("classification/fcl_moji"), base=card_path(path).parent).problems
    expected = f"fact {card['facts'][0]['fact']!r}: its test tests/recipes/test_card_facts.py::test_no_such_test does not exist"
    assert problems == [expected]
