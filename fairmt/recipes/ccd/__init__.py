"""The ``ccd`` recipe family: CCD debiasing of a sentence encoder (``method: ccd``) and the CCD paper's baselines
DPCE and ADEPT-F (``method: dpce`` / ``adept``)."""
