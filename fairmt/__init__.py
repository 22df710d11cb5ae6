"""fairmt: fairness-aware training and evaluation for machine translation, text embeddings and classification.

The package is layered (see DESIGN): ``fairmt.losses`` (pure torch) → ``fairmt.data`` → ``fairmt.models`` →
``fairmt.trainers`` → ``fairmt.eval`` → ``fairmt.cli`` / recipes. Importing ``fairmt`` itself imports nothing
heavy, so file-based evaluators and the CLI start fast.
"""

__version__ = "0.1.0"
