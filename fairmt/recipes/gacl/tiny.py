"""The tiny offline model of ``fairmt demo`` and of the ``tiny_model`` GACL recipes
(``recipes/gacl/tiny_offline.yaml``): build the small M2M-100-architecture model and train it as the stereotyped
"original" (:func:`build_original`), translate and score the demo's held-out sentences (:func:`translate`,
:func:`score`), and the recipe's side of it — make the recipe's model and data where they do not exist
(:func:`prepare_tiny_recipe`), score the original and the trained model (:func:`tiny_before_after`) and print the
before → after table (:func:`before_after_lines`). The GACL runner and the demo (:mod:`fairmt.demo`) both read
this module; it imports neither of them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairmt.recipes.gacl.schema import TinyModel, typed_recipe

MODEL_KWARGS: dict[str, Any] = dict(
    arch="m2m100", d_model=64, ffn_dim=128, encoder_layers=2, decoder_layers=1, attention_heads=4, dropout=0.1
)
"""The tiny model of the demo and of the tiny offline recipe."""
PRETRAIN_STEPS: int = TinyModel.model_fields["pretrain_steps"].default
"""Training steps of the tiny stereotyped original: ``tiny_model.pretrain_steps``'s default (``fairmt demo``'s too)."""


def build_original(
    out_dir: str | Path,
    data,
    seed: int = 0,
    steps: int = PRETRAIN_STEPS,
    batch_size: int = 16,
    lr: float = 3e-3,
    progress: bool = False,
    desc: str = "original",
) -> Path:
    """Build the tiny model (:data:`MODEL_KWARGS`) and its sentencepiece tokenizer (trained on every sentence of the
    toy language, :func:`fairmt.data.demo_corpus.demo_language`) in ``out_dir``, and train the model in place as the
    stereotyped "original" MT model on ``data.original`` (plain MT loss,
    :func:`fairmt.models.tiny.train_tiny_translation_model`)."""
    from fairmt.data.demo_corpus import demo_language
    from fairmt.models.tiny import build_tiny_translation_model, train_tiny_translation_model

    # the tokenizer's corpus: the whole toy language (a real subword vocabulary comes from far more text than any
    # training set); the model learns to translate from data.original only
    build_tiny_translation_model(out_dir, [(p.en, p.de) for p in demo_language()], seed=seed, **MODEL_KWARGS)
    return train_tiny_translation_model(
        out_dir,
        [(p.en, p.de) for p in data.original],
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        seed=seed,
        progress=progress,
        desc=desc,
    )


def score(pairs, translations: list[str], unseen: frozenset[str] = frozenset(), lang: str | None = None) -> dict:
    """Gender accuracy (overall, per gender, pro-/anti-stereotypical, on the ``unseen`` occupations), ΔG, ΔS and
    chrF++ of ``translations``: German pairs of the en–de demo, or (``lang``) the multilingual demo's pairs in
    ``lang`` (:func:`fairmt.data.demo_corpus.ml_gender_of`)."""
    from sacrebleu.metrics import CHRF

    from fairmt.data.demo_corpus import gender_accuracy, gender_of_translation, ml_gender_of

    gender_of: Callable[[str, str], str]
    if lang is None:  # the en–de demo's German
        gender_of, refs = gender_of_translation, [p.de for p in pairs]
    else:  # the multilingual demo's target language
        gender_of, refs = (lambda text, occ: ml_gender_of(text, occ, lang)), [p.tgt for p in pairs]
    res = gender_accuracy(pairs, translations, gender_of)
    for kind in ("pro", "anti"):
        hits = [gender_of(t, p.occupation) == p.gender for p, t in zip(pairs, translations) if p.stereotype == kind]
        res[f"accuracy_{kind}"] = 100.0 * sum(hits) / max(len(hits), 1)
    res["delta_s"] = res["accuracy_pro"] - res["accuracy_anti"]
    hits = [gender_of(t, p.occupation) == p.gender for p, t in zip(pairs, translations) if p.occupation in unseen]
    res["accuracy_unseen"] = 100.0 * sum(hits) / max(len(hits), 1)
    res["chrf++"] = CHRF(word_order=2).corpus_score(list(translations), [refs]).score
    return res


def translate(tm, sentences: list[str], progress: bool = False, desc: str = "", batch_size: int = 64) -> list[str]:
    from tqdm.auto import tqdm

    out: list[str] = []
    with tqdm(total=len(sentences), desc=desc, unit="sent", leave=False, disable=not progress) as bar:
        for i in range(0, len(sentences), batch_size):
            out += tm.translate(sentences[i : i + batch_size], batch_size=batch_size, num_beams=1, max_new_tokens=32)
            bar.update(len(sentences[i : i + batch_size]))
    return out


def prepare_tiny_recipe(config: Any) -> None:
    """Make the model and data of a recipe with a ``tiny_model`` section (``recipes/gacl/tiny_offline.yaml``; the
    typed recipe or its mapping), offline, where they do not exist yet: the folder ``model`` gets a tiny model built
    and trained as the demo's stereotyped "original" (:func:`build_original`, ``tiny_model.pretrain_steps`` steps,
    ``tiny_model.seed``), the file ``data.train`` the demo's gender-balanced fine-tuning sentences as JSONL. Existing
    ones are used as they are."""
    from fairmt.data.demo_corpus import demo_data
    from fairmt.errors import FairmtError

    recipe = typed_recipe(config)
    if recipe.tiny_model is None:
        raise FairmtError("prepare_tiny_recipe needs a recipe with a tiny_model section")
    model, train = Path(recipe.model), recipe.data.train
    seed, steps = recipe.tiny_model.seed, recipe.tiny_model.pretrain_steps
    data = demo_data(seed=seed)
    built = _tiny_model_built(model)
    missing = not built or not Path(train).is_file()
    if missing and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise FairmtError(
            f"tiny_model: {model} or {train} does not exist yet; build them with one process first "
            "(fairmt train without accelerate launch/torchrun), then launch several"
        )
    if not built:
        print(f"fairmt: building the tiny model {model} like `fairmt demo`'s original (offline)", flush=True)
        # built beside its place and moved there only once trained and marked: a run killed while it pre-trains
        # leaves no folder the next run would take for a finished model (it would fine-tune a random one)
        model.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{model.name}.building-", dir=model.parent))
        try:
            build_original(partial, data, seed, steps)
            from fairmt.outputs import write_file

            write_file(
                partial / TINY_MARKER,
                json.dumps({"pretrain_steps": steps, "seed": seed}) + "\n",
                what="the tiny model's completion marker",
            )
            os.replace(partial, model)
        except BaseException as exc:
            shutil.rmtree(partial, ignore_errors=True)
            from fairmt.outputs import write_error, write_failed

            if isinstance(exc, Exception) and write_failed(exc):
                raise write_error(model, "the tiny model", exc) from None
            raise
    if not Path(train).is_file():
        from fairmt.outputs import write_file

        Path(train).parent.mkdir(parents=True, exist_ok=True)
        write_file(
            train,
            "".join(json.dumps({"translation": p.translation}, ensure_ascii=False) + "\n" for p in data.finetune),
            what="the tiny recipe's fine-tuning data",
        )


TINY_MARKER = "fairmt_tiny_model.json"
"""Written last into a tiny recipe's model folder: the folder is a finished model (see :func:`prepare_tiny_recipe`)."""


def _tiny_model_built(model: Path) -> bool:
    """True when ``model`` is a finished tiny model; False when it does not exist (or is an empty folder); a folder
    holding something else — a build cut off by an older fairmt, or not fairmt's — is refused in one line."""
    from fairmt.errors import FairmtError

    if (model / TINY_MARKER).is_file():
        return True
    if not model.exists() or (model.is_dir() and not any(model.iterdir())):
        if model.is_dir():
            model.rmdir()
        return False
    raise FairmtError(
        f"tiny_model: {model} exists but is not a finished tiny model (no {TINY_MARKER}: its build was "
        "cut off, or it is another folder); remove it and rerun to build it again, or point 'model' "
        "at a model folder and drop the tiny_model section"
    )


def tiny_before_after(config: Any, trained_tm) -> dict:
    """The held-out gender scores of a ``tiny_model`` recipe's original (``model``) and of the model it trained
    (``trained_tm``): the demo's held-out sentences (``tiny_model.seed``'s :func:`demo_data` test split, every
    occupation in both genders, verb–object combinations never trained on), translated and scored as ``fairmt demo``
    does (:func:`translate`, :func:`score`). ``{"n": ..., "before": scores, "after": scores}``."""
    from fairmt.data.demo_corpus import demo_data
    from fairmt.models import load_translation_model

    recipe = typed_recipe(config)
    seed = recipe.tiny_model.seed if recipe.tiny_model is not None else TinyModel().seed
    data = demo_data(seed=seed)
    src = [p.en for p in data.test]
    folder = Path(recipe.model)
    weights = [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(folder.glob("*.safetensors"))]
    key = json.dumps({"seed": seed, "n": len(src), "weights": weights})
    cache = folder / "fairmt_held_out_gender.json"  # the original's scores, kept beside it: runs (a sweep) reuse them
    try:
        kept = json.loads(cache.read_text(encoding="utf-8"))
        before = kept["scores"] if kept.get("key") == key else None
    except (OSError, ValueError, KeyError):
        before = None
    if before is None:
        original = load_translation_model(str(folder), "en", "de")
        before = score(data.test, translate(original, src, batch_size=160), data.unseen_in_finetune)
        try:
            from fairmt.eval.report import write_text_atomic

            write_text_atomic(cache, json.dumps({"key": key, "scores": before}) + "\n")
        except OSError:
            pass  # a read-only model folder: measured again next time
    after = score(data.test, translate(trained_tm, src, batch_size=160), data.unseen_in_finetune)
    return {"set": "fairmt demo held-out sentences", "n": len(src), "before": before, "after": after}


BEFORE_AFTER_ROWS = (
    ("gender accuracy", "accuracy", ".1f", "higher"),
    ("ΔG (male − female)", "delta_g", "+.1f", "zero"),
    ("anti-stereotypical acc.", "accuracy_anti", ".1f", "higher"),
    ("chrF++ vs references", "chrf++", ".1f", "higher"),
)


def before_after_lines(res: dict) -> list[str]:
    """:func:`tiny_before_after`'s numbers as the short table a recipe ends with
    (:func:`fairmt.eval.report.before_after_lines`, every recipe's printer)."""
    from fairmt.eval.report import before_after_lines as table

    return table(
        f"held-out gender accuracy ({res['n']} sentences of `fairmt demo`'s test set)",
        [(label, res["before"][key], res["after"][key], fmt, better) for label, key, fmt, better in BEFORE_AFTER_ROWS],
        "original",
        "trained",
    )
