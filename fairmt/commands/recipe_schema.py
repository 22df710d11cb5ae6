"""The recipe schema's old home: it moved to :mod:`fairmt.scripts.recipe_schema` (floor 10, beside the runners), so
that a runner can read the typed, resolved recipe the schema returns (``validate_recipe``) instead of a second set of
defaults. Every name is re-exported here."""

from fairmt.scripts.recipe_schema import *  # noqa: F401,F403
from fairmt.scripts.recipe_schema import SCHEMAS, _known, _message, _unknown_keys, resolve_recipe, validate_recipe  # noqa: F401

__all__ = ["SCHEMAS", "resolve_recipe", "validate_recipe"]
