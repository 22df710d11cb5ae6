"""``fairmt data fairseq-prep``: GACL data for ``fairseq-train --task gacl_translation`` (one pair) or
``--task gacl_multilingual_translation`` (``--lang-pairs``, M2M-100 / NLLB style).

Runs fairmt's own GACL preparation (:func:`fairmt.data.gacl.prepare_gacl_pairs`: keep sources with gendered words
of exactly one gender, balance male/female, add the gender-swapped counterfactual source), writes the text files
and, beside them, the two side files the tasks read, then binarises with ``fairseq-preprocess``.

One pair (``--src en --tgt de``; the layout of fairseq's ``translation`` task)::

    OUT/text/{train,valid}.{src}   {train,valid}.{tgt}   sources / targets (tokenised, one sentence a line)
    OUT/text/{train,valid}.cf      the counterfactual (gender-swapped) sources, tokenised the same way
    OUT/{split}.{src}-{tgt}.{src}.{bin,idx}, .{tgt}.{bin,idx}, dict.{src}.txt, dict.{tgt}.txt   (fairseq-preprocess)
    OUT/{split}.{src}-{tgt}.cf.{bin,idx}        the counterfactual sources, binarised with the source dictionary
    OUT/{split}.{src}-{tgt}.gender              one label a line, 0 = male, 1 = female (fairmt's convention)

``--lang-pairs en-de,en-fr`` (the layout of fairseq's ``translation_multi_simple_epoch``): every pair is read from
the same input (rows holding both languages) and prepared on its own; ONE joined dictionary serves every language
(built from all pairs' training sources, targets and counterfactuals, or ``--srcdict``), as multi_simple_epoch
expects, and the language list is written for ``--lang-dict``::

    OUT/text/{split}.{src}-{tgt}.{src,tgt,cf,gender}
    OUT/dict.txt, OUT/dict.{lang}.txt (the same dictionary, once per language), OUT/langs.txt (--lang-dict)
    OUT/{split}.{src}-{tgt}.{src,tgt}.{bin,idx}, {split}.{src}-{tgt}.cf.{bin,idx}, {split}.{src}-{tgt}.gender

The language tokens (``__en__``) are not in these dictionaries: multi_simple_epoch adds them when it loads a
dictionary (``--lang-tok-style``), in the order of ``--lang-dict``.

Gender detection and re-inflection run on the raw sentences; ``--sentencepiece-model`` then encodes all text
(sources, targets, counterfactuals) into pieces for fairseq, otherwise the text is written as it is (fairseq splits
on whitespace, so pass text already tokenised/BPE'd for your model).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fairmt.errors import FairmtError
from fairmt.outputs import copy_file

INSTALL_HINT = (
    "fairseq is not installed: install it as docs/methods/gacl.md ('GACL + KD in fairseq') says (torch first, then "
    "`pip install setuptools wheel cython numpy && pip install --no-build-isolation --no-deps "
    'fairseq-fixed==0.12.3.1 && pip install cffi hydra-core==1.3.2 omegaconf==2.3.0 regex "sacrebleu>=1.4.12" '
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
    from fairmt.outputs import writing

    with writing(path, what="the prepared text") as fh:
        for line in lines:
            if "\n" in line:
                raise FairmtError(f"{path}: a sentence contains a newline: {line!r}")
            fh.write(line + "\n")


def _run_preprocess(jobs: list[tuple[str, list[str]]], workdir: Path) -> None:
    """Run ``fairseq-preprocess`` once per ``(what, argv)``, in order, in one child process
    (:mod:`fairmt.fairseq._preprocess`). The child is a fork of this process where that is safe
    (:func:`fairmt.forking.ready_to_fork`): it starts with what this process has imported, fairseq included
    (:func:`require_fairseq` imported it), where a fresh interpreter imported fairseq a second time (~9 s of CPU
    here). Elsewhere it is a fresh interpreter. Either way fairseq's logging set-up and its worker processes stay in
    the child."""
    from fairmt import forking
    from fairmt.outputs import write_file

    spec = workdir / ".preprocess-jobs.json"
    write_file(spec, json.dumps(jobs), what="the preprocessing jobs")
    try:
        if forking.ready_to_fork() is None:
            from fairmt.fairseq import _preprocess

            code, out, err = forking.run_forked(lambda: _preprocess.forked_main([str(spec)]), name=b"fairseq-prep")
        else:
            cmd = [sys.executable, "-m", "fairmt.fairseq._preprocess", str(spec)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            code, out, err = proc.returncode, proc.stdout, proc.stderr
    finally:
        spec.unlink()
    if code != 0:
        text = err or out
        tagged = {
            ln.split(":", 1)[0]: ln.split(":", 1)[1].strip()
            for ln in text.splitlines()
            if ln.startswith(("fairmt-preprocess-failed:", "fairmt-preprocess-error:"))
        }
        what = tagged.get("fairmt-preprocess-failed", "data")
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        why = tagged.get("fairmt-preprocess-error") or (lines[-1].strip() if lines else "no message")
        raise FairmtError(f"fairseq-preprocess failed on the {what} (exit {code}): {why}")


def parse_lang_pairs(spec: str | list[str] | None) -> list[tuple[str, str]]:
    """``"en-de,en-fr"`` (or a list of such items) → ``[("en", "de"), ("en", "fr")]``, checked."""
    if spec is None:
        return []
    items = spec.split(",") if isinstance(spec, str) else [x for part in spec for x in part.split(",")]
    pairs = []
    for item in (x.strip() for x in items):
        src, sep, tgt = item.partition("-")
        if not sep or not src or not tgt or "-" in tgt or src == tgt:
            raise FairmtError(f"--lang-pairs: {item!r} is not a language pair like en-de")
        if (src, tgt) in pairs:
            raise FairmtError(f"--lang-pairs: {item} is listed twice")
        pairs.append((src, tgt))
    if not pairs:
        raise FairmtError("--lang-pairs is empty: give pairs like en-de,en-fr")
    return pairs


def _split(train, valid_pairs, valid_size, balance, seed, what):
    """``{"train": ..., "valid": ...}`` of prepared pairs: the valid split prepared from its own input, or held out."""
    from fairmt.data.gacl import prepare_gacl_pairs

    splits = {}
    if valid_pairs is not None:
        splits["valid"] = prepare_gacl_pairs(valid_pairs, balance=balance, seed=seed)
    else:
        n = len(train)
        k = valid_size if valid_size is not None else min(500, n // 20)
        k -= k % 2
        if k < 0 or k >= n:
            raise FairmtError(
                f"--valid-size {valid_size}: must be between 0 and {n - 1} ({n} {what} pairs after preparation)"
            )
        if k > 0:  # the order is shuffled and gender-balanced already: the last k rows are a fair hold-out
            splits["valid"] = train.select(range(n - k, n))
            train = train.select(range(n - k))
    return {"train": train, **splits}


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
    lang_pairs: str | list[str] | None = None,
    overwrite: bool = False,
) -> dict[str, int]:
    """Prepare and binarise GACL data for fairseq; returns the number of sentence pairs per split (with
    ``lang_pairs``: per ``"{split}.{src}-{tgt}"``).

    ``lang_pairs`` (``"en-de,en-fr"``) writes the multilingual layout of ``gacl_multilingual_translation`` (one
    joined dictionary for every language, ``dict.{lang}.txt`` copies and ``langs.txt``; ``src``/``tgt`` are then
    not used, ``srcdict``/``tgtdict`` must be one file). Every input is read and checked (through
    :mod:`fairmt.data.inputs`) before fairseq is needed or anything is written."""
    from fairmt.data.gacl import prepare_gacl_pairs
    from fairmt.data.inputs import input_path as _input_file
    from fairmt.data.inputs import read_text
    from fairmt.data.parallel import read_parallel

    pairs = parse_lang_pairs(lang_pairs)
    directions = pairs or [(src, tgt)]
    for what, path in (("training pairs (--input)", input_path), ("validation pairs (--valid-input)", valid_input)):
        if path is not None and Path(path).suffix not in (".jsonl", ".json", ".tsv"):
            _input_file(path, what)  # missing/directory first, then the format
            raise FairmtError(f'{path}: unknown format of the {what}: use .jsonl ({{"translation": {{...}}}}) or .tsv')
    if pairs and Path(input_path).suffix == ".tsv":
        raise FairmtError(
            '--lang-pairs reads every pair from one .jsonl file ({"translation": {"en": .., '
            '"de": .., ...}}); a .tsv holds one pair only'
        )
    raw = {
        (s, t): (read_parallel(input_path, s, t), read_parallel(valid_input, s, t) if valid_input else None)
        for s, t in directions
    }
    for opt, path in (("--srcdict", srcdict), ("--tgtdict", tgtdict)):
        if path is not None:
            read_text(path, f"fairseq dictionary ({opt})")
    if pairs and srcdict and tgtdict and srcdict != tgtdict:
        raise FairmtError("--lang-pairs uses one dictionary for every language: give one --srcdict (or --tgtdict)")
    if sentencepiece_model is not None:
        if _input_file(sentencepiece_model, "SentencePiece model (--sentencepiece-model)").stat().st_size == 0:
            raise FairmtError(f"{sentencepiece_model}: the SentencePiece model file is empty")
    enc = _encoder(sentencepiece_model)
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise FairmtError(f"--output-dir {out_dir}: is a file; give the output folder")
    if joined_dictionary and (srcdict or tgtdict) and srcdict != tgtdict and srcdict and tgtdict:
        raise FairmtError("--joined-dictionary with two different --srcdict/--tgtdict files: give one dictionary")
    require_fairseq()

    prepared = {}
    for (s, t), (train_pairs, valid_pairs) in raw.items():
        try:
            train = prepare_gacl_pairs(train_pairs, balance=balance, seed=seed)
        except FairmtError as err:
            if not pairs:
                raise
            raise FairmtError(f"{s}-{t}: {err}") from None
        prepared[(s, t)] = _split(train, valid_pairs, valid_size, balance, seed, f"{s}-{t}")

    final = Path(out_dir)
    if final.is_dir() and any(final.iterdir()) and not overwrite:
        raise FairmtError(
            f"{final}: the output folder already holds files (an earlier preparation?); choose another "
            "--output-dir, or pass --overwrite to rebuild it"
        )
    if overwrite:  # what --overwrite may remove there: only what fairmt wrote (checked again when the new one is in)
        from fairmt.outputs import check_overwrite

        check_overwrite(
            final,
            "fairseq data folder",
            flag="--output-dir",
            markers=PREP_MARKERS,
            inputs=[x for x in (input_path, valid_input, srcdict, tgtdict, sentencepiece_model) if x],
        )
    # built beside the destination and renamed into place at the end: a failure never leaves a half-written folder,
    # and a folder that is rebuilt stays whole until the new one is complete
    out = final.parent / f".{final.name}.partial-{os.getpid()}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    try:
        counts = _write_layout(out, prepared, pairs, src, tgt, enc, srcdict, tgtdict, joined_dictionary, workers)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    _publish(out, final)
    return counts


PREP_MARKERS = ("preprocess.log",)
"""What marks a folder fairseq-prep wrote before it kept a manifest (fairseq-preprocess's log)."""


def _publish(built: Path, final: Path) -> None:
    """Put the finished folder ``built`` at ``final``: renamed into place, or, over an earlier preparation, its entries
    replace what fairmt wrote there (and nothing else) only now (:func:`fairmt.outputs.publish_dir`)."""
    from fairmt.outputs import publish_dir

    publish_dir(built, final, what="fairseq data folder", flag="--output-dir", markers=PREP_MARKERS)


def _write_layout(out: Path, prepared, pairs, src, tgt, enc, srcdict, tgtdict, joined_dictionary, workers):
    """Write the text files, run fairseq-preprocess and place the side files, all inside ``out``."""
    text = out / "text"
    text.mkdir(parents=True, exist_ok=True)
    tmp = out / ".cf-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    jobs: list[tuple[str, list[str]]] = []
    counts: dict[str, int] = {}

    if not pairs:  # ---- one pair: fairseq's translation layout (unchanged file names)
        splits = prepared[(src, tgt)]
        for split, ds in splits.items():
            _write(text / f"{split}.{src}", [enc(x) for x in ds["src"]])
            _write(text / f"{split}.{tgt}", [enc(x) for x in ds["tgt"]])
            _write(text / f"{split}.cf", [enc(x) for x in ds["src_cf"]])
            _write(text / f"{split}.gender", [str(int(g)) for g in ds["gender"]])
            counts[split] = len(ds)
        argv = [
            "--source-lang",
            src,
            "--target-lang",
            tgt,
            "--trainpref",
            str(text / "train"),
            "--destdir",
            str(out),
            "--workers",
            str(workers),
        ]
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
        jobs.append((f"{src}-{tgt} pairs", argv))
        # the counterfactual sources, binarised with the source dictionary just written (never one of their own)
        cf_argv = [
            "--only-source",
            "--source-lang",
            "cf",
            "--srcdict",
            str(out / f"dict.{src}.txt"),
            "--trainpref",
            str(text / "train"),
            "--destdir",
            str(tmp),
            "--workers",
            str(workers),
        ]
        if "valid" in splits:
            cf_argv += ["--validpref", str(text / "valid")]
        jobs.append(("counterfactual sources", cf_argv))
        _run_preprocess(jobs, out)
        for split in splits:
            gender_file, cf_prefix = side_file_paths(out, split, src, tgt)
            for ext in ("bin", "idx"):
                os.replace(tmp / f"{split}.cf-None.cf.{ext}", f"{cf_prefix}.{ext}")
            copy_file(text / f"{split}.gender", gender_file, what="the gender labels")
        shutil.rmtree(tmp, ignore_errors=True)
        return counts

    # ---- several pairs: translation_multi_simple_epoch's layout, one joined dictionary for every language
    langs = sorted({lang for pair in pairs for lang in pair})
    dict_file = out / "dict.txt"
    given = srcdict or tgtdict
    if given:
        copy_file(given, dict_file, what="the dictionary")
    else:  # one dictionary from every pair's training text (sources, targets and counterfactuals)
        from fairmt.outputs import writing

        with writing(text / "dict-source.all", what="the dictionary's text") as fh:
            for s, t in pairs:
                ds = prepared[(s, t)]["train"]
                for col in ("src", "tgt", "src_cf"):
                    for x in ds[col]:
                        fh.write(enc(x) + "\n")
        jobs.append(
            (
                "joined dictionary",
                [
                    "--only-source",
                    "--dict-only",
                    "--source-lang",
                    "all",
                    "--trainpref",
                    str(text / "dict-source"),
                    "--destdir",
                    str(tmp / "dict"),
                    "--workers",
                    str(workers),
                ],
            )
        )
    for s, t in pairs:
        splits = prepared[(s, t)]
        stem = f"{s}-{t}"
        for split, ds in splits.items():
            _write(text / f"{split}.{stem}.{s}", [enc(x) for x in ds["src"]])
            _write(text / f"{split}.{stem}.{t}", [enc(x) for x in ds["tgt"]])
            _write(text / f"{split}.{stem}.cf", [enc(x) for x in ds["src_cf"]])
            _write(text / f"{split}.{stem}.gender", [str(int(g)) for g in ds["gender"]])
            counts[f"{split}.{stem}"] = len(ds)
        d = str(dict_file if given else tmp / "dict" / "dict.all.txt")
        pref = ["--trainpref", str(text / f"train.{stem}")]
        if "valid" in splits:
            pref += ["--validpref", str(text / f"valid.{stem}")]
        jobs.append(
            (
                f"{stem} pairs",
                [
                    "--source-lang",
                    s,
                    "--target-lang",
                    t,
                    *pref,
                    "--srcdict",
                    d,
                    "--tgtdict",
                    d,
                    "--destdir",
                    str(out),
                    "--workers",
                    str(workers),
                ],
            )
        )
        jobs.append(
            (
                f"{stem} counterfactual sources",
                [
                    "--only-source",
                    "--source-lang",
                    "cf",
                    "--srcdict",
                    d,
                    *pref,
                    "--destdir",
                    str(tmp / stem),
                    "--workers",
                    str(workers),
                ],
            )
        )
    _run_preprocess(jobs, out)
    if not given:
        os.replace(tmp / "dict" / "dict.all.txt", dict_file)
        (text / "dict-source.all").unlink()
    for lang in langs:
        copy_file(dict_file, out / f"dict.{lang}.txt", what="the dictionary")
    from fairmt.outputs import write_file

    write_file(out / "langs.txt", "".join(f"{lang}\n" for lang in langs), what="the language list")
    for s, t in pairs:
        stem = f"{s}-{t}"
        for split in prepared[(s, t)]:
            gender_file, cf_prefix = side_file_paths(out, split, s, t)
            for ext in ("bin", "idx"):
                os.replace(tmp / stem / f"{split}.cf-None.cf.{ext}", f"{cf_prefix}.{ext}")
            copy_file(text / f"{split}.{stem}.gender", gender_file, what="the gender labels")
    shutil.rmtree(tmp, ignore_errors=True)
    return counts
