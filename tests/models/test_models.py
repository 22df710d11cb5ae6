"""Loading SMaLL-100 / NLLB-200 / M2M-100 (tiny models built from configs, saved and reloaded from disk):
language-token layout of sources and labels, forced BOS, clear errors for unknown codes."""

import pytest

from fairmt.errors import FairmtError
from fairmt.models import detect_family, load_translation_model
from gacl_helpers import tiny_model_dir

SRC, TGT = "The doctor finished her work.", "Die Ärztin beendete ihre Arbeit."


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {arch: tiny_model_dir(root / arch, arch=arch) for arch in ("m2m100", "small100", "nllb")}


def tokens(tm, ids):
    return tm.tokenizer.convert_ids_to_tokens(ids)


@pytest.mark.parametrize(
    "arch,src_first,label_first,forced",
    [
        ("m2m100", "__en__", "__de__", "__de__"),
        ("small100", "__de__", "▁Die", None),  # SMaLL-100: target code on the source, none on the labels
        ("nllb", "eng_Latn", "deu_Latn", "deu_Latn"),
    ],
)
def test_language_token_layout(dirs, arch, src_first, label_first, forced):
    tm = load_translation_model(str(dirs[arch]), "en", "de")
    assert detect_family(str(dirs[arch])) == arch == tm.family
    enc = tm.encode([SRC], [TGT])
    src, lab = tokens(tm, enc["input_ids"][0]), tokens(tm, enc["labels"][0])
    assert src[0] == src_first and src[-1] == "</s>"
    assert lab[0] == label_first and lab[-1] == "</s>"
    assert sum(t.startswith("__") and t.endswith("__") for t in lab) == (1 if arch == "m2m100" else 0)
    assert tm.tokenizer.decode(enc["labels"][0], skip_special_tokens=True) == TGT  # no language code left in text
    kw = tm.generate_kwargs()
    if forced is None:
        assert kw == {}
    else:
        assert tokens(tm, [kw["forced_bos_token_id"]]) == [forced]
    # switching the target language changes the right token
    tm.set_languages(tgt_lang="fr")
    enc = tm.encode([SRC], [TGT])
    if arch == "small100":
        assert tokens(tm, enc["input_ids"][0])[0] == "__fr__"
    elif arch == "m2m100":
        assert tokens(tm, enc["labels"][0])[0] == "__fr__"
    else:
        assert tokens(tm, [tm.generate_kwargs()["forced_bos_token_id"]]) == ["fra_Latn"]
    out = tm.translate([SRC], tgt_lang="de", num_beams=2, max_new_tokens=4)
    assert len(out) == 1 and "__de__" not in out[0] and "deu_Latn" not in out[0]


def test_unknown_codes_and_families(dirs, tmp_path):
    with pytest.raises(FairmtError, match=r"unknown M2M-100 language code 'xx'.*valid codes are: af, am"):
        load_translation_model(str(dirs["m2m100"]), "en", "xx")
    with pytest.raises(FairmtError, match=r"unknown NLLB-200 language code 'deu'.*deu_Latn"):
        load_translation_model(str(dirs["nllb"]), "en", "deu")
    tm = load_translation_model(str(dirs["nllb"]), "eng_Latn", "deu_Latn")
    assert tm.src_lang == "eng_Latn"
    with pytest.raises(FairmtError, match="model family"):
        detect_family(str(tmp_path))
    with pytest.raises(FairmtError, match="pair up"):
        tm.encode([SRC, SRC], [TGT])


@pytest.mark.parametrize("arch", ["m2m100", "nllb", "small100"])
@pytest.mark.parametrize("misleading", ["outputs/gacl-small100-en-de", "outputs/gacl-nllb600m-en-de", "m2m100_418M-ft"])
def test_family_comes_from_the_saved_files_not_the_folder_name(dirs, tmp_path, arch, misleading):
    """Each tiny architecture saved under folder names of the other families is detected from its files."""
    import shutil

    from fairmt.models.mt import family_evidence

    target = tmp_path / misleading
    shutil.copytree(dirs[arch], target)
    family, evidence = family_evidence(str(target))
    assert family == arch and "tokenizer_config.json" in evidence
    tm = load_translation_model(str(target), "en", "de")
    assert tm.family == arch
    expected_bos = None if arch == "small100" else tm.generate_kwargs()["forced_bos_token_id"]
    assert tm.model.generation_config.forced_bos_token_id == expected_bos  # Seq2SeqTrainer's generate sees it


def test_forced_bos_follows_the_target_language(dirs):
    tm = load_translation_model(str(dirs["m2m100"]), "en", "de")
    de = tm.model.generation_config.forced_bos_token_id
    tm.set_languages(tgt_lang="fr")
    assert tm.model.generation_config.forced_bos_token_id == tm.tokenizer.get_lang_id("fr") != de


def test_hub_names_fall_back_on_the_name_and_conflicts_are_errors(monkeypatch, tmp_path):
    import huggingface_hub

    from fairmt.models.mt import family_evidence

    def offline(*a, **k):
        raise OSError("offline")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    assert family_evidence("facebook/nllb-200-distilled-600M")[0] == "nllb"
    assert "model name" in family_evidence("alirezamsh/small100")[1]
    with pytest.raises(FairmtError, match="cannot tell the model family"):
        family_evidence("someone/translator")
    cfg = tmp_path / "tokenizer_config.json"
    cfg.write_text('{"tokenizer_class": "M2M100Tokenizer"}')
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda repo, name, **k: str(cfg))
    with pytest.raises(FairmtError, match=r"name says nllb but its tokenizer_config.json names M2M100Tokenizer"):
        family_evidence("someone/nllb-finetuned")
    assert family_evidence("someone/translator") == (
        "m2m100",
        "tokenizer_config.json of someone/translator on the Hub names M2M100Tokenizer",
    )


def test_every_m2m100_language_has_its_flores200_code(dirs):
    """SMaLL-100/M2M-100 evaluations on FLORES-200 cover every language the tokenizer has (the paper's many-to-many
    table needs bg af am bs ceb kk be hr tl ne oc, which were missing), and the codes are real NLLB-200 codes."""
    from fairmt.models.languages import ISO_TO_NLLB, M2M_WITHOUT_FLORES, _nllb_codes, m2m_codes
    from fairmt.translate import flores_to_model_lang

    assert set(ISO_TO_NLLB) == set(m2m_codes()) - set(M2M_WITHOUT_FLORES)
    assert set(ISO_TO_NLLB.values()) <= set(_nllb_codes()) and len(set(ISO_TO_NLLB.values())) == len(ISO_TO_NLLB)
    tm = load_translation_model(str(dirs["small100"]), "en", "de")
    for iso in ("bg", "af", "am", "bs", "ceb", "kk", "be", "hr", "tl", "ne", "oc"):
        assert flores_to_model_lang(tm, ISO_TO_NLLB[iso]) == iso
    with pytest.raises(FairmtError, match="no M2M-100/SMaLL-100 code known for FLORES-200 language 'tir_Ethi'"):
        flores_to_model_lang(tm, "tir_Ethi")  # Tigrinya: in FLORES-200, not in M2M-100


@pytest.mark.parametrize("arch", ["m2m100", "small100", "nllb"])
def test_a_pretokenised_batch_is_the_batch_the_tokenizer_pads(dirs, arch):
    """The tiny model's training batches (fairmt.models.tiny: pairs tokenised once, padded per batch) equal what the
    tokenizer gives for the same sentences with ``padding=True``, the labels' padding as -100, in each target
    language (SMaLL-100 puts it on the source side)."""
    import random

    from fairmt.data.demo_corpus import demo_splits
    from fairmt.models.tiny import _encoded_pairs, padded_batch

    tm = load_translation_model(str(dirs[arch]), "en", "de")
    pairs = [(p.en, p.de) for p in demo_splits()[0][:40]] + [(SRC + " " + SRC * 9, TGT)]  # one cut at 64 tokens
    rng = random.Random(0)
    for lang in ("de", "fr"):
        encoded = _encoded_pairs(tm, lang, pairs)
        for k in (1, 7, 16):
            idx = rng.sample(range(len(pairs)), k) + [len(pairs) - 1]
            got = padded_batch(tm.tokenizer, [encoded[i] for i in idx])
            tm.set_languages(tgt_lang=lang)
            want = tm.encode([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], 64, True, "pt")
            want["labels"][want["labels"] == tm.tokenizer.pad_token_id] = -100
            assert set(got) == set(want) and got["input_ids"].shape[1] == 64
            for key in got:
                assert got[key].dtype == want[key].dtype and got[key].tolist() == want[key].tolist(), (lang, k, key)
