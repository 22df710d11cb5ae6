"""The ``sampling`` recipe family: fairness-driven sampling on images (Martin & Ogbuokiri)."""
