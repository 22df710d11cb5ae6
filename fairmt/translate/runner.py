"""The runner: batched translation of a list of sentences by any backend, cached on disk, resumable, sharded.

Evaluators (:mod:`fairmt.eval`) take strings and never load a model; this module makes the strings. A model is
turned into a translator (:func:`as_translator`: a backend of :mod:`fairmt.translate.backends`, ``hf`` by default,
which loads it through :func:`fairmt.models.load_translation_model` and knows the SMaLL-100 / NLLB-200 / M2M-100
language-token conventions) and :func:`generate_translations` translates with it.

With a ``cache_path`` the translations go into a JSONL cache (:mod:`fairmt.translate.cache`), appended and flushed
after every batch; a rerun with the same cache path translates only the sentences not in it (an interrupted run
resumes where it stopped), and a cache made by another model, backend or settings is refused.

Pending sentences are translated longest first (less padding); the order is a pure function of the pending set,
so a resumed run forms the same batches as an uninterrupted one. Under ``torchrun`` / ``accelerate launch``
(:func:`fairmt.distributed.init_from_launch`) each process translates every world-th pending sentence; results are
gathered after every batch and rank 0 alone writes the cache.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairmt.distributed import init_from_launch
from fairmt.errors import FairmtError
from fairmt.models.mt import longest_first
from fairmt.outputs import appending
from fairmt.translate.backends import Translator, get_backend
from fairmt.translate.cache import cache_header, lock_cache, read_cache, source_hash, truncate_torn_tail


class TranslationInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) during :func:`generate_translations`: a ``KeyboardInterrupt`` whose message says how many
    translations are kept in the cache and that the same command resumes (``fairmt``'s CLI prints it, exit 130)."""

    def __init__(self, message: str, *, cached: int, total: int, cache_path: str | None):
        super().__init__(message)
        self.cached, self.total, self.cache_path = cached, total, cache_path

    def __str__(self) -> str:
        return str(self.args[0])


def _interrupted(done: dict, total: int, cache_path, kept_before: int) -> TranslationInterrupted:
    if cache_path is None:
        msg = (
            f"interrupted after {len(done)} of {total} translations; no cache was used, so a rerun starts this "
            "set again (give a cache folder, e.g. --cache-dir, to make a run resumable)"
        )
    else:
        msg = (
            f"interrupted: {len(done)} of {total} translations of this set are cached in {cache_path} "
            f"({len(done) - kept_before} new in this run); run the same command again to resume from there"
        )
    return TranslationInterrupted(
        msg,
        cached=len(done) if cache_path is not None else 0,
        total=total,
        cache_path=str(cache_path) if cache_path is not None else None,
    )


def as_translator(
    model: Any,
    src_lang: str = "en",
    tgt_lang: str = "de",
    *,
    backend: str | None = None,
    family: str | None = None,
    backend_options: dict | None = None,
):
    """``model`` as a :class:`~fairmt.translate.backends.Translator`: a translator is returned as it is (``backend``,
    when given, must name it); anything else (a model path or Hub id, a :class:`TranslationModel`, an API model name)
    is given to :func:`~fairmt.translate.backends.get_backend` ``backend`` (default ``hf``)."""
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


def check_sentences(sentences: Any, what: str = "sentences") -> list[str]:
    """``sentences`` as a list of strings; anything else — ``None``, bytes, a number (a NaN from a data frame), a
    nested list — is refused naming its position and type, before a model loads (a tokenizer would fail later
    with a message about its own internals, or translate ``"nan"``)."""
    import math

    from fairmt.errors import FairmtError

    if sentences is None or isinstance(sentences, (bytes, bytearray)) or not hasattr(sentences, "__iter__"):
        raise FairmtError(f"{what} must be a string or a list of strings, got {type(sentences).__name__}")
    items = list(sentences)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            kind = (
                "NaN (a missing value)"
                if isinstance(item, float) and math.isnan(item)
                else "None (a missing value)"
                if item is None
                else f"bytes (decode them first: {what}[{i}].decode('utf-8'))"
                if isinstance(item, (bytes, bytearray))
                else type(item).__name__
            )
            bad = sum(not isinstance(x, str) for x in items)
            raise FairmtError(
                f"{what}[{i}] is {kind}, not a string"
                + (f" ({bad} of the {len(items)} items are not strings)" if bad > 1 else "")
                + "; give text only"
            )
    return items


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
    sources = check_sentences(sources, "sources")
    tr = as_translator(model, src_lang, tgt_lang, backend=backend, family=family, backend_options=backend_options)
    tr.check_languages(src_lang, tgt_lang)
    dist = init_from_launch()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    done: dict[int, str] = {}
    fh = None
    lock = None
    try:
        if rank == 0:
            try:
                if cache_path is not None:
                    header = cache_header(tr, src_lang, tgt_lang, num_beams, max_new_tokens)
                    path = Path(cache_path)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    lock = lock_cache(path)
                    for i, (h, t) in read_cache(path, header).items():
                        if i < len(sources) and h == source_hash(sources[i]):
                            done[i] = t
                    fresh = not path.is_file() or path.stat().st_size == 0
                    if not fresh:
                        truncate_torn_tail(path)
                    fh = appending(path, what="the translation cache").open()  # a full disk: one line
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
        kept_before = len(done)

        pending = longest_first(sources, (i for i in range(len(sources)) if i not in done))
        mine = pending[rank::world]
        per_rank = -(-len(pending) // world)  # ceil(len / world)
        rounds = -(-per_rank // batch_size)  # ceil(per_rank / batch_size)
        bar = None
        if progress and rank == 0:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=len(sources), initial=len(done), unit="sent", desc=desc or f"translate {src_lang}→{tgt_lang}"
            )
        try:
            for r in range(rounds):
                idx = mine[r * batch_size : (r + 1) * batch_size]
                if dist is None:
                    hyps = _translate_batch(tr, sources, idx, src_lang, tgt_lang, num_beams, max_new_tokens)
                    parts = [(idx, hyps)]
                else:
                    try:
                        mine_part: tuple = (
                            idx,
                            _translate_batch(tr, sources, idx, src_lang, tgt_lang, num_beams, max_new_tokens)
                            if idx
                            else [],
                        )
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
                            fh.write(
                                json.dumps({"i": i, "h": source_hash(sources[i]), "t": t}, ensure_ascii=False) + "\n"
                            )
                if fh is not None:
                    fh.flush()
                if bar is not None:
                    bar.update(sum(len(p[0]) for p in parts))
        except KeyboardInterrupt as err:
            if isinstance(err, TranslationInterrupted):
                raise
            if bar is not None:
                bar.close()
                bar = None
            # every batch finished before the signal is already flushed to the cache (a line torn by the signal is
            # dropped by the next run's truncate_torn_tail); with a cache, its lines are what a rerun reuses
            raise _interrupted(done, len(sources), cache_path, kept_before) from None
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
    hyps = tr.translate(
        [sources[i] for i in idx],
        src_lang,
        tgt_lang,
        num_beams=num_beams,
        max_new_tokens=max_new_tokens,
        batch_size=len(idx),
    )
    if len(hyps) != len(idx):
        raise FairmtError(f"the model returned {len(hyps)} translations for a batch of {len(idx)}")
    return list(hyps)


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


__all__ = ["TranslationInterrupted", "as_translator", "flores_to_model_lang", "generate_translations"]
