"""``add`` / ``add_batch`` then ``compute()`` for fairmt's ``evaluate`` modules, as every ``evaluate`` metric.

``evaluate`` stores only the module's features (``predictions``, ``references``) batch by batch; fairmt's modules
also take per-example inputs that are not features (``groups``, ``hidden``, ``logits``, ``scores`` of
``classification_fairness``; ``counterfactual_references`` of ``mt_geneval``; ``sources`` of ``winomt``).
:class:`PerExampleInputs` keeps those beside the stored batches (in this process: with ``num_process > 1`` give
them to ``compute``), checks each batch as ``compute`` checks its inputs, and hands the concatenation to
``_compute``: ``add_batch`` × k then ``compute()`` gives the numbers of one ``compute`` on the whole split.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairmt.errors import FairmtError

_FEATURES = ("predictions", "references")


class PerExampleInputs:
    """Mix in before ``evaluate.Metric``; set ``module`` (the name in :data:`fairmt.evaluate_modules.MODULES`) and
    ``per_example`` (the keyword arguments of ``_compute`` with one entry per example)."""

    module = ""
    per_example: tuple[str, ...] = ()

    # ---------------------------------------------------------------- the pending batches
    def _pending(self) -> dict[str, Any]:
        if getattr(self, "_fairmt_pending", None) is None:
            self._fairmt_pending = {"rows": 0, "batches": 0, "extra": {}, "given": {}}
        return self._fairmt_pending

    def _reset(self) -> None:
        self._fairmt_pending = None

    def _check(self, rows: int | None = None, **inputs: Any) -> dict[str, Any]:
        from fairmt.eval.validate import module_inputs

        return module_inputs(self.module, rows=rows, **inputs)

    def _keep(self, extras: dict[str, Any], rows: int) -> None:
        state = self._pending()
        for key in self.per_example:
            value = extras.get(key)
            if value is None:
                continue
            state["given"][key] = state["given"].get(key, 0) + rows
            have = state["extra"].get(key)
            if have is None:
                state["extra"][key] = (
                    {k: list(v) for k, v in value.items()} if isinstance(value, Mapping) else list(value)
                )
            elif isinstance(have, dict) != isinstance(value, Mapping) or (
                isinstance(have, dict) and set(have) != set(value)
            ):
                raise FairmtError(
                    f"{self.module}: {key} changes form between batches (a dict of columns "
                    f"{sorted(have) if isinstance(have, dict) else 'in one'}, a list in another); give "
                    "it the same way in every add/add_batch"
                )
            elif isinstance(have, dict):
                for k, col in value.items():
                    have[k].extend(col)
            else:
                have.extend(value)
        state["rows"] += rows
        state["batches"] += 1

    # ---------------------------------------------------------------- evaluate's API
    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """``evaluate``'s ``add_batch``; the per-example inputs (see the module card) may come with each batch."""
        if getattr(self, "_fairmt_in_compute", False):  # compute(predictions=...) storing its own, checked inputs
            return super().add_batch(predictions=predictions, references=references, **kwargs)
        extras = {k: kwargs.pop(k) for k in list(kwargs) if k in self.per_example}
        checked = self._check(predictions=predictions, references=references, **extras)
        super().add_batch(predictions=checked["predictions"], references=checked["references"], **kwargs)
        self._keep({k: checked.get(k) for k in extras}, len(checked["predictions"]))

    def add(self, *, prediction=None, reference=None, **kwargs):
        """``evaluate``'s ``add`` (one example); its per-example inputs (one group, one hidden vector, ...) may come
        with it; a dict of protected attributes gives one value per attribute."""
        extras = {k: kwargs.pop(k) for k in list(kwargs) if k in self.per_example}
        one = {
            k: ({a: [v] for a, v in value.items()} if isinstance(value, Mapping) else [value])
            for k, value in extras.items()
            if value is not None
        }
        checked = self._check(predictions=[prediction], references=[reference], **one)
        super().add(prediction=checked["predictions"][0], reference=checked["references"][0], **kwargs)
        self._keep({k: checked.get(k) for k in one}, 1)

    def compute(self, *, predictions=None, references=None, **kwargs):
        """``evaluate``'s ``compute``: on the given inputs, or on everything ``add``/``add_batch`` stored (plus
        these, as a last batch). Checks the inputs before ``evaluate`` casts them to the features (a float label
        would become 0 or 1, a ragged or NaN vector would fail deep inside or be scored): one FairmtError (a
        ValueError) naming the argument."""
        state = getattr(self, "_fairmt_pending", None)
        try:  # a bad input leaves the added batches as they were (fix the call and compute again)
            if state is None:
                if predictions is None and references is None:
                    raise FairmtError(
                        f"{self.module}: nothing to score: give predictions= and references= to "
                        "compute(), or add them first with add() / add_batch()"
                    )
                checked = self._check(predictions=predictions, references=references, **kwargs)
                self._fairmt_in_compute = True
                return super().compute(**checked)
            if predictions is not None or references is not None:  # evaluate's rule: a last batch
                self.add_batch(
                    predictions=predictions,
                    references=references,
                    **{k: kwargs.pop(k) for k in list(kwargs) if k in self.per_example},
                )
            state = self._pending()
            compute_given: list[str] = []  # taken back if this call fails: the stored batches stay as they were
            for key, value in list(kwargs.items()):
                if key in self.per_example and value is not None:
                    if key in state["extra"]:
                        raise FairmtError(
                            f"{self.module}: {key} was given to add/add_batch and to compute; give it in one place"
                        )
                    state["extra"][key], state["given"][key] = value, state["rows"]
                    kwargs.pop(key)
                    compute_given.append(key)
            try:
                partial = {k: n for k, n in state["given"].items() if n != state["rows"]}
                if partial:
                    key, n = next(iter(partial.items()))
                    raise FairmtError(
                        f"{self.module}: {key} was given for {n} of the {state['rows']} examples added; "
                        "give it with every add/add_batch, or with none"
                    )
                checked = self._check(rows=state["rows"], **state["extra"], **kwargs)
            except FairmtError:
                for key in compute_given:
                    state["extra"].pop(key), state["given"].pop(key)
                raise
            self._reset()  # from here on evaluate consumes its stored batches, whatever happens
            self._fairmt_in_compute = True
            return super().compute(**checked)
        finally:
            self._fairmt_in_compute = False
