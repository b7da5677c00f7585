"""PFC headroom: what the fabric reserves per ingress is what arrives after it crosses Xoff.

The fabric's upstream port stops a priority `response` seconds after a PAUSE reaches it (IEEE 802.3's
pause-response allowance by default), so the bytes an ingress takes above Xoff grow by rate x response:
measured here against that closed form, and never more than the headroom `pfc_headroom` reserves.
The comparison with Linux's mlx5 driver is in test_claims_ch6.py.
"""
import pytest

from netlab.fabric import PFC, Congestion, Incast, incast
from netlab.fabric.switch import MTU, pause_response, pfc_headroom

G = 1e9 / 8
XOFF = 16 * 1024


def overshoot(rate, delay, response):
    """(bytes one ingress held above Xoff at most, drops) for 4 line-rate senders of 1 MB into one port."""
    room = pfc_headroom(rate, delay, response=response)
    run = incast(Incast(senders=4, block=1024 * 1024, bandwidth=rate, link_delay=delay,
                        switch=Congestion("ideal", buffer=XOFF + room, pfc=PFC(XOFF, response=response))))
    return max(run.port.switch.peak.values()) - XOFF, run.summary()["drops"]


@pytest.mark.parametrize("rate,delay", [(G, 25e-6), (10 * G, 2e-6), (100 * G, 15e-9)])
def test_the_headroom_holds_what_arrives_after_xoff(rate, delay):
    for response in (0.0, pause_response(rate), 20e-6):
        over, drops = overshoot(rate, delay, response)
        assert drops == 0 and 0 < over <= pfc_headroom(rate, delay, response=response)


def test_the_upstream_keeps_sending_for_its_response_time():
    rate, delay = 10 * G, 2e-6
    extra = overshoot(rate, delay, 20e-6)[0] - overshoot(rate, delay, 0.0)[0]
    assert abs(extra - rate * 20e-6) <= 2 * MTU                 # rate x response, to within packets


def test_the_response_is_802_3s_allowance_in_time():
    assert pause_response(10 * G) == pytest.approx(60 * 512 / 10e9)          # 60 quanta at 10 Gbit/s
    assert pause_response(100 * G) == pytest.approx(394 * 512 / 100e9)       # 394 quanta at 100 Gbit/s
    assert pause_response(G) == pause_response(10 * G)                       # below the table: 10 Gbit/s's
    assert pause_response(50 * G) == pause_response(100 * G) > pause_response(40 * G)   # the longer neighbour


def test_a_bad_response_names_the_parameter():
    with pytest.raises(ValueError, match="^pfc-response"):
        PFC(10_000, response=-1e-6)
