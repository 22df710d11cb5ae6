"""LLM-assisted content-conditional augmentation with polarity-guided prompt search (CCD paper, Sec. 3.3, Alg. 1).

An LLM h rewrites a text S into one version per sensitive group and a neutral version, h(S, T, P) → [S^{a_1},
..., S^{a_|A|}, S^n], c, where T is a task instruction that ONLY lets it locate the sensitive words and replace them
(by each group's counterparts, or by neutral terms), P are few-shot examples and c is a confidence score. Every
output is checked with the sensitive-polarity test (Eq. 6, :func:`fairmt.data.augment.tuples.polarity`).

Polarity-guided prompt search (Alg. 1): for K rounds, augment a search set with the current examples, find the
wrongly augmented tuples, take the one with the highest confidence, have it corrected (by a person, interactively,
or by the rule-based CDA as an automatic stand-in) and add it to the examples. The union polarity accuracy
(Eq. 7) of each round is recorded.

LLMs:

* :class:`OpenAIChatClient`: any OpenAI-compatible ``/chat/completions`` endpoint (URL and model from the
  config; the API key only from an environment variable, sent as a header and never logged or stored). Timeouts,
  connection errors, HTTP 429/5xx and malformed replies are retried with backoff; then the text is reported as a
  failure and kept, so nothing is lost. The confidence is exp(mean token log-probability) when the endpoint
  returns log-probabilities, else a ``"confidence"`` number the model put in its JSON answer, else unknown.
* :class:`TransformersChatClient`: a local ``transformers`` causal LM (greedy decoding; confidence = exp(mean
  log-probability of the generated tokens)).

The instruction and few-shot examples are fairmt's own (the paper prints its template only as a figure).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fairmt.data.augment.tuples import (
    GENDER_GROUPS,
    NEUTRAL,
    PolarityReport,
    check_tuple,
    gender_word_counts,
    union_polarity_accuracy,
)
from fairmt.errors import FairmtError

logger = logging.getLogger(__name__)

INSTRUCTION = (
    "You edit a passage so that it exists once for every {attribute} group and once in a neutral form. "
    "Find only the words that mark {attribute} (pronouns, nouns and titles for people, gendered names, "
    "adjectives) and replace them: in the version for a group, by that group's counterparts; in the neutral "
    "version, by terms that mark no {attribute}. Leave every other word, the word order and the punctuation "
    "exactly as they are; do not add, drop or explain anything. Reply with a single JSON object with the keys "
    "{keys} and nothing else."
)


@dataclass
class FewShotExample:
    """A passage and its correct versions (``versions`` has ``neutral`` and one key per group)."""

    passage: str
    versions: dict[str, str]

    def to_dict(self) -> dict:
        return asdict(self)


DEFAULT_GENDER_EXAMPLES: tuple[FewShotExample, ...] = (
    FewShotExample(
        "The chairman thanked his wife for her patience during the campaign.",
        {
            NEUTRAL: "The chairperson thanked their spouse for their patience during the campaign.",
            "male": "The chairman thanked his husband for his patience during the campaign.",
            "female": "The chairwoman thanked her wife for her patience during the campaign.",
        },
    ),
    FewShotExample(
        "Two actresses told reporters that she had left the theatre with her brother.",
        {
            NEUTRAL: "Two performers told reporters that they had left the theatre with their sibling.",
            "male": "Two actors told reporters that he had left the theatre with his brother.",
            "female": "Two actresses told reporters that she had left the theatre with her sister.",
        },
    ),
    FewShotExample(
        "Mr Okafor, a grandfather of six, says the boys still visit him every summer.",
        {
            NEUTRAL: "Mx Okafor, a grandparent of six, says the children still visit them every summer.",
            "male": "Mr Okafor, a grandfather of six, says the boys still visit him every summer.",
            "female": "Ms Okafor, a grandmother of six, says the girls still visit her every summer.",
        },
    ),
)


@dataclass
class Completion:
    """One LLM reply: its text and a confidence in [0, 1] (``None`` when the LLM gives none)."""

    text: str
    confidence: float | None = None


class ChatClient(Protocol):
    """Anything that answers a list of chat messages (``{"role", "content"}``) with a :class:`Completion`."""

    def complete(self, messages: list[dict[str, str]]) -> Completion: ...


class LLMError(FairmtError):
    """The LLM endpoint failed for one request after all retries (timeouts, HTTP 429/5xx, malformed bodies)."""


class LLMReplyError(LLMError):
    """The LLM answered, but its reply does not hold the expected JSON versions."""


class LLMConfigError(FairmtError):
    """The endpoint rejected the request (HTTP 4xx other than 429: URL, model or key wrong); retrying is useless."""


# ----------------------------------------------------------------------------------------------- clients


class OpenAIChatClient:
    """An OpenAI-compatible chat endpoint.

    Args:
        url: base URL (``http://host:port/v1``) or the full ``.../chat/completions`` URL.
        model: the model name sent in the request.
        api_key_env: name of the environment variable holding the API key (read at each request; the key is
            never logged, stored on the object or put in error messages). Unset variable → no auth header.
        timeout: seconds per HTTP request (connect and read).
        max_retries: extra attempts after a timeout, connection error, HTTP 429/5xx or a malformed reply.
        backoff: seconds before the first retry, doubled after each.
        temperature / max_tokens: sampling settings (greedy by default).
        logprobs: ask for token log-probabilities (the confidence score).
    """

    def __init__(
        self,
        url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        temperature: float = 0.0,
        max_tokens: int = 512,
        logprobs: bool = True,
    ):
        url = url.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else url + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.logprobs = logprobs

    def __repr__(self) -> str:
        return f"OpenAIChatClient(url={self.url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        """POST the messages; retries transient failures, raises :class:`LLMError` after the last attempt."""
        import requests

        payload = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.logprobs:
            payload["logprobs"] = True
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                resp = requests.post(self.url, json=payload, headers=self._headers(), timeout=self.timeout)
            except requests.Timeout:
                last = f"timed out after {self.timeout:g} s"
                logger.warning("LLM endpoint %s %s (attempt %d)", self.url, last, attempt + 1)
                continue
            except requests.ConnectionError as err:
                last = f"connection failed ({type(err).__name__})"
                logger.warning("LLM endpoint %s: %s (attempt %d)", self.url, last, attempt + 1)
                continue
            if resp.status_code == 429 or resp.status_code >= 500:
                last = f"HTTP {resp.status_code}"
                logger.warning("LLM endpoint %s answered %s (attempt %d)", self.url, last, attempt + 1)
                continue
            if resp.status_code >= 400:  # a client error does not improve by retrying
                raise LLMConfigError(
                    f"LLM endpoint {self.url} answered HTTP {resp.status_code} ({resp.text[:200]!r}): check the URL, "
                    f"the model name {self.model!r} and the key in ${self.api_key_env}"
                )
            try:
                data = resp.json()
                choice = data["choices"][0]
                text = choice["message"]["content"]
                if not isinstance(text, str):
                    raise TypeError("content is not a string")
            except (ValueError, KeyError, IndexError, TypeError) as err:
                last = f"malformed reply ({type(err).__name__}: {str(err)[:80]}; body {resp.text[:120]!r})"
                logger.warning("LLM endpoint %s: %s (attempt %d)", self.url, last, attempt + 1)
                continue
            return Completion(text=text, confidence=_logprob_confidence(choice.get("logprobs")))
        raise LLMError(f"LLM endpoint {self.url} failed {self.max_retries + 1} times; last: {last}")


def _logprob_confidence(logprobs: Any) -> float | None:
    """exp(mean token log-probability) from an OpenAI ``logprobs`` object, or ``None``."""
    try:
        values = [float(t["logprob"]) for t in logprobs["content"]]
    except (TypeError, KeyError, ValueError):
        return None
    if not values:
        return None
    return math.exp(sum(values) / len(values))


class TransformersChatClient:
    """A local causal LM through ``transformers`` (greedy decoding).

    The messages are rendered with the tokenizer's chat template when it has one, otherwise as plain
    ``System:/User:/Assistant:`` turns. Confidence = exp(mean log-probability of the generated tokens).

    Args:
        model / tokenizer: a causal LM and its tokenizer (or a path: ``TransformersChatClient.from_pretrained``).
        max_new_tokens: generation budget per reply.
    """

    def __init__(self, model, tokenizer, max_new_tokens: int = 256):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens

    @classmethod
    def from_pretrained(cls, path: str, max_new_tokens: int = 256, device: str | None = None):
        """Load a local causal LM folder."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from fairmt.hub import loading, require_model

        require_model(path, "local LLM")
        config = Path(path) / "config.json"
        if config.is_file():  # require_model checked that it parses
            archs = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
            if archs and not any(a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in archs):
                raise FairmtError(
                    f"{path}: --local-model must be a causal language model (a chat LLM); its config "
                    f"names {', '.join(archs)}"
                )
        with loading(path, "local LLM (--local-model: a transformers causal language model folder)"):
            model = AutoModelForCausalLM.from_pretrained(path)
            tokenizer = AutoTokenizer.from_pretrained(path)
        if device:
            model.to(device)
        return cls(model, tokenizer, max_new_tokens)

    def render(self, messages: list[dict[str, str]]) -> str:
        """The prompt string for ``messages``."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        turns = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
        return "\n".join(turns) + "\nAssistant:"

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        import torch

        enc = self.tokenizer(self.render(messages), return_tensors="pt").to(self.model.device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with torch.no_grad():
            out = self.model.generate(
                **enc,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=pad,
                return_dict_in_generate=True,
                output_scores=True,
            )
        new = out.sequences[0, enc["input_ids"].shape[1] :]
        scores = self.model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0]
        finite = scores[torch.isfinite(scores)]
        conf = float(torch.exp(finite.mean())) if finite.numel() else None
        return Completion(text=self.tokenizer.decode(new, skip_special_tokens=True), confidence=conf)


# ----------------------------------------------------------------------------------------------- prompting


def build_messages(
    passage: str,
    examples: Sequence[FewShotExample],
    groups: Sequence[str] = GENDER_GROUPS,
    attribute: str = "gender",
    instruction: str = INSTRUCTION,
) -> list[dict[str, str]]:
    """System instruction, then each example as a user/assistant turn, then the passage."""
    keys = [NEUTRAL, *groups]
    msgs = [{"role": "system", "content": instruction.format(attribute=attribute, keys=json.dumps(keys))}]
    for ex in examples:
        missing = [k for k in keys if k not in ex.versions]
        if missing:
            raise FairmtError(
                f"few-shot example {ex.passage[:60]!r} has no {missing} version(s); every example needs {keys}: "
                "give examples written for these groups"
            )
        msgs.append({"role": "user", "content": ex.passage})
        msgs.append({"role": "assistant", "content": json.dumps({k: ex.versions[k] for k in keys}, ensure_ascii=False)})
    msgs.append({"role": "user", "content": passage})
    return msgs


_JSON_OBJ = re.compile(r"\{.*\}", re.S)


def parse_reply(text: str, groups: Sequence[str] = GENDER_GROUPS) -> tuple[dict[str, str], float | None]:
    """The versions (and a self-reported ``confidence``, if any) in an LLM reply; :class:`LLMReplyError` if
    malformed."""
    m = _JSON_OBJ.search(text or "")
    if m is None:
        raise LLMReplyError(f"reply holds no JSON object: {text[:120]!r}")
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError as err:
        raise LLMReplyError(f"reply is not valid JSON ({err.msg}): {text[:120]!r}") from None
    if not isinstance(obj, dict):
        raise LLMReplyError(f"reply JSON is not an object: {text[:120]!r}")
    out = {}
    for k in (NEUTRAL, *groups):
        v = obj.get(k)
        if not isinstance(v, str) or not v.strip():
            raise LLMReplyError(f"reply has no {k!r} text: {text[:120]!r}")
        out[k] = v.strip()
    conf = obj.get("confidence")
    return out, (float(conf) if isinstance(conf, (int, float)) else None)


# ----------------------------------------------------------------------------------------------- augmentation


@dataclass
class Failure:
    """A passage the LLM could not augment after all retries (kept, with the reason)."""

    index: int
    passage: str
    reason: str


@dataclass
class AugmentResult:
    """Tuples (with ``source``, ``confidence`` and ``polarity_ok``), failures and the polarity report."""

    tuples: list[dict]
    failures: list[Failure]
    polarity: PolarityReport | None
    n_input: int

    def summary(self) -> dict:
        """JSON-serialisable counts and accuracies (no texts)."""
        pol = self.polarity
        return {
            "n_input": self.n_input,
            "n_tuples": len(self.tuples),
            "n_failed": len(self.failures),
            "union_polarity_accuracy": pol.union_accuracy if pol else None,
            "per_version_accuracy": pol.per_version_accuracy if pol else None,
            "signature": pol.signature if pol else None,
        }


def augment_texts(
    texts: Sequence[str],
    client: ChatClient,
    examples: Sequence[FewShotExample] = DEFAULT_GENDER_EXAMPLES,
    groups: Sequence[str] = GENDER_GROUPS,
    attribute: str = "gender",
    parse_retries: int = 2,
    counter: Callable[[str], Mapping[str, int]] = gender_word_counts,
    on_tuple: Callable[[dict], None] | None = None,
    on_failure: Callable[[Failure], None] | None = None,
    progress: bool = False,
) -> AugmentResult:
    """Augment every text with the LLM; check each tuple's polarity.

    A reply that cannot be parsed is asked for again (``parse_retries`` times; the endpoint client retries
    transport errors itself); a text that still fails becomes a :class:`Failure` — reported, never dropped
    silently. ``on_tuple``/``on_failure`` are called as results arrive (e.g. to append to files). An endpoint
    that rejects the request itself (:class:`LLMConfigError`) stops the run.
    """
    rows, failures = [], []
    it: Iterable = enumerate(texts)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, total=len(texts), desc="LLM augmentation")
    for i, text in it:
        messages = build_messages(text, examples, groups, attribute)
        reason = None
        for _ in range(parse_retries + 1):
            try:
                comp = client.complete(messages)
                versions, self_conf = parse_reply(comp.text, groups)
            except LLMReplyError as err:  # ask again
                reason = str(err)
                continue
            except LLMError as err:  # the client has already retried the transport
                reason = str(err)
                break
            conf = comp.confidence if comp.confidence is not None else self_conf
            row = {**versions, "source": text, "confidence": conf}
            row["polarity_ok"] = all(check_tuple(row, groups, counter).values())
            rows.append(row)
            if on_tuple:
                on_tuple(row)
            reason = None
            break
        if reason is not None:
            fail = Failure(index=i, passage=text, reason=reason)
            failures.append(fail)
            logger.warning("LLM augmentation of text %d failed: %s", i, reason)
            if on_failure:
                on_failure(fail)
    pol = union_polarity_accuracy(rows, groups, counter) if rows else None
    return AugmentResult(tuples=rows, failures=failures, polarity=pol, n_input=len(texts))


# ----------------------------------------------------------------------------------------------- prompt search


Corrector = Callable[[dict], "dict[str, str] | None"]


def cda_corrector(row: dict) -> dict[str, str] | None:
    """Automatic stand-in for the manual correction: the rule-based CDA versions of the source (gender only)."""
    from fairmt.data.augment.cda import cda_tuple

    t = cda_tuple(row["source"])
    return {k: t[k] for k in (NEUTRAL, *GENDER_GROUPS)}


def interactive_corrector(groups: Sequence[str] = GENDER_GROUPS, ask: Callable[[str], str] = input) -> Corrector:
    """A person corrects the tuple on the terminal (Enter keeps the suggestion shown: the CDA version for gender,
    else the LLM's). An empty answer for every version skips the candidate."""

    def correct(row: dict) -> dict[str, str] | None:
        print(f"\nSource: {row['source']}")
        suggestion = cda_corrector(row) if tuple(groups) == GENDER_GROUPS else {}
        out = {}
        for k in (NEUTRAL, *groups):
            default = suggestion.get(k, row.get(k, ""))
            print(f"  LLM {k}: {row.get(k, '')}")
            ans = ask(f"  correct {k} [{default}]: ").strip()
            out[k] = ans or default
        return out if any(out.values()) else None

    return correct


@dataclass
class SearchRound:
    """One round of the prompt search."""

    round: int
    union_accuracy: float | None
    n_wrong: int
    n_failed: int
    added_example: dict | None = None
    added_confidence: float | None = None


@dataclass
class PromptSearchResult:
    """The examples found by the search, the rounds, and the last augmentation of the search set."""

    examples: list[FewShotExample]
    rounds: list[SearchRound] = field(default_factory=list)
    last: AugmentResult | None = None

    def to_dict(self) -> dict:
        return {
            "examples": [e.to_dict() for e in self.examples],
            "rounds": [asdict(r) for r in self.rounds],
            "last": self.last.summary() if self.last else None,
        }


def polarity_guided_prompt_search(
    texts: Sequence[str],
    client: ChatClient,
    examples: Sequence[FewShotExample] = DEFAULT_GENDER_EXAMPLES,
    rounds: int = 10,
    corrector: Corrector = cda_corrector,
    groups: Sequence[str] = GENDER_GROUPS,
    attribute: str = "gender",
    counter: Callable[[str], Mapping[str, int]] = gender_word_counts,
    parse_retries: int = 2,
) -> PromptSearchResult:
    """Algorithm 1 of the CCD paper on ``texts`` (a search set), K = ``rounds`` (paper: 10).

    Each round augments ``texts`` with the current examples; unless it is the last round, the wrongly augmented
    tuple (polarity check) with the highest confidence (unknown confidence ranks last; ties keep text order) is
    corrected by ``corrector`` and added to the examples. A correction that itself fails the polarity check is
    rejected and the next candidate is tried. Stops early when nothing is wrong.
    """
    if rounds < 1:
        raise FairmtError(f"prompt search needs at least one round, got {rounds}")
    current = list(examples)
    used = {e.passage for e in current}
    result = PromptSearchResult(examples=current)
    for k in range(1, rounds + 1):
        res = augment_texts(texts, client, current, groups, attribute, parse_retries, counter)
        wrong = [r for r in res.tuples if not r["polarity_ok"] and r["source"] not in used]
        rnd = SearchRound(
            round=k,
            union_accuracy=res.polarity.union_accuracy if res.polarity else None,
            n_wrong=sum(not r["polarity_ok"] for r in res.tuples),
            n_failed=len(res.failures),
        )
        result.rounds.append(rnd)
        result.last = res
        if k == rounds or not wrong:
            break
        order = sorted(
            range(len(wrong)),
            key=lambda i: (-(wrong[i]["confidence"] if wrong[i]["confidence"] is not None else -math.inf), i),
        )
        for i in order:
            cand = wrong[i]
            fixed = corrector(cand)
            if not fixed or not all(check_tuple(fixed, groups, counter).values()):
                used.add(cand["source"])
                continue
            ex = FewShotExample(cand["source"], {kk: fixed[kk] for kk in (NEUTRAL, *groups)})
            current.append(ex)
            used.add(cand["source"])
            rnd.added_example = ex.to_dict()
            rnd.added_confidence = cand["confidence"]
            break
    return result
