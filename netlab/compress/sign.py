"""Sign compression: one bit per element. Scaled sign (EF-SignSGD) and majority vote (signSGD).

* Scaled sign (Karimireddy et al., "Error Feedback Fixes SignSGD", ICML 2019):
  C(p) = (||p||_1 / d) * sign(p). One fp32 scale plus d packed bits (1/32 of fp32). Contractive:
  ||p - C(p)||^2 = ||p||^2 - ||p||_1^2 / d, so error feedback applies. The ranks' contributions are
  summed (the aggregate of EF-SignSGD is a mean, not a vote).
* Majority vote (Bernstein et al., "signSGD with Majority Vote", ICLR 2019): the update's direction
  is sign(sum_i sign(g_i)), element by element; a tie gives 0. Bernstein et al. put the magnitude in
  the learning rate; here each rank also sends its scale ||g||_1 / d (4 bytes) and the vote is
  multiplied by the sum of the scales, so the same learning rate serves every method in the chapter.
  Each rank all-gathers the bits and counts the vote itself (a parameter server would count it once
  and send 1 bit back; see chapter 3).
Sign 0 is sent as +: 1 bit has no room for zero.
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .base import Compressor, Payload, pack_bits, unpack_bits


class ScaledSign(Compressor):
    """(||p||_1 / d) * sign(p): 1 bit per element and one fp32 scale."""
    name = "sign"
    contractive = True

    def compress(self, x, step=0, shared=None):
        scale = x.abs().mean().reshape(1)                        # ||x||_1 / d
        return Payload([pack_bits(x >= 0, 1), scale.float()], x.numel())

    def decompress(self, payload):
        bits, scale = payload.tensors
        return (unpack_bits(bits, 1, payload.numel).float() * 2 - 1) * scale


class MajorityVote(ScaledSign):
    """signSGD with majority vote: sign of the summed signs, times the summed scales."""
    name = "majority"

    def aggregate(self, dense):
        votes = sum(torch.sign(d) for d in dense)                # (d,) in [-p, p]
        magnitude = sum(float(d.abs().max()) for d in dense)     # sum of the ranks' scales
        return torch.sign(votes) * magnitude
