"""`fairmt report` over every result fairmt writes (issue 40): declared formats, per-family tables, mean ± std over
seeds, refusal of unlike signatures (then marks with --allow-mixed), several sweeps on one table and figure,
Markdown/JSON/LaTeX/HTML/plots.

The recipe results in ``tests/fixtures/report/`` were written by the real recipes (see its README); the eval results
are written here by the real ``fairmt eval`` commands, and the sweeps by the real sweep engine and report."""

from __future__ import annotations

import json
import random
import re
import shutil
import statistics
from pathlib import Path

import pytest

import needs
from fairmt.cli import main

FIX = Path(__file__).parents[1] / "fixtures" / "report"
CLS = ["classification_adversarial_results.json", "classification_fcl_results.json", "classification_inlp_results.json"]


def _fixture(name: str) -> dict:
    return json.loads((FIX / name).read_text(encoding="utf-8"))


def _eval_classification(tmp_path: Path, name: str, *extra: str, seed: int = 0) -> Path:
    """``fairmt eval classification --json`` on 60 predictions of two classes and two groups (no leakage probes)."""
    rng = random.Random(seed)
    preds = tmp_path / f"{name}.jsonl"
    with preds.open("w") as fh:
        for i in range(60):
            y, g = i % 2, (i // 2) % 2
            p = y if rng.random() < (0.8 if g == 0 else 0.6) else 1 - y
            fh.write(json.dumps({"label": y, "pred": p, "group": g}) + "\n")
    out = tmp_path / f"{name}.json"
    assert (
        main(["eval", "classification", "--predictions", str(preds), "--no-leakage", "--json", str(out), *extra]) == 0
    )
    return out


def _mt_bias(name: str, *, compat=None, acc=(60.0, 55.0)) -> dict:
    """An `eval mt-bias` result of the documented layout (format 1): WinoMT de and fr."""
    per = {
        lang: {
            "accuracy": a,
            "delta_g_acc": 10.0 - i,
            "delta_s": 5.0 + i,
            "signature": f"winomt|v:1|lang:{lang}|compat:{compat or 'none'}|fairmt:0.1",
        }
        for i, (lang, a) in enumerate(zip(("de", "fr"), acc))
    }
    return {
        "format": 1,
        "settings": {"name": name, "compat": compat, "split": "test", "id_lang": "de"},
        "winomt": {**per, "average": {"accuracy": sum(acc) / 2}},
        "flores": {
            "de": {
                "spbleu": 30.0 + acc[0] / 10,
                "chrfpp": 55.0,
                "chrf_signature": "nrefs:1|chrF2++",
                "bleu_signature": "nrefs:1|tok:flores200",
            }
        },
    }


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------ formats
def test_every_fixture_and_eval_writer_declares_a_known_format(tmp_path):
    from fairmt.eval.reporting import formats, read_runs

    for p in sorted(FIX.glob("*.json")):
        fmt = _fixture(p.name)["format"]
        assert fmt in formats.ALL or (fmt == formats.MT_BIAS and p.name.startswith("mtbias")), p.name
        assert read_runs(p), p.name
    data = json.loads(_eval_classification(tmp_path, "a").read_text())
    assert data["format"] == formats.CLASSIFICATION and data["scale"] == "percent"


@pytest.mark.parametrize(
    "data,expected",
    [
        ({"accuracy": 1}, "declares no 'format'"),
        (
            {"format": "fairmt-nothing/9", "accuracy": 1},
            "declares format 'fairmt-nothing/9', which this fairmt does not",
        ),
        ({"format": 99, "winomt": {}}, "declares format 99"),
    ],
)
def test_unknown_file_is_refused_in_one_line(tmp_path, capsys, data, expected):
    assert main(["report", str(_write(tmp_path / "x.json", data))]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "path,value,expected",
    [
        (("test", "accuracy"), "high", "'test.accuracy' is 'high' (str), not a number"),
        (("test", "gap"), [1, 2], "'test.gap' is [1, 2] (list), not a number"),
        (("test", "leakage_h"), True, "'test.leakage_h' is True (bool), not a number"),
        (("test",), "all good", "'test' must be an object, got str"),
    ],
)
def test_a_value_of_the_wrong_type_is_one_line_not_a_traceback(tmp_path, capsys, path, value, expected):
    data = _fixture(CLS[1])
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    assert main(["report", str(_write(tmp_path / "bad.json", data))]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1


def test_sweep_json_with_a_string_mean_is_one_line(sweeps, tmp_path, capsys):
    sweep = sweeps[0]
    data = json.loads(sweep.read_text())
    data["settings"][0]["mean"]["test.accuracy"] = "n/a"
    assert main(["report", str(_write(tmp_path / "s.json", data))]) == 2
    assert "'settings.0.mean.test.accuracy' is 'n/a' (str), not a number" in capsys.readouterr().err


def test_a_sweep_is_read_by_its_runs_results_reader_and_an_older_sweep_json_by_its_layout(sweeps, capsys):
    """sweep.json names its runs' results format (the family's): a setting's means are read by that format's reader,
    the one a single run is read with; a sweep.json written before it named one is told by its layout, alike."""
    from fairmt.eval.reporting import formats, read_runs

    fcl = sweeps[0]
    data = json.loads(fcl.read_text())
    assert data["results_format"] == formats.CLASSIFICATION_RESULTS
    older = fcl.parent / "sweep_without_results_format.json"  # beside it: the runs' signatures are found alike
    try:
        rows = read_runs(_write(older, {k: v for k, v in data.items() if k != "results_format"}))
        shown = [(r.name, r.family, r.values, r.std, r.scale, r.signatures) for r in read_runs(fcl)]
        assert [(r.name, r.family, r.values, r.std, r.scale, r.signatures) for r in rows] == shown
        assert shown[0][1] == "classification" and shown[0][2]["gap"] > 0 and shown[0][3]["gap"] >= 0
        assert main(["report", str(_write(older, {**data, "results_format": "fairmt-nope/1"}))]) == 2
        assert "results_format 'fairmt-nope/1' is not a results format fairmt report reads" in capsys.readouterr().err
    finally:
        older.unlink()


# ------------------------------------------------------------------------------------------------ tables
def test_classification_table_is_shen_table_1_with_tradeoff_over_the_rows(tmp_path):
    from fairmt.eval.classification import tradeoff_scores
    from fairmt.eval.reporting import build_tables, read_runs

    runs = [r for n in CLS for r in read_runs(FIX / n)]
    (t,) = build_tables(runs)
    assert [r.method for r in t.rows] == ["adversarial", "fcl", "inlp"] and t.scale == "percent"
    groups = [m.group for m in t.columns]
    assert groups[:2] == ["Performance", "Performance"] and "Leakage" in groups and groups[-1] == "Trade-off"
    head = {m.key: t.header(m) for m in t.columns}
    assert head["accuracy"] == "Acc. ↑ (%)" and head["gap"] == "GAP ↓ (%)" and head["leakage_yhat"] == "leakage@ŷ ↓ (%)"
    tests = [_fixture(n)["test"] for n in CLS]
    for row, test, n in zip(t.rows, tests, CLS):
        for k in ("accuracy", "gap", "leakage_h", "leakage_yhat"):
            assert row.values[k] == test[k]
        # issue 53: ΔEO summed over the 28 Bios classes (several hundred points) is shown per class, named so
        assert test["eo_classes"] == "all" and _fixture(n)["test_full"]["n_classes"] == 28
        assert row.values["delta_eo"] == pytest.approx(test["delta_eo"] / 28)
    assert head["delta_eo"] == "ΔEO/class ↓ (%)" and any(x.startswith("ΔEO/class: ") for x in t.notes)
    want = tradeoff_scores(*[[x[k] / 100 for x in tests] for k in ("accuracy", "gap", "leakage_h", "leakage_yhat")])
    assert [r.values["tradeoff"] for r in t.rows] == pytest.approx(want)
    best = t.best()
    acc = [x["accuracy"] for x in tests]
    assert best["accuracy"] == {acc.index(max(acc))}
    gap = [x["gap"] for x in tests]
    assert best["gap"] == {gap.index(min(gap))}


def test_runs_of_one_name_are_a_mean_and_sample_std_with_digits_from_the_spread(tmp_path):
    from fairmt.eval.reporting import build_tables, read_runs
    from fairmt.eval.reporting.tables import digits_for

    paths = []
    for seed, acc in enumerate((70.0, 71.5, 73.25)):
        d = _fixture(CLS[1])
        d["test"]["accuracy"], d["seed"] = acc, seed
        paths.append(_write(tmp_path / f"fcl{seed}.json", d))
    runs = [r for p in paths for r in read_runs(p, "fcl")]
    (t,) = build_tables(runs)
    (row,) = t.rows
    assert row.n == 3 and row.values["accuracy"] == pytest.approx(statistics.fmean([70.0, 71.5, 73.25]))
    assert row.std["accuracy"] == pytest.approx(statistics.stdev([70.0, 71.5, 73.25]))
    acc = next(m for m in t.columns if m.key == "accuracy")
    assert t.cell(0, acc) == f"{row.values['accuracy']:.1f} ± {row.std['accuracy']:.1f}"  # std 1.63 → 1 decimal
    assert [digits_for(s, 3) for s in (0.23, 0.71, 1.7, 4.2, 12.0, 0.012, None, 0.0)] == [2, 1, 1, 0, 0, 3, 3, 3]
    assert row.std.get("gap") == 0.0 and t.cell(0, next(m for m in t.columns if m.key == "gap")).endswith("± 0.00")


def test_files_whose_folders_end_alike_are_not_averaged_without_names(tmp_path, capsys):
    """A sweep's trials/s1/seed-0/run/results.json and trials/s2/seed-0/run/results.json share a default name: each
    row is told apart by the folder that differs (s1, s2), not averaged into one; --names still averages on purpose."""
    paths = []
    for setting, acc in (("s1", 70.0), ("s2", 75.0)):
        d = _fixture(CLS[1])
        d["test"]["accuracy"] = acc
        (tmp_path / "trials" / setting / "seed-0" / "run").mkdir(parents=True)
        paths.append(_write(tmp_path / "trials" / setting / "seed-0" / "run" / "results.json", d))
    assert main(["report", *map(str, paths), "--json", "-"]) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert [(r["name"].rsplit(" ", 1)[-1], r["n"], r["values"]["accuracy"]) for r in table["rows"]] == [
        ("[s1]", 1, 70.0),
        ("[s2]", 1, 75.0),
    ]
    assert main(["report", *map(str, paths), "--names", "x", "x", "--json", "-"]) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert [(r["name"], r["n"]) for r in table["rows"]] == [("x", 2)]


def test_fractions_are_converted_when_they_share_a_table_with_percent(tmp_path):
    from fairmt.eval.reporting import build_tables, read_runs

    pct = read_runs(_eval_classification(tmp_path, "pct"), "pct")[0]
    frac = read_runs(_eval_classification(tmp_path, "frac", seed=1), "frac")[0]
    frac.scale = "fraction"
    frac.values = {k: (v / 100 if k != "tradeoff" else v) for k, v in frac.values.items()}
    want = dict(frac.values)
    (t,) = build_tables([pct, frac])
    assert t.scale == "percent" and t.rows[1].values["accuracy"] == pytest.approx(100 * want["accuracy"])
    assert any("fractions and shown in percent here: frac" in n for n in t.notes)
    # a table of fraction runs only stays in fractions, as the paper prints them (the probes' family)
    (p,) = build_tables(read_runs(FIX / "sampling_fair_results.json"))
    assert p.scale == "fraction" and all(
        t_.header(m).endswith("(fraction)") for t_ in [p] for m in p.columns if m.kind == "rate"
    )


def test_before_after_and_stage_rows_of_the_recipes():
    from fairmt.eval.reporting import read_runs

    dpce = _fixture("dpce_results.json")
    before, after = read_runs(FIX / "dpce_results.json", "dpce")
    assert (before.name, after.name) == ("dpce (before)", "dpce")
    assert (
        before.values["cced_gap"] == dpce["before"]["cced"]["gap"]
        and after.values["cced_gap"] == dpce["after"]["cced"]["gap"]
    )
    s1, s2 = read_runs(FIX / "sampling_fair_results.json", "fair")
    fair = _fixture("sampling_fair_results.json")
    target = next(iter(fair["stages"]["stage2"]["probe"]))
    assert s2.values[f"probe:{target}:gap"] == fair["stages"]["stage2"]["probe"][target]["fairness"]["gap"]
    assert s1.values["cluster_dominance_ratio"] == fair["stages"]["stage1"]["subgroups"]["cluster_dominance_ratio"]


# ------------------------------------------------------------------------------------------------ issue 53
def _md_table(text: str, first: str) -> list[list[str]]:
    """The Markdown table that starts at the line beginning with ``first``, as cells (``\\|`` kept inside one)."""
    lines = text.splitlines()
    i = next(k for k, x in enumerate(lines) if x.startswith(first))
    rows = []
    for x in lines[i:]:
        if not x.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", x.strip()[1:-1])])
    return rows


def _pdflatex(tex: Path) -> None:
    import subprocess

    needs.require("pdflatex", who="the LaTeX compile (the other formats were checked)")
    proc = subprocess.run(
        [needs.program("pdflatex"), "-interaction=nonstopmode", "-halt-on-error", tex.name],
        cwd=tex.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_two_tiny_offline_runs_make_a_report_with_columns_numbers_and_latex_that_compiles(tmp_path, capsys):
    """The first recipe's results (``gacl_tiny_results.json``: the shipped ``gacl/tiny_offline``, run by
    tests/recipes/test_demo.py) in two run folders: the report has the held-out gender columns (original and trained rows)
    and the eval loss, a well-formed Markdown table, and LaTeX that pdflatex compiles (issue 53: "Scale: ." and no
    columns before)."""
    res = _fixture("gacl_tiny_results.json")
    runs = []
    for name in ("seed-0", "seed-1"):
        (tmp_path / name / "gacl").mkdir(parents=True)
        runs.append(shutil.copy(FIX / "gacl_tiny_results.json", tmp_path / name / "gacl" / "results.json"))
    md, tex = tmp_path / "r.md", tmp_path / "r.tex"
    assert (
        main(
            [
                "report",
                *map(str, runs),
                "--markdown",
                str(md),
                "--latex",
                str(tex),
                "--latex-standalone",
                "--html",
                str(tmp_path / "r.html"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Scale: ." not in out and "Held-out demo sentences" in out and "gender acc. ↑ (%)" in out
    after, before = res["held_out_gender"]["after"], res["held_out_gender"]["before"]
    table = _md_table(md.read_text(), "| run |")
    assert len({len(r) for r in table}) == 1 and len(table) == 2 + 4  # header, rule, 2 × (original, trained)
    head = table[0]
    rows = {r[0].replace("\\[", "[").replace("\\]", "]"): dict(zip(head, r)) for r in table[2:]}  # names escaped
    assert set(rows) == {"gacl (original) [seed-0]", "gacl [seed-0]", "gacl (original) [seed-1]", "gacl [seed-1]"}
    trained, original = rows["gacl [seed-0]"], rows["gacl (original) [seed-0]"]
    chrf = "Held-out demo sentences: chrF++ ↑ (0–100)"
    assert (
        trained[chrf].strip("*") == f"{after['chrf++']:.1f}" and original[chrf].strip("*") == f"{before['chrf++']:.1f}"
    )
    assert trained["Training: eval loss ↓"].strip("*") == f"{res['dev']['loss']:.3f}"
    assert original["Training: eval loss ↓"] == "–"  # the original has no eval loss of this run
    assert out.count("Paired bootstrap") == 1 and "no row carries per-sentence data" in out
    _pdflatex(tex)


def test_a_result_with_no_measure_is_one_line_not_an_empty_table(tmp_path, capsys):
    data = _fixture("gacl_tiny_results.json")
    del data["held_out_gender"], data["dev"]["loss"]
    data["dev"] = {"gc_batches": 2.0}
    assert main(["report", str(_write(tmp_path / "results.json", data))]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no held-out measure" in err


def _gacl_sweep(tmp_path: Path) -> Path:
    """A real ``fairmt sweep`` (engine + report) of ``gacl/tiny_offline`` over λ whose runs are stood in for by the
    recipe's real results.json, its held-out gender accuracy and eval loss as functions of λ and the seed."""
    from fairmt.sweep.engine import run_sweep
    from fairmt.sweep.report import write_report
    from fairmt.sweep.spec import build_spec

    base = _fixture("gacl_tiny_results.json")

    def runner(cmd: list[str], log: Path) -> int:
        over = dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))
        lam, seed = float(over["training.gacl_lambda"]), int(over["training.seed"])
        out = Path(json.loads(over["training.output_dir"]))
        out.mkdir(parents=True, exist_ok=True)
        d = json.loads(json.dumps(base))
        d["held_out_gender"]["after"]["accuracy"] = 50.0 + 10 * lam + seed
        d["dev"]["loss"] = 4.0 + lam / 10
        (out / "results.json").write_text(json.dumps(d))
        log.write_text("ok\n")
        return 0

    spec = build_spec(
        "gacl/tiny_offline",
        [],
        ["training.gacl_lambda=0.0,1.0"],
        [],
        "0,1",
        ["dev.loss:min"],
        output_dir=str(tmp_path / "sweep_gacl"),
    )
    assert run_sweep(spec, runner=runner, echo=lambda line: None).complete
    write_report(spec.output_dir, spec)
    return Path(spec.output_dir) / "sweep.json"


def test_a_sweep_of_the_tiny_recipe_reports_its_held_out_numbers_and_original(tmp_path, capsys):
    pytest.importorskip("optuna")
    from fairmt.commands.train import load_recipe
    from fairmt.eval.reporting import build_tables, read_runs
    from fairmt.sweep.results import flatten, matches, metric_patterns

    patterns = metric_patterns("gacl", load_recipe("gacl/tiny_offline"))  # `--objective held_out_gender.…` is known
    assert all(matches(k, patterns) for k in flatten(_fixture("gacl_tiny_results.json")))
    sweep = _gacl_sweep(tmp_path)
    (t,) = build_tables(read_runs(sweep))
    names = [r.name for r in t.rows]
    assert names == ["tiny_offline (original)", "tiny_offline λ=0", "tiny_offline λ=1"]
    assert t.rows[1].values["heldout_acc"] == pytest.approx(50.5) and t.rows[1].std["heldout_acc"] > 0
    assert t.rows[2].values["eval_loss"] == pytest.approx(4.1)
    before = _fixture("gacl_tiny_results.json")["held_out_gender"]["before"]
    assert t.rows[0].values["heldout_chrfpp"] == pytest.approx(before["chrf++"])
    tex = tmp_path / "s.tex"
    assert main(["report", str(sweep), "--latex", str(tex), "--latex-standalone"]) == 0
    assert "Scale: ." not in capsys.readouterr().out
    _pdflatex(tex)


def test_tradeoff_of_two_sweeps_is_recomputed_over_the_rows_shown(sweeps):
    """Each sweep's sweep.json carries Shen et al.'s Tradeoff normalised over its own settings; side by side, the
    column is recomputed over the rows of the table (its footnote says "over the rows of this table")."""
    pytest.importorskip("optuna")
    from fairmt.eval.classification import tradeoff_scores
    from fairmt.eval.reporting import build_tables, read_runs

    fcl, adv = sweeps
    own = [s["mean"]["test.tradeoff"] for p in (fcl, adv) for s in json.loads(p.read_text())["settings"]]
    assert "the sum over the 28 classes" in (fcl.parent / "sweep.md").read_text()  # ΔEO named in sweep.md
    (t,) = build_tables(read_runs(fcl) + read_runs(adv))
    want = tradeoff_scores(
        *[[r.values[k] / 100 for r in t.rows] for k in ("accuracy", "gap", "leakage_h", "leakage_yhat")]
    )
    got = [r.values["tradeoff"] for r in t.rows]
    assert got == pytest.approx(want) and got != pytest.approx(own)  # the sweeps' own would not be the rows'
    assert all("tradeoff" not in r.std for r in t.rows)
    shown = build_tables(read_runs(fcl)[:1])  # one row: nothing to normalise over, no column, a line says why
    assert "tradeoff" not in shown[0].rows[0].values and any(n.startswith("Tradeoff not shown") for n in shown[0].notes)


# ------------------------------------------------------------------------------------------------ signatures
def test_unlike_delta_eo_conventions_are_refused_then_marked(tmp_path, capsys):
    a = _eval_classification(tmp_path, "positive")
    b = _eval_classification(tmp_path, "all", "--eo-classes", "all")
    capsys.readouterr()
    assert main(["report", str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "all was scored differently from positive" in err and "--allow-mixed" in err
    md = tmp_path / "r.md"
    assert main(["report", str(a), str(b), "--allow-mixed", "--markdown", str(md)]) == 0
    text = md.read_text()
    header = next(x for x in text.splitlines() if x.startswith("| run |"))
    cols = [c.strip() for c in header.strip("|").split(" | ")]
    row = dict(
        zip(
            cols,
            [c.strip() for c in next(x for x in text.splitlines() if x.startswith("| all |")).strip("|").split(" | ")],
        )
    )
    assert row["Fairness: ΔEO/class ↓ (%)"].endswith("†") and "†" not in row["Performance: Acc. ↑ (%)"]
    assert "delta\\_eo is `all`, positive's is `positive`" in text and "not comparable" in text  # code spans kept


def test_mt_compat_mode_is_refused_then_marked(tmp_path, capsys):
    a = _write(tmp_path / "a.json", _mt_bias("default"))
    b = _write(tmp_path / "b.json", _mt_bias("acl2019", compat="acl2019"))
    assert main(["report", str(a), str(b)]) == 2
    assert "acl2019 was scored differently from default" in capsys.readouterr().err
    out = tmp_path / "r.json"
    assert main(["report", str(a), str(b), "--allow-mixed", "--json", str(out)]) == 0
    (table,) = json.loads(out.read_text())["tables"]
    row = table["rows"][1]
    assert {d["key"] for d in row["differs"]} >= {"settings:compat", "winomt:de", "winomt:fr"}
    assert "winomt_acc" in row["marked"] and "bleu" not in row["marked"]  # compat touches WinoMT only
    # the fairmt version inside a signature is not a difference
    c = _mt_bias("again")
    c["winomt"]["de"]["signature"] = c["winomt"]["de"]["signature"].replace("fairmt:0.1", "fairmt:9.9")
    assert main(["report", str(a), str(_write(tmp_path / "c.json", c))]) == 0


def test_embedding_pooling_is_refused_between_an_eval_and_a_recipe(tmp_path, capsys):
    emb = _fixture("dpce_results.json")["after"]
    data = {
        "format": "fairmt-embeddings/1",
        "model": "x",
        "suites": ["cced"],
        "pooling": "model",
        "cced": dict(emb["cced"], signature=emb["cced"]["signature"].replace("pool:mean+l2", "pool:model")),
    }
    ev = _write(tmp_path / "eval.json", data)
    assert main(["report", str(FIX / "dpce_results.json"), str(ev)]) == 2
    assert "cced is 'CCED|groups:male+female|dist:l2|norm:none|pool:model" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ sweeps
def _classification_sweep(tmp_path: Path, objective: str, key: str, values: list[float], seeds: str = "0,1") -> Path:
    """A real ``fairmt sweep`` (engine + report) of a classification recipe whose runs are stood in for by the
    recipe's real results.json (the fixture) with accuracy and GAP as functions of the setting and the seed."""
    from fairmt.sweep.engine import run_sweep
    from fairmt.sweep.report import write_report
    from fairmt.sweep.spec import build_spec

    base = _fixture(f"classification_{objective}_results.json")

    def runner(cmd: list[str], log: Path) -> int:
        over = dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))
        v, seed = float(over[key]), int(over["seed"])
        out = Path(json.loads(over["output_dir"]))
        out.mkdir(parents=True, exist_ok=True)
        d = json.loads(json.dumps(base))
        for split in ("dev", "test"):
            d[split]["accuracy"] = 80.0 - 10 * v + seed
            d[split]["gap"] = 20.0 - 15 * v + 0.5 * seed
        (out / "results.json").write_text(json.dumps(d))
        log.write_text("ok\n")
        return 0

    spec = build_spec(
        f"classification/{objective}",
        [],
        [f"{key}={','.join(map(str, values))}"],
        [],
        seeds,
        [],
        output_dir=str(tmp_path / f"sweep_{objective}"),
    )
    assert run_sweep(spec, runner=runner, echo=lambda line: None).complete
    write_report(spec.output_dir, spec)
    return Path(spec.output_dir) / "sweep.json"


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """The fcl (β 0.1, 0.3) and adversarial (λ 0.5, 1.0) sweeps, run once for the module (the tests only read them):
    the paths of their sweep.json."""
    pytest.importorskip("optuna")
    tmp_path = tmp_path_factory.mktemp("sweeps")
    fcl = _classification_sweep(tmp_path, "fcl", "objective_args.fcl_beta", [0.1, 0.3])
    adv = _classification_sweep(tmp_path, "adversarial", "objective_args.adv_lambda", [0.5, 1.0])
    return fcl, adv


def test_several_sweeps_make_one_table_and_one_tradeoff_figure_labelled_by_values(sweeps):
    pytest.importorskip("optuna")
    from fairmt.eval.reporting import build_tables, read_runs
    from fairmt.eval.reporting.render import figures

    fcl, adv = sweeps
    runs = read_runs(fcl) + read_runs(adv)
    (t,) = build_tables(runs)
    assert [r.name for r in t.rows] == ["fcl β=0.1", "fcl β=0.3", "adversarial λ=0.5", "adversarial λ=1"]
    r0 = t.rows[0]
    assert r0.n == 2 and r0.values["accuracy"] == pytest.approx(80 - 1 + 0.5)
    assert r0.std["accuracy"] == pytest.approx(statistics.stdev([79.0, 80.0]))
    assert t.cell(0, next(m for m in t.columns if m.key == "accuracy")) == "79.5 ± 0.7"
    assert r0.signatures["cls:version"] == "v1" and r0.signatures["delta_eo"] == "all"  # from the sweep's own run
    ((name, _, fig),) = [f for f in figures([t]) if f[0].endswith("tradeoff")]
    ax = fig.axes[0]
    labels = {a.get_text() for a in ax.texts}
    assert {"β=0.1", "β=0.3", "λ=0.5", "λ=1"} <= labels
    assert ax.get_legend_handles_labels()[1] == ["fcl", "adversarial"]
    assert "GAP" in ax.get_xlabel() and "Acc." in ax.get_ylabel()
    import matplotlib.pyplot as plt

    plt.close(fig)


# ------------------------------------------------------------------------------------------------ outputs
@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory, sweeps):
    """Two mt-bias JSONs, an `eval embeddings` JSON, the classification recipes' results, a classification sweep and
    a sampling run: every output written."""
    pytest.importorskip("optuna")
    tmp_path = tmp_path_factory.mktemp("mixed")
    files = [
        _write(tmp_path / "mt.json", _mt_bias("google")),
        _write(tmp_path / "mt2.json", _mt_bias("nllb", acc=(70, 50))),
        FIX / "embeddings_minilm.json",
        *(FIX / n for n in CLS),
        sweeps[0],
        FIX / "sampling_fair_results.json",
    ]
    out = {k: tmp_path / f"report.{k}" for k in ("md", "json", "tex", "html")}
    assert (
        main(
            [
                "report",
                *map(str, files),
                "--markdown",
                str(out["md"]),
                "--json",
                str(out["json"]),
                "--latex",
                str(out["tex"]),
                "--latex-standalone",
                "--html",
                str(out["html"]),
                "--plot",
                str(tmp_path / "fig.svg"),
            ]
        )
        == 0
    )
    return out, tmp_path


def test_markdown_json_and_latex_hold_every_runs_key_numbers(mixed_report):
    out, tmp = mixed_report
    md, tex = out["md"].read_text(), out["tex"].read_text()
    data = json.loads(out["json"].read_text())
    assert [t["family"] for t in data["tables"]] == ["mt", "embeddings", "classification", "probe"]
    assert data["fairmt"] and data["date"]
    for n in CLS:
        acc = _fixture(n)["test"]["accuracy"]
        assert f"{acc:.2f}" in md and f"{acc:.2f}" in tex
    assert "fcl β=0.1" in md and "fcl $\\beta$=0.1" in tex
    assert "| google |" in md and "57.5" in md  # WinoMT average of 60 and 55
    emb = _fixture("embeddings_minilm.json")
    assert f"{emb['cced']['gap']:.4f}" in md and f"{emb['seat']['tests']['7b']['effect_size']:.3f}" in md
    # LaTeX: one booktabs table per family, a bold best per column where the direction is known
    assert tex.count("\\begin{table}") == 4 and tex.count("\\toprule") == 4 and "\\cmidrule(lr)" in tex
    assert "\\textbf{" in tex and "$\\uparrow$" in tex and "$\\pm$" in tex
    assert not re.search(r"[^\x00-\x7f]", tex)
    # the figures: a trade-off per family that has one, and the per-language / per-test bars
    figs = sorted(p.name for p in tmp.glob("fig-*.svg"))
    assert {
        "fig-mt-tradeoff.svg",
        "fig-mt-bars.svg",
        "fig-classification-tradeoff.svg",
        "fig-embeddings-bars.svg",
        "fig-probe-tradeoff.svg",
    } <= set(figs)


@pytest.mark.needs("pdflatex")
def test_latex_compiles_with_pdflatex(mixed_report):
    import subprocess

    out, tmp = mixed_report
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", out["tex"].name],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (tmp / "report.pdf").stat().st_size > 1000


EXTERNAL = re.compile(
    r"""(?:https?:|ftp:|file:|//[a-z0-9])|(?:src|href|action|poster|srcset)\s*=\s*(?!["']?(?:#|data:))|"""
    r"""url\(\s*(?!["']?(?:#|data:))|@import|<link\b|<iframe\b|<object\b|<embed\b""",
    re.I,
)


def test_html_page_references_no_url_outside_itself(mixed_report):
    out, _ = mixed_report
    page = out["html"].read_text()
    assert page.count("<svg") >= 4 and page.count("<table") == 4 and "<script>" in page and "<style>" in page
    hits = EXTERNAL.findall(page)
    assert hits == [], hits[:5]
    assert "fairmt " in page and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", page)
    assert "<details><summary>google</summary>" in page and "signature winomt:de" in page


def test_html_external_url_check_fails_on_a_cdn_reference():
    assert EXTERNAL.search('<script src="https://cdn.example.com/x.js"></script>')
    assert EXTERNAL.search("<style>@import 'x.css'</style>") and EXTERNAL.search('<img src="a.png">')
    assert not EXTERNAL.search('<a href="#mt">x</a><use href="#p1"/>')


# ------------------------------------------------------------------------------------------------ fairmt push
@pytest.fixture()
def no_network(monkeypatch):
    """Any socket connection or Hub call fails the test: a dry run contacts nothing."""
    import socket

    from huggingface_hub import HfApi

    def refuse(*a, **k):
        raise AssertionError("the network was contacted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    for name in ("create_repo", "create_commit", "upload_folder", "model_info"):
        monkeypatch.setattr(HfApi, name, refuse)


def _model_dir(tmp_path: Path) -> Path:
    m = tmp_path / "model"
    (m / "checkpoint-3").mkdir(parents=True)
    (m / "config.json").write_text("{}")
    (m / "model.safetensors").write_bytes(b"x" * 10)
    (m / "checkpoint-3" / "optimizer.pt").write_bytes(b"x")
    return m


@pytest.mark.parametrize(
    "fixture,method,metric,value",
    [
        ("classification_fcl_results.json", "fcl", "Performance Acc. (%)", ("test", "accuracy")),
        ("dpce_results.json", "dpce", "CCED gap", ("after", "cced", "gap")),
        (
            "sampling_fair_results.json",
            "sampling",
            "Latent subgroups dominance",
            ("stages", "stage2", "subgroups", "cluster_dominance_ratio"),
        ),
        ("classification_inlp_results.json", None, "Leakage leakage@h (%)", ("test", "leakage_h")),
        # issue 53: the first recipe's held-out numbers go into its card (it was refused: "no measure of the trained model")
        (
            "gacl_tiny_results.json",
            "gacl",
            "chrF++ vs references (fairmt demo held-out sentences, ",
            ("held_out_gender", "after", "chrf++"),
        ),
    ],
)
def test_push_dry_run_writes_the_card_of_any_family_and_contacts_nothing(
    tmp_path, no_network, capsys, fixture, method, metric, value
):
    from fairmt.citations import ENTRIES
    from fairmt.eval.modelcard import read_eval_results

    out = tmp_path / "card"
    assert (
        main(["push", str(_model_dir(tmp_path)), "me/model", "--results", str(FIX / fixture), "--dry-run", str(out)])
        == 0
    )
    assert "dry run: nothing uploaded" in capsys.readouterr().out
    entries = {e["metric_name"]: e for e in read_eval_results(out / "README.md")}
    want = _fixture(fixture)
    for k in value:
        want = want[k]
    named = [e for name, e in entries.items() if name == metric or name.startswith(metric)]  # names may go on
    assert len(named) == 1 and named[0]["metric_value"] == pytest.approx(want, rel=1e-12)  # in full (issue 54)
    card = (out / "README.md").read_text()
    cited = [
        k for k in ("shen2022fcl", "kaneko2021dpce", "martin_ogbuokiri_sampling", "lee2023gacl") if f"{{{k}," in card
    ]
    expected = {
        "fcl": ["shen2022fcl"],
        "dpce": ["kaneko2021dpce"],
        "sampling": ["martin_ogbuokiri_sampling"],
        "gacl": ["lee2023gacl"],
        None: [],
    }[method]
    assert cited == expected and all(k in ENTRIES for k in expected)
    on_hub = (
        [".eval_results/LabHC__bias_in_bios.yaml (beside this file)"] if fixture.startswith("classification") else []
    )  # Bias-in-Bios is on the Hub: its results get an eval-results file too (issue 54)
    assert (out / "upload.txt").read_text().splitlines() == [
        "config.json",
        "model.safetensors",
        "README.md (the card beside this file)",
        *on_hub,
    ]


def test_push_method_given_on_the_command_line_wins(tmp_path, no_network):
    out = tmp_path / "card"
    assert (
        main(
            [
                "push",
                str(_model_dir(tmp_path)),
                "me/model",
                "--results",
                str(FIX / CLS[1]),
                "--method",
                "cscl",
                "--dry-run",
                str(out),
            ]
        )
        == 0
    )
    card = (out / "README.md").read_text()
    assert "{chi2022cscl," in card and "{shen2022fcl," not in card


# ------------------------------------------------------------------------------------------------ summaries
def test_sampling_results_md_shows_the_probes_gap_and_delta_eo():
    from fairmt.recipes.sampling.runner import _markdown

    res = _fixture("sampling_fair_results.json")
    md = _markdown(res)
    target = next(iter(res["stages"]["stage2"]["probe"]))
    fair = res["stages"]["stage2"]["probe"][target]["fairness_by_attribute"]
    attr = next(a for a, v in fair.items() if v)
    line = next(x for x in md.splitlines() if x.startswith(f"| {target} | GAP ↓ ({attr}) |"))
    assert f"{fair[attr]['gap']:.4f}" in line
    assert any(x.startswith(f"| {target} | ΔEO ↓ ({attr}) |") for x in md.splitlines())
    assert "Representation Entropy ↑" in md and "Accuracy ↑" in md


# ------------------------------------------------------------------------------------------------ real eval files
def test_real_mt_bias_runs_default_and_acl2019_and_an_eval_winomt_json():
    from fairmt.errors import FairmtError
    from fairmt.eval.reporting import build_tables, read_runs

    a, b = (read_runs(FIX / n)[0] for n in ("mtbias_google.json", "mtbias_google_acl2019.json"))
    w = read_runs(FIX / "winomt_de.json")[0]
    data = _fixture("mtbias_google.json")
    assert (a.name, b.name) == ("google", "google-acl2019")
    assert a.values["winomt_acc"] == data["winomt"]["average"]["accuracy"]
    assert a.values["winomt_acc:de"] == data["winomt"]["de"]["accuracy"]
    assert w.values["winomt_acc"] == pytest.approx(_fixture("winomt_de.json")["accuracy"])
    assert w.values["winomt_abs_dg"] == pytest.approx(abs(data["winomt"]["de"]["delta_g_acc"]))  # from the confusion
    with pytest.raises(FairmtError, match="google-acl2019 was scored differently from google"):
        build_tables([a, b])
    (t,) = build_tables([a, b], allow_mixed=True)
    assert "winomt_acc:de" in t.marks[1] and {d["key"] for d in t.differs[1]} >= {"settings:compat", "winomt:de"}


def test_real_eval_embeddings_json_gives_seat_per_test_and_bars():
    from fairmt.eval.reporting import build_tables, read_runs
    from fairmt.eval.reporting.render import bars_figure

    (run,) = read_runs(FIX / "embeddings_minilm.json")
    data = _fixture("embeddings_minilm.json")
    assert run.values["seat_avg_abs"] == data["seat"]["avg_abs_effect_size"]
    assert run.values["seat:6"] == data["seat"]["tests"]["6"]["effect_size"]
    assert run.values["cced_gap"] == data["cced"]["gap"] and run.values["bias_ir_avg_dev"] == data["bias_ir"]["avg_dev"]
    (t,) = build_tables([run])
    assert [m.label for m in t.columns if m.group.startswith("SEAT effect")] == ["6", "6b", "7", "7b", "8", "8b"]
    fig = bars_figure(t)
    assert [x.get_text() for x in fig.axes[0].get_xticklabels()] == ["6", "6b", "7", "7b", "8", "8b"]
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_push_dry_run_of_a_sweep_takes_the_selected_runs_results_and_method(sweeps, tmp_path, no_network):
    from fairmt.eval.modelcard import read_eval_results

    sweep = sweeps[0]
    report = json.loads(sweep.read_text())
    run = json.loads((sweep.parent / report["selected"]["run"] / "run" / "results.json").read_text())
    out = tmp_path / "card"
    assert main(["push", str(_model_dir(tmp_path)), "me/fcl", "--results", str(sweep), "--dry-run", str(out)]) == 0
    entries = {e["metric_name"]: e["metric_value"] for e in read_eval_results(out / "README.md")}
    assert entries["Performance Acc. (%)"] == pytest.approx(run["test"]["accuracy"], rel=1e-12)  # full precision
    assert "{shen2022fcl," in (out / "README.md").read_text()  # the method the selected run says


def test_a_key_only_one_run_has_is_no_difference_and_per_class_gap_is_asked_for(tmp_path, capsys):
    from fairmt.eval.reporting import Run
    from fairmt.eval.reporting.tables import signature_differences

    a = Run("a", "mt", "a.json", {"winomt_acc": 60.0}, signatures={"settings:split": "test", "winomt:de": "w1"})
    b = Run("b", "mt", "b.json", {"winomt_acc": 61.0}, signatures={"winomt:de": "w1"})
    c = Run("c", "mt", "c.json", {"winomt_acc": 62.0}, signatures={"winomt:de": "w2"})
    assert signature_differences([a, b, c]) == [[], [], [{"key": "winomt:de", "first": "w1", "this": "w2"}]]
    fcl = FIX / CLS[1]
    assert main(["report", str(fcl), "--json", "-"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["tables"]  # --json -: the JSON alone on stdout
    assert not any(c["group"] == "GAP per class" for c in t["columns"])
    assert main(["report", str(fcl), "--json", "-", "--per-class"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["tables"]
    per_class = {c["label"]: t["rows"][0]["values"][c["key"]] for c in t["columns"] if c["group"] == "GAP per class"}
    assert per_class == _fixture(CLS[1])["test_full"]["gap_by_class"]


def _geneval_result(lang: str, split: str, acc: float):
    from fairmt.eval.geneval import GenEvalResult

    return GenEvalResult(
        lang=lang,
        split=split,
        n=100,
        accuracy=acc,
        explicit_accuracy=acc - 20,
        accuracy_masculine=acc + 5,
        accuracy_feminine=acc - 5,
        explicit_accuracy_masculine=acc - 15,
        explicit_accuracy_feminine=acc - 25,
        delta_g=10.0,
        explicit_delta_g=-8.0,
        hypothesis_accuracy=acc,
        hypothesis_explicit_accuracy=acc - 20,
        signature=f"MT-GenEval|set:counterfactual|split:{split}|lang:{lang}|n:100|fairmt:0.1",
        chrfpp=50.0,
    )


def _flores_result(pair: str, tok: str, bleu: float):
    from fairmt.eval.translation import TranslationQualityResult

    return TranslationQualityResult(
        lang_pair=pair,
        n=1012,
        spbleu=bleu,
        bleu_spm_nonstandard=None,
        chrfpp=55.0,
        bleu_label="spBLEU",
        bleu_signature=f"nrefs:1|case:mixed|tok:{tok}|version:2.4",
        chrf_signature="nrefs:1|case:mixed|nc:6|nw:2|version:2.4",
        spm_model="m",
        spm_model_sha256="x",
    )


def test_eval_geneval_and_flores_jsons_average_languages_and_refuse_another_split_or_tokenizer(tmp_path, capsys):
    """Through the commands' own JSON writers (``fairmt.commands.eval_geneval._summary``)."""
    from fairmt.commands.eval_geneval import _summary
    from fairmt.eval.reporting import build_tables, read_runs
    from fairmt.outputs import json_text

    def write(name, results, metrics):
        return _write_text(tmp_path / f"{name}.json", json_text(_summary(results, metrics)))

    m = ["explicit_accuracy", "accuracy"]
    g_test = write("g_test", [_geneval_result("de", "test", 80.0), _geneval_result("fr", "test", 70.0)], m)
    g_dev = write("g_dev", [_geneval_result("de", "dev", 82.0), _geneval_result("fr", "dev", 72.0)], m)
    f200 = write("f200", [_flores_result("eng_Latn-deu_Latn", "flores200", 30.0)], ["bleu", "chrfpp"])
    f101 = write("f101", [_flores_result("eng_Latn-deu_Latn", "flores101", 31.0)], ["bleu", "chrfpp"])
    (run,) = read_runs(g_test)
    assert run.values["geneval_e_acc"] == 55.0 and run.values["geneval_abs_edg"] == 8.0
    assert read_runs(f200)[0].values["bleu"] == 30.0
    for a, b, key in ((g_test, g_dev, "settings:split"), (f200, f101, "flores:eng_Latn-deu_Latn:BLEU")):
        assert main(["report", str(a), str(b)]) == 2
        assert f"{key} is" in capsys.readouterr().err
    (t,) = build_tables(read_runs(g_test) + read_runs(f200))  # one MT table: geneval and FLORES columns side by side
    assert {"geneval_e_acc", "bleu", "chrfpp"} <= {m.key for m in t.columns}


def _write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_fairmt_report_of_a_sweep_gives_its_area_under_the_front(sweeps, capsys):
    """issue 42: the area under the performance–fairness front in `fairmt report` as in `fairmt sweep`'s report —
    the sweep's own numbers (dev and test), under the sweep's table, a note and not a column (never used to select)."""
    sweep = sweeps[0]
    aucs = json.loads(sweep.read_text())["front_auc"]
    assert {"dev", "test"} <= set(aucs)
    assert main(["report", str(sweep), "--json", "-"]) == 0
    tables = json.loads(capsys.readouterr().out)["tables"]
    notes = [n for t in tables for n in t["notes"] if "area under the performance–fairness front" in n]
    assert len(notes) == 1
    assert f"dev {aucs['dev']['auc']:.4f}" in notes[0] and f"test {aucs['test']['auc']:.4f}" in notes[0]
    assert main(["report", str(sweep)]) == 0
    assert f"test {aucs['test']['auc']:.4f}" in capsys.readouterr().out


def test_rows_selected_under_different_checkpoint_rules_are_named_under_the_table():
    """Issue 44 item 16: the fixtures' inlp run kept its lowest-dev-loss epoch, fcl and adversarial their DTO one."""
    from fairmt.eval.reporting import build_tables, read_runs
    from fairmt.eval.reporting.escape import markdown
    from fairmt.eval.reporting.render import markdown_report

    (t,) = build_tables([r for n in CLS for r in read_runs(FIX / n)])
    (note,) = [n for n in t.notes if n.startswith("Rows selected under different checkpoint rules")]
    assert note.endswith(
        "dto (dev set): classification_adversarial_results, classification_fcl_results; "
        "loss (dev set): classification_inlp_results."
    ) and markdown(note) in markdown_report([t])
    (same,) = build_tables([r for r in read_runs(FIX / CLS[0])])
    assert not any(n.startswith("Rows selected under") for n in same.notes)


def test_every_input_parses_before_anything_is_built_or_printed(tmp_path, capsys, monkeypatch):
    """Issue 44 item 10: a bad last file (unknown format, broken JSON, a value of the wrong type) is one line before
    any table is built (build_tables, here a tripwire) or anything printed or written; the good files before it do
    not get half a report."""
    import fairmt.eval.reporting as reporting

    def tripwire(*a, **k):
        raise AssertionError("tables built before every file was read")

    monkeypatch.setattr(reporting, "build_tables", tripwire)
    good = _write(tmp_path / "good.json", _mt_bias("a"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": 1, "winomt": {', encoding="utf-8")
    wrong = _mt_bias("c")
    wrong["winomt"]["de"]["accuracy"] = "high"
    for bad, expected in (
        (_write(tmp_path / "x.json", {"accuracy": 1}), "declares no 'format'"),
        (broken, "broken.json"),
        (_write(tmp_path / "wrong.json", wrong), "'winomt.de.accuracy'"),
    ):
        md = tmp_path / "out.md"
        assert main(["report", str(good), str(good), str(bad), "--names", "a", "b", "c", "--markdown", str(md)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and len(captured.err.strip().splitlines()) == 1 and expected in captured.err
        assert not md.exists()


def test_before_after_of_one_run_names_directions_and_the_seed_noise_never_a_verdict():
    """Issue 53: a recipe's before → after is one training seed: "+0.2, better" said more than one run can; the
    printer gives the change, the better direction in the label, and a line naming training-seed noise."""
    from fairmt.eval.report import ONE_RUN_NOTE, before_after_lines

    lines = before_after_lines(
        "what X changed",
        [
            ("chrF++", 50.0, 50.2, ".1f", "higher"),
            ("GAP ↓", 10.0, 12.0, ".2f", "lower"),
            ("ΔG", -3.0, 1.0, "+.1f", "zero"),
            ("n", 1.0, None, ".0f", None),
        ],
    )
    assert lines[1].split() == ["chrF++", "↑", "50.0", "→", "50.2", "(+0.2)"]
    assert lines[2].split() == ["GAP", "↓", "10.00", "→", "12.00", "(+2.00)"]
    assert lines[3].split()[:3] == ["ΔG", "(0", "best)"]
    assert lines[-1].strip() == ONE_RUN_NOTE and len(lines) == 5  # the row without an after is left out
    assert not any(w in " ".join(lines[1:-1]) for w in ("better", "worse"))
    assert "training-seed noise" in ONE_RUN_NOTE and before_after_lines("t", [("a", None, 1.0, ".1f", None)]) == []
