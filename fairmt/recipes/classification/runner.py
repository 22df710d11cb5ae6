"""Recipe entry point for fair text classification: ``fairmt train recipes/classification/X.yaml [key=value ...]``.

``main(config)`` receives the recipe as a dict (``method: classification``) and runs one of

=====================  =================================================================================
``objective``          what runs
=====================  =================================================================================
``ce``                 cross-entropy baseline (:class:`~fairmt.trainers.fair_contrastive.FairContrastiveTrainer`)
``cscl``               one-stage CSCL ``(1−γ)·CE + γ·L_sup + λ·L_CS`` (Chi et al., 2022)
``cscl_pretrain``      ``L_sup + λ·L_CS`` on the encoder, then the head on the fixed encoder
``fcl``                ``α·CE + β·(L_scl − L_fcl)`` (Shen et al., 2022, Con*)
``fcl_pretrain``       ``L_scl − L_fcl`` on the encoder, then the head (Con*^ft)
``sampling``           ``CE + μ·NT-Xent`` with fairness-driven sampling on K-means subgroups (no group labels)
``adversarial``        gradient-reversal adversaries (:mod:`fairmt.trainers.adversarial`)
``inlp``               CE encoder, then INLP on its frozen representations and a logistic-regression head
=====================  =================================================================================

on one of the data sets (``data.dataset``): ``bios`` — the 280-row Bias-in-Bios sample with a random split (tests);
``bios_split`` — Bias-in-Bios with its published split (``data.source: local``: Ravfogel et al.'s 255,710 / 39,369 /
98,344 as CSCL, or ``hub``: LabHC/bias_in_bios); ``jigsaw`` — Civil Comments, WILDS split, race (CSCL); ``moji`` —
DeepMoji features, fairlib's split (Shen et al.); ``hatespeech`` — Huang et al. 2020, token ids (``data.language``,
``data.attribute``: one protected attribute, or a list of them — ``[gender, age]`` — for intersectional groups,
every metric then over the cross-product groups). ``data.root`` points a loader at a folder (default: under ``FAIRMT_DATA``); see
:mod:`fairmt.data.fair_datasets`. With one encoder (``model.type``):

* ``frozen_embedder``: a sentence encoder (``model.name_or_path``; ``minilm`` = the packaged all-MiniLM-L6-v2) embeds
  every text once (``model.pooling``: ``cls`` — the raw ``[CLS]`` state, Ravfogel et al.'s and Shen et al.'s BERT
  features — or ``mean`` — the masked mean, L2-normalised unless ``model.normalize: false``; cached under
  ``model.cache_dir``), and a 2-layer MLP encoder (width ``model.hidden_dim``, Shen et al.'s Enc) + head is trained on
  the fixed vectors;
* ``features``: the same MLP on a data set's own fixed features (Moji);
* ``gru_features``: Shen et al.'s hate-speech Embed — a bidirectional GRU (cell ``model.gru_hidden`` = 200, so 400-d)
  is first trained with CE (``model.embed_epochs``, ``model.embed_learning_rate``; the epoch with the lowest dev loss
  kept), then fixed; its representations of every split are the features of the same MLP;
* ``finetune``: :class:`~fairmt.models.encoder_classifier.TransformerClassifier` on ``model.name_or_path``: the pooled
  encoder output ``z`` (``model.pooling``) is the representation, the head ``g`` an MLP of ``model.head_layers``
  layers (2: CSCL's classifier), trained end to end;
* ``gru`` / ``embedding_bag``: token-id encoders for the hate-speech set.

Contrastive terms, the head and leakage@h always see one representation (the head's input). With
``model.type: finetune``, ``data.augment`` gives every training (and dev) row a second view for
``objective_args.views: augment``: ``eda`` (four copies per row, ``data.eda_num_aug``, of which each batch draws one),
``clm_insert`` / ``clm_substitute`` (a masked LM, ``data.clm_model``, rate ``data.clm_rate``) or ``backtranslate``
(``data.backtranslate_model``, ``data.pivot_lang``).

Options: ``training`` holds ``TrainingArguments`` fields shared by every objective (and stage 1 of two-stage ones);
``objective_args`` the fields of the objective's own Config (``gamma``, ``cs_lambda``, ``temperature``, ``views`` for
CSCL; ``fcl_alpha``, ``fcl_beta``, ``fcl_scl_weight``, ``fcl_fcl_weight``, ``fcl_variant``, ``fcl_group_term`` for FCL;
``n_clusters``, ``epsilon``, ``sampling_weight``, ``cluster_refresh_steps`` for sampling; ``adv_lambda``,
``n_adversaries``, ``diff_lambda``, ``adv_conditional``, ``adv_weighting`` for the adversarial baseline); ``stage2``
the training options of the head stage of two-stage objectives (trained on the fixed encoder's features computed
once, ``cache_stage2_features``); ``inlp`` the INLP options; ``metrics`` the reporting conventions (``eo_classes``:
``positive`` or ``all``; ``positive_class``).

Model selection and early stopping use the dev split only, evaluated every epoch: ``selection`` — ``loss`` (lowest
dev CE), ``dto`` (distance of (accuracy, 1 − GAP) to (1, 1)), ``accuracy``, or ``accuracy_then_gap`` (Shen et al.:
the best dev accuracy, then the lowest GAP within ``selection_tolerance``; for these two, never an epoch whose dev
accuracy is below ``selection_accuracy_floor`` × the best dev accuracy, default 0.8: a near-constant model has
GAP ≈ 0 and wins DTO otherwise, and the run warns, once, when the floor changed the choice or when the chosen
model is below it) — with ``patience`` (stop once that many
epochs followed the chosen one: CSCL 3, Shen et al. 5; and, with ``patience_waits_for_dev_loss`` (default true), the
lowest dev loss too — set it false for the papers' rule alone); the first stage of a two-stage objective is selected and
early-stopped on its own dev objective (``stage1_patience``), as the CSCL release does. The test split is scored once,
at the end: ``results.json`` (dev and test :class:`~fairmt.eval.classification.ClassificationResult`, leakage SVMs
trained on the training split as Shen et al., and the metric conventions used) and ``predictions.jsonl``
(``label``, ``pred``, ``score`` — class probabilities, ``group``, ``hidden``; readable by ``fairmt eval
classification``) are written to the run's folder: ``output_dir`` (or ``training.output_dir``; default
``outputs/<recipe name>``), refused when it holds an earlier run unless ``--overwrite``. ``resolve_config`` resolves
every value, including each stage's training Config (``stages``), which ``fairmt train RECIPE --dry-run`` prints
without loading a model. ``main`` returns the results dict.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.recipes._output import prepare_output_dir
from fairmt.recipes.classification.data import (  # noqa: F401  (also their old home: ...classification.runner.X)
    _columns,
    _gru_features,
    _load_data,
    add_views,
    build_datasets,
    keep_labels,
    load_data,
)
from fairmt.recipes.classification.encoders import (  # noqa: F401
    _cached_feature_datasets,
    _cuda,
    _model_path,
    _split_features,
    embed_texts,
    load_embedding_cache,
)
from fairmt.recipes.classification.objectives import (  # noqa: F401
    TWO_STAGE,
    _apply_inlp,
    _base_args,
    _batch_options,
    _fit,
    _inlp_finetune_head,
    _measure_without_rng,
    _predict,
    _save_final,
    _selection_info,
    _stage_configs,
    _steps_per_epoch,
    _train,
    balance_train,
)


def resolve_config(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe resolved by its schema (:func:`fairmt.recipes._schema.resolve_recipe`: every default, the
    ones that depend on other keys, the run folder; an unknown value names its key and the allowed ones), as a dict,
    plus each stage's training Config (``stages``: every field of the Config the Trainer will get, e.g. ``views``,
    ``temperature`` and ``normalize`` as resolved). The runner reads nothing else."""
    from fairmt.recipes._schema import resolve_recipe
    from fairmt.recipes.classification.schema import ClassificationRecipe

    if config.get("method", "classification") != "classification":
        raise FairmtError(f"recipe method must be 'classification' for this entry point, got {config.get('method')!r}")
    resolved = resolve_recipe({**{k: v for k, v in config.items() if k != "stages"}, "method": "classification"})
    if not isinstance(resolved, ClassificationRecipe):  # the schema the family registers (fairmt.recipes._registry)
        raise FairmtError(f"the classification family resolved to {type(resolved).__name__}, not ClassificationRecipe")
    cfg = resolved.model_dump(exclude={"method", "recipe_path", "overwrite"})
    cfg["stages"] = {name: _config_fields(cls(**kw)) for name, (cls, kw) in _stage_configs(cfg).items()}
    return cfg


def defaults() -> dict[str, Any]:
    """The resolved recipe of an empty classification recipe (every default the schema holds)."""
    return {k: v for k, v in resolve_config({"method": "classification"}).items() if k not in ("stages", "output_dir")}


def _config_fields(args) -> dict[str, Any]:
    return json.loads(args.to_json_string())


# ---------------------------------------------------------------------------------------------- the results
def before_after(results: dict[str, Any]) -> list[str]:
    """The run's before → after table (:func:`fairmt.eval.report.before_after_lines`, every recipe's printer) on
    the dev set: INLP — the CE encoder → the model after INLP; the others — the starting model (``start_dev``: the
    pretrained encoder, or a two-stage run's stage-1 encoder, with its untrained head, scored before training) → the
    model the run reports (the checkpoint selected); never a first-epoch model. ΔEO per class
    (:func:`eo_per_class`). A results file without ``start_dev`` (an older fairmt) gives no table."""
    from fairmt.eval.report import before_after_lines

    info = results.get("info") or {}
    inlp = info.get("inlp") or {}
    if "final_dev" in inlp:
        before, after, names = inlp.get("encoder_dev") or {}, inlp["final_dev"], ("the CE encoder", "after INLP")
    else:
        sel = info.get("selection") or {}
        before, after = sel.get("start_dev") or {}, results.get("dev") or {}
        names = ("starting model (untrained head)", "the model reported")
    k = eo_classes_summed(results)
    rows = [
        ("accuracy ↑", before.get("accuracy"), after.get("accuracy"), ".2f", "higher"),
        ("GAP ↓", before.get("gap"), after.get("gap"), ".2f", "lower"),
        (
            "ΔEO/class ↓" if k > 1 else "ΔEO ↓",
            _per(before.get("delta_eo"), k),
            _per(after.get("delta_eo"), k),
            ".2f",
            "lower",
        ),
    ]
    return before_after_lines(f"what {results.get('objective')} changed (dev, %)", rows, *names)


def _per(v: Any, k: int) -> Any:
    return v / k if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def eo_classes_summed(results: dict[str, Any]) -> int:
    """How many classes a results file's ΔEO is summed over: the number of labels under the ``all`` convention (ΔEO
    is then shown divided by it, a mean per class a reader can place; 28 Bios classes summed read "680 %"), else 1."""
    dev = results.get("dev") or results.get("test") or {}
    if dev.get("eo_classes") != "all":
        return 1
    return max(1, len(results.get("labels") or []) or int((results.get("test_full") or {}).get("n_classes") or 1))


def _probs(logits: np.ndarray) -> np.ndarray:
    z = np.nan_to_num(np.asarray(logits, dtype=np.float64), neginf=-1e9)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _score(cfg, data, outputs, split: str):
    from fairmt.eval.classification import classification_metrics

    s = data.splits[split]
    logits, hidden = outputs[split]
    tlogits, thidden = outputs["train"]
    return classification_metrics(  # intersectional groups: one column per attribute (the cross-product groups)
        s.labels,
        logits.argmax(-1).tolist(),
        data.group_columns(split),
        hidden=hidden,
        logits=np.nan_to_num(logits, neginf=-1e9),
        train_hidden=thidden,
        train_logits=np.nan_to_num(tlogits, neginf=-1e9),
        train_groups=data.group_columns("train"),
        num_classes=data.num_labels,
        seed=cfg["seed"],
        scores=_probs(logits),
        eo_classes=cfg["metrics"]["eo_classes"],
        positive_class=cfg["metrics"]["positive_class"],
    )


def _conventions(cfg, result, data) -> dict[str, Any]:
    """The metric conventions a results file reports, in words (what a paper comparison needs to know)."""
    from fairmt.eval.classification import TRADEOFF_DEFINITION

    pos = result.positive_class
    f1 = (
        (f"positive-class F1 (positive class {data.label_names[int(pos)] if str(pos).isdigit() else pos}) and macro-F1")
        if pos is not None
        else "macro-F1 and micro-F1 (no positive class: more than two classes)"
    )
    eo = (
        "ΔEO summed over every class (the CSCL release's convention; 2x the positive-class one for two classes)"
        if result.eo_classes == "all"
        else "ΔEO of the positive class (the formula CSCL prints)"
    )
    sel = {
        "loss": "lowest dev CE",
        "dto": "distance of dev (accuracy, 1-GAP) to (1, 1)",
        "accuracy": "best dev accuracy",
        "accuracy_then_gap": f"best dev accuracy, then the lowest dev GAP within "
        f"{cfg['selection_tolerance']:g} of it (Shen et al.)",
        "last": "the final epoch (the CSCL release)",
    }[cfg["selection"]]
    if cfg["patience"]:
        sel += f"; early stopping after {cfg['patience']} epochs without a new choice" + (
            " and without a lower dev loss" if cfg["patience_waits_for_dev_loss"] else ""
        )
    if cfg["selection"] in ("dto", "accuracy_then_gap") and cfg["selection_accuracy_floor"]:
        sel += f"; never an epoch below {cfg['selection_accuracy_floor']:g} × the best dev accuracy"
    return {
        "f1": f1,
        "delta_eo": eo,
        "auc": "roc_auc_score on softmax probabilities"
        + (" (one-vs-rest, macro)" if pos is None else " of the positive class"),
        "gap": "sqrt(mean_y GAP_y^2), GAP_y = sum_a |TPR_a,y - TPR_y| (Shen et al. Eq. 4, fairlib)",
        "tradeoff": f"{TRADEOFF_DEFINITION}: a score relative to the compared models, so not in one run's "
        "results — `fairmt sweep`'s report gives it for every setting (dev.tradeoff, test.tradeoff)",
        "selection": sel,
        "signature": result.signature,
    }


def _dev_loss(logits: np.ndarray, labels) -> float:
    """Mean cross-entropy of the final model's dev predictions (what ``dev.loss`` reports: the model as scored,
    after INLP where the objective applies it)."""
    p = _probs(logits)
    y = np.asarray(labels, dtype=int)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-12, None))))


def _selection_line(info: dict[str, Any], warnings: Sequence[str] = ()) -> str:
    """Which checkpoint the run kept and why, in one line (dev numbers in percent)."""
    sel = info.get("selection") or {}
    if sel.get("best_step") is None:
        return "  selected: the last model (no dev evaluation)"
    dev = sel.get("best_dev") or {}
    nums = ", ".join(f"{k if k == 'accuracy' else 'GAP'} {v:.2f}" for k, v in dev.items() if k in ("accuracy", "gap"))
    rule = {
        "dto": "the smallest DTO (distance of dev (accuracy, 1 − GAP) to (1, 1))",
        "accuracy_then_gap": "the best dev accuracy, then the lowest GAP",
        "accuracy": "the best dev accuracy",
        "loss": "the lowest dev loss",
        "last": "the final epoch (no selection)",
    }.get(sel["criterion"], sel["criterion"])
    epoch = f"epoch {sel['best_epoch']} " if sel.get("best_epoch") is not None else ""
    floor = (
        f", dev accuracy ≥ {sel['accuracy_floor']:g} × the best"
        if sel.get("accuracy_floor") and sel["criterion"] in ("dto", "accuracy_then_gap")
        else ""
    )
    inlp_info = info.get("inlp") or {}
    what = "the CE encoder at " if "final_dev" in inlp_info else ""
    line = (
        f"  selected: {what}{epoch}(step {sel['best_step']}; {sel['evaluations']} dev evaluations) by {rule}{floor}"
        + (f" (dev {nums} %)" if nums else "")
    )
    if "final_dev" in inlp_info:  # what the run reports: the model after INLP
        fin = inlp_info["final_dev"]
        line += (
            f"\n  after INLP ({inlp_info.get('n_iterations')} rounds, the model scored): dev accuracy "
            f"{fin['accuracy']:.2f}, GAP {fin['gap']:.2f} % (majority-class rate "
            f"{inlp_info['dev_majority_class_rate']:.2f})" + (" — AT CHANCE" if inlp_info.get("at_chance") else "")
        )
    line += f"\n  warning: {sel['note']}" if sel.get("note") else ""
    return line + "".join(f"\n  warning: {w}" for w in warnings)


def _gap_coverage(result) -> str:
    """How many classes the GAP covers, and why the others are left out (the metrics' own warnings, counted by
    reason): empty when it covers every class."""
    n, covered = result.n_classes, len(result.gap_by_class)
    if covered >= n:
        return ""
    reasons: dict[str, int] = {}
    for w in result.warnings:
        if "left out of GAP" in w and w.startswith("class "):
            why = w.split(" has ", 1)[-1].split(":", 1)[0].replace(" in this split", "")
            reasons[why] = reasons.get(why, 0) + 1
    why = "; ".join(f"{k}: {v}" for k, v in reasons.items()) or "no TPR for two groups"
    return f" over {covered} of {n} classes ({n - covered} left out — {why} in the test split)"


def _inlp_final(cfg, info: dict[str, Any], dev: dict[str, Any], labels) -> list[str]:
    """INLP: record the final (guarded) model's dev numbers beside the CE encoder's the selection chose
    (``info.inlp.encoder_dev`` → ``info.inlp.final_dev``, percent), and flag a final model at chance with the rule
    fairmt flags near-constant models by elsewhere (:func:`fairmt.eval.selection.degenerate_choice`: dev accuracy
    below ``selection_accuracy_floor`` — default ``ACCURACY_FLOOR`` — × the best dev accuracy, here the encoder's).
    Returns the warning, if any (``results.json`` ``warnings``; ``info.inlp.at_chance``)."""
    from fairmt.eval.selection import ACCURACY_FLOOR

    inlp_info = info.setdefault("inlp", {})
    encoder = dict((info.get("selection") or {}).get("best_dev") or {})
    final = {k: dev[k] for k in ("accuracy", "gap") if dev.get(k) is not None}
    y = np.asarray(labels, dtype=int)
    chance = 100.0 * float(np.bincount(y).max()) / max(len(y), 1)
    inlp_info.update(encoder_dev=encoder, final_dev=final, dev_majority_class_rate=chance)
    ratio = cfg.get("selection_accuracy_floor") or ACCURACY_FLOOR
    at_chance = bool(encoder.get("accuracy") and final["accuracy"] < ratio * encoder["accuracy"])
    inlp_info["at_chance"] = at_chance
    if not at_chance:
        return []
    return [
        f"after {inlp_info.get('n_iterations', '?')} INLP rounds the model's dev accuracy {final['accuracy']:.2f} "
        f"is below {ratio:g} × the CE encoder's {encoder['accuracy']:.2f} (majority-class rate {chance:.2f}): a "
        "model at chance, whose small GAP is no fairness — fewer inlp.n_iterations, or another baseline"
    ]


def _eo_label(t: dict[str, Any], n_classes: int) -> str:
    if t.get("eo_classes") == "all" and n_classes > 2:
        return f"summed over the {n_classes} classes"
    return "all classes" if t.get("eo_classes") == "all" else "positive class"


def _eo_shown(t: dict[str, Any], n_classes: int) -> str:
    """ΔEO as the run's summary line prints it: per class (the sum ÷ K) under the all-classes convention."""
    if t.get("eo_classes") == "all" and n_classes > 1:
        return f"ΔEO/class ↓ {t['delta_eo'] / n_classes:.2f} (the sum over the {n_classes} classes ÷ {n_classes})"
    return f"ΔEO ↓ {t['delta_eo']:.2f} ({_eo_label(t, n_classes)})"


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Run one classification recipe (see the module docstring); returns and writes ``results.json``. Each caveat
    of the metrics is warned about once per run (:func:`fairmt.eval.classification.caveats_once`)."""
    from fairmt.eval.classification import caveats_once

    with caveats_once():
        return _main(config)


def _main(config: dict[str, Any]) -> dict[str, Any]:
    cfg = resolve_config(config)
    out = str(prepare_output_dir(cfg["output_dir"], config))
    data = load_data(cfg["data"])
    datasets, collator, factory = build_datasets(cfg, data, out)
    outputs, info = _train(cfg, data, datasets, collator, factory, out)
    dev = _score(cfg, data, outputs, "dev")
    test = _score(cfg, data, outputs, "test")
    dev_summary = dev.summary(percent=True)  # percent, as every fairmt report and the per-epoch logs
    dev_summary["loss"] = _dev_loss(outputs["dev"][0], data.splits["dev"].labels)
    warnings_out: list[str] = []
    if cfg["objective"] == "inlp":  # the selection chose the CE encoder; the model scored is the one after INLP
        warnings_out += _inlp_final(cfg, info, dev_summary, data.splits["dev"].labels)
    from fairmt.eval.reporting.formats import CLASSIFICATION_RESULTS

    results = {
        "format": CLASSIFICATION_RESULTS,
        "objective": cfg["objective"],
        "dataset": cfg["data"]["dataset"],
        "model": cfg["model"]["type"],
        "seed": cfg["seed"],
        "selection": cfg["selection"] + " (dev set)",
        "metric_conventions": _conventions(cfg, test, data),
        "dev": dev_summary,
        "test": test.summary(percent=True),
        "test_full": test.to_percent_dict(),
        "labels": data.label_names,
        "groups": data.group_names,
        "group_attributes": data.group_attributes,
        "data_notes": data.notes,
        "info": json.loads(json.dumps(info, default=str)),
        "config": cfg,
    }
    if warnings_out:
        results["warnings"] = warnings_out
    from fairmt.outputs import write_json, writing

    if cfg["save_predictions"]:  # written before results.json: a run whose results exist wrote everything
        logits, hidden = outputs["test"]
        probs = _probs(logits)
        s = data.splits["test"]
        # intersectional groups: each attribute's value too (`fairmt eval classification --group-columns a,b`)
        attrs = data.group_columns("test") if data.group_attributes else {}
        with writing(os.path.join(out, "predictions.jsonl"), what="the test predictions") as fh:
            for i in range(len(s)):
                fh.write(
                    json.dumps(
                        {
                            "label": s.labels[i],
                            "pred": int(logits[i].argmax()),
                            "group": s.groups[i],
                            **{a: v[i] for a, v in attrs.items()},
                            "score": [round(float(v), 6) for v in probs[i]],
                            "hidden": [round(float(v), 5) for v in hidden[i]],
                        }
                    )
                    + "\n"
                )
    write_json(os.path.join(out, "results.json"), results, what="the run's results")
    t = results["test"]
    f1 = f"F1 ↑ {t['f1']:.2f}" if "f1" in t else f"macro-F1 ↑ {t['macro_f1']:.2f}"
    leak = "".join(
        f", {name} ↓ {t[k]:.2f}"
        for k, name in (("leakage_h", "leakage@h"), ("leakage_yhat", "leakage@ŷ"))
        if t.get(k) is not None
    )  # Shen et al.'s Table 1 columns
    print(
        f"fairmt: {cfg['objective']} on {cfg['data']['dataset']} (test): accuracy ↑ {t['accuracy']:.2f}, {f1}, "
        f"GAP ↓ {t['gap']:.2f}{_gap_coverage(test)}, {_eo_shown(t, data.num_labels)}"
        f"{leak} (%)"
        f"\n{_selection_line(results['info'], warnings_out)}"
        f"\n  results: {os.path.join(out, 'results.json')}"
        + (f"\n  model: {info['model_dir']}" if info.get("model_dir") else "")
        + "".join(f"\n{line}" for line in before_after(results))
    )
    return results
