"""`fairmt push`: uploads the folder (through a patched HfApi), writes WinoMT results into the model card."""

import json
import shutil

import pytest
from huggingface_hub import HfApi

from fairmt.cli import main


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kw: None)

    def upload_folder(self, repo_id, folder_path, **kw):
        shutil.copytree(folder_path, hub / repo_id, dirs_exist_ok=True)
        return type("C", (), {"commit_url": f"local://{repo_id}"})()

    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    return hub


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
