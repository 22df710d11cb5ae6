"""What the sampling family's recipes need before they run: what ``fairmt recipes`` lists (:func:`needs`) and what
``fairmt train --dry-run`` and ``fairmt sweep`` find that the real run would hit (:func:`findings`, on the helpers of
:mod:`fairmt.recipes._preflight`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._preflight import Finding, data_file, model, output, precision


def needs(config: dict) -> tuple[Any, list[str]]:
    """The backbone whose config and image processor a sampling recipe reads (its weights too with
    ``model.pretrained``) and the local image data it reads."""
    m = config.get("model")
    if isinstance(m, dict):
        m = m.get("backbone", "microsoft/resnet-50")
    raw = config.get("data")
    data: dict = raw if isinstance(raw, dict) else {}
    name = data.get("dataset", "celeba")
    return m, [] if name == "synthetic" else [f"the {name} data (`fairmt data corpora`)"]


def findings(config: dict, cfg: dict) -> list[Finding | None]:
    out: list[Finding | None] = []
    d = cfg["data"]
    if d["dataset"] != "synthetic":
        if d.get("source") == "hub":
            from fairmt.hub import require_dataset

            try:
                require_dataset(d["hub_id"], "data.hub_id")
            except FairmtError as err:
                out.append((True, str(err)))
        else:
            out.append(
                data_file(d.get("root") or "", "data.root (the image folder)")
                if d.get("root")
                else (
                    True,
                    f"data.root is not set: the {d['dataset']} images are read from a local folder "
                    "(`fairmt data corpora` says where to get them)",
                )
            )
    out.append(
        model(
            cfg["model"]["backbone"],
            "model.backbone (its config and image processor, and its weights with model.pretrained)",
        )
    )
    for stage, args in (cfg.get("resolved") or {}).items():
        out.append(precision(args, f"{stage}."))
    if cfg.get("stage1_from"):
        out.append(data_file(cfg["stage1_from"], "stage1_from (another run's folder)"))
    folder = Path(cfg["output_dir"])
    marker = folder / "run.json"
    if marker.is_file() and not config.get("overwrite"):  # the same recipe resumes; another one is refused
        from fairmt.recipes.sampling.runner import fingerprint

        try:
            same = json.loads(marker.read_text(encoding="utf-8")).get("fingerprint") == fingerprint(cfg)
        except (OSError, ValueError):
            same = False
        if not same:
            out.append((True, f"{folder} holds another recipe's run; choose another output_dir, or pass --overwrite"))
    out.append(output(cfg["output_dir"], {**config, "resume_from_checkpoint": True}, "output_dir", ("run.json",)))
    return out
