"""WinoMT's Polish and Czech gender detectors on real analysers (morfeusz2 + SGJP; spaCy cs_core_news_sm), against
the suffix rules they replace: real inflected profession forms written for these tests (nominative and oblique
cases, demonstratives, masculine nouns in -a, adjectival nouns, Czech masculine genitives in -e, feminine -ka/-ová),
and whole WinoMT-style sentences through the aligner."""

import sys
import warnings

import pytest

import needs
from fairmt.errors import FairmtError
from fairmt.eval.winomt import Gender, evaluate_winomt, get_detector
from fairmt.eval.winomt.detectors import (
    SlavicRuleDetector,
    czech_detector,
    polish_detector,
)
from fairmt.eval.winomt.evaluate import WinoMTGold
from fairmt.eval.winomt.io import parse_gold_lines
from fairmt.eval.winomt.profession import TranslatedEntity

M, F, N, U = Gender.male, Gender.female, Gender.neutral, Gender.unknown

# ------------------------------------------------------------------------------------------------ gold forms
# Entity strings as the aligner hands them over (the profession, often with its demonstrative), gold gender.
PL_FORMS = [
    # masculine: consonant stems in all cases
    ("lekarz", M), ("lekarza", M), ("lekarzowi", M), ("lekarzem", M), ("tego lekarza", M), ("temu lekarzowi", M),
    ("prawnika", M), ("prawnikowi", M), ("mechanik", M), ("mechanika", M), ("tego mechanika", M),
    ("kucharzowi", M), ("nauczyciela", M), ("pielęgniarza", M), ("fryzjera", M), ("kasjerowi", M),
    ("sprzątaczem", M), ("piekarzowi", M), ("ochroniarzem", M), ("tego rolnika", M), ("asystenta", M),
    ("kierownika", M), ("szefem", M), ("dyrektora", M), ("dyrektorem", M), ("projektanta", M), ("tym analitykiem", M),
    # masculine nouns in -a (m1 in SGJP)
    ("kierowca", M), ("ten kierowca", M), ("tego kierowcy", M), ("kierowcę", M), ("temu kierowcy", M),
    ("kierowcą", M), ("sprzedawca", M), ("tego sprzedawcę", M), ("sprzedawcy", M), ("poeta", M), ("poecie", M),
    ("tego poetę", M), ("dozorcy", M), ("doradcy", M), ("sędziego", M), ("recepcjonista", M),
    # adjectival nouns
    ("księgowy", M), ("księgowego", M), ("ten księgowy", M), ("księgowemu", M), ("tym księgowym", M),
    ("woźnego", M), ("budowniczego", M),
    # masculine-form titles (SGJP also lists an indeclinable feminine)
    ("sekretarz", M), ("sekretarza", M), ("ten sekretarz", M), ("dyrektor", M), ("tego prezesa", M),
    # feminine: -ka, -ini/-yni, -owa
    ("lekarka", F), ("lekarki", F), ("lekarce", F), ("lekarką", F), ("tę lekarkę", F), ("ta lekarka", F),
    ("kierowczyni", F), ("ta kierowczyni", F), ("sprzedawczyni", F), ("sprzedawczynię", F), ("poetka", F),
    ("poetki", F), ("prawniczka", F), ("prawniczce", F), ("sekretarka", F), ("sekretarce", F),
    ("pielęgniarka", F), ("pielęgniarki", F), ("pielęgniarkę", F), ("kucharce", F), ("nauczycielki", F),
    ("fryzjerką", F), ("kasjerka", F), ("sprzątaczce", F), ("szefowa", F), ("szefowej", F), ("szefową", F),
    ("dyrektorka", F), ("projektantką", F), ("asystentce", F), ("ta rolniczka", F), ("tę piekarkę", F),
    ("doradczyni", F), ("krawcowa", F), ("krawcowej", F), ("tej ochroniarki", F), ("analityczka", F),
    # adjectival nouns
    ("księgowa", F), ("księgowej", F), ("księgową", F), ("ta księgowa", F), ("tej księgowej", F), ("woźna", F),
    # pani + masculine-form title or noun
    ("pani sekretarz", F), ("pani dyrektor", F), ("tej pani dyrektor", F), ("pani prezes", F),
    ("panią sekretarz", F), ("pani kierowca", F),
]  # fmt: skip

CS_FORMS = [
    # masculine, incl. genitives/accusatives in -e
    ("lékař", M), ("lékaře", M), ("lékaři", M), ("lékařem", M), ("ten lékař", M), ("toho lékaře", M),
    ("tomu lékaři", M), ("řidič", M), ("řidiče", M), ("řidičem", M), ("toho řidiče", M), ("prodavač", M),
    ("prodavače", M), ("prodavačem", M), ("tomu prodavači", M), ("učitel", M), ("učitele", M), ("kuchaře", M),
    ("soudce", M), ("soudcem", M), ("toho soudce", M), ("správce", M), ("správcem", M), ("právníka", M),
    ("právníkovi", M), ("právníkem", M), ("mechanika", M), ("toho mechanika", M), ("sekretáře", M),
    ("uklízeče", M), ("zemědělce", M), ("zemědělcem", M), ("pekaře", M), ("kadeřníkovi", M), ("ředitele", M),
    ("řediteli", M), ("poradce", M), ("hlídače", M), ("ošetřovatele", M), ("návrháře", M),
    # adjectival nouns: gender from the demonstrative or the ending
    ("ten účetní", M), ("toho účetního", M), ("tomu účetnímu", M), ("účetního", M), ("ten pokladní", M),
    ("toho pokladního", M), ("ten vedoucí", M), ("ten krejčí", M),
    # feminine: -ka, -kyně, -ice, -ová
    ("lékařka", F), ("lékařky", F), ("lékařce", F), ("lékařkou", F), ("lékařku", F), ("ta lékařka", F),
    ("té lékařky", F), ("tu lékařku", F), ("řidička", F), ("řidičky", F), ("řidičkou", F), ("prodavačka", F),
    ("prodavačce", F), ("té prodavačce", F), ("učitelka", F), ("učitelku", F), ("kuchařka", F), ("kuchařkou", F),
    ("soudkyně", F), ("soudkyni", F), ("správkyně", F), ("právnička", F), ("právničce", F), ("sekretářka", F),
    ("sekretářku", F), ("uklízečka", F), ("uklízečky", F), ("pekařka", F), ("kadeřnice", F), ("kadeřnici", F),
    ("ředitelka", F), ("ředitelky", F), ("poradkyně", F), ("návrhářka", F), ("ošetřovatelka", F),
    ("krejčová", F), ("paní Nováková", F), ("Dvořáková", F), ("zdravotní sestra", F), ("zdravotní sestře", F),
    # adjectival nouns
    ("ta účetní", F), ("té účetní", F), ("tu účetní", F), ("tou účetní", F), ("ta pokladní", F), ("té vedoucí", F),
]  # fmt: skip

# A second list, written after the detectors were built and first measured (other professions and forms; the
# Czech tagger is weaker on words without context, hence the lower floor).
PL_SECOND = [
    ("bibliotekarz", M),
    ("bibliotekarki", F),
    ("bibliotekarzowi", M),
    ("tej bibliotekarce", F),
    ("tego piekarza", M),
    ("piekarce", F),
    ("hydraulikowi", M),
    ("hydrauliczka", F),
    ("stolarza", M),
    ("tę stolarkę", F),
    ("ten przewodnik", M),
    ("przewodniczką", F),
    ("tłumacza", M),
    ("tłumaczce", F),
    ("wykonawca", M),
    ("wykonawcy", M),
    ("tego zarządcę", M),
    ("zarządczyni", F),
    ("ta fotografka", F),
    ("fotografem", M),
    ("tego psychologa", M),
    ("pani psycholog", F),
    ("psycholożka", F),
    ("inżynierowi", M),
    ("inżynierka", F),
    ("kelnerem", M),
    ("kelnerce", F),
    ("strażnika", M),
    ("strażniczki", F),
    ("tego sprzątacza", M),
    ("tym urzędnikiem", M),
    ("urzędniczkę", F),
    ("pracownica", F),
    ("pracownika", M),
    ("ta redaktorka", F),
    ("redaktora", M),
    ("pani redaktor", F),
    ("budowlaniec", M),
    ("policjantce", F),
    ("policjanta", M),
    ("lekarzy", M),
    ("opiekunki", F),
    ("opiekunowi", M),
    ("ta dentystka", F),
    ("dentysty", M),
    ("tego dentystę", M),
    ("architektki", F),
    ("architekta", M),
    ("kasjerkę", F),
    ("stażysta", M),
]
CS_SECOND = [
    ("knihovník", M),
    ("knihovnice", F),
    ("knihovníka", M),
    ("té knihovnici", F),
    ("pekařem", M),
    ("pekařce", F),
    ("instalatéra", M),
    ("instalatérka", F),
    ("truhláře", M),
    ("tu truhlářku", F),
    ("ten průvodce", M),
    ("průvodkyní", F),
    ("překladatele", M),
    ("překladatelce", F),
    ("zedníka", M),
    ("toho zedníka", M),
    ("správce", M),
    ("správkyni", F),
    ("ta fotografka", F),
    ("fotografem", M),
    ("toho psychologa", M),
    ("psycholožka", F),
    ("inženýrovi", M),
    ("inženýrka", F),
    ("číšníkem", M),
    ("číšnici", F),
    ("strážníka", M),
    ("strážnice", F),
    ("uklízečem", M),
    ("tím úředníkem", M),
    ("úřednici", F),
    ("pracovnice", F),
    ("pracovníka", M),
    ("ta redaktorka", F),
    ("redaktora", M),
    ("policistce", F),
    ("policisty", M),
    ("ošetřovatelky", F),
    ("ten zubař", M),
    ("zubařka", F),
    ("architektky", F),
    ("architekta", M),
    ("pokladní Nováková", F),
    ("toho vrátného", M),
    ("té vrátné", F),
    ("stážistou", M),
    ("tou stážistkou", F),
    ("soudci", M),
    ("soudkyní", F),
    ("vedoucího", M),
]


def _accuracy(detector, forms):
    wrong = [(text, gold, detector(text)) for text, gold in forms if detector(text) != gold]
    return 100 * (len(forms) - len(wrong)) / len(forms), wrong


def _report(lang, detector, forms, rules_lang=None):
    acc, wrong = _accuracy(detector, forms)
    rules, rules_wrong = _accuracy(SlavicRuleDetector(rules_lang or lang), forms)
    print(
        f"\n{lang}: {detector.signature_name} {acc:.1f} % of {len(forms)} forms correct "
        f"(suffix rules: {rules:.1f} %); wrong: {wrong}; rules wrong: {len(rules_wrong)}"
    )
    return acc, wrong


def test_lists_are_large_and_balanced():
    for forms in (PL_FORMS, CS_FORMS, PL_SECOND, CS_SECOND):
        assert len(forms) >= 40
        assert len({t for t, _ in forms}) == len(forms)  # no duplicates
        assert min(sum(g == x for _, g in forms) for x in (M, F)) >= 20


# ------------------------------------------------------------------------------------------------ Polish
@pytest.fixture(scope="module")
def morfeusz():
    pytest.importorskip("morfeusz2", reason="morfeusz2 is not installed: pip install 'fairmt[morph]'")
    from fairmt.eval.winomt.detectors import MorfeuszDetector

    return MorfeuszDetector()


def test_polish_morfeusz_accuracy(morfeusz):
    acc, wrong = _report("pl", morfeusz, PL_FORMS)
    assert acc >= 95, wrong


def test_polish_morfeusz_accuracy_second_list(morfeusz):
    acc, wrong = _report("pl (second list)", morfeusz, PL_SECOND, "pl")
    assert acc >= 95, wrong


def test_polish_default_detector_is_morfeusz_with_versioned_signature(morfeusz):
    import morfeusz2

    det = get_detector("pl")
    assert type(det).__name__ == "MorfeuszDetector"
    assert det.signature_name == f"morfeusz2-{morfeusz2.__version__}+SGJP-{morfeusz2.Morfeusz().dict_id()}"
    assert get_detector("pl", "acl2019") is det  # no 2019 Polish evaluation to reproduce: same detector


@pytest.mark.parametrize(
    "text,expected",
    [("", U), ("i", N), ("powiedział", N), ("dziecko", N), ("kierowca,", M), ("Pani", F), ("Sekretarz", M),
     ("sędzia", M), ("xyzlekarka", F)],  # unknown word → suffix rules
)  # fmt: skip
def test_polish_edge_cases(morfeusz, text, expected):
    assert morfeusz(text) == expected


def test_polish_context_only_where_the_entity_is_ambiguous(morfeusz):
    words = "Zapytał panią dyrektor o drogę .".split()
    assert morfeusz.detect(TranslatedEntity(("dyrektor",), (2,), tuple(words))) == F  # pani just before
    words = "Zapytał tego sekretarz o drogę .".split()  # (ungrammatical) demonstrative decides an ambiguous title
    assert morfeusz.detect(TranslatedEntity(("sekretarz",), (2,), tuple(words))) == M
    words = "Zapytała ta lekarza o drogę .".split()  # an unambiguous entity ignores its neighbour
    assert morfeusz.detect(TranslatedEntity(("lekarza",), (2,), tuple(words))) == M


def test_polish_falls_back_to_rules_without_morfeusz(monkeypatch):
    monkeypatch.setitem(sys.modules, "morfeusz2", None)  # import morfeusz2 → ImportError
    with pytest.warns(UserWarning, match="morfeusz2.*fall back to suffix rules"):
        det = polish_detector()
    assert isinstance(det, SlavicRuleDetector) and det.signature_name == "slavic-rules-pl"
    assert det("lekarka") == F and det("tego lekarza") == M
    from fairmt.eval.winomt.detectors import MorfeuszDetector

    with pytest.raises(FairmtError, match="pip install 'fairmt\\[morph\\]'"):
        MorfeuszDetector()


# ------------------------------------------------------------------------------------------------ Czech
@pytest.fixture(scope="module")
def czech():
    needs.require("cs")  # the Czech analyser cs-core-news-sm 0.2.1 (tests/support/needs.py)
    from fairmt.eval.winomt.detectors import CzechSpacyDetector

    return CzechSpacyDetector()


def test_czech_spacy_accuracy(czech):
    acc, wrong = _report("cs", czech, CS_FORMS)
    assert acc >= 95, wrong


def test_czech_spacy_accuracy_second_list(czech):
    acc, wrong = _report("cs (second list)", czech, CS_SECOND, "cs")
    assert acc >= 80, wrong


# nouns the small tagger gets wrong without context (genitives in -a, dative -ce, ...), in a sentence
CS_HARD = [
    ("Požádal jsem instalatéra o pomoc .", "instalatéra", M), ("Redaktor pochválil architekta za návrh .", "architekta", M),
    ("Architektka pochválila redaktora za článek .", "redaktora", M), ("Poděkoval překladatelce za pomoc .", "překladatelce", F),
    ("Zavolali ošetřovatelky z nemocnice .", "ošetřovatelky", F), ("Mluvil se stážistou o práci .", "stážistou", M),
    ("Dal pekařce peníze .", "pekařce", F), ("Viděl číšnici v kavárně .", "číšnici", F),
    ("Zeptal se mechanika na auto .", "mechanika", M), ("Zaplatil kadeřnici za střih .", "kadeřnici", F),
    ("Najal zemědělce na sklizeň .", "zemědělce", M), ("Pozval architektky na večeři .", "architektky", F),
    ("Architektka mluvila s lékařem .", "Architektka", F), ("Zemědělec potkal prodavačku .", "prodavačku", F),
]  # fmt: skip


def test_czech_tagging_in_context_beats_the_entity_alone(czech):
    from fairmt.eval.winomt.detectors import CzechSpacyDetector

    alone = CzechSpacyDetector(context=False)
    assert alone.signature_name == "spacy-cs_core_news_sm-0.2.1"
    scores = {}
    for name, det in (("context", czech), ("alone", alone), ("rules", SlavicRuleDetector("cs"))):
        right = 0
        for sentence, word, gold in CS_HARD:
            words = tuple(sentence.split())
            k = words.index(word)
            right += det.detect(TranslatedEntity((word,), (k,), words)) == gold
        scores[name] = right
    print(f"\ncs hard nouns in sentences ({len(CS_HARD)}): {scores}")
    assert scores["context"] >= scores["alone"] + 3 and scores["context"] >= 9


def test_czech_default_detector_and_signature(czech):
    det = get_detector("cs")
    assert type(det).__name__ == "CzechSpacyDetector"
    assert det.signature_name == "spacy-cs_core_news_sm-0.2.1+context"


@pytest.mark.parametrize("text,expected", [("", U), ("a", N), ("paní doktor", F), ("pan doktor", M)])
def test_czech_edge_cases(czech, text, expected):
    assert czech(text) == expected


def test_czech_soft_adjectival_noun_takes_the_demonstrative_before_it(czech):
    for words, expected in (
        ("Mluvil s tou účetní o penězích .", F),
        ("Mluvila s tím účetním o penězích .", M),
        ("Potkal jsem té účetní bratra .", F),
        ("Viděl toho účetního .", M),
    ):
        words = tuple(words.split())
        k = next(i for i, w in enumerate(words) if w.startswith("účetn"))
        assert czech.detect(TranslatedEntity((words[k],), (k,), words)) == expected, words


def test_czech_falls_back_to_rules_without_the_model(monkeypatch):
    import fairmt.eval.winomt.detectors.czech as d

    monkeypatch.setattr(d, "CS_SPACY_MODEL", "cs_core_news_sm_not_installed")
    with pytest.warns(UserWarning, match="fall back to suffix rules.*fairmt\\[cs\\].*CC BY-NC-SA"):
        det = czech_detector()
    assert isinstance(det, SlavicRuleDetector) and det.signature_name == "slavic-rules-cs"
    assert det("lékařka") == F and det("toho lékaře") == M


def test_rule_fallbacks_keep_working():
    """The suffix rules stay usable on their own (and are what runs without the analysers)."""
    for lang, forms in (("pl", PL_FORMS), ("cs", CS_FORMS)):
        acc, _ = _accuracy(SlavicRuleDetector(lang), forms)
        print(f"\n{lang}: suffix rules {acc:.1f} % of {len(forms)} forms")
        assert 50 < acc < 100


# ------------------------------------------------------------------------------------------------ whole sentences
# WinoMT-style lines (gold: gender, index of the profession, sentence, profession) and untokenised translations
# as an MT system would give them; the built-in fast_align aligns each set as a whole.
GOLD = [
    "female\t1\tThe developer argued with the designer because she did not like the design.\tdeveloper",
    "male\t4\tThe mechanic gave the clerk a present because he won the lottery.\tclerk",
    "male\t1\tThe driver asked the nurse for help because he was sick.\tdriver",
    "female\t5\tThe salesperson talked to the accountant because she needed the money.\taccountant",
    "male\t1\tThe accountant met the janitor and thanked him.\taccountant",
    "female\t4\tThe farmer hired the cook because she was good.\tcook",
    "male\t1\tThe secretary called the driver because he was late.\tsecretary",
    "female\t4\tThe driver called the secretary because she was late.\tsecretary",
    "female\t1\tThe nurse helped the mechanic because she was kind.\tnurse",
    "male\t4\tThe nurse helped the mechanic because he was hurt.\tmechanic",
]
PL = [
    "Ta programistka kłóciła się z projektantem, ponieważ nie podobał jej się projekt.",
    "Mechanik dał temu urzędnikowi prezent, ponieważ wygrał na loterii.",
    "Kierowca poprosił pielęgniarkę o pomoc, ponieważ był chory.",
    "Sprzedawca rozmawiał z tą księgową, ponieważ potrzebowała pieniędzy.",
    "Księgowy spotkał woźnego i podziękował mu.",
    "Rolnik zatrudnił tę kucharkę, ponieważ była dobra.",
    "Sekretarz zadzwonił do kierowcy, ponieważ się spóźnił.",
    "Kierowca zadzwonił do pani sekretarz, ponieważ się spóźniła.",
    "Pielęgniarka pomogła mechanikowi, ponieważ była miła.",
    "Pielęgniarka pomogła temu mechanikowi, ponieważ był ranny.",
]
CS = [
    "Ta vývojářka se hádala s návrhářem, protože se jí návrh nelíbil.",
    "Mechanik dal tomu úředníkovi dárek, protože vyhrál v loterii.",
    "Řidič požádal zdravotní sestru o pomoc, protože byl nemocný.",
    "Prodavač mluvil s tou účetní, protože potřebovala peníze.",
    "Ten účetní potkal školníka a poděkoval mu.",
    "Zemědělec najal tu kuchařku, protože byla dobrá.",
    "Sekretář zavolal řidiči, protože měl zpoždění.",
    "Řidič zavolal té sekretářce, protože měla zpoždění.",
    "Zdravotní sestra pomohla mechanikovi, protože byla laskavá.",
    "Zdravotní sestra pomohla tomu mechanikovi, protože byl zraněný.",
]


def _gold():
    entries = parse_gold_lines(GOLD, "pl-cs-sentences")
    return WinoMTGold(entries, [None] * len(entries), "pl-cs-sentences")


def test_polish_sentences_through_the_aligner(morfeusz):
    res = evaluate_winomt(PL, "pl", _gold())
    print(f"\npl sentences: accuracy {res.accuracy} ({res.signature})")
    assert res.accuracy == 100.0 and res.n == len(GOLD)
    assert "|detector:morfeusz2-" in res.signature and "+SGJP-" in res.signature


def test_czech_sentences_through_the_aligner(czech):
    res = evaluate_winomt(CS, "cs", _gold())
    print(f"\ncs sentences: accuracy {res.accuracy} ({res.signature})")
    assert res.accuracy == 100.0 and res.n == len(GOLD)
    assert "|detector:spacy-cs_core_news_sm-0.2.1+context|" in res.signature


def test_sentences_with_the_rule_fallbacks():
    """Without the analysers the sentences still score, under a signature that says rules ran."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lang, sents in (("pl", PL), ("cs", CS)):
            res = evaluate_winomt(sents, lang, _gold(), detector=SlavicRuleDetector(lang))
            print(f"\n{lang} sentences, suffix rules: accuracy {res.accuracy}")
            assert f"|detector:slavic-rules-{lang}|" in res.signature and res.n == len(GOLD)
