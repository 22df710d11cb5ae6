"""Exceptions shared by every layer. Messages name the bad input and say what to do."""

from __future__ import annotations


class FairmtError(ValueError):
    """Bad input to a fairmt component: a file, a flag, a language code, a batch."""
