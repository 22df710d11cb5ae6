"""``fairmt sweep``: grids and seeds over any recipe, on Optuna, aggregated from the runs' ``results.json``.

* :mod:`fairmt.sweep.spec` — the sweep's command line as a validated :class:`~fairmt.sweep.spec.SweepSpec`
  (grid keys and values checked against the recipe before any trial starts);
* :mod:`fairmt.sweep.results` — where each recipe family writes its results, the flattening of nested results into
  dotted metric names (``dev.accuracy``, ``after.seat_avg_abs``) and the names a family reports;
* :mod:`fairmt.sweep.engine` — the Optuna study (SQLite in the sweep folder, any RDB URL or a journal file), the
  workers that run one ordinary ``fairmt train`` process per trial, stale-trial detection and retries;
* :mod:`fairmt.sweep.report` — mean ± std per setting, the Pareto front (Optuna's), model selection on dev metrics
  (:func:`fairmt.eval.selection.select_checkpoint`), ``sweep.json``, ``sweep.md`` and ``tradeoff.png``.

Optuna is an optional dependency (``pip install "fairmt[sweep]"``); nothing here imports it at module import.
"""
