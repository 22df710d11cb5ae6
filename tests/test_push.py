"""`fairmt push`: uploads the folder (through a patched HfApi), writes WinoMT results into the model card."""

import json

import pytest

from fairmt.cli import main


def test_push_with_winomt_results(tmp_path, fake_hub, capsys):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    res = tmp_path / "de.json"
    res.write_text(json.dumps({"lang": "de", "accuracy": 61.2, "delta_g": 3.1, "delta_s": 5.0, "delta_r": 2.0,
                               "f1_male": 70.0, "f1_female": 66.9, "n": 3888, "signature": "WinoMT|lang:de|v:1"}))
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
    for name in ("config.json", "model.safetensors", "tokenizer_config.json", "sentencepiece.bpe.model",
                 "generation_config.json", "training_args.bin", "trainer_state.json", "gacl_projection_head.safetensors", "adversary.safetensors",
                 "checkpoint-500/optimizer.pt", "checkpoint-500/rng_state.pth", "checkpoint-500/model.safetensors"):
        (out / name).write_text("x")
    geneval = tmp_path / "geneval.json"
    from dataclasses import asdict

    from fairmt.eval.geneval import score_counterfactual

    result = score_counterfactual(["Er ist Arzt."], ["Sie ist Ärztin."], ["Er ist Arzt."], ["Sie ist Ärztin."],
                                  lang="de", split="test")
    geneval.write_text(json.dumps({"per_language": [asdict(result)]}))  # as `fairmt eval geneval --json` writes
    assert main(["push", str(out), "me/gacl", "--results", str(geneval)]) == 0
    uploaded = sorted(p.relative_to(fake_hub / "me" / "gacl").as_posix() for p in (fake_hub / "me" / "gacl").rglob("*")
                      if p.is_file())
    assert uploaded == ["README.md", "config.json", "generation_config.json", "model.safetensors",
                        "sentencepiece.bpe.model", "tokenizer_config.json"]
    card = (fake_hub / "me" / "gacl" / "README.md").read_text()
    assert "MT-GenEval" in card and "Currey" in card  # the result and its benchmark's citation
    assert main(["push", str(out), "me/all", "--all-files"]) == 0
    assert (fake_hub / "me" / "all" / "checkpoint-500" / "optimizer.pt").is_file()
    bad = tmp_path / "emb.json"
    bad.write_text(json.dumps({"seat": {}, "suites": ["seat"]}))
    assert main(["push", str(out), "me/x", "--results", str(bad)]) == 2
