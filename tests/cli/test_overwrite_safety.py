"""``--overwrite`` removes only what fairmt wrote (issue 35): the three data losses of the issue, every refusal, the
manifest (a killed run's checkpoints included), symbolic links, and each writer that takes ``--overwrite``.

Every test puts the user's own files next to (or in place of) the output and compares them by content and mtime
before and after (:func:`snapshot`). ``COVERED`` lists, per command with ``--overwrite``, the tests here that cover
it; ``tests/cli/test_hostile_campaign.py`` fails when a command found in the CLI's parsers is missing from it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fairmt.cli import main
from fairmt.errors import FairmtError
from fairmt.outputs import LOCK_NAME, MANIFEST, FolderPlan, check_overwrite, claim_run_dir, publish_dir, release_run_dir

# ---------------------------------------------------------------------------------------------- helpers


def snapshot(*roots: Path) -> dict[str, tuple]:
    """Every entry under ``roots`` (links not followed): its kind, content (files, link targets, a folder's entries)
    and mtime (files, links)."""
    found: dict[str, tuple] = {}

    def add(p: Path) -> None:
        st = os.lstat(p)
        if p.is_symlink():
            found[str(p)] = ("link", os.readlink(p), st.st_mtime_ns)
        elif p.is_dir():  # its entries (a folder's own mtime moves when a writability probe comes and goes)
            found[str(p)] = ("dir", sorted(c.name for c in p.iterdir()), None)
            for child in sorted(p.iterdir()):
                add(child)
        else:
            found[str(p)] = ("file", p.read_bytes(), st.st_mtime_ns)

    for root in roots:
        add(root)
    return found


def user_files(folder: Path) -> list[Path]:
    """A user's files in ``folder``: notes, a data file, a sub-folder with a file in it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "data.csv").write_text("a,b\n1,2\n")
    (folder / "Documents").mkdir(exist_ok=True)
    (folder / "Documents" / "thesis.md").write_text("# chapter 1\n")
    return [folder / "notes.txt", folder / "data.csv", folder / "Documents"]


def recipe(path: Path, out: Path, *, data: Path | None = None) -> Path:
    """A GACL recipe of the user's (the tiny offline one's settings): refused runs stop before the model loads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"method: gacl\nmodel: {path.parent / 'no-model-yet'}\nsrc_lang: en\ntgt_lang: de\n"
        f"data:\n  train: {data or path.parent / 'no-data-yet.jsonl'}\n  eval_fraction: 0\n"
        f"training:\n  output_dir: {out}\n  max_steps: 2\n  eval_strategy: 'no'\n  save_strategy: 'no'\n"
        "  use_cpu: true\n  report_to: []\n"
    )
    return path


def refused(capsys, argv: list[str], *words: str) -> str:
    """``fairmt ARGV`` ends in one ``fairmt: error:`` line holding ``words``, exit 2; returns the line."""
    try:
        rc = main(argv)
    finally:
        release_run_dir()
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    lines = [ln for ln in err if ln.startswith("fairmt: error:")]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture(autouse=True)
def _release():
    yield
    release_run_dir()


# ---------------------------------------------------------------------------------------------- the three cases


def test_train_output_dir_dot_overwrite_in_a_project_folder_is_refused(tmp_path, monkeypatch, capsys):
    project = tmp_path / "work" / "project"
    user_files(project)
    rec = recipe(tmp_path / "recipes" / "mine.yaml", tmp_path / "elsewhere")
    monkeypatch.chdir(project)
    before = snapshot(project)
    refused(
        capsys, ["train", str(rec), "--output-dir", ".", "--overwrite"], "it is the current folder", "nothing removed"
    )
    assert snapshot(project) == before
    # the dry run says so too, and a folder above the current one is refused the same way
    assert main(["train", str(rec), "--output-dir", ".", "--overwrite", "--dry-run"]) == 2
    assert "it is the current folder" in capsys.readouterr().err
    refused(
        capsys, ["train", str(rec), "--output-dir", str(tmp_path / "work"), "--overwrite"], "holds the current folder"
    )
    assert snapshot(project) == before


def test_demo_output_dir_home_overwrite_is_refused(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    user_files(home)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("key\n")
    (home / "report.json").write_text("my own report, named like the demo's\n")
    monkeypatch.setenv("HOME", str(home))
    before = snapshot(home)
    refused(
        capsys,
        ["demo", "--output-dir", "~", "--overwrite", "--seeds", "1", "--no-progress"],
        "it is a home folder",
        str(home),
    )
    refused(capsys, ["demo", "--output-dir", str(tmp_path), "--overwrite", "--no-progress"], "holds the home folder")
    # a link to the home folder is the home folder
    (tmp_path / "link").symlink_to(home)
    refused(
        capsys, ["demo", "--output-dir", str(tmp_path / "link"), "--overwrite", "--no-progress"], "it is a home folder"
    )
    assert snapshot(home) == before


def test_the_current_users_home_from_the_password_database_is_refused_even_with_another_home(tmp_path, monkeypatch):
    import pwd

    from fairmt.outputs import _unsafe_place

    monkeypatch.setenv("HOME", str(tmp_path))
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert "home folder" in _unsafe_place(real_home, [])  # read-only: nothing is ever removed there by this test
    assert _unsafe_place(tmp_path / "run", []) is None


def test_train_overwrite_in_the_folder_holding_the_recipe_is_refused(tmp_path, capsys):
    run = tmp_path / "run"
    rec = recipe(run / "my-recipe.yaml", run)
    user_files(run)
    before = snapshot(run)
    refused(capsys, ["train", str(rec), "--overwrite"], f"it holds {rec}", "one of this run's inputs")
    assert snapshot(run) == before
    refused(capsys, ["train", str(rec), "--output-dir", str(run), "--overwrite"], "one of this run's inputs")
    assert snapshot(run) == before


# ---------------------------------------------------------------------------------------------- every refusal


def test_a_folder_holding_git_a_run_input_or_a_mount_point_is_refused(tmp_path, capsys):
    repo = tmp_path / "repo"
    user_files(repo)
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    rec = recipe(tmp_path / "r.yaml", tmp_path / "unused")
    before = snapshot(repo)
    refused(capsys, ["train", str(rec), "--output-dir", str(repo), "--overwrite"], "holds .git")
    assert snapshot(repo) == before

    run = tmp_path / "run"
    user_files(run)
    (run / "pairs.jsonl").write_text('{"translation": {"en": "He is here.", "de": "Er ist hier."}}\n')
    rec = recipe(tmp_path / "r2.yaml", run, data=run / "pairs.jsonl")
    before = snapshot(run)
    refused(capsys, ["train", str(rec), "--overwrite"], "pairs.jsonl, one of this run's inputs")
    assert snapshot(run) == before

    for root in ("/", "/proc"):  # a filesystem root, a mount point: the check alone (it touches nothing)
        with pytest.raises(FairmtError, match="filesystem root"):
            check_overwrite(root)


def test_an_unknown_checkpoint_is_refused_naming_it_and_nothing_is_removed(tmp_path, capsys):
    run = tmp_path / "run"
    claim_run_dir(run)
    (run / "checkpoint-2").mkdir()
    (run / "checkpoint-2" / "model.safetensors").write_text("fairmt's")
    release_run_dir()
    (run / "checkpoint-9").mkdir()  # copied in by the user afterwards: the Trainer's resume would pick it up
    (run / "checkpoint-9" / "model.safetensors").write_text("someone else's")
    user_files(run)
    before = snapshot(run)
    rec = recipe(tmp_path / "r.yaml", run)
    line = refused(
        capsys,
        ["train", str(rec), "--overwrite"],
        "checkpoint-9 was not written by fairmt here",
        "resume from or write over it",
    )
    assert "checkpoint-2" not in line
    assert snapshot(run) == before


def test_a_manifest_naming_a_path_outside_the_folder_is_refused(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "precious"
    user_files(outside)
    run.mkdir()
    (run / MANIFEST).write_text(json.dumps({"made": ["../precious"]}) + "\n")
    before = snapshot(outside)
    with pytest.raises(FairmtError, match=r"names \.\./precious, outside this folder"):
        claim_run_dir(run, overwrite=True)
    assert snapshot(outside) == before and not (run / LOCK_NAME).exists()


# ---------------------------------------------------------------------------------------------- what is removed


def test_overwrite_removes_what_fairmt_wrote_and_keeps_the_users_files(tmp_path):
    run = tmp_path / "run"
    mine = user_files(run)  # there before the first run
    claim_run_dir(run, overwrite=True)
    (run / "checkpoint-2").mkdir()
    (run / "results.json").write_text("{}")
    (run / "oddly-named-output.bin").write_text("fairmt's too: made while the run held the folder")
    release_run_dir()
    (run / "later-notes.txt").write_text("added by the user after the run")
    (run / "config.json").write_text("the user's, after the run")  # named like fairmt's, not listed: refused
    with pytest.raises(FairmtError, match="config.json was not written by fairmt"):
        claim_run_dir(run, overwrite=True)
    (run / "config.json").unlink()
    keep = [*mine, run / "later-notes.txt"]
    before = snapshot(*keep)
    claim_run_dir(run, overwrite=True)
    assert snapshot(*keep) == before
    assert sorted(p.name for p in run.iterdir()) == sorted(
        [LOCK_NAME, MANIFEST, "Documents", "data.csv", "later-notes.txt", "notes.txt"]
    )
    claim = [json.loads(ln) for ln in (run / MANIFEST).read_text().splitlines()][1]
    assert claim["foreign"] == ["Documents", "data.csv", "later-notes.txt", "notes.txt"]


def test_symlinks_in_a_run_folder_are_unlinked_never_followed(tmp_path):
    run, target = tmp_path / "run", tmp_path / "my-models"
    user_files(target)
    claim_run_dir(run)
    (run / "model").symlink_to(target, target_is_directory=True)  # made by the run: a link to the user's folder
    (run / "best-accuracy").mkdir()
    (run / "best-accuracy" / "inner").symlink_to(target, target_is_directory=True)  # a link inside fairmt's folder
    release_run_dir()
    (run / "my-link").symlink_to(target, target_is_directory=True)  # the user's own link: kept
    before = snapshot(target)
    claim_run_dir(run, overwrite=True)
    assert not os.path.lexists(run / "model") and not (run / "best-accuracy").exists()
    assert (run / "my-link").is_symlink() and os.readlink(run / "my-link") == str(target)
    assert snapshot(target) == before


def inodes(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``roots`` (links not followed): its inode and link count — a file replaced or truncated
    through another name shows here even when its bytes come back the same."""
    found = {}
    for root in roots:
        for p in [root, *(root.rglob("*") if root.is_dir() and not root.is_symlink() else [])]:
            st = os.lstat(p)
            found[str(p)] = (st.st_ino, st.st_nlink)
    return found


def test_a_folder_from_before_the_manifest_keeps_every_file_and_names_fairmts(tmp_path):
    """Issue 52: a run folder without a manifest (an older fairmt's, or a user's folder holding its lock file) —
    nothing in it can be shown to be fairmt's: the entries carrying fairmt's names are named in one line, refused,
    and every byte and inode stays."""
    run = tmp_path / "run"
    mine = user_files(run)
    (run / LOCK_NAME).write_text("{}")  # the marker an earlier fairmt left
    for name in ("checkpoint-4", "runs"):
        (run / name).mkdir()
    (run / "model.safetensors").write_text("w")
    (run / "train.csv").write_text("text,label\nmy data,1\n")
    (run / "config.json").write_text('{"mine": true}')
    plan = FolderPlan(run)
    assert plan.owned == [] and plan.risky() == [
        "checkpoint-4",
        "config.json",
        "model.safetensors",
        "runs",
        "train.csv",
    ]
    before, ino = snapshot(run), inodes(run)
    with pytest.raises(
        FairmtError, match="checkpoint-4, config.json, model.safetensors, runs, train.csv were not written by fairmt"
    ) as err:
        claim_run_dir(run, overwrite=True)
    assert "\n" not in str(err.value)
    assert snapshot(run) == before and inodes(run) == ino and mine
    # without a marker nothing is fairmt's either
    bare = tmp_path / "bare"
    user_files(bare)
    (bare / "checkpoint-1").mkdir()
    with pytest.raises(FairmtError, match="checkpoint-1 was not written by fairmt"):
        claim_run_dir(bare, overwrite=True)


KILLED_RUN = """
import os, signal, sys
from pathlib import Path
from fairmt.outputs import claim_run_dir, record_new
run = Path(sys.argv[1])
claim_run_dir(run, overwrite=True)  # a run beside the user's files
(run / "checkpoint-3").mkdir()  # as the Trainer saves a checkpoint (recorded with its proof after the save) ...
(run / "checkpoint-3" / "optimizer.pt").write_bytes(b"whole")
record_new(run)
(run / "checkpoint-4").mkdir()  # ... and the next one, cut by the kill before its record
(run / "checkpoint-4" / "optimizer.pt").write_bytes(b"half")
(run / "unlisted.tmp").write_text("no fairmt name: kept")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_runs_recorded_checkpoints_are_removed_and_what_came_after_is_kept(tmp_path):
    """Issue 52: after a ``kill -9`` the next ``--overwrite`` removes the checkpoint the run recorded (its proof
    matches), keeps — naming it — the one the kill cut before its record, and keeps the files the user added to the
    folder after the kill (``README.md``, ``train.csv``: named like fairmt's outputs)."""
    run = tmp_path / "run"
    mine = user_files(run)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", KILLED_RUN, str(run)], env=env, capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (run / "checkpoint-4").is_dir() and "closed" not in (run / MANIFEST).read_text()
    (run / "README.md").write_text("# my notes on this run\n")  # the user's, after the kill
    (run / "train.csv").write_text("a,b\n")
    kept = [*mine, run / "checkpoint-4", run / "README.md", run / "train.csv", run / "unlisted.tmp"]
    before, ino = snapshot(*kept), inodes(*kept)
    with pytest.raises(
        FairmtError,
        match=r"README.md, checkpoint-4, train.csv were not written by fairmt here "
        r"\(.*holds no record of README.md, checkpoint-4, train.csv that still "
        r"matches: .*left by a killed run",
    ):
        claim_run_dir(run, overwrite=True)
    assert snapshot(*kept) == before and inodes(*kept) == ino and (run / "checkpoint-3").is_dir()
    for name in ("checkpoint-4", "README.md", "train.csv"):  # moved away, as the line says
        os.rename(run / name, tmp_path / name)
    claim_run_dir(run, overwrite=True)
    assert not (run / "checkpoint-3").exists()
    assert (run / "unlisted.tmp").read_text() == "no fairmt name: kept"
    assert snapshot(*mine) == before_mine(before, mine)


def before_mine(before: dict, mine: list[Path]) -> dict:
    roots = tuple(str(m) for m in mine)
    return {k: v for k, v in before.items() if k.startswith(roots)}


def test_a_forged_or_copied_manifest_line_deletes_nothing(tmp_path, capsys):
    """Issue 52: a manifest line naming the user's files — without a proof, with a proof of another file (copied
    from another run folder), or with the proof of the file as it was before the user changed it — removes nothing:
    a name fairmt writes is refused, every other one kept and named in one line on stderr."""
    run = tmp_path / "run"
    mine = user_files(run)
    claim_run_dir(run, overwrite=True)  # beside the user's files
    (run / "results.json").write_text('{"run": 1}')
    release_run_dir()
    (run / "results.json").write_text('{"run": 1, "edited by the user": true}')  # changed after fairmt wrote it
    other = tmp_path / "other"
    claim_run_dir(other)
    (other / "notes.txt").write_text("fairmt's notes.txt in another folder")
    release_run_dir()
    copied = [ln for ln in (other / MANIFEST).read_text().splitlines() if '"proof"' in ln]
    with open(run / MANIFEST, "a") as fh:
        fh.write(json.dumps({"made": ["data.csv", "Documents"]}) + "\n")  # forged, no proof
        fh.write(copied[0] + "\n")  # copied: a proof of another notes.txt
    before, ino = snapshot(run), inodes(run)
    with pytest.raises(FairmtError, match="results.json was not written by fairmt here"):
        claim_run_dir(run, overwrite=True)
    assert snapshot(run) == before and inodes(run) == ino
    (run / "results.json").unlink()
    capsys.readouterr()
    claim_run_dir(run, overwrite=True)
    release_run_dir()
    note = [ln for ln in capsys.readouterr().err.splitlines() if "kept" in ln]
    assert len(note) == 1 and "kept Documents, data.csv, notes.txt:" in note[0], note
    assert snapshot(*mine) == before_mine(before, mine)


# ---------------------------------------------------------------------------------------------- each writer


def test_demo_overwrite_replaces_an_earlier_demo_and_keeps_the_users_files(tmp_path):
    from fairmt.demo import _output_dir

    out = tmp_path / "demo"
    _output_dir(str(out), False)
    (out / "seed0").mkdir()
    (out / "report.json").write_text("{}")
    release_run_dir()
    mine = user_files(out)
    before = snapshot(*mine)
    _output_dir(str(out), True)  # what `fairmt demo --overwrite` calls before its work
    assert snapshot(*mine) == before and not (out / "seed0").exists() and not (out / "report.json").exists()


def test_sampling_overwrite_goes_through_the_manifest(tmp_path):
    from fairmt.recipes.sampling.runner import prepare_run_dir

    out = tmp_path / "run"
    cfg = {"output_dir": str(out), "seed": 0}
    prepare_run_dir(cfg, False)
    (out / "stage1").mkdir()
    release_run_dir()
    mine = user_files(out)
    before = snapshot(*mine)
    with pytest.raises(FairmtError, match="holds another recipe's run"):
        prepare_run_dir({**cfg, "seed": 1}, False)
    prepare_run_dir({**cfg, "seed": 1}, True)
    assert snapshot(*mine) == before and not (out / "stage1").exists()
    assert json.loads((out / "run.json").read_text())["config"]["seed"] == 1


def test_fairseq_prep_publish_replaces_fairmts_files_only(tmp_path):
    final = tmp_path / "bin"
    mine = user_files(final)
    (final / "preprocess.log").write_text("an earlier fairseq-prep (before the manifest)")
    (final / "dict.en.txt").write_text("old dictionary")
    (final / "train.en-de.en.bin").write_text("old")
    built = tmp_path / ".bin.partial-1"
    built.mkdir()
    (built / "dict.en.txt").write_text("new dictionary")
    (built / "text").mkdir()
    before = snapshot(*mine)
    publish_dir(built, final, markers=("preprocess.log",))
    assert snapshot(*mine) == before and not built.exists()
    assert (final / "dict.en.txt").read_text() == "new dictionary" and not (final / "train.en-de.en.bin").exists()
    assert "dict.en.txt" in (final / MANIFEST).read_text()
    # a user's file with a name the new folder holds, in a folder with no marker: refused, nothing touched
    other = tmp_path / "other"
    user_files(other)
    (other / "dict.en.txt").write_text("the user's dictionary")
    built.mkdir()
    (built / "dict.en.txt").write_text("new")
    before = snapshot(other)
    with pytest.raises(FairmtError, match="dict.en.txt was not written by fairmt here"):
        publish_dir(built, other)
    assert snapshot(other) == before and not built.exists()


def test_fairseq_prep_command_overwrite_keeps_the_users_files(tmp_path, capsys, monkeypatch):
    """The command's own path (the CLI's check, the prep's check, the build beside the folder, the publication), with
    fairseq-preprocess replaced by a stand-in that writes fairseq's file names (the real one takes ~30 s here)."""
    import fairmt.fairseq.prep as prep

    def layout(out, prepared, *args):
        (out / "dict.en.txt").write_text(f"dictionary {len(prepared)}")
        (out / "preprocess.log").write_text("log")
        (out / "text").mkdir()
        return {"train": 1}

    monkeypatch.setattr(prep, "require_fairseq", lambda: None)
    monkeypatch.setattr(prep, "_write_layout", layout)
    pairs = tmp_path / "pairs.jsonl"
    rows = [
        ("He is a doctor.", "Er ist Arzt."),
        ("She is a doctor.", "Sie ist Ärztin."),
        ("He thanked his friend.", "Er dankte seinem Freund."),
        ("She thanked her friend.", "Sie dankte ihrer Freundin."),
    ] * 4
    pairs.write_text("".join(json.dumps({"translation": {"en": s, "de": t}}) + "\n" for s, t in rows))
    out = tmp_path / "bin"
    argv = ["data", "fairseq-prep", "--input", str(pairs), "--output-dir", str(out), "--valid-size", "1"]
    assert main(argv) == 0
    first = os.lstat(out / "dict.en.txt").st_ino
    mine = user_files(out)
    before = snapshot(*mine)
    assert main([*argv, "--overwrite"]) == 0
    assert snapshot(*mine) == before and (out / "dict.en.txt").read_text() == "dictionary 1"
    assert os.lstat(out / "dict.en.txt").st_ino != first  # replaced: the earlier one was fairmt's, unchanged
    capsys.readouterr()
    (out / "dict.en.txt").write_text("edited by the user after the preparation")  # no longer what fairmt wrote
    before = snapshot(out)
    refused(capsys, [*argv, "--overwrite"], "dict.en.txt was not written by fairmt here", "still matches")
    assert snapshot(out) == before
    (out / "dict.en.txt").unlink()
    (out / "train.en-de.en.bin").write_text("copied in by the user")
    before = snapshot(out)
    refused(capsys, [*argv, "--overwrite"], "train.en-de.en.bin was not written by fairmt here")
    refused(capsys, [*argv[:5], str(pairs.parent), "--overwrite"], f"it holds {pairs}")
    assert snapshot(out) == before


def test_sweep_overwrite_removes_the_earlier_sweep_and_refuses_beside_other_files(tmp_path, capsys):
    from argparse import Namespace

    from fairmt.commands.sweep import _overwrite
    from fairmt.sweep.spec import SweepSpec

    out = tmp_path / "sweep"
    (out / "trials" / "a" / "seed-0").mkdir(parents=True)
    for name in ("sweep_spec.json", "study.db", "sweep.md"):
        (out / name).write_text("earlier sweep")
    spec = SweepSpec.__new__(SweepSpec)
    spec.output_dir, spec.storage, spec.recipe_path = str(out), f"sqlite:///{out / 'study.db'}", str(tmp_path / "r")
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    with pytest.raises(FairmtError, match="notes.txt were not written|notes.txt was not written"):
        _overwrite(Namespace(join=False), spec)
    assert snapshot(out) == before
    with pytest.raises(FairmtError, match="--join"):
        _overwrite(Namespace(join=True), spec)
    spec.storage = "sqlite:////elsewhere/study.db"
    with pytest.raises(FairmtError, match="not the study in --storage"):
        _overwrite(Namespace(join=False), spec)
    assert snapshot(out) == before
    (out / "notes.txt").unlink()
    spec.storage = f"sqlite:///{out / 'study.db'}"
    _overwrite(Namespace(join=False), spec)
    assert list(out.iterdir()) == []


def test_file_outputs_replace_only_the_named_file(tmp_path, capsys):
    """Commands whose --overwrite concerns output files (eval, report, augment) or folders they resume in (data
    download, data corpora, eval caches): the named file is replaced, every other file of the folder stays."""
    folder = tmp_path / "results"
    mine = user_files(folder)
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(json.dumps({"label": i % 2, "pred": (i // 3) % 2, "group": (i // 2) % 2}) + "\n" for i in range(20))
    )
    (folder / "out.json").write_text("an earlier result")
    before = snapshot(*mine)
    assert (
        main(["eval", "classification", "--predictions", str(preds), "--json", str(folder / "out.json"), "--overwrite"])
        == 0
    )
    assert json.loads((folder / "out.json").read_text()) and snapshot(*mine) == before
    assert main(["data", "corpora", "--output-dir", str(folder), "--overwrite"]) == 0
    assert snapshot(*mine) == before


def test_push_dry_run_never_writes_over_a_users_card(tmp_path, capsys):
    """`push --dry-run DIR`: a README.md or upload.txt fairmt did not write there is refused, --overwrite or not;
    an earlier dry run's files are replaced."""
    fixture = Path(__file__).parents[1] / "fixtures" / "report" / "classification_fcl_results.json"
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    home = tmp_path / "home"
    mine = user_files(home)
    (home / "README.md").write_text("my own README, named like a model card\n")
    before = snapshot(*mine, home / "README.md")
    for extra, why in (([], "already holds files"), (["--overwrite"], "--overwrite refused, nothing removed")):
        assert main(["push", str(model), "me/x", "--results", str(fixture), "--dry-run", str(home), *extra]) == 2
        assert why in capsys.readouterr().err
    assert snapshot(*mine, home / "README.md") == before
    out = tmp_path / "card"
    for _ in range(2):  # the second run replaces the first one's files
        assert main(["push", str(model), "me/x", "--results", str(fixture), "--dry-run", str(out), "--overwrite"]) == 0
    assert (out / "README.md").read_text().startswith("---") and (out / "upload.txt").is_file()


COVERED: dict[str, list[str]] = {
    "push": ["test_push_dry_run_never_writes_over_a_users_card"],
    "train": [
        "test_train_output_dir_dot_overwrite_in_a_project_folder_is_refused",
        "test_train_overwrite_in_the_folder_holding_the_recipe_is_refused",
        "test_a_folder_holding_git_a_run_input_or_a_mount_point_is_refused",
        "test_an_unknown_checkpoint_is_refused_naming_it_and_nothing_is_removed",
        "test_overwrite_removes_what_fairmt_wrote_and_keeps_the_users_files",
        "test_a_killed_runs_recorded_checkpoints_are_removed_and_what_came_after_is_kept",
    ],
    "demo": [
        "test_demo_output_dir_home_overwrite_is_refused",
        "test_demo_overwrite_replaces_an_earlier_demo_and_keeps_the_users_files",
    ],
    "sweep": ["test_sweep_overwrite_removes_the_earlier_sweep_and_refuses_beside_other_files"],
    "data fairseq-prep": [
        "test_fairseq_prep_publish_replaces_fairmts_files_only",
        "test_fairseq_prep_command_overwrite_keeps_the_users_files",
    ],
    **{
        cmd: ["test_file_outputs_replace_only_the_named_file"]
        for cmd in (
            "eval winomt",
            "eval geneval",
            "eval flores",
            "eval mt-bias",
            "eval embeddings",
            "eval stereoset",
            "eval classification",
            "eval linear-probe",
            "report",
            "augment cda",
            "augment llm",
            "data download",
            "data corpora",
            "plot embeddings",
        )
    },
}
"""Per command with ``--overwrite``: the tests here that cover it (the campaign's guard checks every command is
listed; the file-output commands share one test of the rule they share, and each has its own campaign case)."""


# --------------------------------------------------------------------------------------- issue 52: how files are opened


def test_a_whole_file_write_never_goes_through_a_link_and_leaves_other_hard_links_alone(tmp_path):
    from fairmt.outputs import append_text, check_output_file, write_file

    mine = tmp_path / "mine.json"
    mine.write_text("the user's\n")
    link = tmp_path / "out.json"
    link.symlink_to(mine)
    before = snapshot(tmp_path)
    for call in (
        lambda: check_output_file(link, "results", overwrite=True),
        lambda: write_file(link, "{}"),
        lambda: append_text(link, "{}\n"),
    ):
        with pytest.raises(FairmtError, match="is a symbolic link"):
            call()
    assert snapshot(tmp_path) == before
    other = tmp_path / "other-name.json"  # a hard link: replaced under this name only, never truncated
    os.link(mine, other)
    write_file(other, "new\n")
    assert mine.read_text() == "the user's\n" and other.read_text() == "new\n"
    os.link(mine, tmp_path / "third.json")
    with pytest.raises(FairmtError, match="other hard link"):  # an append would change the other names
        append_text(tmp_path / "third.json", "x\n")
    assert mine.read_text() == "the user's\n"


def test_a_pipe_or_a_device_is_written_into_never_replaced(tmp_path):
    from fairmt.outputs import check_output_file, write_file

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    ino = os.lstat(fifo).st_ino
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, there before the write (the pipe buffers it)
    try:
        assert check_output_file(fifo, overwrite=False) == fifo  # nothing there is replaced: no --overwrite needed
        write_file(fifo, "through the pipe\n")
        assert os.read(reader, 100) == b"through the pipe\n" and os.lstat(fifo).st_ino == ino
    finally:
        os.close(reader)
    with pytest.raises(FairmtError, match="a pipe nobody reads"):
        write_file(fifo, "x")
    null = tmp_path / "null.json"
    null.symlink_to(os.devnull)
    write_file(null, "{}")
    assert null.is_symlink() and os.readlink(null) == os.devnull


def test_stale_temporary_files_of_a_killed_write_are_removed_by_the_next_claim(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    dead = ".results.json.999999999-abcdefgh.tmp"  # no process has this id
    alive = f".results.json.{os.getppid()}-abcdefgh.tmp"  # a running process's write: kept
    for name in (dead, alive):
        (run / name).write_text("half")
    claim_run_dir(run, resumable=True)
    assert not (run / dead).exists() and (run / alive).exists()


def test_json_to_dev_stdout_with_overwrite_is_written_into_the_pipe(tmp_path):
    """``--json /dev/stdout --overwrite``: the JSON goes down the process's stdout (a pipe here); /dev/stdout is a
    link to a pipe, never replaced by a regular file (as root, that replaced the system's /dev/stdout)."""
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(json.dumps({"label": i % 2, "pred": (i // 3) % 2, "group": (i // 2) % 2}) + "\n" for i in range(20))
    )
    before = os.lstat("/dev/stdout")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fairmt",
            "eval",
            "classification",
            "--predictions",
            str(preds),
            "--json",
            "/dev/stdout",
            "--overwrite",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"accuracy"' in proc.stdout
    after = os.lstat("/dev/stdout")
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_ctrl_c_during_a_write_keeps_the_earlier_file_whole_and_leaves_no_temporary_file(tmp_path):
    from fairmt.outputs import writing

    target = tmp_path / "results.json"
    target.write_text('{"earlier": true}\n')
    ino = os.lstat(target).st_ino
    with pytest.raises(KeyboardInterrupt), writing(target, what="results") as fh:
        fh.write('{"half": ')
        raise KeyboardInterrupt  # SIGINT's default handler raises it here
    assert target.read_text() == '{"earlier": true}\n' and os.lstat(target).st_ino == ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_a_trainers_checkpoint_is_recorded_with_its_proof_as_soon_as_it_is_saved(tmp_path):
    """Issue 52: fairmt's Trainers (FaultGuardMixin) record each checkpoint in the manifest right after saving it,
    so a run killed later leaves it provably fairmt's (removable by the next --overwrite)."""
    from types import SimpleNamespace

    from fairmt.trainers.faults import FaultGuardMixin

    run = tmp_path / "run"
    claim_run_dir(run)

    class Saves:
        def _save_checkpoint(self, model, trial):
            (run / "checkpoint-2").mkdir()
            (run / "checkpoint-2" / "model.safetensors").write_bytes(b"weights")

    class Trainer(FaultGuardMixin, Saves):
        pass

    trainer = Trainer.__new__(Trainer)
    trainer.args, trainer.state = SimpleNamespace(output_dir=str(run)), SimpleNamespace(global_step=2)
    trainer._save_checkpoint(None, None)
    assert "checkpoint-2" in FolderPlan(run).made  # recorded, and its proof matches, while the run goes on
    (run / "checkpoint-2" / "model.safetensors").write_bytes(b"changed by someone")
    assert "checkpoint-2" not in FolderPlan(run).made
