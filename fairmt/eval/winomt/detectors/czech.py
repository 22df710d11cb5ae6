"""Czech (``cs``): the spaCy pipeline ``cs_core_news_sm`` read in context, rules only where it is ambiguous."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

from fairmt.errors import FairmtError
from fairmt.eval.winomt.detectors.base import _PUNCT, F, GenderDetector, M, N, U, majority
from fairmt.eval.winomt.detectors.slavic_rules import CS_WORDS, SlavicRuleDetector
from fairmt.eval.winomt.detectors.spacy_morph import SpacyDetector
from fairmt.eval.winomt.io import Gender
from fairmt.eval.winomt.profession import TranslatedEntity

_CS_VOTING_POS = frozenset({"NOUN", "PROPN", "ADJ", "DET", "PRON", "NUM"})
_CS_FEMININE_LEMMA_ENDINGS = ("ka", "kyně", "yně", "ice", "ová")
CS_SPACY_MODEL = "cs_core_news_sm"


class CzechSpacyDetector(SpacyDetector):
    """Czech gender from the spaCy pipeline ``cs_core_news_sm`` (PyPI ``cs-core-news-sm`` 0.2.1, CC BY-NC-SA:
    the optional ``fairmt[cs]`` extra): ``token.morph`` ``Gender=Masc|Fem|Neut`` (Animacy ignored) of the entity's
    nouns, adjectives, determiners and pronouns (verbs agree with their clause's subject, which may be the other
    person, so they do not vote); ``Masc,Neut`` (``toho``) counts as masculine. Majority vote, first seen wins a
    tie; no gendered word → neutral; empty → unknown.

    ``context=True`` (default): the tagger runs over the whole translation and the entity's words are read from
    it (the tagger is contextual: alone, ``instalatéra`` or ``architekta`` come out feminine, in a sentence
    masculine); ``context=False`` tags the entity's words alone, as the reference evaluation's detectors did.

    Rules apply only where the analysis is ambiguous:

    - soft adjectival nouns in ``-í`` (``účetní``, ``pokladní``, ``vedoucí``, ``krejčí``) have one form for both
      genders, so the tagger's gender for them is a guess, and neuter readings of a person noun come from the
      masculine/neuter syncretism of oblique cases (``účetním``): when no other word of the entity is masculine
      or feminine, a demonstrative or ``pan``/``paní`` in the entity or just before it in the translation decides
      (``ten``/``ta``/``toho``/``té``/``tu``/``tím`` ...; spaCy tags ``tu`` as an adverb without gender), else the
      tagger's masculine/feminine guess, else neutral;
    - ``paní`` directly before a masculine noun (``paní doktor``) → female;
    - a noun the tagger calls masculine while the pipeline's own lemmatizer gives a feminine lemma in
      ``-ka``/``-kyně``/``-yně``/``-ice``/``-ová`` (``překladatelce`` → ``překladatelka``) → female. (The
      opposite direction is not used: the lemmatizer often gives feminine forms a masculine lemma, ``číšnici`` →
      ``číšník``.)
    """

    uses_context = True

    def __init__(self, model: str = CS_SPACY_MODEL, context: bool = True):
        super().__init__(model, "cs")
        self.context = context
        self._sentences: dict[tuple[str, ...], list[list[tuple[str, Gender | None, bool]]]] = {}

    @property
    def signature_name(self) -> str:
        return super().signature_name + ("+context" if self.context else "")

    @staticmethod
    def _token_info(t) -> tuple[str, Gender | None, bool]:
        gender = None
        if t.pos_ in _CS_VOTING_POS:
            values = set(",".join(t.morph.get("Gender")).split(",")) - {""}
            if values in ({"Masc"}, {"Masc", "Neut"}):
                gender = M
            elif values in ({"Fem"}, {"Fem", "Neut"}):
                gender = F
            elif values == {"Neut"}:
                gender = N
            # the tagger against its own lemmatizer: a feminine lemma wins (překladatelce → překladatelka)
            if t.pos_ == "NOUN" and gender == M and t.lemma_.lower().endswith(_CS_FEMININE_LEMMA_ENDINGS):
                gender = F
        soft = t.lower_.endswith("í") and t.lemma_.lower().endswith("í") and t.pos_ in ("ADJ", "NOUN")
        return t.lower_, gender, soft

    def _by_word(self, words: tuple[str, ...], doc) -> list[list[tuple[str, Gender | None, bool]]]:
        """The spaCy tokens of ``" ".join(words)`` grouped by the whitespace word they fall in."""
        from bisect import bisect_right

        starts, pos = [], 0
        for w in words:
            starts.append(pos)
            pos += len(w) + 1
        out: list[list] = [[] for _ in words]
        for t in doc:
            out[bisect_right(starts, t.idx) - 1].append(self._token_info(t))
        return out

    def _key(self, entity: TranslatedEntity) -> tuple[str, ...]:
        ok = (
            self.context
            and entity.indices
            and max(entity.indices) < len(entity.target_tokens)
            and all(entity.target_tokens[i] == w for i, w in zip(entity.indices, entity.words))
        )
        return tuple(entity.target_tokens) if ok else tuple(entity.words)

    def _analysis(self, key: tuple[str, ...]):
        if key not in self._sentences:
            self._sentences[key] = self._by_word(key, self.nlp(" ".join(key)))
        return self._sentences[key]

    def detect_many(self, entities: Iterable[TranslatedEntity]) -> list[Gender]:
        """Tags each distinct translation (or entity, without context) once with ``nlp.pipe``."""
        entities = list(entities)
        todo = sorted({k for e in entities if e.words for k in [self._key(e)] if k not in self._sentences})
        for key, doc in zip(todo, self.nlp.pipe([" ".join(k) for k in todo], batch_size=256)):
            self._sentences[key] = self._by_word(key, doc)
        return [self.detect(e) for e in entities]

    def detect_text(self, text: str) -> Gender:
        words = tuple(text.split())
        return self.detect_entity(TranslatedEntity(words, tuple(range(len(words))), words))

    def detect_entity(self, entity: TranslatedEntity) -> Gender:
        if not entity.text.strip():
            return U
        key = self._key(entity)
        analysis = self._analysis(key)
        if key == tuple(entity.target_tokens):
            toks = [info for i in entity.indices for info in analysis[i]]
        else:
            toks = [info for word in analysis for info in word]
        first = min(entity.indices) if entity.indices else 0
        before = entity.target_tokens[first - 1].strip(_PUNCT).lower() if 0 < first <= len(entity.target_tokens) else ""
        chain = ([before] if before else []) + [t[0] for t in toks]
        genders = ([None] if before else []) + [t[1] for t in toks]
        if any(a == "paní" and g == M for a, g in zip(chain, genders[1:])):
            return F
        votes = [g for _, g, soft in toks if g in (M, F) and not soft]
        if votes:
            return majority(votes)
        # ambiguous: only soft adjectival nouns or neuter readings (účetním: Masc/Neut syncretism) — a
        # demonstrative/pan/paní in the entity (tu účetní) or just before it decides
        for word in [t[0] for t in toks] + [before]:
            if word in CS_WORDS:
                return CS_WORDS[word]
        return majority((g for _, g, _ in toks if g in (M, F)), empty=N)


def czech_detector(model: str | None = None) -> GenderDetector:
    """:class:`CzechSpacyDetector` (``model``: default :data:`CS_SPACY_MODEL`), or the suffix rules (with a
    warning) when that pipeline is not installed."""
    try:
        return CzechSpacyDetector(model or CS_SPACY_MODEL)
    except FairmtError as err:
        warnings.warn(
            f"{err}; Czech WinoMT genders fall back to suffix rules (signature: slavic-rules-cs). The analyser is "
            "the optional extra fairmt[cs] (cs-core-news-sm 0.2.1, licence CC BY-NC-SA 3.0)",
            stacklevel=2,
        )
        return SlavicRuleDetector("cs")
