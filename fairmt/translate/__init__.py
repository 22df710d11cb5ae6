"""Producing translations: the floor between fairmt.models and fairmt.eval."""
