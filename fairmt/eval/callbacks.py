"""Deprecated: moved to :mod:`fairmt.model_eval.callbacks` (this path goes in fairmt 0.2)."""

from fairmt._deprecated import alias_module

alias_module(__name__, "fairmt.model_eval.callbacks")
