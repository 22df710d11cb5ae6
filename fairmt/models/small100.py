"""SMaLL-100's tokenizer (Mohammadshahi et al., EMNLP 2022), which is not part of transformers.

SMaLL-100 is the M2M-100 architecture with a different input format: the **target** language code is put in
front of the *source* sentence, the target side has no language token, and generation needs no forced BOS::

    source: [__tgt__] x_1 … x_n </s>
    labels:           y_1 … y_m </s>

This mirrors the official ``tokenization_small100.py`` (its ``set_src_lang_special_tokens(self.tgt_lang)`` in
input mode and empty target prefix) on top of :class:`transformers.M2M100Tokenizer`, so SMaLL-100 checkpoints load
without ``trust_remote_code``.
"""

from __future__ import annotations

from transformers import M2M100Tokenizer


class Small100Tokenizer(M2M100Tokenizer):
    """M2M-100 tokenizer with SMaLL-100's special-token layout (target code on the source, none on the target)."""

    def __init__(self, vocab_file, spm_file, tgt_lang=None, **kwargs):
        kwargs.pop("src_lang", None)  # SMaLL-100 has no source-language token
        self._ready = False
        super().__init__(vocab_file, spm_file, src_lang=None, tgt_lang=tgt_lang, **kwargs)
        self._ready = True
        self.tgt_lang = tgt_lang

    @property
    def tgt_lang(self):
        return getattr(self, "_tgt_lang", None)

    @tgt_lang.setter
    def tgt_lang(self, lang):
        self._tgt_lang = lang
        if lang is not None and self.__dict__.get("_ready"):
            self.set_src_lang_special_tokens(lang)

    def _switch_to_input_mode(self):
        if self.tgt_lang is not None:
            self.set_src_lang_special_tokens(self.tgt_lang)

    def _switch_to_target_mode(self):
        self.prefix_tokens = []
        self.suffix_tokens = [self.eos_token_id]

    def set_tgt_lang_special_tokens(self, tgt_lang: str) -> None:
        self._switch_to_target_mode()
