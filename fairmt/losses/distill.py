"""Token-level knowledge distillation (the L_KD term of GACL, Lee et al. 2023).

    L_KD = 1/|T| Σ_{t ∈ T} T_kd² · KL( softmax(z^teacher_t / T_kd) ‖ softmax(z^student_t / T_kd) )

over the label positions T (``labels != ignore_index``). ``T_kd = 1`` by default (plain token-level KD, as GACL);
the ``T_kd²`` factor keeps gradient magnitudes comparable across temperatures (Hinton et al. 2015).

``normalization="token"`` (default) averages the token KLs over all label tokens of the batch, as above;
``normalization="sentence"`` averages them over each sentence's label tokens first, then over the sentences
(``1/B Σ_b 1/|T_b| Σ_{t ∈ T_b} KL_t``), which is what the GACL authors' released code computes. The MT
cross-entropy of :func:`mt_kd_loss` is always the token mean (as the model's own loss).
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
    normalization: str = "token",
) -> torch.Tensor:
    """KL(teacher ‖ student) per label token, averaged over the non-ignored tokens.

    Args:
        student_logits, teacher_logits: ``(B, T, V)``; the teacher's are used without gradient.
        labels: ``(B, T)``, ``ignore_index`` where there is no target token (padding).
        student_log_probs: ``student_logits`` are already log-probabilities (``log_softmax``), e.g. shared with
            the cross-entropy term; only with ``temperature == 1``.
        normalization: ``"token"`` (mean over all label tokens) or ``"sentence"`` (mean over each sentence's
            label tokens, then over sentences; the released GACL code).
    """
    _check_normalization(normalization)
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
    if normalization == "sentence":
        s, t = s[mask], t[mask]
    elif not bool(mask.all()):  # gather the label positions only when there is padding to skip
        s, t = s[mask], t[mask]
    if student_log_probs and temperature != 1.0:
        raise FairmtError("student_log_probs=True needs temperature 1 (the log-probabilities are at T = 1)")
    if temperature != 1.0:
        s, t = s / temperature, t / temperature
    log_p_s = s.float() if student_log_probs else F.log_softmax(s.float(), dim=-1)
    log_p_t = F.log_softmax(t.float(), dim=-1)
    kl = F.kl_div(log_p_s, log_p_t, log_target=True, reduction="none").sum(dim=-1)
    if normalization == "sentence":
        return (kl * _sentence_weights(mask)).sum() * temperature**2
    return kl.mean() * temperature**2


def _check_normalization(normalization: str) -> None:
    if normalization not in ("token", "sentence"):
        raise FairmtError(f"kd normalization must be 'token' or 'sentence', got {normalization!r}")


def _kd_weights(mask: torch.Tensor, normalization: str) -> torch.Tensor:
    """``(B, T)`` weight of every position's token KL in L_KD, 0 where there is no label, computed without a host
    sync: ``1 / N`` (``"token"``, N label tokens in the batch) or ``1 / (B' · |T_b|)`` (``"sentence"``: the mean
    over each sentence's label tokens, then over the B' sentences that have any). All zero when nothing is labelled."""
    m = mask.to(torch.float32)
    if normalization == "token":
        return m / m.sum().clamp(min=1.0)
    counts = m.sum(dim=1, keepdim=True)
    n_sent = (counts > 0).sum().clamp(min=1)
    return m / (counts.clamp(min=1.0) * n_sent)


def _sentence_weights(mask: torch.Tensor) -> torch.Tensor:
    """The ``"sentence"`` weights of the label tokens only, in ``mask``'s row-major order."""
    return _kd_weights(mask, "sentence")[mask]


def mt_kd_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    labels: torch.Tensor,
    alpha: float,
    ignore_index: int = -100,
    kd_normalization: str = "token",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(1 − α)·L_MT + α·L_KD`` at ``T_kd = 1`` in one fused pass; returns ``(total, loss_mt, loss_kd)``.

    The same value and gradient as ``(1 − α)·nll_loss(log_softmax(s), labels) + α·token_kl_loss(s, t, labels)``
    (both means over the non-ignored tokens), computed with two vocabulary-sized buffers instead of a dozen. With
    ``p_i = softmax(s_i)``, ``q_i = softmax(t_i)``, ``m_i`` 1 where position i has a label (0 where it is ignored),
    N = Σ m_i, and ``w_i`` the KD weight of position i (``m_i/N`` for the token mean, see :func:`_kd_weights`)::

        L_MT = −1/N Σ_i m_i log p_{i,y_i}          L_KD = Σ_i w_i Σ_v q_iv (log q_iv − log p_iv)
        ∂/∂s_i = a_i·p_i − α w_i·q_i − (1 − α)·m_i/N·onehot(y_i),   a_i = (1 − α)·m_i/N + α w_i

    The gradient is built in the forward pass in the buffer that held ``log p``, up to the per-row factor ``a_i``
    that the backward pass applies together with the upstream gradient; sums are BLAS dot products, so no further
    ``N × V`` temporaries are made. Ignored positions get weight 0 instead of being gathered out, and nothing is read
    back to the host: the loss needs no device synchronisation. Only ``total`` carries a gradient;
    ``loss_mt``/``loss_kd`` are for logging. A second backward through the same graph is refused (the gradient
    buffer is consumed), as for any loss whose saved tensors are freed. Liger-Kernel fuses the same on GPUs
    (Triton); this one runs on any device.

    ``kd_normalization="sentence"`` averages L_KD per sentence first, then over sentences (the released GACL code;
    see the module docstring): only the weights ``w_i`` change; L_MT stays the token mean. A batch without any label
    token gives 0, with a zero gradient.

    Example::

        total, loss_mt, loss_kd = mt_kd_loss(student_out.logits, teacher_out.logits, labels, alpha=0.4)
        total.backward()
    """
    if student_logits.shape != teacher_logits.shape:
        raise FairmtError(
            f"student logits {tuple(student_logits.shape)} and teacher logits {tuple(teacher_logits.shape)} differ: "
            "teacher and student must share the vocabulary"
        )
    if labels.shape != student_logits.shape[:-1]:
        raise FairmtError(f"labels {tuple(labels.shape)} do not match logits {tuple(student_logits.shape)}")
    if not 0.0 <= alpha <= 1.0:
        raise FairmtError(f"alpha must be in [0, 1], got {alpha}")
    _check_normalization(kd_normalization)
    mask = labels != ignore_index
    w_mt = _kd_weights(mask, "token")
    w_kd = w_mt if kd_normalization == "token" else _kd_weights(mask, kd_normalization)
    v = student_logits.shape[-1]
    y = torch.where(mask, labels, torch.zeros_like(labels))  # any valid index where ignored (weight 0 there)
    return _MTKDLoss.apply(
        student_logits.reshape(-1, v),
        teacher_logits.detach().reshape(-1, v),
        y.reshape(-1),
        w_mt.reshape(-1),
        w_kd.reshape(-1),
        float(alpha),
    )


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Σ a·b over all elements, as one BLAS dot product (no temporary of the inputs' size)."""
    return torch.dot(a.view(-1), b.view(-1))


class _MTKDLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s, t, y, w_mt, w_kd, alpha):  # s, t: (N, V); y: (N,) valid indices; w_mt, w_kd: (N,) weights
        q = torch.empty(s.shape, dtype=torch.float32, device=s.device)
        buf = torch.empty_like(q)
        if t.dtype == torch.float32:
            torch.log_softmax(t, -1, out=buf)
            torch.softmax(t, -1, out=q)
        else:
            q.copy_(t)
            torch.log_softmax(q, -1, out=buf)
            if q.device.type == "cpu":  # the CPU kernel reads a row before it writes it: in place is exact, and
                torch.softmax(q, -1, out=q)  # cheaper than the exp of the log-softmax
            else:
                torch.exp(buf, out=q)
        # q = softmax(t), buf = log softmax(t)
        q.mul_(w_kd[:, None])  # each row scaled by its KD weight: the dot products below are weighted sums
        neg_entropy = _dot(q, buf)  # Σ_i w_i Σ_v q log q
        torch.log_softmax(s.float(), -1, out=buf)  # buf = log softmax(s)
        loss_mt = -torch.dot(w_mt, buf.gather(1, y[:, None]).squeeze(1))
        loss_kd = neg_entropy - _dot(q, buf)
        if ctx.needs_input_grad[0]:
            a = (1.0 - alpha) * w_mt + alpha * w_kd
            kept = a > 0
            inv_a = torch.where(kept, 1.0 / torch.where(kept, a, 1.0), 0.0)  # 0 on ignored rows (a_i = 0 there)
            grad = buf.exp_().addcmul_(q, (alpha * inv_a)[:, None], value=-1.0)  # (a_i p_i − α w_i q_i) / a_i
            grad[torch.arange(s.shape[0], device=s.device), y] -= (1.0 - alpha) * w_mt * inv_a
            ctx.grad, ctx.scale, ctx.logits_dtype = grad, a[:, None], s.dtype
        del q
        ctx.mark_non_differentiable(loss_mt, loss_kd)
        return (1.0 - alpha) * loss_mt + alpha * loss_kd, loss_mt, loss_kd

    @staticmethod
    def backward(ctx, grad_total, _grad_mt, _grad_kd):
        grad = getattr(ctx, "grad", None)
        if grad is None:
            raise RuntimeError("mt_kd_loss: backward through the same graph twice (its gradient buffer is consumed)")
        ctx.grad = None
        return grad.mul_(ctx.scale * grad_total).to(ctx.logits_dtype), None, None, None, None, None
