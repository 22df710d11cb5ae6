"""Issue 53, the first hour: dry runs check the files and keys the run reads (the hate-speech split files, the
Bias-in-Bios sample with the command that fetches it), an offline machine costs one short probe and one line
instead of Hub retries, the NLLB recipes read the en/de files of the SMaLL-100 recipes, and a GACL run names what it
trained (the plain control of the tiny recipe included)."""

from __future__ import annotations

import json
import socket
import time

import pytest

from fairmt.cli import main


def _dry(argv, capsys):
    rc = main(["train", *argv, "--dry-run"])
    printed = capsys.readouterr()
    return rc, [line for line in printed.err.splitlines() if line.startswith("dry run:")], printed


def test_hatespeech_dry_run_finds_the_missing_english_train_split(shared_data, tmp_path, monkeypatch, capsys):
    """The public English folder has valid/test only: the dry run reports the missing train.tsv with the run's own
    line (it used to find nothing and the run stopped at once)."""
    from fairmt.data.classification import read_hatespeech
    from fairmt.errors import FairmtError

    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    monkeypatch.chdir(tmp_path)
    assert not (shared_data / "hatespeech_huang2020/English/train.tsv").exists()
    rc, findings, printed = _dry(["classification/fcl_hatespeech"], capsys)
    assert rc == 2, printed.err[-2000:]
    with pytest.raises(FairmtError) as err:
        read_hatespeech("English", "age")
    assert [f for f in findings if str(err.value) in f], findings
    assert "English/train.tsv not found" in str(err.value)


def test_bios_dry_run_says_which_command_fetches_the_sample(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path / "empty"))
    monkeypatch.chdir(tmp_path)
    rc, findings, _ = _dry(["classification/fcl"], capsys)
    assert rc == 2
    assert any("bios_28prof_x10.csv does not exist" in f and "fairmt data download bios" in f for f in findings), (
        findings
    )
    from fairmt.commands.train import builtin_recipes, recipe_availability

    assert "`fairmt data download bios`" in recipe_availability(builtin_recipes()["classification/fcl"])


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: a connection is refused at once
    return port


@pytest.mark.parametrize("how", ["refused", "HF_HUB_OFFLINE"])
def test_nllb_dry_run_offline_is_one_probe_and_one_line(how, tmp_path, monkeypatch, capsys):
    """No Hub: the dry run does not try to download the model's config (transformers' and huggingface_hub's retries
    took 23 s); it says once why the Hub is out of reach, and finishes in seconds."""
    from huggingface_hub import constants

    import fairmt.recipes.gacl.runner  # noqa: F401 - imported before the clock starts: transformers' Trainer takes seconds
    import fairmt.trainers.gacl  # noqa: F401

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: the model is not here
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    if how == "refused":
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    t0 = time.monotonic()
    rc, findings, printed = _dry(["gacl/nllb600m_en-de"], capsys)
    took = time.monotonic() - t0
    assert rc == 2 and took < 10, (took, printed.err[-2000:])
    model = [f for f in findings if "facebook/nllb-200-distilled-600M" in f]
    assert len(model) == 1 and "the Hub is not reachable here" in model[0], findings
    assert ("HF_HUB_OFFLINE is set" if how == "HF_HUB_OFFLINE" else "cannot be reached (") in model[0]
    assert sum("not reachable" in f for f in findings) == 1


def test_nllb_recipe_reads_the_en_de_file_of_the_small100_recipes(tmp_path):
    """`eng_Latn`/`deu_Latn` recipes read {"translation": {"en", "de"}} rows (and their own keys); a row with neither
    names both spellings."""
    from fairmt.data.parallel import read_parallel
    from fairmt.errors import FairmtError
    from fairmt.recipes.gacl.runner import key_aliases

    aliases = key_aliases("eng_Latn", "deu_Latn")
    assert aliases == {"eng_Latn": "en", "deu_Latn": "de"} and key_aliases("en", "de") == {}
    path = tmp_path / "en-de.jsonl"
    rows = [
        {"translation": {"en": "The doctor lost her car.", "de": "Die Ärztin hat ihr Auto verloren."}},
        {"translation": {"eng_Latn": "He slept.", "deu_Latn": "Er schlief."}},
    ]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    ds = read_parallel(path, "eng_Latn", "deu_Latn", key_aliases=aliases)
    assert ds["src"] == ["The doctor lost her car.", "He slept."]
    assert ds["tgt"] == ["Die Ärztin hat ihr Auto verloren.", "Er schlief."]
    with pytest.raises(
        FairmtError,
        match=r'line|:1: expected \{"translation": \{"eng_Latn" or "en": \.\.\., '
        r'"deu_Latn" or "de": \.\.\.\}\}',
    ):
        bad = tmp_path / "fr.jsonl"
        bad.write_text(json.dumps({"translation": {"en": "a", "fr": "b"}}) + "\n", encoding="utf-8")
        read_parallel(bad, "eng_Latn", "deu_Latn", key_aliases=aliases)


def test_nllb_dry_run_counts_the_en_de_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "en-de.jsonl"
    pairs = [
        ("The doctor lost her car.", "Die Ärztin hat ihr Auto verloren."),
        ("The doctor lost his car.", "Der Arzt hat sein Auto verloren."),
    ] * 20
    path.write_text(
        "".join(json.dumps({"translation": {"en": e, "de": d}}, ensure_ascii=False) + "\n" for e, d in pairs),
        encoding="utf-8",
    )
    # fairmt's own word list: the paper recipe's Zhao et al. lists are data (`fairmt data download lexicons`) this
    # test does not fetch
    _, findings, printed = _dry(["gacl/nllb600m_en-de", f"data.train={path}", "data.lexicon=fairmt"], capsys)
    assert not [f for f in findings if "data.train" in f], findings
    assert "data: 40 pairs read, 40 after data.prepare=gacl" in printed.err, printed.err[-2000:]


@pytest.mark.parametrize(
    ("lam", "alpha", "name"),
    [
        (1.0, 0.4, "GACL + KD (gender-aware contrastive learning + knowledge distillation)"),
        (0.0, 0.0, "plain fine-tuning control (MT loss only: gacl_lambda 0, kd_alpha 0)"),
        (1.0, 0.0, "GACL (gender-aware contrastive learning, no KD: kd_alpha 0)"),
        (0.0, 0.4, "KD-only (knowledge distillation, no contrastive term: gacl_lambda 0)"),
    ],
)
def test_a_gacl_run_names_what_it_trained(lam, alpha, name):
    from fairmt.recipes.gacl.runner import run_kind

    assert run_kind(lam, alpha) == name
