"""The claims of chapter 6's appendix on the real Linux stack (labs/appendix_linux_tcp.ipynb), each checked by
running the appendix's comparison at its CI size (tests/claims.py). The kernel's own runs need root and network
namespaces; without them that claim is skipped with the reason, as the appendix prints only the predictions.
The 150-round agreement of the kernel-aware model with the kernel is tests/test_linux_fabric.py's."""
import pytest

from claims import claim
from netlab.fabric import Congestion, Incast, incast
from netlab.linuxnet import linux

KB = 1024
SETUP = dict(block="64K", bandwidth="100Mbit/s", buffer="32K", transport="cubic", rounds=10)


@claim("appendix.textbook-model-loses-more")
def test_the_textbook_model_predicts_less_goodput_at_200ms_than_the_kernel_aware_one():
    for n in (8, 16, 32):
        aware = linux.model(senders=n, rto_min="200ms", **SETUP)["link_fraction"]
        textbook = incast(Incast(senders=n, block=64 * KB, rounds=SETUP["rounds"], bandwidth=100e6 / 8,
                                 switch=Congestion("cubic", buffer=32 * KB, rto_min=0.2))).summary()["goodput_Bps"] / (100e6 / 8)
        assert textbook < aware, (n, textbook, aware)


@pytest.mark.slow
@claim("appendix.kernel-collapse-and-recovery")
def test_the_kernel_collapses_at_200ms_and_recovers_with_1ms():
    ok, why = linux.available()
    if not ok:
        pytest.skip(f"the real Linux stack is not available here: {why}")
    for n in (16, 32):
        slow, fast = (linux.incast(senders=n, rto_min=rto, **SETUP)["link_fraction"] for rto in ("200ms", "1ms"))
        # "below half the link (about a third) ... roughly twice as much or more with 1 ms": measured here
        # 31-36 % at 200 ms and 67-92 % at 1 ms over 10 and 30 rounds on a loaded 2-core machine
        assert 0.2 < slow < 0.5 and fast > 1.7 * slow, (n, slow, fast)
