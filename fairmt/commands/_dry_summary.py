"""What ``fairmt train RECIPE --dry-run`` says matters before a GPU hour, beyond whether the inputs exist: the data
after the recipe's own preparation (filtering, balancing, splits) and whether it suffices, steps per epoch, the
model's parameter count (from its config, on the meta device: no weights are read) and the GACL teacher's dtype
and memory. :func:`summarize` returns ``(lines, findings)``; a finding is ``(fatal, text)`` as in
:mod:`fairmt.commands._preflight`.
"""

from __future__ import annotations

import math
import os
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


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
        if seq2seq:
            from transformers import AutoModelForSeq2SeqLM as Auto
        else:
            from transformers import AutoModel as Auto
        with torch.device("meta"):
            model = Auto.from_config(config)
        return sum(p.numel() for p in model.parameters())
    except Exception:  # noqa: BLE001 - the summary says "unknown" (the findings say why a model is missing)
        return None


def _millions(n: int | None) -> str:
    return "unknown (its config is not readable here)" if n is None else f"{n / 1e6:.2f}M"


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.2f} GiB" if n_bytes >= 2**28 else f"{n_bytes / 2**20:.1f} MiB"


def _world_size() -> int:
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def _steps(n_train: int, args: Any) -> str:
    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * _world_size()
    per_epoch = math.ceil(n_train / per_step) if not args.dataloader_drop_last else n_train // per_step
    line = (f"steps per epoch: {per_epoch} ({n_train} training examples / (batch {args.per_device_train_batch_size}"
            f" × accumulation {args.gradient_accumulation_steps} × {_world_size()} process(es)))")
    if args.max_steps and args.max_steps > 0:
        line += f"; max_steps {args.max_steps} = {args.max_steps / max(per_epoch, 1):.2f} epochs"
    else:
        line += f"; {args.num_train_epochs:g} epochs = {math.ceil(per_epoch * args.num_train_epochs)} steps"
    return line


def _training_memory(n: int | None) -> str:
    if n is None:
        return ""
    return f"; weights + gradients + Adam states in fp32 ≈ {_gb(16 * n)} (activations not counted)"


def _gacl(config: dict, args: Any) -> tuple[list[str], list[tuple[bool, str]]]:
    lines: list[str] = []
    found: list[tuple[bool, str]] = []
    n = count_parameters(config.get("model"), seq2seq=True)
    lines.append(f"model {config.get('model')}: {_millions(n)} parameters{_training_memory(n)}")
    if args.kd_alpha > 0:
        from fairmt.models.precision import resolve_teacher_dtype

        chosen, why = resolve_teacher_dtype(args.teacher_dtype, args.device)
        dtype = str(chosen).replace("torch.", "")
        size = "" if n is None else f", ≈ {_gb(n * _BYTES[dtype])}"
        lines.append(f"KD teacher: a frozen copy of the model in {dtype}{size} (kd_alpha {args.kd_alpha}; "
                     f"teacher_dtype {why})")
    else:
        lines.append("KD teacher: none (kd_alpha 0)")
    data_cfg = dict(config.get("data") or {})
    train = data_cfg.get("train")
    if not train or (config.get("tiny_model") and not Path(str(train)).exists()):
        lines.append("data: written by the recipe's tiny_model section on the first run (not counted here)")
        return lines, found
    p = Path(str(train))
    if not p.is_file():
        lines.append(f"data: {train} is not a local file (a Hugging Face dataset): not read by the dry run")
        return lines, found
    from fairmt.data.parallel import read_parallel
    from fairmt.recipes.gacl.runner import key_aliases, prepare_data

    src, tgt = config.get("src_lang", "en"), config.get("tgt_lang", "de")
    try:
        pairs = read_parallel(str(p), src, tgt, split=data_cfg.get("split", "train"), key_aliases=key_aliases(src, tgt))
        n_read = len(pairs)
        if data_cfg.get("max_train_samples"):
            pairs = pairs.select(range(min(n_read, int(data_cfg["max_train_samples"]))))
        prepared = prepare_data(pairs, data_cfg, tgt, int(data_cfg.get("seed", 42)))  # data.seed, as the runner
    except FairmtError as err:
        found.append((True, f"data.train {train}: {err}"))
        return lines, found
    n_prep = len(prepared)
    frac = 0.0 if data_cfg.get("eval") else float(data_cfg.get("eval_fraction", 0.05 if args.eval_strategy != "no"
                                                                                 else 0.0))
    n_eval = math.ceil(n_prep * frac) if frac > 0 else 0
    n_train = n_prep - n_eval
    lines.append(f"data: {n_read} pairs read, {n_prep} after data.prepare={data_cfg.get('prepare', 'gacl')} "
                 f"(filtering{' and balancing' if data_cfg.get('balance', True) else ''}), {n_train} to train on"
                 + (f", {n_eval} held out for the evaluation loss" if n_eval else ""))
    if n_train < 1 or (frac > 0 and n_eval < 1):
        found.append((True, f"data.train {train}: {n_prep} examples after data.prepare leave "
                            f"{'none to train on' if n_train < 1 else 'none for the evaluation loss'}"))
    elif n_train < args.per_device_train_batch_size * _world_size():
        found.append((False, f"data.train {train}: {n_train} training examples, fewer than one batch "
                             f"({args.per_device_train_batch_size} × {_world_size()})"))
    if n_train >= 1:
        lines.append(_steps(n_train, args))
    return lines, found


def _ccd(config: dict, args: Any) -> tuple[list[str], list[tuple[bool, str]]]:
    """CCD: the tuples after the recipe's preparation (CDA, splits), and the CCDConfig the run would build from
    them (``args`` is None: the CCD runner makes its Config from the data)."""
    lines: list[str] = []
    found: list[tuple[bool, str]] = []
    n = count_parameters(config.get("model"))
    lines.append(f"model {config.get('model')}: {_millions(n)} parameters{_training_memory(n)}; f_orig (frozen "
                 f"copy for L_rep){'' if n is None else f' ≈ {_gb(4 * n)}'}")
    from fairmt.recipes.ccd.data import prepare_data
    from fairmt.recipes.ccd.runner import training_arguments

    try:
        data = prepare_data(dict(config.get("data") or {}))
    except FairmtError as err:  # too few tuples for the held-out and validation sets, bad rows, ...
        found.append((True, f"data: {err}"))
        return lines, found
    if args is None:
        try:
            args = training_arguments(config, data)
        except (FairmtError, ValueError) as err:
            found.append((True, f"training: {' '.join(str(err).split())}"))
            return lines, found
    s = data["stats"]
    lines.append(f"data: {s['n_train']} training / {s['n_eval']} validation / {s['n_test']} held-out test tuples"
                 + (f"; {s['n_utility']} utility sentences" if s.get("n_utility") else ""))
    if args.eval_strategy != "no" and s["n_eval"] == 0:
        found.append((True, "data.eval_size is 0 but the recipe evaluates (training.eval_strategy "
                            f"{args.eval_strategy}): there is no validation tuple to select a checkpoint on"))
    if s["n_train"] < args.per_device_train_batch_size * _world_size():
        found.append((False, f"data: {s['n_train']} training tuples, fewer than one batch "
                             f"({args.per_device_train_batch_size} × {_world_size()})"))
    lines.append(_steps(s["n_train"], args))
    return lines, found


def summarize(config: dict, resolved: Any, found: list[tuple[bool, str]]) -> tuple[list[str], list[tuple[bool, str]]]:
    """The summary lines and sufficiency findings of ``config``, given the existence checks' findings ``found`` (a
    missing data file is not read again)."""
    method = config.get("method")
    if isinstance(resolved, dict) or method not in ("gacl", "ccd") or (resolved is None and method == "gacl"):
        return [], []
    if any(fatal and text.startswith("data.") for fatal, text in found):
        return ["data: not read (a data finding above stops the real run first)"], []
    return (_gacl if method == "gacl" else _ccd)(config, resolved)


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
        elif f.default_factory is not MISSING:  # type: ignore[misc]
            defaults[f.name] = f.default_factory()  # type: ignore[misc]
    shown = {k: v for k, v in full.items() if k not in skip and k != "hub_token"}
    shown = {k: v for k, v in shown.items()
             if k in set_by_recipe or k == "output_dir" or (k in defaults and _jsonable(defaults[k]) != v)}
    return shown, set_by_recipe


def _jsonable(value: Any) -> Any:
    import json

    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)
