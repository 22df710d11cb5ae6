import os
import sys
import warnings
from pathlib import Path

import pytest

# The tests are in one folder per layer (tests/<layer>/) and their shared helpers in tests/support, imported as
# top-level modules (needs, procs, ...); a test file may also reuse another one's helpers by module name.
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

import needs  # noqa: E402
import procs  # noqa: E402
import time_budget  # noqa: E402
from torchrun_pool import mark_pool_users_slow  # noqa: E402

sys.path[1:1] = map(str, procs.LAYERS)  # the layer folders (procs.LAYERS), after tests/support

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


SHARED_DATA = needs.shared_data_dir()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real benchmark data (../shared/data, or FAIRMT_TEST_DATA/FAIRMT_DATA); skips when absent (tests/support/needs.py)."""
    needs.require("data")
    assert SHARED_DATA is not None
    return SHARED_DATA


@pytest.fixture(autouse=True, scope="session")
def _torch_threads():
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _gc_freeze():
    """Move what is alive when a test starts (the imported libraries, session and module fixtures, what earlier tests
    left) out of the garbage collector's sight (``gc.freeze``), after collecting what is garbage. The Trainer calls
    ``gc.collect()`` at the start of every ``train()`` (accelerate's ``free_memory``), and Python's own full
    collections walk every object not frozen: in a pytest process that has imported torch, transformers, datasets
    and fairmt a full collection walked millions of objects, ~0.3 s a training run. Frozen once per module, the
    objects a module's tests made still piled up: full collections took 9 % of the CPU time of four recipe files and
    16 % of four CLI and docs files (measured with ``gc.callbacks``). Per test, the collection at the start walks
    only what the test before made (~3 ms). The whole suite: 1,072 -> 1,036 user CPU-s, the largest process's peak
    memory 2.18 -> 2.15 GB. What this gives up: a reference cycle that was alive when a test started (a module
    fixture's objects, dropped at the module's end) is never collected in this process; only memory, which the peak
    above measures. The trainers are told so (``collector_managed_by_caller``): asking ``gc.get_freeze_count()``
    instead walks every frozen object at each ``train()`` (a million after three test files: 0.15 s a call; 34 CPU-s
    of the whole suite's profile)."""
    import gc

    from fairmt.trainers.faults import collector_managed_by_caller

    gc.collect()
    gc.freeze()
    collector_managed_by_caller()
    yield


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
    """Kill the process group of every child a test started through tests/support/procs.py that is still alive when the
    test ends, however it ended (passed, failed, stopped by pytest-timeout)."""
    yield
    left = procs.reap()
    if left:
        warnings.warn(f"killed child process groups the test left running: {left}", stacklevel=1)


# The test files that take longest, in that order (their measured seconds in tests/support/time_budget.json). Under
# ``-n 2 --dist loadfile`` they are handed out first and the short files fill the end, so both workers finish
# together; xdist's default order (files with the most tests first) handed these out last and left one worker
# running alone for a minute. Order only: every file still runs, and any order must pass.
LONGEST_FIRST = time_budget.measured_order()


_CHILD_TMP: list = []


def pytest_configure(config):
    needs.hide_modules()  # FAIRMT_TEST_HIDE's Python modules (tests/support/needs.py), in every pytest process
    config.pluginmanager.register(time_budget.Recorder(config), "fairmt-time-budget")  # tests/support/time_budget.py
    if getattr(config.option, "dist", "no") == "loadfile":
        config.option.loadscopereorder = False  # keep the collection order below
    # Child processes get a temporary folder of this test run's own, removed when it ends: launchers leave
    # their logs behind (torchrun: a torchelastic_* folder per launch, ~20 per suite run in /tmp). This process and
    # pytest's tmp_path keep the system one (gettempdir() caches it first).
    # Made once, by the first pytest process (xdist's workers inherit it: a folder per worker nested in it made
    # Chromium's and PostgreSQL's socket paths too long); a short name for the same reason.
    import tempfile

    tempfile.gettempdir()
    if "FAIRMT_TEST_CHILD_TMP" not in os.environ:
        _CHILD_TMP.append(tempfile.TemporaryDirectory(prefix="fmt-"))
        os.chmod(_CHILD_TMP[-1].name, 0o1777)  # as /tmp: the PostgreSQL fixture's server runs as another user
        os.environ["TMPDIR"] = os.environ["FAIRMT_TEST_CHILD_TMP"] = _CHILD_TMP[-1].name
        # FAIRMT_TEST_HIDE: the hidden optional parts made unreachable for this run (xdist's workers inherit it)
        os.environ.update(needs.hide_for_this_run(Path(_CHILD_TMP[-1].name)))


def pytest_unconfigure(config):
    while _CHILD_TMP:
        _CHILD_TMP.pop().cleanup()


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects: the measured-slow tests are marked here
def pytest_collection_modifyitems(config, items):
    time_budget.mark_measured_slow(items)  # `slow` for the tests measured slow (tests/support/time_budget.json)
    mark_pool_users_slow(items)  # `slow` for the tests that start the torchrun pool (tests/support/torchrun_pool.py)
    needs.skip_missing(
        items
    )  # @pytest.mark.needs / @pytest.mark.data: skip, naming what is missing (tests/support/needs.py)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent without it
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the files that use the torchrun pool (``torchrun_pool.FILES``) as ONE unit of work:
    one xdist worker runs them in turn, in the order above, with one pool; every other file is its own unit."""
    if getattr(config.option, "dist", "no") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    from torchrun_pool import FILES

    class PoolFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return "the torchrun pool's files" if path.rsplit("/", 1)[-1] in FILES else path

    return PoolFilesTogether(config, log)


@pytest.fixture(scope="session")
def torchrun_pool(tmp_path_factory):
    """One torchrun launch (2 processes, gloo) per pytest process that runs the two-process jobs of the DDP tests in
    turn, with torch, transformers and the trainers imported once: see tests/support/torchrun_pool.py."""
    from torchrun_pool import TorchrunPool

    pool = TorchrunPool(tmp_path_factory.mktemp("torchrun_pool"))
    yield pool
    pool.close()


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    """A Hub in ``tmp_path/hub`` behind a patched ``HfApi`` (create_repo, upload_folder, create_commit), reachable
    under HF_HUB_OFFLINE: ``fairmt push`` tests read what was uploaded there."""
    import shutil

    from huggingface_hub import HfApi

    hub = tmp_path / "hub"
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kw: None)

    def upload_folder(self, repo_id, folder_path, ignore_patterns=None, **kw):
        """Copies what the real upload_folder would upload: the same pattern filter (huggingface_hub's own)."""
        from huggingface_hub.utils import filter_repo_objects

        root = Path(folder_path)
        files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
        for rel in filter_repo_objects(files, ignore_patterns=ignore_patterns):
            (hub / repo_id / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / rel, hub / repo_id / rel)
        return type("C", (), {"commit_url": f"local://{repo_id}"})()

    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)

    def create_commit(self, repo_id, operations, commit_message=None, **kw):
        """Stores what one commit of these operations would hold (fairmt push uploads its files in one commit)."""
        for op in operations:
            dest = hub / repo_id / op.path_in_repo
            dest.parent.mkdir(parents=True, exist_ok=True)
            src = op.path_or_fileobj
            if isinstance(src, (str, Path)):
                shutil.copy(src, dest)
            else:
                dest.write_bytes(src if isinstance(src, bytes) else src.read())
        return type("C", (), {"commit_url": f"local://{repo_id}"})()

    monkeypatch.setattr(HfApi, "create_commit", create_commit)
    monkeypatch.setattr("fairmt.hub._offline", lambda: False)  # the fake hub is reachable
    return hub
