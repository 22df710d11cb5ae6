"""One text normalisation before any scoring (fairmt.data.text): real MT output with no-break spaces, decomposed
accents, zero-width spaces or right-to-left marks scores as the same text written plainly."""

from __future__ import annotations

import unicodedata
import warnings

import pytest

from fairmt.data.text import TEXT_NORM, normalize_many, normalize_text

NBSP, NNBSP, ZWSP, RLM, LRI, PDI, ZWJ, ZWNJ = (
    "\u00a0",
    "\u202f",
    "\u200b",
    "\u200f",
    "\u2066",
    "\u2069",
    "\u200d",
    "\u200c",
)


def test_each_rule():
    assert normalize_text("Die\u00a0Ärztin\u202fkam") == "Die Ärztin kam"
    assert normalize_text("caf" + "e\u0301") == "café" and unicodedata.is_normalized("NFC", normalize_text("e\u0301"))
    assert normalize_text(f"Ärz{ZWSP}tin{RLM} {LRI}x{PDI}\ufeff\u00ad") == "Ärztin x"
    assert normalize_text("a\u2028b\u3000c") == "a b c"
    # kept: the joiners are spelling in Indic and Arabic-script languages; tabs and newlines are not separators
    assert normalize_text(f"क{ZWNJ}ष{ZWJ}") == f"क{ZWNJ}ष{ZWJ}"
    assert normalize_text("a\tb") == "a\tb"
    plain = "The doctor asked the nurse."
    assert normalize_text(plain) is plain  # ASCII fast path
    for s in ("Die\u00a0Ärztin", "cafe\u0301", f"a{RLM}b"):
        assert normalize_text(normalize_text(s)) == normalize_text(s)


def test_report_counts_and_warns_when_mostly_changed():
    out, rep = normalize_many(["a\u00a0b", "cafe\u0301", f"x{ZWSP}y", "plain"], "lines")
    assert out == ["a b", "café", "xy", "plain"]
    assert (rep.n, rep.changed) == (4, 3)
    assert rep.by_kind == {"composed (NFC)": 1, "spaces": 1, "format characters": 1}
    with pytest.warns(UserWarning, match=r"3 of 4 lines changed by text normalisation \(nfc\+spaces\+nofmt"):
        rep.warn()
    _, few = normalize_many(["a\u00a0b", "plain", "plain", "plain"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        few.warn()  # a quarter changed: no warning


def test_geneval_hand_example_with_nbsp_and_nfd():
    from fairmt.eval import geneval as ge

    m_ref, f_ref = "Er ist ein guter Arzt.", "Sie ist eine gute Ärztin."
    clean = ge.score_counterfactual([m_ref], [f_ref], [m_ref], [f_ref])
    dirty_f = unicodedata.normalize("NFD", f_ref.replace(" ", NBSP))
    with pytest.warns(UserWarning, match="hypotheses changed by text normalisation"):
        dirty = ge.score_counterfactual([m_ref.replace(" ", NBSP)], [dirty_f], [m_ref], [f_ref])
    assert (dirty.accuracy, dirty.explicit_accuracy, dirty.chrfpp) == (
        clean.accuracy,
        clean.explicit_accuracy,
        clean.chrfpp,
    )
    assert f"text:{TEXT_NORM}" in clean.signature and clean.chrf_signature.endswith(f"|text:{TEXT_NORM}")
    assert ge.judge(dirty_f, f_ref, m_ref).explicit_correct


@pytest.mark.data
@pytest.mark.parametrize("lang", ["de", "fr", "es"])
def test_geneval_references_in_nfd_and_nbsp_still_score_100(shared_data, lang, monkeypatch):
    from fairmt.eval import geneval as ge

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    data = ge.load_counterfactual(lang, "test")

    def dirty(lines):
        return [unicodedata.normalize("NFD", x).replace(" ", NBSP) for x in lines]

    with pytest.warns(UserWarning):
        res = ge.score_counterfactual(
            dirty(data.masculine_refs),
            dirty(data.feminine_refs),
            data.masculine_refs,
            data.feminine_refs,
            lang=lang,
            split="test",
        )
    assert res.accuracy == 100.0 and res.explicit_accuracy == 100.0
    assert res.chrfpp == pytest.approx(100.0)


def _winomt_files(shared_data, tmp_path, lang, system, transform, n=300):
    gold = tmp_path / "gold.txt"
    gold.write_text(
        "".join(open(shared_data / "winomt/aggregates_acl2019/en.txt", encoding="utf-8").readlines()[:n]),
        encoding="utf-8",
    )
    lines = open(shared_data / f"winomt/translations/{system}/en-{lang}.txt", encoding="utf-8").read().splitlines()[:n]
    clean, dirty = tmp_path / "clean.txt", tmp_path / "dirty.txt"
    clean.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = []
    for line in lines:
        src, tgt = line.split(" ||| ", 1)
        out.append(f"{src} ||| {transform(tgt)}")
    dirty.write_text("\n".join(out) + "\n", encoding="utf-8")
    return gold, clean, dirty


# one perturbation per language, as real systems and editors write them
_PERTURB = {
    "de": lambda t: t.replace(" ", NBSP),  # no-break spaces between words: scored 0.0 / ΔG 0.0 before
    "es": lambda t: t.replace(" ", NNBSP),
    "fr": lambda t: unicodedata.normalize("NFD", t),  # decomposed accents: French ΔG 3.8 -> 9.0 before
    "ru": lambda t: unicodedata.normalize("NFD", t),  # й decomposed
    "he": lambda t: " ".join(w + RLM for w in t.split(" ")),  # a right-to-left mark after every word
    "it": lambda t: " ".join(w[:2] + ZWSP + w[2:] if len(w) > 3 else w for w in t.split(" ")),
}


@pytest.mark.data
@pytest.mark.parametrize("lang", sorted(_PERTURB))
def test_winomt_perturbed_translations_score_as_clean(shared_data, tmp_path, lang):
    from fairmt.eval.winomt.evaluate import evaluate_winomt

    gold, clean, dirty = _winomt_files(shared_data, tmp_path, lang, "google", _PERTURB[lang])
    ref = evaluate_winomt(clean, lang, gold)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = evaluate_winomt(dirty, lang, gold)
    # warned exactly when most lines were changed (Russian NFD touches only the lines with й or ё)
    lines = [x.split(" ||| ", 1)[1] for x in clean.read_text(encoding="utf-8").splitlines()]
    mostly = sum(_PERTURB[lang](t) != t for t in lines) * 2 > len(lines)
    assert mostly == (lang != "ru")
    notes = [
        str(w.message) for w in caught if f"WinoMT {lang} translations changed by text normalisation" in str(w.message)
    ]
    assert len(notes) == int(mostly), notes
    assert ref.accuracy > 20  # the clean file scores something real
    for key in ("accuracy", "delta_g", "delta_r", "f1_male", "f1_female", "n_unknown"):
        assert getattr(got, key) == pytest.approx(getattr(ref, key)), key
    assert f"|text:{TEXT_NORM}|" in got.signature


def test_the_fast_path_knows_every_space_separator():
    """The fast path's fixed list is Unicode's own set of space separators (besides " ")."""
    from fairmt.data.text import SPACE_SEPARATORS

    every = {chr(c) for c in range(0x110000) if c != 0x20 and unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp")}
    assert set(SPACE_SEPARATORS) == every


def test_lookalike_letters_and_emoji_are_counted_and_said():
    """Issue 52: a Latin word holding a Cyrillic look-alike letter, and emoji ZWJ sequences, are counted per line and
    warned about with the count (normalisation cannot undo them); plain text in any one script, Indic joiners and
    arrows are not."""
    from fairmt.data.text import has_symbols, mixes_scripts

    assert mixes_scripts("Der \u0410rzt kam") and mixes_scripts("the d\u043ector")  # Cyrillic А, о
    assert not any(mixes_scripts(s) for s in ("Der Arzt kam", "Врач пришёл", "café naïve", "Ελλάδα and Moscow"))
    assert has_symbols(f"Der Arzt 👩{ZWJ}⚕️") and has_symbols("fertig ✅")
    assert not any(has_symbols(s) for s in (f"क्{ZWJ}ष", "a → b", "Ärztin", "plain"))
    lines = ["Der \u0410rzt kam.", f"Die Ärztin kam 👩{ZWJ}⚕️", "Die Ärztin kam.", "plain"]
    _, rep = normalize_many(lines, "WinoMT de translations")
    assert (rep.mixed_scripts, rep.symbols, rep.changed) == (1, 1, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep.warn()
    said = [str(w.message) for w in caught]
    assert len(said) == 2
    assert said[0].startswith("1 of 4 WinoMT de translations have a word mixing Latin, Cyrillic or Greek letters")
    assert said[1].startswith("1 of 4 WinoMT de translations carry emoji or emoji sequences")
    _, clean = normalize_many(lines[2:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean.warn()


@pytest.mark.data
def test_winomt_with_cyrillic_articles_or_emoji_says_how_many_lines(shared_data, tmp_path):
    """German WinoMT with Cyrillic look-alike letters in the articles scores lower without any error: the run now
    names the lines; emoji ZWJ sequences at the end of every line are named too."""
    from fairmt.eval.winomt.evaluate import evaluate_winomt

    lookalike = str.maketrans({"e": "\u0435", "a": "\u0430"})  # Cyrillic е, а

    def cyrillic_articles(t):
        return " ".join(
            w.translate(lookalike) if w.lower() in ("der", "die", "das", "ein", "eine") else w for w in t.split(" ")
        )

    gold, clean, dirty = _winomt_files(shared_data, tmp_path, "de", "google", cyrillic_articles, n=120)
    n_mixed = sum(
        cyrillic_articles(x.split(" ||| ", 1)[1]) != x.split(" ||| ", 1)[1]
        for x in clean.read_text(encoding="utf-8").splitlines()
    )
    assert n_mixed > 60
    with pytest.warns(UserWarning, match=rf"^{n_mixed} of 120 WinoMT de translations have a word mixing"):
        evaluate_winomt(dirty, "de", gold)
    gold, clean, emoji = _winomt_files(shared_data, tmp_path, "de", "google", lambda t: t + f" 👩{ZWJ}⚕️", n=120)
    with pytest.warns(UserWarning, match=r"^120 of 120 WinoMT de translations carry emoji"):
        evaluate_winomt(emoji, "de", gold)
