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
    template: int

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
