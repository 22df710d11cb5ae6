"""Partial results and failures under one rule (issue 27): nothing to score fails before writing anything; a
``--plot`` draws what exists, says what was not drawn and why, and the command exits 0 only if everything asked for
was produced; a missing MT-GenEval contextual file gets its ``skipped:`` line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairmt.cli import main
from fairmt.eval.mtbias import FORMAT_VERSION


def _fake_geneval(root: Path) -> None:
    d = root / "mt_geneval" / "sentences" / "test"
    d.mkdir(parents=True)
    for g, pron, ref in (("masculine", "He", "Er ist Arzt."), ("feminine", "She", "Sie ist Ärztin.")):
        (d / f"geneval-sentences-{g}-test.en_de.en").write_text(f"{pron} is a doctor.\n{pron} is here.\n")
        (d / f"geneval-sentences-{g}-test.en_de.de").write_text(f"{ref}\n{ref}\n")


def _geneval_run(root: Path) -> Path:
    g = root / "geneval"
    g.mkdir(parents=True)
    (g / "masculine.de.txt").write_text("Er ist Arzt.\nEr ist hier.\n")
    (g / "feminine.de.txt").write_text("Sie ist Ärztin.\nSie ist hier.\n")
    return root


def test_mtbias_with_nothing_to_score_writes_nothing(tmp_path, capsys):
    outs = {"--json": tmp_path / "r.json", "--markdown": tmp_path / "r.md", "--plot": tmp_path / "r.png"}
    (tmp_path / "run").mkdir()
    args = [x for k, v in outs.items() for x in (k, str(v))]
    assert main(["eval", "mt-bias", "--translations-dir", str(tmp_path / "run"), *args]) == 2
    err = capsys.readouterr().err
    assert "nothing to score" in err and "nothing was written" in err
    assert not [p for p in outs.values() if p.exists()]


def test_mtbias_plot_that_cannot_be_drawn_is_said_and_exits_1(tmp_path, monkeypatch, capsys):
    """MT-GenEval only: the JSON and Markdown are written, the WinoMT plot is not, the reason is printed, exit 1."""
    _fake_geneval(tmp_path / "data")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    run = _geneval_run(tmp_path / "run")
    out, md, png = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.png"
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--translations-dir",
                str(run),
                "--lang",
                "de",
                "--benchmarks",
                "geneval",
                "--json",
                str(out),
                "--markdown",
                str(md),
                "--plot",
                str(png),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert f"plot {png} not written: no WinoMT language was scored" in err
    assert json.loads(out.read_text())["geneval"]["de"]["accuracy"] == 100.0 and md.read_text()
    assert not png.exists()
    # without --plot the same run is complete: exit 0
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--translations-dir",
                str(run),
                "--lang",
                "de",
                "--benchmarks",
                "geneval",
                "--json",
                "-",
            ]
        )
        == 0
    )


def test_missing_contextual_file_gets_a_skipped_line(tmp_path, monkeypatch, capsys):
    _fake_geneval(tmp_path / "data")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    run = _geneval_run(tmp_path / "run")
    assert (
        main(
            [
                "eval",
                "mt-bias",
                "--translations-dir",
                str(run),
                "--lang",
                "de",
                "--benchmarks",
                "geneval",
                "--json",
                "-",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert f"skipped: geneval contextual: no file for de in {run / 'geneval'}" in captured.err
    r = json.loads(captured.out)
    assert r["geneval"]["de"]["contextual_accuracy"] is None
    assert any(line.startswith("geneval contextual: no file for de") for line in r["skipped"])


def _run_json(path: Path, name: str, winomt: float | None, chrf: float | None) -> Path:
    data = {
        "format": FORMAT_VERSION,
        "settings": {"name": name},
        "winomt": {"average": {"accuracy": winomt}} if winomt is not None else {},
        "flores": {"average": {"chrfpp": chrf, "spbleu": None}} if chrf is not None else {},
    }
    path.write_text(json.dumps(data))
    return path


def test_report_plot_draws_what_exists_and_names_what_it_left_out(tmp_path, capsys):
    a = _run_json(tmp_path / "a.json", "a", 60.0, 40.0)
    b = _run_json(tmp_path / "b.json", "b", None, 42.0)
    png, out = tmp_path / "sc.png", tmp_path / "cmp.json"
    assert main(["report", str(a), str(b), "--plot", str(png), "--json", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"plot {png}: not drawn: b: no WinoMT Acc." in err
    drawn = tmp_path / "sc-mt-tradeoff.png"  # one figure per family and kind, named after --plot
    assert drawn.stat().st_size > 0 and len(json.loads(out.read_text())["tables"][0]["rows"]) == 2
    # nothing drawable at all: no figure, the reason, exit 1; the table is still printed
    assert main(["report", str(b), "--plot", str(tmp_path / "none.png")]) == 1
    captured = capsys.readouterr()
    assert "plot " in captured.err and "not written: no table has a row with both trade-off measures" in captured.err
    assert "\nb " in captured.out and not list(tmp_path.glob("none*.png"))
    assert main(["report", str(a), "--plot", str(tmp_path / "ok.png")]) == 0
    assert (tmp_path / "ok-mt-tradeoff.png").is_file()


def test_bar_chart_leaves_undefined_values_out_and_lists_them(tmp_path):
    from fairmt.eval.report import NothingToPlot, bar_chart, draw_plot

    rows = [{"lang": "de", "accuracy": 60.0, "delta_g": 5.0}, {"lang": "fr", "accuracy": 55.0, "delta_g": None}]
    missing = bar_chart(rows, "lang", ["accuracy", "delta_g"], tmp_path / "b.png")
    assert missing == ["delta_g for fr: undefined (no value)"] and (tmp_path / "b.png").stat().st_size > 0
    with pytest.raises(NothingToPlot):
        bar_chart([], "lang", ["accuracy"], tmp_path / "c.png")
    assert draw_plot(tmp_path / "d.png", lambda: bar_chart(rows[:1], "lang", ["accuracy"], tmp_path / "d.png"))
    assert not draw_plot(tmp_path / "e.png", lambda: bar_chart([], "lang", ["accuracy"], tmp_path / "e.png"))


@pytest.mark.data
def test_winomt_plot_is_drawn_with_json_on_stdout(shared_data, tmp_path, monkeypatch, capsys):
    """`--json -` used to return before the plot: asked for, silently not written. Now every output asked is written."""
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    tr = shared_data / "winomt/translations/google/en-he.txt"
    png = tmp_path / "r.png"
    assert (
        main(
            [
                "eval",
                "winomt",
                "--lang",
                "he",
                "--translations",
                str(tr),
                "--compat",
                "acl2019",
                "--json",
                "-",
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n"] == 3888  # stdout is the JSON alone
    assert png.stat().st_size > 1000 and f"wrote plot to {png}" in captured.err
