"""`fairmt eval mt-bias` and `fairmt report` (issue 9): the GACL paper's whole evaluation from one command."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from fairmt.cli import main
from fairmt.errors import FairmtError
from fairmt.eval import mtbias

GOOGLE_LANGS = ("ar", "de", "es", "fr", "he", "it", "ru", "uk")


def _google_dir(shared: Path, out: Path, geneval_langs=mtbias.GENEVAL_LANGS) -> Path:
    """The shipped 2019 Google translations (8 WinoMT languages) and MT-GenEval's own references as 'translations'
    (of ``geneval_langs``)."""
    (out / "winomt").mkdir(parents=True)
    (out / "geneval").mkdir()
    for lang in GOOGLE_LANGS:
        shutil.copy(shared / "winomt" / "translations" / "google" / f"en-{lang}.txt", out / "winomt" / f"en-{lang}.txt")
    sent = shared / "mt_geneval" / "sentences" / "test"
    for lang in geneval_langs:
        for g in ("masculine", "feminine"):
            shutil.copy(sent / f"geneval-sentences-{g}-test.en_{lang}.{lang}", out / "geneval" / f"{g}.{lang}.txt")
    return out


@pytest.mark.data
def test_google_2019_suite(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    root = _google_dir(shared_data, tmp_path / "run")
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--translations-dir",
                str(root),
                "--compat",
                "acl2019",
                "--json",
                str(out),
                "--markdown",
                str(tmp_path / "r.md"),
                "--plot",
                str(tmp_path / "r.png"),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "skipped: winomt: no file for cs, pl" in err and "skipped: flores: no" in err
    r = json.loads(out.read_text())
    w, g = r["winomt"], r["geneval"]
    # per language = the WinoMT evaluator (published 2019 Google de: 59.4 / ΔG 12.5; fairmt 59.3 / 12.3)
    assert round(w["de"]["accuracy"], 1) == 59.3 and round(w["de"]["delta_g_f1"], 1) == 12.3
    for lang in GOOGLE_LANGS:
        # the paper's ΔG (Acc_male − Acc_female) equals ΔR on WinoMT; the 2019 ΔG (F1) is reported beside it
        assert w[lang]["delta_g"] == pytest.approx(
            w[lang]["delta_r"], abs=0.1
        )  # acl2019 mode rounds ΔR from rounded recalls
        assert {"accuracy", "delta_g", "delta_g_f1", "delta_s", "delta_r", "n", "signature"} <= set(w[lang])
    # the paper's averages: all languages, in-domain = de, out-of-domain = the rest
    assert w["average"]["accuracy"] == pytest.approx(statistics.fmean(w[x]["accuracy"] for x in GOOGLE_LANGS))
    assert w["average"]["abs_delta_s"] == pytest.approx(statistics.fmean(abs(w[x]["delta_s"]) for x in GOOGLE_LANGS))
    assert w["in_domain"]["accuracy"] == w["de"]["accuracy"] and w["in_domain"]["languages"] == ["de"]
    assert w["out_of_domain"]["accuracy"] == pytest.approx(
        statistics.fmean(w[x]["accuracy"] for x in GOOGLE_LANGS if x != "de")
    )
    # references as translations: MT-GenEval accuracy 100 in every language
    assert all(g[x]["accuracy"] == 100.0 and g[x]["explicit_accuracy"] == 100.0 for x in mtbias.GENEVAL_LANGS)
    assert g["average"]["n_languages"] == 8 and r["flores"] == {} and r["errors"] == []
    md = (tmp_path / "r.md").read_text()
    assert "Table 2 layout" in md and "Table 3 layout" in md and "| run |" in md and "| de |" in md
    assert (tmp_path / "r.png").stat().st_size > 5000


@pytest.mark.data
def test_wrong_line_count_names_file_and_counts(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    # three languages: one before the bad file, the bad one and one after it (each language scored costs ~1 s)
    root = _google_dir(shared_data, tmp_path / "run", geneval_langs=("ar", "it", "ru"))
    bad = root / "geneval" / "feminine.it.txt"
    bad.write_text("".join(bad.read_text(encoding="utf-8").splitlines(keepends=True)[:-2]), encoding="utf-8")
    import fairmt.eval.geneval as geneval

    scored, score = [], geneval.geneval_accuracy
    monkeypatch.setattr(
        geneval, "geneval_accuracy", lambda m, f, lang, split: scored.append(lang) or score(m, f, lang, split)
    )
    assert main(["eval", "mt-bias", "--translations-dir", str(root), "--benchmarks", "geneval", "--json", "-"]) == 2
    err = capsys.readouterr().err
    assert "feminine.it.txt" in err and "has 298 lines but 300 are expected" in err and "--keep-going" in err
    assert scored == []  # the line counts are checked before any language is scored (ar comes before it)
    # --keep-going: the other languages are scored, the error is listed, exit 1
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--translations-dir",
                str(root),
                "--benchmarks",
                "geneval",
                "--keep-going",
                "--json",
                "-",
            ]
        )
        == 1
    )
    r = json.loads(capsys.readouterr().out)
    assert "it" not in r["geneval"] and [k for k in r["geneval"] if len(k) == 2] == ["ar", "ru"]
    assert scored == ["ar", "ru"]
    assert len(r["errors"]) == 1 and "feminine.it.txt" in r["errors"][0]


def test_missing_benchmark_data_names_the_download_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "empty"))
    (tmp_path / "run" / "geneval").mkdir(parents=True)
    (tmp_path / "run" / "geneval" / "masculine.de.txt").write_text("x\n")
    (tmp_path / "run" / "geneval" / "feminine.de.txt").write_text("y\n")
    assert main(["eval", "mt-bias", "--translations-dir", str(tmp_path / "run"), "--benchmarks", "geneval"]) == 2
    assert "fairmt data download" in capsys.readouterr().err


def test_average_and_bad_options():
    per = {"de": {"accuracy": 60.0, "delta_g": -10.0}, "fr": {"accuracy": 50.0, "delta_g": 20.0}}
    a = mtbias.average(per, ["accuracy", "delta_g"], ["de", "fr"])
    assert a["accuracy"] == 55.0 and a["delta_g"] == 5.0 and a["abs_delta_g"] == 15.0 and a["n_languages"] == 2
    with pytest.raises(FairmtError, match="translations folder not found"):
        mtbias.score_translations_dir("/nonexistent/run")


def test_bad_cli_input(tmp_path, capsys):
    assert main(["eval", "mt-bias", "--translations-dir", str(tmp_path), "--lang", "tr"]) == 2
    assert "unknown target language(s) ['tr']" in capsys.readouterr().err
    assert main(["eval", "mt-bias", "--translations-dir", str(tmp_path), "--src-lang", "de"]) == 2
    assert "English-source" in capsys.readouterr().err
    assert main(["eval", "mt-bias", "--translations-dir", str(tmp_path)]) == 2
    assert "nothing to score" in capsys.readouterr().err


PAIRS = [
    ("The doctor is here.", "Der Arzt ist hier."),
    ("The nurse is here.", "Die Krankenschwester ist hier."),
    ("He is a doctor.", "Er ist Arzt."),
    ("She is a doctor.", "Sie ist Ärztin."),
    ("We are going home.", "Wir gehen nach Hause."),
] * 4


def _fake_data(root: Path) -> None:
    w = root / "winomt" / "aggregates"
    w.mkdir(parents=True)
    (w / "en.txt").write_text(
        "male\t1\tThe doctor asked the nurse to help him .\tdoctor\n"
        "female\t1\tThe nurse helped the doctor because she was kind .\tnurse\n",
        encoding="utf-8",
    )
    d = root / "mt_geneval" / "sentences" / "test"
    d.mkdir(parents=True)
    for g, pron, ref in (("masculine", "He", "Er ist Arzt."), ("feminine", "She", "Sie ist Ärztin.")):
        (d / f"geneval-sentences-{g}-test.en_de.en").write_text(f"{pron} is a doctor.\n{pron} is here.\n")
        (d / f"geneval-sentences-{g}-test.en_de.de").write_text(f"{ref}\n{ref}\n")
    dt = root / "flores200" / "devtest"
    dt.mkdir(parents=True)
    (dt / "eng_Latn.devtest").write_text("The doctor is here.\nWe are going home.\n")
    (dt / "deu_Latn.devtest").write_text("Der Arzt ist hier.\nWir gehen nach Hause.\n")


def test_model_run_writes_the_layout_and_rescoring_it_gives_the_same(tmp_path, monkeypatch, capsys):
    """--model translates into the inspectable folder layout; --translations-dir on that folder gives the same
    numbers; `fairmt report` puts two runs side by side with deltas and a scatter plot."""
    pytest.importorskip("torch")
    import sentencepiece as spm

    from fairmt.models.tiny import build_tiny_translation_model

    model = build_tiny_translation_model(tmp_path / "m2m", PAIRS, arch="m2m100", d_model=32)
    _fake_data(tmp_path / "data")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([t for p in PAIRS for t in p]),
        model_prefix=str(tmp_path / "s"),
        vocab_size=50,
        model_type="bpe",
        character_coverage=1.0,
    )
    run = tmp_path / "run"
    common = ["--lang", "de", "--spm-model", str(tmp_path / "s.model")]
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--model",
                str(model),
                "--output-dir",
                str(run),
                *common,
                "--num-beams",
                "2",
                "--max-new-tokens",
                "8",
                "--json",
                str(tmp_path / "a.json"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (run / "winomt" / "en-de.txt").read_text().startswith("The doctor asked the nurse to help him . ||| ")
    assert len((run / "geneval" / "masculine.de.txt").read_text().splitlines()) == 2
    assert len((run / "flores" / "de.txt").read_text().splitlines()) == 2
    a = json.loads((tmp_path / "a.json").read_text())
    assert main(["eval", "mt-bias", "--translations-dir", str(run), *common, "--json", str(tmp_path / "b.json")]) == 0
    b = json.loads((tmp_path / "b.json").read_text())
    for bench in ("winomt", "geneval", "flores"):
        assert a[bench]["de"] == b[bench]["de"], bench
    assert a["flores"]["de"]["bleu_spm_nonstandard"] is not None and a["settings"]["model"] == str(model)
    capsys.readouterr()
    assert (
        main(
            [
                "report",
                str(tmp_path / "a.json"),
                str(tmp_path / "b.json"),
                "--names",
                "base",
                "again",
                "--plot",
                str(tmp_path / "sc.png"),
                "--json",
                str(tmp_path / "cmp.json"),
            ]
        )
        == 0
    )
    (table,) = json.loads((tmp_path / "cmp.json").read_text())["tables"]
    rows = table["rows"]
    assert [r["name"] for r in rows] == ["base", "again"] and rows[1]["values"] == rows[0]["values"]
    assert rows[0]["values"]["winomt_acc"] == a["winomt"]["average"]["accuracy"]
    assert (tmp_path / "sc-mt-tradeoff.png").stat().st_size > 3000
    assert "base " in capsys.readouterr().out
    # the run's JSON goes into a model card's model-index (`fairmt push --results a.json`): one entry per metric
    from fairmt.commands.push import load_results
    from fairmt.eval.modelcard import eval_results

    names = [e.metric_name for e in eval_results(load_results(tmp_path / "a.json"))]
    assert "WinoMT accuracy (en-de)" in names and any(n.startswith("MT-GenEval") for n in names)
    assert any("spBLEU*" in n for n in names) and not any(n.startswith("spBLEU ") for n in names)


def test_report_refuses_other_json(tmp_path, capsys):
    (tmp_path / "x.json").write_text('{"accuracy": 1}')
    assert main(["report", str(tmp_path / "x.json")]) == 2
    assert "declares no 'format'" in capsys.readouterr().err


def test_flores_without_a_sentencepiece_model_is_chrf_only(tmp_path, monkeypatch, capsys):
    import sacrebleu.utils

    from fairmt.eval.translation import SPM_ENV

    _fake_data(tmp_path / "data")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    monkeypatch.delenv(SPM_ENV, raising=False)
    monkeypatch.setattr(sacrebleu.utils, "SACREBLEU_DIR", str(tmp_path / "no-sacrebleu-cache"))
    (tmp_path / "run" / "flores").mkdir(parents=True)
    (tmp_path / "run" / "flores" / "de.txt").write_text("Der Arzt ist hier.\nWir gehen heim.\n", encoding="utf-8")
    assert (
        main(["eval", "mt-bias", "--translations-dir", str(tmp_path / "run"), "--benchmarks", "flores", "--json", "-"])
        == 0
    )
    captured = capsys.readouterr()
    r = json.loads(captured.out)
    assert r["flores"]["de"]["spbleu"] is None and r["flores"]["de"]["bleu_spm_nonstandard"] is None
    assert 0 < r["flores"]["de"]["chrfpp"] < 100 and "spBLEU not computed" in " ".join(r["skipped"])
    # a model path the user gives must exist
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--translations-dir",
                str(tmp_path / "run"),
                "--benchmarks",
                "flores",
                "--spm-model",
                str(tmp_path / "nope.model"),
            ]
        )
        == 2
    )
    assert "nope.model" in capsys.readouterr().err


def test_mt_bias_model_run_checks_data_first_and_defaults_to_a_folder_per_model(tmp_path, monkeypatch, capsys):
    """Issue 44 items 10-11: a missing benchmark (FLORES-200) stops `eval mt-bias --model` before anything is
    translated or the model loads; the default translations folder is per model (name + fingerprint), so a second
    model never meets the first one's cache; a cache of another model names ITS model and a fix that keeps it."""
    import shutil

    from fairmt.models.tiny import build_tiny_translation_model

    _fake_data(tmp_path / "data")
    shutil.rmtree(tmp_path / "data" / "flores200")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    gen = ["--lang", "de", "--num-beams", "1", "--max-new-tokens", "4"]
    assert main(["eval", "mt-bias", "--model", str(tmp_path / "no-model-yet"), *gen]) == 2
    err = capsys.readouterr().err
    assert "benchmark data missing, nothing translated: FLORES-200" in err and "--benchmarks" in err
    assert not (tmp_path / "mt-bias-translations").exists()
    # a WinoMT gender detector that cannot load (its morphology model missing) stops it at the same place
    from fairmt.eval.winomt.detectors import registry

    def no_detector(lang, compat=None):
        raise FairmtError(f"the spaCy model for {lang} is not installed")

    monkeypatch.setattr(registry, "get_detector", no_detector)
    assert main(["eval", "mt-bias", "--model", str(tmp_path / "no-model-yet"), *gen, "--benchmarks", "winomt"]) == 2
    assert "nothing translated: WinoMT de gender detector: the spaCy model for de" in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)

    a = build_tiny_translation_model(tmp_path / "a", PAIRS, arch="m2m100", d_model=16)
    assert main(["eval", "mt-bias", "--model", str(a), "--benchmarks", "geneval", *gen, "--json", "-"]) == 0
    folder = Path(json.loads(capsys.readouterr().out)["settings"]["translations_dir"])
    from fairmt.translate import model_fingerprint

    assert folder == Path("mt-bias-translations") / f"a-{model_fingerprint(translate_model(a))[:12]}"
    assert (tmp_path / folder / "geneval" / "masculine.de.txt").is_file()
    # that folder's cache met by another model: refused, naming the folder's own model and a fix that keeps it
    from fairmt.translate import read_cache

    cache = next((tmp_path / folder / ".cache").glob("*.jsonl"))
    head = json.loads(cache.read_text(encoding="utf-8").splitlines()[0])
    with pytest.raises(FairmtError) as err:
        read_cache(cache, {**head, "model": "other-model", "fingerprint": "0123456789abcdef"})
    msg = str(err.value)
    assert f"translation cache of the model {str(a)!r}" in msg and "not of 'other-model'" in msg
    assert "omit --output-dir" in msg and "delete" not in msg


def translate_model(path):
    from fairmt.models import load_translation_model

    return load_translation_model(str(path), "en", "de")
