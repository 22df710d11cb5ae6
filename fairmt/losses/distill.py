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


def _sentence_weights(mask: torch.Tensor) -> torch.Tensor:
    """Weight of each label token (in ``mask``'s row-major order) for the per-sentence mean, then the mean over
    the sentences that have label tokens: ``1 / (B' · |T_b|)``."""
    counts = mask.sum(dim=1)
    n_sent = int((counts > 0).sum())
    per_row = 1.0 / (counts.clamp(min=1).float() * n_sent)
    return per_row[:, None].expand_as(mask)[mask]


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
    (both means over the non-ignored tokens), computed with two vocabulary-sized buffers instead of a dozen: the
    gradient with respect to the student's logits is ``(softmax(s) − (1 − α)·onehot(y) − α·softmax(t)) / N``, built
    in the forward pass in the buffer that held ``log_softmax(s)``; sums are BLAS dot products, so no further
    ``N × V`` temporaries are made. Only ``total`` carries a gradient; ``loss_mt``/``loss_kd`` are for logging. A
    second backward through the same graph is refused (the gradient buffer is consumed), as for any loss whose
    saved tensors are freed. Liger-Kernel fuses the same on GPUs (Triton); this one runs on any device.

    ``kd_normalization="sentence"`` averages L_KD per sentence first, then over sentences (the released GACL code;
    see the module docstring); L_MT stays the token mean. Its gradient is built the same way, with a per-token
    weight instead of ``1/N`` on the KD part.

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
    if not bool(mask.any()):
        zero = student_logits.sum() * 0.0
        return zero, zero.detach(), zero.detach()
    s, t, y = student_logits, teacher_logits.detach(), labels
    if not bool(mask.all()):  # gather the label positions only when there is padding to skip
        s, t, y = s[mask], t[mask], y[mask]
    else:
        s, t, y = s.reshape(-1, s.shape[-1]), t.reshape(-1, t.shape[-1]), y.reshape(-1)
    w = _sentence_weights(mask) if kd_normalization == "sentence" else None
    return _MTKDLoss.apply(s, t, y, float(alpha), w)


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Σ a·b over all elements, as one BLAS dot product (no temporary of the inputs' size)."""
    return torch.dot(a.view(-1), b.view(-1))


def _row_dots(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(N,)`` row-wise Σ_v a·b as a batched matrix product (no temporary of the inputs' size)."""
    return torch.bmm(a.unsqueeze(1), b.unsqueeze(2)).view(-1)


class _MTKDLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s, t, y, alpha, w=None):  # s, t: (N, V); y: (N,) all valid; w: (N,) KD weights or None
        n = s.shape[0]
        q = torch.empty(s.shape, dtype=torch.float32, device=s.device)
        buf = torch.empty_like(q)
        if t.dtype == torch.float32:
            torch.log_softmax(t, -1, out=buf)
        else:
            q.copy_(t)
            torch.log_softmax(q, -1, out=buf)
        torch.exp(buf, out=q)  # q = softmax(t), buf = log softmax(t)
        if w is None:
            neg_entropy = _dot(q, buf)  # Σ_tokens Σ_v q log q
        else:
            neg_entropy = _row_dots(q, buf)  # per token
        torch.log_softmax(s.float(), -1, out=buf)  # buf = log softmax(s)
        loss_mt = -buf.gather(1, y.unsqueeze(1)).sum() / n
        if w is None:
            loss_kd = (neg_entropy - _dot(q, buf)) / n
        else:
            w = w.float()
            loss_kd = torch.dot(w, neg_entropy - _row_dots(q, buf))
        if ctx.needs_input_grad[0]:
            rows = torch.arange(n, device=s.device)
            if w is None:
                grad = buf.exp_().sub_(q, alpha=alpha)  # softmax(s) − α q; the 1/N goes with the upstream gradient
                grad[rows, y] -= 1.0 - alpha
                ctx.n = n
            else:  # per token: ((1 − α)/N + α w)·softmax(s) − α w·q − (1 − α)/N·onehot(y)
                a = (1.0 - alpha) / n + alpha * w
                grad = buf.exp_().mul_(a[:, None]).sub_(q.mul_((alpha * w)[:, None]))
                grad[rows, y] -= (1.0 - alpha) / n
                ctx.n = 1
            ctx.grad, ctx.logits_dtype = grad, s.dtype
        del q
        ctx.mark_non_differentiable(loss_mt, loss_kd)
        return (1.0 - alpha) * loss_mt + alpha * loss_kd, loss_mt, loss_kd

    @staticmethod
    def backward(ctx, grad_total, _grad_mt, _grad_kd):
        grad = getattr(ctx, "grad", None)
        if grad is None:
            raise RuntimeError("mt_kd_loss: backward through the same graph twice (its gradient buffer is consumed)")
        ctx.grad = None
        return grad.mul_(grad_total / ctx.n).to(ctx.logits_dtype), None, None, None, None
