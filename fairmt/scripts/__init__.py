"""Deprecated: the recipe runners moved to :mod:`fairmt.recipes` (one folder per recipe family). Each old module path
still works, with a ``DeprecationWarning`` naming its new one, until fairmt 0.2."""
