"""Translation quality beside gender accuracy (issue 27): a degenerate output ("ariariari…") scores 100 % MT-GenEval
accuracy; chrF++ against the own-gender references and the degenerate-output counts must show it."""

from __future__ import annotations

import json

import pytest

from fairmt.cli import main
from fairmt.eval.degenerate import degenerate_counts, degenerate_reasons, describe, is_repetitive, target_script


@pytest.mark.parametrize(
    "text, lang, reasons",
    [
        ("ariariariariariariariari", "de", ["repetitive"]),
        ("der der der der der", "de", ["repetitive"]),
        ("", "de", ["empty"]),
        ("   ", "ru", ["empty"]),
        ("The doctor is here.", "ru", ["wrong_script"]),  # English (Latin) where Cyrillic is expected
        ("Врач здесь.", "de", ["wrong_script"]),
        ("ариариариариариари", "ru", ["repetitive"]),
        ("Der Arzt ist hier.", "de", []),
        ("Врач здесь.", "ru", []),
        ("الطبيب هنا.", "ar", []),
        ("Er zahlte 1000000 Euro für das Haus in der Stadt.", "de", []),  # a long number is not a degenerate line
        ("Warte... warte... warte... warte...", "de", []),
        ("2019", "ru", []),  # no letters: the script is not judged
        ("The doctor is here.", "xx", []),  # unknown language: script unchecked
    ],
)
def test_degenerate_rules(text, lang, reasons):
    assert degenerate_reasons(text, target_script(lang)) == reasons


def test_repetition_needs_half_the_line():
    assert is_repetitive("ha" * 10) and not is_repetitive("Sie lachte: hahahaha, und ging dann langsam nach Hause.")


def test_counts_and_the_warning_line():
    c = degenerate_counts(["Der Arzt.", "", "ariariariariari", "Doctor"], "ru")
    assert (c["n"], c["degenerate"], c["empty"], c["repetitive"], c["wrong_script"]) == (4, 4, 1, 1, 3)
    assert c["script"] == "Cyrl" and [e["line"] for e in c["examples"]] == [1, 2, 3]
    line = describe("MT-GenEval ru", c)
    assert line.startswith("MT-GenEval ru: 4 of 4 translations degenerate (empty 1, repetitive 1, wrong script 3)")
    assert describe("x", degenerate_counts(["Врач."], "ru")) is None


@pytest.mark.data
def test_no_reference_of_mt_geneval_is_flagged(shared_data, monkeypatch):
    """The rules raise no false alarm on the 4,800 MT-GenEval test references of the 8 languages."""
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    from fairmt.eval.geneval import GENEVAL_LANGS, load_counterfactual

    for lang in GENEVAL_LANGS:
        d = load_counterfactual(lang, "test")
        assert degenerate_counts(d.masculine_refs + d.feminine_refs, lang)["degenerate"] == 0, lang


@pytest.mark.data
def test_a_degenerate_model_is_gender_accurate_but_flagged(shared_data, monkeypatch):
    """The issue's case on the real data: "ariari…" for every sentence is 100 % accurate (no wrong-gender word);
    chrF++ against the own-gender references is near 0 and every line is flagged; the references themselves score
    chrF++ 100 and nothing is flagged."""
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    from sacrebleu.metrics import CHRF

    from fairmt.data.text import normalize_text
    from fairmt.eval.geneval import geneval_accuracy, load_counterfactual

    d = load_counterfactual("ru", "test")
    n = len(d.masculine_refs)
    bad = geneval_accuracy(["ariariariariariari"] * n, ["ariariariariariari"] * n, "ru", "test")
    assert bad.accuracy == 100.0 and bad.chrfpp < 1.0
    assert bad.degenerate["degenerate"] == 2 * n and bad.degenerate["repetitive"] == 2 * n
    assert bad.degenerate["wrong_script"] == 2 * n  # Latin letters for Russian
    good = geneval_accuracy(d.masculine_refs, d.feminine_refs, "ru", "test")
    assert good.chrfpp == pytest.approx(100.0) and good.degenerate["degenerate"] == 0
    # chrF++ is sacrebleu's over the 2n hypotheses, each against its own gender's reference
    hyps = d.feminine_refs + d.masculine_refs  # every translation in the other gender
    swapped = geneval_accuracy(d.feminine_refs, d.masculine_refs, "ru", "test")
    # (on the text-normalised strings: one Russian reference holds an invisible format character)
    norm = [normalize_text(x) for x in hyps], [normalize_text(x) for x in d.masculine_refs + d.feminine_refs]
    expected = CHRF(word_order=2).corpus_score(norm[0], [norm[1]]).score
    assert swapped.chrfpp == pytest.approx(expected) and swapped.chrfpp < 100.0
    assert swapped.chrf_signature.startswith("nrefs:1|") and "nw:2" in swapped.chrf_signature


def _fake_geneval(root):
    d = root / "mt_geneval" / "sentences" / "test"
    d.mkdir(parents=True)
    for g, pron, ref in (("masculine", "He", "Er ist Arzt."), ("feminine", "She", "Sie ist Ärztin.")):
        (d / f"geneval-sentences-{g}-test.en_de.en").write_text(f"{pron} is a doctor.\n{pron} is here.\n")
        (d / f"geneval-sentences-{g}-test.en_de.de").write_text(f"{ref}\n{ref}\n")


def test_mtbias_and_geneval_commands_report_quality_and_flags(tmp_path, monkeypatch, capsys):
    _fake_geneval(tmp_path / "data")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    g = tmp_path / "run" / "geneval"
    g.mkdir(parents=True)
    (g / "masculine.de.txt").write_text("Er ist Arzt.\nariariariariariariari\n")
    (g / "feminine.de.txt").write_text("Sie ist Ärztin.\nsie sie sie sie sie sie\n")
    md = tmp_path / "r.md"
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--translations-dir",
                str(tmp_path / "run"),
                "--lang",
                "de",
                "--benchmarks",
                "geneval",
                "--json",
                "-",
                "--markdown",
                str(md),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    r = json.loads(captured.out)
    row = r["geneval"]["de"]
    assert row["chrfpp"] is not None and 0 < row["chrfpp"] < 100 and r["geneval"]["average"]["chrfpp"] == row["chrfpp"]
    assert (row["degenerate"]["degenerate"], row["degenerate"]["empty"], row["degenerate"]["repetitive"]) == (2, 0, 2)
    assert r["warnings"] == [line for line in r["warnings"] if line.startswith("MT-GenEval de: 2 of 4 translations")]
    assert len(r["warnings"]) == 1 and f"warning: {r['warnings'][0]}" in captured.err
    text = md.read_text()
    assert "MT-GenEval chrF++" in text and "| 2/4 |" in text
    # the single-benchmark command: chrF++ and the flag beside the accuracy, in JSON and on the console
    assert (
        main(
            [
                "eval",
                "geneval",
                "--lang",
                "de",
                "--masculine",
                str(g / "masculine.de.txt"),
                "--feminine",
                str(g / "feminine.de.txt"),
                "--json",
                "-",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["chrfpp"] == row["chrfpp"] and data["degenerate"]["degenerate"] == 2
    assert (
        "warning: MT-GenEval counterfactual (test) de: 2 of 4 translations degenerate (repetitive 2, unrelated 2)"
        in captured.err
    )
    (g / "feminine.de.txt").write_text("Sie ist Ärztin.\n\n")  # an empty line, allowed by --allow-empty: flagged
    assert (
        main(
            [
                "eval",
                "geneval",
                "--lang",
                "de",
                "--masculine",
                str(g / "masculine.de.txt"),
                "--feminine",
                str(g / "feminine.de.txt"),
                "--allow-empty",
                "--json",
                "-",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert (data["degenerate"]["empty"], data["degenerate"]["repetitive"]) == (1, 1)
