"""The stanza gender detector (issue 12), exercised on stanza Documents built by hand from CoNLL-U annotations —
no model download — and on a real pipeline when a model folder is given (FAIRMT_STANZA_DIR + FAIRMT_STANZA_LANG)."""

from __future__ import annotations

import os

import pytest

stanza = pytest.importorskip("stanza", reason="stanza is not installed (pip install 'fairmt[stanza]')")

from stanza.utils.conll import CoNLL  # noqa: E402

from fairmt.errors import FairmtError  # noqa: E402
from fairmt.eval.winomt import Gender, StanzaDetector, evaluate_winomt, register_detector  # noqa: E402
from fairmt.eval.winomt.profession import TranslatedEntity  # noqa: E402


def _doc(rows: list[tuple[str, str, str]]):
    """A stanza Document from (form, UPOS, FEATS) rows, written as CoNLL-U and read back by stanza itself."""
    lines = [
        f"{i}\t{form}\t{form.lower()}\t{upos}\t_\t{feats}\t0\t{'root' if i == 1 else 'dep'}\t_\t_"
        for i, (form, upos, feats) in enumerate(rows, 1)
    ]
    return CoNLL.conll2doc(input_str="\n".join(lines) + "\n\n")


# Dutch/German-style annotations, as stanza's UD models give them
ANNOTATED = {
    "der Arzt": [
        ("der", "DET", "Case=Nom|Definite=Def|Gender=Masc|Number=Sing|PronType=Art"),
        ("Arzt", "NOUN", "Case=Nom|Gender=Masc|Number=Sing"),
    ],
    "die Ärztin": [
        ("die", "DET", "Case=Nom|Definite=Def|Gender=Fem|Number=Sing|PronType=Art"),
        ("Ärztin", "NOUN", "Case=Nom|Gender=Fem|Number=Sing"),
    ],
    "das Kind": [("das", "DET", "Gender=Neut|Number=Sing"), ("Kind", "NOUN", "Gender=Neut|Number=Sing")],
    "Doctor": [("Doctor", "PROPN", "Number=Sing")],
    "de verpleegster": [("de", "DET", "Definite=Def"), ("verpleegster", "NOUN", "Gender=Fem|Number=Sing")],
    # an ambiguous feature (Gender=Masc,Fem) counts as its first value; the majority still decides
    "la collega brava": [
        ("la", "DET", "Gender=Fem|Number=Sing"),
        ("collega", "NOUN", "Gender=Masc,Fem|Number=Sing"),
        ("brava", "ADJ", "Gender=Fem|Number=Sing"),
    ],
}


class HandBuilt:
    """A stand-in pipeline: text → the hand-built Document; records the texts it was asked about."""

    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, text: str):
        self.calls.append(text)
        return _doc(ANNOTATED[text])


@pytest.mark.parametrize(
    "text,gender",
    [
        ("der Arzt", Gender.male),
        ("die Ärztin", Gender.female),
        ("das Kind", Gender.neutral),
        ("Doctor", Gender.neutral),
        ("de verpleegster", Gender.female),
        ("la collega brava", Gender.female),
    ],
)
def test_gender_from_ud_features(text, gender):
    det = StanzaDetector("xx", pipeline=HandBuilt())
    assert det.detect_text(text) == gender


def test_empty_entity_is_unknown_and_not_parsed():
    nlp = HandBuilt()
    det = StanzaDetector("xx", pipeline=nlp)
    assert det.detect_text("  ") == Gender.unknown and nlp.calls == []


def test_word_gender_parses_feature_strings():
    assert StanzaDetector.word_gender("Case=Nom|Gender=Fem") == Gender.female
    assert StanzaDetector.word_gender("Gender=Neut") == Gender.neutral
    assert StanzaDetector.word_gender(None) is None and StanzaDetector.word_gender("Number=Plur") is None


def test_registered_stanza_detector_scores_winomt_lines(tmp_path, monkeypatch):
    """Register-by-language, as a user would: WinoMT scoring runs the stanza detector on the aligned entities."""
    gold = tmp_path / "en.txt"
    gold.write_text(
        "male\t1\tThe doctor asked the nurse to help him .\tdoctor\n"
        "female\t1\tThe doctor asked the nurse to help her .\tdoctor\n",
        encoding="utf-8",
    )
    docs = {
        "Der Arzt": [("Der", "DET", "Gender=Masc"), ("Arzt", "NOUN", "Gender=Masc")],
        "Die Ärztin": [("Die", "DET", "Gender=Fem"), ("Ärztin", "NOUN", "Gender=Fem")],
    }
    seen: list[str] = []

    def pipeline(text):
        seen.append(text)
        words = text.split()
        rows = [
            next(r for k, v in docs.items() for r in v if r[0] == w)
            if any(w == r[0] for v in docs.values() for r in v)
            else (w, "X", "_")
            for w in words
        ]
        return _doc(rows)

    from fairmt.eval.winomt.detectors import registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # the test language leaves with the test
    monkeypatch.setattr(registry, "_INSTANCES", dict(registry._INSTANCES))
    register_detector("xx-test", lambda: StanzaDetector("xx-test", pipeline=pipeline))
    res = evaluate_winomt(
        ["Der Arzt bat die Pflegekraft , ihm zu helfen .", "Die Ärztin bat die Pflegekraft , ihr zu helfen ."],
        "xx-test",
        gold,
    )
    assert seen, "the stanza pipeline was never called"
    assert res.n == 2 and res.accuracy == 100.0
    assert "StanzaDetector" in res.signature


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(FairmtError, match=r"stanza model for 'nl' is not available in .*FAIRMT_STANZA_DIR"):
        StanzaDetector("nl", model_dir=str(tmp_path))


@pytest.mark.skipif(
    not (os.environ.get("FAIRMT_STANZA_DIR") and os.environ.get("FAIRMT_STANZA_LANG")),
    reason="no stanza model here: set FAIRMT_STANZA_DIR (a stanza model folder) and FAIRMT_STANZA_LANG "
    "(e.g. de) to run the detector on a real pipeline",
)
def test_real_pipeline():
    lang = os.environ["FAIRMT_STANZA_LANG"]
    det = StanzaDetector(lang)
    samples = {
        "de": ("der Arzt", "die Ärztin"),
        "nl": ("de dokter", "de verpleegster"),
        "it": ("il dottore", "la dottoressa"),
        "es": ("el médico", "la médica"),
        "fr": ("le médecin", "la doctoresse"),
    }
    masc, fem = samples.get(lang, samples["de"])
    assert det.detect_text(masc) == Gender.male and det.detect_text(fem) == Gender.female
    words = tuple(masc.split())
    assert det.detect(TranslatedEntity(words, tuple(range(len(words))), words)) == Gender.male
