"""MT from Python as the transformers ecosystem expects: GenEvalCallback in a plain ``Seq2SeqTrainer`` (the README
example runs here), and a fairmt-trained model read back by stock transformers classes."""

from __future__ import annotations

import re

import pytest
import torch

from fairmt.data.demo_corpus import demo_splits
from fairmt.eval.geneval import GenEvalCounterfactualData
from fairmt.models import load_translation_model
from gacl_helpers import gacl_dataset, tiny_model_dir  # beside this file


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def _demo_geneval(n: int = 4) -> GenEvalCounterfactualData:
    """A small counterfactual set from the demo corpus (masculine / feminine English with German references)."""
    _, _, heldout = demo_splits()
    m, f = heldout[:n], heldout[n : 2 * n]
    return GenEvalCounterfactualData(
        lang="de",
        split="dev",
        masculine_sources=[p.en for p in m],
        feminine_sources=[p.en for p in f],
        masculine_refs=[p.de for p in m],
        feminine_refs=[p.de for p in f],
    )


def test_geneval_callback_in_a_plain_seq2seq_trainer_selects_the_best_checkpoint(tiny_dir, tmp_path):
    """No fairmt Trainer, no TranslationModel given: the callback translates with the Trainer's model and tokenizer,
    its metrics are in every evaluation's log, and ``metric_for_best_model`` selects by them (the Trainer raises a
    KeyError when the metric is missing from the evaluation's metrics)."""
    from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

    from fairmt.integrations import GenEvalCallback

    tm = load_translation_model(str(tiny_dir), "en", "de")
    _, balanced, _ = demo_splits()
    from datasets import Dataset

    ds = Dataset.from_dict({"src": [p.en for p in balanced[:32]], "tgt": [p.de for p in balanced[:32]]})
    ds = ds.map(
        lambda b: dict(tm.encode(b["src"], b["tgt"], max_length=48)), batched=True, remove_columns=["src", "tgt"]
    )
    data = _demo_geneval()
    cb = GenEvalCallback(lang="de", data=data, max_new_tokens=12)
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path / "run"),
        max_steps=3,
        eval_strategy="steps",
        eval_steps=1,
        save_steps=1,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        load_best_model_at_end=True,
        metric_for_best_model="geneval_delta_g",
        greater_is_better=False,
        save_only_model=True,
    )
    trainer = Seq2SeqTrainer(
        model=tm.model,
        args=args,
        train_dataset=ds,
        eval_dataset=ds.select(range(8)),
        processing_class=tm.tokenizer,
        data_collator=DataCollatorForSeq2Seq(tm.tokenizer, model=tm.model),
        callbacks=[cb],
    )
    trainer.train()
    logged = {h["step"]: h for h in trainer.state.log_history if "eval_geneval_delta_g" in h}
    assert sorted(logged) == [1, 2, 3]
    assert all(
        {"eval_loss", "eval_geneval_accuracy", "eval_geneval_explicit_accuracy"} <= set(h) for h in logged.values()
    )
    gaps = {s: h["eval_geneval_delta_g"] for s, h in logged.items()}
    best = min(gaps.values())
    assert trainer.state.best_metric == pytest.approx(best)
    step = int(re.search(r"checkpoint-(\d+)$", trainer.state.best_model_checkpoint).group(1))
    assert gaps[step] == pytest.approx(best)
    # the Trainer's tokenizer path translates exactly as a TranslationModel given to the callback
    given = GenEvalCallback(tm, "de", data=data, max_new_tokens=12)
    assert given.score(trainer.model) == cb.score(trainer.model)
    assert given.last_hypotheses == cb.last_hypotheses and all(cb.last_hypotheses)


def test_geneval_callback_refuses_what_it_cannot_use(tiny_dir):
    from fairmt.errors import FairmtError
    from fairmt.integrations import GenEvalCallback

    with pytest.raises(FairmtError, match="needs lang="):
        GenEvalCallback(data=_demo_geneval())
    cb = GenEvalCallback(lang="de", data=_demo_geneval())
    with pytest.raises(FairmtError, match="processing_class"):
        cb.score(load_translation_model(str(tiny_dir), "en", "de").model)


@pytest.mark.data
def test_readme_seq2seq_example_runs(tiny_dir, shared_data, tmp_path, monkeypatch, capsys):
    """The example of docs/sweeps.md, with the tiny model for M2M-100 and 6 dev pairs instead of 200."""
    from test_readme_snippets import _python_blocks

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    monkeypatch.chdir(tmp_path)
    block = next(b for b in _python_blocks("## Your own training loop", "sweeps.md") if "GenEvalCallback" in b)
    import ast

    assert len(ast.parse(block).body) <= 12  # a short example: a dozen statements (in the formatter's layout)
    code = block.replace('"facebook/m2m100_418M"', repr(str(tiny_dir))).replace("max_pairs=200", "max_pairs=6")
    code = code.replace("report_to=[]", "report_to=[], use_cpu=True, disable_tqdm=True, save_only_model=True")
    namespace: dict = {}
    exec(compile(code, "docs/sweeps.md (GenEvalCallback example)", "exec"), namespace)  # noqa: S102 - the README's code
    trainer = namespace["trainer"]
    evals = [h for h in trainer.state.log_history if "eval_geneval_explicit_accuracy" in h]
    assert [h["step"] for h in evals] == [2, 4]
    assert trainer.state.best_metric == max(h["eval_geneval_explicit_accuracy"] for h in evals)
    last = capsys.readouterr().out.strip().splitlines()[-1]  # the example's print, after the Trainer's log lines
    assert last.split()[0] == str(trainer.state.best_metric) and "checkpoint-" in last


def test_a_fairmt_trained_model_loads_in_stock_transformers_and_translates_as_fairmt(tiny_dir, tmp_path):
    """GACLTrainer's saved folder read by ``AutoModelForSeq2SeqLM`` / ``AutoTokenizer`` with the usual language
    arguments gives fairmt's translations (``pipeline("translation")`` is gone from transformers 5, whose message
    points to the text-generation pipeline for chat models: the Auto classes are the stock path for NMT models)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipelines

    import fairmt
    from fairmt.data.gacl import GenderContrastiveCollator
    from fairmt.trainers.gacl import GACLConfig, GACLTrainer

    tm = load_translation_model(str(tiny_dir), "en", "de")
    args = GACLConfig(
        output_dir=str(tmp_path / "gacl"),
        max_steps=2,
        per_device_train_batch_size=8,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        remove_unused_columns=False,
        kd_alpha=0.0,
        save_strategy="no",
    )
    trainer = GACLTrainer(
        model=tm.model,
        args=args,
        train_dataset=gacl_dataset(tm, n=16),
        data_collator=GenderContrastiveCollator(tm.tokenizer.pad_token_id),
        processing_class=tm.tokenizer,
    )
    trainer.train()
    trainer.save_model()
    out = tmp_path / "gacl"
    sources = ["The doctor opened the door.", "The nurse lost her car."]
    ours = fairmt.translate(str(out), sources, "en", "de", num_beams=1, max_new_tokens=16)

    tok = AutoTokenizer.from_pretrained(str(out), src_lang="en", tgt_lang="de")
    model = AutoModelForSeq2SeqLM.from_pretrained(str(out)).eval()
    with torch.no_grad():
        ids = model.generate(
            **tok(sources, return_tensors="pt", padding=True),
            num_beams=1,
            max_new_tokens=16,
            forced_bos_token_id=tok.get_lang_id("de"),
        )
    theirs = [s.strip() for s in tok.batch_decode(ids, skip_special_tokens=True)]
    assert theirs == ours and all(ours)
    assert not any("__de__" in s for s in theirs)  # the language tokens are special in the saved tokenizer
    if "translation" in pipelines.SUPPORTED_TASKS:  # transformers 4.x
        pipe = pipelines.pipeline("translation", model=str(out), src_lang="en", tgt_lang="de")
        assert [r["translation_text"] for r in pipe(sources, num_beams=1, max_new_tokens=16)] == ours
