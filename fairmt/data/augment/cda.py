"""Rule-based counterfactual data augmentation (CDA; Zhao et al. 2018) into CCD tuples.

A text becomes three versions of one content with the project's gender lexicon (:mod:`fairmt.data.gender`):
male (:func:`to_gender` ``"male"``), female (``"female"``) and neutral (:func:`neutralize`: he/she → they,
father/mother → parent, ...). The lexicon's documented limits apply: verb agreement is changed next to the pronoun
only (``he runs`` → ``they run``; :data:`AGREEMENT_SCOPE`), names are not swapped, and ``her`` before an adjective
may be read as possessive. Every tuple is then checked with the sensitive-polarity test of the CCD paper (Eq. 6); by
default tuples that fail it are dropped and counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from fairmt.data.augment.tuples import GENDER_GROUPS, NEUTRAL, check_tuple

_SINGULAR_AUX = frozenset({"is", "was", "has", "does", "isn't", "wasn't", "hasn't", "doesn't"})
_INVERTED = re.compile(r"\b(?:is|was|has|does)(?:n't)?\s+they\b", re.IGNORECASE)
_THEY_NEXT = re.compile(r"\bthey((?:\s+[A-Za-z']+){1,3})", re.IGNORECASE)

AGREEMENT_SCOPE = (
    "checked: 'they' followed (after at most two adverbs) by is/was/has/does or by a third-person singular verb of "
    "lemminflect's lexicon, and is/was/has/does + 'they' in questions; not checked: a verb further from 'they' "
    "(after a comma or a clause: 'they, however, says'; coordinated: 'they came and sees'), verbs missing from the "
    "lexicon, and the choice of themself/themselves"
)
"""What :func:`agreement_ok` can and cannot see (printed in ``fairmt augment cda``'s summary)."""


def _they_singular(text: str) -> int:
    """How many "they" + singular verb slips ``text`` holds (see :data:`AGREEMENT_SCOPE`)."""
    from fairmt.data.gender import ADVERBS, singular_verb_base

    n = len(_INVERTED.findall(text))
    for m in _THEY_NEXT.finditer(text):
        for word in m.group(1).split():
            low = word.lower()
            if low in _SINGULAR_AUX or singular_verb_base(word) is not None:
                n += 1
                break
            if not (low in ADVERBS or low.endswith("ly")):
                break
    return n


def agreement_ok(row: dict) -> bool:
    """The neutral version has no more "they" + singular verb slips than the source (the rewrite's agreement slip
    the polarity check cannot see; :data:`AGREEMENT_SCOPE` says what is checked)."""
    return _they_singular(row[NEUTRAL]) <= _they_singular(row.get("source", ""))


def check_cda_tools() -> None:
    """Before any text is rewritten: the verb lexicon the rewrite and its agreement check read (lemminflect, a fairmt
    dependency) is importable and loads its data; a :class:`~fairmt.errors.FairmtError` naming the fix otherwise
    (CDA needs no spaCy pipeline: its agreement check is lemminflect's lexicon, :data:`AGREEMENT_SCOPE`)."""
    from fairmt.errors import FairmtError

    try:
        from fairmt.data.gender import singular_verb_base

        ok = singular_verb_base("goes") == "go"
    except Exception as err:  # ImportError, or its lexicon files missing or unreadable
        raise FairmtError(
            f"CDA needs lemminflect's English verb lexicon (the they-agreement of the neutral versions) "
            f"and it cannot be used: {type(err).__name__}: {err}; `pip install lemminflect` (a fairmt "
            "dependency) and run again"
        ) from None
    if not ok:
        raise FairmtError(
            "lemminflect's verb lexicon does not give 'goes' → 'go': a damaged install; reinstall lemminflect"
        )


def cda_tuple(text: str) -> dict:
    """``{"neutral", "male", "female", "source"}`` versions of ``text`` by lexicon rules."""
    from fairmt.data.gender import neutralize, to_gender

    return {
        NEUTRAL: neutralize(text),
        "male": to_gender(text, "male"),
        "female": to_gender(text, "female"),
        "source": text,
    }


@dataclass
class CDAStats:
    """What :func:`cda_augment` did with its input texts."""

    n_input: int = 0
    n_not_gendered: int = 0
    n_failed_polarity: int = 0
    n_failed_agreement: int = 0
    n_duplicates: int = 0
    n_output: int = 0
    failed_examples: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def cda_augment(
    texts: Iterable[str],
    require_gendered: bool = True,
    drop_wrong_polarity: bool = True,
    dedupe: bool = True,
    keep_failed: int = 20,
) -> tuple[list[dict], CDAStats]:
    """CCD tuples from ``texts`` by rule-based CDA.

    Args:
        texts: source sentences.
        require_gendered: skip texts with no gendered word (their three versions would be identical).
        drop_wrong_polarity: drop tuples whose neutral/male/female versions fail the polarity check (Eq. 6), or
            whose neutral version reads "they" + a singular auxiliary (:func:`agreement_ok`).
        dedupe: skip repeated source texts.
        keep_failed: how many dropped tuples to keep in the stats for inspection.
    """
    from fairmt.data.gender import detect_gender

    stats = CDAStats()
    out, seen = [], set()
    for text in texts:
        stats.n_input += 1
        text = text.strip()
        if dedupe:
            if text in seen:
                stats.n_duplicates += 1
                continue
            seen.add(text)
        if require_gendered and detect_gender(text) == "none":
            stats.n_not_gendered += 1
            continue
        row = cda_tuple(text)
        if drop_wrong_polarity and not all(check_tuple(row, GENDER_GROUPS).values()):
            stats.n_failed_polarity += 1
            if len(stats.failed_examples) < keep_failed:
                stats.failed_examples.append(row)
            continue
        if drop_wrong_polarity and not agreement_ok(row):
            stats.n_failed_agreement += 1
            if len(stats.failed_examples) < keep_failed:
                stats.failed_examples.append(row)
            continue
        out.append(row)
    stats.n_output = len(out)
    return out, stats
