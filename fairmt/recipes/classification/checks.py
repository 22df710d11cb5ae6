"""What the classification family's recipes need before they run: what ``fairmt recipes`` lists (:func:`needs`) and what
``fairmt train --dry-run`` and ``fairmt sweep`` find that the real run would hit (:func:`findings`, on the helpers of
:mod:`fairmt.recipes._preflight`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._preflight import Finding, data_file, model, output, precision


def needs(config: dict) -> tuple[Any, list[str]]:
    """The model a classification recipe loads (an encoder it embeds with or fine-tunes; none for a bag-of-words or
    a GRU) and the local data it reads."""
    m = config.get("model")
    if isinstance(m, dict):
        m = (
            m.get("name_or_path", "minilm")
            if m.get("type", "frozen_embedder") in ("frozen_embedder", "finetune")
            else None
        )
    raw = config.get("data")
    data: dict = raw if isinstance(raw, dict) else {}
    name = data.get("dataset", "bios")
    if name == "synthetic":
        return m, []
    return m, [
        "FAIRMT_DATA/bios (`fairmt data download bios`)"
        if name == "bios"
        else f"the {name} data (`fairmt data corpora`)"
    ]


_CLASSIFICATION_FOLDERS = {"bios_split": "bias_in_bios", "jigsaw": "civilcomments", "moji": "moji"}


def findings(config: dict, cfg: dict) -> list[Finding | None]:
    from fairmt.data.paths import data_root

    out: list[Finding | None] = []
    d, m = cfg["data"], cfg["model"]
    if m["type"] in ("frozen_embedder", "finetune"):
        out.append(model(m["name_or_path"], "model.name_or_path"))
    if d.get("augment") in ("clm_insert", "clm_substitute"):
        out.append(model(d["clm_model"], "data.clm_model"))
    if d.get("augment") == "backtranslate" and d.get("backtranslate_model"):
        out.append(model(d["backtranslate_model"], "data.backtranslate_model"))
    name = d["dataset"]
    if d.get("source") == "hub":
        from fairmt.hub import require_dataset

        try:
            require_dataset("LabHC/bias_in_bios", "data.source: hub (LabHC/bias_in_bios)")
        except FairmtError as err:
            out.append((True, str(err)))
    elif name == "bios":
        for f in d.get("files") or []:
            out.append(data_file(f, "data.files entry"))
        if not d.get("files"):
            sample = data_file(data_root() / "bios" / "bios_28prof_x10.csv", "the Bias-in-Bios sample")
            out.append(sample and (True, sample[1] + ": fetch it with `fairmt data download bios`"))
    elif name == "hatespeech":
        from fairmt.data.classification import hatespeech_missing_file

        folder = d.get("root") or data_root() / "hatespeech_huang2020" / d["language"]
        missing = data_file(folder, "the hate-speech data folder (data.root)")
        if missing is None:  # the folder is there: the split files the run reads, with the run's own message
            text = hatespeech_missing_file(Path(str(folder)), d["language"])
            missing = (True, text) if text else None
        out.append(missing)
    else:
        out.append(
            data_file(
                d.get("root") or data_root() / _CLASSIFICATION_FOLDERS[name],
                f"the {name} data folder (data.root; `fairmt data corpora` says how to get it)",
            )
        )
    for stage, args in (cfg.get("stages") or {}).items():
        out.append(precision(args, f"{stage}: "))
    out.append(output(cfg["output_dir"], config, "output_dir"))
    return out
