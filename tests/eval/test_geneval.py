"""MT-GenEval accuracy (fairmt.eval.geneval): hand-computed examples and the published checks on the real data."""

from __future__ import annotations

import json
import unicodedata

import pytest

import procs
from fairmt.errors import FairmtError
from fairmt.eval import geneval as ge

M_REF = "Er ist ein guter Arzt, sagte sie."
F_REF = "Sie ist eine gute Ärztin, sagte sie."


def test_normalisation_and_words():
    assert ge.normalize('Er\'s "Arzt"-Kollege!') == "er s  arzt  kollege "
    assert ge.words("Ärztin, ärztin. SIE") == frozenset({"ärztin", "sie"})
    # only ASCII punctuation is replaced: the Spanish ¿ and the Hindi danda stay part of the word
    assert ge.words("¿Quién? नहीं।") == frozenset({"¿quién", "नहीं।"})


def test_judge_hand_computed():
    # unique words: masculine {er, ein, guter, arzt}; feminine {eine, gute, ärztin} ("sie" occurs in both)
    j = ge.judge("Er ist ein guter Arzt.", M_REF, F_REF)
    assert j.correct and j.explicit_correct
    assert j.own_unique == {"er", "ein", "guter", "arzt"} and j.other_unique == {"eine", "gute", "ärztin"}
    j = ge.judge("Er ist eine gute Ärztin.", M_REF, F_REF)
    assert not j.correct and not j.explicit_correct and j.wrong_words == {"eine", "gute", "ärztin"}
    # a translation without any gendered word: officially correct, not explicitly correct
    j = ge.judge("Das Wetter ist schön.", M_REF, F_REF)
    assert j.correct and not j.explicit_correct
    # "sie" is in both references, so it is neither right nor wrong
    j = ge.judge("Sie ist ein Arzt.", M_REF, F_REF)
    assert j.correct and j.explicit_correct
    # case and punctuation do not matter
    assert not ge.judge("ÄRZTIN!", M_REF, F_REF).correct
    # identical references: nothing is unique, every hypothesis is correct, explicitly too
    j = ge.judge("anything", "Die Person kam.", "Die Person kam.")
    assert j.correct and j.explicit_correct


def test_score_counterfactual_hand_computed():
    m_refs = [M_REF, "Er kam.", "Die Person kam."]
    f_refs = [F_REF, "Sie kam.", "Die Person kam."]
    m_hyps = ["Er ist ein Arzt.", "Sie kam.", "x"]  # correct+explicit, wrong, correct (identical refs)
    f_hyps = ["Sie ist ein Arzt.", "Sie kam.", "y"]  # wrong ("ein", "arzt"), correct+explicit, correct
    r = ge.score_counterfactual(m_hyps, f_hyps, m_refs, f_refs, lang="de", split="custom")
    assert r.n == 3
    assert r.accuracy_masculine == pytest.approx(200 / 3)
    assert r.accuracy_feminine == pytest.approx(200 / 3)
    assert r.hypothesis_accuracy == pytest.approx(400 / 6)  # 4 of 6 translations correct
    assert r.explicit_accuracy_masculine == pytest.approx(200 / 3)
    assert r.explicit_accuracy_feminine == pytest.approx(200 / 3)
    assert r.delta_g == pytest.approx(0.0)
    assert r.accuracy == pytest.approx(100 / 3)  # official, pair-level: only the identical-reference pair
    assert r.explicit_accuracy == pytest.approx(100 / 3)
    # a gender-neutral masculine hypothesis: correct, not explicit -> E-ΔG negative
    r2 = ge.score_counterfactual(["Die Person ist nett."] + m_hyps[1:], f_hyps, m_refs, f_refs)
    assert r2.accuracy_masculine == pytest.approx(200 / 3)
    assert r2.explicit_accuracy_masculine == pytest.approx(100 / 3)
    assert r2.explicit_delta_g == pytest.approx(-100 / 3)
    assert r2.signature == (
        "MT-GenEval|set:counterfactual|split:custom|lang:xx|n:3|norm:lower+asciipunct|text:nfc+spaces+nofmt|v:2.0"
    )


def test_length_mismatch_is_clear():
    with pytest.raises(FairmtError, match="feminine hypotheses has 1 lines but 2"):
        ge.score_counterfactual(["a", "b"], ["a"], ["a", "b"], ["c", "d"])
    with pytest.raises(FairmtError, match="valid languages: ar, de, es, fr, hi, it, pt, ru"):
        ge.check_lang("tr")
    with pytest.raises(FairmtError, match="valid splits"):
        ge.check_split("train")


def test_read_lines_errors(tmp_path):
    p = tmp_path / "h.txt"
    p.write_text("a\n\nc\n", encoding="utf-8")
    with pytest.raises(FairmtError, match=r"h.txt:2: empty line"):
        ge.read_lines(p)
    assert ge.read_lines(p, allow_empty=True) == ["a", "", "c"]
    p.write_text("a\r\nb\r\n", encoding="utf-8")
    assert ge.read_lines(p) == ["a", "b"]
    with pytest.raises(FairmtError, match=r"has 2 lines but 3 are expected \(it ends after line 2\)"):
        ge.read_lines(p, expected=3)
    with pytest.raises(FairmtError, match=r"line 2 is extra"):
        ge.read_lines(p, expected=1)
    p.write_bytes(b"ok\n\xff\xfe bad\n")
    with pytest.raises(FairmtError, match=r"h.txt:2: the translation file is not valid UTF-8"):
        ge.read_lines(p)
    with pytest.raises(FairmtError, match="file not found"):
        ge.read_lines(tmp_path / "missing.txt")


def test_strip_context_and_contextual_scoring():
    assert ge.strip_context("Kontext. <sep> Sie ist Ärztin.") == "Sie ist Ärztin."
    r = ge.score_contextual(
        ["Er ist Arzt.", "ctx <sep> Sie ist Ärztin."],
        ["Er ist Arzt.", "Er ist Arzt."],
        ["Sie ist Ärztin.", "Sie ist Ärztin."],
    )
    assert r.accuracy == 50.0 and r.explicit_accuracy == 50.0 and r.signature.startswith("MT-GenEval|set:contextual")


# ------------------------------------------------------------------------------------------------ real data


@pytest.fixture
def real_data(shared_data, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    return shared_data


# Hindi: the official scorer gives 11.33 (the data README's figure). Pair 196's two references differ only by a
# zero-width space (U+200B) before "होने" in the feminine one, which the official scorer counts as a gendered word;
# fairmt's text normalisation removes it, so that pair is gender-neutral and both its swapped translations are
# right: 11.67 (test_official_scorer_differs_only_on_the_zero_width_pair shows it is the only difference).
SWAPPED_PAIR = {"ar": 0.0, "de": 0.0, "es": 4.67, "fr": 0.0, "hi": 11.67, "it": 6.67, "pt": 0.0, "ru": 0.0}
# per-hypothesis official accuracy of the swapped references: a few references' words are a subset of their
# counterfactual's (de line 187: "als er 17 Jahre" / "als sie 17 Jahre", "sie" being in both), so it is higher
# (Hindi: 12.17 with the official scorer; + 2 of 600 translations for pair 196, as above)
SWAPPED_ACC = {"ar": 0.0, "de": 0.83, "es": 5.67, "fr": 0.0, "hi": 12.5, "it": 7.33, "pt": 0.0, "ru": 0.0}


@pytest.mark.data
@pytest.mark.parametrize("lang", ge.GENEVAL_LANGS)
def test_published_checks_on_test(real_data, lang):
    d = ge.load_counterfactual(lang, "test")
    assert len(d.masculine_refs) == len(d.feminine_refs) == len(d.masculine_sources) == 300
    ref = ge.geneval_accuracy(d.masculine_refs, d.feminine_refs, lang, "test")
    assert ref.accuracy == ref.explicit_accuracy == ref.hypothesis_accuracy == 100.0
    assert ref.delta_g == ref.explicit_delta_g == 0.0
    swapped = ge.geneval_accuracy(d.feminine_refs, d.masculine_refs, lang, "test")
    assert round(swapped.accuracy, 2) == SWAPPED_PAIR[lang]
    assert round(swapped.explicit_accuracy, 2) == SWAPPED_PAIR[lang]
    assert round(swapped.hypothesis_accuracy, 2) == SWAPPED_ACC[lang]
    assert f"lang:{lang}" in swapped.signature and "split:test" in swapped.signature


@pytest.mark.data
def test_official_scorer_differs_only_on_the_zero_width_pair(real_data):
    import string

    table = str.maketrans(string.punctuation, " " * len(string.punctuation))

    def official_words(text):  # accuracy_metric.py: lower-case, ASCII punctuation to spaces, no Unicode step
        return frozenset(text.lower().translate(table).split())

    differ = []
    for lang in ge.GENEVAL_LANGS:
        d = ge.load_counterfactual(lang, "test")
        for i, (m, f) in enumerate(zip(d.masculine_refs, d.feminine_refs)):
            neutral_official = not (official_words(m) ^ official_words(f))
            if neutral_official != (not (ge.words(m) ^ ge.words(f))):
                differ.append((lang, i))
                assert official_words(m) ^ official_words(f) == {"\u200bहोने", "होने"}
    assert differ == [("hi", 196)]


@pytest.mark.data
def test_compat_official_reproduces_the_reference_scorer(real_data, tmp_path, capsys):
    """Issue 54: `--compat official` reads the text as accuracy_metric.py does (no Unicode normalisation): Hindi
    swapped-reference accuracy 11.33, the data README's figure (fairmt's default reading: 11.67)."""
    d = ge.load_counterfactual("hi", "test")
    m = _write(tmp_path / "m.hi", d.feminine_refs)
    f = _write(tmp_path / "f.hi", d.masculine_refs)
    assert (
        _cli(
            [
                "eval",
                "geneval",
                "--lang",
                "hi",
                "--masculine",
                m,
                "--feminine",
                f,
                "--compat",
                "official",
                "--json",
                "-",
            ]
        )
        == 0
    )
    got = json.loads(capsys.readouterr().out)
    assert round(got["accuracy"], 2) == round(got["explicit_accuracy"], 2) == 11.33
    assert round(got["hypothesis_accuracy"], 2) == 12.17  # the official per-translation figure (comment above)
    assert got["signature"].endswith("|text:raw|compat:official|v:" + ge.METRIC_VERSION)
    assert _cli(["eval", "geneval", "--lang", "hi", "--masculine", m, "--feminine", f, "--json", "-"]) == 0
    assert round(json.loads(capsys.readouterr().out)["accuracy"], 2) == 11.67  # the default reading
    assert ge.words("Arzt\u200b ist", "official") == {"arzt\u200b", "ist"} and ge.words("Arzt\u200b ist") == {
        "arzt",
        "ist",
    }
    with pytest.raises(FairmtError, match="unknown MT-GenEval compat"):
        ge.score_counterfactual(["a"], ["b"], ["a"], ["b"], compat="acl2019")


@pytest.mark.data
def test_dev_split_and_hypothesis_count(real_data):
    d = ge.load_counterfactual("de", "dev")
    assert len(d.masculine_refs) == 1200
    r = ge.geneval_accuracy(d.masculine_refs, d.feminine_refs, "de")  # split defaults to dev
    assert r.split == "dev" and r.accuracy == 100.0
    with pytest.raises(FairmtError, match="has 1200 pairs"):
        ge.geneval_accuracy(d.masculine_refs[:10], d.feminine_refs, "de")
    with pytest.raises(FairmtError, match="valid languages"):
        ge.geneval_accuracy([], [], "nl")


@pytest.mark.data
@pytest.mark.parametrize("lang", ge.CONTEXT_LANGS)
def test_contextual_set(real_data, lang):
    d = ge.load_contextual(lang, "test")
    assert all(ge.CONTEXT_SEP in s for s in d.sources)
    assert ge.geneval_contextual_accuracy(d.original_refs, lang, "test").accuracy == 100.0
    flipped = ge.geneval_contextual_accuracy(d.flipped_refs, lang, "test")
    assert flipped.accuracy < 5.0  # only the few lines whose flipped reference is gender-neutral pass


def test_missing_data_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path))
    with pytest.raises(FairmtError, match="fairmt data download mt_geneval"):
        ge.load_counterfactual("de", "test")


def test_result_serialises(tmp_path):
    from fairmt.eval.report import write_json

    r = ge.score_counterfactual(["Er kam."], ["Sie kam."], ["Er kam."], ["Sie kam."], lang="de", split="test")
    write_json(r, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert {"accuracy", "explicit_accuracy", "delta_g", "explicit_delta_g", "signature"} <= set(data)
    assert data["accuracy"] == 100.0


# ------------------------------------------------------------------------------------------------------- CLI


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _cli(argv):
    from fairmt.cli import main

    return main(argv)


@pytest.mark.data
def test_cli_files_json_markdown_plot(real_data, tmp_path, capsys):
    d = ge.load_counterfactual("de", "test")
    m = _write(tmp_path / "m.de", d.masculine_refs)
    f = _write(tmp_path / "f.de", d.feminine_refs)
    out = tmp_path / "r.json"
    rc = _cli(
        [
            "eval",
            "geneval",
            "--lang",
            "de",
            "--split",
            "test",
            "--masculine",
            m,
            "--feminine",
            f,
            "--json",
            str(out),
            "--markdown",
            str(tmp_path / "r.md"),
            "--plot",
            str(tmp_path / "r.png"),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["accuracy"] == data["explicit_accuracy"] == 100.0
    assert data["delta_g"] == data["explicit_delta_g"] == 0.0
    assert data["signature"].startswith("MT-GenEval|set:counterfactual|split:test|lang:de|n:300")
    printed = capsys.readouterr().out
    assert "explicit_accuracy" in printed and "100.00" in printed and data["signature"] in printed
    assert "| de | 300 | 100.00 |" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.png").stat().st_size > 1000
    # swapped files: the gender-swapped check through the CLI
    rc = _cli(["eval", "geneval", "--lang", "de", "--split", "test", "--masculine", f, "--feminine", m, "--json", "-"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["explicit_accuracy"] == 0.0


@pytest.mark.data
def test_cli_several_languages(real_data, tmp_path, capsys):
    for lang in ("es", "it"):
        d = ge.load_counterfactual(lang, "test")
        _write(tmp_path / f"m.{lang}", d.feminine_refs)
        _write(tmp_path / f"f.{lang}", d.masculine_refs)
    rc = _cli(
        [
            "eval",
            "geneval",
            "--lang",
            "es",
            "it",
            "--masculine",
            str(tmp_path / "m.{lang}"),
            "--feminine",
            str(tmp_path / "f.{lang}"),
            "--json",
            "-",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and [r["lang"] for r in data["per_language"]] == ["es", "it"]
    assert data["explicit_accuracy"] == pytest.approx((4.666666 + 6.666666) / 2, abs=1e-4)


@pytest.mark.data
def test_cli_bad_input(real_data, tmp_path, capsys):
    d = ge.load_counterfactual("de", "test")
    m = _write(tmp_path / "m.de", d.masculine_refs)
    f = _write(tmp_path / "f.de", d.feminine_refs)
    short = _write(tmp_path / "short.de", d.feminine_refs[:299])
    empty = _write(tmp_path / "empty.de", d.feminine_refs[:4] + [""] + d.feminine_refs[5:])
    src = _write(tmp_path / "src.de", d.feminine_sources)
    cases = [
        (
            ["--lang", "tr", "--masculine", m, "--feminine", f],
            "unknown MT-GenEval language 'tr'.*valid languages: ar, de",
        ),
        (
            ["--lang", "de", "--masculine", m, "--feminine", short],
            "mismatched masculine/feminine files.*short.de has 299",
        ),
        (
            ["--lang", "de", "--split", "dev", "--masculine", m, "--feminine", f],
            "m.de: has 300 lines but MT-GenEval dev \\(de\\) has 1200",
        ),
        (["--lang", "de", "--masculine", m, "--feminine", empty], "empty.de:5: empty line"),
        (["--lang", "de", "--masculine", m, "--feminine", m], "same file"),
        (["--lang", "de", "--masculine", m, "--feminine", src], "src.de: 300 of 300 lines equal the English source"),
        (["--lang", "de", "--masculine", m, "--feminine", str(tmp_path / "nope")], "nope: translation file not found"),
        (["--lang", "de", "--masculine", m], "give --masculine FILE and --feminine FILE"),
        (["--lang", "de", "it", "--masculine", m, "--feminine", f], "must contain \\{lang\\}"),
        (["--lang", "de", "--split", "train", "--masculine", m, "--feminine", f], "valid splits: dev, test"),
    ]
    import re

    for argv, pattern in cases:
        assert _cli(["eval", "geneval", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("fairmt: error: ") and len(err.strip().splitlines()) == 1, err
        assert re.search(pattern, err), (pattern, err)


@pytest.mark.data
def test_cli_contextual(real_data, tmp_path, capsys):
    d = ge.load_contextual("nl", "test")
    t = _write(tmp_path / "t.nl", d.original_refs)
    assert _cli(["eval", "geneval", "--set", "contextual", "--lang", "nl", "--translations", t, "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["accuracy"] == 100.0 and data["subset"] == "contextual"


@pytest.mark.data
def test_file_based_cli_does_not_import_torch(real_data, tmp_path):
    import sys

    d = ge.load_counterfactual("fr", "test")
    m = _write(tmp_path / "m.fr", d.masculine_refs)
    f = _write(tmp_path / "f.fr", d.feminine_refs)
    code = (
        "import sys; from fairmt.cli import main; "
        f"rc = main(['eval', 'geneval', '--lang', 'fr', '--masculine', {m!r}, '--feminine', {f!r}, '--json', '-']); "
        "heavy = [x for x in ('torch', 'transformers', 'matplotlib') if x in sys.modules]; "
        "assert rc == 0 and not heavy, heavy"
    )
    proc = procs.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "FAIRMT_DATA": str(real_data)},
    )
    assert proc.returncode == 0, proc.stderr


def _words_loop(text):
    # fairmt's text normalisation first, spelled out: NFC, every Unicode space separator a space, the invisible
    # format characters gone (fairmt.data.text); the official scorer has no such step (see SWAPPED_PAIR's note)
    text = unicodedata.normalize("NFC", text)
    text = "".join(" " if unicodedata.category(c) in ("Zs", "Zl", "Zp") else c for c in text)
    for ch in "\u200b\u2060\ufeff\u00ad\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
        text = text.replace(ch, "")
    out = []
    for ch in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~":
        text = text.replace(ch, " ")
    for w in text.lower().split():
        if w not in out:
            out.append(w)
    return out


def _reference_scores(m_hyps, f_hyps, m_refs, f_refs):
    """The official accuracy_metric.py main() and GACL's gender_eval.py, written as plain loops."""
    pairs_ok = pairs_explicit = 0
    per_gender = {"m": [0, 0], "f": [0, 0]}  # [correct, explicit]
    for i in range(len(m_refs)):
        verdicts = []
        for g, hyp, own, other in (("m", m_hyps[i], m_refs[i], f_refs[i]), ("f", f_hyps[i], f_refs[i], m_refs[i])):
            h, o, t = _words_loop(hyp), _words_loop(own), _words_loop(other)
            own_unique = [w for w in o if w not in t]
            other_unique = [w for w in t if w not in o]
            correct = True
            for w in other_unique:
                if w in h:
                    correct = False
            has_own = False
            for w in own_unique:
                if w in h:
                    has_own = True
            explicit = correct and (has_own or not own_unique)
            per_gender[g][0] += correct
            per_gender[g][1] += explicit
            verdicts.append((correct, explicit))
        pairs_ok += verdicts[0][0] and verdicts[1][0]
        pairs_explicit += verdicts[0][1] and verdicts[1][1]
    n = len(m_refs)
    return {
        "accuracy": 100 * pairs_ok / n,
        "explicit_accuracy": 100 * pairs_explicit / n,
        "delta_g": 100 * (per_gender["m"][0] - per_gender["f"][0]) / n,
        "explicit_delta_g": 100 * (per_gender["m"][1] - per_gender["f"][1]) / n,
    }


@pytest.mark.data
@pytest.mark.parametrize("lang", ge.GENEVAL_LANGS)
def test_scores_equal_the_reference_loops_on_random_mixes(real_data, lang):
    """Translations drawn at random from the references and their counterfactuals (and an empty one now and
    then): fairmt's numbers equal the reference algorithms'."""
    import random

    d = ge.load_counterfactual(lang, "test")
    rng = random.Random(lang)
    pick = lambda own, other: rng.choice([own, own, other, "", own + " " + other])  # noqa: E731
    m_hyps = [pick(m, f) for m, f in zip(d.masculine_refs, d.feminine_refs)]
    f_hyps = [pick(f, m) for m, f in zip(d.masculine_refs, d.feminine_refs)]
    got = ge.score_counterfactual(m_hyps, f_hyps, d.masculine_refs, d.feminine_refs, lang=lang)
    want = _reference_scores(m_hyps, f_hyps, d.masculine_refs, d.feminine_refs)
    for k, v in want.items():
        assert getattr(got, k) == pytest.approx(v), k
    assert got.accuracy < got.hypothesis_accuracy  # the pair-level number is the stricter one
    assert "v:2.0" in got.signature
