"""Data preparation for GACL (Lee et al. 2023, §3.1), sampling and collation.

1. keep source sentences with gendered words of exactly one gender (:func:`filter_single_gender`);
2. balance male and female sentences (:func:`balance_genders`);
3. add the gender-swapped counterfactual of each source (:func:`add_counterfactuals`);
4. tokenise (:func:`tokenize_gacl`) and batch with :class:`GenderContrastiveCollator`, whose batches carry
   ``gender`` and ``cf_input_ids``/``cf_attention_mask`` to the Trainer; :class:`GenderBalancedSampler` makes every
   per-device batch half male, half female, so in-batch negatives always exist.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import Sampler

from fairmt.data.gender import detect_gender, swap_gender
from fairmt.data.lexicon import GENDER_IDS
from fairmt.errors import FairmtError

GACL_COLUMNS = ("input_ids", "attention_mask", "labels", "cf_input_ids", "cf_attention_mask", "gender")


def filter_single_gender(dataset, column: str = "src", detect: Callable[[str], str] | None = None):
    """Rows whose ``column`` marks exactly one gender, with an integer ``gender`` column (0 male, 1 female).
    ``detect``: the lexicon's detector (default fairmt's, :func:`fairmt.data.gender.detect_gender`)."""
    detect = detect or detect_gender
    genders = [detect(s) for s in dataset[column]]
    keep = [i for i, g in enumerate(genders) if g in GENDER_IDS]
    out = dataset.select(keep)
    return out.add_column("gender", [GENDER_IDS[genders[i]] for i in keep])


def balance_genders(dataset, seed: int = 0):
    """Down-sample the majority gender so both genders have the same number of rows (order shuffled, seeded)."""
    g = dataset["gender"]
    by = {k: [i for i, x in enumerate(g) if x == k] for k in (0, 1)}
    n = min(len(by[0]), len(by[1]))
    if n == 0:
        raise FairmtError(
            f"cannot balance genders: {len(by[0])} male and {len(by[1])} female sentences; GACL needs both"
        )
    rng = random.Random(seed)
    keep = rng.sample(by[0], n) + rng.sample(by[1], n)
    rng.shuffle(keep)
    return dataset.select(keep)


def add_counterfactuals(dataset, column: str = "src", swap: Callable[[str], str] | None = None):
    """Add ``src_cf``: the source with every gendered word swapped (GACL's gender re-inflection); ``swap``: the
    lexicon's swap (default fairmt's, :func:`fairmt.data.gender.swap_gender`)."""
    swap = swap or swap_gender
    return dataset.add_column(f"{column}_cf", [swap(s) for s in dataset[column]])


def prepare_gacl_pairs(dataset, balance: bool = True, seed: int = 0, lexicon: str = "fairmt"):
    """Filter, balance and add counterfactuals to a ``src``/``tgt`` dataset (steps 1–3 above). ``lexicon``: whose
    word list filters and swaps (:data:`fairmt.data.zhao_lexicon.GACL_LEXICONS`: ``fairmt``, or ``zhao2018``, the
    WinoBias lists the GACL paper names, fetched by ``fairmt data download lexicons``)."""
    from fairmt.data.zhao_lexicon import gacl_lexicon

    if len(dataset) == 0:
        raise FairmtError("the training data is empty")
    detect, swap = gacl_lexicon(lexicon)
    ds = filter_single_gender(dataset, detect=detect)
    if len(ds) == 0:
        raise FairmtError("no source sentence has gendered words of exactly one gender: nothing to train GACL on")
    if balance:
        ds = balance_genders(ds, seed)
    return add_counterfactuals(ds, swap=swap)


# Target-side gender words for GFST filtering (Choubey et al. 2021), German: unambiguous singular pronouns and
# person nouns only ("sie"/"ihr" are also plural or formal and are left out). A user may pass their own lists.
GFST_TARGET_WORDS: dict[str, dict[str, frozenset[str]]] = {
    "de": {
        "male": frozenset(
            "er ihn ihm sein seine seinen seinem seiner seines mann männer herr herrn vater väter sohn söhne "
            "bruder brüder onkel opa großvater ehemann freund junge jungen könig prinz neffe".split()
        ),
        "female": frozenset(
            "frau frauen dame damen mutter mütter tochter töchter schwester schwestern tante oma großmutter "
            "ehefrau freundin mädchen königin prinzessin nichte".split()
        ),
    },
}


def target_gender_detector(lang: str, words: dict[str, list[str]] | None = None) -> Callable[[str], str | None]:
    """``text → "male" | "female" | None`` for target-side filtering: English uses fairmt's detection
    (:func:`fairmt.data.gender.detect_gender`), other languages a word list (``words`` = ``{"male": [...],
    "female": [...]}``, default :data:`GFST_TARGET_WORDS`); a sentence with words of both genders or none is None."""
    if lang == "en" and words is None:
        return lambda text: g if (g := detect_gender(text)) in GENDER_IDS else None
    table = {k: frozenset(w.lower() for w in v) for k, v in words.items()} if words else GFST_TARGET_WORDS.get(lang)
    if not table or not table.get("male") or not table.get("female"):
        raise FairmtError(
            f"no target-side gender words for language {lang!r}: pass data.target_gender_words "
            "({male: [...], female: [...]}) in the recipe"
        )

    def detect(text: str) -> str | None:
        toks = {t.strip(".,;:!?\"'()«»„“”").lower() for t in text.split()}
        found = {g for g in ("male", "female") if toks & table[g]}
        return found.pop() if len(found) == 1 else None

    return detect


def filter_target_gender(dataset, detect: Callable[[str], str | None], column: str = "tgt", source: str = "src"):
    """GFST's filtering step (Choubey et al. 2021) for pseudo-parallel data: keep pairs whose target side
    (``column``) marks exactly one gender by ``detect`` and whose source, where it marks a gender, agrees (a
    gender-flipping translation is dropped); adds the integer ``gender`` column (0 male, 1 female)."""
    keep, genders = [], []
    for i, (src, tgt) in enumerate(zip(dataset[source], dataset[column])):
        g = detect(tgt)
        if g is None:
            continue
        gs = detect_gender(src)
        if gs in GENDER_IDS and gs != g:
            continue
        keep.append(i)
        genders.append(GENDER_IDS[g])
    if not keep:
        raise FairmtError("GFST filtering kept no pair: no target sentence marks exactly one gender")
    return dataset.select(keep).add_column("gender", genders)


def tokenize_gacl(dataset, encode: Callable[..., Any], max_length: int = 256, batch_size: int = 256):
    """Tokenise ``src``/``tgt``/``src_cf`` with ``encode(sources, targets=None, max_length=...)`` (e.g.
    :meth:`fairmt.models.TranslationModel.encode`), keeping ``gender``."""

    def fn(batch):
        enc = encode(batch["src"], batch["tgt"], max_length=max_length)
        cf = encode(batch["src_cf"], max_length=max_length)
        return {
            "input_ids": enc["input_ids"],
            "attention_mask": enc["attention_mask"],
            "labels": enc["labels"],
            "cf_input_ids": cf["input_ids"],
            "cf_attention_mask": cf["attention_mask"],
        }

    keep = [c for c in dataset.column_names if c not in ("gender",)]
    if "src_cf" not in dataset.column_names:  # plain MT rows (baselines): no counterfactual columns

        def fn(batch):  # noqa: F811
            return dict(encode(batch["src"], batch["tgt"], max_length=max_length))

    # A fresh fingerprint: without one, datasets hashes ``fn`` with dill for its cache key, and ``encode`` is a bound
    # method of a model, so every call pickled and hashed all of the model's weights (0.3 s for a tiny model, seconds
    # and gigabytes for a real one). The cost: a dataset read from files is tokenised again on each run instead of
    # being found in datasets' cache, and tokenising is cheaper than hashing the model.
    new_fingerprint = uuid.uuid4().hex
    return dataset.map(fn, batched=True, batch_size=batch_size, remove_columns=keep, new_fingerprint=new_fingerprint)


@dataclass
class GenderContrastiveCollator:
    """Pads a GACL batch: model inputs and labels (``-100`` padding), counterfactual inputs, and ``gender``.

    Rows without ``cf_input_ids`` are allowed only if no row has them (e.g. the official variant, which uses no
    counterfactuals). The same for ``gender``: a batch without it is a plain MT batch (evaluation on a whole dev
    set, or fine-tuning without the contrastive term); the trainer refuses it for training with λ > 0.
    """

    pad_token_id: int
    label_pad_token_id: int = -100
    pad_to_multiple_of: int | None = None

    def _pad(self, seqs: list[list[int]], value: int) -> torch.Tensor:
        n = max(len(s) for s in seqs)
        if self.pad_to_multiple_of:
            n = -(-n // self.pad_to_multiple_of) * self.pad_to_multiple_of
        return torch.tensor([list(s) + [value] * (n - len(s)) for s in seqs], dtype=torch.long)

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        if not features:
            raise FairmtError("empty batch")
        has_gender = ["gender" in f for f in features]
        if any(has_gender) and not all(has_gender):
            raise FairmtError(
                "some rows of the batch have a 'gender' column and others not: prepare the data with "
                "fairmt.data.gacl.prepare_gacl_pairs and keep remove_unused_columns=False"
            )
        batch = {
            "input_ids": self._pad([f["input_ids"] for f in features], self.pad_token_id),
            "attention_mask": self._pad([f["attention_mask"] for f in features], 0),
        }
        if all(has_gender):  # rows without it (a plain evaluation set, plain fine-tuning) give plain batches
            batch["gender"] = torch.tensor([int(f["gender"]) for f in features], dtype=torch.long)
        if "labels" in features[0]:
            batch["labels"] = self._pad([f["labels"] for f in features], self.label_pad_token_id)
        has_cf = ["cf_input_ids" in f for f in features]
        if any(has_cf):
            if not all(has_cf):
                raise FairmtError("some rows of the batch have counterfactual inputs (cf_input_ids) and others not")
            batch["cf_input_ids"] = self._pad([f["cf_input_ids"] for f in features], self.pad_token_id)
            batch["cf_attention_mask"] = self._pad([f["cf_attention_mask"] for f in features], 0)
        return batch


class GenderBalancedSampler(Sampler[int]):
    """Yields indices alternating male, female (each gender shuffled per epoch, seeded).

    Any batch of even size cut from this order — per device under DDP, since accelerate hands out consecutive
    batches — holds as many male as female rows. Rows of the larger gender beyond the smaller count are dropped
    for the epoch (a different subset each epoch).
    """

    def __init__(self, genders: list[int], seed: int = 0):
        self.male = [i for i, g in enumerate(genders) if int(g) == 0]
        self.female = [i for i, g in enumerate(genders) if int(g) == 1]
        if not self.male or not self.female:
            raise FairmtError(
                f"gender-balanced sampling needs both genders; got {len(self.male)} male and {len(self.female)} "
                "female rows"
            )
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return 2 * min(len(self.male), len(self.female))

    def __iter__(self) -> Iterator[int]:
        rng = random.Random(self.seed + self.epoch)
        m, f = self.male[:], self.female[:]
        rng.shuffle(m)
        rng.shuffle(f)
        for a, b in zip(m, f):
            yield a
            yield b
