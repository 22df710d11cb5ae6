"""One call each from Python, returning what the command writes: fairmt.evaluate_mt_bias, fairmt.translate
(fairmt.evaluate_embeddings: tests/eval/test_integrations.py, on the real MiniLM)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_mtbias import PAIRS, _fake_data  # beside this file

import procs
from fairmt.cli import main


def test_import_fairmt_stays_light_and_names_the_one_call_functions():
    code = (
        "import sys, fairmt; names = [fairmt.evaluate_embeddings, fairmt.evaluate_mt_bias, fairmt.translate]; "
        "print(callable(fairmt.translate), [m for m in ('torch', 'transformers') if m in sys.modules])"
    )
    out = procs.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[0] == "True []"


def test_evaluate_mt_bias_and_translate_give_what_the_command_writes(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    import fairmt
    from fairmt.errors import FairmtError
    from fairmt.models.tiny import build_tiny_translation_model

    model = build_tiny_translation_model(tmp_path / "m2m", PAIRS, arch="m2m100", d_model=32)
    _fake_data(tmp_path / "data")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    run = tmp_path / "run"
    gen = ["--num-beams", "2", "--max-new-tokens", "8"]
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--model",
                str(model),
                "--output-dir",
                str(run),
                "--lang",
                "de",
                *gen,
                "--json",
                str(tmp_path / "cli.json"),
            ]
        )
        == 0
    )
    cli = json.loads((tmp_path / "cli.json").read_text())
    capsys.readouterr()

    py = fairmt.evaluate_mt_bias(str(model), langs="de", output_dir=tmp_path / "py", num_beams=2, max_new_tokens=8)
    again = fairmt.evaluate_mt_bias(translations_dir=run, langs=["de"])
    for bench in ("winomt", "geneval", "flores"):
        assert py[bench] == cli[bench] and again[bench] == cli[bench], bench
    assert py["settings"]["model"] == cli["settings"]["model"] == str(model)
    assert py["settings"]["backend"] == "hf" and again["settings"]["backend"] is None
    assert capsys.readouterr().out == ""  # no tables printed from Python
    with pytest.raises(FairmtError, match="one of them"):
        fairmt.evaluate_mt_bias(str(model), translations_dir=run)
    with pytest.raises(FairmtError, match="unknown target language"):
        fairmt.evaluate_mt_bias(translations_dir=run, langs="xx")

    masculine = (
        (tmp_path / "data" / "mt_geneval" / "sentences" / "test" / "geneval-sentences-masculine-test.en_de.en")
        .read_text()
        .splitlines()
    )
    ours = fairmt.translate(str(model), masculine, "en", "de", num_beams=2, max_new_tokens=8)
    assert ours == (run / "geneval" / "masculine.de.txt").read_text().splitlines()
    assert fairmt.translate(str(model), masculine[0], "en", "de", num_beams=2, max_new_tokens=8) == ours[0]


def test_evaluate_mt_bias_from_python_writes_nothing_into_the_current_folder_unasked(tmp_path, monkeypatch):
    """Issue 52: without output_dir the translations (and their cache) go under $FAIRMT_CACHE/mt-bias-translations,
    not ./mt-bias-translations; an empty langs is refused, not widened to every language."""
    import fairmt
    from fairmt.errors import FairmtError
    from fairmt.model_eval import benchmarks

    seen = {}

    def stop(translator, root, **kw):
        seen["root"] = Path(root)
        raise FairmtError("stopped before translating")

    class Echo:
        model_name = "echo"

        def fingerprint(self):
            return "0123456789abcdef"

    monkeypatch.setattr(benchmarks, "plan_suite", lambda *a, **k: None)
    monkeypatch.setattr(benchmarks, "translate_suite", stop)
    monkeypatch.setattr("fairmt.translate.as_translator", lambda *a, **k: Echo())
    monkeypatch.setenv("FAIRMT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FairmtError, match="stopped before translating"):
        fairmt.evaluate_mt_bias("some-model", langs="de", benchmarks="geneval")
    assert seen["root"] == tmp_path / "cache" / "mt-bias-translations" / "echo-0123456789ab"
    assert not (tmp_path / "mt-bias-translations").exists()
    for empty in ([], "", ()):
        with pytest.raises(FairmtError, match="langs is empty"):
            fairmt.evaluate_mt_bias(translations_dir=tmp_path, langs=empty)
