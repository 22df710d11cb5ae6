"""Regenerate fairmt/resources/data_manifest.json: sha256 + size of every benchmark file in a data directory laid
out like the fairmt data cache, with each file's upstream URL.

    python scripts/make_data_manifest.py ../shared/data

Files whose upstream location is not a plain file in the upstream repository's current tree (the 2019 versions
of the WinoMT gold, which live in the repository history, the 2019 evaluator logs, the alignment file and the
derived adjective gold) get ``url: null``: `fairmt data download` fetches those only from a mirror (--base-url).

The Bias-in-Bios sample (``bios/``) comes from a public repository that keeps it as one CSV per profession (the rows
of LabHC/bias_in_bios, 10 per profession): ``bios_28prof_x10.csv`` is those 28 files joined in profession order
with the header once, so its entry lists the 28 files as ``parts`` (URL, size, sha256 each, at a fixed commit) and
the download joins and checks them; ``bios_accountant_1000.csv`` is one file there, byte for byte. The parts' bytes
are those of Python's ``csv.writer`` over each profession's rows (checked against the repository's files when this
manifest was made).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sys
from pathlib import Path

MT_GENDER = "https://raw.githubusercontent.com/gabrielStanovsky/mt_gender/master"
GENEVAL = "https://raw.githubusercontent.com/amazon-science/machine-translation-gender-eval/main"
BIOS_REPO = "https://raw.githubusercontent.com/Shilpi261985/P2_BiasMitigation_SyntheticData/6d3a4607af4164aa60975af604d8acf32d6191d8"
FLORES_URL = "https://dl.fbaipublicfiles.com/nllb/flores200_dataset.tar.gz"
COREF_BIAS = "https://raw.githubusercontent.com/uclanlp/corefBias/0bce984dd081bbc10b0622f326727a024c607895"
LEXICONS = {  # Zhao et al. (2018)'s WinoBias word lists (MIT), the GACL paper's lexicon: data path -> upstream URL
    "lexicons/corefBias_generalized_swaps.txt": f"{COREF_BIAS}/WinoBias/wino/generalized_swaps.txt",
    "lexicons/corefBias_extra_gendered_words.txt": f"{COREF_BIAS}/WinoBias/wino/extra_gendered_words.txt",
    "lexicons/corefBias_LICENSE": f"{COREF_BIAS}/LICENSE",
}
OUT = Path(__file__).resolve().parents[1] / "fairmt" / "resources" / "data_manifest.json"


def upstream(rel: str) -> str | None:
    parts = rel.split("/")
    if parts[0] == "winomt":
        if parts[1] == "aggregates":
            return f"{MT_GENDER}/data/aggregates/{parts[2]}"
        if parts[1] == "translations":
            return f"{MT_GENDER}/translations/{'/'.join(parts[2:])}"
        if parts[1] == "LICENSE":
            return f"{MT_GENDER}/LICENSE"
        return None  # aggregates_acl2019/, logs/: repository history / evaluator output
    if parts[0] == "mt_geneval":
        if parts[1] in ("LICENSE", "NOTICE"):
            return f"{GENEVAL}/{parts[1]}"
        return f"{GENEVAL}/data/{'/'.join(parts[1:])}"
    raise ValueError(rel)


def _entry(base: Path, rel: str, url: str | None) -> dict:
    data = (base / rel).read_bytes()
    return {"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "url": url}


def bios_parts(data: bytes) -> list[tuple[str, bytes]]:
    """The per-profession CSV files that ``bios_28prof_x10.csv`` joins, in its order: (profession, bytes)."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    header, body = rows[0], rows[1:]
    order = list(dict.fromkeys(r[1] for r in body))
    parts = []
    for prof in order:
        buf = io.StringIO(newline="")
        writer = csv.writer(buf)  # the repository's files: QUOTE_MINIMAL, CRLF
        writer.writerow(header)
        writer.writerows(r for r in body if r[1] == prof)
        parts.append((prof, buf.getvalue().encode("utf-8")))
    joined = parts[0][1] + b"".join(p.split(b"\r\n", 1)[1] for _, p in parts[1:])
    if joined != data:
        raise SystemExit("bios_28prof_x10.csv is not the join of its per-profession files: the parts cannot be pinned")
    return parts


def bios_entry(base: Path) -> dict:
    sample = _entry(base, "bios/bios_28prof_x10.csv", None)
    sample["parts"] = [
        {"url": f"{BIOS_REPO}/csvs/Bios_samples/{prof}.csv", "size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
        for prof, b in bios_parts((base / sample["path"]).read_bytes())
    ]
    sample["header_lines"] = 1
    accountants = _entry(
        base, "bios/bios_accountant_1000.csv", f"{BIOS_REPO}/csvs/Bios_samples/accountant_complete.csv"
    )
    return {"files": [sample, accountants], "archives": []}


def main(root: str) -> None:
    base = Path(root)
    manifest: dict = {"version": 1, "datasets": {}}
    for dataset, folder in (("winomt", "winomt"), ("geneval", "mt_geneval")):
        files = []
        for p in sorted((base / folder).rglob("*")):
            if p.is_file():
                rel = p.relative_to(base).as_posix()
                data = p.read_bytes()
                files.append(
                    {"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "url": upstream(rel)}
                )
        manifest["datasets"][dataset] = {"files": files, "archives": []}
    manifest["datasets"]["bios"] = bios_entry(base)
    manifest["datasets"]["lexicons"] = {
        "files": [_entry(base, rel, url) for rel, url in LEXICONS.items()],
        "archives": [],
    }
    manifest["datasets"]["flores200"] = {
        "files": [],
        "archives": [
            {
                "name": "flores200_dataset.tar.gz",
                "url": FLORES_URL,
                "sha256": None,  # not pinned: no copy to hash here; see fairmt.data.download
                "target": "flores200",
                "strip_components": 1,
                "include": ["dev/", "devtest/", "LICENSE", "README"],
            }
        ],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: " + ", ".join(f"{k} {len(v['files'])} files" for k, v in manifest["datasets"].items()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[2] / "shared" / "data"))
