"""Deprecated: moved to :mod:`fairmt.data.sampling` (until fairmt 0.2)."""

from fairmt._deprecated import alias_module

alias_module(__name__, "fairmt.data.sampling")
