"""The translation cache: a resumable JSONL file per (model, languages, settings), its fingerprints and its lock.

Format (:data:`CACHE_FORMAT` 2): a header line with the settings (:func:`cache_header`: the backend, the model, its
fingerprint, the family, the languages, beams and max new tokens), then one line per translated sentence
``{"i": index, "h": sha1(source)[:16], "t": translation}``, appended and flushed after every batch. Entries are keyed
by index *and* source hash (:func:`source_hash`), so a changed source file is retranslated. The header names the
backend and holds its fingerprint (for ``hf`` the model's content, :func:`model_fingerprint`: its parameters and
tokenizer files; for ``ctranslate2`` the checkpoint's content hash and compute type; for ``openai`` the endpoint,
model and prompt), so caches of different backends are never mixed, and replacing a model's weights (or training it
further) and rerunning with the same cache is refused (:func:`read_cache`) instead of scoring the old model's
translations.

A run holds a lock on its cache file while it translates (:func:`lock_cache`): a second run given the same cache is
refused, not interleaved. A torn last line (a killed process) is skipped when read and cut before appending
(:func:`truncate_torn_tail`).

This module is the floor the backends stand on (their ``fingerprint()`` uses :func:`model_fingerprint`); it imports
no backend.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

CACHE_FORMAT = 2  # 2: the header holds the model's content fingerprint
TOKENIZER_FILES = (
    "tokenizer_config.json",
    "tokenizer.json",
    "vocab.json",
    "added_tokens.json",
    "special_tokens_map.json",
    "sentencepiece.bpe.model",
    "spm.model",
)
"""The tokenizer files of a checkpoint folder that go into its fingerprints."""


def source_hash(text: str) -> str:
    """The key of a source sentence in the cache: the first 16 hex digits of its SHA-1."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def model_fingerprint(tm: Any) -> str:
    """A short content fingerprint of the model a translation cache is made with: a hash over every parameter (its
    sum and first values — changed by any training step or by new weights in the folder) and the tokenizer files of
    the model's folder (contents of the JSON ones, size of the others). Memoised per parameter version, so repeated
    calls on an unchanged model cost nothing."""
    import torch

    model = getattr(tm, "model", tm)
    params = list(model.named_parameters())
    versions = tuple((id(q), q._version) for _, q in params)
    memo = getattr(model, "_fairmt_fingerprint", None)
    if memo is not None and memo[0] == versions:
        return memo[1]
    h = hashlib.sha256()
    with torch.no_grad():
        for name, q in params:
            flat = q.detach().reshape(-1)
            h.update(name.encode())
            h.update(torch.stack([flat.double().sum(), flat[:4].double().sum()]).cpu().numpy().tobytes())
    folder = Path(str(getattr(tm, "name_or_path", "") or ""))
    if folder.is_dir():
        for name in TOKENIZER_FILES:
            f = folder / name
            if f.is_file():
                h.update(f"{name}:{f.stat().st_size};".encode())
                if f.suffix == ".json":
                    h.update(f.read_bytes())
    fingerprint = h.hexdigest()[:16]
    try:
        model._fairmt_fingerprint = (versions, fingerprint)
    except AttributeError:  # pragma: no cover - a model that refuses attributes: no memo
        pass
    return fingerprint


def cache_header(tr: Any, src_lang: str, tgt_lang: str, num_beams: int, max_new_tokens: int) -> dict:
    """The header line of a cache made by the translator ``tr`` (a :class:`~fairmt.translate.backends.Translator`)."""
    return {
        "fairmt_translation_cache": CACHE_FORMAT,
        "backend": tr.name,
        "model": tr.model_name,
        "fingerprint": tr.fingerprint(),
        "family": tr.family or "",
        "src_lang": src_lang,
        "tgt_lang": tgt_lang,
        "num_beams": num_beams,
        "max_new_tokens": max_new_tokens,
    }


def read_cache(cache_path: str | Path, header: dict | None = None) -> dict[int, tuple[str, str]]:
    """Entries of a translation cache as ``{index: (source_hash, translation)}``.

    With ``header`` given, a cache written with other settings is a :class:`FairmtError` (delete it or use another
    path). A torn last line (an interrupted write) is skipped.
    """
    path = Path(cache_path)
    if not path.is_file():
        return {}
    raw = path.read_bytes().split(b"\n")
    lines = []
    for lineno, line in enumerate(raw, 1):
        try:
            if b"\x00" in line:
                raise UnicodeDecodeError("utf-8", line, line.index(b"\x00"), line.index(b"\x00") + 1, "NUL byte")
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            if lineno == len(raw) or (lineno == len(raw) - 1 and not raw[-1]):
                lines.append("")  # the torn last line of an interrupted write: skipped as any torn line
                continue
            raise FairmtError(
                f"{path}:{lineno}: corrupt translation cache line (binary bytes, not UTF-8 text); delete "
                "the file to start over (its translations are made again)"
            ) from None
    if not lines or not lines[0].strip():
        return {}
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        raise FairmtError(
            f"{path}:1: not a fairmt translation cache (bad header); delete it or use another path"
        ) from None
    fmt = head.get("fairmt_translation_cache")
    if isinstance(fmt, int) and fmt < CACHE_FORMAT:
        raise FairmtError(
            f"{path}: translation cache written by an older fairmt (format {fmt}, no model fingerprint); "
            "delete it or give another cache path"
        )
    if fmt != CACHE_FORMAT:
        raise FairmtError(f"{path}:1: not a fairmt translation cache (format {fmt!r})")
    head.setdefault("backend", "hf")  # caches written before there were backends
    if header is not None:
        if head["backend"] != header.get("backend", head["backend"]):
            raise FairmtError(
                f"{path}: translation cache made with the {head['backend']} backend, not {header['backend']}; delete it "
                "or give another cache path (caches of different backends are never mixed)"
            )
        diff = {k: (head.get(k), v) for k, v in header.items() if head.get(k) != v}
        if "fingerprint" in diff:
            mine, now = head.get("model"), header.get("model")
            made = (
                f"the model {mine!r} (fingerprint {diff['fingerprint'][0]})"
                if mine != now
                else f"another version of the model {mine!r} (its weights, config or tokenizer changed since: "
                f"fingerprint {diff['fingerprint'][0]})"
            )
            raise FairmtError(
                f"{path}: translation cache of {made}, not of {now!r} (fingerprint {diff['fingerprint'][1]}); "
                f"to keep its translations, give this run another folder or cache path (fairmt eval mt-bias: omit "
                f"--output-dir for a folder per model, or --output-dir NEWDIR)"
            )
        if diff:
            shown = ", ".join(f"{k}: cache {a!r} vs now {b!r}" for k, (a, b) in diff.items())
            raise FairmtError(
                f"{path}: translation cache made with other settings ({shown}); delete it or give another cache path"
            )
    entries: dict[int, tuple[str, str]] = {}
    for lineno, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            entries[int(rec["i"])] = (str(rec["h"]), str(rec["t"]))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            if lineno == len(lines) or (lineno == len(lines) - 1 and not lines[-1]):
                continue  # torn last line of an interrupted run
            raise FairmtError(
                f"{path}:{lineno}: corrupt translation cache line; delete the file to start over"
            ) from None
    return entries


def lock_cache(path: Path):
    """An exclusive lock on the cache file itself for the duration of a run (released when the returned handle
    closes or the process dies); another run given the same cache is refused."""
    import fcntl

    from fairmt.outputs import appending

    handle = appending(path, what="the translation cache").open()  # a full disk: the writer's one line
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise FairmtError(
            f"{path} is in use by another fairmt run; wait for it to finish or give another cache path (two runs "
            "appending to one cache would interleave their translations)"
        ) from None
    return handle


def truncate_torn_tail(path: Path) -> None:
    """Cut a last line without its newline (left by a killed process) so appends start on a fresh line."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        os.truncate(path, data.rfind(b"\n") + 1)  # shortens only: no space needed


__all__ = [
    "CACHE_FORMAT",
    "TOKENIZER_FILES",
    "cache_header",
    "lock_cache",
    "model_fingerprint",
    "read_cache",
    "source_hash",
    "truncate_torn_tail",
]
