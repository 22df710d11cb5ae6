"""`fairmt eval winomt` follows the eval commands' conventions: `--json -` prints JSON alone, several languages give
{"per_language": [...], averages}; `--lang all` says which languages it skips and why; `--detector` loads your own."""

import json

import pytest

from fairmt.cli import main

pytestmark = pytest.mark.data

DETECTOR = """
from fairmt.eval.winomt.detectors import GenderDetector


class ByLength(GenderDetector):  # a stand-in analyser: any rule that gives both genders
    lang = "nl"

    def detect_text(self, text):
        return "male" if len(text) % 2 else "female"


def make():
    return ByLength()
"""


def test_json_to_stdout_and_per_language_shape(shared_data, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    google = shared_data / "winomt" / "translations" / "google"
    assert (
        main(
            [
                "eval",
                "winomt",
                "--lang",
                "he",
                "--translations",
                str(google / "en-he.txt"),
                "--compat",
                "acl2019",
                "--json",
                "-",
            ]
        )
        == 0
    )
    single = json.loads(capsys.readouterr().out)  # nothing but the JSON on stdout
    assert (single["accuracy"], single["delta_g_f1"]) == (53.7, 7.9)
    out = tmp_path / "two.json"
    assert (
        main(
            [
                "eval",
                "winomt",
                "--lang",
                "he,de",
                "--translations",
                str(google),
                "--compat",
                "acl2019",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    both = json.loads(out.read_text())
    assert [r["lang"] for r in both["per_language"]] == ["he", "de"]
    assert both["accuracy"] == pytest.approx((53.7 + 59.3) / 2)
    assert f"wrote JSON to {out}" in capsys.readouterr().err


def test_all_languages_name_the_skipped_ones_and_a_user_detector_fills_the_gap(
    shared_data, monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    from fairmt.commands.eval_winomt import _languages

    google = shared_data / "winomt" / "translations" / "google"
    langs = _languages("all", str(google))
    assert "nl" not in langs and "pt" not in langs and "de" in langs
    assert "skipping nl, pt: no gender detector" in capsys.readouterr().err
    (tmp_path / "my_dutch.py").write_text(DETECTOR)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert (
        main(
            [
                "eval",
                "winomt",
                "--lang",
                "nl",
                "--translations",
                str(google / "en-nl.txt"),
                "--compat",
                "acl2019",
                "--detector",
                "nl=my_dutch:make",
                "--json",
                "-",
            ]
        )
        == 0
    )
    res = json.loads(capsys.readouterr().out)
    assert res["lang"] == "nl" and res["n"] == 3888 and "ByLength" in res["signature"]
    assert (
        main(
            [
                "eval",
                "winomt",
                "--lang",
                "nl",
                "--translations",
                str(google / "en-nl.txt"),
                "--detector",
                "nl=nowhere:make",
            ]
        )
        == 2
    )
    assert "cannot load nowhere:make" in capsys.readouterr().err
    from fairmt.eval.winomt.detectors import registry

    registry._REGISTRY.pop("nl", None)  # leave the registry as the other tests expect it
