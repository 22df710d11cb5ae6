"""MkDocs hooks: add the generated reference pages (``docs_gen/reference.py``) to the build, in memory, and fill the
paper-card placeholders of the pages (``docs_gen/cards.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's fairmt, not another install

import cards  # noqa: E402
import reference  # noqa: E402


def on_files(files, config):
    from mkdocs.structure.files import File

    for path, make in reference.PAGES.items():
        files.append(File.generated(config, path, content=make()))
    return files


def on_page_markdown(markdown, page, config, files):
    from mkdocs.exceptions import PluginError

    try:
        return cards.expand(markdown)
    except cards.CardError as err:
        raise PluginError(f"{page.file.src_path}: {err}") from None
