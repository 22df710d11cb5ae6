"""Producing translations: the floor between :mod:`fairmt.models` and the evaluators of :mod:`fairmt.eval`.

* :mod:`fairmt.translate.backends` — the engines behind one :class:`~fairmt.translate.backends.Translator`
  interface: ``hf`` (transformers ``generate``), ``ctranslate2``, ``openai`` (an OpenAI-compatible endpoint),
  ``causal-lm`` (a local chat LLM), and the prompting the LLM backends share.
* :mod:`fairmt.translate.cache` — the resumable JSONL cache: its format, the model and backend fingerprints in its
  header, the lock held while a run appends, the handling of a torn last line.
* :mod:`fairmt.translate.runner` — :func:`generate_translations` (batched, longest first, cached, sharded over the
  processes of a ``torchrun`` / ``accelerate launch`` run) and :func:`as_translator`.

Dependencies point one way: runner → backends → cache (→ :mod:`fairmt.models`, :mod:`fairmt.distributed`); nothing
here imports :mod:`fairmt.eval`, whose evaluators see strings only. Scoring a model — translating a benchmark's
sources here and scoring them there — is :mod:`fairmt.model_eval`.
"""

from fairmt.translate.backends import BACKENDS, Translator, get_backend
from fairmt.translate.cache import CACHE_FORMAT, model_fingerprint, read_cache
from fairmt.translate.runner import as_translator, flores_to_model_lang, generate_translations

__all__ = [
    "BACKENDS", "CACHE_FORMAT", "Translator", "as_translator", "flores_to_model_lang", "generate_translations",
    "get_backend", "model_fingerprint", "read_cache",
]  # fmt: skip
