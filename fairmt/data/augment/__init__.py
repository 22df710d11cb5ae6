"""Data augmentation: counterfactual (rule-based CDA, LLM with polarity-guided prompt search) and others.

Submodules are imported on demand (``from fairmt.data.augment.cda import cda_tuple``); this package imports
nothing heavy.
"""
