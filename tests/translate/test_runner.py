"""Generation runner: batched beam search with a tiny offline model, on-disk cache, resume after interruption."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from fairmt import model_eval, translate  # noqa: E402
from fairmt.errors import FairmtError  # noqa: E402

PAIRS = [
    ("The doctor is here.", "Der Arzt ist hier."),
    ("The nurse is here.", "Die Krankenschwester ist hier."),
    ("She is a teacher.", "Sie ist Lehrerin."),
    ("He is a teacher.", "Er ist Lehrer."),
    ("The weather is nice today.", "Das Wetter ist heute schön."),
    ("We are going home.", "Wir gehen nach Hause."),
] * 4
SOURCES = [f"{s} {i}" for i, (s, _) in enumerate(PAIRS[:11])]
GEN = dict(num_beams=2, max_new_tokens=6, progress=False)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from fairmt.models.tiny import build_tiny_translation_model

    return build_tiny_translation_model(tmp_path_factory.mktemp("tiny") / "m2m", PAIRS, arch="m2m100", d_model=32)


@pytest.fixture(scope="module")
def tm(tiny_dir):
    from fairmt.models import load_translation_model

    return load_translation_model(str(tiny_dir), src_lang="en", tgt_lang="de")


class _Counting:
    """Wraps ``tm.translate``: counts the sentences it is asked for and can fail on a given call."""

    def __init__(self, tm, fail_on_call: int | None = None):
        self.tm, self.inner, self.fail_on_call = tm, tm.translate, fail_on_call
        self.calls, self.sentences = 0, []

    def __enter__(self):
        self.tm.translate = self
        return self

    def __exit__(self, *exc):
        del self.tm.translate  # back to the class method

    def __call__(self, texts, **kw):
        self.calls += 1
        if self.fail_on_call is not None and self.calls == self.fail_on_call:
            raise KeyboardInterrupt("simulated interruption")
        self.sentences += list(texts)
        return self.inner(texts, **kw)


def test_translates_in_order_like_the_model(tm):
    hyps = translate.generate_translations(tm, SOURCES, "en", "de", batch_size=4, **GEN)
    assert len(hyps) == len(SOURCES) and all(isinstance(h, str) for h in hyps)
    # each output is the model's own beam-search output for that sentence (batching/sorting keep the order)
    single = [tm.translate([s], num_beams=2, max_new_tokens=6)[0] for s in SOURCES[:3]]
    assert hyps[:3] == single


def test_translation_model_batches_longest_first_and_answers_in_the_texts_order(tm, monkeypatch):
    """``TranslationModel.translate`` (the GenEval callback's and back-translation's path) forms its batches from the
    texts sorted longest first and returns each text's own translation at its place: the same as translating it
    alone, unpadded."""
    texts = ["She is.", SOURCES[0], "We are going home to the house by the lake today. 7", "He is. 9", SOURCES[4]]
    alone = [tm.translate([t], num_beams=2, max_new_tokens=6)[0] for t in texts]
    widths, rows, inner = [], [], tm.model.generate

    def spy(**kw):
        widths.append(kw["input_ids"].shape[1])
        rows.append(kw["input_ids"].shape[0])
        return inner(**kw)

    monkeypatch.setattr(tm.model, "generate", spy)
    assert tm.translate(texts, num_beams=2, max_new_tokens=6, batch_size=2) == alone
    assert rows == [2, 2, 1] and widths == sorted(widths, reverse=True) and widths[0] > widths[-1]
    by_length = sorted(texts, key=len, reverse=True)  # the first batch: the two longest texts, padded to the longest
    assert widths[0] == len(tm.encode(by_length[:1])["input_ids"][0])


def test_loads_from_path_and_batches(tiny_dir, tm):
    hyps = translate.generate_translations(str(tiny_dir), SOURCES[:3], "en", "de", batch_size=2, **GEN)
    assert hyps == translate.generate_translations(tm, SOURCES[:3], "en", "de", batch_size=2, **GEN)
    with _Counting(tm) as c:
        translate.generate_translations(tm, SOURCES, "en", "de", batch_size=4, **GEN)
    assert c.calls == 3  # 11 sentences in batches of 4


def test_resume_after_interruption(tm, tmp_path):
    cache = tmp_path / "c.jsonl"
    full = translate.generate_translations(tm, SOURCES, "en", "de", batch_size=3, **GEN)
    with _Counting(tm, fail_on_call=3) as c, pytest.raises(KeyboardInterrupt):
        translate.generate_translations(tm, SOURCES, "en", "de", batch_size=3, cache_path=cache, **GEN)
    assert len(c.sentences) == 6  # two batches finished before the interruption
    assert len(translate.read_cache(cache)) == 6
    with _Counting(tm) as c2:
        resumed = translate.generate_translations(tm, SOURCES, "en", "de", batch_size=3, cache_path=cache, **GEN)
    assert sorted(c2.sentences) == sorted(set(SOURCES) - set(c.sentences))  # only the rest
    assert len(c2.sentences) == len(SOURCES) - 6
    assert resumed == full
    with _Counting(tm) as c3:  # complete cache: nothing translated
        again = translate.generate_translations(tm, SOURCES, "en", "de", batch_size=3, cache_path=cache, **GEN)
    assert c3.calls == 0 and again == full
    lines = cache.read_text().splitlines()
    assert json.loads(lines[0])["num_beams"] == 2 and len(lines) == 1 + len(SOURCES)


def test_changed_source_is_retranslated(tm, tmp_path):
    cache = tmp_path / "c.jsonl"
    translate.generate_translations(tm, SOURCES[:4], "en", "de", cache_path=cache, **GEN)
    changed = SOURCES[:4]
    changed[2] = "A completely different sentence."
    with _Counting(tm) as c:
        translate.generate_translations(tm, changed, "en", "de", cache_path=cache, **GEN)
    assert c.sentences == ["A completely different sentence."]


def test_torn_last_line_is_ignored(tm, tmp_path):
    cache = tmp_path / "c.jsonl"
    full = translate.generate_translations(tm, SOURCES[:5], "en", "de", cache_path=cache, batch_size=1, **GEN)
    text = cache.read_text()
    cache.write_text(text[: len(text) - 10])  # a kill in the middle of the last write
    with _Counting(tm) as c:
        out = translate.generate_translations(tm, SOURCES[:5], "en", "de", cache_path=cache, batch_size=1, **GEN)
    assert len(c.sentences) == 1 and out == full
    assert len(translate.read_cache(cache)) == 5


def test_cache_with_other_settings_is_an_error(tm, tmp_path):
    cache = tmp_path / "c.jsonl"
    translate.generate_translations(tm, SOURCES[:2], "en", "de", cache_path=cache, **GEN)
    with pytest.raises(FairmtError, match="num_beams: cache 2 vs now 3"):
        translate.generate_translations(
            tm, SOURCES[:2], "en", "de", cache_path=cache, num_beams=3, max_new_tokens=6, progress=False
        )
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    with pytest.raises(FairmtError, match="bad.jsonl:1: not a fairmt translation cache"):
        translate.generate_translations(tm, SOURCES[:2], "en", "de", cache_path=bad, **GEN)


def test_bad_model_and_language(tm):
    with pytest.raises(FairmtError, match="cannot translate with a int"):
        translate.generate_translations(3, SOURCES, "en", "de")
    with pytest.raises(FairmtError, match="unknown .* language code 'xx'"):
        translate.generate_translations(tm, SOURCES, "en", "xx", **GEN)


@pytest.mark.parametrize("arch", ["nllb", "small100"])
def test_other_families(tmp_path, arch):
    from fairmt.models import load_translation_model
    from fairmt.models.tiny import build_tiny_translation_model

    path = build_tiny_translation_model(tmp_path / arch, PAIRS, arch=arch, d_model=32)
    tm = load_translation_model(str(path), src_lang="en", tgt_lang="de")
    out = translate.generate_translations(tm, SOURCES[:3], "en", "de", cache_path=tmp_path / "c.jsonl", **GEN)
    assert len(out) == 3 and all("__de__" not in h and "deu_Latn" not in h for h in out)


def _fake_geneval(root, lang="de", n=3):
    d = root / "mt_geneval" / "sentences" / "test"
    d.mkdir(parents=True)
    for g, pron, ref in (("masculine", "He", "Er ist Arzt."), ("feminine", "She", "Sie ist Ärztin.")):
        (d / f"geneval-sentences-{g}-test.en_{lang}.en").write_text(
            "".join(f"{pron} is a doctor {i}.\n" for i in range(n))
        )
        (d / f"geneval-sentences-{g}-test.en_{lang}.{lang}").write_text((ref + "\n") * n)


def test_evaluate_geneval_end_to_end(tm, tmp_path, monkeypatch):
    _fake_geneval(tmp_path / "data")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    res = model_eval.evaluate_geneval(tm, "de", "test", cache_dir=tmp_path / "cache", **GEN)
    assert res.n == 3 and 0.0 <= res.accuracy <= 100.0 and res.signature.startswith("MT-GenEval|")
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        "geneval-test-feminine.en-de.jsonl",
        "geneval-test-masculine.en-de.jsonl",
    ]
    # the scores are those of the evaluator on the cached translations
    from fairmt.eval.geneval import geneval_accuracy

    assert len(translate.read_cache(tmp_path / "cache/geneval-test-masculine.en-de.jsonl")) == 3
    masc, fem = model_eval.translate_geneval(tm, "de", "test", cache_dir=tmp_path / "cache", **GEN)
    assert geneval_accuracy(masc, fem, "de", "test") == res
    sub = model_eval.evaluate_geneval(tm, "de", "test", limit=2, **GEN)
    assert sub.n == 2 and "split:test[:2]" in sub.signature


def test_flores_codes(tm):
    assert translate.flores_to_model_lang(tm, "deu_Latn") == "de"
    with pytest.raises(FairmtError, match="no M2M-100/SMaLL-100 code"):
        translate.flores_to_model_lang(tm, "tir_Ethi")  # Tigrinya: in FLORES-200, not in M2M-100


def test_cli_with_model(tiny_dir, tmp_path, monkeypatch, capsys):
    """`fairmt eval geneval/flores --model`: translate (cached), then score."""
    import sentencepiece as spm

    from fairmt.cli import main

    root = tmp_path / "data"
    _fake_geneval(root)
    dt = root / "flores200" / "devtest"
    dt.mkdir(parents=True)
    (dt / "eng_Latn.devtest").write_text("The doctor is here.\nWe are going home.\n")
    (dt / "deu_Latn.devtest").write_text("Der Arzt ist hier.\nWir gehen nach Hause.\n")
    monkeypatch.setenv("FAIRMT_DATA", str(root))
    gen = ["--num-beams", "2", "--max-new-tokens", "6", "--batch-size", "2", "--cache-dir", str(tmp_path / "cache")]
    assert main(["eval", "geneval", "--lang", "de", "--model", str(tiny_dir), *gen, "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == 3 and {"accuracy", "explicit_accuracy", "delta_g", "explicit_delta_g", "signature"} <= set(data)
    assert len(translate.read_cache(tmp_path / "cache" / "geneval-test-feminine.en-de.jsonl")) == 3

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([t for p in PAIRS for t in p]),
        model_prefix=str(tmp_path / "s"),
        vocab_size=60,
        model_type="bpe",
        character_coverage=1.0,
    )
    assert (
        main(
            [
                "eval",
                "flores",
                "--lang-pair",
                "eng_Latn-deu_Latn",
                "--model",
                str(tiny_dir),
                *gen,
                "--spm-model",
                str(tmp_path / "s.model"),
                "--json",
                "-",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == 2 and data["spbleu"] is None and data["bleu_spm_nonstandard"] is not None
    assert len(translate.read_cache(tmp_path / "cache" / "flores200-devtest.eng_Latn-deu_Latn.jsonl")) == 2


def test_a_cache_of_other_weights_is_refused_not_scored(tiny_dir, tmp_path):
    """Replace a model's weights in its folder (or train it in memory) and rerun with the same cache: the old
    model's translations must not be returned."""
    import shutil

    import torch

    from fairmt.models import load_translation_model

    folder = tmp_path / "model"
    shutil.copytree(tiny_dir, folder)
    cache = tmp_path / "c.jsonl"
    translate.generate_translations(str(folder), SOURCES[:3], "en", "de", cache_path=cache, **GEN)
    assert translate.generate_translations(
        str(folder), SOURCES[:3], "en", "de", cache_path=cache, **GEN
    )  # same: reused
    tm2 = load_translation_model(str(folder), "en", "de")
    with torch.no_grad():
        for p in tm2.model.parameters():
            p.mul_(1.01)
    tm2.model.save_pretrained(folder)  # new weights, same folder
    with pytest.raises(FairmtError, match="another version of the model .*fingerprint"):
        translate.generate_translations(str(folder), SOURCES[:3], "en", "de", cache_path=cache, **GEN)
    # the same model object trained further in memory changes its fingerprint too
    before = translate.model_fingerprint(tm2)
    assert translate.model_fingerprint(tm2) == before  # memoised, unchanged
    with torch.no_grad():
        next(tm2.model.parameters()).add_(0.5)
    assert translate.model_fingerprint(tm2) != before


def test_an_old_format_cache_is_refused_with_advice(tmp_path, tm):
    cache = tmp_path / "old.jsonl"
    cache.write_text(json.dumps({"fairmt_translation_cache": 1, "model": "x"}) + "\n")
    with pytest.raises(FairmtError, match="older fairmt .*delete it"):
        translate.generate_translations(tm, SOURCES[:2], "en", "de", cache_path=cache, **GEN)


def test_two_runs_on_one_cache_are_refused_not_interleaved(tmp_path, tm):
    """A second process that asks for a cache another run holds gets a clear refusal (tested with a real second
    process holding the lock); once the holder exits the cache is usable again."""
    import subprocess
    import sys
    import time

    cache = tmp_path / "shared.jsonl"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from fairmt.translate.cache import lock_cache;"
            " h = lock_cache(Path(sys.argv[1])); print('locked', flush=True); time.sleep(30)",
            str(cache),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(FairmtError, match="in use by another fairmt run"):
            translate.generate_translations(tm, SOURCES[:2], "en", "de", cache_path=cache, **GEN)
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert len(translate.generate_translations(tm, SOURCES[:2], "en", "de", cache_path=cache, **GEN)) == 2
