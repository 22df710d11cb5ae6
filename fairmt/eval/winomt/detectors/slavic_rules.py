"""Polish and Czech by rules (demonstratives, pan/pani, noun suffixes): the fallback when their analysers
(morfeusz2, the Czech spaCy pipeline) are not installed."""

from __future__ import annotations

import re

from fairmt.errors import FairmtError
from fairmt.eval.winomt.detectors.base import _PUNCT, F, M, TokenVoteDetector
from fairmt.eval.winomt.io import Gender

PL_WORDS = {"ten": M, "tego": M, "temu": M, "tym": M, "ta": F, "tej": F, "tę": F, "tą": F, "pan": M, "pani": F}
CS_WORDS = {"ten": M, "toho": M, "tomu": M, "tím": M, "ta": F, "té": F, "tu": F, "tou": F, "pan": M, "paní": F}


class SlavicRuleDetector(TokenVoteDetector):
    """Czech / Polish without a morphological analyser: demonstratives and pan/pani, then noun suffixes.

    Feminine: -ka/-ki/-kę/-ką/-ce (pl), -ka/-ky/-ce/-kou/-yně/-yni/-ová/-ice (cs), adjectival -a/-á; masculine:
    consonant endings and -a/-u/-owi/-em (pl) or -e/-ovi/-em (cs) case forms of masculine nouns.
    """

    def __init__(self, lang: str):
        super().__init__()
        if lang not in ("pl", "cs"):
            raise FairmtError(f"SlavicRuleDetector supports pl and cs, not '{lang}'")
        self.lang = lang
        self.words = PL_WORDS if lang == "pl" else CS_WORDS
        fem = r"(ka|ki|kę|ką|ce|ini|yni|ynią|yně|ová|ice|kou|ky|ní)$"
        self.fem = re.compile(fem)

    @property
    def signature_name(self) -> str:
        return f"slavic-rules-{self.lang}"

    def token_gender(self, token: str) -> Gender | None:
        tok = token.lower().strip(_PUNCT)
        if not tok:
            return None
        if tok in self.words:
            return self.words[tok]
        if self.fem.search(tok):
            return F
        if re.search(r"[bcdfghjklłmnprsśtwzźżčďňřšťž]$", tok) or re.search(r"(owi|em|ovi|iem)$", tok):
            return M
        return None
