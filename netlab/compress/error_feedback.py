"""Error feedback ("memory", "residual"): add what was not sent last time, keep what is not sent now.

    p_t     = g_t + e_t            compensate: the new gradient plus the old residual
    c_t     = C(p_t)               compress and send
    e_{t+1} = p_t - D(c_t)         update: what compression dropped waits for the next step

So nothing is lost, only delayed: sent + residual == gradient + previous residual, exactly (a
property test checks it). This is 1-bit SGD's trick (Seide et al. 2014), analysed as EF-SGD by
Karimireddy et al. (ICML 2019): with a *contractive* compressor (top-k, scaled sign) it recovers
SGD's rate. With an unbiased compressor rescaled to be unbiased (random-k times d/k) the residual
grows instead of shrinking, and training diverges -- the chapter shows it.

One memory per rank and per gradient, starting at zero. GRACE's ``ResidualMemory(beta, gamma)``
scales the two terms; both are 1 here. EF-SignSGD's formulation (Karimireddy, Algorithm 2) puts the
learning rate inside the memory (p = e + lr * g); with a constant learning rate it is the same
update up to that factor, so the plain residual serves scaled sign too. DGC's memory (momentum
correction and masking) and PowerSGD's (a residual against the all-reduced approximation) are in
``dgc.py`` and ``powersgd.py``.
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())


class NoMemory:
    """No error feedback: what compression drops is lost."""
    error_feedback = False

    def compensate(self, grad: torch.Tensor, step: int = 0) -> torch.Tensor:
        return grad

    def update(self, compensated: torch.Tensor, sent: torch.Tensor, step: int = 0, payload=None) -> None:
        pass

    def residual(self) -> torch.Tensor | None:
        return None


class ResidualMemory:
    """Classic error feedback: e <- (g + e) - D(C(g + e))."""
    error_feedback = True

    def __init__(self):
        self.e: torch.Tensor | None = None        # (numel,) fp32, this rank's residual

    def compensate(self, grad: torch.Tensor, step: int = 0) -> torch.Tensor:
        if self.e is None:
            self.e = torch.zeros_like(grad)
        return grad + self.e

    def update(self, compensated: torch.Tensor, sent: torch.Tensor, step: int = 0, payload=None) -> None:
        self.e = compensated - sent

    def residual(self) -> torch.Tensor | None:
        return self.e
