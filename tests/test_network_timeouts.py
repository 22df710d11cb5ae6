"""Downloads and uploads fail as themselves: every network call has a timeout (FAIRMT_NET_TIMEOUT), and a push to an
endpoint that accepts the connection and never answers says so, in one line, and changes nothing locally."""

from __future__ import annotations

import socket
import threading
import time

import pytest

import procs
from fairmt.errors import FairmtError


@pytest.fixture
def silent_server():
    """A local endpoint that accepts every connection and never answers (held open until the test ends)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_push_to_an_endpoint_that_never_answers_times_out_in_one_line(tmp_path, silent_server):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "README.md").write_text("mine\n")
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    t0 = time.monotonic()
    proc = procs.run(procs.python("-m", "fairmt", "push", model, "me/tiny"), timeout=120,
                     env=procs.env({"HF_ENDPOINT": silent_server, "HF_TOKEN": "hf_test", "FAIRMT_NET_TIMEOUT": "1",
                                    "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}))
    took = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert f"the Hub ({silent_server}) did not answer within 1 s (FAIRMT_NET_TIMEOUT" in last, proc.stderr[-2000:]
    assert "nothing was changed locally" in last and "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before
    assert took < 60, took  # not the hang the campaign measured (150 s and counting)


def test_the_timeout_variable_is_checked_like_an_option(monkeypatch):
    from fairmt.hub import network_timeout

    monkeypatch.delenv("FAIRMT_NET_TIMEOUT", raising=False)
    assert network_timeout() == 60.0
    monkeypatch.setenv("FAIRMT_NET_TIMEOUT", "2.5")
    assert network_timeout() == 2.5
    for bad in ("abc", "-1", "0", "nan", "inf"):
        monkeypatch.setenv("FAIRMT_NET_TIMEOUT", bad)
        with pytest.raises(FairmtError, match=rf"FAIRMT_NET_TIMEOUT='{bad}': give the network timeout in seconds"):
            network_timeout()


def test_a_download_from_a_mirror_that_never_answers_times_out_naming_the_setting(tmp_path, silent_server,
                                                                                  monkeypatch):
    from fairmt.data.download import _fetch

    monkeypatch.setenv("FAIRMT_NET_TIMEOUT", "0.5")
    with pytest.raises(FairmtError, match=r"no answer within 0.5 s; FAIRMT_NET_TIMEOUT sets the timeout"):
        _fetch(f"{silent_server}/winomt/en.txt", tmp_path / "en.txt")
