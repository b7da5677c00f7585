"""Exercise 4: top-k with error feedback, checked on single tensors and then in training on real ranks.

The student writes ``topk_with_error_feedback(grad, residual, ratio) -> (indices, values, residual)``.
An answer that calls netlab's own top-k (``netlab.compress``) fails saying so. The check (1) compares it on a few gradients with the package's own ``TopK`` + ``ResidualMemory``
(which the property tests hold to their bounds), naming what is wrong, on one rank where the
notebook's kernel has not imported torch (on Binder, torch costs an open kernel about 140 MB of the
2 GB every kernel shares); then (2) plugs it into
training on real ranks -- each rank compresses with it, the ranks all-gather indices and values --
and compares accuracy and wire bytes with the package's top-k with error feedback.
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())

from ..runtime.launch import where_torch_is
from . import CheckResult, Guard, call_student, own_implementation

NAME = "Exercise 4 (top-k with error feedback)"
CASES = [(10, 0.3, 0), (1000, 0.01, 1), (257, 0.05, 2), (6, 0.01, 3)]   # (d, ratio, seed)


def _expected(grad, residual, ratio):
    from ..runtime.comm import Comm
    from ..compress import Compression, TopK
    pipe = Compression.of(TopK(ratio), error_feedback=True)
    pipe.memory.e = residual.clone()
    payload = pipe.encode(Comm(0, 1), grad, 0)            # one rank, no network: just the arithmetic
    return pipe.compressor.decompress(payload), pipe.memory.residual()


def _problem(out, grad, residual, ratio) -> str | None:
    """What is wrong with one answer, or None."""
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        return f"expected (indices, values, new_residual), got {type(out).__name__}"
    try:
        idx, values, new_residual = (torch.as_tensor(t) for t in out)
        idx = idx.long().reshape(-1)
        values, new_residual = values.float().reshape(-1), new_residual.float().reshape(-1)
    except (TypeError, ValueError, RuntimeError) as exc:
        return f"cannot read the answer as tensors: {exc}"
    d = grad.numel()
    k = max(1, round(ratio * d))
    sent, residual_ok = _expected(grad, residual, ratio)
    if idx.numel() != k or values.numel() != k:
        return f"expected k = {k} indices and values, got {idx.numel()} and {values.numel()}"
    if idx.unique().numel() != k or idx.min() < 0 or idx.max() >= d:
        return "indices must be k distinct positions in 0..d-1"
    if new_residual.numel() != d:
        return f"the new residual must have d = {d} elements, got {new_residual.numel()}"
    p = grad + residual
    if not torch.allclose(values, p[idx], atol=1e-6):
        if torch.allclose(values, grad[idx], atol=1e-6):
            return "values are the gradient's, not gradient + residual: add the residual first"
        return "values[i] must be (grad + residual)[indices[i]], in the same order as the indices"
    yours = torch.zeros(d).index_put_((idx,), values)
    if not torch.allclose(yours.abs().sort().values, sent.abs().sort().values, atol=1e-6):
        if torch.allclose(values.sort().values, p.topk(k).values.sort().values, atol=1e-6):
            return ("these are the k largest values of grad + residual, not the k largest magnitudes: a large "
                    "negative element matters as much as a large positive one")
        if torch.allclose(values.abs().sort().values, p[grad.abs().topk(k).indices].abs().sort().values, atol=1e-6):
            return ("these positions are the gradient's k largest, not those of grad + residual: choose after "
                    "adding the residual")
        return "these are not the k largest magnitudes of grad + residual"
    if not torch.allclose(new_residual, residual_ok, atol=1e-6):
        if torch.allclose(new_residual, torch.zeros(d)):
            return "the new residual is all zeros: keep what was not sent (that is error feedback)"
        if torch.allclose(new_residual, -residual_ok, atol=1e-6):
            return "the new residual has the wrong sign: it is what is still to be sent, not what was sent too much"
        if torch.allclose(new_residual, p, atol=1e-6):
            return "the new residual still holds the sent elements: they were sent, so they leave the residual"
        kept = grad.clone()
        kept[idx] = 0
        if torch.allclose(new_residual, kept, atol=1e-6):
            return ("the new residual is the gradient without the sent elements: the old residual that was not "
                    "sent this time is lost")
        return "the new residual must be grad + residual with the sent elements set to zero"
    return None


class StudentTopK:
    """A ``sync`` built on the student's function: compress locally, all-gather indices + values, sum."""
    handles_momentum = False
    communicator = "allgather"

    def __init__(self, fn, ratio, comm=None):
        self.fn, self.ratio, self.residual, self.payload_bytes = fn, ratio, None, 0

    def sync(self, comm, grad, step):
        from ..compress import Payload, allgather_payloads
        from ..compress.sparsify import scatter
        if self.residual is None:
            self.residual = torch.zeros_like(grad)
        idx, values, self.residual = self.fn(grad.clone(), self.residual.clone(), self.ratio)
        payload = Payload([torch.as_tensor(idx).to(torch.int32).reshape(-1),
                           torch.as_tensor(values).float().reshape(-1)], grad.numel())
        self.residual = torch.as_tensor(self.residual).float().reshape(-1)
        self.payload_bytes = payload.nbytes
        total = torch.zeros_like(grad)
        for q in allgather_payloads(comm, payload):
            total += scatter(q.tensors[0], q.tensors[1], grad.numel())
        return total


def _single_tensors(fn) -> tuple[list[dict], str | None]:
    """The table rows of the single-tensor cases and the first problem found (None if all pass)."""
    rows = []
    for d, r, seed in CASES:
        gen = torch.Generator().manual_seed(seed)
        grad, residual = torch.randn(d, generator=gen), 0.5 * torch.randn(d, generator=gen)
        out, problem = call_student(fn, grad.clone(), residual.clone(), r)
        own = problem is not None and problem.startswith("your answer calls")
        problem = problem or _problem(out, grad, residual, r)
        rows.append({"test": f"d={d}, ratio={r}", "k": max(1, round(r * d)), "ok": "no" if problem else "yes"})
        if problem:
            return rows, problem if own else f"d = {d}, ratio = {r} (k = {max(1, round(r * d))}): {problem}"
    return rows, None


def topk_error_feedback(fn=None, ranks: int = 2, steps: int = 200, ratio: float = 0.01) -> CheckResult:
    """Check `fn` on single gradients, then train with it on `ranks` real ranks against the package."""
    from functools import partial

    from ..compress.training import run_training
    if fn is None:
        from ..exercises.ch4_topk_ef import topk_with_error_feedback as fn
    guarded = Guard(fn)
    rows, problem = where_torch_is(_single_tensors, guarded)     # on a rank: the kernel need not import torch
    if problem:
        return CheckResult(NAME, False, problem, rows)
    try:
        yours = run_training("topk", ranks=ranks, steps=steps, codec="free", ratio=ratio,
                             sync_factory=partial(StudentTopK, guarded, ratio))
    except Exception as exc:  # noqa: BLE001 -- a bug in the answer, raised on a rank, is reported
        if getattr(exc, "exc_type", None) == "OwnImplementation":
            return CheckResult(NAME, False, own_implementation(exc.remote_message), rows)
        return CheckResult(NAME, False, f"training with your function failed: {str(exc).splitlines()[0]}", rows)
    ref = run_training("topk", ranks=ranks, steps=steps, error_feedback=True, codec="free", ratio=ratio)
    close = abs(yours.final_accuracy - ref.final_accuracy) <= 0.01 and yours.diverged is None
    same_bytes = yours.bytes_per_step == ref.bytes_per_step
    rows.append({"test": f"training, {ranks} ranks, {steps} steps, top-{ratio:g}", "k": "",
                 "ok": "yes" if close and same_bytes else "no",
                 "accuracy (yours)": f"{yours.final_accuracy:.3f}", "accuracy (netlab)": f"{ref.final_accuracy:.3f}",
                 "bytes/step (yours)": f"{yours.bytes_per_step:.0f}", "bytes/step (netlab)": f"{ref.bytes_per_step:.0f}"})
    if not close:
        return CheckResult(NAME, False, "single tensors pass, but training with it does not match netlab's "
                           "top-k with error feedback", rows)
    if not same_bytes:
        return CheckResult(NAME, False, "training matches, but the bytes on the wire differ: send k int32 "
                           "indices and k fp32 values", rows)
    return CheckResult(NAME, True, f"your top-k with error feedback trains like netlab's "
                       f"({yours.final_accuracy:.3f} test accuracy, {yours.bytes_per_step:.0f} B/step)", rows)
