"""The thin runner between models and evaluators: batched beam-search translation, cached on disk, resumable.

Evaluators (:mod:`fairmt.eval.geneval`, :mod:`fairmt.eval.translation`, WinoMT) take strings and never load a
model; this module loads one (through :func:`fairmt.models.load_translation_model`, which knows the SMaLL-100 /
NLLB-200 / M2M-100 language-token conventions), translates, and hands the strings over. The translating is done
by a backend (:mod:`fairmt.translate.backends`: ``hf`` by default, ``ctranslate2``, ``openai``, ``causal-lm``).

The cache is a JSONL file: a header line with the settings (model, languages, beams, max new tokens), then one
line per translated sentence ``{"i": index, "h": sha1(source)[:16], "t": translation}``, appended and flushed
after every batch. A rerun with the same cache path translates only the sentences not in it (an interrupted
run resumes where it stopped; a torn last line is ignored). Entries are keyed by index *and* source hash, so a
changed source file is retranslated. The header names the backend and holds its fingerprint (for ``hf`` the model's
content, :func:`model_fingerprint`: its parameters and tokenizer files; for ``ctranslate2`` the checkpoint's content
hash and compute type; for ``openai`` the endpoint, model and prompt), so caches of different backends are never
mixed, and replacing a model's weights (or training it further) and rerunning with the
same cache is refused instead of scoring the old model's translations. A run holds a
lock on its cache file while it translates: a second run given the same cache is refused, not interleaved.

Pending sentences are translated longest first (less padding); the order is a pure function of the pending set,
so a resumed run forms the same batches as an uninterrupted one. Under ``torchrun`` / ``accelerate launch`` each
process translates every world-th pending sentence; results are gathered after every batch and rank 0 alone writes
the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

CACHE_FORMAT = 2  # 2: the header holds the model's content fingerprint


def _src_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def _as_translation_model(model: Any, src_lang: str, tgt_lang: str, family: str | None = None):
    from fairmt.translate.backends.hf import as_translation_model

    return as_translation_model(model, src_lang, tgt_lang, family)


def as_translator(
    model: Any,
    src_lang: str = "en",
    tgt_lang: str = "de",
    *,
    backend: str | None = None,
    family: str | None = None,
    backend_options: dict | None = None,
):
    """``model`` as a :class:`~fairmt.translate.backends.Translator`: a translator is returned as it is (``backend``, when
    given, must name it); anything else (a model path or Hub id, a :class:`TranslationModel`, an API model name) is
    given to :func:`~fairmt.translate.backends.get_backend` ``backend`` (default ``hf``)."""
    from fairmt.translate.backends import Translator, get_backend

    if isinstance(model, Translator):
        if backend is not None and backend != model.name:
            raise FairmtError(f"a {model.name} translator was given but backend {backend!r} was asked for")
        if backend_options:
            raise FairmtError("backend options go to the translator when it is made, not with a ready translator")
        return model
    name = backend or "hf"
    opts = dict(backend_options or {})
    if name in ("hf", "ctranslate2"):
        opts.update(family=family, src_lang=src_lang, tgt_lang=tgt_lang)
    elif family is not None:
        raise FairmtError(f"family= is for NMT models; the {name} backend takes no family")
    return get_backend(name, model, **opts)


_TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "vocab.json", "added_tokens.json",
                    "special_tokens_map.json", "sentencepiece.bpe.model", "spm.model")


def model_fingerprint(tm: Any) -> str:
    """A short content fingerprint of the model a translation cache is made with: a hash over every parameter (its
    sum and first values — changed by any training step or by new weights in the folder) and the tokenizer files of
    the model's folder (contents of the JSON ones, size of the others). Memoised per parameter version, so repeated
    calls on an unchanged model cost nothing."""
    import torch

    model = getattr(tm, "model", tm)
    params = list(model.named_parameters())
    versions = tuple((id(q), q._version) for _, q in params)
    memo = getattr(model, "_fairmt_fingerprint", None)
    if memo is not None and memo[0] == versions:
        return memo[1]
    h = hashlib.sha256()
    with torch.no_grad():
        for name, q in params:
            flat = q.detach().reshape(-1)
            h.update(name.encode())
            h.update(torch.stack([flat.double().sum(), flat[:4].double().sum()]).cpu().numpy().tobytes())
    folder = Path(str(getattr(tm, "name_or_path", "") or ""))
    if folder.is_dir():
        for name in _TOKENIZER_FILES:
            f = folder / name
            if f.is_file():
                h.update(f"{name}:{f.stat().st_size};".encode())
                if f.suffix == ".json":
                    h.update(f.read_bytes())
    fingerprint = h.hexdigest()[:16]
    try:
        model._fairmt_fingerprint = (versions, fingerprint)
    except AttributeError:  # pragma: no cover - a model that refuses attributes: no memo
        pass
    return fingerprint


def _header(tr: Any, src_lang: str, tgt_lang: str, num_beams: int, max_new_tokens: int) -> dict:
    return {
        "fairmt_translation_cache": CACHE_FORMAT,
        "backend": tr.name,
        "model": tr.model_name,
        "fingerprint": tr.fingerprint(),
        "family": tr.family or "",
        "src_lang": src_lang,
        "tgt_lang": tgt_lang,
        "num_beams": num_beams,
        "max_new_tokens": max_new_tokens,
    }


def read_cache(cache_path: str | Path, header: dict | None = None) -> dict[int, tuple[str, str]]:
    """Entries of a translation cache as ``{index: (source_hash, translation)}``.

    With ``header`` given, a cache written with other settings is a :class:`FairmtError` (delete it or use another
    path). A torn last line (an interrupted write) is skipped.
    """
    path = Path(cache_path)
    if not path.is_file():
        return {}
    lines = path.read_text(encoding="utf-8").split("\n")
    if not lines or not lines[0].strip():
        return {}
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        raise FairmtError(f"{path}:1: not a fairmt translation cache (bad header); delete it or use another path") from None
    fmt = head.get("fairmt_translation_cache")
    if isinstance(fmt, int) and fmt < CACHE_FORMAT:
        raise FairmtError(f"{path}: translation cache written by an older fairmt (format {fmt}, no model fingerprint); "
                          "delete it or give another cache path")
    if fmt != CACHE_FORMAT:
        raise FairmtError(f"{path}:1: not a fairmt translation cache (format {fmt!r})")
    head.setdefault("backend", "hf")  # caches written before there were backends
    if header is not None:
        if head["backend"] != header.get("backend", head["backend"]):
            raise FairmtError(
                f"{path}: translation cache made with the {head['backend']} backend, not {header['backend']}; delete it "
                "or give another cache path (caches of different backends are never mixed)"
            )
        diff = {k: (head.get(k), v) for k, v in header.items() if head.get(k) != v}
        if "fingerprint" in diff:
            raise FairmtError(
                f"{path}: translation cache made with another version of the model {header.get('model')!r} (its "
                f"weights, config or tokenizer changed: fingerprint {diff['fingerprint'][0]} vs now "
                f"{diff['fingerprint'][1]}); delete the cache or give another cache path"
            )
        if diff:
            shown = ", ".join(f"{k}: cache {a!r} vs now {b!r}" for k, (a, b) in diff.items())
            raise FairmtError(
                f"{path}: translation cache made with other settings ({shown}); delete it or give another cache path"
            )
    entries: dict[int, tuple[str, str]] = {}
    for lineno, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            entries[int(rec["i"])] = (str(rec["h"]), str(rec["t"]))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            if lineno == len(lines) or (lineno == len(lines) - 1 and not lines[-1]):
                continue  # torn last line of an interrupted run
            raise FairmtError(f"{path}:{lineno}: corrupt translation cache line; delete the file to start over") from None
    return entries


def generate_translations(
    model: Any,
    sources: Sequence[str],
    src_lang: str,
    tgt_lang: str,
    *,
    batch_size: int = 16,
    num_beams: int = 5,
    max_new_tokens: int = 200,
    cache_path: str | Path | None = None,
    family: str | None = None,
    progress: bool = True,
    desc: str | None = None,
    backend: str | None = None,
    backend_options: dict | None = None,
) -> list[str]:
    """Translate ``sources`` from ``src_lang`` to ``tgt_lang`` with batched beam search.

    Args:
        model: a Hub name or local path (loaded with :func:`fairmt.models.load_translation_model`), a
            :class:`fairmt.models.TranslationModel`, a :class:`~fairmt.translate.backends.Translator`, or (``openai``)
            the endpoint's model name.
        src_lang, tgt_lang: language codes in any form the model family accepts (``en``/``de``; NLLB also
            ``eng_Latn``/``deu_Latn``).
        cache_path: a JSONL file; translations are appended after each batch and reused by a rerun.
        family: ``small100``, ``nllb`` or ``m2m100`` when it cannot be detected from the checkpoint.
        progress: show a tqdm progress bar (sentences).
        backend: ``hf`` (default), ``ctranslate2``, ``openai`` or ``causal-lm`` (:mod:`fairmt.translate.backends`);
            ``backend_options`` go to :func:`~fairmt.translate.backends.get_backend`.
    Returns:
        One translation per source, in order.

    Under ``torchrun`` / ``accelerate launch`` (``WORLD_SIZE`` > 1) the work is sharded: every process translates
    every world-th pending sentence (longest first), the results are gathered after each batch, and only rank 0
    writes the cache; every process returns the full list.
    """
    if batch_size < 1 or num_beams < 1 or max_new_tokens < 1:
        raise FairmtError("batch_size, num_beams and max_new_tokens must be positive")
    sources = list(sources)
    tr = as_translator(model, src_lang, tgt_lang, backend=backend, family=family, backend_options=backend_options)
    tr.check_languages(src_lang, tgt_lang)
    dist = _distributed()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    done: dict[int, str] = {}
    fh = None
    lock = None
    try:
        if rank == 0:
            try:
                if cache_path is not None:
                    header = _header(tr, src_lang, tgt_lang, num_beams, max_new_tokens)
                    path = Path(cache_path)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    lock = _lock_cache(path)
                    for i, (h, t) in read_cache(path, header).items():
                        if i < len(sources) and h == _src_hash(sources[i]):
                            done[i] = t
                    fresh = not path.is_file() or path.stat().st_size == 0
                    if not fresh:
                        _truncate_torn_tail(path)
                    fh = path.open("a", encoding="utf-8")
                    if fresh:
                        fh.write(json.dumps(header) + "\n")
                        fh.flush()
                state: tuple = ("ok", done)
            except FairmtError as err:
                state = ("error", str(err))
        if dist:
            box = [state if rank == 0 else None]
            dist.broadcast_object_list(box, src=0)
            state = box[0]
        if state[0] == "error":
            raise FairmtError(state[1])
        done = dict(state[1])

        pending = sorted((i for i in range(len(sources)) if i not in done), key=lambda i: (-len(sources[i]), i))
        mine = pending[rank::world]
        rounds = -(-(-(-len(pending) // world)) // batch_size)  # ceil(ceil(len / world) / batch_size)
        bar = None
        if progress and rank == 0:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(sources), initial=len(done), unit="sent",
                       desc=desc or f"translate {src_lang}→{tgt_lang}")
        try:
            for r in range(rounds):
                idx = mine[r * batch_size : (r + 1) * batch_size]
                if dist is None:
                    hyps = _translate_batch(tr, sources, idx, src_lang, tgt_lang, num_beams, max_new_tokens)
                    parts = [(idx, hyps)]
                else:
                    try:
                        mine_part: tuple = (idx, _translate_batch(tr, sources, idx, src_lang, tgt_lang, num_beams,
                                                                  max_new_tokens) if idx else [])
                    except Exception as err:  # noqa: BLE001 - every process must hear of it, or the others hang
                        mine_part = ("error", f"rank {rank}: {type(err).__name__}: {err}")
                    parts = [None] * world
                    dist.all_gather_object(parts, mine_part)
                    failed = [p[1] for p in parts if p[0] == "error"]
                    if failed:
                        raise FairmtError("; ".join(failed))
                for part_idx, part_hyps in parts:
                    for i, t in zip(part_idx, part_hyps):
                        done[i] = t
                        if fh is not None:
                            fh.write(json.dumps({"i": i, "h": _src_hash(sources[i]), "t": t}, ensure_ascii=False) + "\n")
                if fh is not None:
                    fh.flush()
                if bar is not None:
                    bar.update(sum(len(p[0]) for p in parts))
        finally:
            if bar is not None:
                bar.close()
    finally:
        if fh is not None:
            fh.close()
        if lock is not None:
            lock.close()  # releases the lock
    return [done[i] for i in range(len(sources))]


def _translate_batch(tr, sources, idx, src_lang, tgt_lang, num_beams, max_new_tokens) -> list[str]:
    hyps = tr.translate([sources[i] for i in idx], src_lang, tgt_lang, num_beams=num_beams,
                        max_new_tokens=max_new_tokens, batch_size=len(idx))
    if len(hyps) != len(idx):
        raise FairmtError(f"the model returned {len(hyps)} translations for a batch of {len(idx)}")
    return list(hyps)


def world_size() -> int:
    """The number of processes of a ``torchrun`` / ``accelerate launch`` run (``WORLD_SIZE``; 1 otherwise)."""
    import os

    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def is_main_process() -> bool:
    """True on rank 0 of a multi-process run (and in a plain run): the process that prints and writes reports."""
    import os

    return world_size() == 1 or os.environ.get("RANK", "0") == "0"


def _distributed():
    """``torch.distributed`` when this is one process of several (``WORLD_SIZE`` > 1), initialising a gloo process
    group from the launcher's environment if nobody has; ``None`` in a plain run."""
    if world_size() == 1:
        return None
    import os

    import torch.distributed as dist

    if not dist.is_available():
        raise FairmtError("WORLD_SIZE > 1 but this torch has no torch.distributed; run one process")
    if not dist.is_initialized():
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "RANK") if v not in os.environ]
        if missing:
            raise FairmtError(f"WORLD_SIZE={os.environ['WORLD_SIZE']} but {', '.join(missing)} unset: launch with "
                              "torchrun or accelerate launch, or unset WORLD_SIZE")
        dist.init_process_group("gloo")
    return dist


def _lock_cache(path: Path):
    """An exclusive lock on the cache file itself for the duration of a run (released when the returned handle
    closes or the process dies); another run given the same cache is refused."""
    import fcntl

    handle = path.open("a", encoding="utf-8")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise FairmtError(
            f"{path} is in use by another fairmt run; wait for it to finish or give another cache path (two runs "
            "appending to one cache would interleave their translations)"
        ) from None
    return handle


def _truncate_torn_tail(path: Path) -> None:
    """Cut a last line without its newline (left by a killed process) so appends start on a fresh line."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with path.open("r+b") as f:
            f.truncate(cut)


# --------------------------------------------------------------------------------- benchmark-level helpers


def _pop_translator(model: Any, src_lang: str, tgt_lang: str, kwargs: dict):
    """A translator for ``model`` from the backend arguments in ``kwargs`` (removed from it)."""
    return as_translator(model, src_lang, tgt_lang, backend=kwargs.pop("backend", None),
                         family=kwargs.pop("family", None), backend_options=kwargs.pop("backend_options", None))


def flores_to_model_lang(tm: Any, code: str) -> str:
    """A FLORES-200 code (``deu_Latn``) in the convention of ``tm``'s family (``de`` for M2M-100/SMaLL-100 and for
    LLM backends, which take ISO codes)."""
    if getattr(tm, "family", None) == "nllb":
        return code
    from fairmt.models.languages import ISO_TO_NLLB

    inverse = {v: k for k, v in ISO_TO_NLLB.items()}
    if code in inverse:
        return inverse[code]
    raise FairmtError(
        f"no M2M-100/SMaLL-100 code known for FLORES-200 language {code!r}; known: {', '.join(sorted(inverse))}"
    )


def translate_geneval(
    model: Any,
    lang: str,
    split: str = "test",
    *,
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    **kwargs,
) -> tuple[list[str], list[str]]:
    """Translate the English masculine and feminine sources of the MT-GenEval counterfactual set.

    ``limit`` keeps only the first ``limit`` pairs (e.g. a quick dev subset for early stopping).
    """
    from fairmt.eval.geneval import load_counterfactual

    data = load_counterfactual(lang, split)
    tm = _pop_translator(model, "en", lang, kwargs)
    tag = f"{split}[:{limit}]" if limit else split
    out = []
    for gender, src in (("masculine", data.masculine_sources), ("feminine", data.feminine_sources)):
        cache = Path(cache_dir) / f"geneval-{tag}-{gender}.en-{lang}.jsonl" if cache_dir else None
        out.append(
            generate_translations(tm, src[:limit] if limit else src, "en", lang, cache_path=cache,
                                  desc=f"MT-GenEval {gender} en→{lang}", **kwargs)
        )
    return out[0], out[1]


def evaluate_geneval(
    model: Any,
    lang: str,
    split: str = "test",
    *,
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    **kwargs,
):
    """Translate and score the MT-GenEval counterfactual set: a :class:`~fairmt.eval.geneval.GenEvalResult`.

    With ``limit`` only the first ``limit`` pairs are used and the result's split (and signature) reads
    ``dev[:limit]``, so a subset score is never mistaken for a full-set one.
    """
    from fairmt.eval.geneval import geneval_accuracy, load_counterfactual, score_counterfactual

    masc, fem = translate_geneval(model, lang, split, cache_dir=cache_dir, limit=limit, **kwargs)
    if not limit:
        return geneval_accuracy(masc, fem, lang, split)
    data = load_counterfactual(lang, split)
    return score_counterfactual(
        masc, fem, data.masculine_refs[:limit], data.feminine_refs[:limit], lang=lang, split=f"{split}[:{limit}]"
    )


def evaluate_flores(
    model: Any,
    lang_pair: str,
    *,
    split: str = "devtest",
    spm_model: str | Path | None = None,
    cache_dir: str | Path | None = None,
    **kwargs,
):
    """Translate FLORES-200 ``split`` for ``lang_pair`` (``eng_Latn-deu_Latn``) and score spBLEU/chrF++."""
    from fairmt.eval.translation import find_spm_model, parse_lang_pair, read_flores, translation_quality

    find_spm_model(spm_model)  # fail before translating, not after
    src_code, tgt_code = parse_lang_pair(lang_pair)
    sources, refs = read_flores(src_code, split), read_flores(tgt_code, split)
    tm = _pop_translator(model, "en", "de", kwargs)
    src, tgt = flores_to_model_lang(tm, src_code), flores_to_model_lang(tm, tgt_code)
    cache = Path(cache_dir) / f"flores200-{split}.{lang_pair}.jsonl" if cache_dir else None
    hyps = generate_translations(tm, sources, src, tgt, cache_path=cache, desc=f"FLORES-200 {lang_pair}", **kwargs)
    return translation_quality(hyps, refs, lang_pair=lang_pair, spm_model=spm_model)


__all__ = [
    "as_translator",
    "is_main_process",
    "evaluate_flores",
    "evaluate_geneval",
    "flores_to_model_lang",
    "generate_translations",
    "read_cache",
    "translate_geneval",
]
