"""The ``classification`` recipe family: CSCL, FCL, fairness-driven sampling on text, the adversarial and INLP
baselines."""
