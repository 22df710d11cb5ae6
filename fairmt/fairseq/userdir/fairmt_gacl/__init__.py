"""fairseq ``--user-dir`` plugin of fairmt: registers the criterion ``gacl_kd`` and the tasks ``gacl_translation`` and
``gacl_multilingual_translation``.

The registrations live in ``fairmt.fairseq.criterion``, ``fairmt.fairseq.task`` and ``fairmt.fairseq.multilingual``
(imported once, whichever way they are reached). fairseq 0.12 loads checkpoints with ``torch.load`` without
``weights_only``; torch ≥ 2.6 refuses their pickled argparse objects unless ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``, set
here if unset: checkpoints are then fully unpickled, so resume from and distil from trusted checkpoints only.
"""

import os

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

from fairmt.fairseq import criterion, multilingual, task  # noqa: E402,F401  (registers gacl_kd and the two tasks)
