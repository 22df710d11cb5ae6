"""fairmt: fairness-aware training and evaluation for machine translation, text embeddings and classification.

Trainers and their configs import from the package top, as in TRL (``from fairmt import GACLConfig, GACLTrainer``);
they load lazily, so ``import fairmt`` and the file-based ``fairmt eval`` commands do not import torch or
transformers. The layers: ``fairmt.losses`` (pure PyTorch) → ``fairmt.data`` → ``fairmt.models`` →
``fairmt.trainers`` → ``fairmt.translate`` → ``fairmt.eval`` → ``fairmt.model_eval`` → the ``fairmt`` command and the
recipes (docs/architecture.md). Which class implements which paper: docs/methods/index.md ("Methods: which class
for which paper", on the site built by ``mkdocs serve``) and :mod:`fairmt.citations` for the BibTeX.

One call each from Python, returning what the matching command writes: ``fairmt.evaluate_embeddings(model,
suites=...)`` (``fairmt eval embeddings``), ``fairmt.evaluate_mt_bias(model, langs=..., backend=...)`` (``fairmt eval
mt-bias``) and ``fairmt.translate(model, sentences, src_lang, tgt_lang, backend=...)``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name → module that defines it (imported on first access)
_LAZY = {
    "GACLConfig": "fairmt.trainers.gacl",
    "GACLTrainer": "fairmt.trainers.gacl",
    "CCDConfig": "fairmt.trainers.ccd",
    "CCDTrainer": "fairmt.trainers.ccd",
    "DPCEConfig": "fairmt.trainers.dpce",
    "DPCETrainer": "fairmt.trainers.dpce",
    "ADEPTConfig": "fairmt.trainers.adept",
    "ADEPTTrainer": "fairmt.trainers.adept",
    "FairContrastiveConfig": "fairmt.trainers.fair_contrastive",
    "FairContrastiveTrainer": "fairmt.trainers.fair_contrastive",
    "FairnessSamplingConfig": "fairmt.trainers.sampling",
    "FairnessSamplingTrainer": "fairmt.trainers.sampling",
    "SimCLRConfig": "fairmt.models.vision",
    "SimCLRModel": "fairmt.models.vision",
    "AdversarialConfig": "fairmt.trainers.adversarial",
    "AdversarialTrainer": "fairmt.trainers.adversarial",
    "inlp": "fairmt.trainers.inlp",
    "INLPResult": "fairmt.trainers.inlp",
    "load_translation_model": "fairmt.models",
    "TranslationModel": "fairmt.models",
    "GenderContrastiveCollator": "fairmt.data.gacl",
    "prepare_gacl_pairs": "fairmt.data.gacl",
    "tokenize_gacl": "fairmt.data.gacl",
    "evaluate_module": "fairmt.evaluate_modules",
    "evaluate_embeddings": "fairmt.model_eval.embeddings",
    "evaluate_mt_bias": "fairmt.model_eval.mt_bias",
    "translate": "fairmt.translate",  # the package itself, callable: fairmt.translate(model, sentences, src, tgt)
}

__all__ = sorted(_LAZY) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from fairmt import translate
    from fairmt.data.gacl import GenderContrastiveCollator, prepare_gacl_pairs, tokenize_gacl
    from fairmt.evaluate_modules import evaluate_module
    from fairmt.model_eval.embeddings import evaluate_embeddings
    from fairmt.model_eval.mt_bias import evaluate_mt_bias
    from fairmt.models import TranslationModel, load_translation_model
    from fairmt.models.vision import SimCLRConfig, SimCLRModel
    from fairmt.trainers.adept import ADEPTConfig, ADEPTTrainer
    from fairmt.trainers.adversarial import AdversarialConfig, AdversarialTrainer
    from fairmt.trainers.ccd import CCDConfig, CCDTrainer
    from fairmt.trainers.dpce import DPCEConfig, DPCETrainer
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig, FairContrastiveTrainer
    from fairmt.trainers.gacl import GACLConfig, GACLTrainer
    from fairmt.trainers.inlp import INLPResult, inlp
    from fairmt.trainers.sampling import FairnessSamplingConfig, FairnessSamplingTrainer


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fairmt' has no attribute {name!r}")
    imported = importlib.import_module(module)
    value = imported if module == f"fairmt.{name}" else getattr(imported, name)  # fairmt.translate: the module
    globals()[name] = value  # later accesses skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
