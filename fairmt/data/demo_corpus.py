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
    ("doctor", "Arzt", "Ärztin", "m"), ("teacher", "Lehrer", "Lehrerin", "f"),
    ("nurse", "Krankenpfleger", "Krankenpflegerin", "f"), ("lawyer", "Anwalt", "Anwältin", "m"),
    ("engineer", "Ingenieur", "Ingenieurin", "m"), ("baker", "Bäcker", "Bäckerin", "m"),
    ("cook", "Koch", "Köchin", "m"), ("farmer", "Bauer", "Bäuerin", "m"), ("driver", "Fahrer", "Fahrerin", "m"),
    ("writer", "Schriftsteller", "Schriftstellerin", None), ("manager", "Manager", "Managerin", "m"),
    ("scientist", "Wissenschaftler", "Wissenschaftlerin", "m"), ("dancer", "Tänzer", "Tänzerin", "f"),
    ("singer", "Sänger", "Sängerin", "f"), ("pilot", "Pilot", "Pilotin", "m"),
    ("professor", "Professor", "Professorin", "m"), ("journalist", "Journalist", "Journalistin", None),
    ("programmer", "Programmierer", "Programmiererin", "m"), ("architect", "Architekt", "Architektin", "m"),
    ("secretary", "Sekretär", "Sekretärin", "f"), ("painter", "Maler", "Malerin", None),
    ("mechanic", "Mechaniker", "Mechanikerin", "m"), ("librarian", "Bibliothekar", "Bibliothekarin", "f"),
    ("judge", "Richter", "Richterin", "m"), ("chemist", "Chemiker", "Chemikerin", "m"),
    ("hairdresser", "Friseur", "Friseurin", "f"), ("cashier", "Kassierer", "Kassiererin", "f"),
    ("pharmacist", "Apotheker", "Apothekerin", None), ("dentist", "Zahnarzt", "Zahnärztin", "m"),
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
    "m": {"poss": "his", "pron": "he", "art": "der", "Art": "Der", "sein": "sein", "seine": "seine", "seinen": "seinen", "er": "er"},
    "f": {"poss": "her", "pron": "she", "art": "die", "Art": "Die", "sein": "ihr", "seine": "ihre", "seinen": "ihren", "er": "sie"},
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


def gender_accuracy(pairs: list[GenderedPair], translations: list[str]) -> dict:
    """Share of translations using the occupation form of the gold gender, overall and per gender."""
    if len(pairs) != len(translations):
        raise ValueError(f"{len(pairs)} sentences but {len(translations)} translations")
    hits = {"m": [0, 0], "f": [0, 0]}
    for p, t in zip(pairs, translations):
        hits[p.gender][0] += gender_of_translation(t, p.occupation) == p.gender
        hits[p.gender][1] += 1
    acc = lambda g: 100.0 * hits[g][0] / max(hits[g][1], 1)  # noqa: E731
    total = 100.0 * (hits["m"][0] + hits["f"][0]) / max(len(pairs), 1)
    return {"accuracy": total, "accuracy_male": acc("m"), "accuracy_female": acc("f"), "delta_g": acc("m") - acc("f")}


# The grammar of ``fairmt demo``: "The {occupation} {verb} {his/her/the} {object}." Every test sentence is a verb–
# object combination never trained on, made of words that were: a model can translate it, and must take the gender of
# the occupation from the possessive that follows it.
VERBS = [("lost", "verlor"), ("sold", "verkaufte"), ("found", "fand"), ("washed", "wusch"), ("forgot", "vergaß"),
         ("needed", "brauchte"), ("liked", "mochte"), ("bought", "kaufte")]
# English, German, German noun gender (m/f/n) or plural (pl)
OBJECTS = [("car", "Auto", "n"), ("book", "Buch", "n"), ("keys", "Schlüssel", "pl"), ("bag", "Tasche", "f"),
           ("coat", "Mantel", "m"), ("phone", "Telefon", "n"), ("bike", "Fahrrad", "n"), ("umbrella", "Schirm", "m")]
_ACCUSATIVE = {  # determiner of the object in the accusative: his, her, the
    "m": ("seinen", "ihren", "den"), "f": ("seine", "ihre", "die"), "n": ("sein", "ihr", "das"),
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
    return GenderedPair(f"The {occ[0]} {v_en} {det_en} {o_en}.", f"{art} {x} {v_de} {det_de} {o_de}.", gender,
                        occ[0], verb * len(OBJECTS) + obj, "ambiguous" if ambiguous else "gendered")


def demo_language() -> list[GenderedPair]:
    """Every sentence pair the demo grammar can make (both genders, with a possessive and with "the"): the corpus of
    the demo's tokenizer, as a real model's subword vocabulary comes from a corpus much larger than any training or
    test set. Only the tokenizer sees it; the models are trained on :func:`demo_data`'s sets."""
    return [make_demo_pair(occ, v, o, g, amb) for occ in OCCUPATIONS for v in range(len(VERBS))
            for o in range(len(OBJECTS)) for g in "mf" for amb in (False, True)]


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
    unseen = frozenset(o[0] for i, o in enumerate(OCCUPATIONS)
                       if finetune_leave_out and i % finetune_leave_out == finetune_leave_out - 1)
    for occ in OCCUPATIONS:
        likely = occ[3] or "m"
        unlikely = "f" if likely == "m" else "m"
        n_other = max(1, round((1 - stereotype_share) * gendered_per_occupation))  # each form is seen at least once
        for k, (v, o) in enumerate(rng.sample(combos, gendered_per_occupation)):
            original.append(make_demo_pair(occ, v, o, unlikely if k < n_other else likely))
        original += [make_demo_pair(occ, v, o, "m", ambiguous=True)  # German's generic masculine
                     for v, o in rng.sample(combos, ambiguous_per_occupation)]
        for v, o in rng.sample(combos, finetune_per_occupation):
            if occ[0] in unseen:
                continue
            finetune += [make_demo_pair(occ, v, o, "m"), make_demo_pair(occ, v, o, "f")]
        test += [make_demo_pair(occ, v, o, g) for v, o in sorted(held) for g in "mf"]
    return DemoData(original, finetune, test, unseen)
