"""spBLEU / chrF++ (fairmt.eval.translation) with a SentencePiece model trained on the fly."""

from __future__ import annotations

import hashlib

import pytest
import sacrebleu

from fairmt.errors import FairmtError
from fairmt.eval import translation as tr

REFS = [
    "Der Arzt hat gestern lange mit der Patientin gesprochen.",
    "Die Lehrerin erklärt den Kindern die Aufgabe.",
    "Wir fahren morgen mit dem Zug nach Berlin.",
    "Das Wetter war am Wochenende sehr schön.",
]
HYPS = [
    "Der Arzt sprach gestern lange mit der Patientin.",
    "Die Lehrerin erklärt den Kindern die Aufgabe.",
    "Morgen fahren wir mit dem Zug nach Berlin.",
    "Am Wochenende war das Wetter schön.",
]


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    import sentencepiece as spm

    out = tmp_path_factory.mktemp("spm")
    sentences = (REFS + HYPS) * 20 + [
        "Ein kleiner Satz über Hunde und Katzen.",
        "The quick brown fox jumps over the lazy dog.",
    ] * 10
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_prefix=str(out / "standin"),
        vocab_size=120,
        model_type="bpe",
        character_coverage=1.0,
    )
    return out / "standin.model"


def test_standin_model_is_labelled_nonstandard(spm_model):
    res = tr.translation_quality(HYPS, REFS, lang_pair="eng_Latn-deu_Latn", spm_model=spm_model)
    assert res.spbleu is None
    assert res.bleu_spm_nonstandard is not None and 0 < res.bleu_spm_nonstandard < 100
    assert res.bleu_label == "spBLEU*"
    assert "flores200" not in res.bleu_signature
    digest = hashlib.sha256(spm_model.read_bytes()).hexdigest()
    assert f"tok:spm-nonstandard:{digest[:12]}" in res.bleu_signature
    assert res.spm_model_sha256 == digest
    assert "not the official" in res.note and "spBLEU*" in str(res)


def test_bleu_uses_the_given_spm_model(spm_model):
    """Hand check: BLEU with the stand-in equals sacrebleu's BLEU on text pre-cut by that model, tokenize=none."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    enc = lambda s: " ".join(sp.encode(s, out_type=str))  # noqa: E731
    expected = sacrebleu.corpus_bleu([enc(h) for h in HYPS], [[enc(r) for r in REFS]], tokenize="none").score
    res = tr.translation_quality(HYPS, REFS, spm_model=spm_model)
    assert res.bleu == pytest.approx(expected, abs=1e-9)
    # and it differs from word-level BLEU, so the SentencePiece cut really happened
    assert res.bleu != pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score, abs=1e-6)
    # sacrebleu's own cache directory is left as it was
    import sacrebleu.tokenizers.tokenizer_spm as tspm
    from sacrebleu.utils import SACREBLEU_DIR

    assert tspm.SACREBLEU_DIR == SACREBLEU_DIR


def test_chrfpp_matches_sacrebleu_and_signature(spm_model):
    res = tr.translation_quality(HYPS, REFS, spm_model=spm_model)
    assert res.chrfpp == pytest.approx(sacrebleu.corpus_chrf(HYPS, [REFS], word_order=2).score)
    assert "nw:2" in res.chrf_signature and res.chrf_signature.startswith("nrefs:1")


def test_perfect_translation_scores_100(spm_model):
    res = tr.translation_quality(REFS, REFS, spm_model=spm_model)
    assert res.bleu == pytest.approx(100.0)
    assert res.chrfpp == pytest.approx(100.0)


def test_official_hash_gives_spbleu(spm_model, monkeypatch):
    """When size and sha256 match the official model, the score is spBLEU with sacrebleu's flores200 signature."""
    data = spm_model.read_bytes()
    monkeypatch.setattr(tr, "FLORES200_SPM_SIZE", len(data))
    monkeypatch.setattr(tr, "FLORES200_SPM_SHA256", hashlib.sha256(data).hexdigest())
    tr._INFO_CACHE.clear()
    try:
        res = tr.translation_quality(HYPS, REFS, spm_model=spm_model)
    finally:
        tr._INFO_CACHE.clear()
    assert res.bleu_label == "spBLEU" and res.spbleu is not None and res.bleu_spm_nonstandard is None
    assert "tok:flores200" in res.bleu_signature
    assert res.note == ""


def test_size_match_but_hash_mismatch_is_nonstandard(spm_model, monkeypatch):
    monkeypatch.setattr(tr, "FLORES200_SPM_SIZE", spm_model.stat().st_size)
    tr._INFO_CACHE.clear()
    try:
        res = tr.translation_quality(HYPS, REFS, spm_model=spm_model)
    finally:
        tr._INFO_CACHE.clear()
    assert res.spbleu is None and res.bleu_label == "spBLEU*"


def test_missing_model_says_how_to_get_it(tmp_path, monkeypatch):
    with pytest.raises(FairmtError, match="--spm-model") as err:
        tr.translation_quality(HYPS, REFS, spm_model=tmp_path / "nope.model")
    assert tr.FLORES200_SPM_URL in str(err.value)
    # the default lookup (sacrebleu's cache) also fails with the same advice when the file is absent
    import sacrebleu.utils

    monkeypatch.delenv(tr.SPM_ENV, raising=False)
    monkeypatch.setattr(sacrebleu.utils, "SACREBLEU_DIR", str(tmp_path))
    with pytest.raises(FairmtError, match="flores200sacrebleuspm"):
        tr.find_spm_model()
    monkeypatch.setenv(tr.SPM_ENV, str(tmp_path / "x.model"))
    with pytest.raises(FairmtError, match=tr.SPM_ENV):
        tr.find_spm_model()


def test_not_a_spm_file(tmp_path):
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"not a model")
    with pytest.raises(FairmtError, match="SentencePiece"):
        tr.translation_quality(HYPS, REFS, spm_model=bad)


def test_count_mismatch(spm_model):
    with pytest.raises(FairmtError, match="3 hypotheses but 4 references"):
        tr.translation_quality(HYPS[:3], REFS, spm_model=spm_model)


def test_lang_pair_parsing():
    assert tr.parse_lang_pair("eng_Latn-deu_Latn") == ("eng_Latn", "deu_Latn")
    for bad in ("en-de", "eng_Latn", "eng_Latn-deu_Latn-fra_Latn", "eng_latn-deu_Latn"):
        with pytest.raises(FairmtError, match="FLORES-200 codes"):
            tr.parse_lang_pair(bad)


def test_flores_reader_and_quality(tmp_path, monkeypatch, spm_model):
    root = tmp_path / "data"
    dt = root / "flores200" / "devtest"
    dt.mkdir(parents=True)
    (dt / "eng_Latn.devtest").write_text("\n".join(["a"] * len(REFS)) + "\n", encoding="utf-8")
    (dt / "deu_Latn.devtest").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    monkeypatch.setenv("FAIRMT_DATA", str(root))
    assert tr.flores_languages() == ["deu_Latn", "eng_Latn"]
    assert tr.read_flores("deu_Latn") == REFS
    with pytest.raises(FairmtError, match="available: deu_Latn, eng_Latn"):
        tr.read_flores("fra_Latn")
    res = tr.flores_quality(HYPS, "eng_Latn-deu_Latn", spm_model=spm_model)
    assert res.n == 4 and res.lang_pair == "eng_Latn-deu_Latn"
    with pytest.raises(FairmtError, match="3 hypotheses but 4"):
        tr.flores_quality(HYPS[:3], "eng_Latn-deu_Latn", spm_model=spm_model)
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "empty"))
    with pytest.raises(FairmtError, match="fairmt data download flores200"):
        tr.read_flores("deu_Latn")


def test_cli_flores(tmp_path, monkeypatch, spm_model, capsys):
    import json

    from fairmt.cli import main

    dt = tmp_path / "data" / "flores200" / "devtest"
    dt.mkdir(parents=True)
    (dt / "eng_Latn.devtest").write_text("\n".join(["x"] * len(REFS)) + "\n", encoding="utf-8")
    (dt / "deu_Latn.devtest").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    hyp = tmp_path / "hyp.de"
    hyp.write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    out = tmp_path / "r.json"
    argv = [
        "eval",
        "flores",
        "--lang-pair",
        "eng_Latn-deu_Latn",
        "--hypotheses",
        str(hyp),
        "--spm-model",
        str(spm_model),
    ]
    assert main(argv + ["--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["spbleu"] is None and data["bleu_spm_nonstandard"] > 0 and data["bleu_label"] == "spBLEU*"
    captured = capsys.readouterr()
    assert "spBLEU*" in captured.out and "tok:spm-nonstandard" in captured.out
    assert "not the official" in captured.err
    # bad inputs: one line each, naming the file / value
    hyp.write_text("\n".join(HYPS[:3]) + "\n", encoding="utf-8")
    assert main(argv) == 2
    assert "hyp.de: the translation file has 3 lines but 4 are expected" in capsys.readouterr().err
    assert (
        main(
            [
                "eval",
                "flores",
                "--lang-pair",
                "eng_Latn-fra_Latn",
                "--hypotheses",
                str(hyp),
                "--spm-model",
                str(spm_model),
            ]
        )
        == 2
    )
    assert "unknown FLORES-200 language 'fra_Latn'" in capsys.readouterr().err
    assert (
        main(["eval", "flores", "--lang-pair", "en-de", "--hypotheses", str(hyp), "--spm-model", str(spm_model)]) == 2
    )
    assert "bad language pair 'en-de'" in capsys.readouterr().err
    assert (
        main(
            [
                "eval",
                "flores",
                "--lang-pair",
                "eng_Latn-deu_Latn",
                "--hypotheses",
                str(hyp),
                "--spm-model",
                str(tmp_path / "missing.model"),
            ]
        )
        == 2
    )
    assert "--spm-model FILE" in capsys.readouterr().err


def test_cli_flores_compat_official_reads_the_text_as_sacrebleu_does(tmp_path, monkeypatch, spm_model, capsys):
    """Issue 54: `--compat official` gives the sacrebleu CLI's numbers on the text as it is (no Unicode
    normalisation); the default reading scores a file with decomposed accents as the composed one."""
    import json

    from fairmt.cli import main

    dt = tmp_path / "data" / "flores200" / "devtest"
    dt.mkdir(parents=True)
    (dt / "eng_Latn.devtest").write_text("\n".join(["x"] * len(REFS)) + "\n", encoding="utf-8")
    (dt / "deu_Latn.devtest").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    import unicodedata

    odd = [unicodedata.normalize("NFD", h) for h in HYPS]  # decomposed accents, as some editors leave them
    hyp = tmp_path / "hyp.de"
    hyp.write_text("\n".join(odd) + "\n", encoding="utf-8")
    argv = [
        "eval",
        "flores",
        "--lang-pair",
        "eng_Latn-deu_Latn",
        "--hypotheses",
        str(hyp),
        "--spm-model",
        str(spm_model),
        "--json",
        "-",
    ]
    assert main(argv + ["--compat", "official"]) == 0
    official = json.loads(capsys.readouterr().out)
    assert official["chrfpp"] == pytest.approx(sacrebleu.corpus_chrf(odd, [REFS], word_order=2).score)
    assert official["chrf_signature"].endswith("|text:raw|compat:official")
    assert main(argv) == 0
    default = json.loads(capsys.readouterr().out)
    assert default["chrfpp"] == pytest.approx(sacrebleu.corpus_chrf(HYPS, [REFS], word_order=2).score)
    assert default["chrfpp"] != pytest.approx(official["chrfpp"])
    with pytest.raises(SystemExit):  # argparse: one line naming the choices
        main(argv + ["--compat", "acl2019"])
