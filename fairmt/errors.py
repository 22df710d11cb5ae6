"""Exceptions shared by every layer. Messages name the bad input and say what to do."""

from __future__ import annotations


class FairmtError(ValueError):
    """Bad input to a fairmt component: a file, a flag, a language code, a batch."""

    def __init__(self, *args: object) -> None:
        # PyTorch's DataLoader re-raises a worker's exception as ``type(exc)(message)`` where the message wraps the
        # worker's whole traceback ("Caught FairmtError in DataLoader worker process 0. Original Traceback ...").
        # Keep only the worker's own one-line message, so the CLI still prints one line.
        if (
            len(args) == 1
            and isinstance(args[0], str)
            and "Original Traceback" in args[0]
            and args[0].startswith("Caught ")
        ):
            last = [ln for ln in args[0].splitlines() if ln.strip()][-1]
            for prefix in ("fairmt.errors.FairmtError: ", "FairmtError: "):
                if last.startswith(prefix):
                    args = (last[len(prefix) :],)
        super().__init__(*args)


# ------------------------------------------------------------------------------------------------ value ranges
# One declaration per numeric Config field (the class's ``RANGES = {"gacl_lambda": WEIGHT, ...}``; a class attribute,
# not field metadata, which ``transformers.HfArgumentParser`` would hand to argparse), read by two front ends: the
# Config's ``__post_init__`` (:func:`check_ranges`, Python users) and the recipe checks
# (:func:`fairmt.recipes._checks.check_training`, recipes, ``--dry-run`` and sweeps).


class Range:
    """A closed or half-open interval of finite numbers, optionally integers only. ``None`` is left to the field's
    type (a field typed ``X | None`` documents what None means). ``also``: values accepted outside the interval
    (a documented sentinel, such as ``max_steps = -1``: "train for the epochs")."""

    __slots__ = ("low", "high", "low_open", "high_open", "integer", "also")

    def __init__(
        self,
        low: float | None = None,
        high: float | None = None,
        *,
        low_open: bool = False,
        high_open: bool = False,
        integer: bool = False,
        also: tuple = (),
    ) -> None:
        self.low, self.high, self.low_open, self.high_open, self.integer = low, high, low_open, high_open, integer
        self.also = tuple(also)

    def __repr__(self) -> str:
        return f"Range({self.text()})"

    def text(self) -> str:
        return self._interval() + "".join(f", or {_bound(v)}" for v in self.also)

    def _interval(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        low, high = _bound(self.low), _bound(self.high)
        if self.low is not None and self.high is not None:
            return f"{kind} in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{kind} {'>' if self.low_open else '≥'} {low}"
        if self.high is not None:
            return f"{kind} {'<' if self.high_open else '≤'} {high}"
        return kind

    def ok(self, value: object) -> bool:
        import math
        import numbers

        if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy scalars too
            return False
        if value in self.also and (isinstance(value, numbers.Integral) or not self.integer):
            return True
        if self.integer and not isinstance(value, numbers.Integral):
            return False
        if isinstance(value, numbers.Integral) and not -MACHINE_INT <= value < MACHINE_INT:
            return False  # no tensor, array or C loop holds it (it passed every bound and failed far later)
        if not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            return False
        return True

    def check(self, name: str, value: object) -> None:
        """Raise one :class:`FairmtError` naming ``name``, ``value`` and the range unless ``value`` (or None) fits."""
        if value is not None and not self.ok(value):
            import numbers

            beyond = (
                " (beyond the 64-bit integers the machine holds)"
                if isinstance(value, numbers.Integral)
                and not isinstance(value, bool)
                and not -MACHINE_INT <= value < MACHINE_INT
                else ""
            )
            raise FairmtError(f"{name} must be {self.text()}, got {value!r}{beyond}")


MACHINE_INT = 2**63
"""Integers from ``-MACHINE_INT`` up to ``MACHINE_INT - 1`` (int64) are what torch and numpy hold: a value
outside is refused by every :class:`Range`, whatever its bounds."""


def _bound(v: float | None) -> str:
    """A bound as people write it: 0.5, 1, 4294967296 (``:g`` would print 4.29497e+09 for numpy's seed limit)."""
    if v is None:
        return ""
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


WEIGHT = Range(0.0)
"""A loss weight or strength: finite, ≥ 0 (0 switches the term off)."""
POSITIVE = Range(0.0, low_open=True)
"""A temperature, bandwidth or learning rate: finite, > 0."""
PROBABILITY = Range(0.0, 1.0)
"""A mixing weight, share or probability in [0, 1]."""
DROPOUT = Range(0.0, 1.0, high_open=True)
"""A dropout probability in [0, 1)."""
GROUPS = Range(2, integer=True)
"""A number of groups or clusters (≥ 2: one group measures nothing)."""
COUNT = Range(1, integer=True)
"""A positive number of things (steps, rows, layers, restarts)."""
SIZE = Range(0, integer=True)
"""A number of things where 0 has a documented meaning (never, none)."""
SEED = Range(0, 2**32, high_open=True, integer=True)
"""A random seed (numpy's range)."""


TRAINING_ARGUMENTS_RANGES: dict[str, Range] = {
    "learning_rate": POSITIVE,
    "num_train_epochs": POSITIVE,
    "max_steps": Range(1, integer=True, also=(-1,)),
    "per_device_train_batch_size": COUNT,
    "per_device_eval_batch_size": COUNT,
    "gradient_accumulation_steps": COUNT,
    "eval_accumulation_steps": COUNT,
    "warmup_steps": Range(0.0),
    "warmup_ratio": PROBABILITY,
    "weight_decay": WEIGHT,
    "max_grad_norm": WEIGHT,
    "adam_beta1": Range(0.0, 1.0, high_open=True),
    "adam_beta2": Range(0.0, 1.0, high_open=True),
    "adam_epsilon": Range(0.0),
    "label_smoothing_factor": PROBABILITY,
    "neftune_noise_alpha": Range(0.0),
    "torch_empty_cache_steps": COUNT,
    "logging_steps": POSITIVE,
    "eval_steps": POSITIVE,
    "save_steps": POSITIVE,
    "eval_delay": Range(0.0),
    "save_total_limit": COUNT,
    "seed": SEED,
    "data_seed": SEED,
    "dataloader_num_workers": SIZE,
    "dataloader_prefetch_factor": COUNT,
    "ddp_bucket_cap_mb": COUNT,
    "ddp_timeout": COUNT,
    "local_rank": Range(-1, integer=True),
    "generation_max_length": COUNT,
    "generation_num_beams": COUNT,
}
"""The ranges of ``transformers.TrainingArguments``' numeric fields, for every fairmt Config that subclasses it
(:func:`declared_ranges` adds them below the Config's own ``RANGES``): ``GACLConfig(learning_rate=-1)`` is refused
when it is built, as the recipe key is. Steps and epochs ``> 0`` (``logging_steps``/``eval_steps``/``save_steps``
below 1 are the Trainer's ratios of the run), ``max_steps`` ≥ 1 or -1 (the epochs decide), ``max_grad_norm`` 0 =
no clipping, ``warmup_steps`` below 1 is a ratio. A field this version of transformers lacks is skipped."""


def _training_arguments_fields(cls: type) -> set[str]:
    """The dataclass fields of ``cls`` when it subclasses ``transformers.TrainingArguments`` (else none)."""
    import dataclasses

    if not any(c.__name__ == "TrainingArguments" and c.__module__.startswith("transformers") for c in cls.__mro__):
        return set()
    return {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()


def declared_ranges(cls: type) -> dict[str, Range]:
    """Field name → :class:`Range` declared by ``cls`` and its bases (``RANGES`` class attributes; a subclass's
    declaration of a field replaces its base's), over :data:`TRAINING_ARGUMENTS_RANGES` for a subclass of
    ``transformers.TrainingArguments``."""
    fields = _training_arguments_fields(cls)
    out: dict[str, Range] = {k: v for k, v in TRAINING_ARGUMENTS_RANGES.items() if k in fields}
    for c in reversed(cls.__mro__):
        out.update(vars(c).get("RANGES", {}))
    return out


def check_ranges(config: object) -> None:
    """Check every field of the dataclass ``config`` that declares a :class:`Range`: one :class:`FairmtError`
    naming the class, the field, the value and the range at the first that does not fit."""
    for name, rng in declared_ranges(type(config)).items():
        rng.check(f"{type(config).__name__}.{name}", getattr(config, name))
