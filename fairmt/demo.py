"""``fairmt demo``: GACL + KD end to end, offline, on a tiny model, in a few minutes on 2 CPU cores.

1. Build a small M2M-100-architecture model and a sentencepiece tokenizer from fairmt's own English–German
   gendered sentence set (:mod:`fairmt.data.demo_corpus`).
2. Train it as the "original" MT model on stereotyped data (most doctors male, most nurses female, ...).
3. Measure gender accuracy on held-out sentence templates (both genders, every occupation).
4. Fine-tune with GACL + KD (teacher = frozen copy of the original) on gender-balanced data, and measure again;
   as a control, fine-tune the same original model with the plain MT loss on the same data for as many steps.

This is a demonstration of the pipeline on a toy model, not a result about real MT systems.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path


def _pairs_dataset(pairs):
    from datasets import Dataset

    return Dataset.from_dict({"src": [p.en for p in pairs], "tgt": [p.de for p in pairs]})


def run_demo(
    output_dir: str | None = None,
    pretrain_steps: int = 600,
    gacl_steps: int = 200,
    batch_size: int = 16,
    seed: int = 0,
    variant: str = "paper",
    log=print,
) -> dict:
    import torch
    from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments, set_seed

    from fairmt.data.demo_corpus import demo_splits, gender_accuracy
    from fairmt.data.gacl import GenderContrastiveCollator, prepare_gacl_pairs, tokenize_gacl
    from fairmt.models import load_translation_model
    from fairmt.models.tiny import build_tiny_translation_model
    from fairmt.trainers.gacl import GACLConfig, GACLTrainer

    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    set_seed(seed)
    out = Path(output_dir or tempfile.mkdtemp(prefix="fairmt-demo-"))
    t0 = time.time()
    biased, balanced, heldout = demo_splits(seed=seed)
    log(f"[1/4] building a tiny M2M-100-architecture model and tokenizer in {out / 'base'}")
    build_tiny_translation_model(
        out / "base", [(p.en, p.de) for p in balanced + heldout], arch="m2m100", d_model=128, ffn_dim=256,
        encoder_layers=3, decoder_layers=2, dropout=0.1, seed=seed,
    )
    tm = load_translation_model(str(out / "base"), "en", "de")
    common = dict(
        per_device_train_batch_size=batch_size, logging_steps=max(1, min(50, gacl_steps // 4)), report_to=[], use_cpu=True, save_strategy="no",
        disable_tqdm=True, seed=seed, lr_scheduler_type="inverse_sqrt", warmup_steps=50, weight_decay=0.0,
    )

    def train_plain(model, pairs, name, steps, lr):
        """Plain MT fine-tuning (the stock Seq2SeqTrainer)."""
        data = _pairs_dataset(pairs).map(
            lambda b: model.encode(b["src"], b["tgt"], max_length=64), batched=True, remove_columns=["src", "tgt"]
        )
        args = Seq2SeqTrainingArguments(output_dir=str(out / name), max_steps=steps, learning_rate=lr, **common)
        Seq2SeqTrainer(
            model=model.model, args=args, train_dataset=data,
            data_collator=DataCollatorForSeq2Seq(model.tokenizer, model=model.model), processing_class=model.tokenizer,
        ).train()

    log(f"[2/4] training the original model on stereotyped data ({len(biased)} pairs, {pretrain_steps} steps)")
    train_plain(tm, biased, "original", pretrain_steps, 3e-3)
    tm.model.save_pretrained(out / "original")
    tm.tokenizer.save_pretrained(out / "original")

    def evaluate(tag, tm=tm):
        hyps = tm.translate([p.en for p in heldout], batch_size=64, num_beams=2, max_new_tokens=32)
        res = gender_accuracy(heldout, hyps)
        log(f"      {tag}: gender accuracy {res['accuracy']:.1f} (male {res['accuracy_male']:.1f}, female "
            f"{res['accuracy_female']:.1f}, ΔG {res['delta_g']:+.1f}); e.g. {heldout[1].en!r} -> {hyps[1]!r}")
        return res, hyps

    log(f"[3/4] gender accuracy on {len(heldout)} held-out sentences (unseen templates)")
    before, _ = evaluate("original")

    log(f"[4/4] control: plain MT fine-tuning of the original on gender-balanced data ({gacl_steps} steps)")
    control = load_translation_model(str(out / "original"), "en", "de")
    train_plain(control, balanced, "control", gacl_steps, 1e-3)
    control.model.save_pretrained(out / "control")
    control.tokenizer.save_pretrained(out / "control")
    plain, _ = evaluate("plain fine-tuning", control)

    log(f"      GACL ({variant}) + KD fine-tuning on gender-balanced data ({gacl_steps} steps)")
    gacl_data = tokenize_gacl(prepare_gacl_pairs(_pairs_dataset(balanced), seed=seed), tm.encode, max_length=64)
    args = GACLConfig(
        output_dir=str(out / "gacl"), max_steps=gacl_steps, learning_rate=1e-3, kd_alpha=0.4, gacl_lambda=1.0,
        temperature=0.1, gacl_variant=variant, **common,
    )
    trainer = GACLTrainer(
        model=tm.model, args=args, train_dataset=gacl_data,
        data_collator=GenderContrastiveCollator(tm.tokenizer.pad_token_id), processing_class=tm.tokenizer,
    )
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss_gc" in h]
    for h in (logs[0], logs[-1]):
        log(f"      step {h['step']}: loss {h['loss']:.3f} = L_MT {h['loss_mt']:.3f}, L_KD {h['loss_kd']:.3f}, "
            f"L_GC {h['loss_gc']:.3f}")
    trainer.save_model(str(out / "gacl"))
    after, _ = evaluate("after GACL+KD")

    report = {
        "note": "demonstration on a tiny toy model trained for seconds; not a result about real MT systems",
        "model_dir": str(out / "gacl"),
        "models": {name: str(out / name) for name in ("original", "control", "gacl")},
        "before": before,
        "plain_finetuning": plain,
        "after": after,
        "train_log": logs,
        "seconds": round(time.time() - t0, 1),
    }
    (out / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    log("")
    n_params = sum(p.numel() for p in tm.model.parameters()) / 1e6
    log(f"fairmt demo — a DEMONSTRATION on a tiny model ({n_params:.2f}M parameters, a toy corpus); the numbers show the")
    log("pipeline works end to end, they say nothing about real MT systems.")
    log(f"  {'':18s} {'original':>9s} {'plain FT':>9s} {'GACL+KD':>9s}")
    log(f"  {'gender accuracy':18s} {before['accuracy']:9.1f} {plain['accuracy']:9.1f} {after['accuracy']:9.1f}")
    log(f"  {'ΔG (male−female)':18s} {before['delta_g']:+9.1f} {plain['delta_g']:+9.1f} {after['delta_g']:+9.1f}")
    log(f"  models: {out / 'original'} (original), {out / 'control'} (plain FT), {out / 'gacl'} (GACL+KD)")
    log(f"  report: {out / 'report.json'}   time: {report['seconds']} s")
    return report
