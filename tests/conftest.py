import os
import warnings
from pathlib import Path

import pytest

import procs

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


def _shared_data() -> Path | None:
    env = os.environ.get("FAIRMT_TEST_DATA") or os.environ.get("FAIRMT_DATA")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data"]:
        if cand.is_dir():
            return cand
    return None


SHARED_DATA = _shared_data()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real benchmark data (../shared/data, or FAIRMT_TEST_DATA/FAIRMT_DATA); skips when absent."""
    if SHARED_DATA is None:
        pytest.skip("real benchmark data not found: put it at ../shared/data or set FAIRMT_TEST_DATA")
    return SHARED_DATA


@pytest.fixture(autouse=True, scope="session")
def _torch_threads():
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    torch.set_num_threads(1)


@pytest.fixture(autouse=True, scope="session")
def _library_log_handlers():
    """transformers creates its log handler on first use, bound to the sys.stderr of that moment: if that is one
    test's capsys stream, every later test's transformers warning hits a closed file ("--- Logging error ---").
    Create it once here, on the session's stderr."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        return
    hf_logging.get_logger("transformers")


@pytest.fixture(autouse=True)
def _no_orphan_processes():
    """Kill the process group of every child a test started through tests/procs.py that is still alive when the
    test ends, however it ended (passed, failed, stopped by pytest-timeout)."""
    yield
    left = procs.reap()
    if left:
        warnings.warn(f"killed child process groups the test left running: {left}", stacklevel=1)
