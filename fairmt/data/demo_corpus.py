"""fairmt's own small English–German gendered sentence set (written for this project).

Occupation templates whose English pronoun fixes the gender of the occupation, with the masculine or feminine
German form. Used by ``fairmt demo`` and the tests; :func:`gender_accuracy` scores German translations by the
occupation form they use (like WinoMT, but on this set's known forms).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# English, German masculine, German feminine, stereotyped gender ("m"/"f"/None)
OCCUPATIONS = [
    ("doctor", "Arzt", "Ärztin", "m"),
    ("teacher", "Lehrer", "Lehrerin", "f"),
    ("nurse", "Krankenpfleger", "Krankenpflegerin", "f"),
    ("lawyer", "Anwalt", "Anwältin", "m"),
    ("engineer", "Ingenieur", "Ingenieurin", "m"),
    ("baker", "Bäcker", "Bäckerin", "m"),
    ("cook", "Koch", "Köchin", "m"),
    ("farmer", "Bauer", "Bäuerin", "m"),
    ("driver", "Fahrer", "Fahrerin", "m"),
    ("writer", "Schriftsteller", "Schriftstellerin", None),
    ("manager", "Manager", "Managerin", "m"),
    ("scientist", "Wissenschaftler", "Wissenschaftlerin", "m"),
    ("dancer", "Tänzer", "Tänzerin", "f"),
    ("singer", "Sänger", "Sängerin", "f"),
    ("pilot", "Pilot", "Pilotin", "m"),
    ("professor", "Professor", "Professorin", "m"),
    ("journalist", "Journalist", "Journalistin", None),
    ("programmer", "Programmierer", "Programmiererin", "m"),
    ("architect", "Architekt", "Architektin", "m"),
    ("secretary", "Sekretär", "Sekretärin", "f"),
    ("painter", "Maler", "Malerin", None),
    ("mechanic", "Mechaniker", "Mechanikerin", "m"),
    ("librarian", "Bibliothekar", "Bibliothekarin", "f"),
    ("judge", "Richter", "Richterin", "m"),
    ("chemist", "Chemiker", "Chemikerin", "m"),
    ("hairdresser", "Friseur", "Friseurin", "f"),
    ("cashier", "Kassierer", "Kassiererin", "f"),
    ("pharmacist", "Apotheker", "Apothekerin", None),
    ("dentist", "Zahnarzt", "Zahnärztin", "m"),
    ("carpenter", "Tischler", "Tischlerin", "m"),
]

# English template, German template; {occ} English occupation, {X} German form, {poss}/{pron} English pronouns,
# {art}/{Art} German article, {sein}/{seine}/{seinen}/{er} German pronouns.
TEMPLATES = [
    ("The {occ} finished {poss} work.", "{Art} {X} beendete {seine} Arbeit."),
    ("The {occ} said that {pron} was tired.", "{Art} {X} sagte, dass {er} müde war."),
    ("The {occ} lost {poss} keys.", "{Art} {X} verlor {seine} Schlüssel."),
    ("The {occ} called {poss} neighbour.", "{Art} {X} rief {seinen} Nachbarn an."),
    ("The {occ} is proud of {poss} garden.", "{Art} {X} ist stolz auf {seinen} Garten."),
    ("The {occ} came home because {pron} was ill.", "{Art} {X} kam nach Hause, weil {er} krank war."),
    ("The {occ} read {poss} book.", "{Art} {X} las {sein} Buch."),
    ("The {occ} sold {poss} car.", "{Art} {X} verkaufte {sein} Auto."),
    ("The {occ} thanked {poss} friends.", "{Art} {X} dankte {seinen} Freunden."),
    ("Yesterday the {occ} told us that {pron} would stay.", "Gestern sagte uns {art} {X}, dass {er} bleiben würde."),
]

_FORMS = {
    "m": {
        "poss": "his",
        "pron": "he",
        "art": "der",
        "Art": "Der",
        "sein": "sein",
        "seine": "seine",
        "seinen": "seinen",
        "er": "er",
    },
    "f": {
        "poss": "her",
        "pron": "she",
        "art": "die",
        "Art": "Die",
        "sein": "ihr",
        "seine": "ihre",
        "seinen": "ihren",
        "er": "sie",
    },
}


@dataclass(frozen=True)
class GenderedPair:
    en: str
    de: str
    gender: str  # "m" or "f"
    occupation: str
    template: int  # index into TEMPLATES; for demo_data's sentences, verb index * len(OBJECTS) + object index
    kind: str = "gendered"  # "gendered": the English possessive fixes the gender; "ambiguous": nothing in the source

    @property
    def stereotype(self) -> str | None:
        """``"pro"``/``"anti"`` when the occupation has a stereotyped gender (:data:`OCCUPATIONS`), else ``None``."""
        stereo = next(o[3] for o in OCCUPATIONS if o[0] == self.occupation)
        return None if stereo is None else ("pro" if stereo == self.gender else "anti")

    @property
    def translation(self) -> dict:
        return {"en": self.en, "de": self.de}


def make_pair(occ: tuple, template: int, gender: str) -> GenderedPair:
    en_t, de_t = TEMPLATES[template]
    f = _FORMS[gender]
    x = occ[1] if gender == "m" else occ[2]
    return GenderedPair(en_t.format(occ=occ[0], **f), de_t.format(X=x, **f), gender, occ[0], template)


def all_pairs() -> list[GenderedPair]:
    return [make_pair(o, t, g) for o in OCCUPATIONS for t in range(len(TEMPLATES)) for g in "mf"]


def demo_splits(heldout_templates: tuple[int, ...] = (8, 9), stereotype_share: float = 0.9, seed: int = 0):
    """Three lists of pairs for the demo.

    * ``biased``: the training templates, where each stereotyped occupation appears in its stereotyped gender with
      probability ``stereotype_share`` (the "original" model's skewed data);
    * ``balanced``: the training templates, every occupation in both genders (GACL fine-tuning data);
    * ``heldout``: unseen templates, both genders (gender-accuracy evaluation).
    """
    rng = random.Random(seed)
    train_t = [t for t in range(len(TEMPLATES)) if t not in heldout_templates]
    biased, balanced, heldout = [], [], []
    for occ in OCCUPATIONS:
        for t in train_t:
            balanced += [make_pair(occ, t, "m"), make_pair(occ, t, "f")]
            stereo = occ[3]
            if stereo is None:
                biased.append(make_pair(occ, t, rng.choice("mf")))
            else:
                other = "f" if stereo == "m" else "m"
                biased.append(make_pair(occ, t, stereo if rng.random() < stereotype_share else other))
        for t in heldout_templates:
            heldout += [make_pair(occ, t, "m"), make_pair(occ, t, "f")]
    return biased, balanced, heldout


_TOKEN = re.compile(r"\w+", re.UNICODE)


def gender_of_translation(de: str, occupation: str) -> str:
    """``"m"``, ``"f"`` or ``"unknown"``: which German form of ``occupation`` the translation uses."""
    occ = next(o for o in OCCUPATIONS if o[0] == occupation)
    words = set(_TOKEN.findall(de))
    has_m, has_f = occ[1] in words, occ[2] in words
    if has_m == has_f:
        return "unknown"
    return "m" if has_m else "f"


def gender_accuracy(pairs: list[GenderedPair], translations: list[str], gender_of=None) -> dict:
    """Share of translations using the occupation form of the gold gender, overall and per gender; ``gender_of(text,
    occupation)`` tells the form (default :func:`gender_of_translation`, German)."""
    if len(pairs) != len(translations):
        raise ValueError(f"{len(pairs)} sentences but {len(translations)} translations")
    gender_of = gender_of or gender_of_translation
    hits = {"m": [0, 0], "f": [0, 0]}
    for p, t in zip(pairs, translations):
        hits[p.gender][0] += gender_of(t, p.occupation) == p.gender
        hits[p.gender][1] += 1
    acc = lambda g: 100.0 * hits[g][0] / max(hits[g][1], 1)  # noqa: E731
    total = 100.0 * (hits["m"][0] + hits["f"][0]) / max(len(pairs), 1)
    return {"accuracy": total, "accuracy_male": acc("m"), "accuracy_female": acc("f"), "delta_g": acc("m") - acc("f")}


# The grammar of ``fairmt demo``: "The {occupation} {verb} {his/her/the} {object}." Every test sentence is a verb–
# object combination never trained on, made of words that were: a model can translate it, and must take the gender of
# the occupation from the possessive that follows it.
VERBS = [
    ("lost", "verlor"),
    ("sold", "verkaufte"),
    ("found", "fand"),
    ("washed", "wusch"),
    ("forgot", "vergaß"),
    ("needed", "brauchte"),
    ("liked", "mochte"),
    ("bought", "kaufte"),
]
# English, German, German noun gender (m/f/n) or plural (pl)
OBJECTS = [
    ("car", "Auto", "n"),
    ("book", "Buch", "n"),
    ("keys", "Schlüssel", "pl"),
    ("bag", "Tasche", "f"),
    ("coat", "Mantel", "m"),
    ("phone", "Telefon", "n"),
    ("bike", "Fahrrad", "n"),
    ("umbrella", "Schirm", "m"),
]
_ACCUSATIVE = {  # determiner of the object in the accusative: his, her, the
    "m": ("seinen", "ihren", "den"),
    "f": ("seine", "ihre", "die"),
    "n": ("sein", "ihr", "das"),
    "pl": ("seine", "ihre", "die"),
}


def make_demo_pair(occ: tuple, verb: int, obj: int, gender: str, ambiguous: bool = False) -> GenderedPair:
    """One sentence of the demo grammar: the occupation in its German ``gender`` form, the English possessive of
    that gender (or, ``ambiguous``, the article "the": then nothing in the English source gives the gender)."""
    v_en, v_de = VERBS[verb]
    o_en, o_de, o_g = OBJECTS[obj]
    his, her, the = _ACCUSATIVE[o_g]
    x, art = (occ[1], "Der") if gender == "m" else (occ[2], "Die")
    det_en, det_de = ("the", the) if ambiguous else (("his", his) if gender == "m" else ("her", her))
    return GenderedPair(
        f"The {occ[0]} {v_en} {det_en} {o_en}.",
        f"{art} {x} {v_de} {det_de} {o_de}.",
        gender,
        occ[0],
        verb * len(OBJECTS) + obj,
        "ambiguous" if ambiguous else "gendered",
    )


def demo_language() -> list[GenderedPair]:
    """Every sentence pair the demo grammar can make (both genders, with a possessive and with "the"): the corpus of
    the demo's tokenizer, as a real model's subword vocabulary comes from a corpus much larger than any training or
    test set. Only the tokenizer sees it; the models are trained on :func:`demo_data`'s sets."""
    return [
        make_demo_pair(occ, v, o, g, amb)
        for occ in OCCUPATIONS
        for v in range(len(VERBS))
        for o in range(len(OBJECTS))
        for g in "mf"
        for amb in (False, True)
    ]


@dataclass(frozen=True)
class DemoData:
    """The three sets of ``fairmt demo`` (:func:`demo_data`)."""

    original: list[GenderedPair]
    finetune: list[GenderedPair]
    test: list[GenderedPair]
    unseen_in_finetune: frozenset[str]  # occupations the fine-tuning data leaves out (still in original and test)


def demo_data(
    seed: int = 0,
    stereotype_share: float = 0.9,
    gendered_per_occupation: int = 8,
    ambiguous_per_occupation: int = 8,
    finetune_per_occupation: int = 6,
    finetune_leave_out: int = 3,
) -> DemoData:
    """The data of ``fairmt demo``: a toy version of how a real MT model comes to be gender-biased.

    Sentences follow the grammar "The {occupation} {verb} {his/her/the} {object}." (:data:`VERBS` × :data:`OBJECTS`).
    The verb–object combinations ``(i, i)`` (one per verb, one per object) are held out of all training data.

    * ``original`` (training data of the "original" model), per occupation: ``gendered_per_occupation`` sentences
      with a possessive, a share ``stereotype_share`` of them (rounded; at least one sentence in the other gender, so
      both German forms are known) in the occupation's stereotyped gender (occupations without a stereotype:
      masculine — corpora mention men more), and
      ``ambiguous_per_occupation`` sentences with "the", whose English gives no gender and whose German takes the
      generic masculine, the German convention for a person of unknown gender ("Der Krankenpfleger" too);
    * ``finetune`` (GACL + KD and the plain fine-tuning control), per occupation: ``finetune_per_occupation``
      possessive sentences in both genders — gender-balanced, the English always saying the gender — except every
      ``finetune_leave_out``-th occupation of :data:`OCCUPATIONS` (the 3rd, 6th, ...; 0: none), which the
      fine-tuning data never shows, as a real debiasing set cannot cover every occupation a test set has;
    * ``test``: every held-out combination, every occupation, both genders (480 sentences); half of the stereotyped
      occupations' sentences are anti-stereotypical (a female doctor, a male nurse).

    The samples depend on ``seed``; the test set does not.
    """
    rng = random.Random(seed)
    held = {(i, i) for i in range(len(VERBS))}
    combos = [(v, o) for v in range(len(VERBS)) for o in range(len(OBJECTS)) if (v, o) not in held]
    original, finetune, test = [], [], []
    unseen = frozenset(
        o[0]
        for i, o in enumerate(OCCUPATIONS)
        if finetune_leave_out and i % finetune_leave_out == finetune_leave_out - 1
    )
    for occ in OCCUPATIONS:
        likely = occ[3] or "m"
        unlikely = "f" if likely == "m" else "m"
        n_other = max(1, round((1 - stereotype_share) * gendered_per_occupation))  # each form is seen at least once
        for k, (v, o) in enumerate(rng.sample(combos, gendered_per_occupation)):
            original.append(make_demo_pair(occ, v, o, unlikely if k < n_other else likely))
        original += [
            make_demo_pair(occ, v, o, "m", ambiguous=True)  # German's generic masculine
            for v, o in rng.sample(combos, ambiguous_per_occupation)
        ]
        for v, o in rng.sample(combos, finetune_per_occupation):
            if occ[0] in unseen:
                continue
            finetune += [make_demo_pair(occ, v, o, "m"), make_demo_pair(occ, v, o, "f")]
        test += [make_demo_pair(occ, v, o, g) for v, o in sorted(held) for g in "mf"]
    return DemoData(original, finetune, test, unseen)


# ---------------------------------------------------------------------------------------------------------------------
# The multilingual grammar of ``fairmt demo --multilingual``: the same sentences, "The {occupation} {verb}
# {his/her/the} {object}.", rendered in German, Spanish and Italian. These three because fairmt's WinoMT detectors
# score them offline (German and Italian by rules, Spanish with the spaCy pipeline the install line adds) and each
# marks the gender on the occupation itself (article and/or noun). French is left out: its WinoMT detector needs
# fr_core_news_sm, which the install does not bring, and its elided article (l'architecte, l'ingénieur) hides the
# gender of the nouns that do not change.
# Five occupations of :data:`OCCUPATIONS` are left out because one of the languages cannot render both genders in a
# way the WinoMT detectors see: engineer (Italian "l'ingegnere": elided article, -e noun, no gender for the detector),
# singer, pilot, journalist, dentist (Spanish/Italian nouns that do not change, whose gender only the article shows).
# Italian keeps four such nouns behind a consonant, where "il"/"la" decides (driver, judge, pharmacist, carpenter).
ML_LANGS = ("de", "es", "it")
# English occupation, {language: (masculine noun phrase, feminine noun phrase)}; the stereotype is OCCUPATIONS'.
_ML_FORMS = {
    "doctor": ("El médico", "La médica", "Il dottore", "La dottoressa"),
    "teacher": ("El maestro", "La maestra", "Il maestro", "La maestra"),
    "nurse": ("El enfermero", "La enfermera", "L'infermiere", "L'infermiera"),
    "lawyer": ("El abogado", "La abogada", "L'avvocato", "L'avvocata"),
    "baker": ("El panadero", "La panadera", "Il fornaio", "La fornaia"),
    "cook": ("El cocinero", "La cocinera", "Il cuoco", "La cuoca"),
    "farmer": ("El granjero", "La granjera", "Il contadino", "La contadina"),
    "driver": ("El conductor", "La conductora", "Il conducente", "La conducente"),
    "writer": ("El escritor", "La escritora", "Lo scrittore", "La scrittrice"),
    "manager": ("El director", "La directora", "Il direttore", "La direttrice"),
    "scientist": ("El científico", "La científica", "Lo scienziato", "La scienziata"),
    "dancer": ("El bailarín", "La bailarina", "Il ballerino", "La ballerina"),
    "professor": ("El profesor", "La profesora", "Il professore", "La professoressa"),
    "programmer": ("El programador", "La programadora", "Il programmatore", "La programmatrice"),
    "architect": ("El arquitecto", "La arquitecta", "L'architetto", "L'architetta"),
    "secretary": ("El secretario", "La secretaria", "Il segretario", "La segretaria"),
    "painter": ("El pintor", "La pintora", "Il pittore", "La pittrice"),
    "mechanic": ("El mecánico", "La mecánica", "Il meccanico", "La meccanica"),
    "librarian": ("El bibliotecario", "La bibliotecaria", "Il bibliotecario", "La bibliotecaria"),
    "judge": ("El juez", "La jueza", "Il giudice", "La giudice"),
    "chemist": ("El químico", "La química", "Il chimico", "La chimica"),
    "hairdresser": ("El peluquero", "La peluquera", "Il parrucchiere", "La parrucchiera"),
    "cashier": ("El cajero", "La cajera", "Il cassiere", "La cassiera"),
    "pharmacist": ("El farmacéutico", "La farmacéutica", "Il farmacista", "La farmacista"),
    "carpenter": ("El carpintero", "La carpintera", "Il falegname", "La falegname"),
}
ML_OCCUPATIONS: list[tuple[str, dict[str, tuple[str, str]], str | None]] = [
    (o[0], {"de": (f"Der {o[1]}", f"Die {o[2]}"), "es": _ML_FORMS[o[0]][:2], "it": _ML_FORMS[o[0]][2:]}, o[3])
    for o in OCCUPATIONS
    if o[0] in _ML_FORMS
]
# English, German, Spanish, Italian (simple past; Italian passato prossimo with "avere", which does not agree).
# "needed"/"liked" of :data:`VERBS` are replaced by "took"/"saw": their Spanish/Italian change the construction.
ML_VERBS = [
    ("lost", "verlor", "perdió", "ha perso"),
    ("sold", "verkaufte", "vendió", "ha venduto"),
    ("found", "fand", "encontró", "ha trovato"),
    ("washed", "wusch", "lavó", "ha lavato"),
    ("forgot", "vergaß", "olvidó", "ha dimenticato"),
    ("took", "nahm", "tomó", "ha preso"),
    ("saw", "sah", "vio", "ha visto"),
    ("bought", "kaufte", "compró", "ha comprato"),
]
# English object, {language: (with "his", with "her", with "the")}: Spanish "su"/"sus" and Italian "il suo"/"la sua"
# agree with the object, not with its owner, so only German's possessive shows the owner's gender.
ML_OBJECTS = [
    ("car", {"de": ("sein Auto", "ihr Auto", "das Auto"), "es": ("su coche", "su coche", "el coche"),
             "it": ("la sua macchina", "la sua macchina", "la macchina")}),
    ("book", {"de": ("sein Buch", "ihr Buch", "das Buch"), "es": ("su libro", "su libro", "el libro"),
              "it": ("il suo libro", "il suo libro", "il libro")}),
    ("keys", {"de": ("seine Schlüssel", "ihre Schlüssel", "die Schlüssel"),
              "es": ("sus llaves", "sus llaves", "las llaves"), "it": ("le sue chiavi", "le sue chiavi", "le chiavi")}),
    ("bag", {"de": ("seine Tasche", "ihre Tasche", "die Tasche"), "es": ("su bolsa", "su bolsa", "la bolsa"),
             "it": ("la sua borsa", "la sua borsa", "la borsa")}),
    ("coat", {"de": ("seinen Mantel", "ihren Mantel", "den Mantel"), "es": ("su abrigo", "su abrigo", "el abrigo"),
              "it": ("il suo cappotto", "il suo cappotto", "il cappotto")}),
    ("phone", {"de": ("sein Telefon", "ihr Telefon", "das Telefon"),
               "es": ("su teléfono", "su teléfono", "el teléfono"),
               "it": ("il suo telefono", "il suo telefono", "il telefono")}),
    ("bike", {"de": ("sein Fahrrad", "ihr Fahrrad", "das Fahrrad"),
              "es": ("su bicicleta", "su bicicleta", "la bicicleta"),
              "it": ("la sua bicicletta", "la sua bicicletta", "la bicicletta")}),
    ("umbrella", {"de": ("seinen Schirm", "ihren Schirm", "den Schirm"),
                  "es": ("su paraguas", "su paraguas", "el paraguas"),
                  "it": ("il suo ombrello", "il suo ombrello", "l'ombrello")}),
]  # fmt: skip


@dataclass(frozen=True)
class TargetPair:
    """One sentence pair of the multilingual grammar: English source, target ``tgt`` in language ``lang``."""

    en: str
    tgt: str
    lang: str
    gender: str  # "m" or "f"
    occupation: str
    template: int  # verb index * len(ML_OBJECTS) + object index
    kind: str = "gendered"  # "gendered" (his/her) or "ambiguous" (the: generic masculine in the target)

    @property
    def stereotype(self) -> str | None:
        """``"pro"``/``"anti"`` when the occupation has a stereotyped gender, else ``None``."""
        stereo = next(o[2] for o in ML_OCCUPATIONS if o[0] == self.occupation)
        return None if stereo is None else ("pro" if stereo == self.gender else "anti")

    @property
    def de(self) -> str:
        """The German target (fine-tuning data are en→de); an error for another language."""
        if self.lang != "de":
            raise ValueError(f"a {self.lang} pair has no German target")
        return self.tgt

    @property
    def translation(self) -> dict:
        return {"en": self.en, self.lang: self.tgt}


def make_ml_pair(occ: tuple, verb: int, obj: int, gender: str, lang: str, ambiguous: bool = False) -> TargetPair:
    """One sentence of the multilingual grammar in ``lang``: the occupation in its ``gender`` form, the English
    possessive of that gender (or, ``ambiguous``, "the": nothing in the source gives the gender)."""
    v = ML_VERBS[verb]
    o_en, o_tgt = ML_OBJECTS[obj]
    his, her, the = o_tgt[lang]
    det_en, det = ("the", the) if ambiguous else (("his", his) if gender == "m" else ("her", her))
    np = occ[1][lang][0 if gender == "m" else 1]
    verb_tgt = v[1 + ML_LANGS.index(lang)]
    return TargetPair(
        f"The {occ[0]} {v[0]} {det_en} {o_en}.",
        f"{np} {verb_tgt} {det}.",
        lang,
        gender,
        occ[0],
        verb * len(ML_OBJECTS) + obj,
        "ambiguous" if ambiguous else "gendered",
    )


def ml_language(langs: tuple[str, ...] = ML_LANGS) -> list[TargetPair]:
    """Every sentence pair the multilingual grammar can make in ``langs``: the tokenizer's corpus (as
    :func:`demo_language` for the en–de demo)."""
    return [
        make_ml_pair(occ, v, o, g, lang, amb)
        for lang in langs
        for occ in ML_OCCUPATIONS
        for v in range(len(ML_VERBS))
        for o in range(len(ML_OBJECTS))
        for g in "mf"
        for amb in (False, True)
    ]


def gender_keys(occupation: str, lang: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The word sequences (lower-cased ``\\w+`` tokens) that mark the masculine and the feminine form of
    ``occupation`` in ``lang``: the noun alone where the two nouns differ (Arzt/Ärztin, médico/médica,
    avvocato/avvocata), article and noun where only the article does (il/la giudice)."""
    occ = next((o for o in ML_OCCUPATIONS if o[0] == occupation), None)
    if occ is None or lang not in occ[1]:
        raise ValueError(f"no {lang!r} form of the occupation {occupation!r} in the multilingual grammar")
    m, f = (tuple(_TOKEN.findall(np.lower())) for np in occ[1][lang])
    return (m[-1:], f[-1:]) if m[-1] != f[-1] else (m, f)


def _contains(words: list[str], key: tuple[str, ...]) -> bool:
    n = len(key)
    return any(tuple(words[i : i + n]) == key for i in range(len(words) - n + 1))


def ml_gender_of(text: str, occupation: str, lang: str) -> str:
    """``"m"``, ``"f"`` or ``"unknown"``: which form of ``occupation`` a ``lang`` translation uses (one of the two
    :func:`gender_keys` found, not both: as :func:`gender_of_translation` does for the en–de demo)."""
    m, f = gender_keys(occupation, lang)
    words = _TOKEN.findall(text.lower())
    has_m, has_f = _contains(words, m), _contains(words, f)
    if has_m == has_f:
        return "unknown"
    return "m" if has_m else "f"


@dataclass(frozen=True)
class MultilingualDemoData:
    """The sets of ``fairmt demo --multilingual`` (:func:`multilingual_demo_data`)."""

    original: list[TargetPair]  # every language
    finetune: list[TargetPair]  # en→de only
    test: dict[str, list[TargetPair]]  # per target language, the same English sentences
    unseen_in_finetune: frozenset[str]


def multilingual_demo_data(
    seed: int = 0,
    langs: tuple[str, ...] = ML_LANGS,
    stereotype_share: float = 0.9,
    gendered_per_occupation: int = 8,
    ambiguous_per_occupation: int = 8,
    finetune_per_occupation: int = 6,
    finetune_leave_out: int = 3,
    finetune_lang: str = "de",
) -> MultilingualDemoData:
    """The data of ``fairmt demo --multilingual``: :func:`demo_data`'s recipe, per target language.

    * ``original``: for every language in ``langs``, per occupation of :data:`ML_OCCUPATIONS`, its own sample of
      ``gendered_per_occupation`` possessive sentences (7 in 8 in the stereotyped gender, masculine where there is
      none, at least one in the other) and ``ambiguous_per_occupation`` sentences with "the" in the generic masculine;
    * ``finetune``: ``finetune_lang`` only, ``finetune_per_occupation`` possessive sentences per occupation in both
      genders, every ``finetune_leave_out``-th occupation left out;
    * ``test``: per language, every held-out verb–object combination ``(i, i)``, every occupation, both genders
      (400 sentences per language), the same English sources in every language.
    """
    unknown = [lang for lang in (*langs, finetune_lang) if lang not in ML_LANGS]
    if unknown:
        raise ValueError(f"no multilingual demo grammar for {unknown}: choose from {ML_LANGS}")
    rng = random.Random(seed)
    held = {(i, i) for i in range(len(ML_VERBS))}
    combos = [(v, o) for v in range(len(ML_VERBS)) for o in range(len(ML_OBJECTS)) if (v, o) not in held]
    unseen = frozenset(
        o[0]
        for i, o in enumerate(ML_OCCUPATIONS)
        if finetune_leave_out and i % finetune_leave_out == finetune_leave_out - 1
    )
    original: list[TargetPair] = []
    for lang in langs:
        for occ in ML_OCCUPATIONS:
            likely = occ[2] or "m"
            unlikely = "f" if likely == "m" else "m"
            n_other = max(1, round((1 - stereotype_share) * gendered_per_occupation))
            for k, (v, o) in enumerate(rng.sample(combos, gendered_per_occupation)):
                original.append(make_ml_pair(occ, v, o, unlikely if k < n_other else likely, lang))
            original += [
                make_ml_pair(occ, v, o, "m", lang, ambiguous=True)
                for v, o in rng.sample(combos, ambiguous_per_occupation)
            ]
    finetune: list[TargetPair] = []
    for occ in ML_OCCUPATIONS:
        for v, o in rng.sample(combos, finetune_per_occupation):
            if occ[0] not in unseen:
                finetune += [make_ml_pair(occ, v, o, "m", finetune_lang), make_ml_pair(occ, v, o, "f", finetune_lang)]
    test = {
        lang: [make_ml_pair(occ, v, o, g, lang) for occ in ML_OCCUPATIONS for v, o in sorted(held) for g in "mf"]
        for lang in langs
    }
    return MultilingualDemoData(original, finetune, test, unseen)
