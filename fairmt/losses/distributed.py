"""Deprecated: the process-group helpers are in :mod:`fairmt.distributed` (this path goes in fairmt 0.2)."""

from fairmt._deprecated import alias_module

alias_module(__name__, "fairmt.distributed")
