"""What every compressor is: compress a flat gradient into a payload, decompress it, and say its bytes.

The split follows GRACE (Xu et al., ICDCS 2021; sands-lab/grace): a *compressor* turns a tensor into
the tensors that go on the wire and back; a *memory* (``error_feedback.py``) does error feedback; a
*communicator* (``communicate.py``) moves the payloads -- summed in flight by an all-reduce when the
format allows it (``summable``), all-gathered and decoded rank by rank otherwise.

A ``Payload`` is exactly what is sent: its ``nbytes`` is the sum of its tensors' bytes, indices and
scales included, and the communicator sends those tensors and nothing else, so the byte counters of
``comm`` and a compressor's claim can be compared (a test does).

Sub-byte codes (signs, ternary and QSGD levels) are really packed: ``pack_bits`` puts 8, 4 or 2
codes in a byte. Entropy coding (QSGD's Elias code) is left out, as in most implementations.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from netlab import validate
from netlab.lazy import lazy
torch = lazy("torch", globals())

BIT_WIDTHS = (1, 2, 4, 8)


@dataclass
class Payload:
    """The tensors one rank puts on the wire for one gradient, and what decoding needs to know."""
    tensors: list[torch.Tensor]
    numel: int                                  # elements of the dense gradient it stands for
    meta: dict = field(default_factory=dict)    # known on every rank without sending (shapes, step)

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors)


class Compressor:
    """Base class. Subclasses set the flags and write ``compress`` and ``decompress``.

    summable:    payloads of different ranks can be added element-wise in flight (then an all-reduce
                 carries them: fp16, bf16, int8 with a shared scale, random-k with shared indices);
                 ``decompress`` of the sum is the sum of the decompressions.
    unbiased:    E[decompress(compress(x))] = x over the compressor's randomness.
    contractive: ||x - D(C(x))||^2 <= (1 - delta) ||x||^2 for some delta > 0: what error feedback
                 needs (Karimireddy et al., ICML 2019). A rescaled unbiased compressor is not.
    fixed_size:  every rank's payload has the same size for a given gradient size (else the
                 all-gather first exchanges sizes).
    """
    name = "compressor"
    summable = False
    unbiased = False
    contractive = False
    fixed_size = True

    def compress(self, x: torch.Tensor, step: int = 0, shared=None) -> Payload:
        raise NotImplementedError

    def decompress(self, payload: Payload) -> torch.Tensor:
        raise NotImplementedError

    def aggregate(self, dense: list[torch.Tensor]) -> torch.Tensor:
        """Combine the ranks' decompressed gradients (a sum; majority vote overrides this)."""
        out = dense[0].clone()
        for d in dense[1:]:
            out += d
        return out

    def agree(self, comm, x: torch.Tensor):
        """Anything the ranks must agree on before compressing (int8's shared scale); None by default."""
        return None

    def describe(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class Identity(Compressor):
    """No compression: the fp32 gradient itself (the baseline)."""
    name = "none"
    summable = True
    contractive = True
    unbiased = True

    def compress(self, x, step=0, shared=None):
        return Payload([x.clone()], x.numel())

    def decompress(self, payload):
        return payload.tensors[0].float()


def pack_bits(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack non-negative integer codes < 2**bits into bytes, 8 // bits codes per byte (little end first).

    codes: (n,) integer tensor. Returns (ceil(n * bits / 8),) uint8.
    """
    validate.choice(bits, "bits", BIT_WIDTHS)
    codes = codes.to(torch.uint8).reshape(-1)
    if bits == 8:
        return codes.clone()
    per = 8 // bits
    pad = (-codes.numel()) % per
    if pad:
        codes = torch.cat([codes, codes.new_zeros(pad)])
    shifts = torch.arange(per, dtype=torch.uint8) * bits                 # (per,)
    return (codes.view(-1, per) << shifts).sum(dim=1, dtype=torch.uint8)  # bit fields do not overlap


def unpack_bits(packed: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    """Inverse of ``pack_bits``: (n,) uint8 codes."""
    if bits == 8:
        return packed[:n].clone()
    per = 8 // bits
    shifts = torch.arange(per, dtype=torch.uint8) * bits
    mask = (1 << bits) - 1
    return ((packed.view(-1, 1) >> shifts) & mask).reshape(-1)[:n]


def bits_for(values: int) -> int:
    """The smallest packable width holding `values` distinct codes."""
    for bits in BIT_WIDTHS:
        if values <= 1 << bits:
            return bits
    raise ValueError(f"levels: {values} codes do not fit in 8 bits")
