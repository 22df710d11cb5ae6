"""Translation backends (hf, ctranslate2, causal-lm) behind one interface, the runner's use of them, and sharding."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from fairmt import translate  # noqa: E402
from fairmt.errors import FairmtError  # noqa: E402
from fairmt.translate import get_backend  # noqa: E402

try:
    import ctranslate2  # noqa: F401

    HAS_CT2 = True
except ImportError:
    HAS_CT2 = False
needs_ct2 = pytest.mark.skipif(not HAS_CT2, reason="ctranslate2 not installed (pip install 'fairmt[fast]')")

_WORDS = (
    "the doctor nurse teacher lawyer baker driver clerk is was here there today at home in city "
    "hospital school she he they we like likes good new old small big red green"
).split()


def _sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 9))).capitalize() + "." for _ in range(n)]


TRAIN = _sentences(300, 0)
HELD_OUT = _sentences(40, 1)
GEN = dict(num_beams=4, max_new_tokens=40, progress=False)


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory):
    """A tiny M2M-100 trained briefly on a copy task: a peaked model, as real ones are (it copies most held-out
    sentences exactly, checked below). With transformers' init_std=0.02 the model was still on its pre-alignment
    plateau at 150 steps (a target-side language model: "The clerk clerk we we we.", whose near-ties let float
    noise pick different beams in either engine); init_std=0.1 leaves the plateau by step ~100."""
    from fairmt.models.tiny import build_tiny_translation_model, train_tiny_translation_model

    path = tmp_path_factory.mktemp("trained") / "m2m"
    pairs = [(s, s) for s in TRAIN]
    build_tiny_translation_model(
        path,
        pairs,
        d_model=48,
        ffn_dim=96,
        encoder_layers=2,
        decoder_layers=1,
        vocab_size=200,
        dropout=0.0,
        init_std=0.1,
    )
    return train_tiny_translation_model(path, pairs, steps=300, batch_size=16)


@pytest.fixture(autouse=True)
def _ct2_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FAIRMT_CACHE", str(tmp_path_factory.getbasetemp() / "fairmt-cache"))


def test_get_backend_refuses_unknown_names_and_options(trained_dir):
    with pytest.raises(FairmtError, match="unknown translation backend 'marian'.*hf, ctranslate2, openai, causal-lm"):
        get_backend("marian", str(trained_dir))
    with pytest.raises(FairmtError, match="backend 'hf' does not take compute_type"):
        get_backend("hf", str(trained_dir), compute_type="int8")
    with pytest.raises(FairmtError, match="the causal-lm backend takes no family"):
        translate.generate_translations(str(trained_dir), ["x"], "en", "de", backend="causal-lm", family="m2m100")


def test_hf_backend_is_the_default_and_named_in_the_cache(trained_dir, tmp_path):
    from fairmt.models import load_translation_model

    tm = load_translation_model(str(trained_dir), "en", "de")
    cache = tmp_path / "c.jsonl"
    out = translate.generate_translations(
        str(trained_dir), HELD_OUT[:6], "en", "de", backend="hf", cache_path=cache, **GEN
    )
    assert out == tm.translate(HELD_OUT[:6], num_beams=4, max_new_tokens=40)
    # the fixture has learnt its copy task (the backend comparisons below need a peaked model, not near-ties)
    assert sum(a == b for a, b in zip(HELD_OUT[:6], out)) >= 4, out
    head = json.loads(cache.read_text().splitlines()[0])
    assert head["backend"] == "hf" and head["fingerprint"] == translate.model_fingerprint(tm)
    # a cache written before backends existed (no "backend" key) still counts as hf
    lines = cache.read_text().splitlines()
    del head["backend"]
    cache.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    assert translate.generate_translations(tm, HELD_OUT[:6], "en", "de", cache_path=cache, **GEN) == out


@needs_ct2
def test_ct2_float32_equals_hf_beam_search(trained_dir, tmp_path):
    hf = translate.generate_translations(str(trained_dir), HELD_OUT, "en", "de", batch_size=8, **GEN)
    cache = tmp_path / "ct2.jsonl"
    ct = translate.generate_translations(
        str(trained_dir), HELD_OUT, "en", "de", batch_size=8, backend="ctranslate2", cache_path=cache, **GEN
    )
    share = sum(a == b for a, b in zip(hf, ct)) / len(hf)
    assert share >= 0.95, list(zip(hf, ct))
    head = json.loads(cache.read_text().splitlines()[0])
    assert head["backend"] == "ctranslate2" and head["fingerprint"].endswith("-float32")
    # the cache of one backend is never read as another's
    with pytest.raises(FairmtError, match="made with the ctranslate2 backend, not hf"):
        translate.generate_translations(str(trained_dir), HELD_OUT, "en", "de", cache_path=cache, **GEN)


@needs_ct2
@pytest.mark.parametrize("arch", ["m2m100", "nllb", "small100"])
def test_ct2_follows_each_family_and_counts_max_new_tokens_like_hf(arch, tmp_path):
    """Language tokens (target prefix for M2M-100/NLLB, target code on the source for SMaLL-100) and the length
    limit: at a few new tokens, every output equals transformers' (so the counting is the same). The models are
    trained a little: a random model's near-ties let padding noise pick different tokens in either engine."""
    from fairmt.models.tiny import build_tiny_translation_model, train_tiny_translation_model

    pairs = [(s, s) for s in TRAIN]
    path = build_tiny_translation_model(
        tmp_path / arch, pairs, arch=arch, d_model=32, ffn_dim=64, vocab_size=150, dropout=0.0
    )
    train_tiny_translation_model(path, pairs, steps=60)
    for max_new in (3, 6):
        kw = dict(num_beams=3, max_new_tokens=max_new, progress=False)
        hf = translate.generate_translations(str(path), HELD_OUT[:12], "en", "de", **kw)
        ct = translate.generate_translations(str(path), HELD_OUT[:12], "en", "de", backend="ctranslate2", **kw)
        assert ct == hf
        assert all("__de__" not in t and "deu_Latn" not in t for t in ct)


@needs_ct2
def test_ct2_conversion_is_keyed_by_content_not_path(trained_dir, tmp_path):
    from fairmt.translate.backends.ct2 import cache_root

    root = cache_root()
    a = get_backend("ctranslate2", str(trained_dir))
    copy = tmp_path / "same-weights-elsewhere"
    shutil.copytree(trained_dir, copy)
    b = get_backend("ctranslate2", str(copy))
    assert a.path == b.path and a.path.parent == root and a.fingerprint() == b.fingerprint()
    import torch

    from fairmt.models import load_translation_model

    tm = load_translation_model(str(copy), "en", "de")
    with torch.no_grad():
        next(tm.model.parameters()).add_(0.01)
    tm.model.save_pretrained(copy)  # retrained in place: a new conversion
    c = get_backend("ctranslate2", str(copy))
    assert c.path != a.path and (c.path / "model.bin").is_file()
    # an in-memory model is saved (with its tokenizer), hashed and converted as well; the same conversion is reused
    d = get_backend("ctranslate2", tm)
    assert get_backend("ctranslate2", tm).path == d.path and (d.path / "model.bin").is_file()
    assert d.translate(HELD_OUT[:2], "en", "de", num_beams=2, max_new_tokens=10) == c.translate(
        HELD_OUT[:2], "en", "de", num_beams=2, max_new_tokens=10
    )
    # the temporary copy of the in-memory weights is removed once the model is gone (it stayed in /tmp before)
    source = Path(tm._fairmt_ct2_folder[1])
    assert source.is_dir()
    del tm, d
    import gc

    gc.collect()
    assert not source.exists()


@needs_ct2
def test_ct2_int8_and_token_batches(trained_dir):
    f32 = get_backend("ctranslate2", str(trained_dir))
    i8 = get_backend("ctranslate2", str(trained_dir), compute_type="int8", max_batch_size=64, batch_type="tokens")
    assert i8.path == f32.path and i8.fingerprint() != f32.fingerprint()
    out = i8.translate(HELD_OUT[:8], "en", "de", num_beams=4, max_new_tokens=40, batch_size=8)
    ref = f32.translate(HELD_OUT[:8], "en", "de", num_beams=4, max_new_tokens=40, batch_size=8)
    assert len(out) == 8 and sum(a == b for a, b in zip(out, ref)) >= 5  # int8 mostly agrees with float32
    with pytest.raises(FairmtError, match="unknown compute type 'int4'"):
        get_backend("ctranslate2", str(trained_dir), compute_type="int4")
    with pytest.raises(FairmtError, match="unknown batch type"):
        get_backend("ctranslate2", str(trained_dir), batch_type="sentences")


def test_ct2_missing_package_names_the_extra(trained_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import fails as if not installed
    with pytest.raises(FairmtError, match=r"pip install 'fairmt\[fast\]'"):
        get_backend("ctranslate2", str(trained_dir))


def test_causal_lm_backend_prompts_through_the_chat_template(tmp_path):
    from fairmt.models.tiny import build_tiny_causal_lm
    from fairmt.translate.backends.causal_lm import CausalLMTranslator

    path = build_tiny_causal_lm(tmp_path / "llm", TRAIN[:50] + ["Translate the following sentence into German."])
    tr = get_backend("causal-lm", str(path))
    assert isinstance(tr, CausalLMTranslator)
    assert tr.prompts(["The doctor is here."], "en", "de") == [
        "<|user|>Translate the following sentence into German. The doctor is here.</s><|assistant|>"
    ]
    cache = tmp_path / "c.jsonl"
    kw = dict(num_beams=2, max_new_tokens=5, progress=False)
    out = translate.generate_translations(tr, HELD_OUT[:5], "en", "de", cache_path=cache, batch_size=2, **kw)
    assert len(out) == 5 and all(isinstance(t, str) for t in out)
    # batching and left padding do not change a sentence's output
    assert out[:1] == tr.translate(HELD_OUT[:1], "en", "de", num_beams=2, max_new_tokens=5)
    head = json.loads(cache.read_text().splitlines()[0])
    assert head["backend"] == "causal-lm" and head["family"] == ""
    other = get_backend("causal-lm", str(path), prompt_template="{SENT} in {LANG}:")
    assert other.fingerprint() != tr.fingerprint()
    with pytest.raises(FairmtError, match="has no \\{SENT\\}"):
        get_backend("causal-lm", str(path), prompt_template="Translate into {LANG}.")
    (path / "tokenizer_config.json").write_text(
        json.dumps(
            {k: v for k, v in json.loads((path / "tokenizer_config.json").read_text()).items() if k != "chat_template"}
        )
    )
    for f in path.glob("chat_template.j*"):
        f.unlink()
    with pytest.raises(FairmtError, match="no chat template"):
        get_backend("causal-lm", str(path))


def test_cli_backend_flags(trained_dir, tmp_path, monkeypatch, capsys):
    from fairmt.cli import main

    root = tmp_path / "data"
    d = root / "mt_geneval" / "sentences" / "test"
    d.mkdir(parents=True)
    for g, pron, ref in (("masculine", "He", "Er ist Arzt."), ("feminine", "She", "Sie ist Ärztin.")):
        (d / f"geneval-sentences-{g}-test.en_de.en").write_text("".join(f"{pron} is a doctor {i}.\n" for i in range(3)))
        (d / f"geneval-sentences-{g}-test.en_de.de").write_text((ref + "\n") * 3)
    monkeypatch.setenv("FAIRMT_DATA", str(root))
    gen = ["--num-beams", "2", "--max-new-tokens", "8", "--cache-dir", str(tmp_path / "cache")]
    assert main(["eval", "geneval", "--lang", "de", "--model", str(trained_dir), *gen, "--compute-type", "int8"]) == 2
    assert "--compute-type is for --backend ctranslate2, not hf" in capsys.readouterr().err
    assert main(["eval", "geneval", "--lang", "de", "--backend", "openai", *gen]) == 2
    assert "needs --api-model" in capsys.readouterr().err
    if HAS_CT2:
        assert (
            main(
                [
                    "eval",
                    "geneval",
                    "--lang",
                    "de",
                    "--model",
                    str(trained_dir),
                    "--backend",
                    "ctranslate2",
                    *gen,
                    "--json",
                    "-",
                ]
            )
            == 0
        )
        assert json.loads(capsys.readouterr().out)["n"] == 3
        head = json.loads((tmp_path / "cache" / "geneval-test-masculine.en-de.jsonl").read_text().splitlines()[0])
        assert head["backend"] == "ctranslate2"
        # batching by tokens from the command line gives the same translations (a new cache: other settings)
        assert (
            main(
                [
                    "eval",
                    "geneval",
                    "--lang",
                    "de",
                    "--model",
                    str(trained_dir),
                    "--backend",
                    "ctranslate2",
                    "--max-batch-tokens",
                    "16",
                    "--num-beams",
                    "2",
                    "--max-new-tokens",
                    "8",
                    "--cache-dir",
                    str(tmp_path / "cache-tokens"),
                    "--json",
                    "-",
                ]
            )
            == 0
        )
        tok = json.loads(capsys.readouterr().out)
        ref = json.loads(
            (tmp_path / "cache").joinpath("geneval-test-masculine.en-de.jsonl").read_text().splitlines()[1]
        )
        got = json.loads(
            (tmp_path / "cache-tokens").joinpath("geneval-test-masculine.en-de.jsonl").read_text().splitlines()[1]
        )
        assert tok["n"] == 3 and got["t"] == ref["t"]
    assert main(["eval", "geneval", "--lang", "de", "--model", str(trained_dir), "--max-batch-tokens", "16", *gen]) == 2
    assert "--max-batch-tokens is for --backend ctranslate2" in capsys.readouterr().err


SHARD_SCRIPT = """
import json, os, sys
import torch
torch.set_num_threads(1)
from fairmt.translate import generate_translations
model, sources, cache, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
hyps = generate_translations(model, sources, "en", "de", num_beams=3, max_new_tokens=30, batch_size=3,
                             cache_path=cache, progress=False)
open(out + os.environ["RANK"], "w").write(json.dumps(hyps))
"""


@pytest.mark.slow
def test_two_processes_shard_and_match_one(trained_dir, tmp_path, torchrun_pool):
    sources = HELD_OUT[:14]
    single = translate.generate_translations(
        str(trained_dir), sources, "en", "de", num_beams=3, max_new_tokens=30, batch_size=3, progress=False
    )
    script = tmp_path / "shard.py"
    script.write_text(SHARD_SCRIPT)
    cache = tmp_path / "sharded.jsonl"
    torchrun_pool.run(script, trained_dir, json.dumps(sources), cache, tmp_path / "out", cwd=tmp_path, timeout=240)
    for rank in (0, 1):
        assert json.loads((tmp_path / f"out{rank}").read_text()) == single
    lines = cache.read_text().splitlines()
    assert json.loads(lines[0])["fairmt_translation_cache"] == translate.CACHE_FORMAT
    assert sorted(json.loads(x)["i"] for x in lines[1:]) == list(range(len(sources)))  # each once: rank 0 wrote
    assert (
        translate.generate_translations(
            str(trained_dir), sources, "en", "de", num_beams=3, max_new_tokens=30, cache_path=cache, progress=False
        )
        == single
    )
