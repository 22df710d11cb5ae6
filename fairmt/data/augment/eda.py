"""EDA views (Wei & Zou, 2019, "EDA: Easy Data Augmentation Techniques for Boosting Performance on Text
Classification Tasks") for contrastive fine-tuning (Chi et al., 2022 use α = 0.1 and make four augmented copies of
each example, :meth:`EDA.copies`; their collator draws one of the four at random for every example of a batch, which
:class:`fairmt.data.classification.ClassificationCollator` does with a ``text_views`` column).

Four operations on whitespace tokens, each applied to ``n = max(1, round(α·len(words)))`` words:

* synonym replacement (SR): replace ``n`` random non-stop-words with a random synonym;
* random insertion (RI): insert a synonym of a random non-stop-word at a random position, ``n`` times;
* random swap (RS): swap two random words, ``n`` times;
* random deletion (RD): delete each word with probability α (never all of them).

Synonyms come from ``synonyms`` (a mapping word → synonyms or a callable); with none given, WordNet through NLTK is
used when NLTK and its ``wordnet`` corpus are installed. Without any synonym source SR and RI cannot change the
text: :func:`eda` then uses only RS and RD and says so once with a warning (it never pretends to have replaced
synonyms). Deterministic for a given ``seed``.
"""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Callable, Mapping, Sequence

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


def wordnet_synonyms() -> Callable[[str], list[str]] | None:
    """A WordNet synonym function through NLTK, or ``None`` when NLTK or its wordnet corpus is missing."""
    try:
        from nltk.corpus import wordnet  # type: ignore[import-not-found]

        wordnet.synsets("test")
    except Exception:  # noqa: BLE001 - not installed, or corpus not downloaded
        return None

    def synonyms(word: str) -> list[str]:
        out = []
        for syn in wordnet.synsets(word):
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
