"""The ``openai`` backend: prompted translation by any OpenAI-compatible chat-completions endpoint.

``POST {api_base}/chat/completions`` with one user message per sentence (default prompt: the GACL paper's
"Translate the following sentence into {LANG}. {SENT}"), ``temperature`` 0, ``max_tokens`` = ``max_new_tokens``.
Beam size does not apply. Requests run on a bounded thread pool (``concurrency``, default 4); HTTP 429 and 5xx
answers, timeouts, refused and dropped connections are retried with exponential backoff (honouring
``Retry-After``), up to ``max_retries`` times, then a :class:`FairmtError` names the endpoint and the last failure.
Other HTTP errors (400, 401, 404, ...) fail at once. Answers are cleaned (:func:`~.prompting.clean_translation`)
and kept whatever their language: a wrong-language answer is scored as it is, never retried.

The API key is read from an environment variable only (``OPENAI_API_KEY`` unless ``api_key_env`` names
another): it is sent in the ``Authorization`` header and nowhere else — not in the cache header or fingerprint,
logs, error messages or outputs. An endpoint on this machine (localhost) may be used without a key.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from fairmt.errors import FairmtError
from fairmt.translate.backends.prompting import DEFAULT_PROMPT, check_template, clean_translation, make_prompt

logger = logging.getLogger(__name__)
DEFAULT_API_BASE = "https://api.openai.com/v1"
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.reason, self.retry_after = reason, retry_after


class OpenAITranslator:
    """Translate with an LLM behind an OpenAI-compatible chat endpoint."""

    name = "openai"
    family = None
    OPTIONS = (
        "api_base",
        "api_key_env",
        "prompt_template",
        "concurrency",
        "timeout",
        "max_retries",
        "retry_backoff",
        "temperature",
    )

    def __init__(
        self,
        model: str,
        api_base: str = DEFAULT_API_BASE,
        api_key_env: str = "OPENAI_API_KEY",
        prompt_template: str = DEFAULT_PROMPT,
        concurrency: int = 4,
        timeout: float = 60.0,
        max_retries: int = 6,
        retry_backoff: float = 1.0,
        temperature: float = 0.0,
    ):
        if not isinstance(model, str) or not model.strip():
            raise FairmtError("the openai backend needs the endpoint's model name (--api-model, e.g. gpt-4o-mini)")
        parsed = urllib.parse.urlparse(api_base)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise FairmtError(f"--api-base {api_base!r} is not an http(s) URL (e.g. {DEFAULT_API_BASE})")
        if concurrency < 1 or max_retries < 0 or timeout <= 0 or retry_backoff < 0:
            raise FairmtError("concurrency and timeout must be positive, max_retries and retry_backoff not negative")
        self.model_name = model
        self.api_base = api_base.rstrip("/")
        self.url = self.api_base + "/chat/completions"
        self.prompt_template = check_template(prompt_template)
        self.concurrency, self.timeout = int(concurrency), float(timeout)
        self.max_retries, self.retry_backoff, self.temperature = int(max_retries), float(retry_backoff), temperature
        self._key_env = api_key_env
        if not os.environ.get(api_key_env) and (parsed.hostname or "") not in _LOCAL_HOSTS:
            raise FairmtError(f"the openai backend reads the API key from ${api_key_env}, which is not set")

    def _key(self) -> str | None:
        return os.environ.get(self._key_env) or None

    def _safe(self, text: str) -> str:
        """``text`` with the API key masked (a server may echo request headers in an error)."""
        key = self._key()
        return text.replace(key, "***") if key else text

    def check_languages(self, src_lang: str, tgt_lang: str) -> None:
        make_prompt(self.prompt_template, "", src_lang, tgt_lang)

    def fingerprint(self) -> str:
        h = hashlib.sha256(
            json.dumps([self.api_base, self.model_name, self.prompt_template, self.temperature]).encode()
        )
        return h.hexdigest()[:16]

    def translate(self, sources, src_lang, tgt_lang, num_beams=5, max_new_tokens=200, batch_size=16) -> list[str]:
        prompts = [make_prompt(self.prompt_template, s, src_lang, tgt_lang) for s in sources]
        if not prompts:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            answers = list(pool.map(lambda p: self._complete(p, max_new_tokens), prompts))
        return [clean_translation(a, s) for a, s in zip(answers, sources)]

    def _complete(self, prompt: str, max_tokens: int) -> str:
        body = json.dumps(
            {
                "model": self.model_name,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": self.temperature,
                "max_tokens": max_tokens,
            }
        ).encode("utf-8")
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                return self._post(body)
            except _Retryable as err:
                last = err.reason
                if attempt == self.max_retries:
                    break
                delay = self.retry_backoff * (2**attempt) * (1 + 0.25 * random.random())
                if err.retry_after is not None:
                    delay = max(delay, min(err.retry_after, 60.0))
                delay = min(delay, 60.0)
                logger.warning(
                    "%s: %s; retry %d/%d in %.2fs", self.url, err.reason, attempt + 1, self.max_retries, delay
                )
                time.sleep(delay)
        raise FairmtError(f"{self.url}: no answer after {self.max_retries} retries (last: {self._safe(last)})")

    def _post(self, body: bytes) -> str:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            detail = ""
            try:
                detail = err.read(300).decode("utf-8", "replace").strip()
            except Exception:  # noqa: BLE001 - the body is only a hint
                pass
            if err.code in _RETRY_STATUS:
                retry_after = None
                try:
                    retry_after = float(err.headers.get("Retry-After", ""))
                except (TypeError, ValueError):
                    pass
                raise _Retryable(f"HTTP {err.code}", retry_after) from None
            raise FairmtError(
                f"{self.url}: HTTP {err.code} {err.reason}" + (f": {self._safe(detail)[:300]}" if detail else "")
            ) from None
        except TimeoutError:
            raise _Retryable(f"timed out after {self.timeout:g}s") from None
        except urllib.error.URLError as err:
            if isinstance(err.reason, (TimeoutError, socket.timeout)):
                raise _Retryable(f"timed out after {self.timeout:g}s") from None
            raise _Retryable(f"connection failed ({type(err.reason).__name__})") from None
        except (http.client.HTTPException, ConnectionError, OSError) as err:
            raise _Retryable(f"connection dropped ({type(err).__name__})") from None
        try:
            data = json.loads(raw.decode("utf-8"))
            content = data["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _Retryable("a cut or non-JSON answer") from None
        except (KeyError, IndexError, TypeError):
            raise FairmtError(
                f"{self.url}: the answer has no choices[0].message.content "
                f"({self._safe(raw.decode('utf-8', 'replace'))[:200]})"
            ) from None
        return content if isinstance(content, str) else ""
