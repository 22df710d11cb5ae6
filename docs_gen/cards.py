"""Paper cards on the documentation pages, generated at build time from ``recipes/*/cards/*.yaml`` (never typed).

A page asks for them with a placeholder on a line of its own, which ``docs_gen/hooks.py`` (``on_page_markdown``)
replaces with the generated Markdown:

* ``<!-- paper-card: RECIPE -->``: the card of one built-in recipe, as ``fairmt recipes --paper RECIPE`` prints it
  (every setting the paper states, the recipe's resolved value, the source, and each declared departure);
* ``<!-- paper-departures: AUTHORS -->``: every declared departure of every recipe whose card names a paper that
  starts with ``AUTHORS`` (``Chi et al.``), one row per departure shared by several recipes — the part of
  ``fairmt recipes --departures`` that belongs to that paper.

A placeholder that names no recipe with a card, or no paper, fails the build (``mkdocs build --strict``), and
``tests/project/test_docs.py`` / ``tests/recipes/test_paper_cards.py`` check that every card's paper has its departures on exactly one
page and that every method page shows a card. The checks of the cards themselves (every resolved value is the
paper's or a declared departure) are ``tests/recipes/test_paper_cards.py``'s.
"""

from __future__ import annotations

import functools
import re

CARD = re.compile(r"^<!-- paper-card: (\S+) -->$", re.M)
DEPARTURES = re.compile(r"^<!-- paper-departures: (.+?) -->$", re.M)


class CardError(ValueError):
    """A placeholder that cannot be filled (the build fails with this message)."""


@functools.cache
def _all_cards() -> tuple:
    from fairmt.commands.train import builtin_recipes, load_recipe
    from fairmt.recipes.cards import card_of_config, card_path

    return tuple(
        c
        for c in (
            card_of_config(load_recipe(name)) for name, path in builtin_recipes().items() if card_path(path).is_file()
        )
        if c is not None
    )


def card_md(recipe: str) -> str:
    """The card of ``recipe`` as a page shows it: the command that prints it, then its table."""
    from fairmt.commands.train import builtin_recipes, paper_card
    from fairmt.errors import FairmtError

    if recipe not in builtin_recipes():
        raise CardError(f"<!-- paper-card: {recipe} -->: no built-in recipe {recipe!r}")
    try:
        card = paper_card(recipe)
    except FairmtError as err:
        raise CardError(f"<!-- paper-card: {recipe} -->: {err}") from None
    title, _, table = card.table().partition("\n\n")
    return (
        f"**`{recipe}`** — {card.paper} (generated from its card at build time; `fairmt recipes --paper "
        f"{recipe}` prints the same):\n\n{table}\n"
    )


def papers() -> list[str]:
    """The paper names of the cards, as the departures tables head them (first part of ``paper``)."""
    return list(dict.fromkeys(c.paper.split(" — ")[0] for c in _all_cards()))


def departures_md(authors: str) -> str:
    """Every declared departure of the cards of the one paper whose name starts with ``authors``."""
    from fairmt.recipes.cards import departures_markdown

    matching = [p for p in papers() if p.startswith(authors)]
    if len(matching) != 1:
        raise CardError(
            f"<!-- paper-departures: {authors} -->: names {len(matching)} papers of the cards "
            f"({'; '.join(matching) or 'none'}); the papers are: {'; '.join(papers())}"
        )
    return departures_markdown([c for c in _all_cards() if c.paper.split(" — ")[0] == matching[0]])


def expand(markdown: str) -> str:
    """``markdown`` with every card placeholder replaced by its generated Markdown."""
    markdown = CARD.sub(lambda m: card_md(m.group(1)), markdown)
    return DEPARTURES.sub(lambda m: departures_md(m.group(1)), markdown)
