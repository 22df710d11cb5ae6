"""Scoring a model: translating a benchmark (fairmt.translate) and scoring it (fairmt.eval)."""
