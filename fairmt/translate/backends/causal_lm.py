"""The ``causal-lm`` backend: a local transformers causal LM (an instruction-tuned LLM) prompted through its chat
template.

Each sentence becomes one user message (default prompt: "Translate the following sentence into {LANG}. {SENT}"),
rendered with the tokenizer's chat template and ``add_generation_prompt=True``; batches are left-padded and
decoded with beam search (``num_beams``; 1 = greedy) for at most ``max_new_tokens`` tokens. Only the new tokens are
decoded, and the answer is cleaned like the ``openai`` backend's. A tokenizer without a chat template is refused:
a base LM given a bare instruction rarely answers with a translation.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.translate.backends.prompting import DEFAULT_PROMPT, check_template, clean_translation, make_prompt
from fairmt.translate.cache import model_fingerprint


class CausalLMTranslator:
    name = "causal-lm"
    family = None
    OPTIONS = ("prompt_template", "device", "dtype")

    def __init__(self, model: Any, prompt_template: str = DEFAULT_PROMPT, device: str | None = None, dtype: Any = None):
        self.prompt_template = check_template(prompt_template)
        if isinstance(model, tuple) and len(model) == 2:
            self.model, self.tokenizer = model
            self.model_name = str(getattr(self.model, "name_or_path", "") or type(self.model).__name__)
        elif isinstance(model, (str, Path)):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            try:
                self.tokenizer = AutoTokenizer.from_pretrained(str(model))
                kwargs = {"dtype": dtype} if dtype is not None else {}
                self.model = AutoModelForCausalLM.from_pretrained(str(model), **kwargs)
            except (OSError, ValueError) as err:
                raise FairmtError(f"cannot load a causal LM from {model!r}: {err}".split("\n")[0]) from None
            self.model_name = str(model)
        else:
            raise FairmtError(
                f"the causal-lm backend needs a model folder or Hub id (or (model, tokenizer)), not a "
                f"{type(model).__name__}"
            )
        if not getattr(self.tokenizer, "chat_template", None):
            raise FairmtError(
                f"{self.model_name}: its tokenizer has no chat template; the causal-lm backend prompts "
                "instruction-tuned (chat) models only"
            )
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if device:
            self.model.to(device)
        self.name_or_path = self.model_name

    def check_languages(self, src_lang: str, tgt_lang: str) -> None:
        make_prompt(self.prompt_template, "", src_lang, tgt_lang)

    def fingerprint(self) -> str:
        extra = hashlib.sha256((self.prompt_template + "\0" + str(self.tokenizer.chat_template)).encode()).hexdigest()
        return f"{model_fingerprint(self.model)[:12]}-{extra[:8]}"

    def prompts(self, sources, src_lang: str, tgt_lang: str) -> list[str]:
        return [
            self.tokenizer.apply_chat_template(
                [{"role": "user", "content": make_prompt(self.prompt_template, s, src_lang, tgt_lang)}],
                tokenize=False,
                add_generation_prompt=True,
            )
            for s in sources
        ]

    def translate(self, sources, src_lang, tgt_lang, num_beams=5, max_new_tokens=200, batch_size=16) -> list[str]:
        import torch

        sources = list(sources)
        tok, model = self.tokenizer, self.model
        device = next(model.parameters()).device
        was_training, side = model.training, tok.padding_side
        model.eval()
        tok.padding_side = "left"
        out: list[str] = []
        try:
            texts = self.prompts(sources, src_lang, tgt_lang)
            for start in range(0, len(texts), batch_size):
                # the chat template already holds the special tokens it wants
                enc = tok(
                    texts[start : start + batch_size], return_tensors="pt", padding=True, add_special_tokens=False
                ).to(device)
                with torch.no_grad():
                    ids = model.generate(
                        **enc,
                        num_beams=num_beams,
                        do_sample=False,
                        max_new_tokens=max_new_tokens,
                        pad_token_id=tok.pad_token_id,
                    )
                new = ids[:, enc["input_ids"].shape[1] :]
                out.extend(tok.batch_decode(new, skip_special_tokens=True))
        finally:
            model.train(was_training)
            tok.padding_side = side
        return [clean_translation(a, s) for a, s in zip(out, sources)]
