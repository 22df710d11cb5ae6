"""fairmt's Hugging Face `evaluate` modules (issue 12): they load offline with `evaluate.load(path)` and return the
same numbers as the CLI on the same input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fairmt
from fairmt.cli import main

evaluate = None  # set by _evaluate: collecting this file (every xdist worker collects it) imports no evaluate (~4 s)


@pytest.fixture(autouse=True, scope="module")
def _evaluate():
    global evaluate
    evaluate = pytest.importorskip(
        "evaluate", reason="the evaluate package is not installed (pip install 'fairmt[evaluate]')"
    )


def _load(name: str):
    return evaluate.load(fairmt.evaluate_module(name))


def test_all_modules_load_offline_with_cards(monkeypatch):
    """Offline (the hub's, datasets' and evaluate's offline switches on, and any socket connection failing the test):
    every module loads from its path and has a card with inputs, citation and an example. In-process: refusing
    every connection proves "no network needed" as a fresh interpreter with HF_HUB_OFFLINE=1 did, without paying
    ~13 s of CPU to import evaluate (and with it transformers and torch) once more."""
    import socket

    import datasets.config
    import evaluate.config
    import huggingface_hub.constants

    from fairmt.evaluate_modules import MODULES

    def refuse(*args, **kwargs):
        raise AssertionError(f"the network was contacted: {args[1:]!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(evaluate.config, "HF_EVALUATE_OFFLINE", True)
    got = {}
    for name in MODULES:
        m = _load(name)
        got[name] = [
            bool(m.description),
            "@" in m.citation,
            "Example" in m.inputs_description,
            "Args" in m.inputs_description,
        ]
    assert set(got) == {"winomt", "mt_geneval", "flores", "cced", "classification_fairness"}
    assert all(all(v) for v in got.values()), got
    for name in got:  # the module card beside each script
        card = Path(fairmt.evaluate_module(name)) / "README.md"
        assert card.is_file() and "## Citation" in card.read_text(encoding="utf-8")


def test_unknown_module_is_a_clear_error():
    from fairmt.errors import FairmtError

    with pytest.raises(FairmtError, match="unknown fairmt evaluate module 'bleu'"):
        fairmt.evaluate_module("bleu")


@pytest.mark.data
def test_winomt_module_reproduces_the_cli_google_de(shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    """The issue's bar: the module gives the CLI's Google de figures on the shipped data."""
    winomt = shared_data / "winomt"
    trans = winomt / "translations" / "google" / "en-de.txt"
    gold = winomt / "aggregates_acl2019" / "en.txt"
    out = tmp_path / "cli.json"
    assert (
        main(
            ["eval", "winomt", "--lang", "de", "--translations", str(trans), "--compat", "acl2019", "--json", str(out)]
        )
        == 0
    )
    cli = json.loads(out.read_text())
    cli = cli["per_language"][0] if "per_language" in cli else cli
    pairs = [line.split(" ||| ", 1) for line in trans.read_text(encoding="utf-8").splitlines()]
    res = _load("winomt").compute(
        predictions=[t for _, t in pairs],
        references=gold.read_text(encoding="utf-8").splitlines(),
        lang="de",
        sources=[s for s, _ in pairs],
        compat="acl2019",
    )
    for key in ("accuracy", "delta_g", "delta_s", "delta_r", "n", "confusion"):
        assert res[key] == cli[key], key
    # the published Google de figures (Stanovsky et al. 2019, Table 2: acc 59.4, ΔG 12.5); fairmt gives 59.3 / 12.3
    assert res["delta_s"] is not None and abs(res["accuracy"] - 59.4) < 0.2 and abs(res["delta_g_f1"] - 12.5) < 0.3
    assert res["signature"] == cli["signature"]  # the gold is named by its content, not by how it was passed


@pytest.mark.data
def test_mt_geneval_module_matches_the_cli(shared_data, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    from fairmt.eval.geneval import load_counterfactual

    d = load_counterfactual("de", "test")
    # a mix: some translations use the other gender's reference
    m_h = [fr if i % 7 == 0 else mr for i, (mr, fr) in enumerate(zip(d.masculine_refs, d.feminine_refs))]
    f_h = [mr if i % 5 == 0 else fr for i, (mr, fr) in enumerate(zip(d.masculine_refs, d.feminine_refs))]
    (tmp_path / "m.de").write_text("\n".join(m_h) + "\n", encoding="utf-8")
    (tmp_path / "f.de").write_text("\n".join(f_h) + "\n", encoding="utf-8")
    assert (
        main(
            [
                "eval",
                "geneval",
                "--lang",
                "de",
                "--masculine",
                str(tmp_path / "m.de"),
                "--feminine",
                str(tmp_path / "f.de"),
                "--json",
                "-",
            ]
        )
        == 0
    )
    cli = json.loads(capsys.readouterr().out)
    cli = cli["per_language"][0] if "per_language" in cli else cli
    res = _load("mt_geneval").compute(
        predictions=m_h + f_h,
        references=d.masculine_refs + d.feminine_refs,
        counterfactual_references=d.feminine_refs + d.masculine_refs,
        lang="de",
    )
    for key in (
        "accuracy",
        "explicit_accuracy",
        "accuracy_masculine",
        "accuracy_feminine",
        "delta_g",
        "hypothesis_accuracy",
        "hypothesis_explicit_accuracy",
        "n",
    ):
        assert res[key] == pytest.approx(cli[key]), key
    assert 0 < res["accuracy"] < 100
    assert res["signature"] == cli["signature"] and res["chrf_signature"] == cli["chrf_signature"]
    assert res["chrfpp"] == pytest.approx(cli["chrfpp"])
    # one gender only: per-translation numbers, and no pair-level accuracy
    half = _load("mt_geneval").compute(
        predictions=m_h, references=d.masculine_refs, counterfactual_references=d.feminine_refs, lang="de"
    )
    assert half["accuracy"] is None and "masculine translations followed by the feminine" in half["note"]
    assert half["hypothesis_accuracy"] == pytest.approx(cli["accuracy_masculine"])


def test_flores_module_matches_the_cli(tmp_path, monkeypatch, capsys):
    import sentencepiece as spm

    refs = [
        "Der Arzt sprach lange mit der Patientin.",
        "Die Lehrerin erklärt die Aufgabe.",
        "Morgen fahren wir nach Berlin.",
        "Das Wetter war schön.",
    ]
    hyps = [
        "Der Arzt sprach mit der Patientin.",
        "Die Lehrerin erklärt die Aufgaben.",
        "Morgen fahren wir nach Berlin.",
        "Das Wetter ist schön.",
    ]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter((refs + hyps) * 30),
        model_prefix=str(tmp_path / "s"),
        vocab_size=60,
        model_type="bpe",
        character_coverage=1.0,
    )
    dt = tmp_path / "data" / "flores200" / "devtest"
    dt.mkdir(parents=True)
    (dt / "eng_Latn.devtest").write_text("x\n" * 4, encoding="utf-8")
    (dt / "deu_Latn.devtest").write_text("\n".join(refs) + "\n", encoding="utf-8")
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "data"))
    (tmp_path / "h.de").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    assert (
        main(
            [
                "eval",
                "flores",
                "--lang-pair",
                "eng_Latn-deu_Latn",
                "--hypotheses",
                str(tmp_path / "h.de"),
                "--spm-model",
                str(tmp_path / "s.model"),
                "--json",
                str(tmp_path / "r.json"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    cli = json.loads((tmp_path / "r.json").read_text())
    cli = cli["per_language"][0] if "per_language" in cli else cli
    res = _load("flores").compute(predictions=hyps, references=refs, spm_model=str(tmp_path / "s.model"))
    assert res["bleu_spm_nonstandard"] == pytest.approx(cli["bleu_spm_nonstandard"]) and res["spbleu"] is None
    assert res["chrfpp"] == pytest.approx(cli["chrfpp"]) and res["bleu_signature"] == cli["bleu_signature"]
    assert "not the official FLORES-200" in res["note"]


def test_cced_module_matches_the_cli(tmp_path, capsys):
    from fairmt.eval.embedding.cced import load_tuples
    from fairmt.eval.embedding.encode import EmbeddingRunner
    from tiny_encoders import write_ccd_inputs

    write_ccd_inputs(tmp_path)
    assert (
        main(
            [
                "eval",
                "embeddings",
                "--model",
                str(tmp_path / "bert"),
                "--suite",
                "cced",
                "--cced-tuples",
                str(tmp_path / "tuples.jsonl"),
                "--json",
                str(tmp_path / "r.json"),
                "--no-progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    cli = json.loads((tmp_path / "r.json").read_text())["cced"]
    tuples, groups = load_tuples(tmp_path / "tuples.jsonl")
    runner = EmbeddingRunner.from_path(
        tmp_path / "bert", pooling=json.loads((tmp_path / "r.json").read_text())["pooling"], progress=False
    )
    neutral = np.asarray(runner.encode([t.neutral for t in tuples]))
    per_group = [np.asarray(runner.encode([t.groups[g] for t in tuples])) for g in groups]
    res = _load("cced").compute(
        predictions=neutral.tolist(),
        references=[[e[i].tolist() for e in per_group] for i in range(len(tuples))],
        groups=groups,
        pooling=runner.pooling,
    )
    assert res["gap"] == pytest.approx(cli["gap"], rel=1e-6) and res["n"] == cli["n"] and res["gap"] > 0
    assert res["signature"] == cli["signature"]


def test_classification_fairness_module_matches_the_cli(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = [
        {"label": int(y), "pred": int(y if rng.random() < 0.8 else 1 - y), "group": int(g)}
        for y, g in zip(rng.integers(0, 2, 200), rng.integers(0, 2, 200))
    ]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert (
        main(["eval", "classification", "--predictions", str(tmp_path / "p.jsonl"), "--json", str(tmp_path / "r.json")])
        == 0
    )
    capsys.readouterr()
    cli = json.loads((tmp_path / "r.json").read_text())
    res = _load("classification_fairness").compute(
        predictions=[r["pred"] for r in rows], references=[r["label"] for r in rows], groups=[r["group"] for r in rows]
    )
    for key in ("accuracy", "macro_f1", "gap", "delta_eo"):
        assert res[key] == pytest.approx(cli[key]), key
    assert res["signature"] == cli["signature"] and 0 < res["gap"]


# The `evaluate` examples of the benchmark pages run here, where `evaluate` is already imported (its import costs
# seconds; tests/project/test_docs.py checks that these files name the pages). MT-GenEval's: tests/project/test_readme_snippets.py.
PAGE_EXAMPLES = {
    "docs/benchmarks/winomt.md": ("accuracy", 59.3),
    "docs/benchmarks/flores.md": ("bleu_label", "spBLEU*"),
    "docs/benchmarks/cced.md": ("gap", 3.0),
    "docs/benchmarks/classification.md": ("gap", 50.0),
}


@pytest.mark.parametrize("page", list(PAGE_EXAMPLES))
def test_the_benchmark_pages_evaluate_examples_run(page, shared_data, tmp_path, monkeypatch, capsys):
    """Each page's block under `<!-- runs-in: tests/eval/test_evaluate_modules.py -->`, as a reader runs it, in an empty
    folder with FAIRMT_DATA set; it prints, and gives the number the page states."""
    from doc_blocks import ROOT, block_after

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    monkeypatch.chdir(tmp_path)
    code = block_after(page, "<!-- runs-in: tests/eval/test_evaluate_modules.py -->")
    namespace: dict = {"__name__": "__docs__"}
    exec(compile(code, str(ROOT / page), "exec"), namespace)  # noqa: S102 - the page's own code
    key, expected = PAGE_EXAMPLES[page]
    assert namespace["scores"][key] == (pytest.approx(expected) if isinstance(expected, float) else expected)
    assert capsys.readouterr().out.strip()


# ---------------------------------------------------------------------------------------------------- issue 54
def _split3(values):
    """``values`` in three batches of unequal sizes (a dict of columns: each column split)."""
    if isinstance(values, dict):
        parts = {k: _split3(v) for k, v in values.items()}
        return [{k: parts[k][i] for k in values} for i in range(3)]
    n = len(values)
    cuts = [0, n // 5, n // 2, n]
    return [values[cuts[i] : cuts[i + 1]] for i in range(3)]


def _batched_equals_one_compute(name, features, extras, **kwargs):
    """``add_batch`` × 3 (the features and per-example extras split alike) then ``compute(**kwargs)`` equals one
    ``compute`` on everything."""
    m = _load(name)
    whole = m.compute(**features, **extras, **kwargs)
    split = {k: _split3(v) for k, v in {**features, **extras}.items()}
    for i in range(3):
        m.add_batch(**{k: v[i] for k, v in split.items()})
    batched = m.compute(**kwargs)
    assert batched == whole
    return whole


def _cls_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.8, y, 1 - y)
    g = rng.integers(0, 3, n)
    return y.tolist(), p.tolist(), g.tolist(), rng.normal(size=(n, 4)) + g[:, None]


def test_add_batch_then_compute_equals_one_compute_classification_fairness():
    y, p, g, h = _cls_data()
    z = (np.asarray(p) - 0.5 + 0.1 * h[:, 0]).tolist()  # a bare (n,) logit vector: the positive class's
    scores = (1 / (1 + np.exp(-np.asarray(z)))).tolist()
    res = _batched_equals_one_compute(
        "classification_fairness",
        {"predictions": p, "references": y},
        {"groups": g, "hidden": h.tolist(), "logits": z, "scores": scores},
    )
    assert res["leakage_yhat"] is not None and res["auc"] is not None and res["n"] == 120
    # one example at a time: evaluate's add
    m = _load("classification_fairness")
    for pi, yi, gi in zip(p, y, g):
        m.add(prediction=pi, reference=yi, groups=gi)
    assert m.compute(leakage=False)["gap"] == pytest.approx(res["gap"])


def test_add_batch_then_compute_equals_one_compute_cced():
    rng = np.random.default_rng(1)
    neutral, male, female = (rng.normal(size=(30, 5)) for _ in range(3))
    _batched_equals_one_compute(
        "cced",
        {"predictions": neutral.tolist(), "references": [[m.tolist(), f.tolist()] for m, f in zip(male, female)]},
        {},
    )


def test_add_batch_then_compute_equals_one_compute_mt_geneval():
    m_ref = ["Er ist ein guter Arzt.", "Er ist Lehrer.", "Der Koch kocht.", "Er ist müde."]
    f_ref = ["Sie ist eine gute Ärztin.", "Sie ist Lehrerin.", "Die Köchin kocht.", "Sie ist müde."]
    hyps = [m_ref[0], f_ref[1], m_ref[2], m_ref[3], f_ref[0], f_ref[1], m_ref[2], f_ref[3]]
    res = _batched_equals_one_compute(
        "mt_geneval",
        {"predictions": hyps, "references": m_ref + f_ref},
        {"counterfactual_references": f_ref + m_ref},
        lang="de",
    )
    assert res["accuracy"] is not None and 0 < res["accuracy"] < 100


def test_add_batch_then_compute_equals_one_compute_winomt():
    gold = [
        "male\t1\tThe developer argued with the designer because he did not like the design.\tdeveloper",
        "female\t1\tThe developer argued with the designer because she did not like the design.\tdeveloper",
        "male\t1\tThe nurse met the doctor and he smiled.\tnurse",
        "female\t1\tThe nurse met the doctor and she smiled.\tnurse",
        "female\t1\tThe manager thanked the clerk because she was kind.\tmanager",
        "male\t1\tThe manager thanked the clerk because he was kind.\tmanager",
    ]
    trans = [
        "Der Entwickler stritt mit dem Designer, weil er das Design nicht mochte.",
        "Die Entwicklerin stritt mit dem Designer, weil sie das Design nicht mochte.",
        "Der Krankenpfleger traf den Arzt und er lächelte.",
        "Der Krankenpfleger traf den Arzt und sie lächelte.",
        "Die Managerin dankte dem Angestellten, weil sie nett war.",
        "Der Manager dankte dem Angestellten, weil er nett war.",
    ]
    sources = [line.split("\t")[2] for line in gold]
    res = _batched_equals_one_compute(
        "winomt", {"predictions": trans, "references": gold}, {"sources": sources}, lang="de"
    )
    assert res["n"] == 6


def test_add_batch_then_compute_equals_one_compute_flores(tmp_path):
    import sentencepiece as spm

    refs = [
        "Der Arzt sprach lange mit der Patientin.",
        "Die Lehrerin erklärt die Aufgabe.",
        "Morgen fahren wir nach Berlin.",
        "Das Wetter war schön.",
        "Wir essen heute Abend zu Hause.",
    ]
    hyps = [
        "Der Arzt sprach mit der Patientin.",
        "Die Lehrerin erklärt die Aufgaben.",
        "Morgen fahren wir nach Berlin.",
        "Das Wetter ist schön.",
        "Heute Abend essen wir zu Hause.",
    ]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter((refs + hyps) * 30),
        model_prefix=str(tmp_path / "s"),
        vocab_size=60,
        model_type="bpe",
        character_coverage=1.0,
    )
    _batched_equals_one_compute(
        "flores", {"predictions": hyps, "references": refs}, {}, spm_model=str(tmp_path / "s.model")
    )


def test_batches_are_checked_and_kept_consistent():
    from fairmt.errors import FairmtError

    y, p, g, _ = _cls_data(20)
    m = _load("classification_fairness")
    with pytest.raises(FairmtError, match=r"classification_fairness: predictions\[0\] is a float"):
        m.add_batch(predictions=[0.7] * 10, references=y[:10], groups=g[:10])
    m = _load("classification_fairness")
    m.add_batch(predictions=p[:10], references=y[:10], groups=g[:10])
    m.add_batch(predictions=p[10:], references=y[10:])
    with pytest.raises(FairmtError, match="groups was given for 10 of the 20 examples added"):
        m.compute()
    m = _load("classification_fairness")
    m.add_batch(predictions=p, references=y, groups=g)
    with pytest.raises(FairmtError, match="groups was given to add/add_batch and to compute"):
        m.compute(groups=g)
    assert m.compute(leakage=False)["n"] == 20  # the refused call left the added batches as they were
    # groups given once, at compute, for every example added: the same numbers
    m.add_batch(predictions=p[:7], references=y[:7])
    m.add_batch(predictions=p[7:], references=y[7:])
    assert m.compute(groups=g, leakage=False)["gap"] == pytest.approx(
        _load("classification_fairness").compute(predictions=p, references=y, groups=g, leakage=False)["gap"]
    )
    with pytest.raises(FairmtError, match="nothing to score: give predictions= and references="):
        m.compute()


def test_intersectional_groups_give_the_clis_numbers(tmp_path, capsys):
    """Tuples and a dict of columns, at once or batch by batch, give `fairmt eval classification --group-columns`'s
    numbers and signature (``groups:x2``)."""
    y, p, g, _ = _cls_data(160, seed=3)
    age = np.random.default_rng(4).choice(["young", "old"], 160).tolist()
    gender = [["f", "m", "x"][v] for v in g]
    rows = [{"label": a, "pred": b, "gender": c, "age": d} for a, b, c, d in zip(y, p, gender, age)]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert (
        main(
            [
                "eval",
                "classification",
                "--predictions",
                str(tmp_path / "p.jsonl"),
                "--group-columns",
                "gender,age",
                "--no-leakage",
                "--json",
                str(tmp_path / "r.json"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    cli = json.loads((tmp_path / "r.json").read_text())
    assert cli["signature"].endswith("|groups:x2")
    m = _load("classification_fairness")
    by_tuples = m.compute(predictions=p, references=y, groups=list(zip(gender, age)), leakage=False)
    by_dict = m.compute(predictions=p, references=y, groups={"gender": gender, "age": age}, leakage=False)
    for part in range(3):
        sl = slice(part * 60, (part + 1) * 60)
        m.add_batch(predictions=p[sl], references=y[sl], groups={"gender": gender[sl], "age": age[sl]})
    batched = m.compute(leakage=False)
    for res in (by_tuples, by_dict, batched):
        for key in (
            "accuracy",
            "gap",
            "ppr_gap",
            "fpr_gap",
            "delta_eo",
            "n_groups",
            "demographic_parity_difference",
            "equalized_odds_difference",
            "equalized_odds_ratio",
        ):
            assert res[key] == pytest.approx(cli[key]), key
        assert res["signature"] == cli["signature"] and res["tpr"] == cli["tpr"]
    assert by_dict["group_attributes"] == batched["group_attributes"] == cli["group_attributes"] == ["gender", "age"]
    assert "f|young" in cli["tpr"] and cli["n_groups"] == 6


def test_the_classification_pages_batched_example_runs(tmp_path, monkeypatch, capsys):
    """docs/benchmarks/classification.md's add_batch block (``runs-in: tests/eval/test_evaluate_modules.py::batched``):
    it prints, and gives one compute's numbers on the whole split, intersectional signature included."""
    from doc_blocks import ROOT, block_after

    page = "docs/benchmarks/classification.md"
    monkeypatch.chdir(tmp_path)
    code = block_after(page, "<!-- runs-in: tests/eval/test_evaluate_modules.py::batched -->")
    namespace: dict = {"__name__": "__docs__"}
    exec(compile(code, str(ROOT / page), "exec"), namespace)  # noqa: S102 - the page's own code
    assert capsys.readouterr().out.strip()
    whole = _load("classification_fairness").compute(
        predictions=[1, 0, 1, 1, 0, 0, 1, 0],
        references=[1, 0, 0, 1, 0, 1, 1, 0],
        groups=list(zip(["f", "f", "m", "m"] * 2, ["young", "old", "young", "old", "old", "young", "old", "young"])),
        leakage=False,
    )
    got = namespace["scores"]
    for key in ("gap", "accuracy", "demographic_parity_difference", "equalized_odds_difference", "signature"):
        assert got[key] == whole[key], key
    assert got["signature"].endswith("|groups:x2")
