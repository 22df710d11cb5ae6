"""Zhao et al. (2018)'s gendered word lists (WinoBias), the lexicon the GACL paper filters and swaps with.

Lee et al. (2023, GACL §3.1) keep the English sources with gendered words of one gender "using the gendered word list
by (Zhao et al., 2018)" and re-inflect them "by simply swapping the male words with the female counterparts and vice
versa, as in (Zhao et al., 2018)". Those lists are the WinoBias repository's (uclanlp/corefBias, MIT):
``generalized_swaps.txt`` (one direction per line: ``word<TAB>swap``) and ``extra_gendered_words.txt`` (one pair per
line, swapped both ways). They are fetched by ``fairmt data download lexicons`` into ``lexicons/corefBias_*`` of the
data folder (never shipped in the package) and read here as WinoBias's ``word_swapper.py`` reads them: the last two
tab-separated fields of each line, later lines overriding earlier ones.

What the lists do not say, fairmt decides (each declared on the GACL card):

* **which word of a pair is male**: the lists pair words without a gender. A word of fairmt's own lexicon
  (:mod:`fairmt.data.lexicon`) takes its gender there (its partner the other); a pair with neither word there is
  female on the side with a female morpheme (``woman``/``women``, ``girl``, ``-ess``/``-esses``, ``mrs``, ``ms``,
  ``belle``, ``chick``), male on the other (:func:`zhao_genders`; every pair of the published lists resolves);
* **"her"**: ``word_swapper.py`` swaps it to ``him`` (a personal pronoun) or ``his`` by its part-of-speech tag; fairmt
  decides from the next word, as for its own lexicon (:mod:`fairmt.data.gender`);
* **titles**: the lists write ``mr.``/``mrs.``/``ms.``; a title is matched with or without its full stop;
* **case**: a swapped word keeps a leading capital (as ``word_swapper.py``) or an all-capitals spelling.

:func:`zhao_lexicon` gives a :class:`WordListLexicon` with ``detect_gender`` and ``swap_gender`` of the same contract
as :func:`fairmt.data.gender.detect_gender` / :func:`~fairmt.data.gender.swap_gender`;
:func:`gacl_lexicon` selects one by name (:data:`GACL_LEXICONS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fairmt.errors import FairmtError

FILES = ("corefBias_generalized_swaps.txt", "corefBias_extra_gendered_words.txt")
"""The two lists under ``lexicons/`` of the data folder (``fairmt data download lexicons``)."""
GACL_LEXICONS = ("fairmt", "zhao2018")
"""The lexicons GACL's filter and swap can use: fairmt's own (:mod:`fairmt.data.lexicon`) and Zhao et al.'s."""

_FEMALE_MORPHEME = re.compile(r"wom[ae]n|girl|ess(?:es)?$|^mrs$|^ms$|^belles?$|^chicks?$")
_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")


def _key(word: str) -> str:
    """A list entry as matched: lower case, without the title's full stop or a stray apostrophe (``seamstress'``)."""
    return word.strip().lower().rstrip(".").strip("'’")


def read_swaps(folder: str | Path | None = None) -> dict[str, str]:
    """Word → swap of Zhao et al.'s lists, read as ``word_swapper.py`` reads them (see the module docstring).

    ``folder``: where the two files are (default: ``lexicons/`` of the data folder, :func:`fairmt.data.paths.data_path`).
    """
    if folder is None:
        from fairmt.data.paths import data_path

        folder = data_path("lexicons")
    swaps: dict[str, str] = {}
    for name, both in zip(FILES, (False, True)):
        path = Path(folder) / name
        if not path.is_file():
            raise FairmtError(
                f"Zhao et al.'s word list {path} not found: fetch it with `fairmt data download lexicons`"
            )
        for line in path.read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            if len(fields) < 2 or not fields[-2].strip() or not fields[-1].strip():
                continue
            a, b = _key(fields[-2]), _key(fields[-1])
            swaps[a] = b
            if both:
                swaps[b] = a
    if not swaps:
        raise FairmtError(f"Zhao et al.'s word lists in {folder} hold no word pairs")
    return swaps


def zhao_genders(swaps: dict[str, str]) -> dict[str, str]:
    """Word → ``"male"``/``"female"`` for every word of ``swaps`` (the rule of the module docstring). A pair whose
    gender cannot be told, or a word given both genders by two pairs, is an error naming it."""
    from fairmt.data.lexicon import FEMALE, MALE, words

    known = {**{w: MALE for w in words(MALE)}, **{w: FEMALE for w in words(FEMALE)}}
    out: dict[str, str] = {}
    for a, b in swaps.items():
        if a == b:
            continue
        ga, gb = known.get(a), known.get(b)
        if ga is None and gb is None:
            fa, fb = bool(_FEMALE_MORPHEME.search(a)), bool(_FEMALE_MORPHEME.search(b))
            if fa == fb:
                raise FairmtError(f"cannot tell which of {a!r} and {b!r} is female")
            ga = FEMALE if fa else MALE
        elif ga is None:
            ga = MALE if gb == FEMALE else FEMALE
        gb = MALE if ga == FEMALE else FEMALE
        for w, g in ((a, ga), (b, gb)):
            if out.setdefault(w, g) != g:
                raise FairmtError(f"{w!r} is {out[w]} in one pair of the word lists and {g} in another")
    return out


def _match_case(template: str, word: str) -> str:
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[0].isupper():
        return word[0].upper() + word[1:]
    return word


@dataclass(frozen=True)
class WordListLexicon:
    """Gender detection and swapping from a word → swap map and word → gender map."""

    swaps: dict[str, str]
    genders: dict[str, str]
    name: str = "zhao2018"

    def gendered_words(self, text: str) -> dict[str, list[str]]:
        """The gendered words of ``text``, by gender."""
        found: dict[str, list[str]] = {"male": [], "female": []}
        for m in _WORD.finditer(text):
            g = self.genders.get(_key(m.group(0)))
            if g:
                found[g].append(m.group(0))
        return found

    def detect_gender(self, text: str) -> str:
        """``"male"``, ``"female"``, ``"both"`` or ``"none"``: which genders the sentence's listed words mark."""
        found = self.gendered_words(text)
        has_m, has_f = bool(found["male"]), bool(found["female"])
        return "both" if has_m and has_f else "male" if has_m else "female" if has_f else "none"

    def swap_gender(self, text: str) -> str:
        """``text`` with every listed word replaced by its swap (``her`` → ``him``/``his`` by the next word)."""
        from fairmt.data.gender import _stands_alone

        out, last = [], 0
        for m in _WORD.finditer(text):
            word = _key(m.group(0))
            new = ("him" if _stands_alone(text, m.end()) else "his") if word == "her" else self.swaps.get(word)
            if new is None:
                continue
            out.append(text[last : m.start()])
            out.append(_match_case(m.group(0), new))
            last = m.end()
        out.append(text[last:])
        return "".join(out)


def zhao_lexicon(folder: str | Path | None = None) -> WordListLexicon:
    """Zhao et al.'s lists as a :class:`WordListLexicon` (``folder``: as :func:`read_swaps`)."""
    swaps = read_swaps(folder)
    return WordListLexicon(swaps, zhao_genders(swaps))


def gacl_lexicon(name: str) -> tuple[Callable[[str], str], Callable[[str], str]]:
    """``(detect_gender, swap_gender)`` of the lexicon ``name`` (one of :data:`GACL_LEXICONS`)."""
    if name == "fairmt":
        from fairmt.data.gender import detect_gender, swap_gender

        return detect_gender, swap_gender
    if name == "zhao2018":
        lex = zhao_lexicon()
        return lex.detect_gender, lex.swap_gender
    raise FairmtError(f"unknown lexicon {name!r}; choose one of {', '.join(GACL_LEXICONS)}")


__all__ = ["FILES", "GACL_LEXICONS", "WordListLexicon", "gacl_lexicon", "read_swaps", "zhao_genders", "zhao_lexicon"]
