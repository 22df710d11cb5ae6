"""The measurements of an embedding-debiasing recipe (CCD, DPCE, ADEPT-F) before and after training: the test
suites (SEAT effect sizes, the CCED gap of the held-out tuples, Bias-IR male ratios; :mod:`fairmt.eval.embedding`),
the validation measures (:mod:`fairmt.recipes.ccd.validation`) and the checkpoint selectors built on them, the
utility check on held-out neutral sentences, and the flat ``dev`` / ``test`` summaries of a results JSON.

The mean |SEAT d| over the tests is ``seat_avg_abs_effect_size`` in a results JSON (the name ``fairmt eval embeddings``
and :class:`fairmt.integrations.SEATEvaluator` give it); ``seat_avg_abs``, its old name here, is written beside it
until fairmt 0.2 (:data:`OLD_NAMES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.eval.embedding.seat import SEAT_N_SAMPLES
from fairmt.recipes.ccd.schema import CcdEvaluation, CcdRecipe, section

SUITES = ("seat", "cced", "bias_ir", "utility")
SEAT_AVG_ABS = "seat_avg_abs_effect_size"
"""The mean |SEAT effect size d| over the tests run, in a measurement block and in the ``test`` summary."""
OLD_NAMES = {SEAT_AVG_ABS: "seat_avg_abs"}
"""Result keys under their old names, written beside the new ones until fairmt 0.2 (readers accept both)."""


def seat_avg_abs(block: dict) -> float | None:
    """The mean |SEAT d| of a measurement block (``before``, ``after``, ``test``), under its name or its old one."""
    for key in (SEAT_AVG_ABS, OLD_NAMES[SEAT_AVG_ABS]):
        if isinstance(block, dict) and block.get(key) is not None:
            return block[key]
    return None


def utility_check(before: np.ndarray, after: np.ndarray, k: int = 10) -> dict[str, float]:
    """How much of the original similarity structure a debiased encoder keeps, on the same N sentences.

    * ``spearman_pairwise_cos``: Spearman correlation between the N(N-1)/2 pairwise cosine similarities under the
      original and the debiased encoder (1 = same ranking of all pairs);
    * ``nn1_agreement``: share of sentences whose nearest neighbour (cosine, itself excluded) is unchanged;
    * ``knn_overlap@k``: mean share of the k nearest neighbours kept;
    * ``self_cosine``: mean cosine between a sentence's original and debiased embedding.
    """
    from scipy.stats import spearmanr

    def unit(x):
        x = np.asarray(x, dtype=np.float64)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    a, b = unit(before), unit(after)
    n = a.shape[0]
    if n < 3 or b.shape != a.shape:
        raise FairmtError(f"utility check needs ≥3 sentences embedded by both models, got {a.shape} and {b.shape}")
    sa, sb = a @ a.T, b @ b.T
    iu = np.triu_indices(n, 1)
    rho = float(spearmanr(sa[iu], sb[iu]).statistic)
    np.fill_diagonal(sa, -np.inf)
    np.fill_diagonal(sb, -np.inf)
    k = min(k, n - 1)
    ka, kb = np.argsort(-sa, axis=1)[:, :k], np.argsort(-sb, axis=1)[:, :k]
    overlap = np.mean([len(set(x) & set(y)) / k for x, y in zip(ka, kb)])
    return {
        "n": n,
        "spearman_pairwise_cos": rho,
        "nn1_agreement": float(np.mean(ka[:, 0] == kb[:, 0])),
        f"knn_overlap@{k}": float(overlap),
        "self_cosine": float(np.mean(np.sum(a * b, axis=1))),
    }


def cached_encoder(encode):
    """``encode`` with a memo: every distinct text is embedded once (SEAT 6 and 6b share their attribute sentences,
    the Bias-IR halves their documents)."""
    cache: dict[str, np.ndarray] = {}

    def run(texts):
        texts = list(texts)
        new = [t for t in dict.fromkeys(texts) if t not in cache]
        if new:
            cache.update(zip(new, np.asarray(encode(new))))
        return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)

    return run


def _bias_ir_dict(r) -> dict[str, Any]:
    return {
        "male_ratio": {c.short: c.male_ratio for c in r.categories},
        "avg_dev": r.avg_dev,
        "male_ratio_all": r.male_ratio_all,
        "n_queries": r.n_queries,
        "signature": r.signature,
    }


def _seat_dict(results: dict) -> dict[str, Any]:
    return {
        "tests": {t: {"effect_size": r.effect_size, "p_value": r.p_value} for t, r in results.items()},
        "avg_abs": float(np.mean([abs(r.effect_size) for r in results.values()])),
    }


def _cced(encode, tuples: Sequence[dict], groups: Sequence[str], pooling: str) -> dict[str, Any]:
    from fairmt.eval.embedding.cced import cced_gap
    from fairmt.eval.report import as_dict

    neutral = encode([t["neutral"] for t in tuples])
    return as_dict(cced_gap(neutral, {g: encode([t[g] for t in tuples]) for g in groups}, pooling=pooling))


def measure(
    encode,
    suites: Sequence[str],
    test_tuples: Sequence[dict],
    groups: Sequence[str],
    pooling: str,
    seat_tests: Sequence[str] | None = None,
    seat_n_samples: int = SEAT_N_SAMPLES,
    bias_ir_queries: Sequence | None = None,
    stage: str | None = None,
) -> dict[str, Any]:
    """Run the embedding-bias suites with ``encode(list[str]) -> (n, d)``; returns JSON-ready results. ``stage``
    (``before``/``after``): one progress line per suite as it starts (each can take a minute).

    ``bias_ir_queries``: score Bias-IR on these queries only (the test half when the recipe holds out validation
    queries); then ``bias_ir_all`` also gives the score over all 117 queries, for comparison with full-set numbers
    (it includes the validation queries)."""
    encode = cached_encoder(encode)
    out: dict[str, Any] = {}
    if "seat" in suites:
        _progress(stage, f"SEAT ({seat_n_samples} permutation samples per test)")
        from fairmt.data.paths import data_path
        from fairmt.eval.embedding.seat import GENDER_TESTS, load_seat_test, seat_score, seat_test_path

        root = data_path("embedding_bias", "seat")
        res = {
            t: seat_score(load_seat_test(seat_test_path(root, t)), encode, pooling, n_samples=seat_n_samples)
            for t in (seat_tests or GENDER_TESTS)
        }
        seat = _seat_dict(res)
        out["seat"], out[SEAT_AVG_ABS] = seat["tests"], seat["avg_abs"]
        out[OLD_NAMES[SEAT_AVG_ABS]] = seat["avg_abs"]  # the old name, until fairmt 0.2
        out["seat_signature"] = next(iter(res.values())).signature
    if "cced" in suites and test_tuples:
        _progress(stage, f"CCED ({len(test_tuples)} held-out tuples)")
        out["cced"] = _cced(encode, test_tuples, groups, pooling)
    if "bias_ir" in suites:
        _progress(stage, "Bias-IR")
        from fairmt.data.paths import data_path
        from fairmt.eval.embedding.bias_ir import bias_ir_score, load_bias_ir

        everything = load_bias_ir(data_path("embedding_bias", "bias_ir"))
        out["bias_ir"] = _bias_ir_dict(bias_ir_score(bias_ir_queries or everything, encode, pooling=pooling))
        if bias_ir_queries is not None:
            out["bias_ir_all"] = _bias_ir_dict(bias_ir_score(everything, encode, pooling=pooling))
    return out


def _progress(stage: str | None, what: str) -> None:
    """One line as a measurement starts (the suites run long and draw no bar of their own)."""
    if stage:
        print(f"fairmt: {stage}: measuring {what}", flush=True)


BEFORE_AFTER = (
    ("CCED gap (held-out tuples)", ("cced", "gap"), "lower"),
    ("SEAT mean |d|", (SEAT_AVG_ABS,), "lower"),
    ("Bias-IR mean |male ratio − 0.5|", ("bias_ir", "avg_dev"), "lower"),
)


def before_after_lines(results: dict, method: str = "CCD") -> list[str]:
    """The short before → after table a CCD run ends with: each bias measure it made on the test tuples/queries
    (lower is fairer), and the utility check (1 = the geometry of the neutral sentences kept)."""

    def get(d, keys):
        for k in keys:
            d = (d or {}).get(k) if isinstance(d, dict) else None
        return d

    from fairmt.eval.report import before_after_lines as table

    rows = [
        (label, get(results.get("before"), keys), get(results.get("after"), keys), ".3f", better)
        for label, keys, better in BEFORE_AFTER
    ]
    if "utility" in results:  # the original against itself: 1
        rows.append(
            (
                "utility: Spearman of pairwise cosines (neutral)",
                1.0,
                results["utility"].get("spearman_pairwise_cos"),
                ".3f",
                "higher",
            )
        )
    if not any(isinstance(r[1], (int, float)) and isinstance(r[2], (int, float)) for r in rows[: len(BEFORE_AFTER)]):
        return []
    return table(f"what {method} changed (test; lower is fairer)", rows)


def measure_validation(
    encode,
    val_tuples: Sequence[dict],
    groups: Sequence[str],
    pooling: str,
    bias_ir_queries: Sequence | None,
    n_samples: int,
) -> dict[str, Any]:
    """The validation measures (:mod:`fairmt.recipes.ccd.validation`): the association probe (SEAT-style, no word
    in common with SEAT, ``n_samples`` permutation samples: ``evaluation.probe_n_samples``), the CCED gap of the
    validation tuples and Bias-IR on the validation queries."""
    from fairmt.eval.embedding.bias_ir import bias_ir_score
    from fairmt.eval.embedding.seat import seat_score
    from fairmt.recipes.ccd.validation import probe_tests

    encode = cached_encoder(encode)
    probe = _seat_dict({t.name: seat_score(t, encode, pooling, n_samples=n_samples) for t in probe_tests()})
    out: dict[str, Any] = {"probe": probe["tests"], "probe_avg_abs": probe["avg_abs"]}
    if val_tuples:
        out["cced"] = _cced(encode, val_tuples, groups, pooling)
    if bias_ir_queries:
        out["bias_ir"] = _bias_ir_dict(bias_ir_score(bias_ir_queries, encode, pooling=pooling))
    return out


def model_encoder(model, tokenizer, pooling: str, batch_size: int, normalize: bool | None = None):
    """``texts -> (n, d)``: the very embedding CCD trains (:func:`fairmt.trainers.ccd.encode` with the recipe's
    pooling — max, pooler, cls, mean or the model's own — and normalisation), so the bias suites measure what was
    debiased (they used to pool every plain encoder with mean, unnormalised)."""
    import torch

    from fairmt.trainers.ccd import encode, is_sentence_transformer, st_features

    st = is_sentence_transformer(model)

    def run(texts):
        texts = list(texts)
        device = next(model.parameters()).device
        # longest first, as SentenceTransformer.encode does: batches of similar length waste little on padding
        # (Bias-IR's documents: 1.5x faster); the rows are put back in the caller's order
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), batch_size):
                chunk = [texts[i] for i in order[start : start + batch_size]]
                feats = (
                    st_features(model, chunk)
                    if st
                    else tokenizer(chunk, padding=True, truncation=True, return_tensors="pt")
                )
                feats = {k: v.to(device) for k, v in feats.items()}
                out.append(encode(model, feats, pooling, normalize).float().cpu().numpy())
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        emb = np.concatenate(out)
        res = np.empty_like(emb)
        res[order] = emb
        return res

    return run


VALIDATION_SELECTORS = ("probe_avg_abs", "bias_ir_avg_dev", "val_bias")


def evaluation_settings(recipe: CcdRecipe | dict) -> dict[str, Any]:
    """The recipe's ``evaluation`` section (:class:`~fairmt.recipes.ccd.schema.CcdEvaluation`, its defaults) as the
    measurements use it: ``suites`` (null: all of :data:`SUITES`), ``batch_size``, SEAT's
    ``seat_n_samples``/``seat_tests``, ``validation`` (also measure the validation split: the association probe,
    the CCED gap of the validation tuples, Bias-IR on ``bias_ir_validation`` of the queries, and utility on
    ``data.utility_validation_size`` sentences), ``split_seed`` (the Bias-IR split), ``probe_n_samples``.
    ``recipe``: the resolved recipe, or a mapping holding an ``evaluation`` section (checked here)."""
    if isinstance(recipe, CcdRecipe):
        ev = recipe.evaluation
    else:
        ev = section(CcdRecipe, "evaluation", CcdEvaluation, dict(recipe.get("evaluation") or {}))
    ev = ev or CcdEvaluation()
    suites = [str(s).replace("-", "_") for s in (SUITES if ev.suites is None else ev.suites)]  # bias-ir or bias_ir
    return {
        "suites": suites,
        "batch_size": ev.batch_size,
        "seat_kw": {"seat_tests": ev.seat_tests, "seat_n_samples": ev.seat_n_samples},
        "validation": ev.validation,
        "bias_ir_validation": ev.bias_ir_validation if ev.validation else None,
        "split_seed": ev.split_seed,
        "probe_n_samples": ev.probe_n_samples,
    }


def bias_ir_split(settings: dict) -> tuple[list | None, list | None]:
    """(validation queries, test queries) of Bias-IR, or (None, None) when no validation split is held out."""
    if "bias_ir" not in settings["suites"] or not settings["bias_ir_validation"]:
        return None, None
    from fairmt.data.paths import data_path
    from fairmt.eval.embedding.bias_ir import load_bias_ir
    from fairmt.recipes.ccd.validation import split_bias_ir

    return split_bias_ir(
        load_bias_ir(data_path("embedding_bias", "bias_ir")), settings["bias_ir_validation"], settings["split_seed"]
    )


def measure_model(
    runner, data: dict, pooling_name: str, settings: dict, ir_split, stage: str | None = None
) -> dict[str, Any]:
    """Test suites (``test``), validation measures (``validation``, when asked) and the embeddings of the utility
    sentences (``neutral``, ``neutral_validation``) of one model."""
    groups, suites = data["groups"], settings["suites"]
    ir_val, ir_test = ir_split
    runner = cached_encoder(runner)  # one memo for both splits: Bias-IR's validation documents are embedded once
    out: dict[str, Any] = {
        "test": measure(
            runner,
            suites,
            data["test"],
            groups,
            pooling_name,
            bias_ir_queries=ir_test,
            stage=stage,
            **settings["seat_kw"],
        )
    }
    if settings["validation"]:
        out["validation"] = measure_validation(
            runner, data["eval"], groups, pooling_name, ir_val, settings["probe_n_samples"]
        )
    if "utility" in suites:
        out["neutral"] = runner(data["neutral"]) if data["neutral"] else None
        out["neutral_validation"] = runner(data["neutral_validation"]) if data.get("neutral_validation") else None
    return out


def validation_selector(name: str, tok, args, data: dict, settings: dict, ir_val, before: dict | None):
    """``fn(model) -> {name: value}`` for :class:`fairmt.trainers.ccd.CCDTrainer`'s ``validation_measures``:
    ``probe_avg_abs`` (the association probe's mean |d|), ``bias_ir_avg_dev`` (Bias-IR AVG-DEV of the validation
    queries) or ``val_bias`` (the mean, over the CCED gap of the validation tuples, the probe and Bias-IR validation,
    of each one's ratio to the original model's value: below 1 when the three improve on average)."""
    if name not in VALIDATION_SELECTORS:
        raise FairmtError(f"unknown validation selector {name!r}; choose one of {VALIDATION_SELECTORS}")
    if name != "probe_avg_abs" and not ir_val:
        raise FairmtError(
            f"metric_for_best_model eval_{name} needs the Bias-IR validation queries: set "
            "evaluation.validation: true with bias_ir in evaluation.suites"
        )
    if name == "val_bias" and not (before and data["eval"]):
        raise FairmtError(
            "metric_for_best_model eval_val_bias needs validation tuples (data.eval_size) and "
            "evaluation.validation: true"
        )
    original: dict = before or {}  # the original model's values (val_bias has them: checked above)

    def fn(model) -> dict[str, float]:
        runner = model_encoder(model, tok, args.pooling, settings["batch_size"], args.normalize)
        if name == "probe_avg_abs":
            return {name: measure_validation(runner, [], data["groups"], "", None, 1)["probe_avg_abs"]}
        if name == "bias_ir_avg_dev":
            from fairmt.eval.embedding.bias_ir import bias_ir_score

            return {name: bias_ir_score(ir_val, runner).avg_dev}
        v = measure_validation(runner, data["eval"], data["groups"], "", ir_val, 1)
        ratios = [
            v["cced"]["gap"] / original["cced"]["gap"],
            v["probe_avg_abs"] / original["probe_avg_abs"],
            v["bias_ir"]["avg_dev"] / original["bias_ir"]["avg_dev"],
        ]
        return {
            name: float(np.mean(ratios)),
            "val_cced_gap": v["cced"]["gap"],
            "probe_avg_abs": v["probe_avg_abs"],
            "bias_ir_avg_dev": v["bias_ir"]["avg_dev"],
        }

    return fn


def summary_sections(results: dict) -> dict[str, dict[str, float]]:
    """``dev`` and ``test``: the after-training numbers of a run under one flat name per measure, validation under
    ``dev`` and the reported suites under ``test`` (the convention ``fairmt sweep`` selects by: objectives and
    selection on ``dev.*``, the selected setting's ``test.*`` reported). Only the measures the run made."""
    after, val = results.get("after") or {}, (results.get("validation") or {}).get("after") or {}
    dev: dict[str, float] = {}
    test: dict[str, float] = {}
    if "cced" in val:
        dev["cced_gap"] = val["cced"]["gap"]
    if "probe_avg_abs" in val:
        dev["probe_avg_abs"] = val["probe_avg_abs"]
    if "bias_ir" in val:
        dev["bias_ir_avg_dev"] = val["bias_ir"]["avg_dev"]
    if "cced" in after:
        test["cced_gap"] = after["cced"]["gap"]
    seat = seat_avg_abs(after)
    if seat is not None:
        test[SEAT_AVG_ABS] = test[OLD_NAMES[SEAT_AVG_ABS]] = seat  # the old name too, until fairmt 0.2
    if "bias_ir" in after:
        test["bias_ir_avg_dev"] = after["bias_ir"]["avg_dev"]
    if "bias_ir_all" in after:
        test["bias_ir_avg_dev_all_queries"] = after["bias_ir_all"]["avg_dev"]
    for summary, key in ((dev, "utility_validation"), (test, "utility")):
        if key in results:
            summary["utility_spearman"] = results[key]["spearman_pairwise_cos"]
            summary["utility_nn1"] = results[key]["nn1_agreement"]
    return {k: v for k, v in (("dev", dev), ("test", test)) if v}
