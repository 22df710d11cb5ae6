"""A stand-in for a collected pytest item, for the tests of the collection hooks that mark tests (time_budget.py's
measured-slow marks, torchrun_pool.py's pool users)."""

from __future__ import annotations

import pytest


class CollectedItem:
    """What the marking hooks read and write of an item: its node id, its fixtures (the whole closure, as pytest's
    ``fixturenames``) and its marks (``"slow"`` among ``marks``: it starts with the slow mark)."""

    def __init__(self, nodeid: str = "", fixturenames=(), *marks: str):
        self.nodeid, self.fixturenames = nodeid, list(fixturenames)
        self.marks = [pytest.mark.slow.mark] if "slow" in marks else []

    def get_closest_marker(self, name):
        return next((m for m in self.marks if m.name == name), None)

    def add_marker(self, marker):
        self.marks.append(pytest.Mark(marker, (), {}) if isinstance(marker, str) else marker.mark)
