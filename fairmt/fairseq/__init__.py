"""The fairseq front end of fairmt: GACL + KD as a fairseq criterion (``gacl_kd``) and tasks (``gacl_translation``;
``gacl_multilingual_translation`` for M2M-100 / NLLB-style language tokens on ``translation_multi_simple_epoch``).

Point fairseq at the plugin folder::

    fairseq-train DATA --user-dir $(python -m fairmt.fairseq.user_dir) --task gacl_translation --criterion gacl_kd ...
    fairseq-train DATA --user-dir $(python -m fairmt.fairseq.user_dir) --task gacl_multilingual_translation
        --lang-pairs en-de --lang-dict DATA/langs.txt --encoder-langtok src --decoder-langtok --criterion gacl_kd ...

The criterion calls :mod:`fairmt.losses` (the same functions as the Hugging Face trainer) and the data come from
``fairmt data fairseq-prep`` (fairmt's GACL data preparation). Importing this package does not import fairseq;
the registration happens in :mod:`fairmt.fairseq.criterion` / :mod:`fairmt.fairseq.task` /
:mod:`fairmt.fairseq.multilingual`, which the plugin folder imports. Loading the plugin sets
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (fairseq 0.12 checkpoints hold pickled argparse objects that torch ≥ 2.6
refuses by default): every checkpoint fairseq then loads is fully unpickled, so load trusted checkpoints only.

(From Python: ``fairmt.fairseq.user_dir.user_dir()`` returns the folder.)
"""
