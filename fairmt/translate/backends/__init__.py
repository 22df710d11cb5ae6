"""Translation backends behind one interface, used by :mod:`fairmt.translate.runner` and every ``fairmt eval`` command.

A backend is a :class:`Translator`: ``translate(sources, src_lang, tgt_lang, num_beams, max_new_tokens,
batch_size) -> list[str]`` plus ``fingerprint()`` (a short string that changes whenever the translations could: it
goes into the translation cache's header together with the backend's name, so caches of different backends or
settings are never mixed).

========================  ===============================================================================
``hf``                    transformers ``generate`` through :class:`fairmt.models.TranslationModel` (default)
``ctranslate2``           the same checkpoint converted to CTranslate2 (``pip install 'fairmt[fast]'``)
``openai``                an OpenAI-compatible chat-completions endpoint (prompted LLM translation)
``causal-lm``             a local transformers causal LM prompted through its chat template
========================  ===============================================================================

:func:`get_backend` builds one by name.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from fairmt.errors import FairmtError

BACKENDS = ("hf", "ctranslate2", "openai", "causal-lm")


@runtime_checkable
class Translator(Protocol):
    """What the runner needs from a translation backend."""

    name: str
    """The backend's name (``hf``, ``ctranslate2``, ``openai``, ``causal-lm``), written into cache headers."""
    family: str | None
    """The NMT family (``m2m100``, ``nllb``, ``small100``) whose language codes it takes; ``None`` for LLMs (ISO
    codes or FLORES-200 codes)."""
    model_name: str
    """What the cache header calls the model (a path, a Hub id, an API model name)."""

    def translate(
        self,
        sources: list[str],
        src_lang: str,
        tgt_lang: str,
        num_beams: int = 5,
        max_new_tokens: int = 200,
        batch_size: int = 16,
    ) -> list[str]:
        """One translation per source, in order."""
        ...

    def fingerprint(self) -> str:
        """A short string that changes whenever this backend's translations could (weights, settings, prompt)."""
        ...

    def check_languages(self, src_lang: str, tgt_lang: str) -> None:
        """Raise a :class:`FairmtError` for a language pair this backend cannot translate."""
        ...


def get_backend(name: str, model: Any, **opts: Any) -> Translator:
    """A :class:`Translator` named ``name`` for ``model``.

    Args:
        name: one of :data:`BACKENDS`.
        model: ``hf``/``ctranslate2``: a model path, Hub id or :class:`fairmt.models.TranslationModel`;
            ``causal-lm``: a causal LM path (or ``(model, tokenizer)``); ``openai``: the endpoint's model name.
        opts: backend options — ``family``, ``src_lang``/``tgt_lang`` (hf, ctranslate2); ``compute_type``,
            ``device``, ``max_batch_size``, ``batch_type``, ``cache_dir``, ``inter_threads``, ``intra_threads``
            (ctranslate2); ``api_base``, ``api_key_env``, ``prompt_template``, ``concurrency``, ``timeout``,
            ``max_retries`` (openai); ``prompt_template``, ``device`` (causal-lm). Options another backend
            takes are refused with a clear error, so a flag is never silently ignored.
    """
    if isinstance(model, Translator) and not isinstance(model, (str, bytes)):
        if model.name != name:
            raise FairmtError(f"a {model.name} translator was given but backend {name!r} was asked for")
        return model
    opts = {k: v for k, v in opts.items() if v is not None}
    if name == "hf":
        from fairmt.translate.backends.hf import HFTranslator as cls
    elif name == "ctranslate2":
        from fairmt.translate.backends.ct2 import CT2Translator as cls
    elif name == "openai":
        from fairmt.translate.backends.openai import OpenAITranslator as cls
    elif name == "causal-lm":
        from fairmt.translate.backends.causal_lm import CausalLMTranslator as cls
    else:
        raise FairmtError(f"unknown translation backend {name!r}; choose one of {', '.join(BACKENDS)}")
    allowed = cls.OPTIONS
    bad = sorted(set(opts) - set(allowed))
    if bad:
        raise FairmtError(
            f"backend {name!r} does not take {', '.join(bad)} (it takes: {', '.join(allowed) or 'no options'})"
        )
    return cls(model, **opts)


__all__ = ["BACKENDS", "Translator", "get_backend"]
