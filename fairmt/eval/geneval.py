"""MT-GenEval gender accuracy (Currey et al., EMNLP 2022), counterfactual and contextual sets.

MT-GenEval (amazon-science/machine-translation-gender-eval) gives, for each English source, a masculine and a
feminine version and their reference translations. The official metric (the reference implementation's
``accuracy_metric.py``) compares the two references of a pair word by word:

* both references and the hypothesis are lower-cased, every ASCII punctuation character
  (:data:`string.punctuation`) becomes a space, and the text is split on whitespace into a *set* of words;
* ``own_unique = words(own reference) - words(other reference)`` and
  ``other_unique = words(other reference) - words(own reference)``;
* a hypothesis is **correct** when it contains no word of ``other_unique``.

The GACL paper (Lee et al., EMNLP 2023, Sec. 4.1) adds **explicit accuracy**: a hypothesis is explicitly correct
when it is correct *and* contains at least one word of ``own_unique`` (when ``own_unique`` is empty, i.e. the two
references differ only by words the other reference also holds, or not at all, the first condition alone decides).
An empty or off-topic translation is therefore correct under the official metric but not explicitly correct.

Reported, in percent, for the counterfactual set, as the reference implementations report them:

* ``accuracy`` — the number the official ``accuracy_metric.py`` (``main()``) prints: the share of **pairs** whose
  masculine AND feminine translations are both correct;
* ``explicit_accuracy`` — the GACL authors' ``accuracy`` (their ``gender_eval.py``): the share of pairs whose two
  translations are both explicitly correct;
* ``accuracy_masculine``/``_feminine`` and ``explicit_accuracy_masculine``/``_feminine`` — per-gender means over the
  N translations of each gender; ``delta_g = accuracy_masculine - accuracy_feminine`` and ``explicit_delta_g``
  (E-ΔG), as GACL's evaluator computes them;
* ``hypothesis_accuracy`` / ``hypothesis_explicit_accuracy`` — means over all 2·N translations (what fairmt
  reported as ``accuracy`` before metric version 2.0: a different, higher number, never to be compared with
  published ones).

Every result carries a versioned signature, like sacrebleu's, e.g.
``MT-GenEval|set:counterfactual|split:test|lang:de|n:300|norm:lower+asciipunct|text:nfc+spaces+nofmt|v:2.0``
(``text``: the Unicode normalisation of :mod:`fairmt.data.text`, applied to hypotheses and references alike).

Checked on the real test set: the references scored as hypotheses give 100 % in every language. The
gender-swapped references give ``accuracy`` and ``explicit_accuracy`` of 0 % except es 4.67, hi 11.67 (11.33 with
``compat="official"``, below), it 6.67 — exactly the pairs whose two references have the same words. The
per-hypothesis accuracy of the swapped references is a little higher (de 0.83, es 5.67, hi 12.5 (official 12.17),
it 7.33) because a few references' words are a subset of their counterfactual's (de line 187: "als er 17" vs "als
sie 17", where "sie" occurs in both).

``compat="official"`` (``fairmt eval geneval --compat official``) reads the text exactly as the reference scorer
does: lower-case, ASCII punctuation to spaces, split on whitespace, nothing else — no Unicode normalisation of
hypotheses or references (signature ``text:raw|compat:official``). On the real test set it gives the Hindi
swapped-reference accuracy the scorer gives, 11.33; fairmt's default reading (which removes invisible format
characters and composes accents before matching, so that text from a word processor scores as typed) gives 11.67
there, because the two references of Hindi pair 196 differ only by a zero-width space (U+200B), which the scorer
counts as part of a gendered word.

The contextual set pairs an English context + target sentence (``context <sep> target``) with an ``original``
reference (the gender the context gives) and a gender-``flipped`` one; only the target sentence's translation is
scored, against ``original`` (own) and ``flipped`` (other).

This module never loads a model: pass it translations (see :mod:`fairmt.model_eval` to generate them).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fairmt.data.text import TEXT_NORM, normalize_many, normalize_text
from fairmt.errors import FairmtError

METRIC_VERSION = "2.0"  # 2.0: accuracy/explicit_accuracy are pair-level (the published definitions)
GENEVAL_LANGS = ("ar", "de", "es", "fr", "hi", "it", "pt", "ru")
"""Target languages of the counterfactual set."""
CONTEXT_LANGS = ("ar", "de", "es", "fr", "hi", "it", "nl", "pt", "ru")
"""Target languages of the contextual set (Dutch has contextual data only)."""
SPLITS = ("dev", "test")
GENEVAL_MAX_NEW_TOKENS = 128
"""The most tokens generated for one MT-GenEval translation made during training
(:class:`fairmt.model_eval.callbacks.GenEvalCallback`; the GACL recipes' ``geneval.max_new_tokens``): a translation
still going there is cut."""
CONTEXT_SEP = "<sep>"

_PUNCT_TABLE = str.maketrans(string.punctuation, " " * len(string.punctuation))
COMPATS = ("official",)
"""``compat`` values: ``official`` = the reference scorer's exact reading (the module docstring)."""
RAW_TEXT = "raw"
"""The signature's ``text:`` token when the text is read as it is (``compat="official"``)."""


def check_compat(compat: str | None) -> str | None:
    """``compat`` if it is None or one of :data:`COMPATS`, else a one-line :class:`FairmtError`."""
    if compat is not None and compat not in COMPATS:
        raise FairmtError(f"unknown MT-GenEval compat {compat!r}; valid: {', '.join(COMPATS)} (or none)")
    return compat


def normalize(text: str) -> str:
    """fairmt's text normalisation (:func:`fairmt.data.text.normalize_text`: NFC, one kind of space, no invisible
    format characters), then lower-case and replace each ASCII punctuation character by a space (the reference's
    normalisation)."""
    return normalize_text(text).lower().translate(_PUNCT_TABLE)


def words(text: str, compat: str | None = None) -> frozenset[str]:
    """The set of words of ``text`` after :func:`normalize`, split on whitespace (``compat="official"``: the
    reference scorer's ``clean_line``: lower-case and ASCII punctuation to spaces only)."""
    if compat == "official":
        return frozenset(text.lower().translate(_PUNCT_TABLE).split())
    return frozenset(normalize(text).split())


@dataclass(frozen=True)
class Judgement:
    """The verdict on one hypothesis against its own reference and its counterfactual ("other") reference."""

    correct: bool
    """No word unique to the other reference occurs in the hypothesis (official MT-GenEval accuracy)."""
    explicit_correct: bool
    """``correct`` and, when the own reference has unique words, at least one of them occurs (GACL's E-Acc)."""
    own_unique: frozenset[str]
    other_unique: frozenset[str]
    wrong_words: frozenset[str]
    """Words of the hypothesis that are unique to the other reference (why it is wrong)."""


def judge(hypothesis: str, own_reference: str, other_reference: str, compat: str | None = None) -> Judgement:
    """Score one hypothesis: see the module docstring for the rule."""
    hyp, own, other = words(hypothesis, compat), words(own_reference, compat), words(other_reference, compat)
    own_unique, other_unique = own - other, other - own
    wrong = hyp & other_unique
    correct = not wrong
    explicit = correct and (not own_unique or bool(hyp & own_unique))
    return Judgement(correct, explicit, own_unique, other_unique, wrong)


def _pct(count: int, total: int) -> float:
    return 100.0 * count / total if total else 0.0


def geneval_signature(subset: str, split: str, lang: str, n: int, compat: str | None = None) -> str:
    """The versioned signature printed beside every MT-GenEval score."""
    text = TEXT_NORM if compat is None else f"{RAW_TEXT}|compat:{compat}"
    return (
        f"MT-GenEval|set:{subset}|split:{split}|lang:{lang}|n:{n}|norm:lower+asciipunct|text:{text}|v:{METRIC_VERSION}"
    )


@dataclass
class GenEvalResult:
    """MT-GenEval counterfactual-set scores for one language and split. All values are percentages."""

    lang: str
    split: str
    n: int
    """Number of pairs (each pair = one masculine and one feminine hypothesis)."""
    accuracy: float
    """Official MT-GenEval accuracy: pairs whose masculine and feminine translations are both correct."""
    explicit_accuracy: float
    """GACL's accuracy: pairs whose two translations are both explicitly correct."""
    accuracy_masculine: float
    accuracy_feminine: float
    explicit_accuracy_masculine: float
    explicit_accuracy_feminine: float
    delta_g: float
    """ΔG = accuracy_masculine − accuracy_feminine (percentage points)."""
    explicit_delta_g: float
    """E-ΔG = explicit_accuracy_masculine − explicit_accuracy_feminine."""
    hypothesis_accuracy: float
    """Correct translations among all 2·n (not a published number)."""
    hypothesis_explicit_accuracy: float
    """Explicitly correct translations among all 2·n (not a published number)."""
    signature: str
    subset: str = "counterfactual"
    chrfpp: float | None = None
    """Translation quality beside the gender scores: corpus chrF++ (sacrebleu, ``word_order=2``) of the masculine and
    feminine translations, each against its own-gender reference (the 2·n hypotheses as one corpus). A degenerate
    model can be 100 % gender-accurate (no wrong-gender word in "ariariari…"); its chrF++ is near 0."""
    chrf_signature: str | None = None
    degenerate: dict | None = None
    """Counts of degenerate translations over the 2·n (:func:`fairmt.eval.degenerate.degenerate_counts`)."""
    items: dict | None = None
    """Per pair, for a paired bootstrap against another run (:mod:`fairmt.eval.significance`): ``correct_masculine``,
    ``correct_feminine``, ``explicit_masculine``, ``explicit_feminine`` (one ``0``/``1`` per pair) and ``chrf_stats``
    (the 2·n translations' chrF++ statistics, masculine ones first)."""

    def __str__(self) -> str:
        quality = f", chrF++ {self.chrfpp:.1f}" if self.chrfpp is not None else ""
        return (
            f"MT-GenEval {self.lang} {self.split}: acc {self.accuracy:.2f} (M {self.accuracy_masculine:.2f} / "
            f"F {self.accuracy_feminine:.2f}, ΔG {self.delta_g:.2f}), E-acc {self.explicit_accuracy:.2f} "
            f"(E-ΔG {self.explicit_delta_g:.2f}){quality}  [{self.signature}]"
        )


@dataclass
class GenEvalContextResult:
    """MT-GenEval contextual-set scores for one language and split (percentages)."""

    lang: str
    split: str
    n: int
    accuracy: float
    explicit_accuracy: float
    signature: str
    subset: str = "contextual"
    items: dict | None = None
    """Per sentence, for a paired bootstrap against another run (:mod:`fairmt.eval.significance`): ``correct`` and
    ``explicit`` (one ``0``/``1`` per sentence)."""

    def __str__(self) -> str:
        return (
            f"MT-GenEval contextual {self.lang} {self.split}: acc {self.accuracy:.2f}, "
            f"E-acc {self.explicit_accuracy:.2f}  [{self.signature}]"
        )


def check_lang(lang: str, subset: str = "counterfactual") -> str:
    """Return ``lang`` if MT-GenEval covers it, else raise a :class:`FairmtError` listing the valid codes."""
    valid = GENEVAL_LANGS if subset == "counterfactual" else CONTEXT_LANGS
    if lang not in valid:
        raise FairmtError(
            f"unknown MT-GenEval language {lang!r} for the {subset} set; valid languages: {', '.join(valid)}"
        )
    return lang


def check_split(split: str) -> str:
    """Return ``split`` if it is ``dev`` or ``test``, else raise a :class:`FairmtError`."""
    if split not in SPLITS:
        raise FairmtError(f"unknown MT-GenEval split {split!r}; valid splits: {', '.join(SPLITS)}")
    return split


def _check_lengths(expected: int, named: dict[str, Sequence[str]]) -> None:
    for name, seq in named.items():
        if len(seq) != expected:
            raise FairmtError(f"{name} has {len(seq)} lines but {expected} are expected (one per pair)")


def score_counterfactual(
    masculine_hyps: Sequence[str],
    feminine_hyps: Sequence[str],
    masculine_refs: Sequence[str],
    feminine_refs: Sequence[str],
    *,
    lang: str = "xx",
    split: str = "custom",
    compat: str | None = None,
) -> GenEvalResult:
    """Score masculine/feminine hypotheses against explicitly given reference lists (lower-level API).

    Line ``i`` of the four sequences forms one pair. ``lang`` and ``split`` only label the result. ``compat=
    "official"``: the reference scorer's exact reading (no Unicode normalisation; the module docstring).
    """
    check_compat(compat)
    n = len(masculine_refs)
    _check_lengths(
        n,
        {
            "feminine references": feminine_refs,
            "masculine hypotheses": masculine_hyps,
            "feminine hypotheses": feminine_hyps,
        },
    )
    if n == 0:
        raise FairmtError("MT-GenEval needs at least one pair; got empty reference lists")
    hyps, refs = [*masculine_hyps, *feminine_hyps], [*masculine_refs, *feminine_refs]
    if compat is None:
        hyps, report = normalize_many(hyps, f"MT-GenEval {lang} hypotheses")
        report.warn()
        refs, _ = normalize_many(refs)
    masculine_hyps, feminine_hyps = hyps[:n], hyps[n:]
    masculine_refs, feminine_refs = refs[:n], refs[n:]
    jm = [judge(h, mr, fr, compat) for h, mr, fr in zip(masculine_hyps, masculine_refs, feminine_refs)]
    jf = [judge(h, fr, mr, compat) for h, mr, fr in zip(feminine_hyps, masculine_refs, feminine_refs)]
    cm = sum(j.correct for j in jm)
    cf = sum(j.correct for j in jf)
    em = sum(j.explicit_correct for j in jm)
    ef = sum(j.explicit_correct for j in jf)
    acc_m, acc_f, eacc_m, eacc_f = _pct(cm, n), _pct(cf, n), _pct(em, n), _pct(ef, n)
    from fairmt.eval.degenerate import chrfpp_line_statistics, chrfpp_scores_from_statistics, degenerate_counts
    from fairmt.eval.significance import flags_text, stats_text

    # one pass: the corpus figure, the unrelated check, the statistics of a paired bootstrap; each gender's
    # references apart, so that their n-grams are reused for the next file scored against them (the gender-swapped
    # references, another run's translations)
    stats = chrfpp_line_statistics(masculine_hyps, masculine_refs) + chrfpp_line_statistics(
        feminine_hyps, feminine_refs
    )
    chrfpp, sentence_chrf, chrf_sig = chrfpp_scores_from_statistics(stats)
    return GenEvalResult(
        lang=lang,
        split=split,
        n=n,
        accuracy=_pct(sum(a.correct and b.correct for a, b in zip(jm, jf)), n),
        explicit_accuracy=_pct(sum(a.explicit_correct and b.explicit_correct for a, b in zip(jm, jf)), n),
        accuracy_masculine=acc_m,
        accuracy_feminine=acc_f,
        explicit_accuracy_masculine=eacc_m,
        explicit_accuracy_feminine=eacc_f,
        delta_g=acc_m - acc_f,
        explicit_delta_g=eacc_m - eacc_f,
        hypothesis_accuracy=_pct(cm + cf, 2 * n),
        hypothesis_explicit_accuracy=_pct(em + ef, 2 * n),
        signature=geneval_signature("counterfactual", split, lang, n, compat),
        chrfpp=chrfpp,
        chrf_signature=f"{chrf_sig}|text:{TEXT_NORM if compat is None else RAW_TEXT}",
        degenerate=degenerate_counts(hyps, lang, references=refs, sentence_chrf=sentence_chrf),
        items={
            "correct_masculine": flags_text(j.correct for j in jm),
            "correct_feminine": flags_text(j.correct for j in jf),
            "explicit_masculine": flags_text(j.explicit_correct for j in jm),
            "explicit_feminine": flags_text(j.explicit_correct for j in jf),
            "chrf_stats": stats_text(stats),
        },
    )


def score_contextual(
    hypotheses: Sequence[str],
    original_refs: Sequence[str],
    flipped_refs: Sequence[str],
    *,
    lang: str = "xx",
    split: str = "custom",
    compat: str | None = None,
) -> GenEvalContextResult:
    """Score contextual-set hypotheses against the ``original`` (own) and ``flipped`` (other) references.

    A hypothesis that still holds the translated context is cut at its last ``<sep>``; only the target sentence
    is scored.
    """
    n = len(original_refs)
    _check_lengths(n, {"flipped references": flipped_refs, "hypotheses": hypotheses})
    if n == 0:
        raise FairmtError("MT-GenEval needs at least one sentence; got empty reference lists")
    if check_compat(compat) is None:
        hypotheses, report = normalize_many(hypotheses, f"MT-GenEval {lang} contextual hypotheses")
        report.warn()
    js = [judge(strip_context(h), o, f, compat) for h, o, f in zip(hypotheses, original_refs, flipped_refs)]
    from fairmt.eval.significance import flags_text

    return GenEvalContextResult(
        lang=lang,
        split=split,
        n=n,
        accuracy=_pct(sum(j.correct for j in js), n),
        explicit_accuracy=_pct(sum(j.explicit_correct for j in js), n),
        signature=geneval_signature("contextual", split, lang, n, compat),
        items={"correct": flags_text(j.correct for j in js), "explicit": flags_text(j.explicit_correct for j in js)},
    )


def strip_context(hypothesis: str) -> str:
    """The part of a contextual-set translation after its last ``<sep>`` (the whole line if there is none)."""
    return hypothesis.rsplit(CONTEXT_SEP, 1)[-1].strip()


# ----------------------------------------------------------------------------------------------------------- data


def read_lines(path: str | Path, *, expected: int | None = None, allow_empty: bool = False) -> list[str]:
    """Read a one-sentence-per-line UTF-8 file (through :func:`fairmt.data.inputs.read_lines`), with errors that
    name the file and line.

    Raises :class:`FairmtError` for a missing/undecodable file, an empty line (unless ``allow_empty``) or a line
    count different from ``expected``.
    """
    from fairmt.data.inputs import read_lines as _read

    return _read(path, "translation", expected=expected, allow_blank=allow_empty, allow_empty=allow_empty)


@dataclass
class GenEvalCounterfactualData:
    """The counterfactual set for one language and split: English sources and references, by gender."""

    lang: str
    split: str
    masculine_sources: list[str]
    feminine_sources: list[str]
    masculine_refs: list[str]
    feminine_refs: list[str]


def counterfactual_files(lang: str, split: str) -> dict[str, Path]:
    """Paths (under the data root) of the four counterfactual-set files of ``lang``/``split``."""
    from fairmt.data.paths import data_path

    check_lang(lang)
    check_split(split)
    out = {}
    for gender in ("masculine", "feminine"):
        for side in ("en", lang):
            key = f"{gender}_{'source' if side == 'en' else 'ref'}"
            name = f"geneval-sentences-{gender}-{split}.en_{lang}.{side}"
            out[key] = data_path("mt_geneval", "sentences", split, name)
    return out


def load_counterfactual(lang: str, split: str = "test") -> GenEvalCounterfactualData:
    """Read the counterfactual set of ``lang``/``split`` from the data root (``FAIRMT_DATA`` or the cache)."""
    files = counterfactual_files(lang, split)
    ms = read_lines(files["masculine_source"])
    n = len(ms)
    return GenEvalCounterfactualData(
        lang=lang,
        split=split,
        masculine_sources=ms,
        feminine_sources=read_lines(files["feminine_source"], expected=n),
        masculine_refs=read_lines(files["masculine_ref"], expected=n),
        feminine_refs=read_lines(files["feminine_ref"], expected=n),
    )


@dataclass
class GenEvalContextData:
    """The contextual set for one language and split: ``context <sep> target`` sources and both references."""

    lang: str
    split: str
    sources: list[str]
    original_refs: list[str]
    flipped_refs: list[str]


def load_contextual(lang: str, split: str = "test") -> GenEvalContextData:
    """Read the contextual set of ``lang``/``split`` from the data root."""
    from fairmt.data.paths import data_path

    check_lang(lang, "contextual")
    check_split(split)
    stem = "geneval-context-wikiprofessions"
    src = read_lines(data_path("mt_geneval", "context", f"{stem}-2to1-{split}.en_{lang}.en"))
    n = len(src)
    return GenEvalContextData(
        lang=lang,
        split=split,
        sources=src,
        original_refs=read_lines(
            data_path("mt_geneval", "context", f"{stem}-original-{split}.en_{lang}.{lang}"), expected=n
        ),
        flipped_refs=read_lines(
            data_path("mt_geneval", "context", f"{stem}-flipped-{split}.en_{lang}.{lang}"), expected=n
        ),
    )


def geneval_accuracy(
    masculine_hyps: Sequence[str],
    feminine_hyps: Sequence[str],
    lang: str,
    split: str = "dev",
    compat: str | None = None,
) -> GenEvalResult:
    """Score translations of the counterfactual set of ``lang``/``split``, loading its references itself.

    ``masculine_hyps[i]`` / ``feminine_hyps[i]`` translate line ``i`` of the masculine / feminine English files
    (:func:`load_counterfactual`). Used by the GACL trainer's early stopping on the dev split.
    """
    data = load_counterfactual(lang, split)
    n = len(data.masculine_refs)
    for name, hyps in (("masculine hypotheses", masculine_hyps), ("feminine hypotheses", feminine_hyps)):
        if len(hyps) != n:
            raise FairmtError(
                f"{name}: got {len(hyps)} translations but MT-GenEval {split} ({lang}) has {n} pairs; "
                "translate every line of the corresponding English file"
            )
    return score_counterfactual(
        masculine_hyps, feminine_hyps, data.masculine_refs, data.feminine_refs, lang=lang, split=split, compat=compat
    )


def geneval_contextual_accuracy(
    hypotheses: Sequence[str], lang: str, split: str = "test", compat: str | None = None
) -> GenEvalContextResult:
    """Score translations of the contextual set of ``lang``/``split`` (target sentence only), loading references."""
    data = load_contextual(lang, split)
    if len(hypotheses) != len(data.sources):
        raise FairmtError(
            f"got {len(hypotheses)} translations but the MT-GenEval contextual {split} set ({lang}) has "
            f"{len(data.sources)} lines"
        )
    return score_contextual(hypotheses, data.original_refs, data.flipped_refs, lang=lang, split=split, compat=compat)


__all__ = [
    "COMPATS",
    "CONTEXT_LANGS",
    "GENEVAL_LANGS",
    "SPLITS",
    "GenEvalContextData",
    "GenEvalContextResult",
    "GenEvalCounterfactualData",
    "GenEvalResult",
    "Judgement",
    "check_compat",
    "check_lang",
    "check_split",
    "counterfactual_files",
    "geneval_accuracy",
    "geneval_contextual_accuracy",
    "geneval_signature",
    "judge",
    "load_contextual",
    "load_counterfactual",
    "normalize",
    "read_lines",
    "score_contextual",
    "score_counterfactual",
    "strip_context",
    "words",
]
