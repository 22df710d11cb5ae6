"""Recipe entry point for fairness-driven sampling as published (Martin & Ogbuokiri): ``fairmt train
sampling/celeba_resnet50.yaml`` (``method: sampling``).

One run, five stages, each saved in the run's folder; a rerun of the same recipe resumes at the first unfinished
stage (a training stage from its last complete checkpoint):

1. ``stage1/`` — SimCLR pre-training (two kornia views, NT-Xent over all in-batch candidates, projection head to
   128-d; τ 0.5, batch 256, 30 epochs) → ``stage1/model`` and ``stage1/embeddings.npz`` (the normalised projection
   ``z`` and backbone features ``h`` of every image, plus the probe targets ``y_*`` and protected groups ``g_*``);
2. ``clusters/`` — K-means **once** on the stage-1 ``z`` of the whole set (``clusters.n_clusters`` = 4, seed
   recorded), ``p(c)`` over the full set;
3. ``stage2/`` — ``objective: sampling_pretrain`` (the Config's name; ``sampling`` is its older recipe spelling):
   Algorithm 1 (:class:`fairmt.trainers.sampling.FairnessSamplingTrainer`); ``objective: simclr``: the
   random-sampling baseline, the same stage with plain SimCLR.
   Both start from the stage-1 model (``stage2.init: stage1``; ``scratch`` for a fresh one) for the same number of
   epochs, so the two recipes of a pair differ only in the sampler;
4. the embeddings of the stage-2 model (``stage2/embeddings.npz``);
5. evaluation of both stages → ``results.json`` / ``results.md``: the three latent-subgroup measures (K-means with
   K = 4 on each stage's ``z``; stage 1's are the fitted clusters, the paper's "baseline" column) and a linear probe
   per target (:func:`fairmt.eval.linear_probe.linear_probe`: logistic regression, seeded 80/20 split, accuracy,
   positive-class F1, AUC-ROC, and GAP/ΔEO of the probe over each protected attribute), plus
   ``probe_<stage>_<target>.jsonl`` test predictions readable by ``fairmt eval classification``.

``stage1_from: DIR`` takes stages 1–2 from another run's folder (the fair run and its baseline then share one
SimCLR pre-training). Data (``data.dataset``): ``celeba`` (local official folder or ``data.source: hub``),
``chexpert`` (local official folder) or ``synthetic`` (coloured shapes, for tests). ``--dry-run`` prints the recipe,
the merged config and the full resolved training arguments of both stages.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError
from fairmt.recipes.sampling.schema import (  # noqa: F401  (their old home: fairmt.recipes.sampling.runner.X)
    DEFAULT_PROTECTED,
    DEFAULT_TARGETS,
    FIXED_ARGS,
    RENAMED_OBJECTIVES,
    SAMPLING_ONLY,
    STAGE_KEYS,
)
from fairmt.recipes.sampling.schema import check_stages as validate  # noqa: F401  (its old name and home)

# Two baselines, named apart: the paper's Table 1 "Baseline" is the phase-1 SimCLR model (its values are Table 3's
# phase-1 cluster sizes); the `_simclr` recipe's stage 2 (SimCLR continued for as many epochs as the fair stage 2) is
# a fairer control fairmt adds.
BASELINE_COLUMN = "phase-1 baseline (paper's Baseline)"
STAGE2_COLUMN = {"sampling_pretrain": "stage 2 (fairness-driven)", "simclr": "stage 2 (SimCLR control, fairmt)"}


def resolve_config(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe resolved by its schema (:func:`fairmt.recipes._schema.resolve_recipe`: every default, the run
    folder, the data set's targets and protected attributes; an unknown value names its key), as a dict, plus the full
    training arguments of both stages under ``resolved`` (what ``--dry-run`` prints). The runner reads nothing else."""
    from fairmt.recipes._schema import resolve_recipe
    from fairmt.recipes.sampling.schema import SamplingRecipe

    if config.get("method", "sampling") != "sampling":
        raise FairmtError(f"recipe method must be 'sampling' for this entry point, got {config.get('method')!r}")
    resolved = resolve_recipe({**{k: v for k, v in config.items() if k != "resolved"}, "method": "sampling"})
    if not isinstance(resolved, SamplingRecipe):  # the schema the family registers (fairmt.recipes._registry)
        raise FairmtError(f"the sampling family resolved to {type(resolved).__name__}, not SamplingRecipe")
    cfg = resolved.model_dump(exclude={"method", "recipe_path", "overwrite"})
    cfg["resolved"] = {s: _stage_args(cfg, s, "/".join([cfg["output_dir"], s])).to_dict() for s in ("stage1", "stage2")}
    return cfg


def _stage_args(cfg: dict[str, Any], stage: str, out: str):
    from fairmt.trainers.sampling import FairnessSamplingConfig

    objective = "simclr" if stage == "stage1" else cfg["objective"]  # the recipe's objective is the Config's
    extra = {k: v for k, v in cfg[stage].items() if k not in STAGE_KEYS.get(stage, set())}
    names = {f.name for f in fields(FairnessSamplingConfig)}
    base = dict(
        output_dir=out,
        objective=objective,
        seed=cfg["seed"],
        report_to=[],
        use_cpu=not _cuda(),
        disable_tqdm=True,
        save_only_model=False,
        n_clusters=cfg["clusters"]["n_clusters"],
        kmeans_n_init=cfg["clusters"]["n_init"],
    )
    base.update(cfg["training"])
    base.update(extra)
    if objective == "simclr":  # the sampling options do not apply to the SimCLR stages
        base = {k: v for k, v in base.items() if k not in SAMPLING_ONLY}
    return FairnessSamplingConfig(**{k: v for k, v in base.items() if k in names})


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


# ---------------------------------------------------------------------------------------------- run folder
def fingerprint(cfg: dict[str, Any]) -> str:
    """What the saved stages depend on: everything but the probe settings and where the run is written."""
    keep = {k: v for k, v in cfg.items() if k not in ("probe", "output_dir", "resolved")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _older_fingerprints(cfg: dict[str, Any]) -> set[str]:
    """The fingerprints the same recipe had when its objective was spelled the older way (:data:`RENAMED_OBJECTIVES`):
    a run folder begun before the rename resumes."""
    return {
        fingerprint({**cfg, "objective": old}) for old, new in RENAMED_OBJECTIVES.items() if cfg.get("objective") == new
    }


def prepare_run_dir(cfg: dict[str, Any], overwrite: bool, config: dict[str, Any] | None = None) -> Path:
    """Take the run folder (:func:`fairmt.recipes._output.prepare_output_dir`'s rule: locked, with its manifest); an
    earlier run of the *same* recipe is resumed, another one refused (or, with ``--overwrite``, what fairmt wrote
    there removed, and nothing else)."""
    from fairmt.outputs import claim_run_dir, run_files
    from fairmt.recipes._output import run_inputs

    out = Path(cfg["output_dir"])
    marker = out / "run.json"
    fp = fingerprint(cfg)
    main_process = os.environ.get("RANK", "0") == "0"
    replace = False
    if main_process and run_files(out):
        try:
            earlier = json.loads(marker.read_text(encoding="utf-8")).get("fingerprint")
        except (OSError, ValueError):
            earlier = None
        if earlier != fp and earlier not in _older_fingerprints(cfg):
            if not overwrite:
                what = "another recipe's run" if earlier else "files of something else"
                raise FairmtError(
                    f"output folder {out} holds {what}; choose another output_dir, or pass --overwrite "
                    "to replace it (a rerun of the same recipe resumes instead)"
                )
            replace = True
    if main_process:
        claim_run_dir(
            out,
            "output folder",
            overwrite=replace,
            resumable=True,
            inputs=run_inputs(config or {}),
            flag="output_dir",
            markers=("run.json",),
        )
        _write_json(marker, {"fingerprint": fp, "config": {k: v for k, v in cfg.items() if k != "resolved"}})
    else:
        out.mkdir(parents=True, exist_ok=True)
    return out


def _write_json(path: Path, data: Any) -> None:
    from fairmt.eval.report import write_text_atomic

    write_text_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


def _done(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / "done.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------- data + model
def load_data(dcfg: dict[str, Any]):
    """The :class:`~fairmt.data.images.ImageData` the recipe names."""
    from fairmt.data import images

    if dcfg["dataset"] == "celeba":
        return images.read_celeba(
            dcfg["root"],
            source=dcfg["source"],
            targets=dcfg["targets"],
            protected=dcfg["protected"],
            splits=dcfg["splits"],
            max_samples=dcfg["max_samples"],
            hub_id=dcfg["hub_id"],
        )
    if dcfg["dataset"] == "chexpert":
        return images.read_chexpert(
            dcfg["root"],
            findings=dcfg["targets"],
            uncertain=dcfg["uncertain"],
            protected=dcfg["protected"],
            splits=dcfg["splits"],
            frontal_only=dcfg["frontal_only"],
            age_threshold=dcfg["age_threshold"],
            max_samples=dcfg["max_samples"],
        )
    data = images.synthetic_shapes(dcfg["n"], dcfg["minority_fraction"], dcfg["image_size"], seed=0)
    bad = [t for t in dcfg["targets"] if t not in data.targets] + [g for g in dcfg["protected"] if g not in data.groups]
    if bad:
        raise FairmtError(f"synthetic data has target 'shape' and protected attribute 'colour', not {bad}")
    return data


def data_fingerprint(data) -> dict[str, Any]:
    """What identifies the images a stage was trained and embedded on, recorded in its ``done.json`` and checked when
    ``stage1_from`` reuses it: the data set's name, image count and a SHA-256 over every image file's name and size
    (a local folder), the Hub copy's dataset fingerprint, or the synthetic pixels, plus the probe targets and
    protected groups (two sets of the same size with other files or other labels differ)."""
    h = hashlib.sha256()
    h.update(f"{data.name}\n{len(data)}\n".encode())
    ds = data.dataset
    columns = getattr(ds, "column_names", None) or []
    if "path" in columns:
        for path in ds["path"]:
            try:
                size = os.stat(path).st_size
            except OSError:
                size = -1
            h.update(f"{Path(path).name}\t{size}\n".encode())
        kind = "file names and sizes"
    elif getattr(ds, "_fingerprint", None):
        h.update(str(ds._fingerprint).encode())
        kind = "dataset fingerprint"
    else:
        for row in ds:
            h.update(np.ascontiguousarray(row["pixels"]).tobytes())
        kind = "pixels"
    for prefix, arrays in (("y", data.targets), ("g", data.groups)):
        for name in sorted(arrays):
            h.update(f"{prefix}:{name}\n".encode())
            h.update(np.ascontiguousarray(arrays[name], dtype=np.int64).tobytes())
    return {
        "name": data.name,
        "n": len(data),
        "sha256": h.hexdigest(),
        "over": f"{kind}, targets, groups",
        "source": data.source,
    }


def check_stage1_data(base: Path, info: dict[str, Any] | None, current: dict[str, Any], reused: bool) -> str | None:
    """The stage-1 run at ``base`` was made on this data (its recorded fingerprint), or one line; a stage 1 of an
    older fairmt, with none recorded, gives a note instead."""
    recorded = (info or {}).get("data_fingerprint")
    if not recorded:
        return (
            f"{base / 'stage1'} records no data fingerprint (made by an older fairmt): it cannot be checked to "
            "be this data"
        )
    if recorded.get("sha256") != current["sha256"]:
        where = f"stage1_from: {base}" if reused else f"{base / 'stage1'}"
        raise FairmtError(
            f"{where} was trained on other data ({recorded.get('name')}, {recorded.get('n')} images "
            f"from {recorded.get('source') or '?'}; this run: {current['name']}, {current['n']} images "
            f"from {current['source'] or '?'}; {current['over']} differ): point stage1_from at a run on "
            "this data, or leave it out to train stage 1"
        )
    return None


def check_batches(cfg: dict[str, Any], n: int, stages: list[str]) -> None:
    """Every stage to train has at least one batch: with ``dataloader_drop_last`` (the recipes' default: SimCLR's
    in-batch negatives want full batches) a batch larger than the data set leaves none, and the Trainer would fail
    with a message about max_steps."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    for stage in stages:
        args = _stage_args(cfg, stage, "/".join([cfg["output_dir"], stage]))
        batch = args.per_device_train_batch_size * world
        what = "data.max_samples" if cfg["data"].get("max_samples") else f"data.dataset {cfg['data']['dataset']}"
        if n < 2:
            raise FairmtError(
                f"{stage}: the data set ({what}) has {n} image(s): SimCLR contrasts the images of a "
                "batch, it needs at least 2"
            )
        if args.dataloader_drop_last and n < batch:
            each = f" ({args.per_device_train_batch_size} per device × {world} processes)" if world > 1 else ""
            raise FairmtError(
                f"{stage}: batch size {batch}{each} is larger than the {n} images of the data set "
                f"({what}); with dataloader_drop_last: true no batch is left to train on: set "
                f"{stage}.per_device_train_batch_size to at most {n // world} (or raise "
                "data.max_samples)"
            )


def _save_embeddings(path: Path, z: np.ndarray, h: np.ndarray, data) -> None:
    arrays: dict[str, Any] = {"projection": z, "backbone": h}
    arrays.update({f"y_{k}": v for k, v in data.targets.items()})
    arrays.update({f"g_{k}": v for k, v in data.groups.items()})
    from fairmt.outputs import writing

    with writing(path, what="the stage's embeddings", binary=True) as fh:
        np.savez(fh, **arrays)


def _train_stage(cfg, stage: str, model, data, collator, augmentation, run: Path, fingerprint=None, **trainer_kwargs):
    """Train one stage (resuming from its last complete checkpoint), save the model, embed every image."""
    from fairmt.trainers.faults import last_complete_checkpoint
    from fairmt.trainers.sampling import FairnessSamplingTrainer

    folder = run / stage
    args = _stage_args(cfg, stage, str(folder))
    trainer = FairnessSamplingTrainer(
        model=model,
        args=args,
        train_dataset=data.dataset,
        data_collator=collator,
        augmentation=augmentation,
        **trainer_kwargs,
    )
    resume = last_complete_checkpoint(folder) is not None
    if resume:
        print(f"fairmt: {stage}: resuming from {last_complete_checkpoint(folder)}")
    trainer.train(resume_from_checkpoint=True if resume else None)
    if trainer.is_world_process_zero():
        from fairmt.outputs import save_folder

        save_folder(
            folder / "model", trainer.accelerator.unwrap_model(trainer.model).save_pretrained, what=f"the {stage} model"
        )
    z, h = trainer.embed_dataset(with_features=True)
    log = [e for e in trainer.state.log_history if "loss" in e]
    info = {
        "objective": args.objective,
        "steps": trainer.state.global_step,
        "first_log": log[:1],
        "last_log": log[-1:],
        "cluster_history": trainer.cluster_history,
        "data_fingerprint": fingerprint,
    }
    if trainer.is_world_process_zero():
        _save_embeddings(folder / "embeddings.npz", z, h, data)
        _write_json(folder / "done.json", info)
    trainer.accelerator.wait_for_everyone()  # the other processes read what the main one wrote
    return trainer.accelerator.unwrap_model(trainer.model), info


def _load_embeddings(folder: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(folder / "embeddings.npz") as f:
            return {k: f[k] for k in f.files}
    except (OSError, ValueError) as err:
        raise FairmtError(
            f"cannot read {folder / 'embeddings.npz'} ({err}); remove {folder}/done.json to redo the stage"
        ) from None


# ---------------------------------------------------------------------------------------------- evaluation
def evaluate_stage(
    cfg, data, emb: dict[str, np.ndarray], cluster_labels: np.ndarray | None, run: Path, stage: str
) -> dict[str, Any]:
    """The latent-subgroup measures and a linear probe per target for one stage's embeddings."""
    from fairmt.eval.classification import latent_subgroup_metrics
    from fairmt.eval.linear_probe import group_fairness, linear_probe

    p, k = cfg["probe"], cfg["clusters"]
    sub = latent_subgroup_metrics(
        emb["projection"], cluster_labels=cluster_labels, n_clusters=k["n_clusters"], seed=k["seed"]
    )
    features = emb[p["features"]]
    probes = {}
    first_group = next(iter(data.groups), None)
    for target in cfg["data"]["targets"]:
        res, pred = linear_probe(
            features,
            data.targets[target],
            target=target,
            groups=data.groups.get(first_group),
            test_fraction=p["test_fraction"],
            seed=p["seed"],
            standardize=p["standardize"],
            C=p["C"],
            max_iter=p["max_iter"],
            n_clusters=None,
            return_predictions=True,
            optimizer=p["optimizer"],
            learning_rate=p["learning_rate"],
            epochs=p["epochs"],
        )
        out = res.to_dict()
        classes = sorted(set(pred["label"].tolist()) | set(pred["pred"].tolist()))
        out["fairness_by_attribute"] = {  # every protected attribute, for evaluation only
            g: group_fairness(pred["label"], pred["pred"], data.groups[g][pred["index"]], classes, p["seed"])
            for g in data.groups
        }
        probes[target] = out
        from fairmt.outputs import writing

        with writing(run / f"probe_{stage}_{target.replace(' ', '_')}.jsonl", what="the probe's predictions") as fh:
            for i in range(len(pred["label"])):
                row = {
                    "label": int(pred["label"][i]),
                    "pred": int(pred["pred"][i]),
                    "group": int(pred["group"][i]) if "group" in pred else 0,
                    "logits": [round(float(np.log(max(q, 1e-12))), 6) for q in pred["proba"][i]],
                }
                fh.write(json.dumps(row) + "\n")
    return {"subgroups": sub.to_dict(), "probe": probes}


def _summary(results: dict[str, Any]) -> dict[str, Any]:
    """The stage-2 numbers a sweep optimises (``fairmt sweep --objective dominance:min``): ``dominance``, ``entropy``,
    ``separation`` and ``probe.<target>.{accuracy, f1, auc_roc, gap, delta_eo}`` (GAP/ΔEO over the first protected
    attribute)."""
    s2 = results["stages"]["stage2"]
    probe = {}
    for target, r in s2["probe"].items():
        fair = r.get("fairness") or {}
        probe[target] = {
            "accuracy": r["accuracy"],
            "f1": r["f1"],
            "auc_roc": r["auc_roc"],
            "gap": fair.get("gap"),
            "delta_eo": fair.get("delta_eo"),
        }
    sub = s2["subgroups"]
    return {
        "dominance": sub["cluster_dominance_ratio"],
        "entropy": sub["representation_entropy"],
        "separation": sub["subgroup_separation_distance"],
        "probe": probe,
    }


def _markdown(results: dict[str, Any]) -> str:
    from fairmt.eval.report import markdown_table

    s1, s2 = results["stages"]["stage1"]["subgroups"], results["stages"]["stage2"]["subgroups"]
    stage2 = STAGE2_COLUMN[RENAMED_OBJECTIVES.get(results["objective"], results["objective"])]  # older results too
    rows = []
    for key, name in (
        ("cluster_dominance_ratio", "Cluster Dominance Ratio ↓"),
        ("representation_entropy", "Representation Entropy ↑"),
        ("subgroup_separation_distance", "Subgroup Separation Distance ↑"),
    ):
        a, b = s1[key], s2[key]
        rows.append({"measure": name, BASELINE_COLUMN: a, stage2: b, "change (%)": 100.0 * (b - a) / a if a else None})
    cols = ["measure", BASELINE_COLUMN, stage2, "change (%)"]
    text = f"# {results['dataset']}: {results['objective']} (seed {results['seed']})\n\n" + markdown_table(
        rows, cols, 4
    )
    prow = []
    for target in results["stages"]["stage1"]["probe"]:
        p1, p2 = results["stages"]["stage1"]["probe"][target], results["stages"]["stage2"]["probe"][target]
        for metric, label in (("accuracy", "Accuracy ↑"), ("f1", "F1-Score ↑"), ("auc_roc", "AUC-ROC ↑")):
            a, b = p1[metric], p2[metric]
            prow.append({"target": target, "metric": label, BASELINE_COLUMN: a, stage2: b, "Δ": b - a})
        # the probe's group fairness over every protected attribute (GAP and ΔEO of its test predictions)
        for attr in p1.get("fairness_by_attribute") or {}:
            f1, f2 = p1["fairness_by_attribute"][attr], (p2.get("fairness_by_attribute") or {}).get(attr)
            if not f1 or not f2:
                continue
            for metric, label in (("gap", "GAP ↓"), ("delta_eo", "ΔEO ↓")):
                a, b = f1.get(metric), f2.get(metric)
                prow.append(
                    {
                        "target": target,
                        "metric": f"{label} ({attr})",
                        BASELINE_COLUMN: a,
                        stage2: b,
                        "Δ": b - a if a is not None and b is not None else None,
                    }
                )
    text += "\n" + markdown_table(prow, ["target", "metric", BASELINE_COLUMN, stage2, "Δ"], 4)
    text += (
        "\nScores as fractions (4 decimals, as the paper's tables); ↑ higher is better, ↓ lower is better; GAP "
        "and ΔEO of each probe's test predictions per protected attribute.\n"
    )
    sig = next(iter(results["stages"]["stage1"]["probe"].values()))["signature"]
    return text + f"\n{s1['signature']}\n{sig}\n"


# ---------------------------------------------------------------------------------------------- main
def main(config: dict[str, Any]) -> dict[str, Any]:
    """Run (or resume) one recipe; returns and writes ``results.json``."""
    import torch
    from accelerate import PartialState

    from fairmt.data.images import ImageCollator, SimCLRAugmentation, processor_stats
    from fairmt.data.sampling import LatentSubgroups, fit_latent_subgroups
    from fairmt.models.vision import SimCLRModel, build_simclr_model, load_image_processor

    cfg = resolve_config(config)
    run = prepare_run_dir(cfg, bool(config.get("overwrite")), config)
    data = load_data(cfg["data"])
    m = cfg["model"]
    processor = load_image_processor(m["backbone"])
    collator = ImageCollator(processor)
    augmentation = SimCLRAugmentation(*processor_stats(processor), **cfg["augment"])
    print(f"fairmt: {data.name}: {len(data)} images from {data.source}" + "".join(f"; {n}" for n in data.notes))

    def fresh_model():
        torch.manual_seed(cfg["seed"])
        return build_simclr_model(m["backbone"], m["pretrained"], m["projection_dim"], m["projection_hidden_dim"])

    base = Path(cfg["stage1_from"]) if cfg["stage1_from"] else run
    data_fp = data_fingerprint(data)
    # the batch against the data, before any stage trains
    check_batches(
        cfg, len(data), [s for s in ("stage1", "stage2") if _done((base if s == "stage1" else run) / s) is None]
    )
    # 1. SimCLR pre-training
    info1 = _done(base / "stage1")
    if info1 is None:
        if cfg["stage1_from"]:
            raise FairmtError(f"stage1_from: {base} has no finished stage 1 (stage1/done.json)")
        _train_stage(cfg, "stage1", fresh_model(), data, collator, augmentation, run, fingerprint=data_fp)
    else:
        note = check_stage1_data(base, info1, data_fp, bool(cfg["stage1_from"]))
        if note:
            data.notes.append(note)
            print(f"fairmt: note: {note}")
    emb1 = _load_embeddings(base / "stage1")
    if len(emb1["projection"]) != len(data):
        raise FairmtError(f"{base / 'stage1'} embedded {len(emb1['projection'])} images, this data has {len(data)}")
    # 2. latent subgroups, fitted once on the stage-1 embeddings of the whole set
    k, state = cfg["clusters"], PartialState()
    where = base if (base / "clusters" / "clusters.json").is_file() else run
    if where == run and not (run / "clusters" / "clusters.json").is_file():
        if state.is_main_process:
            fit_latent_subgroups(
                emb1["projection"], k["n_clusters"], k["seed"], k["n_init"], space="stage-1 normalised projection"
            ).save(run / "clusters")
        state.wait_for_everyone()
    subgroups = LatentSubgroups.load(where / "clusters")
    print(
        f"fairmt: latent subgroups (K={subgroups.n_clusters}, seed {subgroups.seed}): sizes {subgroups.sizes.tolist()}"
    )
    # 3-4. stage 2 (fair sampling, or SimCLR for the baseline) and its embeddings
    info2 = _done(run / "stage2")
    if info2 is None:
        model = (
            SimCLRModel.from_pretrained(base / "stage1" / "model")
            if cfg["stage2"]["init"] == "stage1"
            else fresh_model()
        )
        extra = (
            {}
            if cfg["objective"] == "simclr"
            else {"latent_subgroups": subgroups, "index_embeddings": emb1["projection"]}
        )
        _, info2 = _train_stage(cfg, "stage2", model, data, collator, augmentation, run, fingerprint=data_fp, **extra)
    if not state.is_main_process:  # evaluation and reports: the main process only
        return {}
    emb2 = _load_embeddings(run / "stage2")
    # 5. evaluation
    from fairmt.eval.reporting.formats import SAMPLING_RESULTS

    results = {
        "format": SAMPLING_RESULTS,
        "method": "sampling",
        "objective": cfg["objective"],
        "dataset": data.name,
        "source": data.source,
        "baselines": {
            "stage1": "phase-1 baseline: the paper's Table 1 'Baseline' (the SimCLR model the clusters are fitted on)",
            "stage2": STAGE2_COLUMN[cfg["objective"]],
        },
        "n": len(data),
        "seed": cfg["seed"],
        "data_notes": data.notes,
        "clusters": subgroups.summary(),
        "stages": {
            "stage1": evaluate_stage(cfg, data, emb1, subgroups.labels, run, "stage1"),
            "stage2": evaluate_stage(cfg, data, emb2, None, run, "stage2"),
        },
        "stage_info": {"stage1": _done(base / "stage1"), "stage2": info2},
        "config": {k2: v for k2, v in cfg.items() if k2 != "resolved"},
    }
    results = {**_summary(results), **results}
    results = json.loads(json.dumps(results, default=str))
    _write_json(run / "results.json", results)
    from fairmt.eval.report import write_text_atomic

    write_text_atomic(run / "results.md", _markdown(results))
    print(f"fairmt: {cfg['objective']} on {data.name}: results: {run / 'results.json'}")
    for line in before_after(results):
        print(line)
    return results


def before_after(results: dict[str, Any]) -> list[str]:
    """The run's before → after table (:func:`fairmt.eval.report.before_after_lines`, every recipe's printer):
    stage 1 (the SimCLR model the clusters are fitted on) → stage 2, on the latent-subgroup measures and each
    probe's accuracy and GAP (fractions, as results.json)."""
    from fairmt.eval.report import before_after_lines

    s1, s2 = results["stages"]["stage1"], results["stages"]["stage2"]
    rows = [
        (label, s1["subgroups"].get(key), s2["subgroups"].get(key), ".4f", better)
        for label, key, better in (
            ("cluster dominance ratio ↓", "cluster_dominance_ratio", "lower"),
            ("representation entropy (bits) ↑", "representation_entropy", "higher"),
            ("subgroup separation ↑", "subgroup_separation_distance", "higher"),
        )
    ]
    for target, p1 in s1.get("probe", {}).items():
        p2 = s2.get("probe", {}).get(target, {})
        rows += [
            (f"probe {target}: accuracy ↑", p1.get("accuracy"), p2.get("accuracy"), ".3f", "higher"),
            (
                f"probe {target}: GAP ↓",
                (p1.get("fairness") or {}).get("gap"),
                (p2.get("fairness") or {}).get("gap"),
                ".3f",
                "lower",
            ),
        ]
    return before_after_lines(f"what {results.get('objective')} changed", rows, "stage 1 (SimCLR)", "stage 2")
