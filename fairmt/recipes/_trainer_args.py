"""A Trainer Config from a recipe's mapping, through :class:`transformers.HfArgumentParser` built once per Config
class (building one walks every field of the dataclass into argparse: tens of milliseconds, where ``parse_dict``,
which never touches argparse, takes well under one)."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _parser(cls: type) -> Any:
    from transformers import HfArgumentParser

    return HfArgumentParser(cls)  # type: ignore[arg-type]  # transformers types it NewType("DataClassType", Any)


def parse_trainer_dict(cls: type, values: dict[str, Any]) -> Any:
    """``HfArgumentParser(cls).parse_dict(values, allow_extra_keys=False)``'s one Config (the same value, the same
    ValueError for an unknown key or a value ``__post_init__`` refuses); the parser is stateless and kept per class."""
    (args,) = _parser(cls).parse_dict(values, allow_extra_keys=False)
    return args
