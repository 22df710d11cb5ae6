"""What the gacl family's recipes need before they run: what ``fairmt recipes`` lists (:func:`needs`), what
``fairmt train --dry-run`` and ``fairmt sweep`` find that the real run would hit (:func:`findings`, on the helpers of
:mod:`fairmt.recipes._preflight`), and what the dry run says matters before a GPU hour (:func:`summarize`, on the
helpers of :mod:`fairmt.recipes._dry_summary`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._dry_summary import (
    DTYPE_BYTES,
    count_parameters,
    gib,
    millions,
    steps_line,
    training_memory,
    world_size,
)
from fairmt.recipes._preflight import Finding, args_of, model, output, parallel, precision


def needs(config: dict) -> tuple[Any, list[str]]:
    """The translation model a GACL recipe fine-tunes and its training data (a ``tiny_model`` recipe builds both)."""
    raw = config.get("data")
    data: dict = raw if isinstance(raw, dict) else {}
    return config.get("model"), [] if config.get("tiny_model") else [f"data.train {data.get('train')}"]


def findings(config: dict, resolved: Any) -> list[Finding | None]:
    out: list[Finding | None] = []
    raw = config.get("data")
    data: dict = raw if isinstance(raw, dict) else {}
    tiny = bool(config.get("tiny_model"))
    model_dir = Path(str(config.get("model", "")))
    if tiny and not (model_dir / "config.json").is_file():
        out.append(
            (
                False,
                f"model {model_dir} does not exist yet: the recipe's tiny_model section builds it on "
                "the first run (offline)",
            )
        )
    else:
        out.append(model(config.get("model"), "model"))
    train = data.get("train")
    if tiny and train and not Path(str(train)).exists():
        out.append((False, f"data.train {train} does not exist yet: the recipe's tiny_model section writes it"))
    elif train:
        out.append(parallel(train, "data.train"))
    if data.get("eval"):
        out.append(parallel(data["eval"], "data.eval"))
    out.append(precision(args_of(resolved), "training."))
    out.append(output(resolved.output_dir, config, "output_dir"))
    return out


def summarize(config: dict, args: Any) -> tuple[list[str], list[tuple[bool, str]]]:
    """GACL: the model's parameters, the KD teacher's dtype and memory, the pairs after ``data.prepare``, steps per
    epoch (``args``: the resolved GACLTrainingArguments; None: nothing to say)."""
    if args is None:
        return [], []
    lines: list[str] = []
    found: list[tuple[bool, str]] = []
    n = count_parameters(config.get("model"), seq2seq=True)
    lines.append(f"model {config.get('model')}: {millions(n)} parameters{training_memory(n)}")
    if args.kd_alpha > 0:
        from fairmt.models.precision import resolve_teacher_dtype

        chosen, why = resolve_teacher_dtype(args.teacher_dtype, args.device)
        dtype = str(chosen).replace("torch.", "")
        size = "" if n is None else f", ≈ {gib(n * DTYPE_BYTES[dtype])}"
        lines.append(
            f"KD teacher: a frozen copy of the model in {dtype}{size} (kd_alpha {args.kd_alpha}; teacher_dtype {why})"
        )
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
    from fairmt.recipes.gacl.runner import eval_fraction, key_aliases, prepare_data
    from fairmt.recipes.gacl.schema import typed_recipe

    recipe = typed_recipe(config)  # the typed recipe, as the runner reads it: its defaults are the schema's
    src, tgt, data = recipe.src_lang, recipe.tgt_lang, recipe.data
    try:
        pairs = read_parallel(str(p), src, tgt, split=data.split, key_aliases=key_aliases(src, tgt))
        n_read = len(pairs)
        if data.max_train_samples:
            pairs = pairs.select(range(min(n_read, data.max_train_samples)))
        prepared = prepare_data(pairs, data, tgt, data.seed)  # data.seed, as the runner
    except FairmtError as err:
        found.append((True, f"data.train {train}: {err}"))
        return lines, found
    n_prep = len(prepared)
    frac = eval_fraction(data, args.eval_strategy != "no")
    n_eval = math.ceil(n_prep * frac) if frac > 0 else 0
    n_train = n_prep - n_eval
    lines.append(
        f"data: {n_read} pairs read, {n_prep} after data.prepare={data.prepare} "
        f"(filtering{' and balancing' if data.balance else ''}), {n_train} to train on"
        + (f", {n_eval} held out for the evaluation loss" if n_eval else "")
    )
    if n_train < 1 or (frac > 0 and n_eval < 1):
        found.append(
            (
                True,
                f"data.train {train}: {n_prep} examples after data.prepare leave "
                f"{'none to train on' if n_train < 1 else 'none for the evaluation loss'}",
            )
        )
    elif n_train < args.per_device_train_batch_size * world_size():
        found.append(
            (
                False,
                f"data.train {train}: {n_train} training examples, fewer than one batch "
                f"({args.per_device_train_batch_size} × {world_size()})",
            )
        )
    if n_train >= 1:
        lines.append(steps_line(n_train, args))
    return lines, found
