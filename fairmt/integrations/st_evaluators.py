"""SEAT, CCED and Bias-IR as sentence-transformers evaluators.

Each is a ``SentenceEvaluator`` (``sentence_transformers.sentence_transformer.evaluation``; ``BaseEvaluator`` in
sentence-transformers 6): pass it to ``SentenceTransformerTrainer(evaluator=...)`` (a list of them works too) or
call it on a model. ``__call__(model, output_path=None, epoch=-1, steps=-1)`` returns a dict of floats, appends a
row to ``<output_path>/<suite>_evaluation[_<name>]_results.csv`` as the library's own evaluators do, and keeps the
full result (with its signature) in ``last_result``. The suite is scored by the code of ``fairmt eval embeddings``
(:mod:`fairmt.model_eval.embeddings`), so the numbers are the command's on the same model and settings; the
constructor keywords are the command's options (``--seat-tests`` → ``seat_tests``, ``--seat-n-samples`` →
``seat_n_samples``, ...), with the same defaults.

All three measure a bias (lower is better), and they follow sentence-transformers' convention that every primary
metric is greater-is-better (its ``negative_mse``): the primary metric is the negated headline number
(``seat_negative_avg_abs_effect_size``, ``cced_negative_gap``, ``bias_ir_negative_avg_dev``), ``greater_is_better``
is True, and the raw measures are kept beside it (``cced_gap``, ...). So ``metric_for_best_model`` alone keeps the
LEAST biased checkpoint (the Trainer's ``greater_is_better`` defaults to True for any metric not named ``*loss``),
and a list of evaluators (a ``SequentialEvaluator``, whose ``sequential_score`` is the last primary metric) is
greater-is-better too::

    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from fairmt.integrations import CCEDEvaluator, SEATEvaluator

    model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")
    evaluator = [CCEDEvaluator(cced_tuples="heldout.jsonl"), SEATEvaluator(seat_tests="6,7,8", seat_n_samples=10_000)]
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train, evaluator=evaluator)
    # args: metric_for_best_model="eval_cced_negative_gap", load_best_model_at_end=True

(Selecting by a raw measure, ``eval_cced_gap``, needs ``greater_is_better=False`` in the arguments.)

The CSV rule: each call appends a row to ``<output_path>/<suite>_evaluation[_<name>]_results.csv``; a CSV already
there with other columns (written with other settings: other SEAT tests, other groups, an older fairmt) is never
appended to with misaligned rows: the call raises a FairmtError naming the file, which ends ``train()`` at the
first evaluation. Give another ``output_dir``, a ``name=`` (its own CSV), or ``write_csv=False``.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

from fairmt.errors import FairmtError
from fairmt.model_eval.embeddings import (
    SEAT_TESTS,
    bias_ir_section,
    cced_section,
    embedding_runner,
    load_bias_ir_queries,
    load_cced_tuples,
    load_seat_tests,
    seat_section,
)  # fmt: skip


def _key(text: str) -> str:
    """A metric-name-safe form of a test, pair or category name (``male-female`` → ``male_female``)."""
    return re.sub(r"[^0-9A-Za-z]+", "_", str(text)).strip("_").lower()


class _SuiteEvaluator(SentenceEvaluator):
    """What the three evaluators share: the encoder, the CSV, the metric names."""

    suite = ""
    headline = ""

    def __init__(
        self,
        *,
        pooling: str = "auto",
        batch_size: int = 32,
        device: str | None = None,
        name: str = "",
        write_csv: bool = True,
        show_progress_bar: bool = False,
    ):
        super().__init__()
        from fairmt.eval.embedding.encode import POOLINGS

        if pooling not in POOLINGS:
            raise FairmtError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
        if int(batch_size) < 1:
            raise FairmtError(f"batch_size must be ≥ 1, got {batch_size}")
        self.pooling, self.batch_size, self.device = pooling, int(batch_size), device
        self.name, self.write_csv, self.show_progress_bar = name, write_csv, show_progress_bar
        # sentence-transformers' convention: a greater-is-better primary metric (the negated bias), raw ones beside
        self.greater_is_better = True
        self.primary_metric = f"{self.suite}_negative_{self.headline}"
        self.csv_file = f"{self.suite}_evaluation" + (f"_{name}" if name else "") + "_results.csv"
        self.last_result: dict | None = None

    # one suite: (JSON section as `fairmt eval embeddings` writes it, flat float metrics)
    def _score(self, runner) -> tuple[dict, dict[str, float]]:
        raise NotImplementedError

    def __call__(self, model: Any, output_path: str | None = None, epoch: float = -1, steps: int = -1) -> dict:
        runner = embedding_runner(
            model, self.pooling, batch_size=self.batch_size, device=self.device, progress=self.show_progress_bar
        )
        module = getattr(runner, "model", None)
        was_training = bool(getattr(module, "training", False))
        if module is not None and hasattr(module, "eval"):
            module.eval()  # no dropout while scoring (the Trainer puts the model back into training)
        try:
            section, flat = self._score(runner)
        finally:
            if module is not None and was_training:
                module.train()
        section["pooling"] = runner.pooling
        self.last_result = section
        metrics = {
            f"{self.suite}_negative_{self.headline}": -float(flat[self.headline]),
            **{f"{self.suite}_{k}": float(v) for k, v in flat.items()},
        }
        if output_path is not None and self.write_csv:
            self._write_csv(output_path, epoch, steps, metrics)
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        if hasattr(model, "model_card_data"):
            self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    def _write_csv(self, output_path: str, epoch, steps, metrics: dict[str, float]) -> None:
        os.makedirs(output_path, exist_ok=True)
        path = os.path.join(output_path, self.csv_file)
        header = ["epoch", "steps", *metrics]
        exists = os.path.isfile(path)
        if exists:  # a file of other columns (other settings) is not appended to with misaligned rows
            with open(path, newline="", encoding="utf-8") as fh:
                first = next(csv.reader(fh), None)
            if first != header:
                raise FairmtError(
                    f"{path} has the columns {first}, not {header}: it was written with other "
                    "settings; give another output_path or name"
                )
        from fairmt.outputs import appending

        with appending(
            path, what=f"the {self.description} evaluator's CSV", newline="", mode="a" if exists else "w"
        ) as fh:  # a full disk: the writer's one line
            writer = csv.writer(fh)
            if not exists:
                writer.writerow(header)
            writer.writerow([epoch, steps, *metrics.values()])

    @property
    def description(self) -> str:
        """The task name: sentence-transformers' card makes its results' task type from it, fairmt's card uses the
        same (:data:`fairmt.eval.modelcard.SUITE_TASKS`)."""
        from fairmt.eval.modelcard import SUITE_TASKS

        return SUITE_TASKS[self.suite]

    def get_config_dict(self) -> dict[str, Any]:
        return {"pooling": self.pooling}


class SEATEvaluator(_SuiteEvaluator):
    """SEAT (May et al., 2019) effect sizes and permutation p-values; primary metric
    ``seat_negative_avg_abs_effect_size`` (minus the mean |d| over the tests: greater is better), beside the raw
    ``seat_avg_abs_effect_size``. Also ``seat_<test>_effect_size`` and ``seat_<test>_p_value``.

    Args:
        seat_tests: the tests (``"6,6b,7"`` or a list; default all six gender tests). ``tests`` is the same.
        seat_dir: the folder of ``sent-weat*.jsonl`` (default ``$FAIRMT_DATA/embedding_bias/seat``).
        seat_n_samples, seed: the sampled permutation test when the exact one is too large (default
            :data:`fairmt.eval.embedding.seat.SEAT_N_SAMPLES`; ``n_samples`` is the old name, deprecated).
        pooling: ``auto`` (the model's own sentence-transformers pooling), ``model``, ``mean`` or ``first``.
    """

    suite, headline = "seat", "avg_abs_effect_size"

    def __init__(
        self,
        seat_tests: str | Sequence[str] = SEAT_TESTS,
        seat_dir: str | Path | None = None,
        seat_n_samples: int | None = None,
        seed: int = 0,
        *,
        tests: str | Sequence[str] | None = None,
        n_samples: int | None = None,
        **kwargs,
    ):
        from fairmt.eval.embedding.seat import seat_n_samples_of

        super().__init__(**kwargs)
        seat_n_samples = seat_n_samples_of(seat_n_samples, n_samples, "SEATEvaluator")
        if seat_n_samples < 1:
            raise FairmtError(f"seat_n_samples must be ≥ 1, got {seat_n_samples}")
        self.tests = load_seat_tests(tests if tests is not None else seat_tests, seat_dir)
        self.seat_n_samples, self.seed = seat_n_samples, int(seed)

    @property
    def n_samples(self) -> int:
        """The old name of :attr:`seat_n_samples` (until fairmt 0.2)."""
        return self.seat_n_samples

    def _score(self, runner):
        section, _, _ = seat_section(self.tests, runner.encode, runner.pooling, self.seat_n_samples, self.seed)
        flat = {"avg_abs_effect_size": section["avg_abs_effect_size"]}
        for test, res in section["tests"].items():
            flat[f"{_key(test)}_effect_size"] = res["effect_size"]
            flat[f"{_key(test)}_p_value"] = res["p_value"]
        return section, flat

    def get_config_dict(self) -> dict[str, Any]:
        # n_samples: the old key of seat_n_samples, written as well until fairmt 0.2
        return {
            "seat_tests": [t.name for t in self.tests],
            "seat_n_samples": self.seat_n_samples,
            "n_samples": self.seat_n_samples,
            "seed": self.seed,
            "pooling": self.pooling,
        }


class CCEDEvaluator(_SuiteEvaluator):
    """The CCED gap (content-conditional equal distance, the CCD paper's metric) on held-out tuples; primary metric
    ``cced_negative_gap`` (minus the gap: greater is better), beside the raw ``cced_gap``. Also ``cced_<a>_<b>_gap``
    per pair of groups and ``cced_<g>_distance``.

    Args:
        cced_tuples: JSONL of ``{"neutral", "male", "female", ...}`` tuples (a path).
        cced_normalize: L2-normalise the embeddings before the distances.
        pooling: as :class:`SEATEvaluator`.
    """

    suite, headline = "cced", "gap"

    def __init__(self, cced_tuples: str | Path | None = None, cced_normalize: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.tuples, self.groups = load_cced_tuples(cced_tuples)
        self.cced_normalize = bool(cced_normalize)

    def _score(self, runner):
        section, _, _ = cced_section(self.tuples, self.groups, runner.encode, runner.pooling, self.cced_normalize)
        flat = {"gap": section["gap"]}
        flat.update({f"{_key(pair)}_gap": v for pair, v in section["pair_gap"].items()})
        flat.update({f"{_key(g)}_distance": v for g, v in section["mean_distance"].items()})
        return section, flat

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "tuples": len(self.tuples),
            "groups": self.groups,
            "cced_normalize": self.cced_normalize,
            "pooling": self.pooling,
        }


class BiasIREvaluator(_SuiteEvaluator):
    """Grep-BiasIR (Krieg et al., 2023): the male ratio of the top-ranked gendered document per category; primary
    metric ``bias_ir_negative_avg_dev`` (minus the mean |ratio − 0.5|: greater is better), beside the raw
    ``bias_ir_avg_dev``. Also ``bias_ir_<category>_male_ratio`` and
    ``bias_ir_male_ratio_all``.

    Args:
        bias_ir_dir: the Grep-BiasIR folder (default ``$FAIRMT_DATA/embedding_bias/bias_ir``).
        bias_ir_doc: ``title+body`` or ``body``, the document text embedded.
        bias_ir_limit: only the first N queries of each category (a quick slice).
        pooling: as :class:`SEATEvaluator`.
    """

    suite, headline = "bias_ir", "avg_dev"

    def __init__(
        self,
        bias_ir_dir: str | Path | None = None,
        bias_ir_doc: str = "title+body",
        bias_ir_limit: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        from fairmt.model_eval.embeddings import BIAS_IR_DOCS

        if bias_ir_doc not in BIAS_IR_DOCS:
            raise FairmtError(f"unknown bias_ir_doc {bias_ir_doc!r}; choose from {', '.join(BIAS_IR_DOCS)}")
        if bias_ir_limit is not None and int(bias_ir_limit) < 1:
            raise FairmtError(f"bias_ir_limit must be ≥ 1, got {bias_ir_limit}")
        self.queries = load_bias_ir_queries(bias_ir_dir, bias_ir_limit)
        self.bias_ir_doc = bias_ir_doc

    def _score(self, runner):
        section, _, _ = bias_ir_section(self.queries, runner.encode, runner.pooling, self.bias_ir_doc)
        flat = {"avg_dev": section["avg_dev"], "male_ratio_all": section["male_ratio_all"]}
        for cat in section["categories"]:  # NaN (no query of the category ranked) stays a NaN, never dropped
            flat[f"{_key(cat['short'])}_male_ratio"] = cat["male_ratio"]
        return section, flat

    def get_config_dict(self) -> dict[str, Any]:
        return {"queries": len(self.queries), "bias_ir_doc": self.bias_ir_doc, "pooling": self.pooling}


__all__ = ["BiasIREvaluator", "CCEDEvaluator", "SEATEvaluator"]
