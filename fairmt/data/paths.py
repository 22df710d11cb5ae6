"""Where benchmark data lives.

``FAIRMT_DATA`` names a directory laid out like the project's data cache (``winomt/``, ``mt_geneval/``,
``embedding_bias/``, ``lexicons/``, ``parallel/``, ``bios/``, ``hatespeech_huang2020/`` ...); otherwise the cache
that ``fairmt data download`` fills (``$FAIRMT_CACHE`` or ``~/.cache/fairmt/data``) is used.
"""

from __future__ import annotations

import os
from pathlib import Path

from fairmt.errors import FairmtError


def cache_dir() -> Path:
    return Path(os.environ.get("FAIRMT_CACHE", Path.home() / ".cache" / "fairmt")) / "data"


def data_root() -> Path:
    env = os.environ.get("FAIRMT_DATA")
    return Path(env) if env else cache_dir()


def data_path(*parts: str, must_exist: bool = True) -> Path:
    """Path of a data file under :func:`data_root`, with a clear error saying how to get it when absent."""
    path = data_root().joinpath(*parts)
    if must_exist and not path.exists():
        raise FairmtError(
            f"data file {path} not found. Run `fairmt data download {parts[0]}` to fetch it, "
            "or point FAIRMT_DATA at a directory that holds it."
        )
    return path
