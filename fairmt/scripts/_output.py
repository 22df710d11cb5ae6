"""One rule for every recipe's output folder: results never overwrite an earlier run's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError


def prepare_output_dir(path: str | os.PathLike, config: dict[str, Any]) -> Path:
    """Create the run's output folder, refusing one that already holds files unless the recipe says
    ``overwrite: true`` (``fairmt train --overwrite``) or resumes from a checkpoint. Checked on the main process only
    (under ``accelerate launch`` every process runs the recipe; the others would see the main one's new files)."""
    out = Path(path)
    resuming = bool(config.get("resume_from_checkpoint") or (config.get("training") or {}).get("resume_from_checkpoint"))
    main_process = os.environ.get("RANK", "0") == "0"
    if main_process and out.is_dir() and any(out.iterdir()) and not (config.get("overwrite") or resuming):
        raise FairmtError(
            f"output folder {out} already holds an earlier run's files; choose another training.output_dir, or pass "
            "--overwrite (recipe key overwrite: true) to replace them"
        )
    out.mkdir(parents=True, exist_ok=True)
    return out
