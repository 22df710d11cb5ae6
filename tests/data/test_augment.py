"""CCD data: tuple files, polarity check, rule-based CDA, LLM augmentation (local HTTP endpoint, tiny local LM),
polarity-guided prompt search."""

import json
import logging
import os
import time
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace

import pytest

from fairmt.data.augment.cda import cda_augment, cda_tuple
from fairmt.data.augment.llm import (
    DEFAULT_GENDER_EXAMPLES,
    Completion,
    LLMConfigError,
    OpenAIChatClient,
    TransformersChatClient,
    augment_texts,
    build_messages,
    parse_reply,
    polarity_guided_prompt_search,
)
from fairmt.data.augment.tuples import (
    MIXED,
    NEUTRAL,
    polarity,
    read_tuples,
    union_polarity_accuracy,
    word_list_counter,
    write_tuples,
)
from fairmt.errors import FairmtError
from http_standins import serving

# ------------------------------------------------------------------------------------------- tuples and polarity


def test_tuple_file_roundtrip_and_missing_group_error(tmp_path):
    rows = [cda_tuple("He thanked his mother."), cda_tuple("She met the king's son.")]
    path = tmp_path / "t.jsonl"
    assert write_tuples(path, rows) == 2
    back = read_tuples(path)
    assert [{k: r[k] for k in ("neutral", "male", "female")} for r in back] == [
        {k: r[k] for k in ("neutral", "male", "female")} for r in rows
    ]
    assert back[0]["meta"] == {"source": "He thanked his mother."}  # extras kept apart from the versions
    assert all(isinstance(v, str) for k, v in json.loads(path.read_text().splitlines()[0]).items() if k != "meta")
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"neutral": "They ran.", "male": "He ran."}) + "\n")
    with pytest.raises(FairmtError, match=r"t\.jsonl:2: the tuple has no 'female' text"):
        read_tuples(path)
    path.write_text("{not json\n")
    with pytest.raises(FairmtError, match=r"t\.jsonl:1: not valid JSON"):
        read_tuples(path)
    with pytest.raises(FairmtError, match="'male' text must be a non-empty string"):
        write_tuples(path, [{"neutral": "x", "male": "", "female": "y"}])
    with pytest.raises(FairmtError, match="not found"):
        read_tuples(tmp_path / "absent.jsonl")


def test_polarity_hand_examples():
    assert polarity("He is a doctor and his son too.") == "male"
    assert polarity("She is a doctor.") == "female"
    assert polarity("They are doctors.") == NEUTRAL
    assert polarity("He met her.") == MIXED  # 1 male word, 1 female word: a tie
    assert polarity("He met her and his father.") == "male"  # 3 vs 1
    rows = [
        {"neutral": "They left.", "male": "He left.", "female": "She left."},  # right
        {"neutral": "He left.", "male": "He left.", "female": "She left."},  # neutral wrong
        {"neutral": "They left.", "male": "She left.", "female": "She left."},  # male wrong
        {"neutral": "Their parent left.", "male": "His father left.", "female": "Her mother left."},  # right
    ]
    rep = union_polarity_accuracy(rows)
    assert rep.union_accuracy == 0.5 and rep.wrong == [1, 2]
    assert rep.per_version_accuracy == {"neutral": 0.75, "male": 0.75, "female": 1.0}
    assert json.loads(json.dumps(rep.to_dict()))["signature"].startswith("fairmt-ccd-polarity")


def test_polarity_for_other_groups_with_word_lists():
    count = word_list_counter(
        {"young": ["teen", "teenager", "youngster"], "old": ["elderly", "pensioner"], "middle": ["middle-aged"]}
    )
    assert polarity("The teenager helped the elderly pensioner.", count) == "old"
    assert polarity("A middle-aged man.", count) == "middle"
    rows = [{"neutral": "A person ran.", "young": "A teen ran.", "old": "A pensioner ran.", "middle": "A middle-aged"}]
    assert union_polarity_accuracy(rows, ("young", "old", "middle"), count).union_accuracy == 1.0


# ------------------------------------------------------------------------------------------- CDA


def test_cda_tuple_and_filtering():
    t = cda_tuple("His father is a policeman.")
    assert t == {
        "neutral": "Their parent is a police officer.",
        "male": "His father is a policeman.",
        "female": "Her mother is a policewoman.",
        "source": "His father is a policeman.",
    }
    rows, stats = cda_augment(["She thanked her brother.", "The market fell.", "She thanked her brother."])
    assert [r["source"] for r in rows] == ["She thanked her brother."]
    assert rows[0]["male"] == "He thanked his brother." and rows[0]["neutral"] == "They thanked their sibling."
    assert (stats.n_input, stats.n_not_gendered, stats.n_duplicates, stats.n_output) == (3, 1, 1, 1)


def test_cda_on_real_news_sentences(shared_data):
    path = shared_data / "parallel" / "newstest2018_en-de.jsonl"
    texts = [json.loads(line)["translation"]["en"] for line in path.open()][:600]
    rows, stats = cda_augment(texts)
    assert stats.n_input == 600 and 60 < stats.n_output < 400
    assert stats.n_output + stats.n_not_gendered + stats.n_failed_polarity + stats.n_duplicates == 600
    assert union_polarity_accuracy(rows).union_accuracy == 1.0  # wrong tuples were dropped
    assert all(r["male"] != r["female"] for r in rows)
    # without dropping, the failures are exactly the tuples the polarity check rejects
    all_rows, _ = cda_augment(texts, drop_wrong_polarity=False)
    rep = union_polarity_accuracy(all_rows)
    assert len(rep.wrong) == stats.n_failed_polarity


# ------------------------------------------------------------------------------------------- fake LLM endpoint


def _fake_llm_answer(messages):
    """A deterministic stand-in LLM: rule-based versions, except that it leaves 'she' in the male version of
    passages about a nurse unless the few-shot examples already show a nurse passage."""
    passage = messages[-1]["content"]
    shots = " ".join(m["content"] for m in messages[1:-1])
    t = cda_tuple(passage)
    out = {k: t[k] for k in ("neutral", "male", "female")}
    if "nurse" in passage and "nurse" not in shots:
        out["male"] = passage  # wrong: still female
    return out


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_POST(self):
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        passage = body["messages"][-1]["content"]
        srv.auth.append(self.headers.get("Authorization"))
        srv.calls[passage] = srv.calls.get(passage, 0) + 1
        behaviour = srv.script.get(passage, "ok")
        n = srv.calls[passage]
        if behaviour == "401":
            return self._send(401, b'{"error": "bad key"}')
        if behaviour == "slow-once" and n == 1 or behaviour == "always-slow":
            time.sleep(0.6)
        if behaviour == "garbage-once" and n == 1 or behaviour == "always-garbage":
            return self._send(200, b"<html>proxy error</html>")
        if behaviour == "500-once" and n == 1:
            return self._send(500, b"oops")
        content = json.dumps(_fake_llm_answer(body["messages"]))
        if behaviour == "chatty":
            content = "Sure! Here you go, I changed the words as asked."
        conf = srv.confidence.get(passage, 0.9)
        import math

        logprobs = {"content": [{"token": "x", "logprob": math.log(conf)}] * 3}
        reply = {"choices": [{"message": {"role": "assistant", "content": content}, "logprobs": logprobs}]}
        self._send(200, json.dumps(reply).encode())

    def _send(self, code, data):
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass


@pytest.fixture()
def llm_server():
    with serving(_Handler) as srv:
        srv.script, srv.calls, srv.auth, srv.confidence = {}, {}, [], {}
        yield srv


def _client(srv, **kw):
    base = dict(model="fake-llm", api_key_env="FAIRMT_TEST_LLM_KEY", timeout=0.3, max_retries=2, backoff=0.01)
    base.update(kw)
    return OpenAIChatClient(f"http://127.0.0.1:{srv.server_address[1]}/v1", **base)


def test_endpoint_happy_path_key_from_env_never_logged(llm_server, monkeypatch, caplog):
    monkeypatch.setenv("FAIRMT_TEST_LLM_KEY", "sk-secret-123")
    llm_server.confidence["She thanked her brother."] = 0.5
    client = _client(llm_server)
    with caplog.at_level(logging.DEBUG):
        res = augment_texts(["She thanked her brother.", "His wife is a teacher."], client)
    assert llm_server.auth == ["Bearer sk-secret-123"] * 2
    assert "sk-secret-123" not in caplog.text and "sk-secret-123" not in repr(client)
    assert "sk-secret-123" not in json.dumps(vars(client))
    assert [r["source"] for r in res.tuples] == ["She thanked her brother.", "His wife is a teacher."]
    assert res.tuples[0]["male"] == "He thanked his brother."
    assert res.tuples[0]["confidence"] == pytest.approx(0.5)
    assert res.polarity.union_accuracy == 1.0 and res.failures == []
    assert res.summary()["n_tuples"] == 2


def test_endpoint_timeout_and_malformed_replies_retried_then_reported(llm_server, caplog):
    texts = [
        "He is slow.",
        "She is garbled.",
        "He is always slow.",
        "She is always garbled.",
        "He chats.",
        "His son had an error.",
    ]
    llm_server.script = {
        texts[0]: "slow-once",
        texts[1]: "garbage-once",
        texts[2]: "always-slow",
        texts[3]: "always-garbage",
        texts[4]: "chatty",
        texts[5]: "500-once",
    }
    client = _client(llm_server)
    written, failed = [], []
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING):
        res = augment_texts(texts, client, parse_retries=1, on_tuple=written.append, on_failure=failed.append)
    assert time.monotonic() - t0 < 20
    ok = {r["source"] for r in res.tuples}
    assert ok == {texts[0], texts[1], texts[5]}  # recovered by retrying
    assert llm_server.calls[texts[0]] == 2 and llm_server.calls[texts[1]] == 2 and llm_server.calls[texts[5]] == 2
    reasons = {f.passage: f.reason for f in res.failures}
    assert set(reasons) == {texts[2], texts[3], texts[4]}  # nothing lost: every input is a tuple or a failure
    assert "timed out" in reasons[texts[2]] and llm_server.calls[texts[2]] == 3
    assert "malformed reply" in reasons[texts[3]]
    assert "no JSON object" in reasons[texts[4]] and llm_server.calls[texts[4]] == 2  # parse retried once
    assert [f.index for f in res.failures] == [2, 3, 4]
    assert len(written) == 3 and len(failed) == 3
    assert "timed out" in caplog.text


def test_endpoint_rejecting_request_stops_with_clear_error(llm_server):
    llm_server.script = {"He left.": "401"}
    with pytest.raises(LLMConfigError, match="HTTP 401.*FAIRMT_TEST_LLM_KEY"):
        augment_texts(["He left."], _client(llm_server))


def test_parse_reply():
    versions, conf = parse_reply(
        'Here: {"neutral": "They ran.", "male": "He ran.", "female": "She ran.", "confidence": 0.7} done'
    )
    assert versions == {"neutral": "They ran.", "male": "He ran.", "female": "She ran."} and conf == 0.7
    with pytest.raises(FairmtError, match="no 'female' text"):
        parse_reply('{"neutral": "They ran.", "male": "He ran."}')


def test_prompt_search_adds_most_confident_wrong_example(llm_server):
    texts = ["She is a nurse at the clinic.", "The nurse said she was tired.", "He thanked his sister."]
    llm_server.confidence = {texts[0]: 0.4, texts[1]: 0.8}
    result = polarity_guided_prompt_search(texts, _client(llm_server), rounds=10)
    r1, r2 = result.rounds
    assert r1.union_accuracy == pytest.approx(1 / 3) and r1.n_wrong == 2
    # the wrong tuple with the highest confidence was corrected (by CDA) and added to the examples
    assert r1.added_example["passage"] == texts[1] and r1.added_confidence == pytest.approx(0.8)
    assert r1.added_example["versions"]["male"] == "The nurse said he was tired."
    assert r2.union_accuracy == 1.0 and r2.added_example is None  # early stop: nothing wrong any more
    assert len(result.examples) == len(DEFAULT_GENDER_EXAMPLES) + 1
    assert json.loads(json.dumps(result.to_dict()))["last"]["union_polarity_accuracy"] == 1.0


def test_prompt_search_runs_k_rounds_when_errors_remain():
    class AlwaysWrong:
        def complete(self, messages):
            p = messages[-1]["content"]
            return Completion(json.dumps({"neutral": p, "male": p, "female": p}), confidence=len(p) / 100)

    texts = ["He ran.", "She sang loudly.", "His aunt cooked.", "Her son slept."]
    result = polarity_guided_prompt_search(texts, AlwaysWrong(), examples=(), rounds=3)
    assert [r.round for r in result.rounds] == [1, 2, 3]
    assert [r.added_example["passage"] for r in result.rounds[:2]] == ["She sang loudly.", "His aunt cooked."]
    assert result.rounds[2].added_example is None and len(result.examples) == 2


def test_default_examples_pass_the_polarity_check():
    from fairmt.data.augment.tuples import check_tuple

    for ex in DEFAULT_GENDER_EXAMPLES:
        assert all(check_tuple(ex.versions).values()), ex


def test_messages_hold_instruction_examples_and_passage():
    msgs = build_messages("He ran.", DEFAULT_GENDER_EXAMPLES[:2])
    assert msgs[0]["role"] == "system" and '["neutral", "male", "female"]' in msgs[0]["content"]
    assert "only the words" in msgs[0]["content"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[1]["content"] == DEFAULT_GENDER_EXAMPLES[0].passage and msgs[-1]["content"] == "He ran."
    assert json.loads(msgs[2]["content"]) == DEFAULT_GENDER_EXAMPLES[0].versions
    with pytest.raises(FairmtError, match=r"no \['other'\] version"):
        build_messages("He ran.", DEFAULT_GENDER_EXAMPLES[:1], groups=("male", "female", "other"))


# ------------------------------------------------------------------------------------------- local causal LM


@pytest.fixture(scope="module")
def tiny_gpt2():
    """A tiny GPT-2 and a byte-level BPE tokenizer trained offline on the prompt it will see."""
    torch = pytest.importorskip("torch")
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    passage = "She thanked her brother."
    answer = json.dumps(
        {
            "neutral": "They thanked their sibling.",
            "male": "He thanked his brother.",
            "female": "She thanked her sister.",
        }
    )
    bpe = ByteLevelBPETokenizer()
    corpus = [m["content"] for m in build_messages(passage, ())] + [answer]
    bpe.train_from_iterator(corpus * 5, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tok),
            n_positions=512,
            n_embd=64,
            n_layer=2,
            n_head=2,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
        )
    )
    return model, tok, passage, answer


def test_local_causal_lm_client(tiny_gpt2):
    import torch

    model, tok, passage, answer = tiny_gpt2
    client = TransformersChatClient(model, tok, max_new_tokens=12)
    comp = client.complete(build_messages(passage, ()))
    assert isinstance(comp.text, str) and 0 < comp.confidence <= 1
    # untrained: no JSON -> retried, then reported as a failure, never dropped
    res = augment_texts([passage], client, examples=(), parse_retries=1)
    assert res.tuples == [] and len(res.failures) == 1 and "JSON" in res.failures[0].reason

    # teach it the answer to this prompt (a few steps), then the same client produces a valid tuple
    prompt = client.render(build_messages(passage, ()))
    ids = tok(prompt + answer + tok.eos_token, return_tensors="pt")["input_ids"]
    n_prompt = len(tok(prompt)["input_ids"])
    labels = ids.clone()
    labels[:, :n_prompt] = -100
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(150):
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if loss.item() < 0.01:
            break
    client = TransformersChatClient(model, tok, max_new_tokens=ids.shape[1] - n_prompt + 2)
    res = augment_texts([passage], client, examples=())
    assert res.failures == [], res.failures
    row = res.tuples[0]
    assert row["male"] == "He thanked his brother." and row["polarity_ok"] and row["confidence"] > 0.9


# ------------------------------------------------------------------------------------------- CLI


def test_cli_augment_cda_and_llm(tmp_path, llm_server, monkeypatch, capsys):
    from fairmt.cli import main

    src = tmp_path / "src.jsonl"
    lines = ["She thanked her brother.", "The market fell.", "The nurse said she was tired.", "His son slept."]
    src.write_text("".join(json.dumps({"translation": {"en": t}}) + "\n" for t in lines))
    out = tmp_path / "cda.jsonl"
    assert main(["augment", "cda", "--input", str(src), "--field", "translation.en", "--output", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_output"] == 3 and summary["union_polarity_accuracy"] == 1.0
    assert len(read_tuples(out)) == 3

    llm_server.script = {"His son slept.": "always-garbage"}
    out = tmp_path / "llm.jsonl"
    import fairmt.data.augment.llm as llm_module

    waits, real_sleep = [], time.sleep
    monkeypatch.setattr(llm_module, "time", SimpleNamespace(sleep=lambda s: waits.append(s) or real_sleep(s)))
    rc = main(
        [
            "augment",
            "llm",
            "--input",
            str(src),
            "--field",
            "translation.en",
            "--output",
            str(out),
            "--url",
            f"http://127.0.0.1:{llm_server.server_address[1]}/v1",
            "--model",
            "fake",
            "--timeout",
            "2",
            "--retries",
            "1",
            "--backoff",
            "0.01",  # the garbage replies are retried without the default's seconds of waiting
            "--search-rounds",
            "3",
            "--search-size",
            "3",
        ]
    )
    assert rc == 0
    assert waits and set(waits) == {0.01}  # --backoff: each garbage reply retried once, after 0.01 s
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_tuples"] == 2 and summary["n_failed"] == 1 and summary["union_polarity_accuracy"] == 1.0
    assert summary["n_written"] == 2 and summary["n_dropped_wrong_polarity"] == 0
    assert summary["prompt_search"]["rounds"][0]["added_example"]["passage"] == "The nurse said she was tired."
    assert [r["meta"]["source"] for r in read_tuples(out)] == [
        "She thanked her brother.",
        "The nurse said she was tired.",
    ]
    failed = [json.loads(x) for x in (tmp_path / "llm.jsonl.failures.jsonl").read_text().splitlines()]
    assert [f["passage"] for f in failed] == ["His son slept."]
    assert main(["augment", "llm", "--input", str(src), "--output", str(out), "--overwrite"]) == 2  # no endpoint
    assert "--url and --model" in capsys.readouterr().err
    # an endpoint that answers nothing usable: every text fails, the command says so and exits non-zero
    llm_server.script = {t: "always-garbage" for t in lines}
    rc = main(
        [
            "augment",
            "llm",
            "--input",
            str(src),
            "--field",
            "translation.en",
            "--output",
            str(out),
            "--url",
            f"http://127.0.0.1:{llm_server.server_address[1]}/v1",
            "--model",
            "fake",
            "--timeout",
            "2",
            "--retries",
            "0",
            "--search-rounds",
            "0",
            "--overwrite",
        ]
    )
    assert rc == 1 and "no tuple was produced from 3 texts" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, neutral",
    [
        ("She was a doctor and he is a nurse.", "They were a doctor and they are a nurse."),
        ("He's late, she isn't.", "They're late, they aren't."),
        ("Was she there? Where was he?", "Were they there? Where were they?"),
        ("SHE WAS HERE", "THEY WERE HERE"),
    ],
)
def test_neutral_version_agrees_with_they(text, neutral):
    from fairmt.data.gender import neutralize

    assert neutralize(text) == neutral


def test_agreement_check_catches_what_the_rewrite_cannot_fix():
    from fairmt.data.augment.cda import agreement_ok, cda_augment

    assert not agreement_ok({"neutral": "This is they.", "source": "This is she."})
    assert agreement_ok({"neutral": "They were here.", "source": "She was here."})
    assert agreement_ok({"neutral": "They is a band.", "source": "They is a band."})  # already in the source
    rows, stats = cda_augment(["This is she.", "She was here."])
    assert [r["source"] for r in rows] == ["She was here."] and stats.n_failed_agreement == 1
    # lexical verbs: next to the pronoun they are rewritten; further away the check catches what is left
    assert not agreement_ok({"neutral": "They cultivates roses.", "source": "She cultivates roses."})
    assert not agreement_ok({"neutral": "They always gives.", "source": "He always gives."})
    assert agreement_ok({"neutral": "They read the news.", "source": "He reads the news."})
    rows, stats = cda_augment(["She cultivates roses.", "He, however, says no."])
    # "they, however, says" is outside what the rewrite and the check see (AGREEMENT_SCOPE): kept, as documented
    assert [r["neutral"] for r in rows] == ["They cultivate roses.", "They, however, says no."]
    assert stats.n_failed_agreement == 0


def test_cda_on_real_news_has_no_they_was(shared_data):
    """newstest2018 en: the neutral versions used to read "they was/is" in 74 of 725 tuples (polarity accuracy 1.0)."""
    import json
    import re

    from fairmt.data.augment.cda import cda_augment

    texts = [
        json.loads(line)["translation"]["en"]
        for line in (shared_data / "parallel" / "newstest2018_en-de.jsonl").read_text(encoding="utf-8").splitlines()
        if line
    ]
    rows, stats = cda_augment(texts)
    bad = re.compile(r"\bthey\s+(?:is|was|has|does)(?:n't)?\b", re.IGNORECASE)
    assert len(rows) > 700 and not [r["neutral"] for r in rows if bad.search(r["neutral"])]
    assert stats.n_output == len(rows)
    # lexical verbs: "they cultivates / gives / says" was in 44 of 728 neutral versions (6 %), counted as agreeing.
    # An independent check with lemminflect's tags: no kept neutral version has "they" + a 3rd-person singular verb
    from lemminflect import getAllInflections, getLemma

    def vbz(word):
        return any(
            word in getAllInflections(lem, upos="VERB").get("VBZ", ()) and lem != word
            for lem in getLemma(word, upos="VERB")
        )

    slips = [
        r["neutral"]
        for r in rows
        if any(vbz(m.group(1).lower()) for m in re.finditer(r"\bthey\s+([A-Za-z]+)", r["neutral"], re.I))
    ]
    assert slips == []
    fixed = [r for r in rows if re.search(r"\b(?:he|she)\s+(?:cultivates|gives|says)\b", r["source"], re.I)]
    assert fixed and all(re.search(r"\bthey\s+(?:cultivate|give|say)\b", r["neutral"], re.I) for r in fixed)
    assert stats.n_failed_agreement < 15


def test_cda_with_nothing_to_rewrite_fails_and_writes_nothing(tmp_path, capsys):
    """Emoji and non-English lines: no tuple, one error line with the counts (exit 2), no empty tuple file (was exit
    0 with an empty file)."""
    from fairmt.cli import main

    src = tmp_path / "in.txt"
    src.write_text("🎉🎉🎉\nDas ist ein Test.\nC'est la vie.\n", encoding="utf-8")
    out = tmp_path / "tuples.jsonl"
    assert main(["augment", "cda", "--input", str(src), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        len(err.strip().splitlines()) == 1
        and "no tuple was produced from 3 texts (3 with no gendered English word" in err
        and not out.exists()
    )
    src.write_text("She cultivates roses.\n", encoding="utf-8")
    assert main(["augment", "cda", "--input", str(src), "--output", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_output"] == 1 and "not checked" in summary["agreement_checked"]


def test_cda_checks_outputs_lexicon_and_input_before_rewriting_anything(tmp_path, capsys, monkeypatch):
    """Issue 44 item 10: `fairmt augment cda` fails in one line BEFORE the rewrite (cda_augment, here a tripwire) on
    an existing output without --overwrite, an output folder it cannot write, a missing verb lexicon (lemminflect) and
    an unreadable input."""
    import sys

    import fairmt.data.augment.cda as cda
    from fairmt.cli import main

    def tripwire(*a, **k):
        raise AssertionError("cda_augment ran before the checks")

    monkeypatch.setattr(cda, "cda_augment", tripwire)
    src, out = tmp_path / "in.txt", tmp_path / "tuples.jsonl"
    src.write_text("She cultivates roses.\n", encoding="utf-8")
    out.write_text("earlier\n", encoding="utf-8")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    bad_input = tmp_path / "latin1.txt"
    bad_input.write_bytes(b"caf\xe9 she said\n")
    cases = [
        (["--input", str(src), "--output", str(out)], "already exists; pass --overwrite"),
        (["--input", str(src), "--output", str(tmp_path / "new.jsonl"), "--json", str(out)], "already exists"),
        (["--input", str(tmp_path / "missing.txt"), "--output", str(tmp_path / "new.jsonl")], "missing.txt"),
        (["--input", str(bad_input), "--output", str(tmp_path / "new.jsonl")], "latin1.txt"),
    ]
    if os.geteuid() != 0:  # root writes anywhere
        cases.append((["--input", str(src), "--output", str(locked / "t.jsonl")], "cannot write the tuple file"))
    for argv, expected in cases:
        assert main(["augment", "cda", *argv]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err, err
    monkeypatch.setitem(sys.modules, "lemminflect", None)  # `import lemminflect` raises ImportError
    assert main(["augment", "cda", "--input", str(src), "--output", str(tmp_path / "new.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "CDA needs lemminflect" in err and "pip install lemminflect" in err
    assert out.read_text() == "earlier\n" and not (tmp_path / "new.jsonl").exists()
