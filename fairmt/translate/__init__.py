"""Producing translations: the floor between :mod:`fairmt.models` and the evaluators of :mod:`fairmt.eval`.

* :mod:`fairmt.translate.backends` — the engines behind one :class:`~fairmt.translate.backends.Translator`
  interface: ``hf`` (transformers ``generate``), ``ctranslate2``, ``openai`` (an OpenAI-compatible endpoint),
  ``causal-lm`` (a local chat LLM), and the prompting the LLM backends share.
* :mod:`fairmt.translate.cache` — the resumable JSONL cache: its format, the model and backend fingerprints in its
  header, the lock held while a run appends, the handling of a torn last line.
* :mod:`fairmt.translate.runner` — :func:`generate_translations` (batched, longest first, cached, sharded over the
  processes of a ``torchrun`` / ``accelerate launch`` run) and :func:`as_translator`.

``fairmt.translate(model, sentences, src_lang, tgt_lang, backend=...)`` — the package itself is callable — is
:func:`translate`: one call from Python, the same translations as :func:`generate_translations`.

Dependencies point one way: runner → backends → cache (→ :mod:`fairmt.models`, :mod:`fairmt.distributed`); nothing
here imports :mod:`fairmt.eval`, whose evaluators see strings only. Scoring a model — translating a benchmark's
sources here and scoring them there — is :mod:`fairmt.model_eval`.
"""

import sys
import types
from collections.abc import Sequence
from typing import Any

from fairmt.translate.backends import BACKENDS, Translator, get_backend
from fairmt.translate.cache import CACHE_FORMAT, model_fingerprint, read_cache
from fairmt.translate.runner import as_translator, check_sentences, flores_to_model_lang, generate_translations


def translate(
    model: Any, sentences: str | Sequence[str], src_lang: str, tgt_lang: str, *, progress: bool = False, **kwargs: Any
) -> str | list[str]:
    """Translate ``sentences`` (a list, or one string: then one string back) from ``src_lang`` into ``tgt_lang``.

    ``model``: a model folder or Hub id, a :class:`~fairmt.models.mt.TranslationModel`, a
    :class:`~fairmt.translate.backends.Translator`, or (``backend="openai"``) the endpoint's model name. The keywords
    are :func:`generate_translations`'s (``backend``, ``backend_options``, ``num_beams``, ``batch_size``,
    ``max_new_tokens``, ``cache_path``, ``family``); ``progress`` shows a bar (default off).

    >>> import fairmt
    >>> fairmt.translate("out/gacl", ["The doctor finished her shift."], "en", "de")  # doctest: +SKIP
    ['Die Ärztin beendete ihre Schicht.']
    """
    if isinstance(sentences, str):
        return generate_translations(model, [sentences], src_lang, tgt_lang, progress=progress, **kwargs)[0]
    return generate_translations(model, check_sentences(sentences), src_lang, tgt_lang, progress=progress, **kwargs)


class _CallableModule(types.ModuleType):
    """``fairmt.translate`` is both this package and :func:`translate`: ``fairmt.translate(model, ...)`` works
    after ``import fairmt`` as after ``import fairmt.translate``."""

    def __call__(self, *args: Any, **kwargs: Any) -> str | list[str]:
        return translate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "BACKENDS", "CACHE_FORMAT", "Translator", "as_translator", "check_sentences", "flores_to_model_lang",
    "generate_translations",
    "get_backend", "model_fingerprint", "read_cache", "translate",
]  # fmt: skip
