"""What the ccd family's recipes (ccd, dpce, adept) need before they run: what ``fairmt recipes`` lists
(:func:`needs`), what ``fairmt train --dry-run`` and ``fairmt sweep`` find that the real run would hit
(:func:`findings`, on the helpers of :mod:`fairmt.recipes._preflight`), and what the dry run says matters before a
GPU hour (:func:`summarize`, on the helpers of :mod:`fairmt.recipes._dry_summary`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.recipes._dry_summary import count_parameters, gib, millions, steps_line, training_memory, world_size
from fairmt.recipes._preflight import Finding, args_of, data_file, model, output, precision


def _data(config: dict) -> dict:
    """The recipe's ``data`` section (empty when it has none, or the schema will refuse what it has)."""
    data = config.get("data")
    return data if isinstance(data, dict) else {}


def needs(config: dict) -> tuple[Any, list[str]]:
    """The sentence encoder a CCD/DPCE/ADEPT recipe debiases and the local data it reads (the user's tuple file, a
    corpus under the data root)."""
    data = _data(config)
    local = []
    if data.get("tuples"):
        local.append(f"your tuple file {data['tuples']}")
    for key in ("cda_source", "corpus"):
        v = (data.get(key) or {}).get("path") if isinstance(data.get(key), dict) else None
        if v:
            local.append(f"FAIRMT_DATA/{v}" if not Path(str(v)).is_absolute() else str(v))
    return config.get("model"), local


def findings(config: dict, resolved: Any) -> list[Finding | None]:
    out: list[Finding | None] = []
    data = _data(config)
    out.append(model(config.get("model"), "model"))
    if data.get("tuples"):
        out.append(data_file(data["tuples"], "data.tuples", under_data_root=True))
    for key in ("cda_source", "corpus"):
        src = data.get(key)
        if isinstance(src, dict) and src.get("path"):
            out.append(data_file(src["path"], f"data.{key}.path", under_data_root=True))
    for key, path in (data.get("words") or {}).items():
        out.append(data_file(path, f"data.words.{key}", under_data_root=True))
    training = args_of(resolved) if resolved is not None else dict(config.get("training") or {})
    recipe = str(config.get("recipe_path", config.get("method")))
    # the run folder: output_dir, or training.output_dir (the older place; the schema refuses two different ones)
    folder = config.get("output_dir") or training.get("output_dir") or str(Path("outputs") / Path(recipe).stem)
    out.append(precision(training, "training."))
    out.append(output(folder, config, "output_dir" if config.get("output_dir") else "training.output_dir"))
    return out


def summarize(config: dict, args: Any) -> tuple[list[str], list[tuple[bool, str]]]:
    """CCD: the tuples after the recipe's preparation (CDA, splits), and the CCDConfig the run would build from
    them (``args`` is None: the CCD runner makes its Config from the data)."""
    lines: list[str] = []
    found: list[tuple[bool, str]] = []
    n = count_parameters(config.get("model"))
    lines.append(
        f"model {config.get('model')}: {millions(n)} parameters{training_memory(n)}; f_orig (frozen "
        f"copy for L_rep){'' if n is None else f' ≈ {gib(4 * n)}'}"
    )
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
    lines.append(
        f"data: {s['n_train']} training / {s['n_eval']} validation / {s['n_test']} held-out test tuples"
        + (f"; {s['n_utility']} utility sentences" if s.get("n_utility") else "")
    )
    if args.eval_strategy != "no" and s["n_eval"] == 0:
        found.append(
            (
                True,
                "data.eval_size is 0 but the recipe evaluates (training.eval_strategy "
                f"{args.eval_strategy}): there is no validation tuple to select a checkpoint on",
            )
        )
    if s["n_train"] < args.per_device_train_batch_size * world_size():
        found.append(
            (
                False,
                f"data: {s['n_train']} training tuples, fewer than one batch "
                f"({args.per_device_train_batch_size} × {world_size()})",
            )
        )
    lines.append(steps_line(s["n_train"], args))
    return lines, found
