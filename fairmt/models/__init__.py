"""Layer 3: loading MT models and tokenizers (SMaLL-100, NLLB-200, M2M-100), pooling, projection heads."""

from fairmt.models.mt import FAMILIES, TranslationModel, detect_family, load_translation_model

__all__ = ["FAMILIES", "TranslationModel", "detect_family", "load_translation_model"]
