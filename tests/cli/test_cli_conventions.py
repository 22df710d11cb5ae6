"""One convention for every `fairmt eval` command (issue 18), tested over all of them in one parametrised test:

* `--json -` prints the JSON result alone on stdout (parseable as a whole); `--json FILE` writes the same JSON to
  the file and prints the human-readable table on stdout;
* `--lang` (where a command has it) takes `de`, `de,X`, `de X` and `all` alike;
* every option with a default says it in `--help`;
* classification reports rates in percent, as every other evaluator.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_inputs import build_work

from fairmt.cli import build_parser, main


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    w = build_work(tmp_path_factory.mktemp("conventions"))
    (w / "p.jsonl").write_text(
        "".join(json.dumps({"label": i % 2, "pred": (i // 2) % 2, "group": (i // 3) % 2}) + "\n" for i in range(12)),
        encoding="utf-8",
    )
    return w


COMMANDS = {
    "winomt": lambda w: [
        "eval",
        "winomt",
        "--lang",
        "de",
        "--translations",
        str(w / "translations.txt"),
        "--gold",
        str(w / "gold.txt"),
    ],
    "geneval": lambda w: [
        "eval",
        "geneval",
        "--lang",
        "de",
        "--masculine",
        str(w / "masculine.de"),
        "--feminine",
        str(w / "feminine.de"),
    ],
    "flores": lambda w: [
        "eval",
        "flores",
        "--lang-pair",
        "eng_Latn-deu_Latn",
        "--hypotheses",
        str(w / "hyp.de"),
        "--spm-model",
        str(w / "spm.model"),
    ],
    "classification": lambda w: ["eval", "classification", "--predictions", str(w / "p.jsonl")],
    "stereoset": lambda w: [
        "eval",
        "stereoset",
        "--predictions",
        str(w / "pred.json"),
        "--gold",
        str(w / "gold.jsonl"),
    ],
    "embeddings": lambda w: [
        "eval",
        "embeddings",
        "--model",
        str(w / "mlm"),
        "--suite",
        "bias_ir,cced",
        "--cced-tuples",
        str(w / "tuples.jsonl"),
        "--bias-ir-dir",
        str(w / "bias_ir"),
        "--no-progress",
    ],
    "mt-bias": lambda w: [
        "eval",
        "mt-bias",
        "--translations-dir",
        str(w / "mtb"),
        "--gold",
        str(w / "gold.txt"),
        "--benchmarks",
        "winomt",
        "--lang",
        "de",
    ],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_json_dash_prints_json_only_and_file_gets_the_same(name, work, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(work / "data"))
    if name == "embeddings":
        from test_hostile_inputs import _bias_ir_docs, _bias_ir_queries, _tuples

        (work / "bias_ir").mkdir(exist_ok=True)
        (work / "bias_ir" / "queries.csv").write_bytes(_bias_ir_queries())
        (work / "bias_ir" / "queries-documents_1.csv").write_bytes(_bias_ir_docs())
        (work / "tuples.jsonl").write_bytes(_tuples())
    argv = COMMANDS[name](work)
    assert main([*argv, "--json", "-"]) == 0
    out = capsys.readouterr().out
    printed = json.loads(out)  # the whole stdout is one JSON document
    assert main([*argv, "--json", str(tmp_path / "r.json")]) == 0
    table = capsys.readouterr().out
    written = json.loads((tmp_path / "r.json").read_text())
    strip = lambda d: json.loads(json.dumps(d).replace(str(tmp_path), "<tmp>"))  # noqa: E731
    assert strip(written) == strip(printed)
    assert table.strip() and not table.lstrip().startswith("{"), "with --json FILE the table is printed"
    if name in ("embeddings", "classification", "mt-bias", "winomt", "geneval", "flores"):
        # every result JSON fairmt writes goes into a model card (`fairmt push --results`)
        from fairmt.commands.push import load_results
        from fairmt.eval.modelcard import build_model_card, eval_results

        entries = eval_results(load_results(tmp_path / "r.json"))
        assert entries and all(e.metric_value is not None for e in entries)
        card = str(build_model_card(load_results(tmp_path / "r.json"), model_name="m"))
        assert "model-index" in card and "limitations" in card


@pytest.mark.parametrize("spelling", [["de"], ["de,fr"], ["de", "fr"], ["all"]])
def test_lang_forms(spelling, work, capsys, monkeypatch):
    """`--lang` takes the same forms in winomt and geneval (geneval: only de has data here, so de,fr / all end in a
    clear missing-data error for fr, never in 'unknown language')."""
    monkeypatch.setenv("FAIRMT_DATA", str(work / "data"))
    rc = main(
        [
            "eval",
            "geneval",
            "--lang",
            *spelling,
            "--masculine",
            str(work / "masculine.{lang}"),
            "--feminine",
            str(work / "feminine.{lang}"),
            "--json",
            "-",
        ]
    )
    err = capsys.readouterr().err
    assert "unknown" not in err
    assert rc == (0 if spelling == ["de"] else 2)
    ns = build_parser().parse_args(["eval", "winomt", "--lang", *spelling, "--translations", "x"])
    from fairmt.commands.eval_winomt import _languages

    langs = _languages(",".join(ns.lang), None)
    assert langs[0] in ("de", "ar") and (len(langs) > 2 if spelling == ["all"] else langs == ["de", "fr"][: len(langs)])


def test_every_default_is_in_the_help():
    import argparse

    parser = build_parser()
    missing = []

    def walk(p, prefix):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for n, sub in a.choices.items():
                    walk(sub, f"{prefix} {n}")
            elif (
                a.option_strings
                and a.default not in (None, False, argparse.SUPPRESS, [])
                and a.help != argparse.SUPPRESS
            ):
                if "default" not in (a.help or "").lower():
                    missing.append(f"{prefix} {a.option_strings[0]}")

    walk(parser, "fairmt")
    assert not missing, missing
