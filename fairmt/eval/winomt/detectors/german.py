"""German (``de``): feminine noun endings, else the nearest determiner or pronoun (the 2019 rules)."""

from __future__ import annotations

from fairmt.eval.winomt.detectors.base import _PUNCT, F, GenderDetector, M, N
from fairmt.eval.winomt.io import Gender
from fairmt.eval.winomt.profession import TranslatedEntity

DE_DETERMINERS = {
    "der": M, "ein": M, "dem": M, "einen": M, "des": M, "er": M, "seiner": M, "ihn": M, "seinen": M, "ihm": M,
    "ihren": M, "die": F, "eine": F, "einer": F, "ihrer": F, "ihr": F,
}  # fmt: skip
# Deliberately absent: "den" (also dative plural), and the neuter "das"/"es", which in WinoMT translations
# belong to objects ("das Problem", "hat es genossen") rather than to the person being looked for.
DE_FEMININE_ENDINGS = ("in", "innen", "schwester", "frau", "dame", "kraft")


class GermanDetector(GenderDetector):
    """German: feminine noun endings, else the nearest determiner/pronoun at or before the entity.

    1. Any aligned word ending in ``-in``/``-innen`` or a feminine head noun (``-schwester``, ``-frau``,
       ``-dame``, ``-kraft``) → female.
    2. Otherwise scan the translation leftwards from the last aligned word (inclusive) to the first word in
       :data:`DE_DETERMINERS` and take its gender ("den", "das" and "es" are skipped, so "fragte den Inspektor"
       is decided by an earlier determiner, which is what makes identical entities differ in the 2019 log).
    3. No determiner → neutral; no aligned word → male.

    This reconstruction of the (unpublished-in-detail) 2019 rules gives 59.3 / ΔG 12.3 on the Google
    translations, against 59.4 / 12.5 in the 2019 log; the confusion matrices differ by 72 cells-counts in all.
    """

    lang = "de"
    uses_context = True

    def detect_entity(self, entity: TranslatedEntity) -> Gender:
        if not entity.indices:
            return M
        words = [w.strip(_PUNCT).lower() for w in entity.words]
        if any(w.endswith(DE_FEMININE_ENDINGS) for w in words):
            return F
        for k in range(min(max(entity.indices), len(entity.target_tokens) - 1), -1, -1):
            w = entity.target_tokens[k].strip(_PUNCT).lower()
            if w in DE_DETERMINERS:
                return DE_DETERMINERS[w]
        return N

    def detect_text(self, text: str) -> Gender:
        words = tuple(text.split())
        return self.detect_entity(TranslatedEntity(words, tuple(range(len(words))), words))
