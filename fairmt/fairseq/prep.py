"""``fairmt data fairseq-prep``: GACL data for ``fairseq-train --task gacl_translation``.

Runs fairmt's own GACL preparation (:func:`fairmt.data.gacl.prepare_gacl_pairs`: keep sources with gendered words
of exactly one gender, balance male/female, add the gender-swapped counterfactual source), writes the text files
and, beside them, the two side files the task reads, then binarises with ``fairseq-preprocess``::

    OUT/text/{train,valid}.{src}   {train,valid}.{tgt}   sources / targets (tokenised, one sentence a line)
    OUT/text/{train,valid}.cf      the counterfactual (gender-swapped) sources, tokenised the same way
    OUT/{split}.{src}-{tgt}.{src}.{bin,idx}, .{tgt}.{bin,idx}, dict.{src}.txt, dict.{tgt}.txt   (fairseq-preprocess)
    OUT/{split}.{src}-{tgt}.cf.{bin,idx}        the counterfactual sources, binarised with the source dictionary
    OUT/{split}.{src}-{tgt}.gender              one label a line, 0 = male, 1 = female (fairmt's convention)

Gender detection and re-inflection run on the raw sentences; ``--sentencepiece-model`` then encodes all text
(sources, targets, counterfactuals) into pieces for fairseq, otherwise the text is written as it is (fairseq splits
on whitespace, so pass text already tokenised/BPE'd for your model).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from fairmt.errors import FairmtError

INSTALL_HINT = (
    "fairseq is not installed: install it as README.md's fairseq section says (torch first, then "
    "`pip install setuptools wheel cython numpy && pip install --no-build-isolation --no-deps "
    "fairseq-fixed==0.12.3.1 && pip install cffi hydra-core==1.3.2 omegaconf==2.3.0 regex \"sacrebleu>=1.4.12\" "
    "tqdm bitarray scikit-learn packaging`)"
)


def require_fairseq() -> None:
    """Raise a :class:`FairmtError` naming the install step when fairseq cannot be imported."""
    try:
        import fairseq  # noqa: F401
    except ImportError as err:
        raise FairmtError(f"{INSTALL_HINT} ({err})") from None


def side_file_paths(data_dir: str | Path, split: str, src: str, tgt: str) -> tuple[Path, Path]:
    """``(gender labels file, counterfactual prefix)`` of a split, as the task and the prep command name them."""
    stem = Path(data_dir) / f"{split}.{src}-{tgt}"
    return Path(f"{stem}.gender"), Path(f"{stem}.cf")


def _encoder(spm_model: str | None):
    if spm_model is None:
        return lambda s: " ".join(s.split())
    import sentencepiece as spm

    try:
        sp = spm.SentencePieceProcessor(model_file=spm_model)
    except (OSError, RuntimeError) as err:
        raise FairmtError(f"{spm_model}: cannot load as a SentencePiece model ({err})") from None
    return lambda s: " ".join(sp.encode(s, out_type=str))


def _write(path: Path, lines: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for line in lines:
            if "\n" in line:
                raise FairmtError(f"{path}: a sentence contains a newline: {line!r}")
            fh.write(line + "\n")


def _run_preprocess(argv: list[str], what: str) -> None:
    cmd = [sys.executable, "-m", "fairseq_cli.preprocess", *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise FairmtError(f"fairseq-preprocess failed on the {what} (exit {proc.returncode}):\n{tail}")


def fairseq_prep(
    input_path: str,
    out_dir: str,
    src: str = "en",
    tgt: str = "de",
    valid_input: str | None = None,
    valid_size: int | None = None,
    srcdict: str | None = None,
    tgtdict: str | None = None,
    joined_dictionary: bool = False,
    sentencepiece_model: str | None = None,
    balance: bool = True,
    seed: int = 0,
    workers: int = 1,
) -> dict[str, int]:
    """Prepare and binarise GACL data for fairseq; returns the number of sentence pairs per split.

    Every input is read and checked (through :mod:`fairmt.data.inputs`) before fairseq is needed or anything is
    written."""
    from fairmt.data.gacl import prepare_gacl_pairs
    from fairmt.data.inputs import input_path as _input_file
    from fairmt.data.inputs import read_text
    from fairmt.data.parallel import read_parallel

    for what, path in (("training pairs (--input)", input_path), ("validation pairs (--valid-input)", valid_input)):
        if path is not None and Path(path).suffix not in (".jsonl", ".json", ".tsv"):
            _input_file(path, what)  # missing/directory first, then the format
            raise FairmtError(f"{path}: unknown format of the {what}: use .jsonl ({{\"translation\": {{...}}}}) or .tsv")
    train_pairs = read_parallel(input_path, src, tgt)
    valid_pairs = read_parallel(valid_input, src, tgt) if valid_input is not None else None
    for opt, path in (("--srcdict", srcdict), ("--tgtdict", tgtdict)):
        if path is not None:
            read_text(path, f"fairseq dictionary ({opt})")
    if sentencepiece_model is not None:
        if _input_file(sentencepiece_model, "SentencePiece model (--sentencepiece-model)").stat().st_size == 0:
            raise FairmtError(f"{sentencepiece_model}: the SentencePiece model file is empty")
    enc = _encoder(sentencepiece_model)
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise FairmtError(f"--out {out_dir}: is a file; give the output folder")
    if joined_dictionary and (srcdict or tgtdict) and srcdict != tgtdict and srcdict and tgtdict:
        raise FairmtError("--joined-dictionary with two different --srcdict/--tgtdict files: give one dictionary")
    require_fairseq()

    train = prepare_gacl_pairs(train_pairs, balance=balance, seed=seed)
    splits = {}
    if valid_pairs is not None:
        splits["valid"] = prepare_gacl_pairs(valid_pairs, balance=balance, seed=seed)
    else:
        n = len(train)
        k = valid_size if valid_size is not None else min(500, n // 20)
        k -= k % 2
        if k < 0 or k >= n:
            raise FairmtError(f"--valid-size {valid_size}: must be between 0 and {n - 1} ({n} pairs after preparation)")
        if k > 0:  # the order is shuffled and gender-balanced already: the last k rows are a fair hold-out
            splits["valid"] = train.select(range(n - k, n))
            train = train.select(range(n - k))
    splits = {"train": train, **splits}

    out = Path(out_dir)
    text = out / "text"
    text.mkdir(parents=True, exist_ok=True)
    for split, ds in splits.items():
        _write(text / f"{split}.{src}", [enc(s) for s in ds["src"]])
        _write(text / f"{split}.{tgt}", [enc(s) for s in ds["tgt"]])
        _write(text / f"{split}.cf", [enc(s) for s in ds["src_cf"]])
        _write(text / f"{split}.gender", [str(int(g)) for g in ds["gender"]])

    argv = ["--source-lang", src, "--target-lang", tgt, "--trainpref", str(text / "train"), "--destdir", str(out),
            "--workers", str(workers)]
    if "valid" in splits:
        argv += ["--validpref", str(text / "valid")]
    if joined_dictionary:
        argv.append("--joined-dictionary")
        if srcdict or tgtdict:
            argv += ["--srcdict", srcdict or tgtdict]
    else:
        if srcdict:
            argv += ["--srcdict", srcdict]
        if tgtdict:
            argv += ["--tgtdict", tgtdict]
    _run_preprocess(argv, f"{src}-{tgt} pairs")

    # the counterfactual sources, binarised with the source dictionary just written (never a dictionary of their own)
    tmp = out / ".cf-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    cf_argv = ["--only-source", "--source-lang", "cf", "--srcdict", str(out / f"dict.{src}.txt"), "--trainpref",
               str(text / "train"), "--destdir", str(tmp), "--workers", str(workers)]
    if "valid" in splits:
        cf_argv += ["--validpref", str(text / "valid")]
    _run_preprocess(cf_argv, "counterfactual sources")
    for split in splits:
        gender_file, cf_prefix = side_file_paths(out, split, src, tgt)
        for ext in ("bin", "idx"):
            os.replace(tmp / f"{split}.cf-None.cf.{ext}", f"{cf_prefix}.{ext}")
        shutil.copyfile(text / f"{split}.gender", gender_file)
    shutil.rmtree(tmp, ignore_errors=True)
    return {split: len(ds) for split, ds in splits.items()}
