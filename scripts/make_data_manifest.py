"""Regenerate fairmt/resources/data_manifest.json: sha256 + size of every benchmark file in a data directory laid
out like the fairmt data cache, with each file's upstream URL.

    python scripts/make_data_manifest.py ../shared/data

Files whose upstream location is not a plain file in the upstream repository's current tree (the 2019 versions
of the WinoMT gold, which live in the repository history, the 2019 evaluator logs, the alignment file and the
derived adjective gold) get ``url: null``: `fairmt data download` fetches those only from a mirror (--base-url).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

MT_GENDER = "https://raw.githubusercontent.com/gabrielStanovsky/mt_gender/master"
GENEVAL = "https://raw.githubusercontent.com/amazon-science/machine-translation-gender-eval/main"
FLORES_URL = "https://dl.fbaipublicfiles.com/nllb/flores200_dataset.tar.gz"
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


def main(root: str) -> None:
    base = Path(root)
    manifest: dict = {"version": 1, "datasets": {}}
    for dataset, folder in (("winomt", "winomt"), ("geneval", "mt_geneval")):
        files = []
        for p in sorted((base / folder).rglob("*")):
            if p.is_file():
                rel = p.relative_to(base).as_posix()
                data = p.read_bytes()
                files.append({"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "url": upstream(rel)})
        manifest["datasets"][dataset] = {"files": files, "archives": []}
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
