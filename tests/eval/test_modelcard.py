"""Model cards: fairmt results → model-index, written offline and parsed back."""

from __future__ import annotations

import pytest
from huggingface_hub import ModelCard

from fairmt.errors import FairmtError
from fairmt.eval.geneval import score_contextual, score_counterfactual
from fairmt.eval.modelcard import build_model_card, eval_results, read_eval_results, write_model_card
from fairmt.eval.translation import TranslationQualityResult


def _geneval():
    return score_counterfactual(
        ["Er ist Arzt.", "Er kam."],
        ["Sie ist Ärztin.", "Er kam."],
        ["Er ist Arzt.", "Er kam."],
        ["Sie ist Ärztin.", "Sie kam."],
        lang="de",
        split="test",
    )


def _flores(official: bool):
    return TranslationQualityResult(
        lang_pair="eng_Latn-deu_Latn",
        n=1012,
        spbleu=36.04 if official else None,
        bleu_spm_nonstandard=None if official else 30.5,
        chrfpp=55.1,
        bleu_label="spBLEU" if official else "spBLEU*",
        bleu_signature="nrefs:1|case:mixed|eff:no|tok:flores200|smooth:exp|version:2.6.0"
        if official
        else "nrefs:1|case:mixed|eff:no|tok:spm-nonstandard:abc|smooth:exp|version:2.6.0",
        chrf_signature="nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|version:2.6.0",
        spm_model="x",
        spm_model_sha256="y",
    )


WINOMT = {
    "lang": "de",
    "accuracy": 59.4,
    "delta_g": 12.5,
    "delta_s": 12.5,
    "delta_r": 20.1,
    "f1_male": 70.0,
    "f1_female": 57.5,
    "n": 3888,
    "signature": "WinoMT|lang:de|v:1.0",
}


def test_write_and_parse_back(tmp_path):
    g = _geneval()
    readme = write_model_card(
        tmp_path / "model",
        [g, _flores(True), WINOMT],
        model_name="small100-gacl-de",
        base_model="alirezamsh/small100",
        languages=["en", "de"],
        license="mit",
    )
    assert readme == tmp_path / "model" / "README.md"
    card = ModelCard.load(readme)
    assert card.data.model_name == "small100-gacl-de" and card.data.base_model == "alirezamsh/small100"
    by = {(e.dataset_type, e.metric_type): e for e in card.data.eval_results}
    assert by[("mt_geneval", "accuracy")].metric_value == g.accuracy == 50.0  # pair-level: 1 of 2 pairs
    assert by[("mt_geneval", "explicit_delta_g")].metric_value == g.explicit_delta_g  # full precision
    assert by[("mt_geneval", "accuracy")].metric_args["signature"] == g.signature
    assert by[("mt_geneval", "accuracy")].dataset_split == "test"
    assert by[("facebook/flores", "bleu")].metric_value == 36.04
    assert by[("facebook/flores", "bleu")].metric_name.startswith("spBLEU (")
    assert by[("facebook/flores", "chrf")].metric_value == 55.1
    # an `eval winomt` result written before the one ΔG (delta_g the F1 gap, no delta_g_f1): read as such, ΔG being
    # the accuracy gap (= ΔR on WinoMT)
    assert by[("winomt", "delta_g_f1")].metric_value == 12.5 and by[("winomt", "delta_g")].metric_value == 20.1
    assert by[("winomt", "accuracy")].dataset_config == "en-de"
    text = readme.read_text()
    assert "model-index:" in text and "## Evaluation (fairmt)" in text and g.signature in text
    assert len(read_eval_results(readme)) == 5 + 2 + 4  # MT-GenEval: accuracy, explicit, ΔG, E-ΔG


def test_write_model_card_writes_the_eval_results_beside_the_card(tmp_path):
    """Issue 54: the Python API writes the `.eval_results` files too (FLORES-200 is on the Hub, MT-GenEval is not)."""
    import yaml
    from huggingface_hub import parse_eval_result_entries

    write_model_card(tmp_path / "m", [_geneval(), _flores(True)], model_name="m", repo_id="me/m")
    (name,) = [p.name for p in (tmp_path / "m" / ".eval_results").iterdir()]
    entries = parse_eval_result_entries(yaml.safe_load((tmp_path / "m" / ".eval_results" / name).read_text()))
    assert name == "facebook__flores.yaml" and sorted(e.value for e in entries) == [36.04, 55.1]
    assert {e.source_url for e in entries} == {"https://huggingface.co/me/m"}


def test_nonstandard_bleu_never_called_spbleu(tmp_path):
    readme = write_model_card(tmp_path, [_flores(False)], model_name="m")
    entries = read_eval_results(readme)
    bleu = [e for e in entries if e["metric_type"].startswith("bleu")]
    assert [e["metric_type"] for e in bleu] == ["bleu_spm_nonstandard"]
    assert bleu[0]["metric_name"].startswith("spBLEU*") and "non-standard" in bleu[0]["metric_name"]


def test_update_existing_card_keeps_metadata_and_replaces_results(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "---\nlicense: apache-2.0\ntags:\n- generated_from_trainer\nmodel-index:\n- name: m\n  results: []\n---\n\n"
        "# m\n\nTrained with the GACL recipe.\n",
        encoding="utf-8",
    )
    write_model_card(readme, [_geneval(), _flores(True)], model_name="m")
    better = score_counterfactual(["Er kam."], ["Sie kam."], ["Er kam."], ["Sie kam."], lang="de", split="test")
    write_model_card(tmp_path, [better, score_contextual(["x"], ["Er kam."], ["Sie kam."], lang="de")], model_name="m")
    card = ModelCard.load(readme)
    assert card.data.license == "apache-2.0" and "generated_from_trainer" in card.data.tags
    assert "Trained with the GACL recipe." in card.text
    acc = [e for e in card.data.eval_results if e.dataset_type == "mt_geneval" and e.metric_type == "accuracy"]
    assert sorted((e.dataset_config, e.metric_value) for e in acc) == [
        ("contextual-en-de", 100.0),
        ("counterfactual-en-de", 100.0),
    ]
    assert any(e.metric_type == "bleu" for e in card.data.eval_results)  # earlier FLORES entry kept
    assert card.text.count("## Evaluation (fairmt)") == 1


def test_bad_inputs():
    with pytest.raises(FairmtError, match="pass lang="):
        eval_results([{k: v for k, v in WINOMT.items() if k != "lang"}])
    with pytest.raises(FairmtError, match="do not know how"):
        eval_results([42])


def test_build_without_writing():
    card = build_model_card([_geneval()], model_name="m")
    assert "model-index" in str(card) and card.data.eval_results[0].task_type == "translation"


def test_winomt_result_object(tmp_path):
    """The WinoMT evaluator's own result type goes into the card (ΔS skipped when the gold has no pro/anti)."""
    evaluate = pytest.importorskip("fairmt.eval.winomt.evaluate")
    r = evaluate.WinoMTResult(
        lang="ru",
        accuracy=37.7,
        delta_g=40.0,
        delta_g_f1=36.8,
        delta_s=None,
        delta_r=40.0,
        f1_male=60.0,
        f1_female=23.2,
        precision_male=1.0,
        recall_male=1.0,
        precision_female=1.0,
        recall_female=1.0,
        acc_pro=None,
        acc_anti=None,
        n=3888,
        n_unknown=0,
        n_unaligned=0,
        compat="acl2019",
        signature="winomt|v:1|lang:ru",
    )
    readme = write_model_card(tmp_path, [r], model_name="m")
    got = {e["metric_type"]: e for e in read_eval_results(readme)}
    assert set(got) == {"accuracy", "delta_g", "delta_g_f1", "delta_r"}
    assert got["delta_g"]["metric_value"] == 40.0 and got["accuracy"]["dataset_config"] == "en-ru"
    assert got["delta_g"]["metric_name"] == "WinoMT ΔG (en-ru)" and got["delta_g_f1"]["metric_value"] == 36.8
    assert got["delta_g_f1"]["metric_name"] == "WinoMT ΔG_F1 (en-ru)"
    assert got["delta_g_f1"]["metric_args"] == {"signature": "winomt|v:1|lang:ru"}
    assert got["accuracy"]["metric_args"] == {"signature": "winomt|v:1|lang:ru"}


def test_card_cites_the_method_and_each_benchmark_and_says_what_they_measure(tmp_path):
    readme = write_model_card(tmp_path / "m", [_flores(True), WINOMT], model_name="x", languages=["en", "de"])
    text = readme.read_text()
    # the GACL paper as published (not "Lee, Lee, Bang & Oh, Findings"): title, all six authors, main conference
    assert (
        "Target-Agnostic Gender-Aware Contrastive Learning for Mitigating Bias in Multilingual Machine Translation"
        in text
    )
    assert "Lee, Minwoo and Koh, Hyukhun and Lee, Kang-il and Zhang, Dongdong and Kim, Minsung and Jung, Kyomin" in text
    assert "2023.emnlp-main.1046" in text and "Findings" not in text
    assert "Evaluating Gender Bias in Machine Translation" in text and "No Language Left Behind" in text
    assert "MT-GenEval" not in text.split("### Citation")[1]  # no MT-GenEval result, no MT-GenEval citation
    assert "### What these results measure (limitations)" in text and "does not measure bias" in text
    # signatures hold '|': escaped inside the Markdown table so the columns stay put
    row = next(line for line in text.splitlines() if line.startswith("| FLORES-200") and "chrF++" in line)
    assert "nrefs:1\\|case:mixed" in row and row.count(" | ") == 4
    ccd = write_model_card(tmp_path / "c", [WINOMT], model_name="y", method="ccd").read_text()
    assert "Content Conditional Debiasing" in ccd and "Target-Agnostic" not in ccd


def test_citation_registry_rejects_unknown_keys():
    from fairmt.citations import bibtex

    with pytest.raises(KeyError, match="no citation"):
        bibtex("lee2023gacl", "nobody2099")
    assert bibtex("lee2023gacl", "lee2023gacl").count("@inproceedings") == 1
