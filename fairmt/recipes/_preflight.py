"""What ``fairmt train RECIPE --dry-run`` finds that the real run would hit, without loading a model or data:

* a mixed-precision run (``fp16`` / ``bf16``) on a machine without a GPU (or with ``use_cpu``);
* data files and folders that do not exist (a recipe that builds its own data, ``tiny_model``, is allowed for), and
  Hugging Face datasets that are neither cached nor reachable;
* models that are neither local folders, nor cached, nor reachable on the Hub (``tiny_model`` builds its own); an
  offline machine (HF_HUB_OFFLINE, or no TCP connection to the Hub within :data:`PROBE_TIMEOUT_S`) is found by one
  probe and said once, with no download attempt and its retries;
* the split files a hate-speech recipe reads (the public English folder has no ``train.tsv``), and the command that
  fetches the Bias-in-Bios sample when it is missing;
* an output folder that another run holds, or that holds an earlier run's files (without ``--overwrite`` or a
  resume).

Each finding is one line; :func:`findings` returns ``(fatal, text)`` pairs (a fatal one fails the real run).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

Finding = tuple[bool, str]


_HUB: dict[str, str | None] = {}
"""Whether the Hub answers, probed once per dry run (:func:`hub_unreachable`); cleared by :func:`findings`."""

PROBE_TIMEOUT_S = 3.0
"""Seconds the dry run waits for a TCP connection to the Hub before it calls the machine offline."""


def hub_unreachable() -> str | None:
    """Why the Hub cannot be reached from here (HF_HUB_OFFLINE set, its host unknown, no TCP connection within
    :data:`PROBE_TIMEOUT_S`), or None when it answers. Probed once per dry run, so an offline machine costs one
    short wait and one line, not a download's retries per model."""
    if "why" in _HUB:
        return _HUB["why"]
    from urllib.parse import urlparse

    from huggingface_hub import constants

    from fairmt.hub import _offline

    why: str | None = None
    if _offline():
        why = "HF_HUB_OFFLINE is set"
    else:
        import socket

        url = urlparse(constants.ENDPOINT)
        host = url.hostname or "huggingface.co"
        port = url.port or (80 if url.scheme == "http" else 443)
        try:
            socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
        except OSError as err:
            reason = (
                f"no answer within {PROBE_TIMEOUT_S:g} s"
                if isinstance(err, TimeoutError)
                else (err.strerror or type(err).__name__)
            )
            why = f"{host}:{port} cannot be reached ({reason}; set HF_HUB_OFFLINE=1 to skip this probe)"
    _HUB["why"] = why
    return why


def model(ref: Any, what: str) -> Finding | None:
    from fairmt.hub import _REPO_ID, _cached, _how_to_get, require_model, resolve_model_ref

    name = resolve_model_ref(str(ref))
    hub_id = bool(_REPO_ID.match(name)) and name.count("/") == 1 and not name.startswith((".", "/", "~"))
    if hub_id and not Path(name).expanduser().exists() and not _cached(name):
        why = hub_unreachable()
        if why is not None:  # offline: no download attempt (and its retries); the reason is said once
            said = _HUB.get("said")
            _HUB["said"] = why
            where = "" if said else f"; the Hub is not reachable here: {why}"
            return True, (
                f"{what} {name!r} is neither a local folder nor in the local Hugging Face cache{where}: "
                + _how_to_get(name)
            )
    try:
        require_model(name, what)
    except FairmtError as err:
        return True, str(err)
    return None


def data_file(path: Any, what: str, *, under_data_root: bool = False) -> Finding | None:
    """A local data file or folder the recipe names; relative paths may live under the data root (FAIRMT_DATA)."""
    from fairmt.data.paths import data_root

    p = Path(str(path))
    if p.exists() or (under_data_root and not p.is_absolute() and (data_root() / p).exists()):
        return None
    where = f" (nor under the data root {data_root()})" if under_data_root and not p.is_absolute() else ""
    return True, f"{what} {p} does not exist{where}"


def parallel(name: Any, what: str) -> Finding | None:
    """``data.train`` / ``data.eval`` of a GACL recipe: a .jsonl/.tsv file, or a Hugging Face dataset name."""
    from fairmt.hub import require_dataset

    p = Path(str(name))
    if p.suffix in (".jsonl", ".json", ".tsv", ".txt", ".csv") or p.exists():
        return data_file(p, what)
    try:
        require_dataset(str(name), what)
    except FairmtError as err:
        return True, str(err)
    return None


def precision(args: dict, where: str) -> Finding | None:
    """fp16/bf16 asked where no GPU will run it. Measured with accelerate 1.15: on a CPU, fp16 is dropped without a
    word (no autocast, no loss scaling: the run is full precision), bf16 runs through CPU autocast. Neither fails, so
    the finding is a note; the run is not the mixed-precision run the recipe describes."""
    asked = [k for k in ("fp16", "bf16") if args.get(k)]
    if not asked:
        return None
    import torch

    if args.get("use_cpu") or not torch.cuda.is_available():
        why = "use_cpu is true" if args.get("use_cpu") else "this machine has no CUDA GPU"
        what = (
            "the run is full precision here (accelerate drops fp16 on a CPU without a word)"
            if asked[0] == "fp16"
            else "the run uses CPU bf16 autocast (slow on most CPUs)"
        )
        return False, (
            f"{where}{asked[0]}: true, but {why}: {what}; set {where}{asked[0]}=false to run what the "
            "recipe says, or run it on a GPU machine"
        )
    return None


def output(folder: str, config: dict, flag: str, markers: tuple[str, ...] = ()) -> Finding | None:
    from fairmt.outputs import LOCK_NAME, check_output_dir
    from fairmt.recipes._output import resuming, run_inputs

    lock = Path(folder) / LOCK_NAME
    if lock.is_file():
        import fcntl

        fd = os.open(lock, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            from fairmt.outputs import _holder

            return True, f"{folder}: the output folder is in use by another fairmt run ({_holder(fd)})"
        finally:
            os.close(fd)
    try:
        check_output_dir(
            folder,
            "output folder",
            overwrite=bool(config.get("overwrite")),
            resumable=resuming(config),
            inputs=run_inputs(config),
            flag=flag,
            clears=bool(config.get("overwrite")),
            markers=markers,
        )
    except FairmtError as err:
        return True, str(err)
    return None


def findings(config: dict, resolved: Any) -> list[Finding]:
    """The dry run's findings for ``config`` (overrides applied) and its resolved Config (``resolved``: what the
    family's runner resolves, e.g. a TrainingArguments or a merged dict): its family's
    (:attr:`fairmt.recipes.Family.preflight`), Nones dropped."""
    from fairmt.recipes._registry import family

    _HUB.clear()
    return [f for f in family(config.get("method")).findings(config, resolved) if f is not None]


def args_of(resolved: Any) -> dict:
    import json

    return json.loads(resolved.to_json_string()) if hasattr(resolved, "to_json_string") else dict(resolved)
