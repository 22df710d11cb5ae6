"""A model that cannot be had fails at once, naming it, saying why and how to get it — never a traceback from deep
inside transformers (issue 13). Hub answers come from a fake Hub on 127.0.0.1."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from fairmt.errors import FairmtError
from fairmt.hub import require_model
from http_standins import serving


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """huggingface_hub pointed at an empty cache and a fake Hub; returns a dict mapping repo ids to responses."""
    from huggingface_hub import constants

    answers: dict[str, tuple[int, dict, bytes]] = {}

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: bool) -> None:
            repo = "/".join(self.path.strip("/").split("/")[:2])
            status, headers, data = answers.get(repo, (404, {"X-Error-Code": "RepoNotFound"}, b""))
            self.send_response(status)
            for k, v in {**headers, "Content-Length": str(len(data))}.items():
                self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_HEAD(self):  # noqa: N802
            self._answer(False)

        def do_GET(self):  # noqa: N802
            self._answer(True)

        def log_message(self, *args):
            pass

    with serving(Handler) as server:
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setattr(
            constants,
            "HUGGINGFACE_CO_URL_TEMPLATE",
            f"http://127.0.0.1:{server.server_port}" + "/{repo_id}/resolve/{revision}/{filename}",
        )
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        yield answers


def test_local_folders(tmp_path):
    (tmp_path / "m").mkdir()
    with pytest.raises(FairmtError, match=r"m: the model folder holds no config.json"):
        require_model(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text("{}")
    with pytest.raises(FairmtError, match=r"m: the model folder's config.json is without a model_type"):
        require_model(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text('{"model_type": "bert"}')
    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2)}, str(tmp_path / "m" / "model.safetensors"))
    (tmp_path / "m" / "vocab.txt").write_text("[PAD]\n")
    assert require_model(tmp_path / "m") == str(tmp_path / "m")
    with pytest.raises(FairmtError, match=r"not a file"):
        require_model(tmp_path / "m" / "config.json")
    with pytest.raises(FairmtError, match=r"nope/model: model folder not found"):
        require_model(str(tmp_path / "nope" / "model"))
    with pytest.raises(FairmtError, match=r"folder not found"):
        require_model("./outputs/run")


def test_offline_and_not_cached(hub, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(FairmtError) as err:
        require_model("alirezamsh/small100", "translation model")
    msg = str(err.value)
    assert (
        "'alirezamsh/small100'" in msg and "HF_HUB_OFFLINE is set" in msg and "hf download alirezamsh/small100" in msg
    )
    assert constants.HF_HUB_CACHE in msg


def test_cached_model_needs_no_network(hub, monkeypatch):
    from huggingface_hub import constants

    snap = Path(constants.HF_HUB_CACHE) / "models--org--cached" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("abc")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert require_model("org/cached") == "org/cached"


def test_hub_answers(hub):
    with pytest.raises(FairmtError, match=r"'org/none' is neither a local folder nor a model on the Hub"):
        require_model("org/none")
    hub["org/gated"] = (403, {"X-Error-Code": "GatedRepo", "X-Error-Message": "gated"}, b"")
    with pytest.raises(FairmtError, match=r"'org/gated' is gated on the Hub.*log in"):
        require_model("org/gated")
    body = b"{}"
    hub["org/ok"] = (200, {"ETag": '"e1"', "X-Repo-Commit": "a" * 40, "Content-Type": "application/json"}, body)
    assert require_model("org/ok") == "org/ok"


def test_hub_unreachable(hub, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.invalid")
    with pytest.raises(
        FairmtError, match=r"'org/model' is neither.*the Hub cannot be reached \(hub.invalid cannot be resolved"
    ):
        require_model("org/model")


def test_train_cli_names_the_missing_model(hub, monkeypatch, capsys, tmp_path):
    """The issue's case: a built-in recipe whose model is not available → exit 2, one line, no traceback."""
    from huggingface_hub import constants

    from fairmt.cli import main

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.chdir(tmp_path)
    rc = main(["train", "gacl/small100_en-de", "training.max_steps=1", f"training.output_dir={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert rc == 2, err
    line = [x for x in err.splitlines() if x.startswith("fairmt: error: ")]
    assert len(line) == 1 and "'alirezamsh/small100'" in line[0] and "HF_HUB_OFFLINE" in line[0], err
