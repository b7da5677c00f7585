"""Model parallelism (模型并行) against data parallelism, on real ranks.

``tensor``: Megatron-style tensor parallelism (张量并行), each layer split over the ranks, the
activations all-reduced. ``pipeline``: GPipe-style pipeline parallelism (流水线并行), consecutive
layers per rank, micro-batches sent point to point. ``experiment`` (``measure``, ``compare``): one step of each, and of
chapter 1's data parallelism, on the same model, global batch and network, with their closed forms.
``mlp``: the lab's MLP as bare matrices, its forward and backward written out.
"""
from .experiment import MODES, ParallelConfig, ParallelResult, compare, formula, measure

__all__ = ["MODES", "ParallelConfig", "ParallelResult", "compare", "formula", "measure"]
