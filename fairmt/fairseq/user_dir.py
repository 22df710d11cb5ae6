"""``python -m fairmt.fairseq.user_dir`` prints the folder to pass to fairseq's ``--user-dir``.

fairseq imports a user dir by its folder name (its parent goes on ``sys.path``), so the folder has a name of its
own (``fairmt_gacl``) in a parent that holds nothing else: neither ``fairseq`` (which would clash with fairseq
itself) nor fairmt's other modules become top-level names.
"""

from __future__ import annotations

from pathlib import Path

USER_DIR = Path(__file__).resolve().parent / "userdir" / "fairmt_gacl"


def user_dir() -> str:
    """The ``--user-dir`` folder of the fairmt plugin (registers ``gacl_kd``, ``gacl_translation`` and
    ``gacl_multilingual_translation``)."""
    return str(USER_DIR)


if __name__ == "__main__":
    print(user_dir())
