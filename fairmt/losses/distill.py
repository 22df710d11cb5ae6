"""Token-level knowledge distillation (the L_KD term of GACL, Lee et al. 2023).

    L_KD = 1/|T| Σ_{t ∈ T} T_kd² · KL( softmax(z^teacher_t / T_kd) ‖ softmax(z^student_t / T_kd) )

over the label positions T (``labels != ignore_index``). ``T_kd = 1`` by default (plain token-level KD, as GACL);
the ``T_kd²`` factor keeps gradient magnitudes comparable across temperatures (Hinton et al. 2015).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fairmt.errors import FairmtError


def token_kl_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 1.0,
    ignore_index: int = -100,
) -> torch.Tensor:
    """KL(teacher ‖ student) per label token, averaged over the non-ignored tokens.

    Args:
        student_logits, teacher_logits: ``(B, T, V)``; the teacher's are used without gradient.
        labels: ``(B, T)``, ``ignore_index`` where there is no target token (padding).
    """
    if student_logits.shape != teacher_logits.shape:
        raise FairmtError(
            f"student logits {tuple(student_logits.shape)} and teacher logits {tuple(teacher_logits.shape)} differ: "
            "teacher and student must share the vocabulary"
        )
    if labels.shape != student_logits.shape[:2]:
        raise FairmtError(f"labels {tuple(labels.shape)} do not match logits {tuple(student_logits.shape)}")
    mask = labels != ignore_index
    if not bool(mask.any()):
        return student_logits.sum() * 0.0
    s = student_logits[mask].float() / temperature
    t = teacher_logits[mask].detach().float() / temperature
    log_p_s = F.log_softmax(s, dim=-1)
    log_p_t = F.log_softmax(t, dim=-1)
    kl = (log_p_t.exp() * (log_p_t - log_p_s)).sum(dim=-1)
    return kl.mean() * temperature**2
