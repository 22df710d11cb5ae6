"""Per paper recipe: how many settings of its resolved recipe its card classifies of each kind (issue 51).

    python scripts/card_counts.py

Columns: paper (the paper's value, quoted), departure (interpretation, released-code, scale, fairmt extension),
paper-silent (fairmt's value, the paper gives none), inert / bookkeeping / library default, and unclassified (a card
not yet marked ``exhaustive: true``: the keys it does not list)."""

from __future__ import annotations

from fairmt.commands.train import builtin_recipes, load_recipe
from fairmt.recipes.cards import card_of_config, card_path, check_card, read_card

DEPARTURES = ("interpretation", "released-code", "scale", "fairmt extension")


def main() -> None:
    print(
        "| recipe | exhaustive | paper | departure | paper-silent | inert | bookkeeping | library default | unclassified |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, path in sorted(builtin_recipes().items()):
        if not card_path(path).is_file():
            continue
        card = card_of_config(load_recipe(name))
        if not card.exhaustive:  # the same walk, to count what such a card leaves unclassified
            data = {**read_card(card_path(path)), "exhaustive": True}
            card = check_card(data, load_recipe(name), base=card_path(path).parent)
            card.exhaustive = False
        c = card.counts()
        print(
            f"| {name} | {'yes' if card.exhaustive else 'no'} | {c.get('paper', 0)} | "
            f"{sum(c.get(k, 0) for k in DEPARTURES)} | {c.get('paper-silent choice', 0)} | {c.get('inert', 0)} | "
            f"{c.get('bookkeeping', 0)} | {c.get('library default', 0)} | {c.get('unclassified', 0)} |"
        )


if __name__ == "__main__":
    main()
