"""Validation measures for choosing CCD settings without looking at the reported test suites.

The CCD recipe reports SEAT (6, 6b, 7, 7b, 8, 8b), the CCED gap on held-out tuples and Bias-IR. Choosing β, ρ,
the learning rate or the checkpoint by those very numbers would report the maximum over noisy runs as if it were
a measurement, so settings are chosen on a separate validation split:

* **association probe** (:func:`probe_tests`): four SEAT-style tests (May et al., 2019: effect size d of two target
  sets towards two attribute sets, :func:`fairmt.eval.embedding.seat.seat_score`) built here with **no word in
  common with SEAT 6-8b**: male/female first names and male/female person nouns against career/family words, and
  maths-science/arts words against the male/female names and nouns. The words and the sentence templates
  (``"This is a nurse."``-style, as SEAT's bleached templates) were written for this probe; they are a held-out
  probe of the same kind of association, not a reproduction of any published test. ``probe_avg_abs`` is the mean
  |d| over the four tests (lower is fairer), the counterpart of SEAT's average |effect size|.
* **Bias-IR validation queries** (:func:`split_bias_ir`): a seeded half of Grep-BiasIR's queries in every
  category; the other half is the reported test.
* the **CCED gap on the validation tuples** (the recipe's ``data.eval_size`` tuples, never trained on) and a
  **utility check** on held-out neutral sentences distinct from the test ones (``data.utility_validation_size``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from fairmt.errors import FairmtError

# ------------------------------------------------------------ the association probe (no word shared with SEAT 6-8b)

MALE_NAMES = ("David", "Robert", "James", "Thomas", "Richard", "Daniel", "Mark", "Peter")
FEMALE_NAMES = ("Mary", "Linda", "Susan", "Karen", "Emily", "Laura", "Rachel", "Helen")
MALE_NOUNS = ("husband", "king", "gentleman", "nephew", "groom", "boyfriend", "prince", "grandson")
FEMALE_NOUNS = ("wife", "queen", "lady", "niece", "bride", "girlfriend", "princess", "granddaughter")
# attribute phrases with their article, so that every template sentence is grammatical
CAREER = ("a manager", "an employee", "a company", "a boss", "a promotion", "a wage", "a contract", "industry")
FAMILY = ("a household", "a toddler", "a baby", "a kitchen", "a sibling", "a nursery", "a grandchild", "housework")
SCIENCE = ("statistics", "engineering", "biology", "a laboratory", "logic", "arithmetic", "trigonometry", "computing")
ARTS = ("music", "painting", "theatre", "opera", "ballet", "drawing", "singing", "fiction")

_NAME_TEMPLATES = ("This is {w}.", "That is {w}.", "Here is {w}.", "{w} is here.", "{w} is there.", "{w} is a person.")
_NOUN_TEMPLATES = (
    "This is {a} {w}.",
    "That is {a} {w}.",
    "Here is {a} {w}.",
    "The {w} is here.",
    "The {w} is there.",
    "{A} {w} is a person.",
)
_THING_TEMPLATES = ("This is {w}.", "That is {w}.", "There is {w}.", "Here is {w}.", "It is {w}.")

#: test name -> (target 1, target 2, attribute 1, attribute 2), each (kind, words)
PROBE_TESTS = {
    "names-career": (("name", MALE_NAMES), ("name", FEMALE_NAMES), ("thing", CAREER), ("thing", FAMILY)),
    "nouns-career": (("noun", MALE_NOUNS), ("noun", FEMALE_NOUNS), ("thing", CAREER), ("thing", FAMILY)),
    "science-nouns": (("thing", SCIENCE), ("thing", ARTS), ("noun", MALE_NOUNS), ("noun", FEMALE_NOUNS)),
    "science-names": (("thing", SCIENCE), ("thing", ARTS), ("name", MALE_NAMES), ("name", FEMALE_NAMES)),
}


def _sentences(kind: str, words: Sequence[str]) -> list[str]:
    out = []
    for w in words:
        if kind == "name":
            out += [t.format(w=w) for t in _NAME_TEMPLATES]
        elif kind == "noun":
            a = "an" if w[0] in "aeiou" else "a"
            out += [t.format(w=w, a=a, A=a.capitalize()) for t in _NOUN_TEMPLATES]
        elif kind == "thing":
            out += [t.format(w=w) for t in _THING_TEMPLATES]
        else:
            raise FairmtError(f"unknown probe word kind {kind!r}")
    return out


def probe_tests():
    """The four probe tests as :class:`fairmt.eval.embedding.seat.SeatTest` objects (see the module docstring)."""
    from fairmt.eval.embedding.seat import SeatTest

    tests = []
    for name, sets in PROBE_TESTS.items():
        t1, t2, a1, a2 = (_sentences(kind, words) for kind, words in sets)
        tests.append(
            SeatTest(
                name=name,
                targ1=t1,
                targ2=t2,
                attr1=a1,
                attr2=a2,
                categories=dict(zip(("targ1", "targ2", "attr1", "attr2"), name.split("-") * 2)),
            )
        )
    return tests


def probe_words() -> set[str]:
    """Every word of the probe (lower case), for checking that it shares none with SEAT."""
    words: set[str] = set()
    for sets in PROBE_TESTS.values():
        for _, ws in sets:
            words.update(w.split()[-1].lower() for w in ws)
    return words


# ------------------------------------------------------------------ Bias-IR validation/test split


def split_bias_ir(queries: Sequence, validation_fraction: float = 0.5, seed: int = 0) -> tuple[list, list]:
    """(validation, test) halves of Grep-BiasIR queries: in every category, a seeded ``validation_fraction`` of the
    queries (rounded down, at least one) is validation and the rest test, so both halves cover every category."""
    if not 0 < validation_fraction < 1:
        raise FairmtError(f"Bias-IR validation fraction must be in (0, 1), got {validation_fraction}")
    by_cat: dict[str, list] = {}
    for q in queries:
        by_cat.setdefault(q.category, []).append(q)
    val_ids: set[str] = set()
    for cat in sorted(by_cat):
        qs = sorted(by_cat[cat], key=lambda q: q.q_id)
        if len(qs) < 2:
            raise FairmtError(
                f"Bias-IR category {cat!r} has {len(qs)} query: too few to split into validation and test"
            )
        k = min(len(qs) - 1, max(1, int(len(qs) * validation_fraction)))
        val_ids.update(q.q_id for q in random.Random(f"{seed}:{cat}").sample(qs, k))
    return [q for q in queries if q.q_id in val_ids], [q for q in queries if q.q_id not in val_ids]


__all__ = ["PROBE_TESTS", "probe_tests", "probe_words", "split_bias_ir"]
