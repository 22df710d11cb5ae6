"""MkDocs hooks: add the generated reference pages (``docs_gen/reference.py``) to the build, in memory."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's fairmt, not another install

import reference  # noqa: E402


def on_files(files, config):
    from mkdocs.structure.files import File

    for path, make in reference.PAGES.items():
        files.append(File.generated(config, path, content=make()))
    return files
