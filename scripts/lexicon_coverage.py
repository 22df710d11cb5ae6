#!/usr/bin/env python
"""Coverage of fairmt's own gender lexicon over the published lists in ``lexicons/`` (read from FAIRMT_DATA or
``--data``; the lists are never copied into the project).

Word lists (gn_glove male/female): share of their words that fairmt's lexicon marks with the same gender.
Pair lists (bias-bench CDA pairs, the GACL author's pairs): share of pairs whose male word fairmt swaps to that
female word and back. Prints a table, or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def coverage(data: Path) -> dict:
    from fairmt.data.gender import gendered_words, swap_gender

    lex = data / "lexicons"
    out = {}
    for name, gender in (("gn_glove_male_word_file.txt", "male"), ("gn_glove_female_word_file.txt", "female")):
        words = [w.strip().lower() for w in (lex / name).read_text(encoding="utf-8").splitlines() if w.strip()]
        hit = [w for w in words if gendered_words(w)[gender] or swap_gender(w) != w]
        out[name] = {
            "n": len(words),
            "covered": len(hit),
            "share": round(len(hit) / len(words), 4),
            "missing_examples": sorted(set(words) - set(hit))[:15],
        }
    pairs = {
        "bias_bench gender pairs": [
            tuple(p) for p in json.loads((lex / "bias_bench_bias_attribute_words.json").read_text())["gender"]
        ],
        "gacl author pairs": [
            tuple(line.split("\t")[:2])
            for line in (lex / "gacl_author_gender_word_pairs.tsv").read_text(encoding="utf-8").splitlines()
            if "\t" in line
        ],
    }
    for name, ps in pairs.items():
        ok = [p for p in ps if swap_gender(p[0]) == p[1] and swap_gender(p[1]) == p[0]]
        out[name] = {
            "n": len(ps),
            "covered": len(ok),
            "share": round(len(ok) / len(ps), 4),
            "missing_examples": [f"{a}/{b}" for a, b in ps if (a, b) not in ok][:15],
        }
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--data", default=os.environ.get("FAIRMT_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    )
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    res = coverage(Path(args.data))
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for name, r in res.items():
        print(
            f"{name:34s} {r['covered']:4d}/{r['n']:<4d} = {100 * r['share']:5.1f}%   missing e.g. {', '.join(r['missing_examples'][:8])}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
