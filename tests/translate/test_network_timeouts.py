"""Downloads and uploads fail as themselves: every network call has a timeout (FAIRMT_NET_TIMEOUT), and a push to an
endpoint that accepts the connection and never answers says so, in one line, and changes nothing locally."""

from __future__ import annotations

import time

import pytest

import procs
from fairmt.errors import FairmtError


@pytest.fixture
def silent_server():
    """A local endpoint that accepts every connection and never answers (tests/support/silent_server.py)."""
    from silent_server import silent_server as serve

    with serve() as url:
        yield url


def test_push_to_an_endpoint_that_never_answers_times_out_in_one_line(tmp_path, silent_server):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "README.md").write_text("mine\n")
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    t0 = time.monotonic()
    # --timeout 1 wins over the variable's 600
    proc = procs.run(
        procs.python("-m", "fairmt", "push", model, "me/tiny", "--timeout", "1"),
        timeout=120,
        env=procs.env(
            {
                "HF_ENDPOINT": silent_server,
                "HF_TOKEN": "hf_test",
                "FAIRMT_NET_TIMEOUT": "600",
                "HF_HUB_OFFLINE": "0",
                "HF_HUB_DISABLE_TELEMETRY": "1",
            }
        ),
    )
    took = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert f"the Hub ({silent_server}) did not answer within 1 s (--timeout 1)" in last, proc.stderr[-2000:]
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


def test_a_download_from_a_mirror_that_never_answers_times_out_naming_the_setting(tmp_path, silent_server, monkeypatch):
    from fairmt.data.download import _fetch

    monkeypatch.setenv("FAIRMT_NET_TIMEOUT", "0.5")
    with pytest.raises(
        FairmtError,
        match=r"no answer within 0.5 s \(FAIRMT_NET_TIMEOUT sets the timeout; --timeout "
        r"SECONDS overrides it\)",
    ):
        _fetch(f"{silent_server}/winomt/en.txt", tmp_path / "en.txt")


def test_data_download_timeout_option_wins_over_the_variable(tmp_path, silent_server, monkeypatch, capsys):
    """``fairmt data download --timeout 0.5`` against a mirror that never answers: one line naming the option, in
    about the option's time (the variable says 600)."""
    from fairmt.cli import main
    from fairmt.hub import use_timeout

    monkeypatch.setenv("FAIRMT_NET_TIMEOUT", "600")
    t0 = time.monotonic()
    try:
        rc = main(
            [
                "data",
                "download",
                "winomt",
                "--base-url",
                silent_server,
                "--output-dir",
                str(tmp_path / "d"),
                "--timeout",
                "0.5",
                "--no-progress",
            ]
        )
    finally:
        use_timeout(None)  # the option is the command's; this process runs other commands after it
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("fairmt: error:")]
    assert rc == 2 and len(lines) == 1 and "no answer within 0.5 s (--timeout 0.5)" in lines[0], err[-2000:]
    assert took < 30, took


@pytest.mark.parametrize(
    "command", [["push", "m", "me/x"], ["data", "download", "winomt"], ["data", "corpora", "--fetch", "moji"]]
)
@pytest.mark.parametrize(
    "value, why",
    [
        ("0", "must be a number > 0, got 0"),
        ("-3", "must be a number > 0, got -3"),
        ("nan", "not a finite number"),
        ("inf", "not a finite number"),
        ("abc", "abc"),
    ],
)
def test_the_timeout_option_is_checked_like_an_option(command, value, why, capsys):
    from fairmt.cli import main

    try:
        rc = main([*command, "--timeout", value])
    except SystemExit as exit_:
        rc = exit_.code
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("fairmt: error:")]
    assert rc == 2 and len(lines) == 1 and "argument --timeout:" in lines[0] and why in lines[0], err


def test_the_timeout_has_one_default_named_in_the_help_and_the_docs():
    from pathlib import Path

    from fairmt.cli import build_parser
    from fairmt.hub import DEFAULT_TIMEOUT_S, network_timeout

    assert network_timeout() == DEFAULT_TIMEOUT_S
    parser = build_parser()
    helps = [
        a.help
        for sub in _leaves(parser)
        for a in sub._actions
        if "--timeout" in a.option_strings and "network" in (a.help or "")
    ]
    assert len(helps) == 3 and all(f"else {DEFAULT_TIMEOUT_S:g})" in h and "FAIRMT_NET_TIMEOUT" in h for h in helps)
    page = (Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md").read_text()
    assert "--timeout SECONDS" in page and f"default {DEFAULT_TIMEOUT_S:g}" in page


def _leaves(parser):
    from fairmt.cli import _leaves as leaves

    return leaves(parser)
