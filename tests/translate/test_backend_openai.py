"""The openai backend against a fake OpenAI-compatible server on 127.0.0.1: 429s, a timeout, a dropped connection,
a 500, a wrong-language answer; the API key must never reach caches, outputs, logs or errors."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from fairmt import translate
from fairmt.errors import FairmtError
from fairmt.translate import get_backend
from fairmt.translate.backends.prompting import clean_translation
from http_standins import serving

SECRET = "sk-test-DO-NOT-LEAK-4f9a2b"
OPTS = dict(api_key_env="FAIRMT_TEST_KEY", timeout=0.5, retry_backoff=0.01, max_retries=4)


class FakeServer:
    """Scripted chat-completions server. A sentence containing RATE gets three 429s first, SLOW one answer slower
    than the client's timeout, DROP one connection closed without an answer, FIVE one HTTP 500, WRONG an English
    answer, ALWAYS429 nothing but 429s; every other answer is wrapped as an LLM might ("Translation: "...")."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen: dict[str, int] = {}
        self.prompts: list[str] = []
        self.auth: set[str] = set()
        self.in_flight = self.max_in_flight = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][0]["content"]
                with server.lock:
                    server.prompts.append(prompt)
                    server.auth.add(self.headers.get("Authorization", ""))
                    n = server.seen[prompt] = server.seen.get(prompt, 0) + 1
                    # the request the client abandons (timeout) is not counted: the client no longer waits on it
                    counted = not ("SLOW" in prompt and n == 1)
                    server.in_flight += counted
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer(prompt, n, body)
                finally:
                    with server.lock:
                        server.in_flight -= counted

            def _answer(self, prompt, n, body):
                import time

                time.sleep(0.02)  # let requests overlap
                if "ALWAYS429" in prompt or ("RATE" in prompt and n <= 3):
                    return self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"})
                if "FIVE" in prompt and n == 1:
                    return self._send(500, {"error": {"message": "oops"}})
                if "SLOW" in prompt and n == 1:
                    time.sleep(1.0)  # past the client's 0.5 s timeout
                if "DROP" in prompt and n == 1:
                    self.close_connection = True  # no status line: the client sees the connection dropped
                    return
                sent = prompt.split(". ", 1)[1]
                text = sent if "WRONG" in prompt else f'Translation: "{sent} [de]"'
                self._send(
                    200, {"choices": [{"message": {"role": "assistant", "content": text}}], "model": body["model"]}
                )

            def _send(self, code, obj, headers=None):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self.handler = Handler

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        self.httpd = self._stack.enter_context(serving(self.handler))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        return self

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("FAIRMT_TEST_KEY", SECRET)
    with FakeServer() as s:
        yield s


SOURCES = [
    "The doctor is here.",
    "RATE The nurse is here.",
    "SLOW She is a teacher.",
    "DROP He is a baker.",
    "FIVE We are going home.",
    "WRONG The lawyer is late.",
    "The clerk is new.",
]


def test_translates_through_retries_and_keeps_a_wrong_language_answer(server, tmp_path, caplog):
    tr = get_backend("openai", "fake-gpt", api_base=server.url, concurrency=3, **OPTS)
    cache = tmp_path / "cache.jsonl"
    with caplog.at_level(logging.WARNING):
        out = translate.generate_translations(tr, SOURCES, "en", "de", batch_size=4, cache_path=cache, progress=False)
    expected = [f"{s} [de]" for s in SOURCES]
    expected[5] = SOURCES[5]  # the wrong-language answer is kept as it is, not retried
    assert out == expected
    assert server.seen[f"Translate the following sentence into German. {SOURCES[5]}"] == 1
    assert server.seen[f"Translate the following sentence into German. {SOURCES[1]}"] == 4  # 3 × 429, then OK
    for s in SOURCES[2:5]:
        assert server.seen[f"Translate the following sentence into German. {s}"] == 2  # one failure, one retry
    assert server.prompts[0].startswith("Translate the following sentence into German. ")
    assert server.auth == {f"Bearer {SECRET}"}  # the key is sent, and only there:
    assert 1 < server.max_in_flight <= 3  # concurrent, bounded
    retries = " ".join(r.getMessage() for r in caplog.records)
    assert "HTTP 429" in retries and "timed out" in retries and ("dropped" in retries or "connection" in retries)
    assert SECRET not in retries and SECRET not in cache.read_text() and SECRET not in json.dumps(out)
    head = json.loads(cache.read_text().splitlines()[0])
    assert head["backend"] == "openai" and head["model"] == "fake-gpt" and head["family"] == ""
    # resume: a complete cache sends no request
    before = len(server.prompts)
    assert translate.generate_translations(tr, SOURCES, "en", "de", cache_path=cache, progress=False) == out
    assert len(server.prompts) == before
    # another prompt is another fingerprint: the cache is refused, not mixed
    other = get_backend("openai", "fake-gpt", api_base=server.url, prompt_template="{SENT} -> {LANG}", **OPTS)
    with pytest.raises(FairmtError, match="another version of the model|other settings"):
        translate.generate_translations(other, SOURCES, "en", "de", cache_path=cache, progress=False)


def test_gives_up_after_max_retries_with_a_clear_error(server, caplog):
    tr = get_backend("openai", "fake-gpt", api_base=server.url, **OPTS)
    with caplog.at_level(logging.WARNING), pytest.raises(FairmtError) as err:
        tr.translate(["ALWAYS429 The doctor is here."], "en", "fr")
    assert "no answer after 4 retries (last: HTTP 429)" in str(err.value) and server.url in str(err.value)
    assert SECRET not in str(err.value) and all(SECRET not in r.getMessage() for r in caplog.records)
    assert server.seen["Translate the following sentence into French. ALWAYS429 The doctor is here."] == 5


def test_cli_geneval_with_the_openai_backend(server, tmp_path, monkeypatch, capsys):
    """`fairmt eval geneval --backend openai`: translated through the endpoint, scored, the key nowhere."""
    from fairmt.cli import main

    root = tmp_path / "data"
    d = root / "mt_geneval" / "sentences" / "test"
    d.mkdir(parents=True)
    for g, pron, ref in (("masculine", "He", "Er ist Arzt."), ("feminine", "She", "Sie ist Ärztin.")):
        (d / f"geneval-sentences-{g}-test.en_de.en").write_text("".join(f"{pron} is a doctor {i}.\n" for i in range(3)))
        (d / f"geneval-sentences-{g}-test.en_de.de").write_text((ref + "\n") * 3)
    monkeypatch.setenv("FAIRMT_DATA", str(root))
    args = [
        "eval",
        "geneval",
        "--lang",
        "de",
        "--backend",
        "openai",
        "--api-base",
        server.url,
        "--api-model",
        "fake-gpt",
        "--api-key-env",
        "FAIRMT_TEST_KEY",
        "--concurrency",
        "2",
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    assert main([*args, "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n"] == 3
    assert SECRET not in captured.out + captured.err
    for f in (tmp_path / "c").iterdir():
        assert SECRET not in f.read_text()
    assert main([*args, "--compute-type", "int8"]) == 2
    assert "--compute-type is for --backend ctranslate2, not openai" in capsys.readouterr().err


def test_bad_settings_are_one_line_errors(monkeypatch):
    monkeypatch.delenv("FAIRMT_MISSING_KEY", raising=False)
    with pytest.raises(FairmtError, match=r"reads the API key from \$FAIRMT_MISSING_KEY, which is not set"):
        get_backend("openai", "gpt-4o-mini", api_key_env="FAIRMT_MISSING_KEY")
    with pytest.raises(FairmtError, match="not an http"):
        get_backend("openai", "m", api_base="ftp://x")
    with pytest.raises(FairmtError, match="has no \\{SENT\\}"):
        get_backend("openai", "m", api_base="http://127.0.0.1:9/v1", prompt_template="Translate into {LANG}")
    tr = get_backend("openai", "m", api_base="http://127.0.0.1:9/v1")  # a local endpoint needs no key
    with pytest.raises(FairmtError, match="no language name known for 'xx'"):
        tr.check_languages("en", "xx")


@pytest.mark.parametrize(
    "answer, source, expected",
    [
        ('"Der Arzt ist hier."', "The doctor is here.", "Der Arzt ist hier."),
        ("Translation: Der Arzt ist hier.", "The doctor is here.", "Der Arzt ist hier."),
        ("German translation: „Der Arzt ist hier.“", "The doctor is here.", "Der Arzt ist hier."),
        ("Sure! Here is the translation:\n\nDer Arzt ist hier.", "The doctor is here.", "Der Arzt ist hier."),
        (
            'Here is the translation into German:\n"Die Ärztin ist hier."\n\nNote: "Ärztin" is feminine.',
            "x",
            "Die Ärztin ist hier.",
        ),
        ("**Übersetzung:** Die Ärztin ist hier.", "x", "Die Ärztin ist hier."),
        ('"Hallo", sagte er, "tschüss"', '"Hello," he said, "bye"', '"Hallo", sagte er, "tschüss"'),
        ('"Komm her!"', '"Come here!"', '"Komm her!"'),  # the source is quoted: the quotes are the translation's
        ("The doctor is here.", "The doctor is here.", "The doctor is here."),  # wrong language: kept
    ],
)
def test_answers_are_cleaned(answer, source, expected):
    assert clean_translation(answer, source) == expected
