"""Paper cards: what a recipe that reproduces a paper takes from it, and every place where it departs.

A card is a YAML file in the ``cards/`` folder beside its family's recipes (``recipes/classification/cards/
cscl_bios_bert.yaml`` for ``recipes/classification/cscl_bios_bert.yaml``), one format for every family::

    recipe: classification/cscl_bios_bert
    paper: Chi et al. (2022), Conditional Supervised Contrastive Learning for Fair Text Classification
    settings:                      # what the paper (or its released code, "release: FILE") states
      - key: stages.stage1.temperature        # a dotted path in the resolved recipe
        paper: 2.0
        source: "App. B.2: 'τ ∈ {0.1, 0.5, 1, 2}'; release: run_biasbios.sh"
    departures:                    # every resolved value that is not the paper's
      - key: model.max_length
        paper: 192                 # omitted: the setting's value; null: the paper is silent
        recipe: 128
        kind: scale                # paper-silent choice | interpretation | released-code | scale | fairmt extension
        reason: "..."
    facts:                         # what lives in code, not in a recipe key: each tied to the test that pins it
      - fact: representation entropy's better direction
        paper: "↓ (Table 1)"       # null: the paper is silent
        fairmt: "↑ (higher = more uniform cluster sizes)"
        kind: interpretation       # a kind as above, or "paper" when fairmt does what the paper says
        reason: "..."
        test: tests/recipes/test_card_facts.py::test_entropy_direction

Why a file beside the recipe and not a ``paper:`` key inside it: a recipe is what a user copies and edits, and a
copy that changes a value is no longer the paper's recipe, so the claim must not travel with it; the card is long
(quoted sources) and would bury the recipe's few keys; and a card is read by the checks and the docs, never by a
runner, so no runner has to know to ignore it.

Keys are paths in the *resolved* recipe (:func:`resolved_values`): the schema's typed object with every default filled
in (:func:`fairmt.recipes._schema.resolve_recipe`), plus what the family's runner resolves from it
(``stages.<stage>.<field>``: the Trainer Config each stage gets in the classification family). A value the recipe
leaves to a default is compared like a value it writes, so a silent default cannot hide.

:func:`check_card` lists every problem: a setting whose resolved value differs and no departure declares it, a
departure whose value no longer differs (or whose ``recipe`` value is not the resolved one), an unknown key or kind.
A fact names its test (``tests/FILE.py::FUNCTION``), which must exist: the code it states is checked there, so the
card fails when the code changes. ``tests/recipes/test_paper_cards.py`` runs it on every card, and fails on a recipe that
claims a paper (:func:`claims_paper`)
without one (:data:`CARDS_PENDING` names those whose card comes with their family's own issue).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError

KINDS = ("paper-silent choice", "interpretation", "released-code", "scale", "fairmt extension")
"""What a departure is: the paper gives no value (``paper-silent choice``); the paper is ambiguous and this is one
reading (``interpretation``); the authors' released code does it otherwise than the paper says (``released-code``);
the recipe runs smaller or on other hardware (``scale``); fairmt adds something the paper does not have
(``fairmt extension``)."""

CARDS_PENDING: frozenset[str] = frozenset()
"""Recipes that claim a paper and have no card yet (each to get one; the test fails when one gains its card, so
that the name leaves this list)."""

_CLAIM = re.compile(
    r"\bas [A-Z][\w&.\- ]+ (?:\(\d{4}\) )?ran it|\b(?:Table|Tab\.|Fig\.|Figure|App\.|Eq\.) ?\d|"
    r"\bet al\.|\b[A-Z][a-z]+ & [A-Z][a-z]+|\bas published\b|[Pp]aper hyperparameters|"
    r"the authors' released"
)
"""A recipe claims a paper when its leading comment names its authors (``et al.``, ``A & B``), one of its tables,
figures or equations, its published settings or its authors' released code."""


def card_path(recipe_path: str | Path) -> Path:
    """Where the card of ``recipe_path`` lives: ``cards/<name>.yaml`` beside the recipe (a recipe's alias,
    :data:`fairmt.recipes.RECIPE_ALIASES`, loads the recipe's own file, hence its card)."""
    p = Path(recipe_path).resolve()
    return p.parent / "cards" / f"{p.stem}.yaml"


def claims_paper(recipe_path: str | Path) -> bool:
    """Whether the recipe's leading comment says it follows a paper (names its authors, a table, figure or eq.)."""
    lines = []
    for line in Path(recipe_path).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return bool(_CLAIM.search(" ".join(lines)))


@dataclass
class Row:
    """One setting of a card with the recipe's resolved value (``departure``: its declared reason, if any)."""

    key: str
    paper: Any
    recipe: Any
    source: str | None = None
    kind: str | None = None
    reason: str | None = None
    shared: str | None = None
    """The family file the entry comes from (``include:``), None for the card's own entries."""
    typed: str | None = None
    """The key as a user types it in a recipe or an override (:meth:`fairmt.recipes._schema.Recipe.typed_key`)."""


@dataclass
class Fact:
    """A card entry about code rather than a recipe key (which vector is contrasted, a sum or a mean, a metric's
    direction), with the test that checks it."""

    fact: str
    paper: Any
    fairmt: str
    kind: str
    reason: str
    test: str


FACT_KINDS = ("paper", *KINDS)
"""A fact's kind: ``paper`` (fairmt does what the paper says) or a departure's kind (:data:`KINDS`)."""


@dataclass
class Card:
    """A paper card checked against its resolved recipe."""

    recipe: str
    paper: str
    settings: list[Row] = field(default_factory=list)
    departures: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    exhaustive: bool = False
    classified: dict[str, str] = field(default_factory=dict)
    """Exhaustive cards: every key of the resolved recipe → how it is classified (``paper``, a departure's kind,
    ``inert``, ``bookkeeping``, ``library default``)."""
    inert: dict[str, str] = field(default_factory=dict)
    """Key → why it is inert (another setting makes it unused): shown as inert, never as matching."""
    copy_of: str | None = None
    """The built-in recipe whose card this is, when the checked recipe is a copy of it (a file elsewhere)."""
    overridden: list[str] = field(default_factory=list)
    """One line per resolved setting that an override moved off the recipe's file (``KEY: A → B [what the card
    says]``)."""
    moved: list[Moved] = field(default_factory=list)
    """The same settings as :class:`Moved` records (:func:`card_of_config`)."""

    def counts(self) -> dict[str, int]:
        """How many resolved settings the card classifies of each kind (exhaustive cards)."""
        out: dict[str, int] = {}
        for what in self.classified.values():
            out[what] = out.get(what, 0) + 1
        return dict(sorted(out.items()))

    def to_json(self) -> dict[str, Any]:
        """``{"recipe", "paper", "settings": [{"key", "paper", "recipe", "source"}], "departures": [{"key",
        "paper", "recipe", "kind", "reason"}], "facts": [{"fact", "paper", "fairmt", "kind", "reason", "test"}]}``
        (``recipe``: the resolved value)."""
        return {
            "recipe": self.recipe,
            "paper": self.paper,
            "settings": [
                {"key": r.key, "paper": r.paper, "recipe": r.recipe, "source": r.source} for r in self.settings
            ],
            "departures": [
                {"key": r.key, "paper": r.paper, "recipe": r.recipe, "kind": r.kind, "reason": r.reason}
                for r in self.departures
            ],
            "facts": [
                {
                    "fact": f.fact,
                    "paper": f.paper,
                    "fairmt": f.fairmt,
                    "kind": f.kind,
                    "reason": f.reason,
                    "test": f.test,
                }
                for f in self.facts
            ],
            **({"copy_of": self.copy_of} if self.copy_of else {}),
            **({"exhaustive": True, "counts": self.counts(), "inert": dict(self.inert)} if self.exhaustive else {}),
            **({"overridden": list(self.overridden)} if self.overridden else {}),
            **({"problems": list(self.problems)} if self.problems else {}),
        }

    def table(self) -> str:
        """The card as a Markdown table: setting, paper value, recipe value, source, departure."""
        out = [
            f"{self.recipe}: {self.paper}",
            "",
            "| setting | paper | recipe | source | departure |",
            "|---|---|---|---|---|",
        ]
        declared = {d.key: d for d in self.departures}
        for r in self.settings:
            d = declared.get(r.key)
            note = (
                f"inert: {_cell(self.inert[r.key])}"
                if r.key in self.inert
                else f"{d.kind}: {_cell(d.reason)}"
                if d
                else ""
            )
            out.append(f"| `{r.key}` | {_show(r.paper)} | {_show(r.recipe)} | {_cell(r.source)} | {note} |")
        for d in self.departures:
            if d.key not in {r.key for r in self.settings}:
                note = f"inert: {_cell(self.inert[d.key])}" if d.key in self.inert else f"{d.kind}: {_cell(d.reason)}"
                out.append(f"| `{d.key}` | {_show(d.paper)} | {_show(d.recipe)} | | {note} |")
        if self.exhaustive:
            out += [
                "",
                "Every other key of the resolved recipe: "
                + ", ".join(
                    f"{n} {what}"
                    for what, n in self.counts().items()
                    if what in ("inert", "bookkeeping", LIBRARY_DEFAULT)
                )
                + " (fairmt.recipes.cards.BOOKKEEPING, LIBRARY_DEFAULT).",
            ]
        if self.facts:
            out += [
                "",
                "In the code (each checked by its test):",
                "",
                "| fact | paper | fairmt | kind | reason | test |",
                "|---|---|---|---|---|---|",
            ]
            out += [
                f"| {_cell(f.fact)} | {_cell(_show(f.paper))} | {_cell(f.fairmt)} | {f.kind} | {_cell(f.reason)} | "
                f"`{_cell(f.test)}` |"
                for f in self.facts
            ]
        return "\n".join(out)

    def departures_block(self) -> str:
        """The departures in a few lines (the end of ``fairmt train --dry-run``)."""
        name = (
            f"{self.recipe}, a copy of {self.copy_of}: fairmt recipes --paper {self.copy_of}"
            if self.copy_of
            else f"fairmt recipes --paper {self.recipe}"
        )
        lines = [
            f"paper card ({self.paper}): {len(self.departures)} declared departure"
            f"{'' if len(self.departures) == 1 else 's'} ({name})"
        ]
        own = [d for d in self.departures if not d.shared]
        lines += [
            f"  {d.typed or d.key}: paper {_show(d.paper)}, recipe {'null' if d.recipe is None else _show(d.recipe)} "
            f"[{d.kind}]"
            for d in own
        ]
        shared: dict[str, int] = {}
        for d in self.departures:
            if d.shared:
                shared[d.shared] = shared.get(d.shared, 0) + 1
        lines += [
            f"  + {n} settings the paper leaves unstated, shared by the family's cards ({f})" for f, n in shared.items()
        ]
        shown = {r.key for r in self.settings + self.departures}
        lines += [f"  inert: {k} ({why})" for k, why in self.inert.items() if k in shown]
        lines += [f"  overridden: {line}" for line in self.overridden]
        lines += [f"  {p}" if p.startswith("unclassified: ") else f"  undeclared: {p}" for p in self.problems]
        return "\n".join(lines)


def _show(v: Any) -> str:
    return "(silent)" if v is None else json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v


def _cell(text: str | None) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


_MISSING = object()


def lookup(resolved: dict[str, Any], key: str) -> Any:
    """The value at a dotted path of the resolved recipe (list items by index); ``_MISSING`` when absent."""
    node: Any = resolved
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def same(a: Any, b: Any) -> bool:
    """Equal values (numbers to a relative 1e-9, so ``2`` and ``2.0`` match; lists and mappings item by item)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def resolved_values(config: dict[str, Any]) -> dict[str, Any]:
    """The resolved recipe as plain values: the family's runner's ``resolve_config`` where it returns a mapping
    (classification, sampling), else the schema's resolved object (with ``training`` as the Trainer Config resolves
    it where the runner returns one)."""
    from fairmt.recipes._registry import family
    from fairmt.recipes._schema import resolve_recipe

    module = family(config.get("method")).runner_module()
    resolver = getattr(module, "resolve_config", None)
    out = resolver(config) if resolver else None
    if isinstance(out, dict):
        return json.loads(json.dumps(out, default=str))
    schema = resolve_recipe(config)
    values = schema.model_dump() if schema is not None else dict(config)
    if out is not None and hasattr(out, "to_json_string"):
        values["training"] = json.loads(out.to_json_string())
    return json.loads(json.dumps(values, default=str))


def _typed_key(key: str, config: dict[str, Any]) -> str:
    """A resolved key as a user types it (the family schema's :meth:`~fairmt.recipes._schema.Recipe.typed_key`)."""
    from fairmt.recipes._registry import families

    fam = families().get(str(config.get("method")))
    return fam.schema_class().typed_key(key, config) if fam is not None else key


def read_card(path: str | Path, shared: bool = False) -> dict[str, Any]:
    """The card at ``path`` as parsed YAML (a fresh copy; parsed once per text, :mod:`fairmt.recipes._files`);
    ``shared``: a family file of ``include:`` entries."""
    from fairmt.recipes._files import parse_yaml_text

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise FairmtError(f"paper card {path} cannot be read: {err}") from None
    data = parse_yaml_text(text, f"paper card {path}", "card")
    if shared and isinstance(data, dict):
        return data  # an include file: any of settings, departures, inert
    if not isinstance(data, dict) or not {"recipe", "paper", "settings"} <= set(data):
        raise FairmtError(f"paper card {path} must be a mapping with recipe, paper, settings (and departures)")
    return data


BOOKKEEPING: dict[str, str] = {
    "output_dir": "where the run writes its files",
    "stages.*.output_dir": "where the stage writes its files",
    "model.cache_dir": "where downloaded weights are cached",
    "save_predictions": "writes the test predictions to a file; the scores are computed alike",
    "data.root": "the folder the data set is read from (data.dataset names which data)",
    "stages.*.logging_*": "how often and how the loss is logged",
    "stages.*.log_level*": "log verbosity",
    "stages.*.log_on_each_node": "log verbosity",
    "stages.*.disable_tqdm": "progress bars",
    "stages.*.report_to": "where logs are sent",
    "stages.*.run_name": "the name logs carry",
    "stages.*.project": "the name logs carry",
    "stages.*.trackio_*": "where logs are sent",
    "stages.*.include_num_input_tokens_seen": "a logged counter",
    "stages.*.skip_memory_metrics": "a logged counter",
    "stages.*.hub_*": "uploads to the Hugging Face Hub",
    "stages.*.push_to_hub": "uploads to the Hugging Face Hub",
    "stages.*.save_only_model": "what a checkpoint holds besides the weights (optimizer state)",
    "stages.*.save_total_limit": "how many checkpoints stay on disk",
    "stages.*.save_on_each_node": "where checkpoints are written on several machines",
    "stages.*.use_cpu": "the device the run found (not what is trained)",
    "stages.*.dataloader_num_workers": "how many processes read the data (the batches are the same)",
    "stages.*.dataloader_pin_memory": "a copy speed-up (the batches are the same)",
    "stages.*.dataloader_persistent_workers": "a reader speed-up (the batches are the same)",
    "stages.*.dataloader_prefetch_factor": "a reader speed-up (the batches are the same)",
    "stages.*.per_device_eval_batch_size": "evaluation batch size: each example is scored alone (padding masked)",
    "stages.*.eval_accumulation_steps": "how evaluation outputs are gathered (the scores are the same)",
    "stages.*.eval_do_concat_batches": "how evaluation outputs are gathered (the scores are the same)",
    "stages.*.eval_use_gather_object": "how evaluation outputs are gathered (the scores are the same)",
    "stages.*.do_train": "a flag the Trainer does not read (the runner calls train/evaluate)",
    "stages.*.do_eval": "a flag the Trainer does not read (the runner calls train/evaluate)",
    "stages.*.do_predict": "a flag the Trainer does not read (the runner calls train/evaluate)",
    "stages.*.local_rank": "set by the launcher",
    "stages.*.remove_unused_columns": "which dataset columns reach the collator (fairmt's collators name theirs)",
    "stages.*.accelerator_config": "how accelerate splits batches across devices (one device: unused)",
    "stages.*.debug": "debug output",
    "stages.*.activation_checkpointing*": "recomputes activations in the backward pass: the same gradients",
    "stages.*.gradient_checkpointing*": "recomputes activations in the backward pass: the same gradients",
    "stages.*.group_column": "the name of the batch key holding the group ids",
    "cache_stage2_features": "stage 2 reads the fixed encoder's features computed once or per batch: the same values",
    "stages.*.frozen_modules_eval": "frozen modules stay in eval mode: no parameter of them is trained either way",
    "recipe_path": "the file the recipe was read from",
    "overwrite": "whether an existing output folder may be replaced",
    "results": "where the results file is written",
    "resume_from_checkpoint": "resumes an interrupted run from its last complete checkpoint (the same run)",
    "stages.*.resume_from_checkpoint": "resumes an interrupted run from its last complete checkpoint (the same run)",
    "stages.*.ddp_*": "how several processes synchronise gradients (one process: unused; the same gradients)",
    "stages.*.torch_empty_cache_steps": "frees cached GPU memory (the same values)",
    "stages.*.dataloader_multiprocessing_context": "how reader processes start (the batches are the same)",
    "stages.*.dataloader_in_order": "reader scheduling (the batches are the same)",
    "stages.*.restore_callback_states_from_checkpoint": "resumption of an interrupted run",
    "stages.*.ignore_data_skip": "resumption of an interrupted run",
    "stages.*.length_column_name": "the name of a dataset column (read only with group_by_length)",
    "stages.*.label_names": "the names of the batch keys holding the labels",
    "stages.*.include_for_metrics": "what the metric callback receives besides predictions (fairmt's evaluators read their own)",
    "stages.*.batch_eval_metrics": "how the metric callback is called (fairmt's evaluators read their own)",
    "stages.*.prediction_loss_only": "what evaluation returns besides the loss (fairmt's evaluators read their own)",
    "stages.*.average_tokens_across_devices": "how a token-averaged loss is normalised across devices (one device: unused)",
    "stages.*.gather_across_processes": "under several processes, in-batch candidates from every rank (one process: unused)",
    "geneval.batch_size": "decoding batch size: each sentence is translated alone (padding masked)",
    "evaluation.batch_size": "encoding batch size: each sentence is embedded alone (padding masked)",
}
"""Settings that cannot change what is trained or measured (dotted key patterns, ``*`` one key part → why): an
exhaustive card need not list them. One list for every card."""

LIBRARY_DEFAULT = "library default"
"""How an exhaustive card classifies a Trainer field it does not list: a :class:`transformers.TrainingArguments`
field not in :data:`TRAINING_RELEVANT`, which the recipe does not set and whose value is the library's default."""

TRAINING_RELEVANT = frozenset(
    {
        "per_device_train_batch_size",
        "num_train_epochs",
        "max_steps",
        "learning_rate",
        "lr_scheduler_type",
        "lr_scheduler_kwargs",
        "warmup_steps",
        "warmup_ratio",
        "optim",
        "optim_args",
        "weight_decay",
        "adam_beta1",
        "adam_beta2",
        "adam_epsilon",
        "gradient_accumulation_steps",
        "max_grad_norm",
        "label_smoothing_factor",
        "bf16",
        "fp16",
        "bf16_full_eval",
        "fp16_full_eval",
        "tf32",
        "neftune_noise_alpha",
        "auto_find_batch_size",
        "seed",
        "data_seed",
        "full_determinism",
        "dataloader_drop_last",
        "train_sampling_strategy",
        "eval_strategy",
        "eval_steps",
        "eval_delay",
        "save_strategy",
        "save_steps",
        "load_best_model_at_end",
        "metric_for_best_model",
        "greater_is_better",
        "group_by_length",
    }
)
"""The :class:`transformers.TrainingArguments` fields that can change what is trained or which checkpoint is kept:
an exhaustive card lists each (a library default included), never leaves it to :data:`LIBRARY_DEFAULT`."""

TRAINER_SECTIONS = ("training", "objective_args", "stage1", "stage2", "peft")
"""The recipe sections of Trainer Config fields; where the runner resolves them into ``stages`` (the classification
family), the exhaustive walk reads each stage's resolved Config and not these free-form inputs."""


def flatten(resolved: dict[str, Any]) -> dict[str, Any]:
    """The resolved recipe as ``dotted key → value`` (mappings walked, lists kept whole); the raw
    :data:`TRAINER_SECTIONS` left out where ``stages`` holds what they resolve to, and their Trainer fields where
    ``resolved.<stage>`` does (the sampling family: ``training.learning_rate`` is walked as
    ``resolved.stage1.learning_rate`` and ``resolved.stage2.learning_rate``; ``stage2.init`` stays)."""
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for k, v in node.items():
                walk(v, f"{prefix}{k}.")
        else:
            out[prefix[:-1]] = node

    staged = isinstance(resolved.get("stages"), dict)
    per_stage = resolved.get("resolved")  # the sampling family: each stage's Trainer Config under resolved.<stage>
    fields_: set[str] = set()
    if (
        not staged
        and isinstance(per_stage, dict)
        and per_stage
        and all(isinstance(v, dict) for v in per_stage.values())
    ):
        fields_ = set().union(*per_stage.values())
    kept = {}
    for k, v in resolved.items():
        if staged and k in TRAINER_SECTIONS:
            continue
        if fields_ and k in TRAINER_SECTIONS and isinstance(v, dict):
            v = {f: x for f, x in v.items() if f not in fields_}  # read in resolved.<stage> (stage2.init stays)
            if not v:
                continue
        kept[k] = v
    walk(kept, "")
    return out


@functools.lru_cache(maxsize=4096)
def _pattern(p: str) -> re.Pattern:
    """A card key pattern (``*``: one dotted part, or any characters inside a part) as a regular expression (compiled
    once per pattern: a card check matches every pattern against every resolved key)."""
    return re.compile(
        "\\.".join("[^.]+" if part == "*" else re.escape(part).replace("\\*", "[^.]*") for part in p.split("."))
        + r"(\..+)?"
    )


@functools.lru_cache(maxsize=4096)
def _matching(p: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The keys ``p`` matches (:func:`_pattern`), in their order: a card matches each pattern against the same
    resolved keys for every recipe of its family, so the walk is done once per pattern and key set."""
    pattern = _pattern(p)
    return tuple(k for k in keys if pattern.fullmatch(k) is not None)


@functools.cache
def _library_defaults() -> dict[str, Any]:
    """Every :class:`transformers.Seq2SeqTrainingArguments` field's default as plain values (computed once per
    process: the installed library's; read, never edited, by :func:`_classify`)."""
    import dataclasses

    from transformers import Seq2SeqTrainingArguments

    out: dict[str, Any] = {}
    for f in dataclasses.fields(Seq2SeqTrainingArguments):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return json.loads(json.dumps(out, default=str))


def _set_by_recipe(config: dict[str, Any], name: str) -> bool:
    return any(isinstance(config.get(s), dict) and name in config[s] for s in TRAINER_SECTIONS)


_FAMILY_FILE = re.compile(r"([a-z][a-z0-9_]*)/(_[A-Za-z0-9_.-]+\.yaml)")
"""An include naming another built-in family's shared file (``classification/_classification.yaml``: the card of a
recipe that runs on that family's runner, ``sampling/hatespeech_gru``); read from the built-in recipes only."""


def _included(card: dict[str, Any], base: Path | None, problems: list[str]) -> dict[str, Any]:
    """The card with the entries of its ``include:`` files (YAML in its folder, or ``FAMILY/_FILE.yaml``: a built-in
    family's shared file, :data:`_FAMILY_FILE`) appended, marked ``shared``."""
    names = card.get("include") or []
    if not names:
        return card
    merged = {
        **card,
        "settings": list(card.get("settings") or []),
        "departures": list(card.get("departures") or []),
        "inert": list(card.get("inert") or []),
    }
    for name in names:
        other = _FAMILY_FILE.fullmatch(str(name))
        where = (
            _builtin_dir() / other.group(1) / "cards" / other.group(2)
            if other
            else (base / str(name) if base else None)
        )
        if where is None or ("/" in str(name) and not other) or not where.is_file():
            problems.append(f"include {name!r} is not a file beside the card nor a built-in family's FAMILY/_FILE.yaml")
            continue
        part = read_card(where, shared=True)
        for section in ("settings", "departures", "inert"):
            merged[section] += [{**item, "_shared": str(name)} for item in part.get(section) or []]
    return merged


def check_card(card: dict[str, Any], config: dict[str, Any], name: str | None = None, base: Path | None = None) -> Card:
    """The card against the recipe ``config`` (loaded, overrides applied): every row with its resolved value, and
    ``problems``, one line each (empty: the recipe is the paper's wherever the card does not declare otherwise).

    A key may name several settings with ``*`` (one key part): the entry applies to every matching resolved key the
    card does not list by name. ``inert: [{keys, when, reason}]``: keys that another setting makes unused (``when``:
    ``{KEY: value, [values] or {not: value(s)}}``, all must hold; otherwise the entry does not apply). ``exhaustive: true``: every key
    of the resolved recipe (:func:`flatten`) must be classified, by the card, :data:`BOOKKEEPING` or
    :data:`LIBRARY_DEFAULT` ("unclassified: KEY" otherwise). ``base``: the card's folder (for ``include:``)."""
    resolved = resolved_values(config)
    flat = flatten(resolved)
    flat_keys = tuple(flat)
    out = Card(recipe=str(card["recipe"]), paper=str(card["paper"]), exhaustive=card.get("exhaustive") is True)
    problems = out.problems
    if name is not None and card["recipe"] != name:
        problems.append(f"the card names recipe {card['recipe']!r}, not {name!r}")
    card = _included(card, base, problems)
    named = {
        str(item.get("key"))
        for section in ("settings", "departures")
        for item in card.get(section) or []
        if isinstance(item, dict) and "*" not in str(item.get("key")) and not item.get("_shared")
    }

    def expand(item: dict[str, Any], what: str) -> list[str]:
        key = str(item.get("key"))
        if "*" not in key:
            return [] if item.get("_shared") and key in named else [key]  # the card's own entry wins
        keys = sorted(
            {
                k.rsplit(".", k.count(".") - key.count("."))[0] if k.count(".") > key.count(".") else k
                for k in _matching(key, flat_keys)
            }
            - named
        )
        if not keys and not item.get("_shared"):
            problems.append(f"{what} {key} matches no key of the resolved recipe")
        return keys

    settings = {}
    for item in card.get("settings") or []:
        key = item.get("key")
        if not key or "paper" not in item or not item.get("source"):
            problems.append(f"setting {item!r} needs key, paper and source")
            continue
        for key in expand(item, "setting"):
            if item.get("_shared") and lookup(resolved, key) is _MISSING:
                continue
            if key in settings:
                problems.append(f"setting {key} is listed twice")
            value = lookup(resolved, key)
            if value is _MISSING:
                problems.append(f"setting {key} is not a key of the resolved recipe")
                continue
            settings[key] = Row(key, item["paper"], value, source=str(item["source"]), shared=item.get("_shared"))
    out.settings = list(settings.values())
    inert: dict[str, str] = {}
    for item in card.get("inert") or []:
        if (
            not isinstance(item, dict)
            or not item.get("keys")
            or not item.get("reason")
            or not isinstance(item.get("when") or {}, dict)
        ):
            problems.append(f"inert entry {item!r} needs keys, reason (and when: {{KEY: value}})")
            continue
        holds = all(_holds(lookup(resolved, k), want) for k, want in (item.get("when") or {}).items())
        if holds:
            reason = " ".join(str(item["reason"]).split())
            for p in item["keys"]:
                for k in _matching(str(p), flat_keys):
                    inert.setdefault(k, reason)
                if "*" not in str(p) and lookup(resolved, str(p)) is _MISSING and not item.get("_shared"):
                    problems.append(f"inert {p} is not a key of the resolved recipe")
    seen = set()
    for item in card.get("departures") or []:
        key = item.get("key")
        if not key or item.get("kind") not in KINDS or not item.get("reason") or "recipe" not in item:
            problems.append(
                f"departure {key if key else repr(item)} needs key, recipe, kind (one of {', '.join(KINDS)}) and reason"
            )
            continue
        for key in expand(item, "departure"):
            if item.get("_shared") and lookup(resolved, key) is _MISSING:
                continue  # a family file's entry for a key this recipe's method does not have
            if key in seen:
                problems.append(f"departure {key} is declared twice")
            seen.add(key)
            value = lookup(resolved, key)
            if value is _MISSING:
                problems.append(f"departure {key} is not a key of the resolved recipe")
                continue
            paper = settings[key].paper if key in settings and "paper" not in item else item.get("paper")
            if key in settings and not same(paper, settings[key].paper):
                problems.append(
                    f"departure {key} gives paper value {_show(paper)}, the setting {_show(settings[key].paper)}"
                )
            if key in inert:
                pass  # unused by this recipe: shown as inert, its value not compared
            elif not same(item["recipe"], value):
                problems.append(
                    f"departure {key} declares recipe value {_show(item['recipe'])}, the recipe resolves "
                    f"to {_show(value)}"
                )
            elif paper is not None and same(paper, value):
                problems.append(
                    f"departure {key} no longer differs (paper and recipe are both {_show(value)}): "
                    f"remove it from the card"
                )
            out.departures.append(
                Row(
                    key,
                    paper,
                    value,
                    kind=item["kind"],
                    reason=" ".join(str(item["reason"]).split()),
                    shared=item.get("_shared"),
                    typed=_typed_key(key, config),
                )
            )
    out.facts = _check_facts(card.get("facts") or [], problems)
    for key, row in settings.items():
        if key not in seen and key not in inert and not same(row.paper, row.recipe):
            problems.append(
                f"{key}: the recipe resolves to {_show(row.recipe)}, the paper's value is "
                f"{_show(row.paper)} ({row.source}), and the card declares no departure"
            )
    out.inert = {k: v for k, v in inert.items()}
    if out.exhaustive:
        out.classified = _classify(flat, config, settings, out.departures, inert)
        problems += [f"unclassified: {k}" for k, what in out.classified.items() if what == "unclassified"]
    return out


def trainer_roots(flat: dict[str, Any]) -> list[str]:
    """The prefixes of the resolved recipe under which a Trainer Config (a :class:`transformers.TrainingArguments`)
    is dumped: ``stages.<stage>`` (classification), ``resolved.<stage>`` (sampling), ``training`` (GACL, CCD)."""
    return sorted(
        {k[: -len(".per_device_train_batch_size")] for k in flat if k.endswith(".per_device_train_batch_size")}
        & {k[: -len(".per_device_eval_batch_size")] for k in flat if k.endswith(".per_device_eval_batch_size")}
    )


def trainer_field(key: str, roots: list[str]) -> str | None:
    """``key``'s path inside its Trainer Config (``stages.stage1.adam_beta2`` → ``adam_beta2``); None outside one."""
    for root in roots:
        if key.startswith(root + "."):
            return key[len(root) + 1 :]
    return None


def _bookkeeping(key: str, roots: list[str]) -> bool:
    """Whether :data:`BOOKKEEPING` names ``key`` (its ``stages.*.FIELD`` patterns name a Trainer field under any
    of ``roots``)."""
    field_ = trainer_field(key, roots)
    patterns = tuple(BOOKKEEPING)
    return _any_matches(patterns, key) or (field_ is not None and _any_matches(patterns, f"stages._.{field_}"))


@functools.lru_cache(maxsize=1 << 16)
def _any_matches(patterns: tuple[str, ...], key: str) -> bool:
    """Whether one of ``patterns`` matches ``key`` (one alternation of them all: a full match of it is a full match
    of one of them)."""
    return _bookkeeping_pattern(patterns).fullmatch(key) is not None


@functools.lru_cache(maxsize=8)
def _bookkeeping_pattern(patterns: tuple[str, ...]) -> re.Pattern:
    return re.compile("|".join(f"(?:{_pattern(p).pattern})" for p in patterns))


def _holds(value: Any, want: Any) -> bool:
    """An inert entry's ``when`` condition on one key: a value, a list of values, or ``{not: value(s)}`` (any value
    but those, e.g. ``{not: null}``: the key is set)."""
    if isinstance(want, dict) and set(want) == {"not"}:
        return value is not _MISSING and not _holds(value, want["not"])
    return value is not _MISSING and any(same(value, v) for v in (want if isinstance(want, list) else [want]))


def _classify(
    flat: dict[str, Any], config: dict[str, Any], settings: dict[str, Row], departures: list[Row], inert: dict[str, str]
) -> dict[str, str]:
    """Every flattened key → ``paper``, a departure's kind, ``inert``, ``bookkeeping``, :data:`LIBRARY_DEFAULT` or
    ``unclassified`` (a key under a listed key counts as listed)."""
    kinds = {d.key: d.kind for d in departures}
    defaults = _library_defaults()
    roots = trainer_roots(flat)
    out = {}
    for key, value in flat.items():
        parts = key.split(".")
        owner = next(
            (
                ".".join(parts[:i])
                for i in range(len(parts), 0, -1)
                if ".".join(parts[:i]) in kinds or ".".join(parts[:i]) in settings
            ),
            None,
        )
        field_ = trainer_field(key, roots)
        name = field_.split(".")[0] if field_ else None
        if key in inert:  # unused by this recipe: never counted as the paper's value
            out[key] = "inert"
        elif owner is not None:
            out[key] = str(kinds.get(owner, "paper"))
        elif _bookkeeping(key, roots):
            out[key] = "bookkeeping"
        elif (
            field_ is not None
            and name in defaults
            and name not in TRAINING_RELEVANT
            and not _set_by_recipe(config, str(name))
            and same(lookup({name: defaults[name]}, field_), value)
        ):
            out[key] = LIBRARY_DEFAULT
        else:
            out[key] = "unclassified"
    return out


_REPO = Path(__file__).resolve().parents[2]


def _check_facts(items: list[Any], problems: list[str]) -> list[Fact]:
    """The card's ``facts`` (module docstring), each with its fields and a test that exists (``tests/FILE.py::NAME``,
    looked up in the source checkout; an installed package without ``tests/`` only checks the form)."""
    facts = []
    for item in items:
        fields = ("fact", "paper", "fairmt", "kind", "reason", "test")
        if not isinstance(item, dict) or not all(k in item for k in fields) or item.get("kind") not in FACT_KINDS:
            problems.append(f"fact {item!r} needs {', '.join(fields)} (kind one of {', '.join(FACT_KINDS)})")
            continue
        test = str(item["test"])
        path, _, func = test.partition("::")
        if not path.startswith("tests/") or not path.endswith(".py") or not func.isidentifier():
            problems.append(f"fact {item['fact']!r}: test {test!r} is not tests/FILE.py::FUNCTION")
            continue
        source = _REPO / path
        if (_REPO / "tests").is_dir() and (
            not source.is_file() or f"def {func}(" not in source.read_text(encoding="utf-8")
        ):
            problems.append(f"fact {item['fact']!r}: its test {test} does not exist")
            continue
        facts.append(
            Fact(
                str(item["fact"]),
                item["paper"],
                str(item["fairmt"]),
                str(item["kind"]),
                " ".join(str(item["reason"]).split()),
                test,
            )
        )
    return facts


def departures_markdown(cards: list[Card]) -> str:
    """One Markdown table per paper of every departure its recipes' cards declare (a departure shared by several
    recipes is one row naming them all): what ``fairmt recipes --departures`` prints and each
    docs/reproducing/PAPER.md page shows (docs_gen/cards.py)."""
    out: list[str] = []
    papers: dict[str, list[Card]] = {}
    for card in cards:
        papers.setdefault(card.paper.split(" — ")[0], []).append(card)
    for paper, group in papers.items():
        rows: dict[tuple, list[str]] = {}
        for card in group:
            for d in card.departures:
                rows.setdefault((d.key, _show(d.paper), _show(d.recipe), d.kind, d.reason), []).append(
                    card.recipe.split("/", 1)[-1]
                )
        out += [
            f"**{paper}** ({len(group)} recipes)",
            "",
            "| recipes | setting | paper | recipe | kind | reason |",
            "|---|---|---|---|---|---|",
        ]
        for (key, paper_v, recipe_v, kind, reason), names in rows.items():
            out.append(
                f"| {', '.join(f'`{n}`' for n in names)} | `{key}` | {_cell(paper_v)} | {_cell(recipe_v)} | "
                f"{kind} | {_cell(reason)} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


COMPARISON_TABLES: dict[str, tuple[str, ...]] = {
    "classification on Bias in Bios, frozen all-MiniLM-L6-v2": (
        "classification/inlp",
        "classification/cscl_one_stage",
        "classification/cscl_two_stage",
        "classification/fcl",
        "classification/adversarial",
    ),
}
"""Recipes meant to be compared in one table (one data set, one encoder): their defaults select checkpoints (and
sweep settings) by one rule — Chi et al.'s lowest dev CE (App. C.3, Fig. 11 'CE (best)'), the one rule a paper of
this table states; each card says so where the recipe's paper gives none (:func:`check_comparison_tables`)."""

RULE_KEYS = ("selection", "sweep_selection")
"""The resolved recipe keys that decide which checkpoint / setting a row reports."""


def check_comparison_tables(load) -> list[str]:
    """One line per table of :data:`COMPARISON_TABLES` whose recipes do not share one value of each
    :data:`RULE_KEYS` (resolved: a default counts as written); empty when every table selects alike. ``load``: recipe
    name → loaded config (``lambda n: fairmt.commands.train.load_recipe(n, [])``; passed in, as this layer is below
    the commands)."""
    problems = []
    for table, names in COMPARISON_TABLES.items():
        values = {n: resolved_values(load(n)) for n in names}
        for key in RULE_KEYS:
            seen = {n: lookup(v, key) for n, v in values.items()}
            seen = {n: (None if v is _MISSING else v) for n, v in seen.items()}
            if len({json.dumps(v) for v in seen.values()}) > 1:
                problems.append(
                    f"{table}: the recipes select by different {key} rules ("
                    + ", ".join(f"{n}: {v}" for n, v in seen.items())
                    + ")"
                )
    return problems


def _builtin_dir() -> Path:
    return Path(__file__).resolve().parent


def find_card(recipe_path: str | Path) -> tuple[Path | None, str | None]:
    """``(card, copy_of)``: the card beside the recipe; for a file outside the built-in recipes without one, the card
    of the built-in recipe of the same file name, if one has a card (``copy_of``: that recipe's name); a card
    beside a copy also names the copy's original (``copy_of``) when its ``recipe`` is a built-in name."""
    p = Path(recipe_path).resolve()
    inside = _builtin_dir() in p.parents
    if card_path(p).is_file():
        return card_path(p), None if inside else "?"
    if inside:
        return None, None
    from fairmt.recipes import RECIPE_ALIASES, builtin_recipes

    recipes = builtin_recipes()
    named = {**recipes, **{alias: recipes[name] for alias, name in RECIPE_ALIASES.items()}}
    for name in sorted(named):
        if name.split("/")[-1] == p.stem and card_path(named[name]).is_file():
            return card_path(named[name]), name
    return None, None


@dataclass
class Moved:
    """A resolved setting that an override moved off the recipe file's own value, with what the card says of it."""

    key: str
    before: Any
    """The recipe file's resolved value."""
    after: Any
    what: str
    """What the card says of the key: ``the paper's value X``, ``the card declares X [kind]``, ``inert: why`` or
    ``on no card entry``."""
    leaves: bool
    """Whether ``after`` leaves the card: it is not the paper's value of a setting the card lists, not the value a
    departure declares, or (a key on no card entry) not the recipe's own; an inert key never leaves it."""
    source: str | None = None
    """The paper's source of a setting the card lists (its quote)."""


def _moved(card: Card, config: dict[str, Any]) -> list[Moved]:
    """The resolved settings an override (or an edit of the loaded mapping) moved off the recipe file's own values,
    each with what the card says of it; bookkeeping left out. The one comparison behind ``fairmt train --dry-run``'s
    ``overridden:`` lines and a sweep's card differences (:func:`variant_differences`)."""
    from fairmt.recipes import load_recipe

    path = config.get("recipe_path")
    if not path:  # a mapping built in code: no recipe file to compare with
        return []
    base = load_recipe(str(path), validate=False)
    if {k: v for k, v in base.items() if k != "recipe_path"} == {
        k: v for k, v in config.items() if k not in ("recipe_path", "overwrite")
    }:
        return []
    before, after = flatten(resolved_values(base)), flatten(resolved_values(config))
    roots = trainer_roots(after)
    rows = {r.key: r for r in card.settings}
    kinds = {d.key: d for d in card.departures}
    out = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, "(absent)"), after.get(key, "(absent)")
        if same(a, b) or _bookkeeping(key, roots):
            continue
        owner = next(
            (
                k
                for k in (key, *(key.rsplit(".", i)[0] for i in range(1, key.count(".") + 1)))
                if k in rows or k in kinds
            ),
            None,
        )
        source = None
        if key in card.inert:
            what, leaves = f"inert: {card.inert[key]}", False
        elif owner in kinds:  # the card passes on the recipe file, so the file's value is the declared one
            d = kinds[owner]
            paper = f"; the paper's {_show(d.paper)}" if owner == key and d.paper is not None else ""
            declared = "null" if a is None else _show(a)
            what, leaves = f"the card declares {declared} [{d.kind}]{paper}", True
        elif owner in rows:
            paper = rows[owner].paper if owner == key else lookup(rows[owner].paper, key[len(owner) + 1 :])
            what, leaves, source = (
                f"the paper's value {_show(rows[owner].paper)}",
                not same(b, paper),
                rows[owner].source,
            )
        else:
            what, leaves = "on no card entry", True
        out.append(Moved(key, a, b, what, leaves, source))
    return out


def variant_differences(
    recipe: str, fixed: list[str], variants: list[tuple[str, list[tuple[str, list[str]]], list[str]]]
) -> tuple[Card | None, list[str]]:
    """``(card, lines)``: the settings that runs of ``recipe`` (a name or file) with the overrides ``fixed`` and,
    per run, one value of each of ``variants`` move off the paper card. A variant is ``(label, [(value as shown, its
    overrides)], context)``: a sweep's ``--grid KEY`` (``context``: overrides its values need beside them, such as
    another grid key's first value, whose own changes are not the variant's), a ``--range``'s ends, the ``--seeds``.
    One line per setting (as a user types it) and variant, naming the values that leave the card, each once (a value
    shown twice, as a range's two ends, once; a value the card gives is not a difference): ``KEY (RESOLVED KEYS):
    LABEL V1, V2 (WHAT THE CARD SAYS)``; the fixed overrides' own under the label ``fixed``. None and no lines for a
    recipe without a card. The comparison is :func:`card_of_config`'s (``fairmt train --dry-run``'s), run once per
    value."""
    from fairmt.recipes import load_recipe

    config = load_recipe(recipe, list(fixed))
    card = card_of_config(config)
    if card is None:
        return None, []
    lines = _grouped("fixed", [(_show(m.after), m) for m in card.moved], config)
    for label, values, context in variants:
        around = card if not context else card_of_config(load_recipe(recipe, [*fixed, *context]))
        before = {m.key: m.after for m in around.moved}  # type: ignore[union-attr]  # the same recipe file
        found = []
        for shown, overrides in values:
            varied = load_recipe(recipe, [*fixed, *context, *overrides])
            moved = card_of_config(varied).moved  # type: ignore[union-attr]  # the same recipe file: its card
            found += [(shown, m) for m in moved if not (m.key in before and same(before[m.key], m.after))]
        lines += _grouped(label, found, config)
    return card, lines


def _grouped(label: str, found: list[tuple[str, Moved]], config: dict[str, Any]) -> list[str]:
    """One line per setting as a user types it (``training.seed`` moves each stage's seed: one line), naming the
    values that leave the card, each once, in the order given; a setting no value moves off the card: no line."""
    groups: dict[str, tuple[list[str], list[Moved], list[str]]] = {}
    for shown, m in found:
        keys, records, values = groups.setdefault(_typed_key(m.key, config), ([], [], []))
        if m.key not in keys:
            keys.append(m.key)
            records.append(m)
        if m.leaves and shown not in values:
            values.append(shown)
    out = []
    for typed, (keys, records, values) in groups.items():
        if not values:
            continue
        others = [k for k in keys if k != typed]
        name = f"{typed} ({', '.join(others)})" if others else typed
        m = next((r for r in records if r.leaves), records[0])
        out.append(f"{name}: {label} {', '.join(values)} ({_with_source(m)})")
    return out


def _with_source(m: Moved) -> str:
    return f"{m.what}: {' '.join(m.source.split())}" if m.source else m.what


def card_of_config(config: dict[str, Any]) -> Card | None:
    """The checked card of a loaded recipe (by its ``recipe_path``, :func:`find_card`); None without one. A copy
    names itself (``recipe``: its path, ``copy_of``: the built-in card's recipe); a built-in recipe loaded with
    overrides lists each setting they move (``overridden``)."""
    path = config.get("recipe_path")
    if not path:
        return None
    found, copy_of = find_card(path)
    if found is None:
        return None
    data = read_card(found)
    card = check_card(data, config, base=found.parent)
    if copy_of is not None:
        card.copy_of = str(data["recipe"]) if copy_of == "?" else copy_of
        card.recipe = str(path)
    card.moved = _moved(card, config)
    card.overridden = [f"{m.key}: {_show(m.before)} -> {_show(m.after)} ({m.what})" for m in card.moved]
    return card


__all__ = [
    "BOOKKEEPING",
    "CARDS_PENDING",
    "COMPARISON_TABLES",
    "Card",
    "FACT_KINDS",
    "Fact",
    "KINDS",
    "LIBRARY_DEFAULT",
    "Moved",
    "RULE_KEYS",
    "Row",
    "TRAINING_RELEVANT",
    "card_of_config",
    "card_path",
    "check_card",
    "check_comparison_tables",
    "claims_paper",
    "departures_markdown",
    "find_card",
    "flatten",
    "lookup",
    "read_card",
    "resolved_values",
    "same",
    "trainer_field",
    "trainer_roots",
    "variant_differences",
]
