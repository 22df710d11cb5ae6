"""Layer 1: losses as pure PyTorch functions (no transformers import)."""

from fairmt.distributed import gather_nograd, gather_with_grad
from fairmt.losses.ccd import (
    CCDLoss,
    CCDLossOutput,
    ccd_bias_loss,
    ccd_kernel,
    ccd_loss,
    ccd_rep_loss,
    estimate_rho,
    tuple_distances,
)
from fairmt.losses.contrastive import label_masks, masked_contrastive_loss, supcon_loss
from fairmt.losses.distill import mt_kd_loss, token_kl_loss
from fairmt.losses.fair_contrastive import (
    FCL_GROUP_TERMS,
    FCL_VARIANTS,
    FCLTerms,
    cs_infonce_loss,
    fcl_loss,
    released_supcon,
)
from fairmt.losses.gacl import GACL_VARIANTS, GACLPairs, gacl_loss, gacl_variant
from fairmt.losses.sampling import (
    FairNegativeSampler,
    cluster_weights,
    fair_batch_nt_xent,
    fair_pair_nt_xent,
    fairness_sampling_probs,
    nt_xent_loss,
    sample_fair_negatives,
)
from fairmt.losses.weighted import weighted_cross_entropy

__all__ = [
    "CCDLoss",
    "CCDLossOutput",
    "ccd_bias_loss",
    "ccd_kernel",
    "ccd_loss",
    "ccd_rep_loss",
    "estimate_rho",
    "tuple_distances",
    "FCL_GROUP_TERMS",
    "FCL_VARIANTS",
    "FCLTerms",
    "FairNegativeSampler",
    "cluster_weights",
    "cs_infonce_loss",
    "fair_pair_nt_xent",
    "fairness_sampling_probs",
    "fair_batch_nt_xent",
    "nt_xent_loss",
    "sample_fair_negatives",
    "fcl_loss",
    "released_supcon",
    "GACLPairs",
    "GACL_VARIANTS",
    "gacl_loss",
    "gacl_variant",
    "gather_nograd",
    "gather_with_grad",
    "label_masks",
    "masked_contrastive_loss",
    "supcon_loss",
    "mt_kd_loss",
    "token_kl_loss",
    "weighted_cross_entropy",
]
