"""Deprecated: the translation backends are :mod:`fairmt.translate.backends` (this path goes in fairmt 0.2)."""

from fairmt._deprecated import moved_names

__getattr__ = moved_names(
    __name__, dict.fromkeys(("BACKENDS", "Translator", "get_backend"), "fairmt.translate.backends")
)
