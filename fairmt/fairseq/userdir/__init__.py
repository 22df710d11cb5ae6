"""Holds the fairseq ``--user-dir`` folder ``fairmt_gacl`` (see :mod:`fairmt.fairseq.user_dir`)."""
