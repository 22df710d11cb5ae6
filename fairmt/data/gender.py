"""Gender of English sentences, and counterfactual re-inflection, from fairmt's lexicon.

* :func:`detect_gender` → ``"male"``, ``"female"``, ``"both"`` or ``"none"``. Words in
  :data:`fairmt.data.lexicon.AMBIGUOUS` and their counterparts (:data:`UNDETECTED`) do not count, so detection is
  symmetric: the label of :func:`swap_gender` of a sentence is the sentence's label with male and female exchanged.
* :func:`swap_gender` swaps every gendered word for its counterpart (Zhao et al. 2018 style re-inflection, as GACL
  applies to the English source), keeping case; :func:`to_gender` turns a text into one gender;
  :func:`neutralize` replaces gendered words by neutral terms.

Rules for ambiguous pronouns (documented limits of a rule-based swap, no parser):

* ``her`` followed by a content word (``her book``, ``her own``) is possessive → ``his``; followed by the end of
  the sentence, punctuation or a function word (``to her.``, ``gave her the``, ``her and``) it is an object →
  ``him``. ``made her happy`` is swapped to ``made his happy``: adjectives after an object ``her`` are not told
  apart from adjectives before a noun.
* ``his`` standing alone (end, punctuation, function word: ``it is his.``) → ``hers``; otherwise → ``her``.
* :func:`neutralize` fixes the agreement of the auxiliaries after a subject he/she (``she was`` → ``they were``,
  ``he's`` → ``they're``) but not of other verbs (``he runs`` → ``they runs``); :func:`fairmt.data.augment.cda`
  drops tuples whose neutral version still reads "they is/was/has/does".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fairmt.data.lexicon import AMBIGUOUS, FEMALE, MALE, PAIRS

_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")

# Closed-class words after which "her"/"his" are pronouns rather than determiners.
_FUNCTION_WORDS = frozenset(
    """a an the this that these those some any no every each all both either neither my your his her its our
    their i you he she it we they me him us them myself yourself himself herself itself ourselves themselves
    to of in on at by for with from into onto about as than like over under after before since until up down
    out off back away through around across along against between among without within upon
    and or but nor so yet if because while when where whether though although unless once
    is am are was were be been being has have had do does did will would shall should can could may might must
    not never also too very just again now then there here today tomorrow yesterday tonight already still
    soon later always often sometimes anyway instead either""".split()
)

_TO_FEMALE: dict[str, str] = {}
_TO_MALE: dict[str, str] = {}
_NEUTRAL: dict[str, str] = {}
for _p in PAIRS:
    _TO_FEMALE.setdefault(_p.male, _p.female)
    _TO_MALE.setdefault(_p.female, _p.male)
    if _p.neutral:
        _NEUTRAL.setdefault(_p.male, _p.neutral)
        _NEUTRAL.setdefault(_p.female, _p.neutral)


def _undetected() -> frozenset[str]:
    """AMBIGUOUS closed under swapping: a word is used for detection only if its counterpart is too, so that
    ``detect_gender(swap_gender(s))`` is ``detect_gender(s)`` with male and female exchanged. ("ms" is handled by a
    case rule in :func:`gendered_words` instead.)"""
    swap = {**_TO_FEMALE, **_TO_MALE}
    out = set(AMBIGUOUS)
    grown = True
    while grown:
        grown = False
        for w, s in swap.items():
            if (w in out) != (s in out) and s != "ms" and w != "ms":
                out |= {w, s}
                grown = True
    return frozenset(out)


UNDETECTED = _undetected()
_DETECT = {w: MALE for w in _TO_FEMALE if w not in UNDETECTED}
_DETECT.update({w: FEMALE for w in _TO_MALE if w not in UNDETECTED})
_DETECT.pop("ms", None)  # the title only when written "Ms" (below); "MS"/"ms" are mostly not a title


def _match_case(template: str, word: str) -> str:
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[0].isupper():
        return word[0].upper() + word[1:]
    return word


def _stands_alone(text: str, end: int) -> bool:
    """True when the word ending at ``end`` is followed by nothing, punctuation or a function word."""
    rest = text[end:]
    m = re.match(r"\s*([A-Za-z]+(?:-[A-Za-z]+)*)", rest)
    if m is None:
        return True
    if rest[: m.start(1)].strip():  # punctuation between the word and the next one
        return True
    return m.group(1).lower() in _FUNCTION_WORDS


def _replacement(word: str, text: str, end: int, target: str | None) -> str | None:
    """The replacement of one lower-cased word towards ``target`` (male/female/None = swap/'neutral')."""
    alone = None
    if word in ("her", "his"):
        alone = _stands_alone(text, end)
    if target == "neutral":
        if word == "her":
            return "them" if alone else "their"
        if word == "his":
            return "theirs" if alone else "their"
        return _NEUTRAL.get(word)
    if word == "her" and target in (None, MALE):
        return "him" if alone else "his"
    if word == "his" and target in (None, FEMALE):
        return "hers" if alone else "her"
    if target in (None, FEMALE) and word in _TO_FEMALE:
        return _TO_FEMALE[word]
    if target in (None, MALE) and word in _TO_MALE:
        return _TO_MALE[word]
    return None


def _rewrite(text: str, target: str | None) -> str:
    out, last = [], 0
    for m in _WORD.finditer(text):
        if m.group(0).lower() == "ms" and m.group(0) != "Ms":
            continue  # "MS"/"ms" (a disease, a manuscript, ...) is not the title: left alone, as in detection
        new = _replacement(m.group(0).lower(), text, m.end(), target)
        if new is None:
            continue
        out.append(text[last : m.start()])
        out.append(_match_case(m.group(0), new))
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def swap_gender(text: str) -> str:
    """The gender-swapped counterfactual of ``text`` (every gendered word replaced by its counterpart)."""
    return _rewrite(text, None)


def to_gender(text: str, gender: str) -> str:
    """``text`` with every gendered word turned into ``gender`` (``"male"`` or ``"female"``)."""
    if gender not in (MALE, FEMALE):
        raise ValueError(f"gender must be 'male' or 'female', got {gender!r}")
    return _rewrite(text, gender)


# he/she + a singular auxiliary → they + its plural form (the neutral version must not read "they was")
_AUX_PLURAL = {
    "is": "are",
    "was": "were",
    "has": "have",
    "does": "do",
    "isn't": "aren't",
    "wasn't": "weren't",
    "hasn't": "haven't",
    "doesn't": "don't",
    "'s": "'re",
}
_SUBJECT_AUX = re.compile(r"\b(he|she)(\s+(?:is|was|has|does)(?:n't)?\b|'s\b)", re.IGNORECASE)


def _agree(m: re.Match) -> str:
    pronoun, rest = m.group(1), m.group(2)
    aux = rest.strip()
    if aux == "'s":  # he's / she's: "is" or "has"; read as "is" (the commoner) → they're
        return _match_case(pronoun, "they") + "'re"
    plural = _AUX_PLURAL[aux.lower()]
    return _match_case(pronoun, "they") + rest[: len(rest) - len(rest.lstrip())] + _match_case(aux, plural)


# questions: the auxiliary opens the sentence or follows a wh-word ("This is she." stays)
_AUX_SUBJECT = re.compile(
    r"((?:^|[.!?]\s+|\b(?:what|where|when|why|how|who|whom|whose|which)\s+))((?:is|was|has|does)(?:n't)?)(\s+)(he|she)\b",
    re.IGNORECASE,
)


def _agree_inverted(m: re.Match) -> str:
    lead, aux, space, pronoun = m.groups()
    return lead + _match_case(aux, _AUX_PLURAL[aux.lower()]) + space + _match_case(pronoun, "they")


ADVERBS = frozenset(
    """always never often also still just only even sometimes usually already then now really once too rarely
    seldom soon later first again""".split()
)
"""Adverbs that may stand between a subject pronoun and its verb (besides any word in ``-ly``)."""

_SUBJECT_VERB = re.compile(
    r"\b(he|she)((?:\s+(?:[A-Za-z]+ly|" + "|".join(sorted(ADVERBS)) + r")){0,2})(\s+)([A-Za-z]+s)\b", re.IGNORECASE
)


def singular_verb_base(word: str) -> str | None:
    """The plural (base) form of ``word`` when it is the third-person singular present of an English verb in
    lemminflect's lexicon (``cultivates`` → ``cultivate``, ``goes`` → ``go``), keeping its case; None otherwise
    (``news``, ``always``, an unknown word)."""
    from lemminflect import getAllInflections, getLemma

    low = word.lower()
    for lemma in getLemma(low, upos="VERB"):
        forms = getAllInflections(lemma, upos="VERB")
        if lemma != low and low in forms.get("VBZ", ()):
            return _match_case(word, forms.get("VBP", (lemma,))[0])
    return None


def _agree_verb(m: re.Match) -> str:
    pronoun, adverbs, space, verb = m.groups()
    base = singular_verb_base(verb)
    return m.group(0) if base is None else pronoun + adverbs + space + base


def neutralize(text: str) -> str:
    """``text`` with gendered words replaced by neutral terms (they/their/them, parent, person, ...); a subject
    he/she next to is/was/has/does (or their negations, or 's; also inverted in questions) becomes they +
    are/were/have/do, and one followed (after at most two adverbs) by a third-person singular verb of lemminflect's
    lexicon takes the verb's plural form (``she cultivates`` → ``they cultivate``). A verb further from its
    pronoun keeps its agreement (``he came and sees`` → ``they came and sees``): no parser."""
    text = _SUBJECT_VERB.sub(_agree_verb, _AUX_SUBJECT.sub(_agree_inverted, _SUBJECT_AUX.sub(_agree, text)))
    return _rewrite(text, "neutral")


def gendered_words(text: str) -> dict[str, list[str]]:
    """The (unambiguous) gendered words of ``text``, by gender."""
    found: dict[str, list[str]] = {MALE: [], FEMALE: []}
    for m in _WORD.finditer(text):
        word = m.group(0)
        g = FEMALE if word == "Ms" else _DETECT.get(word.lower())
        if g:
            found[g].append(word)
    return found


def detect_gender(text: str) -> str:
    """``"male"``, ``"female"``, ``"both"`` or ``"none"``: which genders the sentence's gendered words mark."""
    found = gendered_words(text)
    has_m, has_f = bool(found[MALE]), bool(found[FEMALE])
    if has_m and has_f:
        return "both"
    return MALE if has_m else FEMALE if has_f else "none"


def is_reversible(word: str) -> bool:
    """True when swapping ``word`` twice gives it back (not so for e.g. ``mrs`` → ``mr`` → ``ms``)."""
    w = word.lower()
    if w in ("her", "his", "him", "hers"):
        return True
    once = _TO_FEMALE.get(w) or _TO_MALE.get(w)
    if once is None:
        return True
    return (_TO_FEMALE.get(once) or _TO_MALE.get(once)) == w


def lexicon_words() -> Iterable[str]:
    return sorted(set(_TO_FEMALE) | set(_TO_MALE))
