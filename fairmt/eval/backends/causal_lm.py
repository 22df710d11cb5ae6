"""Deprecated: moved to :mod:`fairmt.translate.backends.causal_lm` (this path goes in fairmt 0.2)."""

from fairmt._deprecated import alias_module

alias_module(__name__, "fairmt.translate.backends.causal_lm")
