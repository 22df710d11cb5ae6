"""`fairmt push`: uploads the folder (through a patched HfApi), writes WinoMT results into the model card."""

import json
from pathlib import Path

import pytest

from fairmt.cli import main


def test_push_with_winomt_results(tmp_path, fake_hub, capsys):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    res = tmp_path / "de.json"
    res.write_text(
        json.dumps(
            {
                "lang": "de",
                "accuracy": 61.2,
                "delta_g": 3.1,
                "delta_s": 5.0,
                "delta_r": 2.0,
                "f1_male": 70.0,
                "f1_female": 66.9,
                "n": 3888,
                "signature": "WinoMT|lang:de|v:1",
            }
        )
    )
    assert main(["push", str(model), "me/tiny", "--winomt-json", str(res)]) == 0
    assert "local://me/tiny" in capsys.readouterr().out
    card = (fake_hub / "me" / "tiny" / "README.md").read_text()
    assert "model-index" in card and "61.2" in card
    (model / "teacher.safetensors").write_text("x")
    assert main(["push", str(model), "me/tiny"]) == 2
    assert main(["push", str(tmp_path), "me/tiny"]) == 2  # not a model folder


def test_push_uploads_the_model_not_the_training_state(tmp_path, fake_hub):
    """A Trainer output folder: only the model, tokenizer and card go up (checkpoints, optimizer, RNG states stay)."""
    out = tmp_path / "out"
    (out / "checkpoint-500").mkdir(parents=True)
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "sentencepiece.bpe.model",
        "generation_config.json",
        "training_args.bin",
        "trainer_state.json",
        "gacl_projection_head.safetensors",
        "adversary.safetensors",
        "checkpoint-500/optimizer.pt",
        "checkpoint-500/rng_state.pth",
        "checkpoint-500/model.safetensors",
    ):
        (out / name).write_text("x")
    geneval = tmp_path / "geneval.json"
    from dataclasses import asdict

    from fairmt.eval.geneval import score_counterfactual

    result = score_counterfactual(
        ["Er ist Arzt."], ["Sie ist Ärztin."], ["Er ist Arzt."], ["Sie ist Ärztin."], lang="de", split="test"
    )
    geneval.write_text(json.dumps({"per_language": [asdict(result)]}))  # as `fairmt eval geneval --json` writes
    assert main(["push", str(out), "me/gacl", "--results", str(geneval)]) == 0
    uploaded = sorted(
        p.relative_to(fake_hub / "me" / "gacl").as_posix() for p in (fake_hub / "me" / "gacl").rglob("*") if p.is_file()
    )
    assert uploaded == [
        "README.md",
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "sentencepiece.bpe.model",
        "tokenizer_config.json",
    ]
    card = (fake_hub / "me" / "gacl" / "README.md").read_text()
    assert "MT-GenEval" in card and "Currey" in card  # the result and its benchmark's citation
    assert main(["push", str(out), "me/all", "--all-files"]) == 0
    assert (fake_hub / "me" / "all" / "checkpoint-500" / "optimizer.pt").is_file()
    bad = tmp_path / "emb.json"
    bad.write_text(json.dumps({"seat": {}, "suites": ["seat"]}))
    assert main(["push", str(out), "me/x", "--results", str(bad)]) == 2


def _model(tmp_path):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    return model


def _flores_json(tmp_path, chrfpp=55.123456789, bleu=36.04321987):
    res = tmp_path / "flores.json"
    res.write_text(
        json.dumps(
            {
                "format": "fairmt-translation/1",
                "lang_pair": "eng_Latn-deu_Latn",
                "n": 1012,
                "spbleu": bleu,
                "bleu_spm_nonstandard": None,
                "chrfpp": chrfpp,
                "bleu_label": "spBLEU",
                "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:flores200|smooth:exp|version:2.6.0",
                "chrf_signature": "nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|version:2.6.0",
                "spm_model": "x",
                "spm_model_sha256": "y",
            }
        )
    )
    return res


def test_dry_run_writes_eval_results_files_huggingface_hub_parses_unrounded(tmp_path, capsys):
    """Issue 54: beside the model-index, `.eval_results/*.yaml` (huggingface_hub 2.x's format) for the benchmarks
    whose data set is on the Hub (FLORES-200), values in full; MT-GenEval (not on the Hub): model-index only; an
    embedding result keeps its digits (a CCED gap of 0.04596 is not 0.05)."""
    from dataclasses import asdict

    import yaml
    from huggingface_hub import ModelCard, parse_eval_result_entries

    from fairmt.eval.geneval import score_counterfactual
    from fairmt.eval.modelcard import HUB_DATASET_IDS

    geneval = tmp_path / "geneval.json"
    g = score_counterfactual(
        ["Er ist Arzt.", "Er kam."],
        ["Sie ist Ärztin.", "Er kam."],
        ["Er ist Arzt.", "Er kam."],
        ["Sie ist Ärztin.", "Sie kam."],
        lang="de",
        split="test",
    )
    geneval.write_text(json.dumps(asdict(g)))
    emb = tmp_path / "emb.json"
    emb.write_text(
        json.dumps({"model": "m", "suites": ["cced"], "cced": {"gap": 0.045963217, "groups": ["male", "female"]}})
    )
    out = tmp_path / "card"
    assert (
        main(
            [
                "push",
                str(_model(tmp_path)),
                "me/tiny",
                "--results",
                str(_flores_json(tmp_path)),
                str(geneval),
                str(emb),
                "--dry-run",
                str(out),
            ]
        )
        == 0
    )
    assert ".eval_results" in capsys.readouterr().out
    files = sorted(p.name for p in (out / ".eval_results").iterdir())
    assert files == [HUB_DATASET_IDS["flores"].replace("/", "__") + ".yaml"]
    entries = parse_eval_result_entries(yaml.safe_load((out / ".eval_results" / files[0]).read_text()))
    by = {e.task_id: e for e in entries}
    assert by["chrf-eng_Latn-deu_Latn-devtest"].value == 55.123456789  # unrounded
    assert by["bleu-eng_Latn-deu_Latn-devtest"].value == 36.04321987
    assert all(e.dataset_id == "facebook/flores" and e.source_url == "https://huggingface.co/me/tiny" for e in entries)
    assert (
        "chrF++" in by["chrf-eng_Latn-deu_Latn-devtest"].notes and "nw:2" in by["chrf-eng_Latn-deu_Latn-devtest"].notes
    )
    card = ModelCard.load(out / "README.md")
    values = {(e.dataset_type, e.metric_type): e.metric_value for e in card.data.eval_results}
    assert values[("cced", "cced_gap")] == 0.045963217 and values[("facebook/flores", "chrf")] == 55.123456789
    assert values[("mt_geneval", "accuracy")] == g.accuracy
    assert "| 0.04596 |" in card.text and "| 55.12 |" in card.text  # the table: 4 significant digits
    assert card.data.tags == ["fairmt", "translation", "sentence-embeddings", "gender-bias"]  # what the results are
    listed = (out / "upload.txt").read_text()
    assert f".eval_results/{files[0]} (beside this file)" in listed


def test_push_uploads_the_eval_results_files_in_the_same_commit(tmp_path, fake_hub):
    assert main(["push", str(_model(tmp_path)), "me/tiny", "--results", str(_flores_json(tmp_path))]) == 0
    assert (fake_hub / "me" / "tiny" / ".eval_results" / "facebook__flores.yaml").is_file()
    assert (fake_hub / "me" / "tiny" / "README.md").is_file()


def test_nan_is_never_written_and_is_named_in_the_text(tmp_path):
    """Issue 52: a NaN result stays out of the model-index and the eval results; the card's text names it."""
    from huggingface_hub import ModelCard

    out = tmp_path / "card"
    res = _flores_json(tmp_path, chrfpp=float("nan"))
    assert main(["push", str(_model(tmp_path)), "me/tiny", "--results", str(res), "--dry-run", str(out)]) == 0
    text = (out / "README.md").read_text()
    yaml_part = text.split("---")[1]
    assert "nan" not in yaml_part.lower()
    assert "nan" not in (out / ".eval_results" / "facebook__flores.yaml").read_text().lower()
    assert [e.metric_type for e in ModelCard.load(out / "README.md").data.eval_results] == ["bleu"]
    assert "Not a number, so left out of the results: chrF++ (eng\\_Latn-deu\\_Latn) (nan)" in text


HOSTILE = "<img src=x onerror=alert(1)>\n# heading \x1b]0;x\x07"


def test_hostile_run_name_and_signature_show_as_text_in_the_preview_card(tmp_path):
    """Issue 52: a run named with raw HTML, a newline + heading and an OSC escape (and the same in a signature) is
    text in the push preview card: escaped in the body, on one line in the YAML, no control character anywhere."""
    from dataclasses import asdict

    from huggingface_hub import ModelCard

    from fairmt.eval.geneval import score_counterfactual
    from fairmt.eval.modelcard import markdown_text
    from fairmt.eval.reporting.formats import GENEVAL, declared

    run = tmp_path / HOSTILE.replace("/", "_")
    run.mkdir()
    g = asdict(score_counterfactual(["Er kam."], ["Sie kam."], ["Er kam."], ["Sie kam."], lang="de", split="test"))
    g["signature"] = g["signature"] + "|" + HOSTILE
    (run / "results.json").write_text(json.dumps(declared(g, GENEVAL)))
    out = tmp_path / "card"
    assert (
        main(["push", str(_model(tmp_path)), "me/tiny", "--results", str(run / "results.json"), "--dry-run", str(out)])
        == 0
    )
    text = (out / "README.md").read_text(encoding="utf-8")
    body = text.split("---", 2)[2]  # the YAML holds the strings as data (quoted, one line: below)
    assert "<img" not in body and "\x1b" not in text and "\x07" not in text
    assert not any(line.startswith("# heading") for line in text.splitlines())
    shown = "&lt;img src=x onerror=alert(1)&gt;\\\\x0a\\# heading \\\\x1b\\]0;x\\\\x07"
    assert f"(run {shown})" in body and body.count(shown) == 5  # the run's name and the 4 rows' signature, as text
    assert markdown_text("a|b_[c](d)`e`*") == "a\\|b\\_\\[c\\](d)\\`e\\`\\*"
    card = ModelCard.load(out / "README.md")  # the YAML still parses, the signature on one line
    sig = card.data.eval_results[0].metric_args["signature"]
    assert sig.endswith("<img src=x onerror=alert(1)>\\x0a# heading \\x1b]0;x\\x07") and "\n" not in sig


def test_degenerate_translations_travel_into_the_card(tmp_path):
    """Issue 53: a model whose translations are degenerate: the count beside each MT-GenEval score and as an entry
    of its own (the report shows the degenerate column; the card does too)."""
    from dataclasses import asdict

    from huggingface_hub import ModelCard

    from fairmt.eval.geneval import score_counterfactual

    refs_m = [f"Der Arzt {w} heute." for w in ("kam", "ging", "lachte", "sprach")]
    refs_f = [f"Die Ärztin {w} heute." for w in ("kam", "ging", "lachte", "sprach")]
    junk = ["ariariariariariariariariariariariariariari"] * 4
    g = score_counterfactual(junk, junk, refs_m, refs_f, lang="de", split="test")
    assert g.degenerate["degenerate"] == 8 and g.accuracy == 100.0  # 100 % "gender-accurate" and degenerate
    res = tmp_path / "g.json"
    res.write_text(json.dumps(asdict(g)))
    out = tmp_path / "card"
    assert main(["push", str(_model(tmp_path)), "me/tiny", "--results", str(res), "--dry-run", str(out)]) == 0
    by = {e.metric_type: e for e in ModelCard.load(out / "README.md").data.eval_results}
    assert "8 of 8 translations degenerate" in by["accuracy"].metric_name
    assert by["degenerate_translations"].metric_value == 8
    assert "8 of 8 translations degenerate" in (out / "README.md").read_text().split("---", 2)[2]


def test_embedding_results_have_sentence_transformers_shape():
    """Issue 54: fairmt's card gives SEAT/CCED/Bias-IR the task type sentence-transformers' card makes from its
    evaluators (description.lower().replace(' ', '-')) and their primary metric's name."""
    pytest.importorskip("sentence_transformers")
    from fairmt.eval.modelcard import embedding_eval_results
    from fairmt.integrations.st_evaluators import BiasIREvaluator, CCEDEvaluator, SEATEvaluator

    payload = {
        "seat": {"avg_abs_effect_size": 0.3, "tests": {"6": {"signature": "s"}}},
        "cced": {"gap": 0.04596, "groups": ["male", "female"]},
        "bias_ir": {"avg_dev": 0.0042},
    }
    got = {e.metric_type: e for e in embedding_eval_results(payload)}
    for cls in (SEATEvaluator, CCEDEvaluator, BiasIREvaluator):
        ev = cls.__new__(cls)  # the class's names only; no data needed
        primary = f"{ev.suite}_{ {'seat': 'avg_abs_effect_size', 'cced': 'gap', 'bias_ir': 'avg_dev'}[ev.suite] }"
        assert got[primary].task_type == ev.description.lower().replace(" ", "-")
        assert got[primary].task_name == ev.description
    assert got["bias_ir_avg_dev"].metric_value == 0.0042  # not 0.0


def test_report_path_seat_metrics_have_sentence_transformers_names():
    """A recipe's SEAT results (through the report's table) get the evaluators' metric names too."""
    from fairmt.eval.modelcard import _metric_type

    assert _metric_type("seat_avg_abs") == "seat_avg_abs_effect_size"
    assert _metric_type("seat:6b") == "seat_6b_effect_size" and _metric_type("cced_gap") == "cced_gap"


def test_the_cited_method_of_each_results_file_is_its_familys_answer():
    """The method a card cites, per results file: a recipe's results ask their family (Family.cited_method: cscl/fcl
    by the objective, none for a baseline or sampling's SimCLR control), eval results and sweeps say it themselves;
    translation results alone mean fairmt's MT method."""
    from fairmt.commands.push import results_method

    fixtures = Path(__file__).parents[1] / "fixtures" / "report"
    got = {p.name: results_method([str(p)]) for p in sorted(fixtures.glob("*.json"))}
    assert got == {
        "classification_adversarial_results.json": None,
        "classification_fcl_results.json": "fcl",
        "classification_inlp_results.json": None,
        "dpce_results.json": "dpce",
        "embeddings_minilm.json": None,
        "gacl_tiny_results.json": "gacl",
        "mtbias_google.json": "gacl",
        "mtbias_google_acl2019.json": "gacl",
        "sampling_fair_results.json": "sampling",
        "sampling_simclr_results.json": None,
        "winomt_de.json": "gacl",
    }
