"""EDA views (Wei & Zou, 2019, "EDA: Easy Data Augmentation Techniques for Boosting Performance on Text
Classification Tasks") for contrastive fine-tuning (Chi et al., 2022 use α = 0.1 and make four augmented copies of
each example, :meth:`EDA.copies`; their collator draws one of the four at random for every example of a batch, which
:class:`fairmt.data.classification.ClassificationCollator` does with a ``text_views`` column).

Four operations on whitespace tokens, each applied to ``n = max(1, round(α·len(words)))`` words:

* synonym replacement (SR): replace ``n`` random non-stop-words with a random synonym;
* random insertion (RI): insert a synonym of a random non-stop-word at a random position, ``n`` times;
* random swap (RS): swap two random words, ``n`` times;
* random deletion (RD): delete each word with probability α (never all of them).

Synonyms come from ``synonyms`` (a mapping word → synonyms or a callable); with none given, WordNet 3.0 through
NLTK's WordNet reader (:func:`wordnet_synonyms`): NLTK's own ``wordnet`` corpus (``python -m nltk.downloader
wordnet``), else the system's WordNet 3.0 database (Debian/Ubuntu ``apt-get install wordnet-base``:
``/usr/share/wordnet``, or ``$WORDNET_DIR``). ``pip install 'fairmt[eda]'`` installs NLTK. Without a synonym source SR
and RI cannot change the text: ``EDA(..., require_all=True)`` — what the recipes use — then stops with one line
saying how to install it; otherwise only RS and RD run, with a warning. Deterministic for a given ``seed``.
"""

from __future__ import annotations

import os
import random
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

# the stop-word list of the EDA reference implementation (NLTK's English list, abridged there)
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
    it its itself they them their theirs themselves what which who whom this that these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until while of at by for with
    about against between into through during before after above below to from up down in out on off over under
    again further then once here there when where why how all any both each few more most other some such no nor not
    only own same so than too very s t can will just don should now""".split()
)

SynonymSource = Mapping[str, Sequence[str]] | Callable[[str], Sequence[str]]
OPERATIONS = ("sr", "ri", "rs", "rd")


WORDNET_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body noun.cognition "
    "noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive noun.object "
    "noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity noun.relation noun.shape "
    "noun.state noun.substance noun.time verb.body verb.change verb.cognition verb.communication verb.competition "
    "verb.consumption verb.contact verb.creation verb.emotion verb.motion verb.perception verb.possession "
    "verb.social verb.stative verb.weather adj.ppl"
).split()
"""WordNet 3.0's lexicographer files in number order (lexnames(5WN)): the one file of NLTK's corpus layout that the
system database (``/usr/share/wordnet``) does not ship."""

INSTALL_HINT = (
    "install NLTK and WordNet 3.0: `pip install 'fairmt[eda]'`, then `python -m nltk.downloader wordnet` "
    "(or, on Debian/Ubuntu, `apt-get install wordnet-base`)"
)


def _system_wordnet_source() -> Path | None:
    """The system WordNet 3.0 database folder (``$WORDNET_DIR``, default ``/usr/share/wordnet``), or None without one."""
    source = Path(os.environ.get("WORDNET_DIR", "/usr/share/wordnet"))
    return source if (source / "data.noun").is_file() and (source / "index.noun").is_file() else None


def _system_wordnet() -> str | None:
    """An NLTK data folder holding ``corpora/wordnet``: copies of the system WordNet 3.0 database's files (28 MB,
    once: NLTK refuses symbolic and hard links out of a corpus folder) and the ``lexnames`` file it lacks, under
    ``$FAIRMT_CACHE/wordnet`` (default ``~/.cache/fairmt/wordnet``)."""
    source = _system_wordnet_source()
    if source is None:
        return None
    root = Path(os.environ.get("FAIRMT_CACHE", Path.home() / ".cache" / "fairmt")) / "wordnet"
    corpus = root / "corpora" / "wordnet"
    corpus.mkdir(parents=True, exist_ok=True)
    from fairmt.outputs import copy_file, write_file

    for f in source.iterdir():  # each file whole or absent, whoever else makes it too (the one writer's rename)
        target = corpus / f.name
        if f.is_file() and not target.exists():
            copy_file(f, target, what="a copy of the system WordNet database")
    lexnames = corpus / "lexnames"
    if not lexnames.exists():
        category = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}  # the syntactic category column of lexnames
        write_file(
            lexnames,
            "".join(f"{i:02d}\t{name}\t{category[name.split('.')[0]]}\n" for i, name in enumerate(WORDNET_LEXNAMES)),
            what="WordNet's lexnames file",
        )
    return str(root)


def wordnet_available() -> bool:
    """Whether :func:`wordnet_synonyms` has a database to read — NLTK importable, and NLTK's own ``wordnet`` corpus or
    the system database's files present — without reading it (building the reader takes seconds)."""
    try:
        import nltk  # type: ignore[import-not-found]
    except ImportError:
        return False
    try:
        nltk.data.find("corpora/wordnet")
        return True
    except LookupError:
        return _system_wordnet_source() is not None


_READERS: dict[str, Any] = {}


def _read_wordnet(corpus: Any) -> Any:
    """NLTK's WordNet reader of the corpus folder ``corpus`` (an NLTK path pointer), built once per process and
    folder: building it reads WordNet's whole index (seconds of CPU), which every :class:`EDA` made without
    ``synonyms`` used to pay again. English only: NLTK's reader also builds, on every load, a WordNet 3.0 sense map
    from ``index.sense`` that only its multilingual (OMW) lookups read — about half its load time — which this reader
    skips (no multilingual lookup is made here; the synsets and lemmas are NLTK's). Raises when the folder is
    unreadable (and keeps nothing)."""
    key = str(corpus)
    if key not in _READERS:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader  # type: ignore[import-not-found]

        class EnglishWordNet(WordNetCorpusReader):  # type: ignore[misc]
            def map_wn(self, version: str = "wordnet") -> None:
                return None  # the sense map of the multilingual lookups (see above)

        with warnings.catch_warnings():  # "multilingual functions are not available": none are used
            warnings.simplefilter("ignore", UserWarning)
            reader = EnglishWordNet(corpus, None)
        reader.synsets("test")
        _READERS[key] = reader
    return _READERS[key]


def wordnet_synonyms() -> Callable[[str], list[str]] | None:
    """A WordNet 3.0 synonym function through NLTK's WordNet reader (NLTK's ``wordnet`` corpus, else the system
    database, see the module docstring), or ``None`` when NLTK or the database is missing."""
    try:
        import nltk  # type: ignore[import-not-found]
    except ImportError:
        return None
    reader = None
    for attempt in ("nltk", "system"):
        if attempt == "system":  # NLTK's own corpus not downloaded: the system database, copied once
            system = _system_wordnet()
            if system is None:
                break
            if system not in nltk.data.path:
                nltk.data.path.append(system)
        try:
            reader = _read_wordnet(nltk.data.find("corpora/wordnet"))
            break
        except LookupError:  # not in NLTK's data folders (yet)
            continue
        except Exception:  # noqa: BLE001 - an unreadable database
            if attempt == "system":
                break
    if reader is None:
        return None

    def synonyms(word: str) -> list[str]:
        out = []
        for syn in reader.synsets(word):
            for lemma in syn.lemmas():
                name = re.sub(r"[^a-z ]", "", lemma.name().replace("_", " ").replace("-", " ").lower()).strip()
                if name and name != word and name not in out:
                    out.append(name)
        return out

    return synonyms


class EDA:
    """Easy data augmentation of one sentence per call; see the module docstring.

    Args:
        alpha: fraction of words changed by each operation (the paper's α; 0.1 in Chi et al.).
        operations: subset of ``("sr", "ri", "rs", "rd")``; each augmented copy applies one of them.
        synonyms: a mapping or callable giving synonyms of a (lower-cased) word; default WordNet when available.
        seed: seed of the internal ``random.Random``.
        require_all: stop with a :class:`~fairmt.errors.FairmtError` when synonym replacement or insertion is asked
            for and no synonym source exists (instead of a warning and swap/deletion only).

    Example::

        >>> eda = EDA(alpha=0.1, synonyms={"doctor": ["physician"]}, seed=0)
        >>> views = eda.augment("the doctor treated the patient", num_aug=4)
    """

    def __init__(
        self,
        alpha: float = 0.1,
        operations: Sequence[str] = OPERATIONS,
        synonyms: SynonymSource | None = None,
        seed: int = 0,
        require_all: bool = False,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise FairmtError(f"EDA alpha must be in (0, 1), got {alpha}")
        bad = set(operations) - set(OPERATIONS)
        if bad or not operations:
            raise FairmtError(f"EDA operations must be a non-empty subset of {OPERATIONS}, got {list(operations)}")
        self.alpha = alpha
        self.rng = random.Random(seed)
        if synonyms is None:
            synonyms = wordnet_synonyms()
        self._syn = synonyms
        ops = list(operations)
        if self._syn is None and any(o in ("sr", "ri") for o in ops):
            if require_all:
                raise FairmtError(
                    f"EDA needs WordNet for synonym replacement and insertion (two of its four "
                    f"operations): {INSTALL_HINT}"
                )
            warnings.warn(
                "EDA: no synonym source (pass synonyms=... or install nltk with the wordnet corpus); "
                "synonym replacement and insertion are disabled, using random swap/deletion only",
                stacklevel=2,
            )
            ops = [o for o in ops if o not in ("sr", "ri")] or ["rs", "rd"]
        self.operations = ops

    def synonyms(self, word: str) -> list[str]:
        """Synonyms of ``word`` from the configured source (empty when none)."""
        if self._syn is None:
            return []
        got = self._syn.get(word, ()) if isinstance(self._syn, Mapping) else self._syn(word)
        return [s for s in got if s != word]

    def _n(self, words: list[str]) -> int:
        return max(1, int(round(self.alpha * len(words))))

    def synonym_replacement(self, words: list[str]) -> list[str]:
        """SR: replace up to n distinct non-stop-words having synonyms."""
        out = list(words)
        candidates = [i for i, w in enumerate(words) if w.lower() not in STOP_WORDS and self.synonyms(w.lower())]
        self.rng.shuffle(candidates)
        for i in candidates[: self._n(words)]:
            out[i] = self.rng.choice(self.synonyms(words[i].lower()))
        return out

    def random_insertion(self, words: list[str]) -> list[str]:
        """RI: n times, insert a synonym of a random word with synonyms at a random position."""
        out = list(words)
        candidates = [w for w in words if w.lower() not in STOP_WORDS and self.synonyms(w.lower())]
        if not candidates:
            return out
        for _ in range(self._n(words)):
            syn = self.rng.choice(self.synonyms(self.rng.choice(candidates).lower()))
            out.insert(self.rng.randint(0, len(out)), syn)
        return out

    def random_swap(self, words: list[str]) -> list[str]:
        """RS: n times, swap two random positions."""
        out = list(words)
        if len(out) < 2:
            return out
        for _ in range(self._n(words)):
            i, j = self.rng.sample(range(len(out)), 2)
            out[i], out[j] = out[j], out[i]
        return out

    def random_deletion(self, words: list[str]) -> list[str]:
        """RD: drop each word with probability α; keep one random word if all would go."""
        if len(words) <= 1:
            return list(words)
        out = [w for w in words if self.rng.random() > self.alpha]
        return out or [self.rng.choice(words)]

    def augment(self, text: str, num_aug: int = 1) -> list[str]:
        """``num_aug`` augmented copies of ``text``, each made by one randomly chosen operation."""
        words = text.split()
        if not words:
            return [text] * num_aug
        fns = {
            "sr": self.synonym_replacement,
            "ri": self.random_insertion,
            "rs": self.random_swap,
            "rd": self.random_deletion,
        }
        return [" ".join(fns[self.rng.choice(self.operations)](words)) for _ in range(num_aug)]

    def __call__(self, texts: Sequence[str]) -> list[str]:
        """One augmented view per text."""
        return [self.augment(t, 1)[0] for t in texts]

    def copies(self, texts: Sequence[str], num_aug: int = 4) -> list[list[str]]:
        """``num_aug`` augmented copies of every text (four in Wei & Zou's suggestion and Chi et al.'s setting)."""
        if num_aug < 1:
            raise FairmtError(f"EDA num_aug must be ≥ 1, got {num_aug}")
        return [self.augment(t, num_aug) for t in texts]


def eda(texts: Sequence[str], alpha: float = 0.1, synonyms: SynonymSource | None = None, seed: int = 0) -> list[str]:
    """One EDA view of every text (see :class:`EDA`)."""
    return EDA(alpha=alpha, synonyms=synonyms, seed=seed)(texts)
