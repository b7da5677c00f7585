"""The lab's MLP (``train.make_model``) as bare matrices, so that ranks can hold pieces of it.

A linear layer is y = x W^T + b with W of shape (out, in); every linear but the last is followed
by a ReLU. Forward and backward are written out (dW = dy^T x, db = sum dy, dx = dy W, the ReLU's
mask, softmax minus one-hot for the cross-entropy), so that a split model can charge each piece of
arithmetic to the clock and talk to other ranks between them; the tests check the gradients
against torch's autograd on the whole model.

FLOPs are counted as torch's ``FlopCounterMode`` counts the model (``train.step_flops``): 2*b*in*out
for a layer's forward, as much again for its weight gradient and for its input gradient, and no
input gradient for the first layer (the data needs none); biases, ReLUs and the loss are not counted.
Left out: any layer but linear and ReLU, dropout, mixed precision.
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())

from ... import data, validate
from ...dataparallel import train


def dims(width: int, layers: int) -> list[tuple[int, int]]:
    """(in, out) of every linear layer of make_model(width, layers)."""
    sizes = [64] + [width] * layers + [10]
    return list(zip(sizes, sizes[1:]))


def weights(width: int, layers: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(W, b) of every linear layer, copied from make_model: the same numbers as every other chapter's model."""
    model = train.make_model(width, layers, seed)
    return [(m.weight.detach().clone(), m.bias.detach().clone()) for m in model if isinstance(m, torch.nn.Linear)]


def global_batch(batch: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The `batch` samples of step 0's global batch: the union of what data-parallel ranks take at step 0."""
    x, y = data.load("train")
    idx = train.batch_indices(0, 0, 1, batch, n=len(y), seed=seed)
    return x[idx], y[idx]


def check_batch(batch: int, parts: int, name: str = "batch") -> int:
    """A global batch that splits into `parts` equal pieces and fits in the training set."""
    try:
        samples = data.size("train")
    except FileNotFoundError:
        samples = 1 << 20
    batch = validate.whole(batch, name, 1, samples, int_only=True)
    if batch % parts:
        raise ValueError(f"{name}: the global batch of {batch} must split into {parts} equal parts")
    return batch


def forward_flops(b: int, n_in: int, n_out: int) -> int:
    return 2 * b * n_in * n_out


def backward_flops(b: int, n_in: int, n_out: int, input_grad: bool = True) -> int:
    return (4 if input_grad else 2) * b * n_in * n_out


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    return x @ w.T + b if b is not None else x @ w.T


def linear_grads(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, input_grad: bool = True):
    """(dW, db, dx) of y = x W^T + b; dx is None when not wanted."""
    return dy.T @ x, dy.sum(0), (dy @ w if input_grad else None)


def relu_grad(dh: torch.Tensor, pre: torch.Tensor) -> torch.Tensor:
    return dh * (pre > 0)


def loss_and_grad(logits: torch.Tensor, y: torch.Tensor, global_batch: int) -> tuple[float, torch.Tensor]:
    """Summed cross-entropy over these samples / the global batch (train.local_step's loss), and d/dlogits."""
    logp = torch.log_softmax(logits, dim=1)
    loss = -logp.gather(1, y[:, None]).sum() / global_batch
    grad = logp.exp()
    grad[torch.arange(len(y)), y] -= 1
    return loss.item(), grad / global_batch


def sgd(comm, params: list[torch.Tensor], grads: list[torch.Tensor], lr: float) -> None:
    """Plain SGD on this rank's tensors, charged as train.optimizer_flops charges it (2 FLOPs an element)."""
    with comm.compute(flops=2 * sum(p.numel() for p in params), label="optimizer"):
        for p, g in zip(params, grads):
            p.sub_(lr * g)
