"""Deprecated: the recipe schema moved to :mod:`fairmt.recipes` — the shared parts to :mod:`fairmt.recipes._schema`,
each family's schema to ``fairmt.recipes.<family>.schema``. Every old name still works, with a ``DeprecationWarning``
naming its new home, until fairmt 0.2."""

from fairmt._deprecated import moved_names
from fairmt.recipes._schema import _old_schema_names

__getattr__ = moved_names(__name__, _old_schema_names())
