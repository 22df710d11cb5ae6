"""DPCE (Kaneko & Bollegala 2021, "Debiasing Pre-trained Contextualised Embeddings"): :class:`DPCEConfig` and
:class:`DPCETrainer`, the CCD paper's first fine-tuning baseline (CCD paper Section 4, "Backbone and Baseline
Methods"; its rows "DPCE" in Tables 2-6).

The encoder is fine-tuned so that the contextual embeddings of stereotype words (nurse, engineer, ...) are
orthogonal to the original model's male and female attribute vectors, while the token states of sentences holding
attribute words stay close to the original ones (:mod:`fairmt.losses.dpce` has the formulas):

    L = α · mean Σ_a (v_i(a)ᵀ E_i(t, x; θ_e))²  +  β · mean ‖E_i(w, x; θ_e) - E_i(w, x; θ_pre)‖²

Defaults are the authors' released script (``context-debias/script/debias.sh``): α = 0.2, β = 0.8, token level, all
layers, learning rate 5e-5, batch 32, 3 epochs, block size 128, seed 42 — the CCD paper says it runs DPCE "using the
originally reported hyperparameters" with seed 42 (Section 4, "Hyperparameters") and names no layer or pooling.

The attribute vectors v_i(a) are fixed from the frozen original encoder before training (the released code
recomputes them from the model being trained at the start of every epoch; they coincide in the first epoch).

Data: attribute rows (a sentence with a male or female word, the word marked) and target rows (a sentence with a
stereotype word, marked), made by :func:`fairmt.data.word_sentences.collect_word_sentences` from a corpus and the
published word lists (:func:`fairmt.data.word_sentences.load_lexicon` ``("dpce")``).

Example (``sentences``: a corpus, ``path``: a masked-LM folder; runs as a test, ``tests/project/test_docstring_examples.py``)::

    >>> from transformers import AutoModelForMaskedLM, AutoTokenizer
    >>> from fairmt.data.word_sentences import collect_word_sentences, load_lexicon, rows_to_dataset
    >>> attrs, stereo = load_lexicon("dpce")
    >>> rows = collect_word_sentences(sentences, attrs, stereo)
    >>> trainer = DPCETrainer(model=AutoModelForMaskedLM.from_pretrained(path), args=DPCEConfig(output_dir="out"),
    ...                       train_dataset=rows_to_dataset(rows), processing_class=AutoTokenizer.from_pretrained(path))
    >>> result = trainer.train()
    >>> result.global_step > 0
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch

from fairmt.errors import COUNT, POSITIVE, WEIGHT, Range
from fairmt.losses.dpce import dpce_loss, select_layers
from fairmt.trainers.word_debias import WordDebiasConfig, WordDebiasTrainer


@dataclass
class DPCEConfig(WordDebiasConfig):
    """Training arguments for DPCE (defaults: the authors' released script; see the module docstring).

    Parameters (besides those of :class:`~fairmt.trainers.word_debias.WordDebiasConfig`):
        alpha: weight α of the orthogonality term (released: 0.2).
        beta: weight β of the regulariser (released: 0.8).
        debias_layer: ``"all"`` (released default), ``"first"`` or ``"last"``; the regulariser always uses all.
        loss_target: ``"token"`` (the stereotype word's embedding; released default) or ``"sentence"`` (every
            token of the sentence).
    """

    RANGES: ClassVar[dict[str, Range]] = {  # each numeric field's range (fairmt.errors.check_ranges)
        "alpha": WEIGHT,
        "beta": WEIGHT,
        "per_device_train_batch_size": COUNT,
        "num_train_epochs": POSITIVE,
    }
    alpha: float = field(default=0.2, metadata={"help": "weight of the orthogonality term (released: 0.2)"})
    beta: float = field(default=0.8, metadata={"help": "weight of the regulariser (released: 0.8)"})
    per_device_train_batch_size: int = field(default=32, metadata={"help": "released: 32"})
    num_train_epochs: float = field(default=3.0, metadata={"help": "released: 3"})


class DPCETrainer(WordDebiasTrainer):
    """``transformers.Trainer`` that debiases an encoder with DPCE (see the module docstring).

    Args:
        model: the encoder (``AutoModel`` or ``*ForMaskedLM``, optionally PEFT-wrapped).
        args: a :class:`DPCEConfig`.
        train_dataset / eval_dataset: word-sentence rows (:func:`fairmt.data.word_sentences.rows_to_dataset`).
        processing_class: a fast tokenizer.
        reference_model: the frozen original θ_pre (default: a frozen deep copy, or the PEFT model with adapters
            disabled).

    Logs ``loss_orth`` and ``loss_reg`` (and ``eval_loss_orth`` / ``eval_loss_reg``).
    """

    method = "dpce"
    term_names = ("orth", "reg")
    config_class = DPCEConfig
    attribute_pooling = "word"

    def loss_terms(self, target_states, target_attention, target_word_mask, attr_states, attr_states_orig):
        if self.args.loss_target == "sentence":  # every token of the stereotype sentence
            target = target_states[target_attention.bool()]
        else:  # the stereotype word (mean of its sub-word tokens)
            target = self._pool_rows(target_states, target_attention, target_word_mask, "word")
        attrs = self.attribute_vectors.to(target_states.device)
        out = dpce_loss(
            select_layers(target, self.args.debias_layer),
            select_layers(attrs, self.args.debias_layer),
            attr_states,
            attr_states_orig,
            alpha=self.args.alpha,
            beta=self.args.beta,
        )
        return out.loss, out.orth, out.reg


def dpce_summary(trainer: DPCETrainer) -> dict:
    """Settings and attribute-vector statistics, for reports."""
    a = trainer.attribute_vectors
    return {
        "alpha": trainer.args.alpha,
        "beta": trainer.args.beta,
        "debias_layer": trainer.args.debias_layer,
        "loss_target": trainer.args.loss_target,
        **getattr(trainer, "attribute_stats", {}),
        "attribute_vector_norm": float(torch.linalg.vector_norm(a[:, -1], dim=-1).mean()) if a is not None else None,
    }
