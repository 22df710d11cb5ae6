"""Evaluation during training: callbacks that add evaluator metrics to the Trainer's evaluations (used by the
recipes; a Trainer never imports them). They translate with the model being trained and score with
:mod:`fairmt.eval`, like the rest of :mod:`fairmt.model_eval`."""

from __future__ import annotations

import dataclasses

from transformers import TrainerCallback

from fairmt.distributed import replicated_shard


class GenEvalCallback(TrainerCallback):
    """Adds MT-GenEval counterfactual accuracy (``eval_geneval_accuracy``, ``eval_geneval_delta_g``,
    ``eval_geneval_explicit_accuracy``; pair-level, see :mod:`fairmt.eval.geneval`) to every evaluation, so that
    ``metric_for_best_model`` and ``EarlyStoppingCallback`` select checkpoints by gender accuracy, as Lee et al.
    (2023) early-stop on the MT-GenEval dev set. Select on ``geneval_explicit_accuracy`` (the released code's
    criterion and the GACL recipes' default): the official ``geneval_accuracy`` is won by empty or off-topic
    translations (tiny models scored 90–100 with explicit accuracy 0.8–5).

    Translates the masculine and feminine English sources with the model being trained (greedy by default, for
    speed). Register it *before* ``EarlyStoppingCallback``: both read the same metrics dict. Under DDP (weights
    replicated on every process) each process translates every world-th sentence and the translations are
    gathered, so the set is translated once in all; under FSDP/DeepSpeed (sharded weights, whose forward passes
    are collective) every process translates the whole set in lockstep. Either way every process scores the same
    translations and takes the same early-stopping decision. The last translations are kept in
    ``last_hypotheses`` (masculine, feminine).
    """

    def __init__(self, translation_model, lang: str, split: str = "dev", max_pairs: int | None = None,
                 batch_size: int = 16, num_beams: int = 1, max_new_tokens: int = 128, data=None):
        from fairmt.eval.geneval import load_counterfactual

        self.tm = translation_model
        self.lang, self.split = lang, split
        self.data = data or load_counterfactual(lang, split)
        n = len(self.data.masculine_sources) if max_pairs is None else min(max_pairs, len(self.data.masculine_sources))
        self.n = n
        self.gen = dict(batch_size=batch_size, num_beams=num_beams, max_new_tokens=max_new_tokens)
        self.last_hypotheses: tuple[list[str], list[str]] | None = None
        self.translated_here = 0  # sentences this process translated at the last evaluation

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        if metrics is None or model is None:
            return
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

        tm = dataclasses.replace(self.tm, model=model, _lang_cache={})
        d, n = self.data, self.n
        self.translated_here = 0
        hyp_m = self._translate(tm, d.masculine_sources[:n])
        hyp_f = self._translate(tm, d.feminine_sources[:n])
        self.last_hypotheses = (hyp_m, hyp_f)
        res = score_counterfactual(hyp_m, hyp_f, d.masculine_refs[:n], d.feminine_refs[:n], lang=self.lang,
                                   split=self.split)
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

