"""``fairmt demo``: the offline end-to-end GACL + KD demonstration."""

from __future__ import annotations

import argparse


class _DefaultsHelp(argparse.ArgumentDefaultsHelpFormatter):
    """Show each option's default, except where there is none (None)."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


def register(groups) -> None:
    from fairmt.commands._options import count, output_dir, seed

    _positive = count(1)
    p = groups["top"].add_parser(
        "demo",
        help="train a tiny MT model with GACL + KD (gender-aware contrastive learning + knowledge distillation) "
        "offline and report gender accuracy over seeds",
        description="Offline end to end, per seed: a tiny M2M-100-architecture model trained on stereotyped data "
        "(the 'original'), then fine-tuned on gender-balanced data with GACL + KD (gender-aware contrastive learning "
        "+ knowledge distillation from a frozen copy of the original) and, as a control, with the plain "
        "MT loss on the same batches; gender accuracy, ΔG, anti-stereotypical accuracy and chrF++ on held-out "
        "sentences, mean ± std over the seeds. --multilingual asks the GACL paper's transfer question instead (one "
        "model in de, es, it, fine-tuned on en→de only, gains in- and out-of-domain, a verdict). A demonstration of "
        "the pipeline on a toy model, not a result about real MT systems.",
        formatter_class=_DefaultsHelp,
    )
    output_dir(
        p,
        "--output-dir",
        what="demo folder",
        help="where to write the models and report.json (default: a temporary folder); a folder that already "
        "holds files is refused unless --overwrite",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier demo in --output-dir: what fairmt wrote there is removed, nothing else",
    )
    p.add_argument(
        "--multilingual",
        action="store_true",
        help="the GACL paper's transfer question instead: one model trained as the original in German, "
        "Spanish and Italian, fine-tuned on en→de only, scored in-domain (de) and out-of-domain "
        "(es, it), with a verdict on whether GACL's debiasing transfers (it takes longer than the en–de demo)",
    )
    p.add_argument(
        "--seeds",
        type=_positive,
        help="how many seeds to run, the table shows mean ± std (default: 3) (--multilingual: 5)",
    )
    p.add_argument("--seed", type=seed, default=0, help="first seed (seeds SEED, SEED+1, ...)")
    p.add_argument(
        "--pretrain-steps",
        type=_positive,
        help="steps of the stereotyped 'original' model (default: 400) (--multilingual: 1200, 400 per target language)",
    )
    p.add_argument(
        "--finetune-steps",
        "--gacl-steps",
        dest="finetune_steps",
        type=_positive,
        default=80,
        help="steps of GACL + KD fine-tuning, and of the control",
    )
    p.add_argument("--variant", choices=["paper", "official"], default="paper", help="GACL variant")
    p.add_argument(
        "--threads",
        type=_positive,
        help="torch threads (default: $OMP_NUM_THREADS, else 1: the table in docs/get-started.md is the 1-thread run)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(handler=_run)


def _run(args) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("DS_ACCELERATOR", "cpu")  # the demo runs on the CPU: no DeepSpeed "no accelerator" warning
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    import datasets

    datasets.disable_progress_bars()
    from fairmt.demo import ML_PRETRAIN_STEPS, ML_SEEDS, run_demo, run_multilingual_demo
    from fairmt.outputs import release_run_dir

    runner = run_multilingual_demo if args.multilingual else run_demo  # the same arguments, their own defaults
    args.seeds = args.seeds or (ML_SEEDS if args.multilingual else 3)
    args.pretrain_steps = args.pretrain_steps or (ML_PRETRAIN_STEPS if args.multilingual else 400)

    try:
        runner(
            args.output_dir,
            seeds=args.seeds,
            pretrain_steps=args.pretrain_steps,
            finetune_steps=args.finetune_steps,
            variant=args.variant,
            first_seed=args.seed,
            overwrite=args.overwrite,
            threads=args.threads,
            progress=not args.no_progress,
        )
    finally:
        release_run_dir()  # the demo's folder is free again
    return 0
