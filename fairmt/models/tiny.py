"""Tiny translation models built offline from a config and a sentencepiece model trained on the fly.

Used by ``fairmt demo``, the tests and the benchmarks: no Hub access is needed. Each builder writes a normal
Hugging Face folder (config, weights, tokenizer files) that :func:`fairmt.models.load_translation_model` loads like
a downloaded checkpoint, so the same loading code is exercised.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

from fairmt.outputs import saving, write_file

ARCHES = ("m2m100", "small100", "nllb")


def _train_spm(sentences: Sequence[str], vocab_size: int, model_type: str = "bpe") -> bytes:
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(sentences)),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=1.0,
        hard_vocab_limit=False,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        unk_id=0,
        minloglevel=2,
    )
    return buf.getvalue()


def build_tiny_translation_model(
    out_dir: str | Path,
    pairs: Sequence[tuple[str, str]],
    arch: str = "m2m100",
    src_lang: str = "en",
    tgt_lang: str = "de",
    vocab_size: int = 400,
    d_model: int = 64,
    encoder_layers: int = 2,
    decoder_layers: int = 1,
    ffn_dim: int = 128,
    attention_heads: int = 4,
    dropout: float = 0.1,
    seed: int = 0,
    init_std: float = 0.02,
) -> Path:
    """Build and save a randomly initialised M2M-100-architecture model and its tokenizer.

    Args:
        out_dir: folder to write (``config.json``, weights, tokenizer files).
        pairs: ``(source, target)`` sentences the sentencepiece model is trained on.
        arch: ``"m2m100"`` (language tokens on both sides, forced BOS), ``"small100"`` (target code on the source),
            or ``"nllb"`` (NLLB-200 codes such as ``eng_Latn``; ``src_lang``/``tgt_lang`` may be given as ISO codes).
        vocab_size: sentencepiece vocabulary size (a soft limit for small corpora).
        init_std: standard deviation of the initial weights (``M2M100Config.init_std``; 0.02 is transformers'
            default). At 0.02 the attention projections start so small that a short training run stays on a long
            plateau before the cross-attention finds its alignment (seed-dependent, 250+ steps for a copy task at
            ``d_model=48``); around 0.1 (fairseq's Xavier scale for such widths) it leaves it within ~100 steps.

    A write that fails (a full disk, ``ulimit -f``) is the one writer's line naming ``out_dir``
    (:class:`fairmt.outputs.saving`).
    """
    if arch not in ARCHES:
        raise ValueError(f"arch must be one of {ARCHES}, got {arch!r}")
    out = Path(out_dir)
    with saving(out, what="the tiny model"):  # a full disk, in fairmt's files or save_pretrained's: one line
        return _build_tiny(
            out,
            pairs,
            arch,
            src_lang,
            tgt_lang,
            vocab_size,
            d_model,
            encoder_layers,
            decoder_layers,
            ffn_dim,
            attention_heads,
            dropout,
            seed,
            init_std,
        )


def _build_tiny(
    out: Path,
    pairs,
    arch,
    src_lang,
    tgt_lang,
    vocab_size,
    d_model,
    encoder_layers,
    decoder_layers,
    ffn_dim,
    attention_heads,
    dropout,
    seed,
    init_std,
) -> Path:
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    from fairmt.models.languages import nllb_code

    out.mkdir(parents=True, exist_ok=True)
    sentences = [s for pair in pairs for s in pair]
    spm_bytes = _train_spm(sentences, vocab_size)
    write_file(out / "sentencepiece.bpe.model", spm_bytes, what="the tiny model's SentencePiece model")

    if arch == "nllb":
        from transformers import NllbTokenizer

        from fairmt.models.languages import NLLB_CODES

        src, tgt = nllb_code(src_lang), nllb_code(tgt_lang)
        tok = NllbTokenizer.from_pretrained(
            str(out),
            src_lang=src,
            tgt_lang=tgt,
            extra_special_tokens=list(NLLB_CODES),
        )
        model_vocab = len(tok)
    else:
        import sentencepiece as spm
        from transformers import M2M100Tokenizer

        from fairmt.models.small100 import Small100Tokenizer

        sp = spm.SentencePieceProcessor(model_proto=spm_bytes)
        vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
        for i in range(sp.get_piece_size()):
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
        write_file(out / "vocab.json", json.dumps(vocab, ensure_ascii=False), what="the tiny model's vocabulary")
        cls = Small100Tokenizer if arch == "small100" else M2M100Tokenizer
        probe = cls(str(out / "vocab.json"), str(out / "sentencepiece.bpe.model"))
        lang_tokens = list(probe.lang_token_to_id)
        kwargs = {"tgt_lang": tgt_lang} if arch == "small100" else {"src_lang": src_lang, "tgt_lang": tgt_lang}
        tok = cls(
            str(out / "vocab.json"), str(out / "sentencepiece.bpe.model"), extra_special_tokens=lang_tokens, **kwargs
        )
        model_vocab = tok.vocab_size + len(tok.lang_token_to_id) + tok.num_madeup_words

    torch.manual_seed(seed)
    config = M2M100Config(
        vocab_size=model_vocab,
        d_model=d_model,
        encoder_layers=encoder_layers,
        decoder_layers=decoder_layers,
        encoder_attention_heads=attention_heads,
        decoder_attention_heads=attention_heads,
        encoder_ffn_dim=ffn_dim,
        decoder_ffn_dim=ffn_dim,
        max_position_embeddings=256,
        dropout=dropout,
        attention_dropout=0.0,
        activation_dropout=0.0,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
        init_std=init_std,
        pad_token_id=tok.pad_token_id,
        bos_token_id=0,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.eos_token_id,
    )
    model = M2M100ForConditionalGeneration(config)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def train_tiny_translation_model(
    folder: str | Path,
    pairs: Sequence[tuple[str, str]],
    steps: int = 200,
    batch_size: int = 16,
    lr: float = 3e-3,
    seed: int = 0,
    src_lang: str = "en",
    tgt_lang: str = "de",
    progress: bool = False,
    desc: str = "training",
) -> Path:
    """Train a model built by :func:`build_tiny_translation_model` in place for ``steps`` steps of plain MT loss
    (Adam, a short warm-up) and save it back: a quick *trained* model for tests, benchmarks and ``fairmt demo``,
    whose beam search is peaked like a real model's rather than a random one's. ``progress``: a tqdm bar (``desc``)
    with the steps' ETA."""
    return train_tiny_multilingual_model(
        folder, {tgt_lang: pairs}, steps, batch_size, lr, seed, src_lang, progress, desc
    )


def train_tiny_multilingual_model(
    folder: str | Path,
    pairs_by_lang: dict[str, Sequence[tuple[str, str]]],
    steps: int = 200,
    batch_size: int = 16,
    lr: float = 3e-3,
    seed: int = 0,
    src_lang: str = "en",
    progress: bool = False,
    desc: str = "training",
) -> Path:
    """:func:`train_tiny_translation_model` for several target languages (M2M-100 language tokens): step ``k``
    draws its batch from the pairs of the ``k % len(pairs_by_lang)``-th language, in the dict's order — batches of
    one language pair, taken in turn, as fairseq's multilingual translation task does — so every language gets
    ``steps / len(pairs_by_lang)`` steps. One language is exactly :func:`train_tiny_translation_model`."""
    import random

    import torch
    from tqdm.auto import tqdm

    from fairmt.models import load_translation_model

    folder = Path(folder)
    langs = list(pairs_by_lang)
    if not langs or any(not pairs_by_lang[lang] for lang in langs):
        counts = {k: len(v) for k, v in pairs_by_lang.items()}
        raise ValueError(f"every target language needs training pairs, got {counts}")
    tm = load_translation_model(str(folder), src_lang, langs[0])
    model = tm.model
    model.train()
    torch.manual_seed(seed)
    rng = random.Random(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20))
    data = {lang: _encoded_pairs(tm, lang, pairs_by_lang[lang]) for lang in langs}
    tm.set_languages(tgt_lang=langs[0])
    for k in tqdm(range(steps), desc=desc, unit="step", leave=False, disable=not progress):
        lang = langs[k % len(langs)]
        if len(langs) > 1:
            tm.set_languages(tgt_lang=lang)
        pairs = data[lang]
        enc = padded_batch(tm.tokenizer, rng.sample(pairs, min(batch_size, len(pairs))))
        loss = model(**enc).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    with saving(folder, what="the trained tiny model"):
        model.save_pretrained(folder)
    return folder


def _encoded_pairs(tm, lang: str, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    """Each ``(source, target)`` pair's token ids, unpadded, with ``lang`` as the target language (``tm``'s
    tokenizer, 64 tokens at most): tokenised once, where every training step drew its batch from the same pairs and
    tokenised it again (a quarter of the tiny model's training time, in transformers' Python tokenizer)."""
    tm.set_languages(tgt_lang=lang)
    enc = tm.encode([s for s, _ in pairs], [t for _, t in pairs], max_length=64)
    return list(zip(enc["input_ids"], enc["labels"]))


def padded_batch(tokenizer, items: Sequence[tuple[list[int], list[int]]]) -> dict:
    """A training batch of pre-tokenised pairs (:func:`_encoded_pairs`), padded as the tokenizer pads a batch of
    sentences (``padding=True``: sources and labels each to their longest, on the tokenizer's padding side): tensors
    ``input_ids``, ``attention_mask`` and ``labels``, the labels' padding set to -100 (ignored by the loss)."""
    sources = tokenizer.pad({"input_ids": [s for s, _ in items]}, return_tensors="pt")
    labels = tokenizer.pad({"input_ids": [t for _, t in items]}, return_tensors="pt", return_attention_mask=False)
    ids = labels["input_ids"]
    ids[ids == tokenizer.pad_token_id] = -100
    return {"input_ids": sources["input_ids"], "attention_mask": sources["attention_mask"], "labels": ids}


CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
"""A minimal chat template (Zephyr-like) for the tiny causal LM."""


def build_tiny_causal_lm(
    out_dir: str | Path,
    sentences: Sequence[str],
    vocab_size: int = 300,
    hidden_size: int = 32,
    layers: int = 2,
    seed: int = 0,
) -> Path:
    """Build and save a randomly initialised tiny Llama causal LM with a byte-level BPE tokenizer trained on
    ``sentences`` and a chat template, all offline: a stand-in for an instruction-tuned LLM in tests."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    specials = ["<unk>", "<s>", "</s>", "<pad>", "<|user|>", "<|assistant|>", "<|system|>"]
    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        list(sentences),
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        additional_special_tokens=specials[4:],
    )
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    with saving(out, what="the tiny causal LM"):
        LlamaForCausalLM(config).save_pretrained(out)
        tok.save_pretrained(out)
    return out
