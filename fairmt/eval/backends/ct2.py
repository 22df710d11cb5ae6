"""Deprecated: moved to :mod:`fairmt.translate.backends.ct2` (this path goes in fairmt 0.2)."""

from fairmt._deprecated import alias_module

alias_module(__name__, "fairmt.translate.backends.ct2")
