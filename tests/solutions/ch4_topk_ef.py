"""Reference solution of Exercise 4 (kept out of the package; CI proves it passes the check)."""
import torch


def topk_with_error_feedback(grad, residual, ratio):
    p = grad + residual
    k = max(1, round(ratio * p.numel()))
    indices = torch.topk(p.abs(), k).indices
    new_residual = p.clone()
    new_residual[indices] = 0
    return indices, p[indices], new_residual
