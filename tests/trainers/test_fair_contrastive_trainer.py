"""FairContrastiveTrainer: CSCL one-/two-stage and FCL actually train; views; groups; bad input; augmentation."""

import pytest
import torch
from datasets import Dataset
from transformers import BertConfig, BertForSequenceClassification

import procs
from fairmt.data.augment.backtranslate import backtranslate
from fairmt.data.augment.eda import EDA
from fairmt.data.classification import ClassificationCollator
from fairmt.errors import FairmtError
from fairmt.models.text_classifiers import GRUClassifier, MLPClassifier
from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer, freeze_encoder

pytestmark = pytest.mark.slow


def _token_rows(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = []
    for i in range(n):
        y, a = i % 2, (i // 2) % 2
        ids = [1] + torch.randint(10 + 20 * y, 20 + 20 * y, (6,), generator=g).tolist() + [2]
        ids[3] = 50 + a  # a group-revealing token
        rows.append({"input_ids": ids, "labels": y, "group": a})
    return rows


def _feature_rows(n=96, d=16, seed=0):
    fixed = torch.Generator().manual_seed(100)
    centers = torch.randn(3, d, generator=fixed) * 2
    gdir = torch.randn(d, generator=fixed)
    g = torch.Generator().manual_seed(seed)
    rows = []
    for i in range(n):
        y, a = i % 3, (i // 3) % 2
        x = centers[y] + (a - 0.5) * gdir + 0.5 * torch.randn(d, generator=g)
        rows.append({"features": x.tolist(), "labels": y, "group": a})
    return rows


def _bert(num_labels=2, dropout=0.1):
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=60,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=num_labels,
        max_position_embeddings=32,
        hidden_dropout_prob=dropout,
    )
    return BertForSequenceClassification(cfg)


def _args(tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=16,
        num_train_epochs=4,
        logging_steps=4,
        report_to=[],
        save_strategy="no",
        learning_rate=2e-3,
        use_cpu=True,
        seed=0,
    )
    base.update(kw)
    return FairContrastiveConfig(**base)


def _train_logs(trainer):
    return [h for h in trainer.state.log_history if "loss" in h]


def test_cscl_one_stage_trains_bert_and_logs_terms(tmp_path):
    model = _bert()
    before = model.bert.embeddings.word_embeddings.weight.detach().clone()
    # 4 epochs at λ = 1 left the CE at chance (0.693 ± 0.001, a coin flip for this assertion); 8 epochs at λ = 0.1
    # and τ = 0.5 take it to ~0.63 (the representation is the classification head's input, BERT's pooler output)
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective="cscl", gamma=0.3, cs_lambda=0.1, temperature=0.5, num_train_epochs=8),
        train_dataset=Dataset.from_list(_token_rows()),
        data_collator=ClassificationCollator(),
    )
    trainer.train()
    logs = _train_logs(trainer)
    assert {"loss_ce", "loss_sup", "loss_cs"} <= set(logs[0])
    assert logs[-1]["loss_ce"] < logs[0]["loss_ce"] - 0.03
    assert logs[-1]["loss"] < logs[0]["loss"]
    assert logs[-1]["loss_ce"] < logs[0]["loss_ce"]
    assert not torch.allclose(model.bert.embeddings.word_embeddings.weight, before)  # the encoder learnt


def test_fcl_trains_mlp_on_features_and_reports_terms(tmp_path):
    model = MLPClassifier(16, 3, hidden_dim=32)
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective="fcl", fcl_alpha=1.0, fcl_beta=0.5, views="none", num_train_epochs=10),
        train_dataset=Dataset.from_list(_feature_rows()),
        data_collator=ClassificationCollator(),
    )
    trainer.train()
    logs = _train_logs(trainer)
    assert {"loss_ce", "loss_scl", "loss_fcl"} <= set(logs[0])
    assert logs[-1]["loss"] < logs[0]["loss"]
    pred = trainer.predict(Dataset.from_list(_feature_rows(seed=1)))
    logits, hidden = pred.predictions
    labels, groups = pred.label_ids
    assert hidden.shape == (96, 32) and groups.shape == (96,)
    assert (logits.argmax(1) == labels).mean() > 0.8


def test_two_stage_cscl_freezes_the_encoder_in_stage_two(tmp_path):
    rows = Dataset.from_list(_feature_rows())
    model = MLPClassifier(16, 3, hidden_dim=32)
    head0 = model.classifier.weight.detach().clone()
    enc0 = model.encoder[1].weight.detach().clone()
    stage1 = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path / "s1", objective="cscl_pretrain", cs_lambda=1.0, weight_decay=0.0),
        train_dataset=rows,
        data_collator=ClassificationCollator(),
    )
    stage1.train()
    logs = _train_logs(stage1)
    assert "loss_ce" not in logs[0] and logs[-1]["loss_sup"] < logs[0]["loss_sup"]
    assert torch.equal(model.classifier.weight, head0)  # stage 1 never touches the head
    enc1 = model.encoder[1].weight.detach().clone()
    assert not torch.equal(enc1, enc0)
    assert freeze_encoder(model) == ["classifier.weight", "classifier.bias"]
    stage2 = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path / "s2", objective="ce"),
        train_dataset=rows,
        data_collator=ClassificationCollator(),
    )
    stage2.train()
    assert torch.equal(model.encoder[1].weight, enc1)
    assert not torch.equal(model.classifier.weight, head0)
    assert _train_logs(stage2)[-1]["loss_ce"] < _train_logs(stage2)[0]["loss_ce"]


def test_gru_model_with_gradcache_trains(tmp_path):
    model = GRUClassifier(60, 2, embed_dim=16, hidden_dim=16)
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(
            tmp_path,
            objective="cscl",
            gamma=0.5,
            cs_lambda=1.0,
            per_device_train_batch_size=32,
            gradcache_chunk_size=8,
            temperature=2.0,
        ),  # CSCL's dot product at the release's τ
        train_dataset=Dataset.from_list(_token_rows()),
        data_collator=ClassificationCollator(),
    )
    trainer.train()
    logs = _train_logs(trainer)
    assert logs[-1]["loss_ce"] < logs[0]["loss_ce"]


def test_missing_group_column_is_a_clear_error(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "group"} for r in _feature_rows(32)]
    trainer = FairContrastiveTrainer(
        model=MLPClassifier(16, 3),
        args=_args(tmp_path, objective="fcl", views="none", max_steps=1),
        train_dataset=Dataset.from_list(rows),
        data_collator=ClassificationCollator(),
    )
    with pytest.raises(FairmtError, match="protected attribute"):
        trainer.train()


def test_config_validation(tmp_path):
    with pytest.raises(FairmtError, match="two views"):
        _args(tmp_path, objective="cscl", views="none")
    with pytest.raises(FairmtError, match="remove_unused_columns"):
        _args(tmp_path, remove_unused_columns=True)
    with pytest.raises(FairmtError, match="objective"):
        _args(tmp_path, objective="nope")


def _word_tokenizer(words):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]")


def test_augmented_views_from_eda_train(tmp_path):
    lex = {0: "nurse care patient ward", 1: "surgeon operate scalpel theatre"}
    g = torch.Generator().manual_seed(0)
    texts, labels, groups = [], [], []
    for i in range(48):
        y, a = i % 2, (i // 2) % 2
        words = lex[y].split()
        picks = [words[int(j)] for j in torch.randint(0, 4, (6,), generator=g)]
        texts.append(" ".join(picks + ["she" if a == 0 else "he"]))
        labels.append(y)
        groups.append(a)
    eda = EDA(alpha=0.2, synonyms={"care": ["nursing"], "operate": ["cut"]}, seed=0)
    views = eda(texts)
    assert views != texts
    tok = _word_tokenizer(" ".join(list(lex.values()) + ["she he nursing cut"]).split())
    rows = [{"text": t, "text_view": v, "labels": y, "group": a} for t, v, y, a in zip(texts, views, labels, groups)]
    model = _bert(dropout=0.0)
    model.resize_token_embeddings(len(tok))
    trainer = FairContrastiveTrainer(
        model=model,
        args=_args(tmp_path, objective="cscl", views="augment", gamma=0.3, num_train_epochs=3),
        train_dataset=Dataset.from_list(rows),
        data_collator=ClassificationCollator(tok, max_length=16),
    )
    batch = trainer.data_collator(rows[:4])
    assert {"view_input_ids", "view_attention_mask", "group", "labels"} <= set(batch)
    trainer.train()
    logs = _train_logs(trainer)
    assert logs[-1]["loss"] < logs[0]["loss"]


def test_augment_views_missing_is_an_error(tmp_path):
    trainer = FairContrastiveTrainer(
        model=_bert(),
        args=_args(tmp_path, objective="cscl", views="augment", max_steps=1),
        train_dataset=Dataset.from_list(_token_rows(16)),
        data_collator=ClassificationCollator(),
    )
    with pytest.raises(FairmtError, match="view_input_ids"):
        trainer.train()


class _DictTranslator:
    """A word-by-word dictionary 'translator' with the TranslationModel interface."""

    def __init__(self):
        self.src_lang = "en"
        self.table = {("en", "de"): {"the": "der", "doctor": "Arzt"}, ("de", "en"): {"der": "the", "Arzt": "physician"}}
        self.calls = []

    def set_languages(self, src_lang=None, tgt_lang=None):
        if src_lang:
            self.src_lang = src_lang

    def translate(self, texts, tgt_lang=None, **kw):
        self.calls.append((self.src_lang, tgt_lang))
        t = self.table[(self.src_lang, tgt_lang)]
        return [" ".join(t.get(w, w) for w in s.split()) for s in texts]


def test_backtranslate_round_trip_switches_languages():
    tr = _DictTranslator()
    assert backtranslate(["the doctor"], tr, pivot_lang="de", source_lang="en") == ["the physician"]
    assert tr.calls == [("en", "de"), ("de", "en")] and tr.src_lang == "en"


# ---------------------------------------------------------------- readers, recipes, entry point (real data)

RECIPES = {  # built-in classification recipe (classification/sampling: an alias) → its objective
    "cscl_one_stage": "cscl",
    "cscl_two_stage": "cscl_pretrain",
    "fcl": "fcl",
    "sampling": "sampling",
    "adversarial": "adversarial",
    "inlp": "inlp",
}


@pytest.mark.parametrize("name", RECIPES)
def test_recipes_load_and_resolve(name):
    from fairmt.commands.train import load_recipe
    from fairmt.recipes.classification.runner import resolve_config

    cfg = resolve_config(load_recipe(f"classification/{name}", ["seed=3"]))
    assert cfg["seed"] == 3 and cfg["objective"] == RECIPES[name]


def test_resolve_config_rejects_bad_recipes():
    from fairmt.recipes.classification.runner import resolve_config

    with pytest.raises(FairmtError, match="objective"):
        resolve_config({"method": "classification", "objective": "magic"})
    with pytest.raises(FairmtError, match="recipe key selection must be one of loss, dto"):
        resolve_config({"method": "classification", "selection": "test_accuracy"})
    with pytest.raises(FairmtError, match="method"):
        resolve_config({"method": "gacl"})


@pytest.mark.data
def test_read_bios_and_hatespeech(shared_data, monkeypatch):
    from fairmt.data.classification import read_bios, read_hatespeech

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    bios = read_bios()
    assert bios.num_labels == 28 and bios.group_names == ["Female", "Male"]
    assert sum(len(s) for s in bios.splits.values()) == 280
    assert set(bios.splits["train"].groups) == {0, 1}
    # stratified by profession × gender: every profession is in train
    assert len(set(bios.splits["train"].labels)) == 28
    hs = read_hatespeech("Spanish", "gender")
    # rows with unknown gender ('x') are dropped: 1026 + 918 of 3448 training rows have a gender
    assert [len(hs.splits[s]) for s in ("train", "dev", "test")] == [1944, 407, 417]
    assert all(len(ids) == 40 for ids in hs.splits["train"].input_ids[:50])
    assert "1504 dropped" in hs.notes[0]


@pytest.mark.data
def test_recipe_entry_point_runs_on_real_hatespeech(shared_data, monkeypatch, tmp_path):
    """A short FCL run through main(): results.json and predictions.jsonl on the real Spanish set."""
    import json

    from fairmt.recipes.classification.runner import main

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    res = main(
        {
            "method": "classification",
            "objective": "fcl",
            "output_dir": str(tmp_path),
            "selection": "dto",
            "data": {"dataset": "hatespeech", "language": "Spanish"},
            "model": {"type": "embedding_bag", "embed_dim": 32, "hidden_dim": 32},
            "training": {"num_train_epochs": 2, "per_device_train_batch_size": 128, "learning_rate": 5e-3},
            "objective_args": {"fcl_beta": 0.1},
        }
    )
    assert res["test"]["accuracy"] > 60.0 and res["test"]["scale"] == "percent"  # majority class: 58.5 %
    assert 0.0 <= res["test"]["gap"] <= 100.0 and "leakage_h" in res["test"]
    assert res["info"]["best_checkpoint"] is not None  # chosen on dev by DTO
    lines = (tmp_path / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 417 and {"label", "pred", "group", "hidden"} <= set(json.loads(lines[0]))


def test_two_process_run_gathers_candidates_and_matches_one_process(tmp_path, torchrun_pool):
    """torchrun, 2 CPU processes × 8 = 1 process × 16: the contrastive terms see the candidates of both processes
    (same values as one process on the whole batch), and after two synchronised updates the weights are the ones a
    single process reaches."""
    import json
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "support"
    script = here / "ddp_fair_contrastive_script.py"
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    procs.in_process(script, one, 16, cwd=tmp_path)
    torchrun_pool.run(script, two, 8, cwd=tmp_path)
    r1, r2 = json.loads(one.read_text()), json.loads(two.read_text())
    assert (r1["world_size"], r2["world_size"]) == (1, 2) and len(r1["logs"]) == len(r2["logs"]) == 2
    for k in ("loss_scl", "loss_fcl"):  # computed on the gathered 16 rows, identical on every process
        assert r2["logs"][0][k] == pytest.approx(r1["logs"][0][k], rel=1e-5)
    assert r2["logs"][0]["loss"] == pytest.approx(r1["logs"][0]["loss"], rel=1e-5)  # CE: mean of the two halves
    assert r2["checksums"][0] == pytest.approx(r2["checksums"][1], rel=1e-12)  # replicas in sync
    assert r2["checksums"][0] == pytest.approx(r1["checksums"][0], rel=1e-5)  # same weights as one process


def test_cscl_and_fcl_configs_are_the_shared_config_with_their_objective():
    import dataclasses

    from fairmt.trainers.fair_contrastive import CSCLConfig, FairContrastiveConfig, FCLConfig

    for cls, objectives in ((CSCLConfig, ("cscl", "cscl_pretrain")), (FCLConfig, ("fcl", "fcl_pretrain"))):
        assert cls(output_dir="o").objective == objectives[0]
        for objective in objectives:
            mine, shared = (
                cls(output_dir="o", objective=objective),
                FairContrastiveConfig(output_dir="o", objective=objective),
            )
            assert dataclasses.asdict(mine) == dataclasses.asdict(shared)  # every resolved default the same
        other = "fcl" if cls is CSCLConfig else "cscl"
        with pytest.raises(FairmtError, match="objective must be one of"):
            cls(output_dir="o", objective=other)
