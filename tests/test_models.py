"""Loading SMaLL-100 / NLLB-200 / M2M-100 (tiny models built from configs, saved and reloaded from disk):
language-token layout of sources and labels, forced BOS, clear errors for unknown codes."""

import pytest
from gacl_helpers import tiny_model_dir

from fairmt.errors import FairmtError
from fairmt.models import detect_family, load_translation_model

SRC, TGT = "The doctor finished her work.", "Die Ärztin beendete ihre Arbeit."


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {arch: tiny_model_dir(root / arch, arch=arch) for arch in ("m2m100", "small100", "nllb")}


def tokens(tm, ids):
    return tm.tokenizer.convert_ids_to_tokens(ids)


@pytest.mark.parametrize("arch,src_first,label_first,forced", [
    ("m2m100", "__en__", "__de__", "__de__"),
    ("small100", "__de__", "▁Die", None),  # SMaLL-100: target code on the source, none on the labels
    ("nllb", "eng_Latn", "deu_Latn", "deu_Latn"),
])
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
