"""scripts/run_classification_real.py: its summary table shows the runner's percentages as they are (issue 51: they
were scaled ×100 a second time, so 41.18 % printed as 4118.0)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fairmt.eval.classification import classification_metrics


def _script():
    path = Path(__file__).resolve().parents[2] / "scripts" / "run_classification_real.py"
    spec = importlib.util.spec_from_file_location("run_classification_real", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_summary_is_in_percent_once():
    script = _script()
    # what the runner's `test` holds: the report's summary in percent (classification runner: percent=True)
    runs = [
        classification_metrics([0, 1, 1, 0], [0, 1, 0, 0], [0, 0, 1, 1]).summary(percent=True),
        classification_metrics([0, 1, 1, 0], [0, 1, 1, 0], [0, 0, 1, 1]).summary(percent=True),
    ]
    assert [r["accuracy"] for r in runs] == [75.0, 100.0]
    assert script.fmt([r["accuracy"] for r in runs]) == "87.5 ± 17.7"
    assert script.fmt([None]) == "–"
