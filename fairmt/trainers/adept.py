"""ADEPT-F (Yang, Yu, Fung, Li & Ji 2023, "ADEPT: A DEbiasing PrompT Framework", AAAI 2023, the fine-tuning
variant): :class:`ADEPTConfig` and :class:`ADEPTTrainer`, the CCD paper's second fine-tuning baseline (CCD paper
Section 4, "Backbone and Baseline Methods"; its rows "ADEPT-F" in Tables 2-6).

The whole encoder is fine-tuned (ADEPT proper trains a prompt only) so that every group's attribute prototype has
the same Gaussian neighbourhood distribution over the neutral words (JS divergence), while the token states of the
attribute sentences keep their distribution under the original model (KL) — formulas and the assumptions made
where the sources are not explicit are in :mod:`fairmt.losses.adept`.

Defaults are the authors' released script (``ADEPT/script/debias.sh``, algorithm ``ADEPT-finetuning``): α = 0.3,
β = 0.7, ρ ("perplexity") = 15, token level, all layers, learning rate 5e-5, batch 8 × 4 gradient-accumulation steps,
10 epochs, block size 128, seed 42 (the CCD paper runs ADEPT-F "using the originally reported hyperparameters" with
seed 42, Section 4). ρ = 15 was set for BERT-large (25 layers × 1024 dimensions concatenated); ``rho=None`` estimates
it as the median prototype-to-neutral distance under the original model instead (see ``rho_max_sentences``).

Prototypes are fixed from the frozen original encoder before training (the released code recomputes them from the
model being trained at every epoch start; they coincide in the first epoch).

Example (``sentences``: a corpus; ``model``/``tokenizer``: a masked LM and its tokenizer; runs as a test,
``tests/project/test_docstring_examples.py``)::

    >>> from fairmt.data.word_sentences import collect_word_sentences, load_lexicon, rows_to_dataset
    >>> attrs, neutral = load_lexicon("adept")
    >>> ds = rows_to_dataset(collect_word_sentences(sentences, attrs, neutral))
    >>> trainer = ADEPTTrainer(model=model, args=ADEPTConfig(output_dir="out"), train_dataset=ds,
    ...                        processing_class=tokenizer)
    >>> result = trainer.train()
    >>> result.global_step > 0
    True
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from fairmt.errors import COUNT, POSITIVE, WEIGHT, FairmtError, Range
from fairmt.losses.adept import REPRESENTATION_LOSSES, adept_loss
from fairmt.losses.dpce import select_layers
from fairmt.trainers.word_debias import WordDebiasConfig, WordDebiasTrainer

logger = logging.getLogger(__name__)


@dataclass
class ADEPTConfig(WordDebiasConfig):
    """Training arguments for ADEPT-F (defaults: the authors' released script; see the module docstring).

    Parameters (besides those of :class:`~fairmt.trainers.word_debias.WordDebiasConfig`):
        alpha: weight α of the JS debiasing term (released: 0.3).
        beta: weight β of the representation term (released: 0.7).
        rho: Gaussian bandwidth ρ (released ``perplexity``: 15). ``None``: the median distance between the original
            model's prototypes and neutral-word embeddings over the training target rows.
        rho_max_sentences: target rows read for that estimate (default ``None``: all).
        representation: ``"kl"`` (KL between per-token softmax distributions over the hidden dimension; the
            assumption documented in :mod:`fairmt.losses.adept`) or ``"mse"``.
        loss_target: ``"token"`` (released default: the neutral word's embedding, prototypes from the attribute
            words) or ``"sentence"`` (sentence means for both).
    """

    RANGES: ClassVar[dict[str, Range]] = {  # each numeric field's range (fairmt.errors.check_ranges)
        "alpha": WEIGHT,
        "beta": WEIGHT,
        "rho": POSITIVE,
        "rho_max_sentences": COUNT,
        "per_device_train_batch_size": COUNT,
        "gradient_accumulation_steps": COUNT,
        "num_train_epochs": POSITIVE,
    }
    alpha: float = field(default=0.3, metadata={"help": "weight of the JS term (released: 0.3)"})
    beta: float = field(default=0.7, metadata={"help": "weight of the representation term (released: 0.7)"})
    rho: float | None = field(default=15.0, metadata={"help": "bandwidth (released perplexity 15); None = median"})
    rho_max_sentences: int | None = field(default=None, metadata={"help": "target rows for the rho estimate"})
    representation: str = field(default="kl", metadata={"help": "kl|mse"})
    per_device_train_batch_size: int = field(default=8, metadata={"help": "released: 8 (× 4 accumulation)"})
    gradient_accumulation_steps: int = field(default=4, metadata={"help": "released: 4"})
    num_train_epochs: float = field(default=10.0, metadata={"help": "released: 10"})

    def __post_init__(self):
        super().__post_init__()
        if self.rho is not None and not self.rho > 0:
            raise FairmtError(f"rho must be positive (or None to estimate it), got {self.rho}")
        if self.representation not in REPRESENTATION_LOSSES:
            raise FairmtError(f"unknown representation {self.representation!r}; choose one of {REPRESENTATION_LOSSES}")
        if self.rho_max_sentences is not None and self.rho_max_sentences < 1:
            raise FairmtError(f"rho_max_sentences must be ≥ 1 (or None), got {self.rho_max_sentences}")


class ADEPTTrainer(WordDebiasTrainer):
    """``transformers.Trainer`` that debiases an encoder with ADEPT-F (see the module docstring).

    Args as :class:`fairmt.trainers.dpce.DPCETrainer` (with an :class:`ADEPTConfig`). Logs ``loss_bias`` (JS) and
    ``loss_rep`` (and their ``eval_`` forms); ``trainer.rho`` holds the bandwidth used.
    """

    method = "adept"
    term_names = ("bias", "rep")
    config_class = ADEPTConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rho: float | None = self.args.rho
        self.rho_stats: dict[str, float] = {}

    @property
    def attribute_pooling(self) -> str:  # prototypes pooled like the neutral embeddings
        return "word" if self.args.loss_target == "token" else "sentence"

    def _flat(self, vectors: torch.Tensor) -> torch.Tensor:
        v = select_layers(vectors, self.args.debias_layer)
        return v.reshape(v.shape[0], v.shape[1] * v.shape[2])

    @torch.no_grad()
    def estimate_rho(self, dataset=None) -> float:
        """Median ‖p_a - n_j‖ over groups and the training target rows, under the original model."""
        dataset = dataset if dataset is not None else self.train_dataset
        idx = [i for i, role in enumerate(dataset["role"]) if role == "target"]
        if self.args.rho_max_sentences is not None:
            idx = idx[: self.args.rho_max_sentences]
        if not idx:
            raise FairmtError("ADEPT: no neutral-word sentence in the training data to estimate rho from: set rho")
        protos = self._flat(self.attribute_vectors)
        dists = []
        bs = max(1, self.args.per_device_eval_batch_size)
        for start in range(0, len(idx), bs):
            batch = self.data_collator([dataset[i] for i in idx[start : start + bs]])
            batch = {k: v.to(self.args.device) for k, v in batch.items() if torch.is_tensor(v)}
            hs = self.reference_states(batch).float()
            n = self._flat(self._pool_rows(hs, batch["attention_mask"], batch["word_mask"], self.attribute_pooling))
            dists.append(torch.cdist(protos.to(n.device), n).flatten().cpu())
        d = torch.cat(dists)
        rho = float(d.median())
        if not rho > 0:
            raise FairmtError("ADEPT: the prototype-to-neutral distances are all 0; set rho explicitly")
        self.rho_stats = {
            "adept_rho": rho,
            "adept_rho_distance_mean": float(d.mean()),
            "adept_rho_rows": float(len(idx)),
        }
        return rho

    def _prepare(self) -> None:
        super()._prepare()
        if self.rho is None:
            self.rho = self.estimate_rho()
            logger.info("ADEPT: estimated rho = %.6g (median prototype-to-neutral distance)", self.rho)

    def loss_terms(self, target_states, target_attention, target_word_mask, attr_states, attr_states_orig):
        neutral = self._flat(self._pool_rows(target_states, target_attention, target_word_mask, self.attribute_pooling))
        protos = self._flat(self.attribute_vectors.to(target_states.device))
        out = adept_loss(
            neutral,
            protos,
            attr_states,
            attr_states_orig,
            rho=self.rho,
            alpha=self.args.alpha,
            beta=self.args.beta,
            representation=self.args.representation,
        )
        return out.loss, out.bias, out.rep


def adept_summary(trainer: ADEPTTrainer) -> dict:
    """Settings, ρ and attribute statistics, for reports."""
    return {
        "alpha": trainer.args.alpha,
        "beta": trainer.args.beta,
        "rho": trainer.rho,
        "debias_layer": trainer.args.debias_layer,
        "loss_target": trainer.args.loss_target,
        "representation": trainer.args.representation,
        **trainer.rho_stats,
        **getattr(trainer, "attribute_stats", {}),
    }
