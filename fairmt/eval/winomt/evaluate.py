"""WinoMT evaluation of one system's translations in one target language.

Pipeline (as in the reference evaluation): align the whole file of ``source ||| translation`` pairs with
fast_align; take the target words aligned to each gold entity (:mod:`~fairmt.eval.winomt.profession`); detect
their gender with the target language's detector (:mod:`~fairmt.eval.winomt.detectors`); score against gold
(:mod:`~fairmt.eval.winomt.metrics`).

Modes
-----
``compat="acl2019"`` reproduces the 2019 evaluator: its rounding, each detector's own answer for an entity
with no aligned word (German: male, Hebrew/Arabic: female, spaCy/pymorphy/Italian/Czech/Polish: unknown), and
the analyser data it ran with where today's differs (Ukrainian: the 2016 pymorphy2 dictionary, which moves ΔG by
about 4 points against today's).
Both modes first put sources and translations through fairmt's text normalisation (:mod:`fairmt.data.text`:
NFC, one kind of space, no invisible format characters), named ``text:`` in the signature: without it, output
whose words are separated by no-break spaces scores 0 (no word aligns). On the shipped 2019 files it changes only
12 AWS French and 69 Systran Arabic lines (spaces), none of the Google ones the published figures come from.
The default mode (``compat=None``) differs in two ways: metrics are not rounded before F1 and ΔG/ΔR (see
:mod:`~fairmt.eval.winomt.metrics`), and an entity with no aligned word is always "unknown" (counted wrong),
since nothing in the translation supports any answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fairmt.data.text import TEXT_NORM, normalize_many
from fairmt.errors import FairmtError
from fairmt.eval.winomt.align import Aligner, FastAlign
from fairmt.eval.winomt.detectors import GenderDetector, get_detector
from fairmt.eval.winomt.io import Gender, GoldEntry, TranslationPair, parse_gold_lines, read_gold, read_translations
from fairmt.eval.winomt.metrics import COMPAT_MODES, score, stereotype_gap
from fairmt.eval.winomt.profession import TranslatedEntity, find_translated_entity

SIGNATURE_VERSION = "1.0"


@dataclass
class WinoMTGold:
    """Gold entries, their pro/anti-stereotypical marks (None for lines in neither list), and a short name."""

    entries: list[GoldEntry]
    stereotype: list[str | None]
    name: str
    path: str | None = None  # the gold file, when read from one

    def __len__(self) -> int:
        return len(self.entries)


def default_gold_path(compat: str | None = None) -> Path:
    """The gold file used when none is given.

    ``$FAIRMT_DATA/winomt/aggregates_acl2019/en.txt`` — the 2019 version, which the shipped system translations
    follow line by line — when it is there (the project's data folder, a mirror); otherwise the current upstream
    ``winomt/aggregates/en.txt``, which ``fairmt data download winomt`` fetches from mt_gender (right for scoring a
    model, whose sources come from the gold itself). ``compat="acl2019"`` needs the 2019 file: it is not published
    at a fixed upstream URL (it lives in mt_gender's history), so its absence is an error saying how to get it.
    """
    from fairmt.data.paths import data_path

    acl2019 = data_path("winomt", "aggregates_acl2019", "en.txt", must_exist=False)
    if acl2019.is_file():
        return acl2019
    if compat == "acl2019":
        raise FairmtError(
            f"--compat acl2019 scores against the 2019 gold ({acl2019}), which is not published at a fixed upstream "
            "URL: get it from a mirror with `fairmt data download winomt --base-url URL`, pass --gold FILE, or drop "
            "--compat to score against the current upstream gold"
        )
    return data_path("winomt", "aggregates", "en.txt")


def load_gold(path: str | Path | None = None, compat: str | None = None) -> WinoMTGold:
    """Read a gold file (default: :func:`default_gold_path`); lines also listed in ``en_pro.txt`` / ``en_anti.txt``
    beside it are marked pro/anti."""
    path = Path(path) if path is not None else default_gold_path(compat)
    return _with_marks(read_gold(path), path, f"{path.parent.name}/{path.name}", str(path))


def gold_from_lines(lines: Sequence[str], compat: str | None = None, name: str = "references") -> WinoMTGold:
    """Gold entries from WinoMT gold lines held in memory (the ``evaluate`` module's ``references``). Lines that are
    in the pro/anti lists of the data folder's gold (``en_pro.txt`` / ``en_anti.txt`` beside
    :func:`default_gold_path`) get their marks, as the CLI gives them, so ΔS is the CLI's on the same lines."""
    entries = parse_gold_lines([str(x) for x in lines], name)
    try:
        default = default_gold_path(compat)
    except FairmtError:  # no data folder: no pro/anti marks (ΔS is None)
        return WinoMTGold(entries, [None] * len(entries), name)
    return _with_marks(entries, default, _known_gold_name(entries, default) or name, None)


def _known_gold_name(entries: list[GoldEntry], default: Path) -> str | None:
    """The name :func:`load_gold` gives a gold file of the data folder whose entries are exactly ``entries`` (the
    2019 or the current upstream gold), so that the signature of lines held in memory is the CLI's for the same
    gold; None for other lines."""
    from fairmt.data.paths import data_path

    candidates = [default]
    for parts in (("aggregates_acl2019", "en.txt"), ("aggregates", "en.txt")):
        path = data_path("winomt", *parts, must_exist=False)
        if path.is_file() and path not in candidates:
            candidates.append(path)
    for path in candidates:
        try:
            known = read_gold(path)
        except (FairmtError, OSError):
            continue
        if known == entries:
            return f"{path.parent.name}/{path.name}"
    return None


def _with_marks(entries: list[GoldEntry], path: Path, name: str, source: str | None) -> WinoMTGold:
    # multiset matching: a line listed k times in en_pro/en_anti marks k occurrences in the gold file (a few 2019
    # lines occur twice in en.txt, once in each list)
    marks: dict[tuple, list[str]] = {}
    for kind in ("pro", "anti"):
        side = path.with_name(f"en_{kind}.txt")
        if side.is_file() and side.resolve() != path.resolve():
            for e in read_gold(side):
                marks.setdefault((e.sentence, e.index, e.gender), []).append(kind)
    stereotype = []
    for e in entries:
        left = marks.get((e.sentence, e.index, e.gender))
        stereotype.append(left.pop(0) if left else None)
    if path.name in ("en_pro.txt", "en_anti.txt"):
        stereotype = [path.name[3:-4]] * len(entries)
    return WinoMTGold(entries, stereotype, name, source)


@dataclass
class WinoMTResult:
    """WinoMT scores of one system in one language (percentages), with the confusion matrix and a signature.

    ``confusion[gold][predicted]`` counts lines; ``delta_s``/``acc_pro``/``acc_anti`` are None when the gold
    file has no pro/anti marks.
    """

    lang: str
    accuracy: float
    delta_g: float
    """ΔG = Acc_male − Acc_female, the GACL paper's definition (fairmt's one ΔG; equal to ΔR on WinoMT)."""
    delta_s: float | None
    delta_r: float
    f1_male: float
    f1_female: float
    precision_male: float
    recall_male: float
    precision_female: float
    recall_female: float
    acc_pro: float | None
    acc_anti: float | None
    n: int
    n_unknown: int
    n_unaligned: int
    compat: str | None
    signature: str
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    delta_g_f1: float | None = None
    """ΔG_F1 = F1_male − F1_female: the 2019 evaluator's "ΔG" (the published 2019 tables)."""
    items: dict | None = None
    """Per sentence, for a paired bootstrap against another run (:mod:`fairmt.eval.significance`): ``correct`` (one
    ``0``/``1`` per gold line) and ``gold`` (one letter per line: ``m``/``f``/``n``)."""

    def row(self) -> dict:
        """The headline numbers as a flat dict (for tables)."""
        return {
            "lang": self.lang, "accuracy": self.accuracy, "delta_g": self.delta_g, "delta_g_f1": self.delta_g_f1,
            "delta_s": self.delta_s, "delta_r": self.delta_r, "f1_male": self.f1_male, "f1_female": self.f1_female,
            "n": self.n,
        }  # fmt: skip


def make_signature(lang: str, gold_name: str, aligner: Aligner, detector: GenderDetector, compat: str | None) -> str:
    """Versioned description of everything that determines the score, like sacrebleu's signatures."""
    from fairmt import __version__

    return (
        f"winomt|v:{SIGNATURE_VERSION}|lang:{lang}|gold:{gold_name}|align:{aligner.name}"
        f"|detector:{getattr(detector, 'signature_name', type(detector).__name__)}|compat:{compat or 'none'}"
        f"|text:{TEXT_NORM}|fairmt:{__version__}"
    )


def predict_genders(
    pairs: Sequence[TranslationPair],
    gold: WinoMTGold,
    lang: str,
    *,
    aligner: Aligner | None = None,
    detector: GenderDetector | None = None,
    compat: str | None = None,
) -> tuple[list[Gender], list[TranslatedEntity]]:
    """Align, find each entity's translation and detect its gender; returns predictions and entities."""
    if len(pairs) != len(gold):
        raise FairmtError(f"{len(pairs)} translations for {len(gold)} gold lines")
    aligner = aligner or FastAlign()
    detector = detector or get_detector(lang, compat)
    alignments = aligner.align([p.source for p in pairs], [p.translation for p in pairs])
    entities = [find_translated_entity(g, a, p.translation) for g, a, p in zip(gold.entries, alignments, pairs)]
    preds = detector.detect_many(entities)
    if compat != "acl2019":
        preds = [Gender.unknown if not e.words else p for p, e in zip(preds, entities)]
    return preds, entities


def normalize_pairs(pairs: Sequence[TranslationPair], lang: str) -> list[TranslationPair]:
    """Sources and translations through fairmt's text normalisation (:mod:`fairmt.data.text`), with one warning
    when most translations were changed by it (the scores then rest on the normalisation)."""
    sources, _ = normalize_many(p.source for p in pairs)
    translations, report = normalize_many((p.translation for p in pairs), f"WinoMT {lang} translations")
    report.warn(stacklevel=4)
    return [TranslationPair(s, t) for s, t in zip(sources, translations)]


def evaluate_winomt(
    translations: Sequence[str] | str | Path,
    lang: str,
    gold: WinoMTGold | str | Path | None = None,
    *,
    sources: Sequence[str] | None = None,
    aligner: Aligner | None = None,
    detector: GenderDetector | None = None,
    compat: str | None = None,
) -> WinoMTResult:
    """Score translations on WinoMT.

    ``translations``: a ``source ||| translation`` file, or a list of translated strings in gold order (the
    sources are then the gold sentences, or ``sources``). ``gold``: a :class:`WinoMTGold`, a gold file, or None
    for the default (:func:`default_gold_path`). ``compat="acl2019"`` reproduces the 2019
    evaluator (see the module docstring for how the default mode differs).
    """
    if compat not in COMPAT_MODES:
        raise FairmtError(f"unknown compat mode '{compat}': use 'acl2019' or leave it out")
    if not isinstance(gold, WinoMTGold):
        gold = load_gold(gold, compat)
    if isinstance(translations, (str, Path)):
        pairs = read_translations(translations, gold.entries, gold_path=gold.path)
    else:
        translations = list(translations)
        if len(translations) != len(gold):
            raise FairmtError(f"got {len(translations)} translations for {len(gold)} gold lines")
        srcs = list(sources) if sources is not None else [e.sentence for e in gold.entries]
        for k, t in enumerate(translations):
            if not str(t).strip():
                raise FairmtError(f"translation {k + 1} is empty")
        pairs = [TranslationPair(s, " ".join(str(t).split())) for s, t in zip(srcs, translations)]
    pairs = normalize_pairs(pairs, lang)
    aligner = aligner or FastAlign()
    detector = detector or get_detector(lang, compat)
    preds, entities = predict_genders(pairs, gold, lang, aligner=aligner, detector=detector, compat=compat)
    golds = [e.gender for e in gold.entries]
    s = score(golds, preds, compat)
    a_pro, a_anti, ds = stereotype_gap(golds, preds, gold.stereotype, compat)
    return WinoMTResult(
        lang=lang, accuracy=s.accuracy, delta_g=s.delta_g, delta_s=ds, delta_r=s.delta_r,
        f1_male=s.f1_male, f1_female=s.f1_female, precision_male=s.precision_male, recall_male=s.recall_male,
        precision_female=s.precision_female, recall_female=s.recall_female, acc_pro=a_pro, acc_anti=a_anti,
        n=s.n, n_unknown=sum(p == Gender.unknown for p in preds), n_unaligned=sum(not e.words for e in entities),
        compat=compat, signature=make_signature(lang, gold.name, aligner, detector, compat), confusion=s.confusion,
        delta_g_f1=s.delta_g_f1, items=per_sentence(golds, preds),
    )  # fmt: skip


def per_sentence(golds: Sequence[Gender], preds: Sequence[Gender]) -> dict:
    """The :attr:`WinoMTResult.items` of gold and predicted genders."""
    from fairmt.eval.significance import flags_text, genders_text

    return {"correct": flags_text(g == p for g, p in zip(golds, preds)), "gold": genders_text(golds)}
