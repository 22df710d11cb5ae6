"""The translation-backend flags every ``fairmt eval`` command that translates with a model shares, and the
translator (:mod:`fairmt.translate.backends`) they ask for."""

from __future__ import annotations

BACKEND_CHOICES = ("hf", "ctranslate2", "openai", "causal-lm")  # fairmt.translate.BACKENDS (not imported by --help)


def add_backend_arguments(group) -> None:
    """``--backend``, ``--compute-type``, ``--api-base``, ``--api-model``, ``--prompt-template``, ``--concurrency``."""
    from fairmt.commands._options import count, http_url

    group.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default="hf",
        help="translation engine: hf (transformers generate, default), ctranslate2 (same model, "
        "faster; pip install 'fairmt[fast]'), openai (an OpenAI-compatible chat endpoint), "
        "causal-lm (a local chat LLM given as --model)",
    )
    group.add_argument(
        "--compute-type",
        choices=["float32", "int8", "float16", "bfloat16"],
        default=None,
        help="ctranslate2: precision (default float32)",
    )
    group.add_argument(
        "--max-batch-tokens",
        type=count(1),
        default=None,
        metavar="N",
        help="ctranslate2: batch by tokens, at most N source tokens per batch (default: batch by "
        "--batch-size sentences)",
    )
    group.add_argument(
        "--api-base",
        type=http_url,
        default=None,
        metavar="URL",
        help="openai: endpoint base URL (default https://api.openai.com/v1); the key is read from "
        "$OPENAI_API_KEY (or --api-key-env)",
    )
    group.add_argument("--api-model", default=None, metavar="NAME", help="openai: the endpoint's model name")
    group.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="openai: environment variable holding the API key (default OPENAI_API_KEY)",
    )
    group.add_argument(
        "--prompt-template",
        default=None,
        metavar="TEXT",
        help="openai/causal-lm: prompt with {LANG} (target language name), {SRC_LANG} and {SENT}; "
        "default: 'Translate the following sentence into {LANG}. {SENT}'",
    )
    group.add_argument(
        "--concurrency", type=count(1), default=None, metavar="N", help="openai: requests in flight at once (default 4)"
    )


_ONLY = {
    "compute_type": ("--compute-type", ("ctranslate2",)),
    "max_batch_tokens": ("--max-batch-tokens", ("ctranslate2",)),
    "api_base": ("--api-base", ("openai",)),
    "api_model": ("--api-model", ("openai",)),
    "api_key_env": ("--api-key-env", ("openai",)),
    "prompt_template": ("--prompt-template", ("openai", "causal-lm")),
    "concurrency": ("--concurrency", ("openai",)),
}


def uses_model(args) -> bool:
    """Whether the command translates itself: a --model, or a --backend other than hf (which then needs its
    model flags; :func:`make_translator` says which are missing)."""
    return bool(getattr(args, "model", None)) or (getattr(args, "backend", "hf") or "hf") != "hf"


def make_translator(args, src_lang: str = "en", tgt_lang: str = "de"):
    """The :class:`~fairmt.translate.backends.Translator` the flags ask for (flags of another backend are an error)."""
    from fairmt.distributed import local_device
    from fairmt.errors import FairmtError
    from fairmt.translate.backends import get_backend

    backend = getattr(args, "backend", "hf") or "hf"
    for attr, (flag, backends) in _ONLY.items():
        if getattr(args, attr, None) is not None and backend not in backends:
            raise FairmtError(f"{flag} is for --backend {' or '.join(backends)}, not {backend}")
    family, device = getattr(args, "family", None), local_device(getattr(args, "device", None))
    if backend in ("openai", "causal-lm") and family:
        raise FairmtError(f"--family is for NMT models, not --backend {backend}")
    if backend == "openai":
        name = args.api_model or args.model
        if not name:
            raise FairmtError("--backend openai needs --api-model NAME (the endpoint's model name)")
        return get_backend(
            "openai",
            name,
            api_base=args.api_base,
            api_key_env=args.api_key_env,
            prompt_template=args.prompt_template,
            concurrency=args.concurrency,
        )
    if not getattr(args, "model", None):
        raise FairmtError(f"--backend {backend} needs --model PATH")
    if backend == "causal-lm":
        return get_backend("causal-lm", args.model, prompt_template=args.prompt_template, device=device)
    if backend == "ctranslate2":
        tokens = getattr(args, "max_batch_tokens", None)
        batching = {"batch_type": "tokens", "max_batch_size": tokens} if tokens else {}
        return get_backend(
            "ctranslate2",
            args.model,
            family=family,
            src_lang=src_lang,
            tgt_lang=tgt_lang,
            compute_type=args.compute_type or "float32",
            device=device,
            **batching,
        )
    return get_backend("hf", args.model, family=family, src_lang=src_lang, tgt_lang=tgt_lang, device=device)
