"""Readers for parallel data: JSONL (``{"translation": {"en": ..., "de": ...}}``), TSV, two aligned plain-text
files, and Hugging Face ``datasets``. Every reader returns a :class:`datasets.Dataset` with columns ``src`` and
``tgt`` and reports bad lines by file and line number.
"""

from __future__ import annotations

from pathlib import Path

from fairmt.errors import FairmtError


def _dataset(src: list[str], tgt: list[str]):
    from datasets import Dataset

    if not src:
        raise FairmtError("the parallel data is empty: no sentence pairs were read")
    return Dataset.from_dict({"src": src, "tgt": tgt})


def read_jsonl(path: str | Path, src_lang: str = "en", tgt_lang: str = "de", key_aliases: dict[str, str] | None = None):
    """``{"translation": {src_lang: ..., tgt_lang: ...}}`` per line (WMT / HF ``translation`` format).

    ``key_aliases`` maps a language code to another key a row may use for it instead (an NLLB recipe's
    ``eng_Latn`` → ``en``: the files of the M2M-100 / SMaLL-100 recipes serve NLLB's too)."""
    from fairmt.data.inputs import iter_jsonl

    aliases = key_aliases or {}
    keys = {lang: [lang, *([aliases[lang]] if lang in aliases else [])] for lang in (src_lang, tgt_lang)}
    spelt = {lang: " or ".join(f'"{k}"' for k in keys[lang]) for lang in keys}
    src, tgt = [], []
    for n, obj in iter_jsonl(path, what="parallel JSONL"):
        try:
            pair = obj["translation"]
            s, t = (pair[next((k for k in keys[lang] if k in pair), lang)] for lang in (src_lang, tgt_lang))
        except (KeyError, TypeError) as err:
            raise FairmtError(
                f'{path}:{n}: expected {{"translation": {{{spelt[src_lang]}: ..., {spelt[tgt_lang]}: ...}}}} ({err!r})'
            ) from None
        if not isinstance(s, str) or not isinstance(t, str):
            raise FairmtError(f"{path}:{n}: the {src_lang!r} and {tgt_lang!r} texts must be strings")
        src.append(s)
        tgt.append(t)
    return _dataset(src, tgt)


def read_tsv(path: str | Path):
    """``source<TAB>target`` per line."""
    from fairmt.data.inputs import read_lines

    src, tgt = [], []
    for n, line in enumerate(read_lines(path, "parallel TSV", allow_blank=True), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise FairmtError(f"{path}:{n}: expected 2 tab-separated columns (source, target), found {len(parts)}")
        src.append(parts[0])
        tgt.append(parts[1])
    return _dataset(src, tgt)


def read_aligned_files(src_path: str | Path, tgt_path: str | Path):
    """Two plain-text files, line i of one the translation of line i of the other."""
    from fairmt.data.inputs import read_lines

    src = read_lines(src_path, "source", allow_blank=True)
    tgt = read_lines(tgt_path, "target", allow_blank=True)
    if len(src) != len(tgt):
        raise FairmtError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: source and target must have the same "
            "number of lines"
        )
    return _dataset(src, tgt)


def from_hf_dataset(
    dataset, src_lang: str = "en", tgt_lang: str = "de", src_column: str | None = None, tgt_column: str | None = None
):
    """A ``datasets.Dataset`` with a ``translation`` column (dicts by language) or two text columns."""
    cols = dataset.column_names
    if src_column and tgt_column:
        missing = [c for c in (src_column, tgt_column) if c not in cols]
        if missing:
            raise FairmtError(f"columns {missing} not in the dataset (it has {cols})")
        return _dataset(list(dataset[src_column]), list(dataset[tgt_column]))
    if "translation" not in cols:
        raise FairmtError(f"the dataset has no 'translation' column (columns: {cols}); name src_column and tgt_column")
    pairs = dataset["translation"]
    return _dataset([p[src_lang] for p in pairs], [p[tgt_lang] for p in pairs])


def read_parallel(
    path_or_name: str | Path,
    src_lang: str = "en",
    tgt_lang: str = "de",
    split: str = "train",
    key_aliases: dict[str, str] | None = None,
    **kw,
):
    """Read parallel data by file extension (``.jsonl``/``.json``, ``.tsv``) or as a Hugging Face dataset name
    (``key_aliases``: see :func:`read_jsonl`)."""
    p = Path(path_or_name)
    if p.suffix in (".jsonl", ".json"):
        return read_jsonl(p, src_lang, tgt_lang, key_aliases)
    if p.suffix == ".tsv":
        return read_tsv(p)
    if p.exists():
        raise FairmtError(f"{p}: unknown parallel-data format (use .jsonl, .tsv, or read_aligned_files)")
    from datasets import load_dataset

    from fairmt.hub import require_dataset

    require_dataset(str(path_or_name), "parallel data")  # a missing file or an unreachable Hub dataset: one line
    return from_hf_dataset(load_dataset(str(path_or_name), split=split, **kw), src_lang, tgt_lang)
