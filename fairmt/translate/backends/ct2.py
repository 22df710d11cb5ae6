"""The ``ctranslate2`` backend: the same SMaLL-100 / NLLB-200 / M2M-100 checkpoint run by CTranslate2.

On first use the transformers checkpoint is converted (``ctranslate2.converters.TransformersConverter``) into
``$FAIRMT_CACHE/ct2/<content hash>`` (default ``~/.cache/fairmt/ct2``). The key is a sha256 over the checkpoint's
*contents* (config, weights, tokenizer files), not its path: a model retrained in place gets a new conversion, and
the same weights under two paths share one. The conversion is stored at the checkpoint's own precision; the
``compute_type`` (``float32``, ``int8``, ``float16``, ``bfloat16``) is applied when it is loaded.

Decoding follows the ``hf`` backend exactly where CTranslate2 allows it: the same tokenisation (the family's
tokenizer, truncated at 256 tokens), the family's language-token convention (M2M-100/NLLB: the target language
token as the target prefix, i.e. transformers' forced BOS; SMaLL-100: the target language token in front of the
source, no prefix), the length penalty, ``no_repeat_ngram_size`` and repetition penalty of the checkpoint's
generation config, and ``max_new_tokens`` counted like transformers (the forced language token and the end token
included). Hypotheses are ranked by the same score (log-probability over the length counting the language token and the
end token). Beam search stops when ``num_beams`` hypotheses have finished (transformers' ``early_stopping=True``);
with transformers' default ``early_stopping=False`` (keep searching while a running beam could still win) the
search uses ``patience=2`` (stop at ``2 × num_beams`` finished hypotheses), which matched it on every sentence
measured; it is still a heuristic, so a rare sentence can differ.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.translate.cache import TOKENIZER_FILES, model_fingerprint

COMPUTE_TYPES = ("float32", "int8", "float16", "bfloat16")
BATCH_TYPES = ("examples", "tokens")
_WEIGHT_SUFFIXES = (".safetensors", ".bin")
_CONFIG_FILES = ("config.json", "generation_config.json")
_HASH_MEMO: dict[tuple, str] = {}


def require_ctranslate2():
    try:
        import ctranslate2
    except ImportError:
        raise FairmtError("the ctranslate2 backend needs the CTranslate2 package: pip install 'fairmt[fast]'") from None
    return ctranslate2


def cache_root() -> Path:
    """``$FAIRMT_CACHE/ct2`` (default ``~/.cache/fairmt/ct2``)."""
    base = os.environ.get("FAIRMT_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "fairmt") / "ct2"


def _checkpoint_files(folder: Path) -> list[Path]:
    files = [folder / n for n in _CONFIG_FILES + TOKENIZER_FILES if (folder / n).is_file()]
    files += sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and p.suffix in _WEIGHT_SUFFIXES
        and not p.name.startswith(("optimizer", "scheduler", "training_args", "rng_state"))
    )
    if not any(p.suffix in _WEIGHT_SUFFIXES for p in files):
        raise FairmtError(f"{folder}: no model weights (*.safetensors / pytorch_model*.bin) to convert for CTranslate2")
    return files


def content_hash(folder: str | Path) -> str:
    """sha256 over the names and contents of a checkpoint's config, weight and tokenizer files (memoised per file
    size and modification time)."""
    folder = Path(folder)
    files = _checkpoint_files(folder)
    key = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if key not in _HASH_MEMO:
        h = hashlib.sha256()
        for p in files:
            h.update(f"{p.name}\0{p.stat().st_size}\0".encode())
            with p.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        _HASH_MEMO[key] = h.hexdigest()
    return _HASH_MEMO[key]


def _local_folder(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.is_dir():
        return path
    if path.exists():
        raise FairmtError(f"{path}: not a checkpoint folder")
    try:  # a Hub id: its files (from the local Hub cache when offline)
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(name_or_path)))
    except Exception as err:  # noqa: BLE001 - any Hub failure is one clear message
        raise FairmtError(
            f"cannot find the checkpoint {name_or_path!r} locally or on the Hub ({type(err).__name__}); "
            "give a local model folder"
        ) from None


def _staged_for_converter(folder: Path, tmp: Path) -> Path:
    """A SMaLL-100 checkpoint as the converter can read it: its files linked into ``tmp``, the tokenizer config
    naming ``M2M100Tokenizer`` (the same vocabulary; transformers knows no SMaLL-100 tokenizer class)."""
    import json

    staged = tmp / "source"
    staged.mkdir()
    for p in folder.iterdir():
        if p.is_file() and p.name != "tokenizer_config.json":
            (staged / p.name).symlink_to(p.resolve())
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["tokenizer_class"] = "M2M100Tokenizer"
    config.pop("auto_map", None)
    from fairmt.outputs import write_file

    write_file(staged / "tokenizer_config.json", json.dumps(config), what="the staged tokenizer config")
    return staged


def convert_checkpoint(folder: str | Path, root: str | Path | None = None, family: str | None = None) -> Path:
    """The CTranslate2 conversion of a transformers checkpoint folder, made on first use under
    ``root/<content hash>`` (atomically: concurrent processes never see half a model)."""
    ct2 = require_ctranslate2()
    folder = Path(folder)
    root = Path(root) if root else cache_root()
    target = root / content_hash(folder)
    if (target / "model.bin").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".converting-", dir=root))
    try:
        out = tmp / "model"
        source = _staged_for_converter(folder, tmp) if family == "small100" else folder
        try:
            ct2.converters.TransformersConverter(str(source)).convert(str(out), force=True)
        except Exception as err:  # noqa: BLE001 - converter errors vary; one clear line
            raise FairmtError(f"CTranslate2 cannot convert {folder}: {type(err).__name__}: {err}") from None
        try:
            os.replace(out, target)
        except OSError:
            if not (target / "model.bin").is_file():  # not a concurrent conversion that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class CT2Translator:
    """Beam search with CTranslate2 on a converted SMaLL-100 / NLLB-200 / M2M-100 checkpoint."""

    name = "ctranslate2"
    OPTIONS = (
        "family",
        "src_lang",
        "tgt_lang",
        "compute_type",
        "device",
        "max_batch_size",
        "batch_type",
        "cache_dir",
        "inter_threads",
        "intra_threads",
    )

    def __init__(
        self,
        model: Any,
        family: str | None = None,
        src_lang: str = "en",
        tgt_lang: str = "de",
        compute_type: str = "float32",
        device: str | None = "cpu",
        max_batch_size: int = 0,
        batch_type: str = "examples",
        cache_dir: str | Path | None = None,
        inter_threads: int = 1,
        intra_threads: int | None = None,
    ):
        ct2 = require_ctranslate2()
        device = device or "cpu"
        if compute_type not in COMPUTE_TYPES:
            raise FairmtError(f"unknown compute type {compute_type!r}; choose one of {', '.join(COMPUTE_TYPES)}")
        if batch_type not in BATCH_TYPES:
            raise FairmtError(f"unknown batch type {batch_type!r}; choose one of {', '.join(BATCH_TYPES)}")
        if max_batch_size < 0:
            raise FairmtError("max_batch_size must be 0 (the runner's batch) or positive")
        from fairmt.models import TranslationModel

        self.compute_type, self.batch_type, self.max_batch_size = compute_type, batch_type, int(max_batch_size)
        if isinstance(model, TranslationModel):
            folder, self.tm = self._save_in_memory(model), model
            gen = getattr(model.model, "generation_config", None)
        elif isinstance(model, (str, Path)):
            from fairmt.models.languages import check_m2m_code, nllb_code
            from fairmt.models.mt import _load_tokenizer, family_evidence

            folder = _local_folder(str(model))
            fam = family or family_evidence(str(folder))[0]
            src, tgt = (
                (nllb_code(src_lang), nllb_code(tgt_lang))
                if fam == "nllb"
                else (check_m2m_code(src_lang, fam), check_m2m_code(tgt_lang, fam))
            )
            self.tm = TranslationModel(None, _load_tokenizer(str(folder), fam, src, tgt), fam, src, tgt, str(model))
            gen = _generation_config(folder)
        else:
            raise FairmtError(
                f"the ctranslate2 backend cannot translate with a {type(model).__name__}: give a model "
                "folder, a Hub id or a fairmt TranslationModel"
            )
        self.family = self.tm.family
        self.model_name = str(self.tm.name_or_path or model)
        self.checkpoint_hash = content_hash(folder)
        self.path = convert_checkpoint(folder, Path(cache_dir) if cache_dir else None, self.family)
        self.decoding = _decoding_options(gen)
        if intra_threads is None:
            import torch

            intra_threads = torch.get_num_threads()
        device, _, index = str(device).partition(":")  # "cuda:1" → device "cuda", index 1
        if index and not index.isdigit():
            raise FairmtError(f"bad device {device}:{index}; e.g. cpu, cuda, cuda:1")
        try:
            self.translator = ct2.Translator(
                str(self.path),
                device=device,
                device_index=int(index or 0),
                compute_type=compute_type,
                inter_threads=inter_threads,
                intra_threads=intra_threads,
            )
        except (ValueError, RuntimeError) as err:
            raise FairmtError(
                f"CTranslate2 cannot load the model on {device} with compute type {compute_type}: {err}"
            ) from None

    @staticmethod
    def _save_in_memory(tm) -> Path:
        """An in-memory model (possibly trained since it was loaded) saved to a temporary folder to be hashed and
        converted; memoised per parameter version."""
        fp = model_fingerprint(tm)
        memo = getattr(tm, "_fairmt_ct2_folder", None)
        if memo and memo[0] == fp and Path(memo[1]).is_dir():
            return Path(memo[1])
        if memo:  # the model was trained since: its older copy goes now, not at exit
            shutil.rmtree(memo[1], ignore_errors=True)
        folder = Path(tempfile.mkdtemp(prefix="fairmt-ct2-src-"))
        # Removed when the model is garbage-collected or at interpreter exit, whichever comes first: a full copy of
        # the weights per in-memory model must not stay in the temporary folder after the run.
        weakref.finalize(tm, shutil.rmtree, str(folder), True)
        from fairmt.outputs import saving

        with saving(folder, what="the model's copy for CTranslate2"):  # a full /tmp: the writer's one line
            tm.model.save_pretrained(folder)
            tm.tokenizer.save_pretrained(folder)
        tm._fairmt_ct2_folder = (fp, str(folder))
        return folder

    def check_languages(self, src_lang: str, tgt_lang: str) -> None:
        self.tm.lang(src_lang)
        self.tm.lang(tgt_lang)

    def fingerprint(self) -> str:
        return f"{self.checkpoint_hash[:16]}-{self.compute_type}"

    def translate(self, sources, src_lang, tgt_lang, num_beams=5, max_new_tokens=200, batch_size=16) -> list[str]:
        tm = self.tm
        tm.set_languages(src_lang=src_lang, tgt_lang=tgt_lang)
        tok = tm.tokenizer
        sources = list(sources)
        if not sources:
            return []
        ids = tm.encode(sources)["input_ids"]
        tokens = [tok.convert_ids_to_tokens(x) for x in ids]
        forced = tm.generate_kwargs().get("forced_bos_token_id")  # None for SMaLL-100 (language on the source)
        lang_token = None if forced is None else tok.convert_ids_to_tokens(forced)
        prefix = None if lang_token is None else [[lang_token]] * len(sources)
        # transformers counts every generated token after the decoder start (the forced language token included)
        # against max_new_tokens, as CTranslate2's max_decoding_length counts the target prefix: the same number
        results = self.translator.translate_batch(
            tokens,
            target_prefix=prefix,
            beam_size=num_beams,
            max_batch_size=self.max_batch_size or batch_size,
            batch_type=self.batch_type,
            max_decoding_length=max_new_tokens,
            min_decoding_length=0,
            return_end_token=False,
            **self.decoding,
        )
        out = []
        for r in results:
            hyp = r.hypotheses[0]
            if lang_token is not None and hyp[:1] == [lang_token]:
                hyp = hyp[1:]
            out.append(tok.decode(tok.convert_tokens_to_ids(hyp), skip_special_tokens=True).strip())
        return out


def _generation_config(folder: Path):
    try:
        from transformers import GenerationConfig

        return GenerationConfig.from_pretrained(str(folder))
    except Exception:  # noqa: BLE001 - no generation_config.json: the model config's defaults
        from transformers import AutoConfig, GenerationConfig

        return GenerationConfig.from_model_config(AutoConfig.from_pretrained(str(folder)))


def _decoding_options(gen) -> dict:
    """The checkpoint's generation settings that CTranslate2 can follow."""
    if gen is None:
        return {}
    lp = getattr(gen, "length_penalty", None)
    opts = {"length_penalty": 1.0 if lp is None else float(lp)}
    if getattr(gen, "early_stopping", False) is not True:
        # transformers' default (early_stopping=False) keeps searching while a running beam could still beat the
        # finished ones; CTranslate2 stops at num_beams finished hypotheses unless given patience. 2 matched
        # transformers on 200/200 newstest sentences of a trained model (1: 198/200), at +1 % time.
        opts["patience"] = 2.0
    if getattr(gen, "no_repeat_ngram_size", None):
        opts["no_repeat_ngram_size"] = int(gen.no_repeat_ngram_size)
    if getattr(gen, "repetition_penalty", None) not in (None, 1.0):
        opts["repetition_penalty"] = float(gen.repetition_penalty)
    return opts
