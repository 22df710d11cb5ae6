"""Polish (``pl``): morfeusz2 with the SGJP dictionary, rules only where it is ambiguous or silent."""

from __future__ import annotations

import warnings

from fairmt.errors import FairmtError
from fairmt.eval.winomt.detectors.base import _PUNCT, F, GenderDetector, M, N, U, majority
from fairmt.eval.winomt.detectors.slavic_rules import SlavicRuleDetector
from fairmt.eval.winomt.io import Gender
from fairmt.eval.winomt.profession import TranslatedEntity

_MORF_GENDERS = {"m1": M, "m2": M, "m3": M, "f": F, "n": N}
_MORF_GENDERED_POS = frozenset(
    {"subst", "depr", "adj", "ppas", "pact"}
)  # nouns, adjectives (incl. ten/ta), participles
_ALL_CASES = {"nom", "gen", "dat", "acc", "inst", "loc", "voc"}
_TITLE = "title"  # a masculine-form title that SGJP also lists as an indeclinable feminine noun (dyrektor, sekretarz)


def _sgjp_base(lemma: str) -> str:
    """A lemma without SGJP's homonym mark (``dyrektor:Sf`` → ``dyrektor``)."""
    return lemma.split(":")[0]


class MorfeuszDetector(GenderDetector):
    """Polish gender from morfeusz2 with the SGJP dictionary (the analyser family of the WMT 2020 WinoMT extension).

    Each word of the entity (punctuation stripped) is analysed; its readings as nouns (``subst``, ``depr``),
    adjectives (``adj``: also the demonstratives ``ten``/``ta``/``tego``/``tej`` and adjectival nouns such as
    ``księgowy``/``księgowa``) and participles give its gender (``m1``/``m2``/``m3`` → male, ``f`` → female, ``n`` →
    neutral); singular readings are preferred when there are any. A word whose readings are masculine and neuter
    (``tego``: ``adj:sg:gen:m1.m2.m3.n``) is masculine. Majority vote over the words, first seen wins a tie; no
    gendered word → neutral; empty → unknown. Masculine nouns in ``-a`` (``kierowca``, ``sprzedawca``, ``poeta``)
    are ``m1`` in SGJP, so no suffix rule is needed for them.

    Rules apply only where the analyser is ambiguous or silent:

    - masculine and feminine readings of the same lemma (SGJP's indeclinable feminine ``dyrektor:Sf``,
      ``sekretarz:Sf`` beside ``:Sm1``; ``sędzia``): the word does not vote; if nothing else in the entity votes,
      the masculine form decides (male);
    - a form of ``pani`` directly before a masculine noun (``pani dyrektor``, ``panią sekretarz``, ``pani
      kierowca``), in the entity or just before it in the translation → female, whatever the vote;
    - a masculine person noun against a feminine noun whose lemma is the masculine lemma + ``a`` (``mechanika``:
      genitive of ``mechanik`` or "mechanics"; ``technika``, ``fizyka``) → male (the feminine one is the field);
    - masculine and feminine readings of different lemmas, one of which is the word itself (``dyrektorka``: the
      feminine noun, or a form of the diminutive ``dyrektorek``) → the gender of the word's own lemma;
    - other masculine/feminine ambiguity: the word does not vote; if no word of the entity votes, the word just
      before the entity in the translation decides when it is an adjective or demonstrative that agrees;
    - a word the dictionary does not know (tag ``ign``): the suffix rules of :class:`SlavicRuleDetector`.
    """

    lang = "pl"
    uses_context = True  # the word before the entity is read when the entity itself is ambiguous (pani, ten, ta)

    def __init__(self) -> None:
        super().__init__()
        try:
            import morfeusz2
        except ImportError as err:
            raise FairmtError(
                "the Polish gender detector needs morfeusz2 (with the SGJP dictionary in its wheel): "
                "pip install 'fairmt[morph]' or pip install morfeusz2"
            ) from err
        try:
            self.morf = morfeusz2.Morfeusz()
        except Exception as err:  # a broken wheel or missing dictionary
            raise FairmtError(f"morfeusz2 is installed but its dictionary does not load: {err}") from err
        self.version = getattr(morfeusz2, "__version__", "unknown")
        self.dict_id = self.morf.dict_id()
        self.rules = SlavicRuleDetector("pl")
        self._words: dict[str, tuple] = {}

    @property
    def signature_name(self) -> str:
        return f"morfeusz2-{self.version}+SGJP-{self.dict_id}"

    def readings(self, word: str) -> list[tuple[str, str, str, Gender]]:
        """``(lemma, pos, tag, gender)`` for each gendered reading of one word (gender fields expanded)."""
        out: list[tuple[str, str, str, Gender]] = []
        for _start, _end, interp in self.morf.analyse(word):
            lemma, tag = interp[1], interp[2]
            parts = tag.split(":")
            if parts[0] not in _MORF_GENDERED_POS:
                continue
            for field in parts[1:]:
                values = field.split(".")
                if all(v in _MORF_GENDERS for v in values):
                    out.extend((lemma, parts[0], tag, g) for g in dict.fromkeys(_MORF_GENDERS[v] for v in values))
                    break
        return out

    def word_info(self, word: str) -> tuple[Gender | str | None, bool, bool]:
        """``(vote, is_pani, masculine_noun)`` for one word: vote is a Gender, :data:`_TITLE`, or None (no vote)."""
        tok = word.strip(_PUNCT)
        if not tok:
            return None, False, False
        if tok in self._words:
            return self._words[tok]
        analyses = self.morf.analyse(tok)
        info: tuple[Gender | str | None, bool, bool]
        if all(a[2][2] == "ign" for a in analyses):  # unknown to SGJP: suffix rules
            info = (self.rules.token_gender(tok), False, False)
        else:
            info = self._judge(self.readings(tok), tok)
        self._words[tok] = info
        return info

    def _judge(self, readings: list, tok: str) -> tuple[Gender | str | None, bool, bool]:
        is_pani = any(lemma == "pani" for lemma, *_ in readings)
        singular = [r for r in readings if r[2].split(":")[1].split(".")[0] == "sg"]
        readings = singular or readings
        masculine_noun = any(pos in ("subst", "depr") and g == M for _, pos, _, g in readings)
        genders = {g for *_, g in readings}
        if not genders:
            return None, is_pani, masculine_noun
        if genders == {M, N}:
            return M, is_pani, masculine_noun
        if len(genders) == 1:
            return genders.pop(), is_pani, masculine_noun
        if M in genders and F in genders:
            masc = {_sgjp_base(lem) for lem, pos, _, g in readings if g == M and pos in ("subst", "depr")}
            fem = {_sgjp_base(lem) for lem, pos, _, g in readings if g == F and pos in ("subst", "depr")}
            if masc & fem:  # one lemma, both genders: dyrektor, sekretarz, sędzia
                return _TITLE, is_pani, masculine_noun
            if masc and fem and all(any(f == m + "a" for m in masc) for f in fem):  # mechanik / mechanika
                return M, is_pani, masculine_noun
            own = {g for lemma, _, _, g in readings if _sgjp_base(lemma).lower() == tok.lower()}
            if len(own) == 1:  # dyrektorka: its own lemma (f) rather than a form of the diminutive dyrektorek (m1)
                return own.pop(), is_pani, masculine_noun
        return None, is_pani, masculine_noun

    def detect_text(self, text: str) -> Gender:
        words = tuple(text.split())
        return self.detect_entity(TranslatedEntity(words, tuple(range(len(words))), words))

    def detect_entity(self, entity: TranslatedEntity) -> Gender:
        if not entity.text.strip():
            return U
        infos = [self.word_info(w) for w in entity.words]
        first = min(entity.indices) if entity.indices else 0
        before = self.word_info(entity.target_tokens[first - 1]) if 0 < first <= len(entity.target_tokens) else None
        # pani + a masculine noun (pani dyrektor, panią sekretarz, pani kierowca): female
        chain = ([before] if before else []) + infos
        if any(a[1] and b[2] and not b[1] for a, b in zip(chain, chain[1:])):
            return F
        votes = [v for v, *_ in infos if isinstance(v, Gender)]
        if votes:
            return majority(votes)
        if before is not None and isinstance(before[0], Gender) and before[0] != N and self._agrees(entity, first - 1):
            return before[0]
        if any(v == _TITLE for v, *_ in infos):
            return M
        return N

    def _agrees(self, entity: TranslatedEntity, k: int) -> bool:
        """Whether the word at ``k`` can modify the entity: an adjective/demonstrative reading, or pan/pani."""
        readings = self.readings(entity.target_tokens[k].strip(_PUNCT))
        return any(pos in ("adj", "ppas", "pact") or lemma in ("pan", "pani") for lemma, pos, *_ in readings)


def polish_detector() -> GenderDetector:
    """:class:`MorfeuszDetector`, or the suffix rules (with a warning) when morfeusz2 is not installed."""
    try:
        return MorfeuszDetector()
    except FairmtError as err:
        warnings.warn(
            f"{err}; Polish WinoMT genders fall back to suffix rules (signature: slavic-rules-pl)", stacklevel=2
        )
        return SlavicRuleDetector("pl")
