"""Zhao et al. (2018)'s WinoBias word lists as a GACL lexicon (issue 51): fetched and checked by `fairmt data download
lexicons`, read as WinoBias's word_swapper.py reads them, every pair given a gender, and selectable in
prepare_gacl_pairs. The real lists come from the shared data folder (skipped without it, tests/support/needs.py)."""

from __future__ import annotations

import pytest

from fairmt.data import download as dl
from fairmt.data.zhao_lexicon import (
    GACL_LEXICONS,
    gacl_lexicon,
    read_swaps,
    zhao_genders,
    zhao_lexicon,
)
from fairmt.errors import FairmtError


def test_download_lexicons_fetches_and_checks_the_lists(shared_data, tmp_path):
    files, _ = dl.dataset_files("lexicons")
    assert {f.path for f in files} == {
        "lexicons/corefBias_generalized_swaps.txt",
        "lexicons/corefBias_extra_gendered_words.txt",
        "lexicons/corefBias_LICENSE",
    }
    assert all(f.url.startswith("https://raw.githubusercontent.com/uclanlp/corefBias/0bce984") for f in files)
    assert dl.verify("lexicons", shared_data).passed  # the pinned sha256 are those of the real lists
    rep = dl.download("lexicons", dest=tmp_path, base_url=str(shared_data), progress=False)
    assert len(rep.downloaded) == 3 and dl.verify("lexicons", tmp_path).passed
    assert read_swaps(tmp_path / "lexicons") == read_swaps(shared_data / "lexicons")


def test_the_lists_read_as_word_swapper_reads_them(shared_data):
    swaps = read_swaps(shared_data / "lexicons")
    # generalized_swaps.txt: one direction per line, later lines override; extra_gendered_words.txt: both ways
    assert swaps["actor"] == "actress" and swaps["actress"] == "actor"
    assert swaps["cowboy"] == "cowgirl" and swaps["cowgirl"] == "cowboy"
    assert swaps["mr"] in ("mrs", "ms") and swaps["seamstress"] == "tailors"
    genders = zhao_genders(swaps)
    assert set(genders) == {w for pair in swaps.items() for w in pair}  # every word has a gender
    assert all(genders[a] != genders[b] for a, b in swaps.items())  # a swap always changes it
    assert genders["she"] == genders["her"] == genders["cowgirl"] == genders["abbess"] == "female"
    assert genders["he"] == genders["his"] == genders["busboy"] == genders["marquis"] == "male"
    assert (len(swaps), sum(g == "female" for g in genders.values())) == (250, 123)


def test_detect_and_swap(shared_data):
    lex = zhao_lexicon(shared_data / "lexicons")
    assert lex.detect_gender("The cowgirl rode home.") == "female"  # not in fairmt's own lexicon
    assert lex.detect_gender("Mr. Smith arrived.") == "male" and lex.detect_gender("They met.") == "none"
    assert lex.detect_gender("The waitress served the actor.") == "both"
    assert lex.swap_gender("She gave her brother her book.") == "He gave his sister his book."
    assert lex.swap_gender("I told her.") == "I told him."
    assert lex.swap_gender("Mrs. Lee thanked the COWBOY.") == "Mr. Lee thanked the COWGIRL."


def test_prepare_gacl_pairs_uses_the_selected_lexicon(shared_data, monkeypatch):
    from datasets import Dataset

    from fairmt.data.gacl import prepare_gacl_pairs

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    rows = Dataset.from_dict(
        {
            "src": ["The cowboy sang.", "The cowgirl sang.", "He sang.", "She sang.", "It rained."],
            "tgt": ["a", "b", "c", "d", "e"],
        }
    )
    zhao = prepare_gacl_pairs(rows, balance=False, lexicon="zhao2018")
    own = prepare_gacl_pairs(rows, balance=False)
    assert sorted(zhao["src"]) == sorted(rows["src"][:4]) and "The cowgirl sang." in zhao["src_cf"]
    assert "The cowboy sang." not in own["src"]  # fairmt's own list has no cowboy
    assert GACL_LEXICONS == ("fairmt", "zhao2018")
    with pytest.raises(FairmtError, match="unknown lexicon 'wino'; choose one of fairmt, zhao2018"):
        gacl_lexicon("wino")


def test_missing_lists_say_how_to_fetch_them(tmp_path):
    with pytest.raises(FairmtError, match="fairmt data download lexicons"):
        read_swaps(tmp_path)


def test_the_gacl_paper_recipe_filters_and_swaps_with_zhaos_lists(shared_data, monkeypatch):
    """data.lexicon (recipe schema) reaches prepare_gacl_pairs; the paper recipes default to zhao2018 and their card
    says so; another value is reported as a difference from the card."""
    from datasets import Dataset

    from fairmt.commands.train import load_recipe
    from fairmt.recipes.cards import card_of_config
    from fairmt.recipes.gacl.runner import prepare_data

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    rows = Dataset.from_dict({"src": ["The cowboy sang.", "The cowgirl sang."], "tgt": ["a", "b"]})
    for name in ("gacl/small100_en-de", "gacl/nllb600m_en-de", "gacl/nllb1.3b_en-de"):
        config = load_recipe(name, [])
        assert config["data"]["lexicon"] == "zhao2018"
        card = card_of_config(config)
        assert {s.key: s.recipe for s in card.settings}["data.lexicon"] == "zhao2018" and not card.problems
    data_cfg = {"prepare": "gacl", "balance": False, "lexicon": "zhao2018"}
    assert sorted(prepare_data(rows, data_cfg, "de", 0)["src_cf"]) == ["The cowboy sang.", "The cowgirl sang."]
    with pytest.raises(FairmtError, match="no source sentence has gendered words"):
        prepare_data(rows, {**data_cfg, "lexicon": "fairmt"}, "de", 0)
    (problem,) = card_of_config(load_recipe("gacl/small100_en-de", ["data.lexicon=fairmt"])).problems
    assert problem.startswith("data.lexicon: the recipe resolves to fairmt, the paper's value is zhao2018")
