"""Per-run overhead of the Hugging Face Trainer on small models (Shen et al.'s MLP on fixed features).

:class:`LeanTrainMixin` runs ``train()`` with the objects alive at its start frozen out of the garbage collector
(``gc.freeze``; unfrozen at the end): the Trainer calls ``accelerator.free_memory()`` → ``gc.collect()`` at the
start of every training loop, and Python's own generation-2 collections walk the whole heap too — in a process
holding transformers, datasets and scikit-learn that walk measured 0.68 s per ``train()`` here, a tenth of a short
run on fixed features. The frozen objects (the model, the data, the imported modules) live through the run anyway;
nothing else changes.
"""

from __future__ import annotations

import gc
from typing import Any

__all__ = ["LeanTrainMixin"]


class LeanTrainMixin:
    """Mix into a Trainer subclass (before ``Trainer``)."""

    def train(self, *args: Any, **kwargs: Any):
        frozen = not gc.isenabled() or gc.get_freeze_count() > 0  # somebody else manages the collector
        if not frozen:
            gc.freeze()  # garbage among the frozen objects waits for the first collection after the run
        try:
            return super().train(*args, **kwargs)
        finally:
            if not frozen:
                gc.unfreeze()
