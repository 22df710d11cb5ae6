"""Layer 2: gender lexicon, detection and counterfactuals, parallel-data readers, GACL data preparation,
samplers and collators, augmentation, downloads."""

from fairmt.data.gender import detect_gender, neutralize, swap_gender, to_gender

__all__ = ["detect_gender", "neutralize", "swap_gender", "to_gender"]
