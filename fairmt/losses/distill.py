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
    student_log_probs: bool = False,
) -> torch.Tensor:
    """KL(teacher ‖ student) per label token, averaged over the non-ignored tokens.

    Args:
        student_logits, teacher_logits: ``(B, T, V)``; the teacher's are used without gradient.
        labels: ``(B, T)``, ``ignore_index`` where there is no target token (padding).
        student_log_probs: ``student_logits`` are already log-probabilities (``log_softmax``), e.g. shared with
            the cross-entropy term; only with ``temperature == 1``.
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
    s, t = student_logits, teacher_logits.detach()
    if not bool(mask.all()):  # gather the label positions only when there is padding to skip
        s, t = s[mask], t[mask]
    if student_log_probs and temperature != 1.0:
        raise FairmtError("student_log_probs=True needs temperature 1 (the log-probabilities are at T = 1)")
    if temperature != 1.0:
        s, t = s / temperature, t / temperature
    log_p_s = s.float() if student_log_probs else F.log_softmax(s.float(), dim=-1)
    log_p_t = F.log_softmax(t.float(), dim=-1)
    kl = F.kl_div(log_p_s, log_p_t, log_target=True, reduction="none").sum(dim=-1)
    return kl.mean() * temperature**2
