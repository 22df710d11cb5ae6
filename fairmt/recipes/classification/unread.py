"""Which keys of a classification recipe the run reads, and which key takes effect instead of one it does not
(:meth:`fairmt.recipes._schema.Recipe.unread`): every key a recipe or an override sets takes effect, or the recipe is
refused in one line naming the key that does (``recipe key training.temperature is not read: objective_args.temperature
(0.01) sets it for the objective; set that``).

Two kinds (:class:`fairmt.recipes._schema.Unread`):

* **shadowed** — two keys set one value and one wins (:data:`SET_BY_RECIPE`, a key set in both ``training`` and
  ``objective_args``, :data:`POOLING_FROM_MODEL`): always refused;
* **inert** — the recipe's ``objective``, ``model.type``, ``data.dataset`` or ``data.augment`` leaves the key unused
  (:data:`OBJECTIVE_FIELDS`, :data:`OBJECTIVE_KEYS`, :data:`MODEL_KEYS`, :data:`DATA_KEYS`, ``stage2``): refused when
  its value differs from the key's default (its default, or null, asks for nothing).

The tables are what ``tests/test_classification_unread.py`` walks: every entry is refused, naming its winner.
"""

from __future__ import annotations

from typing import Any

from fairmt.recipes._schema import CLASSIFICATION_CONFIGS, Unread, config_default, given

TWO_STAGE = ("cscl_pretrain", "fcl_pretrain")
"""The objectives that train the encoder first, then the head on it (``stage2``)."""
CONTRASTIVE = ("cscl", "cscl_pretrain", "fcl", "fcl_pretrain")
TRAINER_SECTIONS = ("training", "objective_args", "stage2")

SET_BY_RECIPE = {"objective": "objective", "seed": "seed", "output_dir": "output_dir"}
"""Trainer Config fields the runner sets from a top-level key (section key → the key that wins). ``training.output_dir``
is the one exception: the same folder as ``output_dir`` (refused when they differ, by the schema)."""

POOLING_FROM_MODEL = "model.pooling"
"""``objective: sampling`` sets the Config's ``pooling`` from ``model.pooling``: ``training.pooling`` and
``objective_args.pooling`` are not read there."""

OBJECTIVE_FIELDS: dict[str, tuple[str, ...]] = {
    "gamma": ("cscl",),
    "cs_lambda": ("cscl", "cscl_pretrain"),
    "cs_anchor_weighting": ("cscl", "cscl_pretrain"),
    "fcl_alpha": ("fcl",),
    "fcl_beta": ("fcl",),
    "fcl_scl_weight": ("fcl", "fcl_pretrain"),
    "fcl_fcl_weight": ("fcl", "fcl_pretrain"),
    "fcl_variant": ("fcl", "fcl_pretrain"),
    "fcl_group_term": ("fcl", "fcl_pretrain"),
    "group_temperature": ("fcl", "fcl_pretrain"),
    "temperature": CONTRASTIVE,
    "normalize": CONTRASTIVE,
    "views": CONTRASTIVE,
    "eval_objective": CONTRASTIVE,
}
"""FairContrastiveConfig fields (in ``training`` or ``objective_args``) → the recipe objectives whose loss reads them
(:meth:`fairmt.trainers.fair_contrastive.FairContrastiveTrainer.objective_terms`; ``ce`` and ``inlp``'s CE encoder
read none; the head stage of a two-stage objective is CE and gets none of them). The fields of the sampling and
adversarial Configs are refused for the other objectives already (not fields of their Config)."""

OBJECTIVE_KEYS: dict[str, tuple[str, ...]] = {
    "stage1_patience": TWO_STAGE,
    "cache_stage2_features": TWO_STAGE,
    "inlp.n_iterations": ("inlp",),
    "inlp.by_class": ("inlp",),
    "inlp.head": ("inlp",),
}
"""Recipe keys → the objectives that read them."""

_MLP = ("frozen_embedder", "features", "gru_features")
MODEL_KEYS: dict[str, tuple[str, ...]] = {
    "name_or_path": ("frozen_embedder", "finetune"),
    "hidden_dim": (*_MLP, "gru", "embedding_bag"),
    "num_layers": _MLP,
    "embed_batch_size": ("frozen_embedder",),
    "embed_dim": ("gru_features", "gru", "embedding_bag"),
    "pooling": ("frozen_embedder", "finetune"),  # and every model.type with objective sampling (the Config's pooling)
    "normalize": ("frozen_embedder",),
    "head_layers": (*_MLP, "finetune"),
    "gru_hidden": ("gru_features",),
    "embed_epochs": ("gru_features",),
    "embed_learning_rate": ("gru_features",),
}
"""``model.*`` keys → the ``model.type`` values that read them (the others: every type, and ``model.cache_dir``:
where a cache lives asks nothing of the run, and a harness may set it for every recipe)."""

DATA_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "files": ("dataset", ("bios",)),
    "split_seed": ("dataset", ("bios",)),
    "fractions": ("dataset", ("bios",)),
    "root": ("dataset", ("bios_split", "jigsaw", "moji", "hatespeech")),
    "source": ("dataset", ("bios_split",)),
    "language": ("dataset", ("hatespeech",)),
    "attribute": ("dataset", ("hatespeech",)),
    "moji_split_sizes": ("dataset", ("moji",)),
    "moji_n_train": ("dataset", ("moji",)),
    "eda_alpha": ("augment", ("eda",)),
    "eda_num_aug": ("augment", ("eda",)),
    "clm_model": ("augment", ("clm_insert", "clm_substitute")),
    "clm_rate": ("augment", ("clm_insert", "clm_substitute")),
    "backtranslate_model": ("augment", ("backtranslate",)),
    "pivot_lang": ("augment", ("backtranslate",)),
}
"""``data.*`` keys → (the ``data`` key that decides, the values of it that read them)."""


def _show(value: Any) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _only(values: tuple[str, ...]) -> str:
    return ", ".join(values[:-1]) + f" or {values[-1]}" if len(values) > 1 else values[0]


def _asks(value: Any, default: Any) -> bool:
    """Whether an inert key's value asks for something: it differs from the key's default."""
    return value != default


def _field_default(name: str, section_defaults: dict | None = None) -> Any:
    """The default of a Trainer-section key: the family's section default, else the first Config field's."""
    import dataclasses

    if section_defaults and name in section_defaults:
        return section_defaults[name]
    for spec in CLASSIFICATION_CONFIGS.split(","):
        default = config_default(spec.strip(), name)
        if default is not dataclasses.MISSING:
            return default
    return None


def _model_default(model: Any, key: str) -> Any:
    return type(model).model_fields[key].default


def has_stage2(objective: str, inlp_head: str) -> bool:
    """Whether a head stage runs (and reads ``stage2``): two-stage objectives, and INLP with ``inlp.head: finetune``."""
    return objective in TWO_STAGE or (objective == "inlp" and inlp_head == "finetune")


def unread(recipe, config: dict, stage2_defaults: dict) -> list[Unread]:
    """The keys ``config`` sets that the classification run ``recipe`` (resolved) would not read (``stage2_defaults``:
    the family's ``stage2`` defaults, against which an inert ``stage2`` key is compared)."""
    out: list[Unread] = []
    obj = recipe.objective
    sections = {s: given(config, s) for s in TRAINER_SECTIONS}
    for section, keys in sections.items():
        for key, wins in SET_BY_RECIPE.items():
            if key in keys and not (section == "training" and key == "output_dir"):
                value = getattr(recipe, wins)
                what = "decides each stage's loss" if key == "objective" else "sets it for every stage"
                out.append(Unread(f"{section}.{key}", wins, f"{wins} ({_show(value)}) {what}; set that"))
    for key in sections["training"]:
        if key in sections["objective_args"] and key not in SET_BY_RECIPE:
            out.append(
                Unread(
                    f"training.{key}",
                    f"objective_args.{key}",
                    f"objective_args.{key} ({_show(sections['objective_args'][key])}) sets it for the "
                    "objective; set that",
                )
            )
    if obj == "sampling":
        for section in ("training", "objective_args"):
            if "pooling" in sections[section]:
                out.append(
                    Unread(
                        f"{section}.pooling",
                        POOLING_FROM_MODEL,
                        f"objective sampling takes the pooling from {POOLING_FROM_MODEL} "
                        f"({recipe.model.pooling}); set that",
                    )
                )
    for section in ("training", "objective_args"):
        for key, value in sections[section].items():
            readers = OBJECTIVE_FIELDS.get(key)
            if readers and obj not in readers and _asks(value, _field_default(key)):
                out.append(
                    Unread(
                        f"{section}.{key}", "objective", f"objective {obj} does not read it (only {_only(readers)} do)"
                    )
                )
    asked = [k for k, v in sections["stage2"].items() if _asks(v, _field_default(k, stage2_defaults))]
    if asked and not has_stage2(obj, recipe.inlp.head):
        key = asked[0]
        out.append(
            Unread(
                f"stage2.{key}",
                "objective",
                f"objective {obj} has no head stage (stage2 is read by "
                f"{_only(TWO_STAGE)}, and inlp with inlp.head finetune)",
            )
        )
    for dotted, readers in OBJECTIVE_KEYS.items():
        section, _, key = dotted.rpartition(".")
        written = given(config, section) if section else {k: v for k, v in config.items() if v is not None}
        owner = getattr(recipe, section) if section else recipe
        if key in written and obj not in readers and _asks(written[key], _model_default(owner, key)):
            out.append(Unread(dotted, "objective", f"objective {obj} does not read it (only {_only(readers)} do)"))
    mtype = recipe.model.type
    for key, value in given(config, "model").items():
        readers = MODEL_KEYS.get(key)
        if (
            readers
            and mtype not in readers
            and not (key == "pooling" and obj == "sampling")
            and _asks(value, _model_default(recipe.model, key))
        ):
            out.append(
                Unread(f"model.{key}", "model.type", f"model.type {mtype} does not read it (only {_only(readers)} do)")
            )
    for key, written in given(config, "data").items():
        if key in DATA_KEYS and _asks(written, _model_default(recipe.data, key)):
            decider, readers = DATA_KEYS[key]
            value = getattr(recipe.data, decider)
            if value not in readers:
                out.append(
                    Unread(
                        f"data.{key}",
                        f"data.{decider}",
                        f"data.{decider} {_show(value)} does not read it (only {_only(readers)} do)",
                    )
                )
    target = given(config, "balance").get("target")
    if target is not None and recipe.balance.method is None and _asks(target, _model_default(recipe.balance, "target")):
        out.append(
            Unread(
                "balance.target",
                "balance.method",
                "balance.method is null (no balancing); set it to reweight, resample or downsample",
            )
        )
    return out


def typed_key(key: str, config: dict) -> str:
    """A resolved key (``stages.<stage>.<field>``) as a user types it: ``stage2.<field>`` for the head stage, else
    ``objective_args.<field>`` where the recipe sets it there or the field is the objective's own (not a
    TrainingArguments one), else ``training.<field>``."""
    parts = key.split(".")
    if len(parts) < 3 or parts[0] != "stages":
        return key
    stage, field = parts[1], ".".join(parts[2:])
    if field in ("seed", "objective", "output_dir"):  # set for every stage by the top-level key (SHADOWED)
        return field
    if stage == "stage2":
        return f"stage2.{field}"
    if field in given(config, "objective_args") or field in OBJECTIVE_FIELDS:
        return f"objective_args.{field}"
    import dataclasses

    from transformers import TrainingArguments

    if field in {f.name for f in dataclasses.fields(TrainingArguments)}:
        return f"training.{field}"
    return f"objective_args.{field}"
