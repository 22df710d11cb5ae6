"""The ``gacl`` recipe family: GACL (+ KD) fine-tuning of a translation model (Lee et al. 2023)."""
