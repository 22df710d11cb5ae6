"""Logging each loss term of a composite objective beside the Trainer's total ``loss``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any


class LossTermLogMixin:
    """Mix into a ``Trainer`` subclass (before ``Trainer``): :meth:`_record_terms` accumulates per-step term values,
    and every training log gets the mean of each term since the previous one."""

    def _record_terms(self, terms: dict[str, Any], prefix: str = "") -> None:
        sums = self.__dict__.setdefault("_term_sums", defaultdict(float))
        counts = self.__dict__.setdefault("_term_counts", defaultdict(int))
        for k, v in terms.items():
            sums[prefix + k] += float(v.detach())
            counts[prefix + k] += 1

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """Add the mean of each loss term since the last training log."""
        counts = self.__dict__.get("_term_counts")
        if "loss" in logs and counts:
            sums = self.__dict__["_term_sums"]
            for k, total in sums.items():
                logs[k] = round(total / max(counts[k], 1), 6)
            sums.clear()
            counts.clear()
        super().log(logs, *args, **kwargs)
