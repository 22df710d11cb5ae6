"""Fluent translations that do not translate their source ("unrelated"): a gender score resting on them gets a
warning. The threshold is calibrated on the shipped 2019 systems: none flagged; fluent wrong-content stand-ins are."""

from __future__ import annotations

import random

import pytest

from fairmt.eval.degenerate import UNRELATED_CHRF, chrfpp_scores, degenerate_counts, describe, unrelated_lines

LANGS = ["de", "es", "fr", "it", "ru", "uk", "he", "ar"]


def _outputs(shared_data, system, lang):
    path = shared_data / "winomt" / "translations" / system / f"en-{lang}.txt"
    return [line.split(" ||| ", 1)[1] for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.data
@pytest.mark.parametrize("lang", LANGS)
def test_no_real_system_is_flagged_and_fluent_wrong_content_is(shared_data, lang):
    """One real system scored against another (the nearest to output vs reference this data holds): never flagged.
    The same outputs paired with another sentence's translation: flagged."""
    ref = _outputs(shared_data, "google", lang)[::3]
    for system in ("bing", "systran"):
        path = shared_data / "winomt" / "translations" / system / f"en-{lang}.txt"
        if not path.is_file():
            continue
        hyp = _outputs(shared_data, system, lang)[::3]
        assert not any(unrelated_lines(hyp, ref)), f"{system} {lang}"
        shuffled = hyp[:]
        random.Random(0).shuffle(shuffled)
        flags = unrelated_lines(shuffled, ref)
        assert sum(flags) > 0.4 * len(flags), f"{system} {lang}: {sum(flags)} of {len(flags)}"


@pytest.mark.data
def test_one_pass_chrfpp_equals_sacrebleus_corpus_and_sentence_scores(shared_data):
    """The corpus figure and every line's figure from one pass equal sacrebleu's public ``corpus_score`` and
    ``sentence_score`` exactly (real outputs, 300 lines, with an empty and a punctuation-only line)."""
    from sacrebleu.metrics import CHRF

    ref = _outputs(shared_data, "google", "de")[:300]
    hyp = _outputs(shared_data, "bing", "de")[:298] + ["", " ..."]
    corpus, sentences, signature = chrfpp_scores(hyp, ref)
    chrf = CHRF(word_order=2)
    assert corpus == chrf.corpus_score(hyp, [ref]).score and signature == str(chrf.get_signature())
    assert sentences == [chrf.sentence_score(h, [r]).score for h, r in zip(hyp, ref)]
    with pytest.raises(ValueError, match="2 hypotheses for 1 references"):
        chrfpp_scores(["a", "b"], ["a"])


def test_a_few_low_lines_are_not_flagged_a_file_of_them_is():
    refs = ["Der Arzt sprach lange mit der Krankenschwester über den Patienten."] * 8
    good = ["Der Arzt sprach lange mit der Krankenschwester über den Patienten."] * 8
    bad = "Die Bibliothekarin mochte die Schlüssel."
    one_bad = good[:7] + [bad]
    assert unrelated_lines(one_bad, refs) == [False] * 8  # 1 of 8 below the threshold: a real system's odd line
    three_bad = good[:5] + [bad] * 3
    assert unrelated_lines(three_bad, refs) == [False] * 5 + [True] * 3
    c = degenerate_counts(three_bad, "de", references=refs)
    assert c["unrelated"] == 3 and c["degenerate"] == 3 and c["examples"][0]["reasons"] == ["unrelated"]
    assert "unrelated 3" in describe("MT-GenEval de", c)
    assert describe("MT-GenEval de", c).endswith("a gender accuracy on these lines does not measure translation")
    assert degenerate_counts(three_bad, "de")["unrelated"] is None  # no references: not checked
    assert UNRELATED_CHRF == 20.0


@pytest.mark.data
def test_mt_geneval_accuracy_on_fluent_hallucinations_is_flagged(shared_data, monkeypatch):
    """The offline GACL model's failure mode: fluent sentences about something else score MT-GenEval accuracy
    without a wrong-gender word; the result now says they are unrelated to their sources."""
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    from fairmt.eval.geneval import geneval_accuracy, load_counterfactual

    d = load_counterfactual("de", "test")
    n = len(d.masculine_refs)
    fluent = ["Der Bibliothekar mochte die Schlüssel."] * n
    r = geneval_accuracy(fluent, fluent, "de", "test")
    assert r.accuracy > 50 and r.chrfpp < 15  # looks accurate, translates nothing
    assert r.degenerate["unrelated"] == 2 * n and "unrelated 600" in describe("MT-GenEval de", r.degenerate)
    real = geneval_accuracy(d.masculine_refs, d.feminine_refs, "de", "test")
    assert real.degenerate["unrelated"] == 0 and real.degenerate["degenerate"] == 0


def test_reference_cache_gives_sacrebleus_statistics_and_a_changed_reference_a_new_result():
    """The references' n-grams are kept per reference list (by their text): the same references give sacrebleu's
    statistics again, one changed reference line gives that line's new statistics, and hypotheses scored against
    cached references equal a fresh ``CHRF`` each time."""
    from sacrebleu.metrics import CHRF

    from fairmt.eval.degenerate import chrfpp_line_statistics

    def fresh(hyps, refs):
        return CHRF(word_order=2)._extract_corpus_statistics(list(hyps), [list(refs)])

    refs = ["Der Arzt sprach mit der Krankenschwester.", "Sie kam spät nach Hause.", ""]
    hyps_a = ["Der Arzt sprach mit der Pflegerin.", "Er kam spät.", "x"]
    hyps_b = ["Die Ärztin sprach.", "Sie kam spät nach Hause.", ""]
    for hyps in (hyps_a, hyps_b, hyps_a):
        assert chrfpp_line_statistics(hyps, refs) == fresh(hyps, refs)
    changed = [refs[0], "Er kam spät nach Hause.", refs[2]]
    got = chrfpp_line_statistics(hyps_a, changed)
    assert got == fresh(hyps_a, changed) and got[1] != fresh(hyps_a, refs)[1] and got[0] == fresh(hyps_a, refs)[0]
    assert chrfpp_line_statistics(hyps_a, refs) == fresh(hyps_a, refs)  # the first list again, after the change
