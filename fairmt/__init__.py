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

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs (`X as X`: re-exported, PEP 484)
    from fairmt import translate as translate
    from fairmt.data.gacl import GenderContrastiveCollator as GenderContrastiveCollator
    from fairmt.data.gacl import prepare_gacl_pairs as prepare_gacl_pairs
    from fairmt.data.gacl import tokenize_gacl as tokenize_gacl
    from fairmt.evaluate_modules import evaluate_module as evaluate_module
    from fairmt.model_eval.embeddings import evaluate_embeddings as evaluate_embeddings
    from fairmt.model_eval.mt_bias import evaluate_mt_bias as evaluate_mt_bias
    from fairmt.models import TranslationModel as TranslationModel
    from fairmt.models import load_translation_model as load_translation_model
    from fairmt.models.vision import SimCLRConfig as SimCLRConfig
    from fairmt.models.vision import SimCLRModel as SimCLRModel
    from fairmt.trainers.adept import ADEPTConfig as ADEPTConfig
    from fairmt.trainers.adept import ADEPTTrainer as ADEPTTrainer
    from fairmt.trainers.adversarial import AdversarialConfig as AdversarialConfig
    from fairmt.trainers.adversarial import AdversarialTrainer as AdversarialTrainer
    from fairmt.trainers.ccd import CCDConfig as CCDConfig
    from fairmt.trainers.ccd import CCDTrainer as CCDTrainer
    from fairmt.trainers.dpce import DPCEConfig as DPCEConfig
    from fairmt.trainers.dpce import DPCETrainer as DPCETrainer
    from fairmt.trainers.fair_contrastive import FairContrastiveConfig as FairContrastiveConfig
    from fairmt.trainers.fair_contrastive import FairContrastiveTrainer as FairContrastiveTrainer
    from fairmt.trainers.gacl import GACLConfig as GACLConfig
    from fairmt.trainers.gacl import GACLTrainer as GACLTrainer
    from fairmt.trainers.inlp import INLPResult as INLPResult
    from fairmt.trainers.inlp import inlp as inlp
    from fairmt.trainers.sampling import FairnessSamplingConfig as FairnessSamplingConfig
    from fairmt.trainers.sampling import FairnessSamplingTrainer as FairnessSamplingTrainer


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
