"""Local stand-ins in the real formats of the fair-classification papers' datasets (tiny, synthetic, made on the fly).

* Bias-in-Bios — Ravfogel et al.'s ``{train,dev,test}.pickle``: lists of ``{hard_text, p, g}`` (the CSCL split);
* Civil Comments — WILDS's ``all_data_with_identities.csv`` (``comment_text, split, toxicity`` + identity columns);
* Moji — the four DeepMoji files ``{pos_pos,pos_neg,neg_pos,neg_neg}.npy`` (rows of floats);
* Huang et al. hate speech — ``<Language>/{train,valid,test}.tsv`` with 40 token ids per row.

The texts are built from a small vocabulary so that a tiny word-level BERT (``tests/tiny_encoders.write_tiny_bert``)
covers them; labels are learnable and the protected group leaks through a word, as in the real data.
"""

from __future__ import annotations

import csv
import pickle
import random
from pathlib import Path

import numpy as np

PROFS = ("nurse", "surgeon", "professor", "attorney")
TOPIC = {
    "nurse": "patients ward care",
    "surgeon": "operating theatre scalpel",
    "professor": "lectures students research",
    "attorney": "court clients law",
}
FILLER = "works in the city and has many years of experience with".split()


def bios_rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        p = PROFS[i % len(PROFS)]
        g = "f" if (i // len(PROFS)) % 2 == 0 else "m"
        words = TOPIC[p].split() + rng.sample(FILLER, 5) + [("she" if g == "f" else "he")]
        rng.shuffle(words)
        rows.append({"hard_text": " ".join(words), "p": p, "g": g, "start": 0})
    return rows


def bios_texts() -> list[str]:
    return [" ".join(TOPIC[p].split() + FILLER + ["she", "he"]) for p in PROFS]


def write_bios(root: Path, sizes=(48, 16, 16)) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split, n, seed in zip(("train", "dev", "test"), sizes, (0, 1, 2)):
        with (root / f"{split}.pickle").open("wb") as fh:
            pickle.dump(bios_rows(n, seed), fh)
    return root


TOXIC = "idiot stupid hate awful".split()
CALM = "thanks agree good point".split()
RACE_WORDS = {"black": "black", "white": "white", "asian": "asian"}
WILDS_IDENTITIES = (
    "male",
    "female",
    "christian",
    "muslim",
    "asian",
    "black",
    "latino",
    "other_race_or_ethnicity",
    "white",
)


def write_wilds(root: Path, n_per_split=(40, 16, 16), seed: int = 0) -> Path:
    """``all_data_with_identities.csv`` in WILDS's layout; a quarter of the rows mention no race (dropped by CSCL's
    race subset)."""
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    fields = ["id", "comment_text", "split", "toxicity", *WILDS_IDENTITIES]
    with (root / "all_data_with_identities.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        k = 0
        for split, n in zip(("train", "val", "test"), n_per_split):
            for i in range(n):
                toxic = i % 2
                race = ("black", "white", "asian", None)[(i // 2) % 4]
                words = rng.sample(TOXIC if toxic else CALM, 3) + ([RACE_WORDS[race]] if race else ["people"])
                row = {
                    "id": k,
                    "comment_text": " ".join(words),
                    "split": split,
                    "toxicity": round(0.6 + 0.3 * rng.random(), 3) if toxic else round(0.4 * rng.random(), 3),
                }
                row.update({c: 0.0 for c in WILDS_IDENTITIES})
                if race:
                    row[race] = 1.0 if rng.random() < 0.8 else 0.6
                w.writerow(row)
                k += 1
    return root


def jigsaw_texts() -> list[str]:
    return [" ".join(TOXIC + CALM + list(RACE_WORDS.values()) + ["people"])]


def write_moji(root: Path, rows_per_file: int = 44, dim: int = 12, seed: int = 0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for f in ("pos_pos", "pos_neg", "neg_pos", "neg_neg"):
        happy, aae = f.startswith("pos"), f.endswith("_pos")
        x = rng.normal(size=(rows_per_file, dim)).astype(np.float32)
        x[:, 0] += 2.0 if happy else -2.0
        x[:, 1] += 1.0 if aae else -1.0
        np.save(root / f"{f}.npy", x)
    return root


HS_COLUMNS = ["tid", "uid", "text", "date", "gender", "age", "city", "state", "country", "ethnicity", "label"]


def write_hatespeech(root: Path, language: str = "English", sizes=(80, 24, 24), seed: int = 0) -> Path:
    folder = root / language
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for split, n in zip(("train", "valid", "test"), sizes):
        with (folder / f"{split}.tsv").open("w", encoding="utf-8") as fh:
            fh.write("\t".join(HS_COLUMNS) + "\n")
            for i in range(n):
                label, age = i % 2, (i // 2) % 2
                ids = [rng.randint(10 + 20 * label, 25 + 20 * label) for _ in range(6)] + [60 + age]
                text = " ".join(map(str, [0] * (40 - len(ids)) + ids))
                age_value = "x" if i % 7 == 6 else str(age)
                fh.write(
                    "\t".join([str(i), str(i), text, "2017-1-1", str(i % 2), age_value, "x", "x", "x", "x", str(label)])
                    + "\n"
                )
    return root
