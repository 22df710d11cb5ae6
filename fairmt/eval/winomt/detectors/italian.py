"""Italian (``it``) by rules: articles and articulated prepositions, then noun suffixes (no Italian spaCy pipeline
installs offline)."""

from __future__ import annotations

import re

from fairmt.eval.winomt.detectors.base import _PUNCT, F, M, TokenVoteDetector
from fairmt.eval.winomt.io import Gender

IT_ARTICLES = {
    "il": M, "lo": M, "un": M, "uno": M, "del": M, "dello": M, "al": M, "allo": M, "dal": M, "dallo": M,
    "nel": M, "nello": M, "sul": M, "sullo": M, "col": M, "questo": M, "quel": M, "quello": M,
    "la": F, "una": F, "della": F, "alla": F, "dalla": F, "nella": F, "sulla": F, "questa": F, "quella": F,
    "un'": F, "le": F, "delle": F, "alle": F, "dalle": F, "nelle": F, "sulle": F,
    "i": M, "gli": M, "dei": M, "degli": M, "ai": M, "agli": M, "dai": M, "dagli": M, "nei": M, "negli": M,
}  # fmt: skip
IT_FUNCTION_WORDS = frozenset(
    "a ad da di e ed o in con su per tra fra ha hanno che chi se ma non si ci ne mi ti vi era sono è come anche "
    "perché poiché quando dove qualcuno qualcuna".split()
) - {"qualcuno", "qualcuna"}  # function words and auxiliaries carry no gender ("a qualcuno", "ha")
_IT_ELIDED_F = re.compile(r"^(un'|un’)", re.I)


class ItalianRuleDetector(TokenVoteDetector):
    """Italian without a spaCy model: articles/articulated prepositions (incl. elided ``un'``), then noun suffixes
    (-essa/-trice/-a feminine, -ore/-iere/-o masculine); elided ``l'``/``dell'`` carry no gender (the noun decides),
    ambiguous -ista/-e nouns with no article give no vote."""

    lang = "it"

    def token_gender(self, token: str) -> Gender | None:
        tok = token.lower().strip(_PUNCT)
        if not tok:
            return None
        if _IT_ELIDED_F.match(tok):
            return F
        if "'" in tok or "’" in tok:  # l'infermiera, dell'avvocato: judge the noun after the apostrophe
            tok = re.split(r"['’]", tok)[-1]
            if not tok:
                return None
        if tok in IT_ARTICLES:
            return IT_ARTICLES[tok]
        if tok in IT_FUNCTION_WORDS or re.search(r"(ava|eva|iva|avano|evano|ò|ì)$", tok):  # + imperfect/past verbs
            return None
        if re.search(r"(essa|trice)$", tok):
            return F
        if re.search(r"(ore|iere|ino|aio)$", tok):
            return M
        if tok.endswith("ista") or tok.endswith("e"):
            return None
        if tok.endswith("a"):
            return F
        if tok.endswith("o"):
            return M
        return None
