"""GLUE utility (fairmt.eval.glue) on tiny local stand-ins with the GLUE column names, and the CCD recipe on a
*ForMaskedLM checkpoint: the head is saved with the debiased encoder (CrowS-Pairs/StereoSet can score it) and
`utility: glue` fine-tunes the result."""

import json

import pytest
import torch

from fairmt.errors import FairmtError

datasets = pytest.importorskip("datasets")
pytest.importorskip("transformers")

GOOD = ["good", "great", "fine", "nice"]
BAD = ["bad", "awful", "poor", "sad"]
NOUNS = ["film", "movie", "play", "show", "book"]


def _sst2():
    rows = [(f"a {adj} {n} .", 1) for adj in GOOD for n in NOUNS] + [
        (f"a {adj} {n} .", 0) for adj in BAD for n in NOUNS
    ]
    return datasets.Dataset.from_dict(
        {"sentence": [r[0] for r in rows], "label": [r[1] for r in rows], "idx": list(range(len(rows)))}
    )


def _mrpc():
    s1, s2, y = [], [], []
    for i, n in enumerate(NOUNS * 4):
        adj = (GOOD + BAD)[i % 8]
        same = i % 2 == 0
        s1.append(f"a {adj} {n} .")
        s2.append(f"a {adj} {n} ." if same else f"a {(BAD + GOOD)[i % 8]} {n} .")
        y.append(int(same))
    return datasets.Dataset.from_dict({"sentence1": s1, "sentence2": s2, "label": y, "idx": list(range(len(y)))})


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    from tiny_encoders import write_tiny_bert

    return write_tiny_bert(tmp_path_factory.mktemp("tiny_bert_glue"), list(_sst2()["sentence"]) + ["he she"])


def test_glue_metrics_by_hand():
    from fairmt.eval.glue import glue_metrics

    assert glue_metrics([1, 0, 1, 1], [1, 0, 0, 1], "sst2") == {"accuracy": 75.0}
    m = glue_metrics([1, 0, 1, 1, 0], [1, 1, 0, 1, 0], "mrpc")  # tp 2, fp 1, fn 1
    assert m["accuracy"] == 60.0 and m["f1"] == pytest.approx(100 * 4 / 6)
    assert glue_metrics([0, 0], [1, 0], "MRPC")["f1"] == 0.0
    with pytest.raises(FairmtError, match="unknown GLUE task 'cola'"):
        glue_metrics([1], [1], "cola")
    with pytest.raises(FairmtError, match="2 predictions for 1 labels"):
        glue_metrics([1, 0], [1], "rte")


def test_load_glue_offline_and_not_cached_is_a_clear_error(tmp_path, monkeypatch):
    from fairmt.eval.glue import load_glue

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(FairmtError, match="GLUE sst2: cannot load 'nyu-mll/glue'.*not in the local cache"):
        load_glue("sst2", cache_dir=str(tmp_path / "empty_cache"))


def test_finetune_on_stand_ins_learns_and_reports_glue_metrics(tiny_bert_dir, tmp_path):
    from fairmt.eval.glue import finetune_glue_task, glue_evaluate, glue_summary

    kw = dict(learning_rate=3e-3, batch_size=8, num_train_epochs=8, use_cpu=True, max_length=32)
    sst = finetune_glue_task(tiny_bert_dir, "sst-2", _sst2(), _sst2(), output_dir=tmp_path / "sst2", **kw)
    assert sst.task == "sst2" and sst.f1 is None and sst.n_train == sst.n_eval == 40
    assert sst.accuracy >= 90.0, sst  # a separable toy task: the classifier on the tiny encoder learns it
    res = glue_evaluate(tiny_bert_dir, ["mrpc"], datasets={"mrpc": (_mrpc(), _mrpc())}, output_dir=tmp_path / "g", **kw)
    assert 0.0 <= res["mrpc"].accuracy <= 100.0 and res["mrpc"].f1 is not None
    summary = glue_summary({"sst2": sst, **res})
    assert summary["avg"] == pytest.approx((sst.accuracy + (res["mrpc"].accuracy + res["mrpc"].f1) / 2) / 2)
    bad = datasets.Dataset.from_dict({"text": ["a"], "label": [0]})
    with pytest.raises(FairmtError, match="lacks column\\(s\\) \\['sentence'\\]"):
        finetune_glue_task(tiny_bert_dir, "sst2", bad, bad)


def test_ccd_recipe_on_masked_lm_keeps_the_head_and_runs_glue(tiny_bert_dir, tmp_path, monkeypatch):
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    import fairmt.eval.glue as glue
    from fairmt.eval.embedding.encode import MaskedLMRunner
    from fairmt.recipes._schema import validate_recipe
    from fairmt.recipes.ccd.runner import main
    from tiny_encoders import PREDICATES, SUBJECTS

    texts = [f"{s} {p} ." for s in SUBJECTS for p in PREDICATES]
    mlm_dir = tmp_path / "mlm"
    from tiny_encoders import write_tiny_bert

    write_tiny_bert(tmp_path / "vocab_src", texts + list(_sst2()["sentence"]))
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig.from_pretrained(tmp_path / "vocab_src")).save_pretrained(mlm_dir)
    AutoTokenizer.from_pretrained(tmp_path / "vocab_src").save_pretrained(mlm_dir)
    head_before = BertForMaskedLM.from_pretrained(mlm_dir).cls.predictions.transform.dense.weight.detach().clone()

    calls = []

    def stand_in(task, cache_dir=None):
        calls.append(task)
        return datasets.DatasetDict({"train": _sst2(), "validation": _sst2()})

    monkeypatch.setattr(glue, "load_glue", stand_in)
    src = tmp_path / "src.txt"
    src.write_text("\n".join(texts) + "\n")
    config = {
        "method": "ccd",
        "model": str(mlm_dir),
        "data": {"cda_source": {"path": str(src)}, "test_size": 12, "eval_size": 8, "seed": 1},
        "training": {
            "output_dir": str(tmp_path / "run"),
            "per_device_train_batch_size": 8,
            "learning_rate": 5e-4,
            "max_steps": 6,
            "eval_steps": 3,
            "save_steps": 3,
            "logging_steps": 3,
            "use_cpu": True,
            "report_to": "none",
            "rho_estimator": "median",
            "disable_tqdm": True,
        },
        "evaluation": {"suites": ["cced"]},
        "utility": {"name": "glue", "tasks": ["sst2"], "num_train_epochs": 1, "batch_size": 16, "max_length": 32},
    }
    validate_recipe(config)
    res = main(config)
    final = tmp_path / "run" / "final"
    assert json.loads((final / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    runner = MaskedLMRunner.from_path(final)  # refuses a checkpoint without a trained head
    assert torch.equal(runner.model.cls.predictions.transform.dense.weight, head_before)  # the original head
    ids = runner.encode("he is a doctor .")
    assert all(lp < 0 for lp in runner.masked_log_probs(ids, [1, 2, 3]))
    assert calls == ["sst2"] and res["glue"]["tasks"]["sst2"]["n_eval"] == 40
    assert res["after"]["cced"]["gap"] >= 0
    saved = json.loads((tmp_path / "run" / "ccd_results.json").read_text())
    assert saved["glue"]["avg"] == pytest.approx(saved["glue"]["tasks"]["sst2"]["accuracy"])
    with pytest.raises(FairmtError, match="utility must be 'glue'"):
        main({**config, "utility": "squad", "overwrite": True})
