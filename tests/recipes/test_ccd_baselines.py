"""The CCD paper's baselines DPCE and ADEPT-F: losses against slow loop references, word-sentence data, a few real
training steps on a tiny BERT (and BertForMaskedLM), the recipes (dry-run, end to end), and the published word lists."""

import json
import math

import pytest
import torch

from fairmt.errors import FairmtError

transformers = pytest.importorskip("transformers")

SUBJECTS = ["he", "she", "his father", "her mother", "the man", "the woman", "my brother", "my sister", "they", "we"]
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
ATTRS = {"male": ["he", "his", "father", "man", "brother"], "female": ["she", "her", "mother", "woman", "sister"]}
TARGETS = ["doctor", "bank", "dinner", "code", "truck", "children", "cars", "dance", "company", "house"]


def _texts():
    return [f"{s} {p} ." for s in SUBJECTS for p in PREDICATES]


# ---------------------------------------------------------------------------------------------- losses vs loops


def _dpce_reference(target, attrs, states, orig, alpha, beta):
    """Σ/N over embeddings and layers of Σ_a (v·e)², Σ/M over tokens and layers of ‖h - h0‖², written as loops."""
    orth, n = 0.0, 0
    for e in target:
        for i in range(target.shape[1]):
            orth += sum(float(torch.dot(attrs[a, i], e[i])) ** 2 for a in range(attrs.shape[0]))
            n += 1
    reg, m = 0.0, 0
    for h, h0 in zip(states, orig):
        for i in range(states.shape[1]):
            reg += sum(float(x - y) ** 2 for x, y in zip(h[i], h0[i]))
            m += 1
    orth, reg = orth / n, reg / m
    return alpha * orth + beta * reg, orth, reg


def test_dpce_loss_matches_loop_reference():
    from fairmt.losses.dpce import dpce_loss, select_layers

    g = torch.Generator().manual_seed(0)
    attrs = torch.randn(2, 3, 8, generator=g, dtype=torch.float64)
    target = torch.randn(5, 3, 8, generator=g, dtype=torch.float64, requires_grad=True)
    states = torch.randn(7, 3, 8, generator=g, dtype=torch.float64, requires_grad=True)
    orig = torch.randn(7, 3, 8, generator=g, dtype=torch.float64)
    out = dpce_loss(target, attrs, states, orig, alpha=0.2, beta=0.8)
    want = _dpce_reference(target.detach(), attrs, states.detach(), orig, 0.2, 0.8)
    for got, ref in zip((out.loss, out.orth, out.reg), want):
        assert float(got) == pytest.approx(ref, rel=1e-12)
    out.loss.backward()
    assert target.grad.abs().sum() > 0 and states.grad.abs().sum() > 0
    # layer choices: first = embedding output (index 0), last = index -1
    first = dpce_loss(select_layers(target, "first"), select_layers(attrs, "first"), states, orig)
    ref_first = _dpce_reference(target.detach()[:, :1], attrs[:, :1], states.detach(), orig, 0.2, 0.8)
    assert float(first.orth) == pytest.approx(ref_first[1], rel=1e-12)
    assert select_layers(attrs, "last").shape == (2, 1, 8) and torch.equal(
        select_layers(attrs, "last")[:, 0], attrs[:, -1]
    )
    # no target / attribute tokens in the batch: that term is 0 (and still differentiable)
    empty = dpce_loss(target[:0], attrs, states[:0], orig[:0])
    assert float(empty.loss) == 0.0
    with pytest.raises(FairmtError, match="debias_layer"):
        select_layers(attrs, "middle")
    with pytest.raises(FairmtError, match="shape"):
        dpce_loss(target[:, :2], attrs, states, orig)


def _adept_reference(neutral, protos, states, orig, rho, alpha, beta):
    """SNE probabilities, JS in bits and softmax-KL in bits, one number at a time."""
    g, n = protos.shape[0], neutral.shape[0]
    probs = []
    for a in range(g):
        w = [
            math.exp(-sum(float(x - y) ** 2 for x, y in zip(protos[a], neutral[j])) / (2 * rho * rho)) for j in range(n)
        ]
        z = sum(w)
        probs.append([v / z for v in w])

    def kl(p, q):
        return sum(pi * math.log2(pi / qi) for pi, qi in zip(p, q) if pi > 0)

    js = []
    for a in range(g):
        for b in range(a + 1, g):
            m = [(x + y) / 2 for x, y in zip(probs[a], probs[b])]
            js.append(0.5 * kl(probs[a], m) + 0.5 * kl(probs[b], m))
    bias = sum(js) / len(js)
    rep, cnt = 0.0, 0
    for h, h0 in zip(states, orig):
        for i in range(states.shape[1]):
            p = [math.exp(float(v)) for v in h0[i]]
            q = [math.exp(float(v)) for v in h[i]]
            zp, zq = sum(p), sum(q)
            rep += kl([v / zp for v in p], [v / zq for v in q])
            cnt += 1
    rep /= cnt
    return alpha * bias + beta * rep, bias, rep


@pytest.mark.parametrize("groups", [2, 3])
def test_adept_loss_matches_loop_reference(groups):
    from fairmt.losses.adept import adept_loss

    g = torch.Generator().manual_seed(groups)
    protos = torch.randn(groups, 12, generator=g, dtype=torch.float64)
    neutral = torch.randn(9, 12, generator=g, dtype=torch.float64, requires_grad=True)
    states = torch.randn(6, 2, 5, generator=g, dtype=torch.float64, requires_grad=True)
    orig = torch.randn(6, 2, 5, generator=g, dtype=torch.float64)
    out = adept_loss(neutral, protos, states, orig, rho=2.5, alpha=0.3, beta=0.7)
    want = _adept_reference(neutral.detach(), protos, states.detach(), orig, 2.5, 0.3, 0.7)
    for got, ref in zip((out.loss, out.bias, out.rep), want):
        assert float(got) == pytest.approx(ref, rel=1e-10)
    out.loss.backward()
    assert neutral.grad.abs().sum() > 0 and states.grad.abs().sum() > 0


def test_adept_loss_edge_cases():
    from fairmt.losses.adept import adept_bias_loss, adept_representation_loss, js_divergence

    p = torch.log_softmax(torch.randn(6, dtype=torch.float64), 0)
    assert float(js_divergence(p, p)) == pytest.approx(0.0, abs=1e-12)
    one_hot_a = torch.log(torch.tensor([1.0, 1e-300], dtype=torch.float64))
    one_hot_b = torch.log(torch.tensor([1e-300, 1.0], dtype=torch.float64))
    assert float(js_divergence(one_hot_a, one_hot_b)) == pytest.approx(1.0, rel=1e-9)  # disjoint: 1 bit
    # neutral words equidistant from both prototypes: equal distributions, JS 0
    protos = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    neutral = torch.tensor([[0.0, 1.0], [0.0, -2.0], [0.0, 3.0]], dtype=torch.float64)
    assert float(adept_bias_loss(neutral, protos, rho=1.0)) == pytest.approx(0.0, abs=1e-12)
    assert float(adept_bias_loss(neutral[:1], protos, rho=1.0)) == 0.0
    x = torch.randn(4, 2, 3, dtype=torch.float64)
    assert float(adept_representation_loss(x, x)) == pytest.approx(0.0, abs=1e-12)
    assert float(adept_representation_loss(x + 1, x, "mse")) == pytest.approx(3.0)
    with pytest.raises(FairmtError, match="rho"):
        adept_bias_loss(neutral, protos, rho=0.0)
    with pytest.raises(FairmtError, match="two attribute prototypes"):
        adept_bias_loss(neutral, protos[:1], rho=1.0)
    with pytest.raises(FairmtError, match="representation loss"):
        adept_representation_loss(x, x, "cosine")


# ---------------------------------------------------------------------------------------------- data


def test_collect_word_sentences_rows_and_errors():
    from fairmt.data.word_sentences import check_rows, collect_word_sentences

    rows = collect_word_sentences(
        ["He is a doctor.", "She and he dance.", "The nurse left.", "Her sister cooks.", "nothing here"],
        ATTRS,
        ["doctor", "dance", "nurse"],
    )
    got = [(r["text"], r["role"], r["group"], r["word"]) for r in rows]
    assert got == [
        ("He is a doctor.", "attribute", "male", "he"),
        ("He is a doctor.", "target", "", "doctor"),
        ("She and he dance.", "target", "", "dance"),  # two groups: no attribute row
        ("The nurse left.", "target", "", "nurse"),
        ("Her sister cooks.", "attribute", "female", "her"),
    ]
    assert rows[1]["text"][rows[1]["start"] : rows[1]["end"]] == "doctor"
    assert check_rows(rows, ["male", "female"]) == {"target": 3, "male": 1, "female": 1}
    with pytest.raises(FairmtError, match="no sentences for \\['female'\\]"):
        check_rows(rows[:2], ["male", "female"])
    with pytest.raises(FairmtError, match="both 'male' and 'female'"):
        collect_word_sentences(["x"], {"male": ["he"], "female": ["he"]}, ["doctor"])
    overlap = collect_word_sentences(["he is a doctor"], ATTRS, ["he", "doctor"])  # 'he' stays an attribute word
    assert [(r["role"], r["word"]) for r in overlap] == [("attribute", "he"), ("target", "doctor")]
    with pytest.raises(FairmtError, match="no target words"):
        collect_word_sentences(["x"], ATTRS, ["he"])
    capped = collect_word_sentences(_texts(), ATTRS, TARGETS, max_per_word=2)
    words = [(r["role"], r["word"]) for r in capped]
    assert max(words.count(w) for w in set(words)) == 2


def test_collator_marks_every_subword_of_the_word(tmp_path):
    from transformers import BertTokenizer

    from fairmt.data.word_sentences import WordSentenceCollator, collect_word_sentences

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "nur", "##se", "he", "left", "is", "a", "."]
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    rows = collect_word_sentences(["the nurse left .", "he is a nurse ."], ATTRS, ["nurse"])
    batch = WordSentenceCollator(tok, ["male", "female"])(rows)
    by_text = {(r["text"], r["role"]): i for i, r in enumerate(rows)}
    i = by_text[("the nurse left .", "target")]
    assert tok.convert_ids_to_tokens(batch["input_ids"][i][batch["word_mask"][i].bool()]) == ["nur", "##se"]
    j = by_text[("he is a nurse .", "attribute")]
    assert tok.convert_ids_to_tokens(batch["input_ids"][j][batch["word_mask"][j].bool()]) == ["he"]
    assert batch["group_index"].tolist() == [-1 if r["role"] == "target" else 0 for r in rows]
    assert batch["is_target"].tolist() == [r["role"] == "target" for r in rows]
    short = WordSentenceCollator(tok, ["male", "female"], max_length=3)(rows)  # [CLS] he is | nurse cut off
    k = by_text[("he is a nurse .", "target")]
    assert short["word_mask"][k].sum() == 0


# ---------------------------------------------------------------------------------------------- trainers


@pytest.fixture(scope="module")
def rows():
    from fairmt.data.word_sentences import collect_word_sentences

    return collect_word_sentences(_texts(), ATTRS, TARGETS)


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    from tiny_encoders import write_tiny_bert

    return write_tiny_bert(tmp_path_factory.mktemp("tiny_bert_baselines"), _texts())


@pytest.fixture(scope="module")
def tiny_mlm_dir(tiny_bert_dir, tmp_path_factory):
    """The same tiny BERT with a masked-LM head (BertForMaskedLM), saved with its tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    out = tmp_path_factory.mktemp("tiny_mlm_baselines")
    torch.manual_seed(1)
    BertForMaskedLM(BertConfig.from_pretrained(tiny_bert_dir)).save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(out)
    return out


def _args(cls, tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=16,
        per_device_eval_batch_size=512,
        learning_rate=3e-3,
        num_train_epochs=3,
        logging_steps=4,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
        gradient_accumulation_steps=1,
    )
    base.update(kw)
    return cls(**base)


def _attribute_vectors_by_hand(model, tok, rows):
    """Per group, the mean over attribute rows of the marked word's states at every layer (one row at a time)."""
    out = {}
    for g in ("male", "female"):
        vecs = []
        for r in rows:
            if r["role"] != "attribute" or r["group"] != g:
                continue
            enc = tok(r["text"], return_offsets_mapping=True, return_tensors="pt")
            offs = enc.pop("offset_mapping")[0]
            with torch.no_grad():
                hs = torch.stack(model(**enc, output_hidden_states=True).hidden_states, 2)[0]  # (T, L, d)
            idx = [t for t, (s, e) in enumerate(offs.tolist()) if e > s and s < r["end"] and e > r["start"]]
            vecs.append(hs[idx].mean(0))
        out[g] = torch.stack(vecs).mean(0)
    return torch.stack([out["male"], out["female"]])


def _check_training(trainer, model, before, first, last, names):
    a, b = names
    assert last["eval_loss"] < first["eval_loss"], (first, last)
    assert last[f"eval_loss_{a}"] < first[f"eval_loss_{a}"]
    assert first[f"eval_loss_{b}"] == pytest.approx(0.0, abs=1e-6)  # no dropout: f == f_orig before training
    logs = [h for h in trainer.state.log_history if f"loss_{a}" in h]
    assert len(logs) >= 2 and all(h[f"loss_{b}"] >= 0 for h in logs)
    ref = trainer.reference_model
    assert ref is not model and not ref.training
    for n, p in ref.named_parameters():
        assert p.grad is None and not p.requires_grad
        assert torch.equal(p, before[n]), f"frozen copy changed: {n}"
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert any("encoder.layer.0" in n for n in changed) and any("encoder.layer.1" in n for n in changed)


def test_dpce_trains_tiny_bert(tiny_bert_dir, rows, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from fairmt.data.word_sentences import rows_to_dataset
    from fairmt.trainers.dpce import DPCEConfig, DPCETrainer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ds = rows_to_dataset(rows)
    trainer = DPCETrainer(
        model=model,
        args=_args(DPCEConfig, tmp_path, eval_strategy="no"),
        train_dataset=ds,
        eval_dataset=ds,
        processing_class=tok,
    )
    trainer._prepare()
    assert torch.allclose(trainer.attribute_vectors, _attribute_vectors_by_hand(model, tok, rows), atol=1e-5)
    assert trainer.attribute_vectors.shape == (2, 3, 32)  # groups, embedding output + 2 layers, hidden
    first = trainer.evaluate()
    grads = {}
    hooks = [
        p.register_hook(lambda g, n=n: grads.__setitem__(n, float(g.abs().sum())))
        for n, p in model.named_parameters()
        if "encoder.layer" in n
    ]
    trainer.train()
    for h in hooks:
        h.remove()
    last = trainer.evaluate()
    assert any(v > 0 for n, v in grads.items() if "layer.1" in n)  # gradients reach the trained encoder
    _check_training(trainer, model, before, first, last, ("orth", "reg"))
    assert last["eval_loss_orth"] < 0.5 * first["eval_loss_orth"]
    assert last["eval_loss"] == pytest.approx(0.2 * last["eval_loss_orth"] + 0.8 * last["eval_loss_reg"], rel=1e-4)


def test_adept_trains_tiny_masked_lm_with_estimated_rho(tiny_mlm_dir, rows, tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from fairmt.data.word_sentences import rows_to_dataset
    from fairmt.trainers.adept import ADEPTConfig, ADEPTTrainer

    tok = AutoTokenizer.from_pretrained(tiny_mlm_dir)
    model = AutoModelForMaskedLM.from_pretrained(tiny_mlm_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ds = rows_to_dataset(rows)
    trainer = ADEPTTrainer(
        model=model,
        args=_args(ADEPTConfig, tmp_path, rho=None, num_train_epochs=4),
        train_dataset=ds,
        eval_dataset=ds,
        processing_class=tok,
    )
    trainer._prepare()
    # rho = median prototype-to-neutral distance under the original model, recomputed by hand
    protos = trainer.attribute_vectors.reshape(2, -1)
    neutral = []
    for r in rows:
        if r["role"] == "target":
            enc = tok(r["text"], return_offsets_mapping=True, return_tensors="pt")
            offs = enc.pop("offset_mapping")[0]
            with torch.no_grad():
                hs = torch.stack(model.bert(**enc, output_hidden_states=True).hidden_states, 2)[0]
            idx = [t for t, (s, e) in enumerate(offs.tolist()) if e > s and s < r["end"] and e > r["start"]]
            neutral.append(hs[idx].mean(0).reshape(-1))
    assert trainer.rho == pytest.approx(float(torch.cdist(protos, torch.stack(neutral)).flatten().median()), rel=1e-4)
    # on a random tiny BERT the two prototypes are close compared with the neutral words' spread, so the median
    # bandwidth gives near-identical distributions (JS ≈ 1e-3 bits); train with a sharper kernel
    trainer = ADEPTTrainer(
        model=model,
        args=_args(ADEPTConfig, tmp_path, rho=trainer.rho / 4, num_train_epochs=4),
        train_dataset=ds,
        eval_dataset=ds,
        processing_class=tok,
    )
    first = trainer.evaluate()
    trainer.train()
    last = trainer.evaluate()
    _check_training(trainer, model, before, first, last, ("bias", "rep"))
    assert last["eval_loss_bias"] < 0.5 * first["eval_loss_bias"]
    assert torch.equal(model.cls.predictions.bias, before["cls.predictions.bias"])  # head kept, not trained


def test_configs_reject_bad_values_and_trainers_need_the_right_inputs(tiny_bert_dir, rows, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from fairmt.data.word_sentences import rows_to_dataset
    from fairmt.trainers.adept import ADEPTConfig
    from fairmt.trainers.dpce import DPCEConfig, DPCETrainer

    assert (DPCEConfig(output_dir=str(tmp_path)).alpha, DPCEConfig(output_dir=str(tmp_path)).beta) == (0.2, 0.8)
    cfg = ADEPTConfig(output_dir=str(tmp_path))
    assert (cfg.alpha, cfg.beta, cfg.rho, cfg.debias_layer, cfg.loss_target) == (0.3, 0.7, 15.0, "all", "token")
    for kw, msg in [
        ({"debias_layer": "mid"}, "debias_layer"),
        ({"loss_target": "word"}, "loss_target"),
        ({"groups": ["male"]}, "two distinct groups"),
        ({"alpha": -1.0}, "DPCEConfig.alpha must be a finite number ≥ 0, got -1.0"),
    ]:
        with pytest.raises(FairmtError, match=msg):
            DPCEConfig(output_dir=str(tmp_path), **kw)
    with pytest.raises(FairmtError, match="rho"):
        ADEPTConfig(output_dir=str(tmp_path), rho=0.0)
    with pytest.raises(FairmtError, match="DPCEConfig"):
        DPCETrainer(model=AutoModel.from_pretrained(tiny_bert_dir), args=ADEPTConfig(output_dir=str(tmp_path)))
    only_male = rows_to_dataset([r for r in rows if r["group"] != "female"])
    t = DPCETrainer(
        model=AutoModel.from_pretrained(tiny_bert_dir),
        args=_args(DPCEConfig, tmp_path, max_steps=1),
        train_dataset=only_male,
        processing_class=AutoTokenizer.from_pretrained(tiny_bert_dir),
    )
    with pytest.raises(FairmtError, match="no attribute sentence for group\\(s\\) \\['female'\\]"):
        t.train()


def test_dpce_sentence_level_first_layer_with_lora(tiny_bert_dir, rows, tmp_path):
    peft = pytest.importorskip("peft")
    from transformers import AutoModel, AutoTokenizer

    from fairmt.data.word_sentences import rows_to_dataset
    from fairmt.trainers.dpce import DPCEConfig, DPCETrainer

    model = peft.get_peft_model(
        AutoModel.from_pretrained(tiny_bert_dir), peft.LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"])
    )
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    ds = rows_to_dataset(rows)
    trainer = DPCETrainer(
        model=model,
        args=_args(DPCEConfig, tmp_path, loss_target="sentence", debias_layer="last", learning_rate=1e-2),
        train_dataset=ds,
        eval_dataset=ds,
        processing_class=AutoTokenizer.from_pretrained(tiny_bert_dir),
    )
    assert trainer.reference_model is None  # the original = adapters disabled
    first = trainer.evaluate()
    trainer.train()
    last = trainer.evaluate()
    assert last["eval_loss_orth"] < first["eval_loss_orth"] and last["eval_loss_reg"] > 0
    for n, p in model.named_parameters():
        if n in frozen:
            assert torch.equal(p, frozen[n]), n


# ---------------------------------------------------------------------------------------------- recipes


def _recipe(method, model_dir, tmp_path, **extra):
    src = tmp_path / "corpus.txt"
    src.write_text("\n".join(_texts()) + "\n")
    words = {}
    for name, lst in (("male", ATTRS["male"]), ("female", ATTRS["female"]), ("target", TARGETS)):
        (tmp_path / f"{name}.txt").write_text("\n".join(lst) + "\n")
        words[name] = str(tmp_path / f"{name}.txt")
    cfg = {
        "method": method,
        "model": str(model_dir),
        "data": {"corpus": {"path": str(src)}, "words": words, "eval_size": 16, "test_size": 12, "seed": 1},
        "training": {
            "output_dir": str(tmp_path / "run"),
            "per_device_train_batch_size": 16,
            "learning_rate": 3e-3,
            "max_steps": 8,
            "eval_steps": 4,
            "save_steps": 4,
            "logging_steps": 2,
            "use_cpu": True,
            "report_to": "none",
            "disable_tqdm": True,
            "gradient_accumulation_steps": 1,
        },
        "evaluation": {"suites": ["cced"]},
    }
    if method == "adept":
        cfg["training"]["rho"] = None
    cfg.update(extra)
    return cfg


def _median_rho(model_dir, tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from fairmt.data.word_sentences import collect_word_sentences, rows_to_dataset
    from fairmt.trainers.adept import ADEPTConfig, ADEPTTrainer

    probe = ADEPTTrainer(
        model=AutoModelForMaskedLM.from_pretrained(model_dir),
        args=_args(ADEPTConfig, tmp_path / "probe", rho=None),
        train_dataset=rows_to_dataset(collect_word_sentences(_texts(), ATTRS, TARGETS)),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
    )
    probe._prepare()
    return probe.rho


@pytest.mark.parametrize("method", ["dpce", "adept"])
def test_recipe_end_to_end_on_tiny_mlm(method, tiny_mlm_dir, tmp_path, capsys):
    from fairmt.eval.embedding.encode import MaskedLMRunner
    from fairmt.recipes._schema import validate_recipe
    from fairmt.recipes.ccd.word_debias import main

    cfg = _recipe(method, tiny_mlm_dir, tmp_path)
    if method == "adept":  # a sharper kernel than the median distance on a random tiny model (see above)
        cfg["training"]["rho"] = _median_rho(tiny_mlm_dir, tmp_path) / 4
    validate_recipe(cfg)
    res = main(cfg)
    saved = json.loads((tmp_path / "run" / f"{method}_results.json").read_text())
    assert saved["data"]["n_test"] == 12 and saved["data"]["n_eval"] == 16
    assert set(saved["before"]["cced"]) >= {"gap"} and set(saved["after"]["cced"]) >= {"gap"}
    assert saved["train"]["best_checkpoint"] is not None
    evals = [h for h in saved["train"]["log_history"] if "eval_loss" in h]
    term = "eval_loss_orth" if method == "dpce" else "eval_loss_bias"
    assert evals and min(h[term] for h in evals) < saved["train"]["eval_before"][term]
    assert res["results_path"].endswith(f"{method}_results.json")
    printed = capsys.readouterr().out  # issue 44 item 13: progress per suite, and the before → after table
    assert "fairmt: before (original model): measuring CCED (12 held-out tuples)" in printed
    assert f"what {method.upper()} changed" in printed
    line = next(x for x in printed.splitlines() if "CCED gap (held-out tuples)" in x)
    assert f"{saved['before']['cced']['gap']:6.3f} → {saved['after']['cced']['gap']:6.3f}" in line
    runner = MaskedLMRunner.from_path(tmp_path / "run" / "final")  # head saved: CrowS-Pairs / StereoSet can run
    ids = runner.encode("he is a doctor .")
    assert len(runner.masked_log_probs(ids, [1, 2])) == 2


def test_recipe_validation_and_dry_run(tmp_path, capsys, monkeypatch):
    from fairmt.cli import main as cli
    from fairmt.recipes._schema import validate_recipe

    corpus = tmp_path / "parallel" / "newstest2018_en-de.jsonl"  # the dry run checks that the data exists
    corpus.parent.mkdir()
    corpus.write_text('{"translation": {"en": "He is here."}}\n')
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert cli(["train", "ccd/dpce_minilm", "--dry-run"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["class"] == "DPCEConfig" and out["config"]["alpha"] == 0.2
    assert cli(["train", "ccd/adept_f_minilm", "training.alpha=0.5", "--dry-run", "--verbose"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["class"] == "ADEPTConfig" and out["config"]["alpha"] == 0.5 and out["config"]["rho"] is None
    assert cli(["train", "ccd/dpce_minilm", "data.lexcon=dpce", "--dry-run"]) == 2
    assert "did you mean 'lexicon'?" in capsys.readouterr().err
    assert cli(["train", "ccd/adept_f_minilm", "training.representation=cos", "--dry-run"]) == 2
    assert "representation" in capsys.readouterr().err
    with pytest.raises(FairmtError, match="did you mean 'debias_layer'"):
        validate_recipe({"method": "dpce", "training": {"debias_layers": "all"}})


def test_recipe_errors(tiny_bert_dir, tmp_path):
    from fairmt.recipes.ccd.word_debias import main

    with pytest.raises(FairmtError, match="data.corpus.path"):
        main(
            {"method": "dpce", "model": str(tiny_bert_dir), "data": {}, "training": {"output_dir": str(tmp_path / "a")}}
        )
    cfg = _recipe("dpce", tiny_bert_dir, tmp_path)
    cfg["data"]["words"]["female"] = str(tmp_path / "none.txt")
    (tmp_path / "none.txt").write_text("zzz\n")
    cfg["training"]["output_dir"] = str(tmp_path / "b")
    with pytest.raises(FairmtError, match="no sentences for \\['female'\\]"):
        main(cfg)


# ---------------------------------------------------------------------------------------------- published word lists


@pytest.mark.data
@pytest.mark.parametrize("name", ["dpce", "adept"])
def test_published_word_lists_load_and_pair_up(name, shared_data, monkeypatch):
    from fairmt.data.word_sentences import collect_word_sentences, load_lexicon

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    attrs, targets = load_lexicon(name)
    assert len(attrs["male"]) > 200 and len(attrs["female"]) > 200 and len(targets) > 150
    assert "he" in attrs["male"] and "she" in attrs["female"]
    rows = collect_word_sentences(["He is a nurse .", "She is an engineer ."], attrs, targets)
    assert {(r["role"], r["group"]) for r in rows} >= {("attribute", "male"), ("attribute", "female")}
