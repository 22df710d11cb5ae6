"""Translation quality: spBLEU (sacrebleu, FLORES-200 SentencePiece tokenisation) and chrF++, on FLORES-200.

spBLEU is sacrebleu's BLEU with ``tokenize="flores200"``: both sides are cut into pieces by the FLORES-200
SentencePiece model (``flores200_sacrebleu_tokenizer_spm.model``; reportedly byte-identical to NLLB-200's
``sentencepiece.bpe.model``) before n-gram matching. sacrebleu downloads that model on first use and fails
offline; here it is looked up, in order, at the ``spm_model`` argument, ``$FAIRMT_FLORES200_SPM``, and sacrebleu's
own cache (``$SACREBLEU/models/flores200sacrebleuspm``, default ``~/.sacrebleu``).

A number is called **spBLEU** only when the model file is the official one (size 4,852,054 bytes and the sha256
below). Any other SentencePiece model (a stand-in, say, trained on the fly) still runs, but its score is reported
as ``bleu_spm_nonstandard`` (label ``spBLEU*``), ``spbleu`` is ``None``, the signature's tokenizer field says
``spm-nonstandard:<sha256 prefix>`` instead of ``flores200``, and a note says why — such numbers are not
comparable with published spBLEU. chrF++ (``CHRF(word_order=2)``) needs no model and keeps sacrebleu's signature.

Both sides go through fairmt's text normalisation first (:mod:`fairmt.data.text`: NFC, one kind of space, no
invisible format characters; a no-op on clean text), named by ``|text:...`` at the end of both signatures.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fairmt.data.download import sha256_file
from fairmt.errors import FairmtError

FLORES200_SPM_SIZE = 4_852_054
FLORES200_SPM_SHA256 = "14bb8dfb35c0ffdea7bc01e56cea38b9e3d5efcdcb9c251d6b40538e1aab555a"
FLORES200_SPM_URL = (
    "https://dl.fbaipublicfiles.com/large_objects/nllb/models/spm_200/flores200_sacrebleu_tokenizer_spm.model"
)
"""Where sacrebleu's ``https://tinyurl.com/flores200sacrebleuspm`` points."""
SACREBLEU_SPM_NAME = "flores200sacrebleuspm"
"""The file name sacrebleu looks for under ``$SACREBLEU/models/``."""
SPM_ENV = "FAIRMT_FLORES200_SPM"

_LANG_RE = re.compile(r"^[a-z]{3}_[A-Z][a-z]{3}$")


@dataclass(frozen=True)
class SpmModelInfo:
    """A SentencePiece model file and whether it is the official FLORES-200 spBLEU model."""

    path: str
    size: int
    sha256: str
    official: bool


def find_spm_model(spm_model: str | Path | None = None) -> Path:
    """Locate the FLORES-200 SentencePiece model, or raise a :class:`FairmtError` saying how to get it."""
    candidates: list[tuple[str, Path]] = []
    if spm_model is not None:
        candidates.append(("--spm-model / spm_model", Path(spm_model)))
    elif os.environ.get(SPM_ENV):
        candidates.append((f"${SPM_ENV}", Path(os.environ[SPM_ENV])))
    else:
        from sacrebleu.utils import SACREBLEU_DIR

        candidates.append(("sacrebleu's cache", Path(SACREBLEU_DIR) / "models" / SACREBLEU_SPM_NAME))
    for origin, path in candidates:
        if path.is_file():
            return path
        raise FairmtError(
            f"FLORES-200 SentencePiece model not found at {path} (from {origin}). spBLEU needs it and sacrebleu "
            f"cannot download it offline: fetch {FLORES200_SPM_URL} (4,852,054 bytes, sha256 "
            f"{FLORES200_SPM_SHA256[:16]}...; NLLB-200's sentencepiece.bpe.model is reportedly the same file) and "
            f"pass it with --spm-model FILE, set {SPM_ENV}=FILE, or save it as $SACREBLEU/models/{SACREBLEU_SPM_NAME}"
        )
    raise AssertionError("unreachable")


_INFO_CACHE: dict[tuple[str, int, int], SpmModelInfo] = {}


def spm_model_info(path: str | Path) -> SpmModelInfo:
    """Size and sha256 of a SentencePiece model file, compared with the official FLORES-200 spBLEU model."""
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns)
    if key not in _INFO_CACHE:
        digest = sha256_file(p)
        _INFO_CACHE[key] = SpmModelInfo(
            str(p), st.st_size, digest, st.st_size == FLORES200_SPM_SIZE and digest == FLORES200_SPM_SHA256
        )
    return _INFO_CACHE[key]


@contextlib.contextmanager
def _sacrebleu_dir_with(model: Path):
    """Point sacrebleu's flores200 tokenizer at ``model`` (a temporary ``models/`` folder holding a link to it)."""
    import sacrebleu.tokenizers.tokenizer_spm as tspm

    saved = tspm.SACREBLEU_DIR
    with tempfile.TemporaryDirectory(prefix="fairmt-spm-") as tmp:
        (Path(tmp) / "models").mkdir()
        link = Path(tmp) / "models" / SACREBLEU_SPM_NAME
        try:
            link.symlink_to(model.resolve())
        except OSError:  # no symlinks (some filesystems): copy instead
            from fairmt.outputs import copy_file

            copy_file(model, link, what="a copy of the SentencePiece model")
        tspm.SACREBLEU_DIR = tmp
        try:
            yield
        finally:
            tspm.SACREBLEU_DIR = saved


def make_spbleu(spm_model: str | Path | None = None):
    """A ``sacrebleu.BLEU(tokenize="flores200")`` using a local model file, and that file's :class:`SpmModelInfo`.

    With a non-official model the returned metric's signature says ``tok:spm-nonstandard:<sha256[:12]>``.
    """
    from sacrebleu.metrics import BLEU

    path = find_spm_model(spm_model)
    info = spm_model_info(path)
    with _sacrebleu_dir_with(path):
        try:
            bleu = BLEU(tokenize="flores200")
        except Exception as err:  # a file that is not a SentencePiece model
            raise FairmtError(f"{path}: cannot load as a SentencePiece model ({err})") from None
    if not info.official:
        bleu.tokenizer_signature = f"spm-nonstandard:{info.sha256[:12]}"
    return bleu, info


@dataclass
class TranslationQualityResult:
    """spBLEU and chrF++ of one system on one language pair.

    Exactly one of ``spbleu`` (official FLORES-200 SentencePiece model) and ``bleu_spm_nonstandard`` (any other
    model) is set; ``bleu_label`` is ``"spBLEU"`` or ``"spBLEU*"``.
    """

    lang_pair: str
    n: int
    spbleu: float | None
    bleu_spm_nonstandard: float | None
    chrfpp: float
    bleu_label: str
    bleu_signature: str
    chrf_signature: str
    spm_model: str
    spm_model_sha256: str
    note: str = ""
    items: dict | None = None
    """Per sentence, for a paired bootstrap of chrF++ against another run (:mod:`fairmt.eval.significance`):
    ``chrf_stats``, sacrebleu's chrF++ statistics of each line."""

    @property
    def bleu(self) -> float:
        """The BLEU value whatever its label (check :attr:`bleu_label` before comparing it with papers)."""
        if self.spbleu is not None:
            return self.spbleu
        if self.bleu_spm_nonstandard is None:
            raise FairmtError(f"{self.lang_pair}: neither spbleu nor bleu_spm_nonstandard is set")
        return float(self.bleu_spm_nonstandard)

    def __str__(self) -> str:
        s = (
            f"{self.lang_pair}: {self.bleu_label} {self.bleu:.2f}  chrF++ {self.chrfpp:.2f}\n"
            f"  {self.bleu_signature}\n  {self.chrf_signature}"
        )
        return s + (f"\n  note: {self.note}" if self.note else "")


def translation_quality(
    hypotheses: Sequence[str],
    references: Sequence[str],
    *,
    lang_pair: str = "",
    spm_model: str | Path | None = None,
    compat: str | None = None,
) -> TranslationQualityResult:
    """Corpus spBLEU and chrF++ of ``hypotheses`` against one reference each (sacrebleu).

    The text is read through :func:`fairmt.data.text.normalize_text` first (signature ``text:nfc+spaces+nofmt``);
    ``compat="official"`` (``fairmt eval flores --compat official``) reads it exactly as the ``sacrebleu`` CLI does,
    as it is (signature ``text:raw|compat:official``).

    Raises :class:`FairmtError` when the counts differ or the SentencePiece model cannot be found.
    """
    from fairmt.eval.geneval import RAW_TEXT, check_compat

    check_compat(compat)
    if len(hypotheses) != len(references):
        raise FairmtError(
            f"{len(hypotheses)} hypotheses but {len(references)} references{' for ' + lang_pair if lang_pair else ''}; "
            "give one translation per reference line"
        )
    if not references:
        raise FairmtError("no references to score against")
    from fairmt.data.text import TEXT_NORM, normalize_many

    if compat is None:
        hypotheses, report = normalize_many(hypotheses, f"{lang_pair or 'translation'} hypotheses")
        report.warn()
        references, _ = normalize_many(references)
    else:
        hypotheses, references = list(hypotheses), list(references)
    text = TEXT_NORM if compat is None else f"{RAW_TEXT}|compat:{compat}"
    bleu, info = make_spbleu(spm_model)
    b = bleu.corpus_score(hypotheses, [references])
    from fairmt.eval.degenerate import chrfpp_corpus_and_statistics

    chrfpp, chrf_sig, stats = chrfpp_corpus_and_statistics(hypotheses, references)  # the statistics kept in items
    note = ""
    if not info.official:
        note = (
            f"{info.path} is not the official FLORES-200 SentencePiece model (size {info.size}, sha256 "
            f"{info.sha256[:16]}...; official: {FLORES200_SPM_SIZE} bytes, {FLORES200_SPM_SHA256[:16]}...): the "
            "BLEU score is reported as bleu_spm_nonstandard (spBLEU*) and is not comparable with published spBLEU"
        )
    return TranslationQualityResult(
        lang_pair=lang_pair,
        n=len(references),
        spbleu=b.score if info.official else None,
        bleu_spm_nonstandard=None if info.official else b.score,
        chrfpp=chrfpp,
        bleu_label="spBLEU" if info.official else "spBLEU*",
        bleu_signature=f"{bleu.get_signature()}|text:{text}",
        chrf_signature=f"{chrf_sig}|text:{text}",
        spm_model=info.path,
        spm_model_sha256=info.sha256,
        note=note,
        items=chrf_items(stats),
    )


def chrf_items(stats) -> dict:
    """The ``items`` of a chrF++ result (:attr:`TranslationQualityResult.items`) from sacrebleu's line statistics."""
    from fairmt.eval.significance import stats_text

    return {"chrf_stats": stats_text(stats)}


# ------------------------------------------------------------------------------------------------- FLORES-200


def parse_lang_pair(lang_pair: str) -> tuple[str, str]:
    """Split ``eng_Latn-deu_Latn`` into its two FLORES-200 codes, checking their form."""
    parts = lang_pair.split("-")
    if len(parts) != 2 or not all(_LANG_RE.match(p) for p in parts):
        raise FairmtError(
            f"bad language pair {lang_pair!r}: expected two FLORES-200 codes joined by '-', e.g. eng_Latn-deu_Latn"
        )
    return parts[0], parts[1]


def flores_dir(split: str = "devtest") -> Path:
    """The FLORES-200 folder of ``split`` under the data root (``flores200/{dev,devtest}/``)."""
    from fairmt.data.paths import data_path

    if split not in ("dev", "devtest"):
        raise FairmtError(f"unknown FLORES-200 split {split!r}; valid splits: dev, devtest")
    return data_path("flores200", split)


def flores_languages(split: str = "devtest") -> list[str]:
    """The FLORES-200 language codes present in the data root."""
    return sorted(p.name.rsplit(".", 1)[0] for p in flores_dir(split).glob(f"*.{split}"))


def read_flores(lang: str, split: str = "devtest") -> list[str]:
    """The sentences of FLORES-200 ``split`` in language ``lang`` (e.g. ``deu_Latn``), from the layout that
    ``fairmt data download flores200`` produces: ``flores200/devtest/deu_Latn.devtest``."""
    from fairmt.eval.geneval import read_lines

    folder = flores_dir(split)
    path = folder / f"{lang}.{split}"
    if not path.is_file():
        langs = flores_languages(split)
        shown = ", ".join(langs[:12]) + (f", ... ({len(langs)} in all)" if len(langs) > 12 else "")
        raise FairmtError(f"unknown FLORES-200 language {lang!r}: {path} does not exist; available: {shown or 'none'}")
    return read_lines(path)


def flores_quality(
    hypotheses: Sequence[str],
    lang_pair: str,
    *,
    split: str = "devtest",
    spm_model: str | Path | None = None,
    compat: str | None = None,
) -> TranslationQualityResult:
    """spBLEU/chrF++ of translations of FLORES-200 ``split`` for ``lang_pair`` (references read from the data root)."""
    _, tgt = parse_lang_pair(lang_pair)
    refs = read_flores(tgt, split)
    return translation_quality(hypotheses, refs, lang_pair=lang_pair, spm_model=spm_model, compat=compat)


__all__ = [
    "FLORES200_SPM_SHA256",
    "FLORES200_SPM_SIZE",
    "SpmModelInfo",
    "TranslationQualityResult",
    "find_spm_model",
    "flores_languages",
    "flores_quality",
    "make_spbleu",
    "parse_lang_pair",
    "read_flores",
    "spm_model_info",
    "translation_quality",
]
