"""Recipe entry point for ``method: dpce``: the CCD paper's DPCE (Kaneko & Bollegala 2021) baseline — see
:mod:`fairmt.recipes.ccd.word_debias` for the recipe keys and ``recipes/ccd/dpce_minilm.yaml`` for an example."""

from __future__ import annotations

from fairmt.recipes.ccd.word_debias import main as _main
from fairmt.recipes.ccd.word_debias import resolve_config as _resolve


def resolve_config(config: dict):
    """The resolved training Config (``fairmt train --dry-run``)."""
    return _resolve(config)


def main(config: dict) -> dict:
    """Run the recipe."""
    return _main(config)
