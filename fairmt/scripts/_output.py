"""Deprecated: moved to :mod:`fairmt.recipes._output` (until fairmt 0.2)."""

from fairmt._deprecated import alias_module

alias_module(__name__, "fairmt.recipes._output")
