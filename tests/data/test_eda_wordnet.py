"""EDA with all four of its operations on the README install: synonyms from WordNet 3.0 through NLTK's reader (NLTK's
own corpus, or the system database that `.ci/run` installs: Debian's wordnet-base + wordnet-sense-index), and a
recipe that asks for EDA without WordNet stops with one line instead of running half of EDA."""

from __future__ import annotations

import pytest

import needs
from fairmt.data.augment import eda as eda_module
from fairmt.data.augment.eda import EDA, wordnet_synonyms
from fairmt.errors import FairmtError

SENTENCE = "the nurse quickly treated the injured patient in the small hospital"


@pytest.fixture(scope="module")
def wordnet():
    needs.require("wordnet")  # tests/support/needs.py
    synonyms = wordnet_synonyms()
    assert synonyms is not None
    return synonyms


def test_wordnet_gives_synonyms(wordnet):
    assert "physician" in wordnet("doctor") and "infirmary" in wordnet("hospital")
    assert wordnet("doctor") == wordnet("doctor") and "doctor" not in wordnet("doctor")


def test_each_of_the_four_operations_changes_a_fixed_sentence(wordnet):
    words = SENTENCE.split()
    aug = EDA(alpha=0.3, seed=0, require_all=True)
    assert aug.operations == ["sr", "ri", "rs", "rd"]
    sr = aug.synonym_replacement(words)
    assert sr != words and len(sr) == len(words)
    assert all(new in wordnet(old) for old, new in zip(words, sr) if new != old)  # replaced by WordNet synonyms
    ri = aug.random_insertion(words)
    inserted = list(ri)
    for w in words:  # what is left after removing the original words in order: the inserted synonyms
        inserted.remove(w)
    assert inserted and all(any(x in wordnet(w) for w in words) for x in inserted)
    rs = aug.random_swap(words)
    assert rs != words and sorted(rs) == sorted(words)
    rd = aug.random_deletion(words)
    assert len(rd) < len(words) and all(w in words for w in rd)


def test_a_recipe_asking_for_eda_without_wordnet_stops_in_one_line(monkeypatch):
    from fairmt.recipes.classification.runner import add_views

    monkeypatch.setattr(eda_module, "wordnet_synonyms", lambda: None)
    cfg = {"seed": 0, "data": {"augment": "eda", "eda_alpha": 0.1, "eda_num_aug": 4}}
    with pytest.raises(FairmtError) as err:
        add_views(cfg, [SENTENCE], {})
    msg = str(err.value)
    assert "\n" not in msg and "two of its four operations" in msg and "apt-get install wordnet-base" in msg
    with pytest.warns(UserWarning, match="synonym replacement and insertion are disabled"):
        assert EDA(alpha=0.1, seed=0).operations == ["rs", "rd"]  # the library call without require_all: a warning


def test_the_reader_is_built_once_per_process_without_the_multilingual_sense_map(wordnet):
    """Building NLTK's WordNet reader reads the whole index (seconds): every EDA made without ``synonyms`` used to
    build a new one. The reader skips only the WordNet 3.0 sense map of NLTK's multilingual lookups (checked against
    NLTK's stock reader on 5,890 index.noun lemmas when this was written: the same synonyms for every one)."""
    readers = dict(eda_module._READERS)
    assert len(readers) == 1
    EDA(alpha=0.1, seed=0, require_all=True)
    assert wordnet_synonyms() is not None
    assert eda_module._READERS == readers and all(r is readers[k] for k, r in eda_module._READERS.items())
    (reader,) = readers.values()
    assert reader.map30 is None and reader.get_version() == "3.0"
    assert "physician" in [lemma.name() for s in reader.synsets("doctor") for lemma in s.lemmas()]


def test_wordnet_available_says_what_wordnet_synonyms_finds_without_reading(wordnet, tmp_path, monkeypatch):
    import nltk

    assert eda_module.wordnet_available()  # the database this run reads (the fixture read it)
    # no NLTK corpus on NLTK's path and no system database: neither finds one
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "nltk_data")])
    monkeypatch.setenv("WORDNET_DIR", str(tmp_path / "no-wordnet"))
    monkeypatch.setenv("FAIRMT_CACHE", str(tmp_path / "cache"))
    assert not eda_module.wordnet_available()
    assert wordnet_synonyms() is None
