"""Facts of the paper cards that live in code, not configuration (issue 51): each card entry that states what the
code does is checked against the code here, so the card fails when the code changes."""

from __future__ import annotations

import json

import pytest
import torch

from fairmt.commands.train import load_recipe
from fairmt.recipes.cards import card_of_config

CSCL_BERT = ["classification/cscl_bios_bert", "classification/cscl_jigsaw_bert",
             "classification/cscl_one_stage_bios_bert"]


def _tiny_classifier():
    from transformers import BertConfig

    from fairmt.models.encoder_classifier import TransformerClassifier

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                     max_position_embeddings=32)
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


@pytest.mark.parametrize(("page", "prefix", "seeds"), [("cscl.md", "classification/cscl_", 5),
                                                       ("fcl.md", "classification/fcl", 10)])
def test_reproducing_commands_run_the_papers_seeds(page, prefix, seeds):
    """Chi et al. ran five seeds (§4), Shen et al. ten (Table 1): the cards say so (`seed`) and every sweep command
    on the reproducing page runs that many."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "reproducing" / page).read_text(encoding="utf-8")
    sweeps = [line for line in text.splitlines() if line.startswith(f"fairmt sweep {prefix}")]
    assert sweeps
    assert all(re.search(rf"--seeds {seeds}\b", line) for line in sweeps), sweeps
    card = card_of_config(load_recipe(f"{prefix}bios_bert" if "cscl" in prefix else f"{prefix}_moji"))
    (seed,) = [d for d in card.departures if d.key == "seed"]
    assert f"--seeds {seeds}" in seed.reason and seed.kind == "paper-silent choice"
