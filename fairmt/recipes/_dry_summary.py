"""What ``fairmt train RECIPE --dry-run`` says matters before a GPU hour, beyond whether the inputs exist: the data
after the recipe's own preparation (filtering, balancing, splits) and whether it suffices, steps per epoch, the
model's parameter count (from its config, on the meta device: no weights are read) and the GACL teacher's dtype
and memory. :func:`summarize` returns ``(lines, findings)``; a finding is ``(fatal, text)`` as in
:mod:`fairmt.recipes._preflight`.
"""

from __future__ import annotations

import math
import os
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def count_parameters(ref: Any, seq2seq: bool = False) -> int | None:
    """The parameter count of the model ``ref`` names (local folder, alias or cached Hub id), built from its config
    on the meta device; ``None`` when its config cannot be read here."""
    try:
        import torch
        from transformers import AutoConfig

        from fairmt.hub import resolve_model_ref

        path = resolve_model_ref(str(ref))
        if (Path(path) / "modules.json").is_file():  # a sentence-transformers folder: its transformer's config
            for sub in ("", "0_Transformer"):
                if (Path(path) / sub / "config.json").is_file():
                    path = str(Path(path) / sub)
                    break
        config = AutoConfig.from_pretrained(path, local_files_only=True)  # never the network: the findings say
        from transformers import AutoModel, AutoModelForSeq2SeqLM

        auto: Any = AutoModelForSeq2SeqLM if seq2seq else AutoModel
        with torch.device("meta"):
            model = auto.from_config(config)
        return sum(p.numel() for p in model.parameters())
    except Exception:  # noqa: BLE001 - the summary says "unknown" (the findings say why a model is missing)
        return None


def millions(n: int | None) -> str:
    return "unknown (its config is not readable here)" if n is None else f"{n / 1e6:.2f}M"


def gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.2f} GiB" if n_bytes >= 2**28 else f"{n_bytes / 2**20:.1f} MiB"


def world_size() -> int:
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def steps_line(n_train: int, args: Any) -> str:
    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * world_size()
    per_epoch = math.ceil(n_train / per_step) if not args.dataloader_drop_last else n_train // per_step
    line = (
        f"steps per epoch: {per_epoch} ({n_train} training examples / (batch {args.per_device_train_batch_size}"
        f" × accumulation {args.gradient_accumulation_steps} × {world_size()} process(es)))"
    )
    if args.max_steps and args.max_steps > 0:
        line += f"; max_steps {args.max_steps} = {args.max_steps / max(per_epoch, 1):.2f} epochs"
    else:
        line += f"; {args.num_train_epochs:g} epochs = {math.ceil(per_epoch * args.num_train_epochs)} steps"
    return line


def training_memory(n: int | None) -> str:
    if n is None:
        return ""
    return f"; weights + gradients + Adam states in fp32 ≈ {gib(16 * n)} (activations not counted)"


def summarize(config: dict, resolved: Any, found: list[tuple[bool, str]]) -> tuple[list[str], list[tuple[bool, str]]]:
    """The summary lines and sufficiency findings of ``config`` (its family's,
    :attr:`fairmt.recipes.Family.dry_summary`), given the existence checks' findings ``found`` (a missing data file
    is not read again)."""
    from fairmt.recipes._registry import family

    fam = family(config.get("method"))
    if isinstance(resolved, dict) or not fam.dry_summary:
        return [], []
    if any(fatal and text.startswith("data.") for fatal, text in found):
        return ["data: not read (a data finding above stops the real run first)"], []
    return fam.summarize(config, resolved) or ([], [])


def changed_fields(resolved: Any, config: dict, skip: tuple[str, ...] = ()) -> tuple[dict, list[str]]:
    """``(shown, set_by_recipe)``: the resolved Config's values the recipe sets or that differ from the class's
    defaults (a method's presets; ``skip``: fields never shown), and the keys the recipe's ``training`` section
    sets."""
    import json

    full = json.loads(resolved.to_json_string())
    set_by_recipe = sorted(k for k in (config.get("training") or {}) if k in full)
    defaults = {}
    for f in fields(type(resolved)):
        if f.default is not MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not MISSING:
            defaults[f.name] = f.default_factory()
    shown = {k: v for k, v in full.items() if k not in skip and k != "hub_token"}
    shown = {
        k: v
        for k, v in shown.items()
        if k in set_by_recipe or k == "output_dir" or (k in defaults and _jsonable(defaults[k]) != v)
    }
    return shown, set_by_recipe


def _jsonable(value: Any) -> Any:
    import json

    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)
