"""Evaluation during training: callbacks that add evaluator metrics to the Trainer's evaluations (used by the
recipes; a Trainer never imports them). They translate with the model being trained and score with
:mod:`fairmt.eval`, like the rest of :mod:`fairmt.model_eval`."""

from __future__ import annotations

import dataclasses

from transformers import TrainerCallback

from fairmt.distributed import replicated_shard
from fairmt.eval.geneval import GENEVAL_MAX_NEW_TOKENS


class GenEvalCallback(TrainerCallback):
    """Adds MT-GenEval counterfactual accuracy (``eval_geneval_accuracy``, ``eval_geneval_delta_g``,
    ``eval_geneval_explicit_accuracy``; pair-level, see :mod:`fairmt.eval.geneval`) to every evaluation of any
    ``Seq2SeqTrainer`` (a plain one, or a fairmt Trainer), so that ``metric_for_best_model`` and
    ``EarlyStoppingCallback`` select checkpoints by gender accuracy, as Lee et al. (2023) early-stop on the
    MT-GenEval dev set. Select on ``geneval_explicit_accuracy`` (the released code's criterion and the GACL recipes'
    default): the official ``geneval_accuracy`` is won by empty or off-topic translations (tiny models scored 90–100
    with explicit accuracy 0.8–5).

    Args:
        translation_model: a :class:`~fairmt.models.mt.TranslationModel`, or ``None`` to translate with the
            Trainer's own model and tokenizer (``processing_class``; SMaLL-100, NLLB-200 or M2M-100, the family read
            from the tokenizer's class unless ``family`` says it).
        lang: the target language (``de``, ``fr``, ...: one of MT-GenEval's).
        split: ``dev`` (default; never select on ``test``) or ``test``.
        max_pairs: only the first N pairs (a quicker evaluation); ``None`` = all.
        batch_size, num_beams, max_new_tokens: generation (greedy by default, for speed; at most
            :data:`~fairmt.eval.geneval.GENEVAL_MAX_NEW_TOKENS` tokens a translation by default).
        data: a :class:`~fairmt.eval.geneval.GenEvalCounterfactualData` instead of the downloaded split.

    Translates the masculine and feminine English sources with the model being trained. Register it *before*
    ``EarlyStoppingCallback``: both read the same metrics dict. Under DDP (weights
    replicated on every process) each process translates every world-th sentence and the translations are
    gathered, so the set is translated once in all; under FSDP/DeepSpeed (sharded weights, whose forward passes
    are collective) every process translates the whole set in lockstep. Either way every process scores the same
    translations and takes the same early-stopping decision. The last translations are kept in
    ``last_hypotheses`` (masculine, feminine).
    """

    def __init__(
        self,
        translation_model=None,
        lang: str | None = None,
        split: str = "dev",
        max_pairs: int | None = None,
        batch_size: int = 16,
        num_beams: int = 1,
        max_new_tokens: int = GENEVAL_MAX_NEW_TOKENS,
        data=None,
        *,
        src_lang: str = "en",
        family: str | None = None,
    ):
        from fairmt.errors import FairmtError
        from fairmt.eval.geneval import load_counterfactual

        if not lang:
            raise FairmtError("GenEvalCallback needs lang= (the target language, e.g. 'de')")
        if max_pairs is not None and max_pairs < 1:
            raise FairmtError(f"GenEvalCallback: max_pairs must be ≥ 1 (or None for all), got {max_pairs}")
        self.tm = translation_model
        self.src_lang, self.family = src_lang, family
        self.lang, self.split = lang, split
        self.data = data or load_counterfactual(lang, split)
        n = len(self.data.masculine_sources) if max_pairs is None else min(max_pairs, len(self.data.masculine_sources))
        self.n = n
        self.gen = dict(batch_size=batch_size, num_beams=num_beams, max_new_tokens=max_new_tokens)
        self.last_hypotheses: tuple[list[str], list[str]] | None = None
        self.translated_here = 0  # sentences this process translated at the last evaluation
        self.last_items: dict | None = None  # per-pair data of the last scoring (fairmt.eval.geneval items)
        self._tokenizer = None

    def _translation_model(self, model):
        """The translator for ``model``: the given TranslationModel with the Trainer's model in it, or one made of
        the Trainer's model and tokenizer."""
        if self.tm is not None:
            return dataclasses.replace(self.tm, model=model, _lang_cache={})
        from fairmt.errors import FairmtError
        from fairmt.models.mt import FAMILIES, TranslationModel, _family_from_class

        tok = self._tokenizer
        if tok is None:
            raise FairmtError(
                "GenEvalCallback(translation_model=None) translates with the Trainer's tokenizer: pass "
                "processing_class=tokenizer to the Trainer, or give a TranslationModel"
            )
        family = self.family or _family_from_class(type(tok).__name__)
        if family not in FAMILIES:
            raise FairmtError(
                f"GenEvalCallback: cannot tell the model family from the tokenizer "
                f"{type(tok).__name__}; pass family= one of {FAMILIES}"
            )
        tm = TranslationModel(model, tok, family, self.src_lang, self.lang)
        tm.src_lang, tm.tgt_lang = tm.lang(self.src_lang), tm.lang(self.lang)  # codes in the family's convention
        return tm

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        if metrics is None or model is None:
            return
        if self._tokenizer is None:
            self._tokenizer = kwargs.get("processing_class")
        added = {f"eval_geneval_{k}": v for k, v in self.score(model).items()}
        metrics.update(added)
        # The Trainer logged this evaluation just before calling us: complete that record too.
        last = state.log_history[-1] if state.log_history else None
        if last is not None and last.get("step") == state.global_step and any(k.startswith("eval_") for k in last):
            last.update(added)

    def score(self, model) -> dict[str, float]:
        """``accuracy``, ``explicit_accuracy`` and ``delta_g`` (percent) of ``model`` on the first ``n`` pairs of the
        callback's split; every process must call it (the translations are gathered)."""
        from fairmt.eval.geneval import score_counterfactual

        tm = self._translation_model(model)
        d, n = self.data, self.n
        self.translated_here = 0
        hyp_m = self._translate(tm, d.masculine_sources[:n])
        hyp_f = self._translate(tm, d.feminine_sources[:n])
        self.last_hypotheses = (hyp_m, hyp_f)
        res = score_counterfactual(
            hyp_m, hyp_f, d.masculine_refs[:n], d.feminine_refs[:n], lang=self.lang, split=self.split
        )
        self.last_items = res.items  # per-pair data of this scoring: a paired bootstrap in `fairmt report`
        return {"accuracy": res.accuracy, "explicit_accuracy": res.explicit_accuracy, "delta_g": res.delta_g}

    def _translate(self, tm, sources: list[str]) -> list[str]:
        rank, world = replicated_shard()
        if world == 1:
            self.translated_here += len(sources)
            return tm.translate(sources, tgt_lang=self.lang, **self.gen)
        from accelerate.utils import gather_object

        mine = sources[rank::world]
        self.translated_here += len(mine)
        parts = gather_object([tm.translate(mine, tgt_lang=self.lang, **self.gen) if mine else []])
        out: list[str] = [""] * len(sources)
        for r, part in enumerate(parts):
            out[r::world] = part
        return out
