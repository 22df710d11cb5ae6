"""Evaluation during training: callbacks that add evaluator metrics to the Trainer's evaluations (layer 5, used
by the recipes; a Trainer never imports them)."""

from __future__ import annotations

import dataclasses

from transformers import TrainerCallback


class GenEvalCallback(TrainerCallback):
    """Adds MT-GenEval counterfactual accuracy (``eval_geneval_accuracy``, ``eval_geneval_delta_g``,
    ``eval_geneval_explicit_accuracy``) to every evaluation, so that ``metric_for_best_model="geneval_accuracy"``
    and ``EarlyStoppingCallback`` select checkpoints by gender accuracy, as Lee et al. (2023) early-stop on the
    MT-GenEval dev set.

    Translates the masculine and feminine English sources with the model being trained (greedy by default, for
    speed). Register it *before* ``EarlyStoppingCallback``: both read the same metrics dict. Every process
    translates the whole (optionally truncated) set, so all processes take the same early-stopping decision.
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

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        from fairmt.eval.geneval import score_counterfactual

        if metrics is None or model is None:
            return
        tm = dataclasses.replace(self.tm, model=model, _lang_cache={})
        d, n = self.data, self.n
        hyp_m = tm.translate(d.masculine_sources[:n], tgt_lang=self.lang, **self.gen)
        hyp_f = tm.translate(d.feminine_sources[:n], tgt_lang=self.lang, **self.gen)
        res = score_counterfactual(hyp_m, hyp_f, d.masculine_refs[:n], d.feminine_refs[:n], lang=self.lang, split=self.split)
        added = {
            "eval_geneval_accuracy": res.accuracy,
            "eval_geneval_explicit_accuracy": res.explicit_accuracy,
            "eval_geneval_delta_g": res.delta_g,
        }
        metrics.update(added)
        # The Trainer logged this evaluation just before calling us: complete that record too.
        last = state.log_history[-1] if state.log_history else None
        if last is not None and last.get("step") == state.global_step and any(k.startswith("eval_") for k in last):
            last.update(added)
