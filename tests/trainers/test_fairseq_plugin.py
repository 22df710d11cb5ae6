"""The fairseq front end: ``fairmt data fairseq-prep``, the ``gacl_translation`` task and the ``gacl_kd`` criterion
(``fairseq-train --user-dir``). Needs fairseq (docs/methods/gacl.md, "GACL + KD in fairseq"; CI installs it); without it
every test that needs it skips with the install step as its reason, and
``test_plugin_tests_ran_where_fairseq_is_installed`` fails if fairseq IS importable but those tests were skipped anyway.
"""

import contextlib
import hashlib
import io
import json
import logging
import math
import os
import queue
import random
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import torch

import needs
from fairmt.errors import FairmtError
from fairmt.fairseq.user_dir import user_dir

FAIRSEQ_IMPORTABLE = needs.missing("fairseq") is None  # installed and not hidden (tests/support/needs.py)
_SKIPPED: list[str] = []

ARCH = [
    "--arch",
    "transformer",
    "--encoder-layers",
    "1",
    "--decoder-layers",
    "1",
    "--encoder-embed-dim",
    "16",
    "--decoder-embed-dim",
    "16",
    "--encoder-ffn-embed-dim",
    "32",
    "--decoder-ffn-embed-dim",
    "32",
    "--encoder-attention-heads",
    "2",
    "--decoder-attention-heads",
    "2",
]
TRAIN = [
    "--user-dir",
    user_dir(),
    "--task",
    "gacl_translation",
    "--balanced-genders",
    "--criterion",
    "gacl_kd",
    "--label-smoothing",
    "0.1",
    *ARCH,
    "--cpu",
    "--seed",
    "1",
    "--num-workers",
    "0",
    "--no-progress-bar",
    "--log-format",
    "json",
    "--log-interval",
    "1",
]


@pytest.fixture(autouse=True, scope="module")
def _no_unsafe_loading_after_this_module():
    """The plugin sets TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD when imported (fairseq's own checkpoints need it, in a
    fairseq-train process). In this test process it must not outlive these tests: other tests' torch.load would
    unpickle in full."""
    before = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    yield
    if before is None:
        os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)


def _plugin_skip_reason() -> str | None:
    """Why the plugin tests cannot run here (None: they can): fairseq absent, or present but failing to import
    (e.g. fairseq 0.12.2 on Python 3.11, or a torchaudio built for another torch)."""
    hint = (
        "install it as docs/methods/gacl.md ('GACL + KD in fairseq') says (pip install --no-build-isolation --no-deps "
        "fairseq-fixed==0.12.3.1 + its dependencies)"
    )
    if not FAIRSEQ_IMPORTABLE:
        return needs.missing("fairseq")
    try:
        import fairseq  # noqa: F401
    except Exception as err:  # noqa: BLE001  (any import failure means the plugin cannot run)
        return f"fairseq is installed but does not import ({type(err).__name__}: {err}): {hint}"
    return None


@pytest.fixture(scope="module")
def fs():
    reason = _plugin_skip_reason()
    if reason:
        _SKIPPED.append(reason)
        pytest.skip(reason)
    import fairmt.fairseq.userdir.fairmt_gacl  # noqa: F401  (sets TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD, registers)

    return True


def _pairs(n=240, seed=0):
    rng = random.Random(seed)
    subj = [
        ("He", "Er"),
        ("She", "Sie"),
        ("My brother", "Mein Bruder"),
        ("My sister", "Meine Schwester"),
        ("The man", "Der Mann"),
        ("The woman", "Die Frau"),
        ("The weather", "Das Wetter"),
    ]
    pred = [
        ("is tired .", "ist müde ."),
        ("works here .", "arbeitet hier ."),
        ("likes music .", "mag Musik ."),
        ("reads a book .", "liest ein Buch ."),
        ("was late .", "war spät ."),
        ("sings well .", "singt gut ."),
    ]
    out = []
    for _ in range(n):
        (se, sd), (pe, pd) = rng.choice(subj), rng.choice(pred)
        out.append({"translation": {"en": f"{se} {pe}", "de": f"{sd} {pd}"}})
    return out


def _prepared(tmp_path_factory, name: str, *options: str) -> Path:
    """``fairmt data fairseq-prep OPTIONS`` (in this process) on the pairs of :func:`_pairs`, 16 held out for valid:
    the output folder."""
    from fairmt.cli import main

    root = tmp_path_factory.mktemp(name)
    src = root / "pairs.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in _pairs()), encoding="utf-8")
    out = root / "bin"
    argv = ["data", "fairseq-prep", *options, "--input", str(src), "--output-dir", str(out), "--valid-size", "16"]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def data_dir(fs, tmp_path_factory):
    """Binarised GACL data made by the ``fairmt data fairseq-prep`` command (in this process)."""
    return _prepared(tmp_path_factory, "fsdata", "--src-lang", "en", "--lang", "de", "--joined-dictionary")


def fairseq_train(argv: list[str]) -> str:
    """``fairseq-train ARGV`` in this process (the console script calls exactly ``fairseq_cli.train.cli_main`` with
    these ``sys.argv``): its log lines in fairseq-train's own format (root logger at INFO, as fairseq-train sets
    it up) and what it printed. A fresh interpreter per run cost ~6 s of imports each; nothing these tests check is
    about the process. What the run changes globally is put back: ``sys.argv``, the root logger's level and
    handlers, the torch / numpy / random generators. An error propagates (the console script would exit 1 with its
    traceback). fairseq's data-loading threads end with the run (:func:`_end_background_consumers`)."""
    import fairseq_cli.train as fairseq_train_cli  # its import-time basicConfig is a no-op under pytest (handlers)
    import numpy as np

    threads = set(threading.enumerate())

    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(name)s | %(message)s"))
    root = logging.getLogger()
    saved = (sys.argv, root.level, list(root.handlers), torch.get_rng_state(), np.random.get_state(), random.getstate())
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    sys.argv = ["fairseq-train", *argv]
    try:
        with contextlib.redirect_stdout(log):
            fairseq_train_cli.cli_main()
    finally:
        sys.argv = saved[0]
        root.setLevel(saved[1])
        for h in list(root.handlers):
            if h not in saved[2]:
                root.removeHandler(h)
        torch.set_rng_state(saved[3])
        np.random.set_state(saved[4])
        random.setstate(saved[5])
        _end_background_consumers(threads)
    return log.getvalue()


def _end_background_consumers(before: set) -> None:
    """End the data-loading threads a fairseq-train run left in this process. fairseq's ``BufferedIterator`` reads
    each epoch on a ``BackgroundConsumer`` thread that blocks on its full queue when the run stops reading that epoch
    early (``--max-update`` reached mid-epoch). fairseq-train's own process exits past it; this pytest process would
    keep it, and a process with a second thread does not fork (``fairmt.forking.why_not``): the ``fairmt data
    fairseq-prep`` runs of the campaign tests on this worker then started a fresh interpreter each (~8 s of imports).
    Each such thread's queue is drained until the thread has put its last batch and ended."""
    from fairseq.data.iterators import BackgroundConsumer

    for thread in set(threading.enumerate()) - before:
        if not isinstance(thread, BackgroundConsumer):
            continue
        deadline = time.monotonic() + 60
        while thread.is_alive() and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                thread._queue.get(timeout=0.05)
        thread.join(timeout=1)
        assert not thread.is_alive(), f"fairseq's {thread.name} did not end after its queue was drained"


def _train(data, save_dir, *extra) -> str:
    """``fairseq-train DATA TRAIN… --save-dir SAVE_DIR EXTRA…`` in this process: its log."""
    return fairseq_train([str(data), *TRAIN, "--save-dir", str(save_dir), *extra])


def _inner_logs(text: str) -> list[dict]:
    rows = []
    for line in text.splitlines():
        if "| train_inner |" in line:
            rows.append(json.loads(line.split("| train_inner |", 1)[1]))
    return rows


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- data preparation ---------------------------------------------------------------------------------------------


def test_prep_writes_text_side_files_and_binaries(data_dir):
    from fairseq.data import Dictionary, data_utils

    from fairmt.data.gender import detect_gender, swap_gender

    text = data_dir / "text"
    src = (text / "train.en").read_text(encoding="utf-8").splitlines()
    cf = (text / "train.cf").read_text(encoding="utf-8").splitlines()
    genders = (data_dir / "train.en-de.gender").read_text().split()
    assert len(src) == len(cf) == len(genders) > 100
    assert genders.count("0") + (text / "valid.gender").read_text().split().count("0") == genders.count("1") + (
        text / "valid.gender"
    ).read_text().split().count("1")  # balanced before the hold-out
    for s, c, g in zip(src, cf, genders):
        assert {"male": "0", "female": "1"}[detect_gender(s)] == g and c == swap_gender(s)
    d = Dictionary.load(str(data_dir / "dict.en.txt"))
    cf_bin = data_utils.load_indexed_dataset(str(data_dir / "train.en-de.cf"), d)
    src_bin = data_utils.load_indexed_dataset(str(data_dir / "train.en-de.en"), d)
    assert len(cf_bin) == len(src_bin) == len(src)
    assert d.string(cf_bin[0]) == cf[0] and d.string(src_bin[0]) == src[0]
    assert (data_dir / "valid.en-de.cf.idx").is_file() and len((text / "valid.en").read_text().splitlines()) == 16
    # fairseq-preprocess's own log, at INFO as in a fresh interpreter (its runs here are forks of this process:
    # fairmt.forking): both runs, the pair and the counterfactual sources, each with its line counts
    log = (data_dir / "preprocess.log").read_text()
    assert log.count("Wrote preprocessed data to") == 2 and f"train.cf: {len(src)} sents" in log


def test_prep_without_fairseq_names_the_install_step(monkeypatch, tmp_path):
    from fairmt.fairseq.prep import fairseq_prep

    monkeypatch.setitem(sys.modules, "fairseq", None)  # import fairseq → ImportError
    pairs = tmp_path / "x.jsonl"  # inputs are read first: a valid one, so the missing fairseq is what fails
    pairs.write_text('{"translation": {"en": "He is a doctor.", "de": "Er ist Arzt."}}\n', encoding="utf-8")
    with pytest.raises(FairmtError, match=r"fairseq is not installed.*fairseq-fixed==0\.12\.3\.1"):
        fairseq_prep(str(pairs), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_preprocess_runs_in_a_fresh_interpreter_where_forking_is_unsafe(monkeypatch, tmp_path):
    """Where the process cannot fork (threads, CUDA, not Linux: fairmt.forking.why_not), fairseq-preprocess runs as
    ``python -m fairmt.fairseq._preprocess JOBS.json`` (a stand-in for the interpreter here); its failure line is read
    from stderr. Where it can, the fixtures above ran it forked."""
    import subprocess

    from fairmt import forking
    from fairmt.fairseq import prep

    calls = []

    def fresh(cmd, **kw):
        calls.append((cmd, json.loads(Path(cmd[-1]).read_text()), kw))
        err = "fairmt-preprocess-failed: valid split\nTraceback ...\nfairmt-preprocess-error: ValueError: bad line\n"
        return subprocess.CompletedProcess(cmd, 1, "fairseq's log on stdout\n", err)

    monkeypatch.setattr(forking, "why_not", lambda: "more than one Python thread runs")
    monkeypatch.setattr(forking, "run_forked", lambda *a, **k: pytest.fail("forked where forking is unsafe"))
    monkeypatch.setattr(prep.subprocess, "run", fresh)
    with pytest.raises(FairmtError, match=r"failed on the valid split \(exit 1\): ValueError: bad line$"):
        prep._run_preprocess([("valid split", ["--only-source"])], tmp_path)
    [(cmd, jobs, kw)] = calls
    assert cmd[:3] == [sys.executable, "-m", "fairmt.fairseq._preprocess"] and jobs == [
        ["valid split", ["--only-source"]]
    ]
    assert kw == {"capture_output": True, "text": True} and list(tmp_path.iterdir()) == []  # the job file removed


# The multilingual layout is prepared here, before the in-process fairseq-train runs below: those leave fairseq's
# data-loading threads behind in this process, and a process with a second thread runs fairseq-preprocess in a fresh
# interpreter instead of a fork (fairmt.forking.why_not; ~10 s of CPU more).
@pytest.fixture(scope="module")
def ml_data_dir(fs, tmp_path_factory):
    """The multilingual layout made by ``fairmt data fairseq-prep --lang-pairs en-de``."""
    return _prepared(tmp_path_factory, "fsml", "--lang-pairs", "en-de")


def _setup_ml(data, *extra):
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    save_dir = _UNUSED_SAVE_DIR.name  # never fairseq's default ./checkpoints in the checkout; nothing is saved
    args = options.parse_args_and_arch(
        options.get_training_parser(), _ml_args(data, "--dropout", "0", "--save-dir", save_dir, *extra)
    )
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    utils.set_torch_seed(1)
    model = task.build_model(cfg.model)
    crit = task.build_criterion(cfg.criterion)
    itr = task.get_batch_iterator(task.dataset("train"), max_sentences=8, max_positions=(64, 64), seed=1)
    return task, model, crit, next(iter(itr.next_epoch_itr(shuffle=False)))


def test_multilingual_prep_layout_and_language_tokens(ml_data_dir):
    """fairseq-prep --lang-pairs: one joined dictionary for every language + langs.txt; the task's batches carry
    the source language token on the real AND the counterfactual source, the target token on the target side."""
    d = ml_data_dir
    assert (d / "langs.txt").read_text() == "de\nen\n"
    assert (d / "dict.txt").read_bytes() == (d / "dict.en.txt").read_bytes() == (d / "dict.de.txt").read_bytes()
    n = len((d / "train.en-de.gender").read_text().split())
    assert n == len((d / "text" / "train.en-de.cf").read_text().splitlines()) > 100
    assert (d / "valid.en-de.cf.idx").is_file() and (d / "train.en-de.de.idx").is_file()

    task, model, crit, sample = _setup_ml(d)
    sd, td = task.source_dictionary, task.target_dictionary
    en, de = sd.index("__en__"), td.index("__de__")
    assert en != sd.unk() and de != td.unk()
    src, cf, pad = sample["net_input"]["src_tokens"], sample["gacl"]["cf_src_tokens"], sd.pad()

    def first_token(row):
        return int(row[row.ne(pad)][0])

    assert all(first_token(r) == en for r in src) and all(first_token(r) == en for r in cf)  # --encoder-langtok src
    assert all(int(r[1]) == de for r in sample["net_input"]["prev_output_tokens"])  # eos, then __de__
    cf_text = set((d / "text" / "train.en-de.cf").read_text(encoding="utf-8").splitlines())
    for r in cf:
        assert sd.string(r[r.ne(pad)][1:]) in cf_text  # the counterfactual sentence after its language token
    assert sorted(sample["gacl"]["gender"].tolist()) == [0, 0, 0, 0, 1, 1, 1, 1]  # --balanced-genders
    assert not torch.equal(src, cf)
    model.train()
    _, _, log = crit(model, sample)
    assert log["gc_sentences"] == 8 and float(log["loss_gc"]) > 0 and float(log["loss_kd"]) >= 0


# ---- in-process: the criterion against fairmt.losses ---------------------------------------------------------------

# The in-process setups parse fairseq's training arguments, which need a --save-dir; nothing is written there. One
# folder for the module, removed when the worker exits (a mkdtemp per call left ~80 folders in /tmp per suite run).
_UNUSED_SAVE_DIR = tempfile.TemporaryDirectory(prefix="fairmt-fairseq-")


def _setup(data_dir, *extra, seed=0):
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    save_dir = _UNUSED_SAVE_DIR.name  # never fairseq's default ./checkpoints in the checkout; nothing is saved
    args = options.parse_args_and_arch(
        parser, [str(data_dir), *TRAIN, "--batch-size", "8", "--dropout", "0", "--save-dir", save_dir, *extra]
    )
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    from fairseq import utils

    utils.set_torch_seed(seed)  # as fairseq-train does before building the model
    model = task.build_model(cfg.model)
    crit = task.build_criterion(cfg.criterion)
    itr = task.get_batch_iterator(task.dataset("train"), max_sentences=8, max_positions=(64, 64), seed=1)
    sample = next(iter(itr.next_epoch_itr(shuffle=False)))
    return cfg, task, model, crit, sample


@pytest.mark.parametrize("variant", ["paper", "official"])
def test_criterion_equals_fairmt_losses(data_dir, variant):
    """loss / sample_size == (1−α)·LS-CE/ntok + α·token_kl_loss + λ·gacl_loss on the same states and logits."""
    from fairmt.fairseq.criterion import resolve_pairs
    from fairmt.losses import gacl_loss, token_kl_loss
    from fairmt.models.pooling import pool

    alpha, lam, eps = 0.4, 0.7, 0.1
    cfg, task, model, crit, sample = _setup(
        data_dir,
        "--kd-alpha",
        str(alpha),
        "--gacl-lambda",
        str(lam),
        "--gacl-temperature",
        "0.5",
        "--gacl-variant",
        variant,
    )
    torch.manual_seed(1)
    teacher = task.build_model(cfg.model).eval()  # a teacher other than the student, so L_KD ≠ 0
    object.__setattr__(crit, "_teacher", teacher)
    model.train()
    g = sample["gacl"]["gender"]
    assert int(g.sum()) == 4 and len(g) == 8  # a balanced batch from the task

    loss, sample_size, log = crit(model, sample)
    got = float(loss.detach()) / sample_size

    net, target, pad = sample["net_input"], sample["target"], task.target_dictionary.pad()
    head = crit.gacl_projection_head  # official: the released code's Dropout → Linear(d, d) (default), paper: none
    if variant == "official":
        assert isinstance(head.net[1], torch.nn.Linear) and head.net[1].weight.shape == (16, 16)
        assert head.net[0].p == 0.0  # the model's dropout (--dropout 0 here)
    else:
        assert head is None
    with torch.no_grad():

        def rep(tokens, lengths):
            enc = model.encoder(tokens, src_lengths=lengths)
            h = pool(enc["encoder_out"][0].transpose(0, 1), (~enc["encoder_padding_mask"][0]).long(), "mean")
            return h if head is None else head.net[1](h)  # projected states (dropout 0)

        h = rep(net["src_tokens"], net["src_lengths"])
        h_cf = rep(sample["gacl"]["cf_src_tokens"], sample["gacl"]["cf_src_lengths"])
        logits = model(**net)[0]
        lprobs = torch.log_softmax(logits.float(), -1)
        keep = target.ne(pad)
        nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)[keep]
        smooth = -lprobs.sum(-1)[keep]
        eps_i = eps / (lprobs.size(-1) - 1)
        ls_ce = ((1.0 - eps - eps_i) * nll + eps_i * smooth).sum() / keep.sum()
        kd = token_kl_loss(
            logits,
            teacher(**net)[0],
            target,
            ignore_index=pad,
            normalization="sentence" if variant == "official" else "token",
        )
        gc = gacl_loss(h, g, h_dropout=h, h_counterfactual=h_cf, temperature=0.5, pairs=resolve_pairs(cfg.criterion))
    ref = (1 - alpha) * float(ls_ce) + alpha * float(kd) + lam * float(gc)
    print(f"gacl_kd {variant}: {got:.8f} vs fairmt.losses {ref:.8f} (|diff| {abs(got - ref):.1e})")
    assert abs(got - ref) < 1e-6, (got, ref)
    assert float(kd) > 1e-3 and float(gc) > 0
    assert abs(float(log["loss_gc"]) / log["gc_sentences"] - float(gc)) < 1e-6
    assert log["gc_negatives"] / 8 == (5 if variant == "paper" else 4)  # 4 other-gender (+ the counterfactual)

    # one SGD step (fairseq's optimizer gets model + criterion parameters): the teacher is untouched and belongs to
    # no module the optimizer or a checkpoint sees; the projection head trains and is the criterion's state
    before = {k: v.clone() for k, v in teacher.state_dict().items()}
    head_before = {k: v.clone() for k, v in crit.state_dict().items()}
    opt = torch.optim.SGD(list(model.parameters()) + list(crit.parameters()), lr=0.5)
    loss.backward()
    opt.step()
    assert all(torch.equal(before[k], v) for k, v in teacher.state_dict().items())
    teacher_ids = {id(p) for p in teacher.parameters()}
    assert not teacher_ids & {id(p) for p in model.parameters()}
    assert not teacher_ids & {id(p) for p in crit.parameters()}
    if variant == "official":
        assert set(crit.state_dict()) == {"gacl_projection_head.net.1.weight", "gacl_projection_head.net.1.bias"}
        assert any(not torch.equal(head_before[k], v) for k, v in crit.state_dict().items())
        crit.load_state_dict(None)  # a checkpoint without a head (a pretrained model) keeps the current one
        crit.load_state_dict(head_before)
        assert all(torch.equal(head_before[k], v) for k, v in crit.state_dict().items())
    else:
        assert list(crit.parameters()) == [] and not crit.state_dict()


@pytest.mark.filterwarnings("ignore::fairmt.models.precision.SlowBfloat16Warning")
def test_teacher_dtype_auto_by_default_and_the_deprecated_switch(data_dir):
    """--teacher-dtype (default auto: float32 on a CPU without bf16 instructions) sets the teacher's dtype; the
    deprecated --teacher-bf16 still means --teacher-dtype bf16 (with a DeprecationWarning)."""
    from fairmt.models.precision import resolve_teacher_dtype

    cfg, _, model, crit, _ = _setup(data_dir)
    assert cfg.criterion.teacher_dtype == "auto"
    assert {p.dtype for p in crit.teacher(model).parameters()} == {resolve_teacher_dtype("auto", "cpu")[0]}
    _, _, model, crit, _ = _setup(data_dir, "--teacher-dtype", "bf16")
    assert {p.dtype for p in crit.teacher(model).parameters()} == {torch.bfloat16}
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    with pytest.warns(DeprecationWarning, match="--teacher-bf16 is deprecated: use --teacher-dtype='bf16'"):
        _, _, model, crit, _ = _setup(data_dir, "--teacher-bf16")
    assert {p.dtype for p in crit.teacher(model).parameters()} == {torch.bfloat16}
    with pytest.raises(FairmtError, match="contradicts --teacher-dtype fp32"):
        _setup(data_dir, "--teacher-bf16", "--teacher-dtype", "fp32")


def test_one_gender_batch_names_the_options(data_dir):
    _, task, model, crit, sample = _setup(data_dir, "--kd-alpha", "0")
    sample["gacl"]["gender"] = torch.zeros_like(sample["gacl"]["gender"])
    model.train()
    with pytest.raises(FairmtError, match=r"one gender.*--balanced-genders.*--inbatch-negatives false"):
        crit(model, sample)
    model.eval()  # validation: L_GC is skipped on such a batch, the MT terms remain
    with torch.no_grad():
        _, _, log = crit(model, sample)
    assert "loss_gc" not in log and float(log["loss_mt"]) > 0


def test_bad_side_files_name_the_file(data_dir, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(data_dir, bad)
    (bad / "train.en-de.gender").unlink()
    with pytest.raises(FairmtError, match=r"gender label file .*train\.en-de\.gender not found.*fairseq-prep"):
        _setup(bad)
    # a counterfactual file of another length: the valid split's (16 sentences) under the train name
    shutil.copyfile(data_dir / "train.en-de.gender", bad / "train.en-de.gender")
    for ext in ("bin", "idx"):
        shutil.copyfile(data_dir / f"valid.en-de.cf.{ext}", bad / f"train.en-de.cf.{ext}")
    with pytest.raises(FairmtError, match=r"counterfactual source file .*train\.en-de\.cf\.bin has 16 sentences"):
        _setup(bad)
    # fairseq-train itself exits non-zero with the message
    (bad / "valid.en-de.gender").unlink()
    with pytest.raises(FairmtError, match=r"valid\.en-de\.gender not found"):  # fairseq-train's exit 1 + message
        _train(bad, tmp_path / "ck", "--batch-size", "8", "--max-update", "1")


# ---- fairseq-train end to end ------------------------------------------------------------------------------------


def test_fairseq_train_end_to_end_and_resume(data_dir, tmp_path):
    save = tmp_path / "ck"
    t0 = time.time()
    out = _train(
        data_dir,
        save,
        "--batch-size",
        "8",
        "--dropout",
        "0.1",
        "--optimizer",
        "adam",
        "--lr",
        "0.003",
        "--max-update",
        "50",
        "--kd-alpha",
        "0.4",
        "--gacl-lambda",
        "1.0",
    )
    logs = _inner_logs(out)
    assert len(logs) == 50, out[-2000:]
    for row in logs:
        for k in ("loss", "loss_mt", "loss_kd", "loss_gc", "gc_positives", "gc_negatives"):
            assert k in row
        # fairseq's loss is in bits: loss·ln 2 = (1−α)·loss_mt + α·loss_kd + λ·loss_gc (rounded logs)
        total = 0.6 * float(row["loss_mt"]) + 0.4 * float(row["loss_kd"]) + float(row["loss_gc"])
        assert abs(float(row["loss"]) * math.log(2) - total) < 5e-3
    first = sum(float(r["loss"]) for r in logs[:5]) / 5
    last = sum(float(r["loss"]) for r in logs[-5:]) / 5
    assert last < first - 0.5, (first, last)

    # the teacher: the starting model (same seed, same build), kept beside the checkpoints, never inside them
    teacher_file = save / "gacl_teacher.safetensors"
    from safetensors.torch import load_file

    teacher = load_file(teacher_file)
    start = _setup(data_dir, seed=1)[2].state_dict()
    assert set(start) == set(teacher) and all(torch.equal(start[k], teacher[k]) for k in start)
    ckpt = torch.load(save / "checkpoint_last.pt", weights_only=False)
    assert ckpt.get("criterion") is None and set(ckpt["model"]) == set(teacher)
    assert not any("teacher" in k for k in ckpt["model"])
    moved = max(float((ckpt["model"][k].float() - teacher[k].float()).abs().max()) for k in teacher)
    assert moved > 1e-3  # the student trained, the teacher did not

    sha = _sha(teacher_file)
    out2 = _train(
        data_dir,
        save,
        "--batch-size",
        "8",
        "--dropout",
        "0.1",
        "--optimizer",
        "adam",
        "--lr",
        "0.003",
        "--max-update",
        "55",
        "--restore-file",
        str(save / "checkpoint_last.pt"),
    )
    assert "Loaded checkpoint" in out2 and "@ 50 updates" in out2 and "resumed run, KD teacher" in out2
    logs2 = _inner_logs(out2)
    assert [int(r["num_updates"]) for r in logs2] == [51, 52, 53, 54, 55]
    assert float(logs2[0]["loss"]) < first
    assert _sha(teacher_file) == sha
    print(f"fairseq-train 50 updates + resume 5: {time.time() - t0:.1f}s; loss {first:.3f} → {last:.3f}")


def test_m2m_style_model_and_teacher_path(data_dir, tmp_path):
    """A pre-norm transformer with all embeddings shared (fairseq's M2M-100 layout, joined dictionary): trains with
    the criterion; a second run distils from its checkpoint through --teacher-path (no teacher file written)."""
    m2m = [
        "--encoder-normalize-before",
        "--decoder-normalize-before",
        "--share-all-embeddings",
        "--batch-size",
        "8",
        "--optimizer",
        "adam",
        "--lr",
        "0.003",
        "--disable-validation",
        "--kd-alpha",
        "0.4",
    ]
    logs = _inner_logs(_train(data_dir, tmp_path / "a", *m2m, "--max-update", "20"))
    assert len(logs) == 20 and float(logs[-1]["loss"]) < float(logs[0]["loss"]) - 0.5
    assert all("loss_gc" in r and "loss_kd" in r for r in logs)
    teacher_ckpt = tmp_path / "a" / "checkpoint_last.pt"
    out = _train(data_dir, tmp_path / "b", *m2m, "--max-update", "3", "--teacher-path", str(teacher_ckpt))
    assert f"KD teacher loaded from {teacher_ckpt}" in out
    assert float(_inner_logs(out)[0]["loss_kd"]) > 0.1  # a trained teacher vs the fresh student
    assert not (tmp_path / "b" / "gacl_teacher.safetensors").exists()
    with pytest.raises(FairmtError, match=r"--teacher-path .*nope\.pt: no such checkpoint file"):
        _setup(data_dir, "--teacher-path", str(tmp_path / "nope.pt"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_RANK_JOB = """
import os
import sys
from pathlib import Path

import torch.distributed as dist

from test_fairseq_plugin import fairseq_train

if not dist.is_initialized():  # the pool's first job: its group (env://, as accelerate makes it for the other jobs)
    dist.init_process_group("gloo")
rank = os.environ["RANK"]  # the pool's process group is fairseq's (it initialises none when one is up)
Path(sys.argv[1], f"rank{rank}.log").write_text(fairseq_train([*sys.argv[2:], "--distributed-rank", rank]))
"""


def test_two_processes_match_one_process(data_dir, tmp_path, torchrun_pool):
    """2 gloo processes × batch 4 (candidates gathered with gradient) == 1 process × batch 8: same logged losses,
    same parameters after 3 SGD updates. The two processes: the torchrun pool's (tests/support/torchrun_pool.py), each
    running fairseq-train's cli_main as rank RANK of world size 2 in the pool's gloo process group (two fresh
    interpreters importing torch + fairseq cost ~14 s of CPU); the one process: this one."""
    common = [
        "--dropout",
        "0",
        "--optimizer",
        "sgd",
        "--lr",
        "0.5",
        "--lr-scheduler",
        "fixed",
        "--max-update",
        "3",
        "--disable-validation",
        "--kd-alpha",
        "0.4",
        "--gacl-lambda",
        "1.0",
        "--gacl-temperature",
        "0.5",
    ]
    one = _train(data_dir, tmp_path / "one", *common, "--batch-size", "8")
    argv = [
        str(data_dir),
        *TRAIN,
        *common,
        "--batch-size",
        "4",
        "--save-dir",
        str(tmp_path / "two"),
        "--distributed-world-size",
        "2",
        "--distributed-init-method",
        f"tcp://127.0.0.1:{_free_port()}",
        "--distributed-no-spawn",
        "--distributed-backend",
        "gloo",
        "--ddp-backend",
        "legacy_ddp",
    ]
    script = tmp_path / "rank_job.py"
    script.write_text(_RANK_JOB)
    torchrun_pool.run(script, tmp_path, *argv, cwd=tmp_path, timeout=60)
    logs1, logs2 = _inner_logs(one), _inner_logs((tmp_path / "rank0.log").read_text())
    assert len(logs1) == len(logs2) == 3
    for a, b in zip(logs1, logs2):
        assert int(b["bsz"]) == 8  # 2 × 4: both processes' batches in every update
        for k in ("loss", "loss_mt", "loss_kd", "loss_gc", "gc_positives", "gc_negatives"):
            assert a[k] == b[k], (k, a, b)
    m1 = torch.load(tmp_path / "one" / "checkpoint_last.pt", weights_only=False)["model"]
    m2 = torch.load(tmp_path / "two" / "checkpoint_last.pt", weights_only=False)["model"]
    diff = max(float((m1[k].float() - m2[k].float()).abs().max()) for k in m1)
    assert diff < 1e-5, diff


# ---- multilingual: gacl_multilingual_translation (translation_multi_simple_epoch, M2M-100 language tokens) ----------

M2M = ["--encoder-normalize-before", "--decoder-normalize-before", "--share-all-embeddings"]


def _ml_args(data, *extra):
    return [
        str(data),
        "--user-dir",
        user_dir(),
        "--task",
        "gacl_multilingual_translation",
        "--lang-pairs",
        "en-de",
        "--lang-dict",
        str(data / "langs.txt"),
        "--encoder-langtok",
        "src",
        "--decoder-langtok",
        "--balanced-genders",
        "--criterion",
        "gacl_kd",
        "--label-smoothing",
        "0.1",
        *ARCH,
        *M2M,
        "--cpu",
        "--seed",
        "1",
        "--num-workers",
        "0",
        "--batch-size",
        "8",
        *extra,
    ]


def test_multilingual_missing_side_files_name_the_file(ml_data_dir, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(ml_data_dir, bad)
    (bad / "train.en-de.gender").unlink()
    with pytest.raises(
        FairmtError,
        match=r"gender label file .*train\.en-de\.gender not found: "
        r"gacl_multilingual_translation needs.*fairseq-prep",
    ):
        _setup_ml(bad)
    shutil.copyfile(ml_data_dir / "train.en-de.gender", bad / "train.en-de.gender")
    (bad / "train.en-de.cf.idx").unlink()
    with pytest.raises(FairmtError, match=r"counterfactual source file .*train\.en-de\.cf\.bin/\.idx not found"):
        _setup_ml(bad)


def test_multilingual_fairseq_train_m2m_layout_with_projection_head(ml_data_dir, tmp_path):
    """fairseq-train --task gacl_multilingual_translation on a tiny M2M-100-layout transformer, official variant
    (linear projection head on): loss terms logged, loss goes down; the head is trained and saved in the
    checkpoint (criterion state), the teacher is not."""
    save = tmp_path / "ck"
    out = fairseq_train(
        _ml_args(
            ml_data_dir,
            "--dropout",
            "0.1",
            "--optimizer",
            "adam",
            "--lr",
            "0.003",
            "--max-update",
            "20",
            "--kd-alpha",
            "0.4",
            "--gacl-variant",
            "official",
            "--no-progress-bar",
            "--log-format",
            "json",
            "--log-interval",
            "1",
            "--save-dir",
            str(save),
        )
    )
    logs = _inner_logs(out)
    assert len(logs) == 20, out[-2000:]
    assert all(k in r for r in logs for k in ("loss", "loss_mt", "loss_kd", "loss_gc", "gc_negatives"))
    first = sum(float(r["loss"]) for r in logs[:5]) / 5
    last = sum(float(r["loss"]) for r in logs[-5:]) / 5
    assert last < first - 0.5, (first, last)
    print(f"gacl_multilingual_translation 20 updates: loss {first:.3f} → {last:.3f}")

    ckpt = torch.load(save / "checkpoint_last.pt", weights_only=False)
    head = ckpt["criterion"]
    assert set(head) == {"gacl_projection_head.net.1.weight", "gacl_projection_head.net.1.bias"}
    assert not any("teacher" in k for k in ckpt["model"])
    start = _setup_ml(ml_data_dir, "--gacl-variant", "official")[2].state_dict()  # the same seed: the initial head
    assert max(float((head[k] - start[k]).abs().max()) for k in head) > 1e-4  # trained with the model


# ---- the guard ---------------------------------------------------------------------------------------------------


@pytest.mark.needs("fairseq")
def test_plugin_tests_ran_where_fairseq_is_installed():
    """Fails when fairseq is importable but the plugin tests above were skipped (a broken install would otherwise
    pass the suite silently)."""
    reason = _plugin_skip_reason()
    assert reason is None, reason
    assert not _SKIPPED, f"fairseq is importable but the fairseq plugin tests were skipped: {_SKIPPED}"
    from fairseq.criterions import CRITERION_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    import fairmt.fairseq.userdir.fairmt_gacl  # noqa: F401

    assert "gacl_kd" in CRITERION_REGISTRY and "gacl_translation" in TASK_REGISTRY
    assert "gacl_multilingual_translation" in TASK_REGISTRY
    assert os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD") == "1"


@pytest.mark.parametrize(
    "option, value, text",
    [("--gacl-lambda", "-1", "a finite number ≥ 0"), ("--kd-temperature", "0", "a finite number > 0")],
)
def test_criterion_options_outside_their_declared_range(data_dir, option, value, text):
    """Issue 45: the criterion reads the same Range declarations as GACLConfig (``CRITERION_RANGES``)."""
    with pytest.raises(FairmtError, match=f"^{option} must be {text}, got "):
        _setup(data_dir, option, value)


@pytest.mark.parametrize(
    "option, value, text",
    [("--max-source-positions", "0", "an integer ≥ 1"), ("--num-batch-buckets", "-1", "an integer ≥ 0")],
)
def test_task_options_outside_their_declared_range(data_dir, option, value, text):
    """Issue 45: the gacl_translation task's options (fairseq's TranslationConfig fields included) are checked
    against TASK_RANGES when fairseq sets the task up, with the criterion's wording."""
    with pytest.raises(FairmtError, match=f"^{option} must be {text}, got "):
        _setup(data_dir, option, value)
