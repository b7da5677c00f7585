"""What a wire carries (net/framing.py): headers per packet at an MTU, on the port model, the packet fabric
and a real shaped link.

References: the header sizes of the standards (Ethernet 14 + FCS 4 + preamble 8 + gap 12; IPv4 20; TCP 20
with the 12-byte timestamp option, Linux's default; UDP 8; RoCEv2's BTH 12 and ICRC 4 with InfiniBand's
path MTUs 256..4096), counted by hand; the closed form of a ring all-reduce, 2(p-1) steps of n/p; a real
1514-byte-frame link shaped by Linux's tbf between network namespaces, under torchrun's environment,
for netlab's ring and for gloo's own all_reduce (the emulator must be within 1 % of it once framing counts:
tests/test_claims_ch9.py, as chapter 9 states it).
"""
from dataclasses import replace
import math

import pytest
import torch

import netlab
from netlab import collectives
from netlab.fabric import ethernet as E
from netlab.fabric.congestion import Congestion
from netlab.net.framing import Framing, parse, ring_allreduce

GBIT = 1e9 / 8


def test_the_headers_of_each_stack_at_each_mtu_counted_by_hand():
    tcp = Framing("tcp", 1500)
    assert (tcp.payload, tcp.overhead) == (1448, 14 + 20 + 32 + 24)
    assert Framing("tcp", 9000).payload == 8948
    assert Framing("tcp", 1500, layer1=False).overhead == 66           # 1514-byte frames, as tbf counts
    assert (Framing("rocev2", 1500).payload, Framing("rocev2", 1500).overhead) == (1024, 14 + 44 + 24)
    assert Framing("rocev2", 4200).payload == Framing("rocev2", 9000).payload == 4096
    assert Framing("uet", 4146).payload == 4096 and Framing("uet", 4146).overhead == 64 + 24
    assert tcp.efficiency() == pytest.approx(1448 / 1538)
    assert tcp.ack_frame == 66 + 24 and Framing("rocev2").ack_frame == 0
    assert parse("tcp:9000") == Framing("tcp", 9000) and parse(None) is None


def test_framing_is_checked():
    for bad, name in [("ip", "framing"), ("tcp:abc", "mtu"), ("rocev2:200", "mtu"), ("tcp:100", "mtu")]:
        with pytest.raises(ValueError, match=f"^{name}:"):
            parse(bad)
    with pytest.raises(ValueError, match="^framing:"):
        netlab.network("1Gbit/s", framing=1500)


def test_a_message_costs_its_wire_bytes():
    link = netlab.network("1Gbit/s", "5us", framing="tcp").nic
    n = 1 << 20
    packets = math.ceil(n / 1448)
    assert link.time(n) == pytest.approx(5e-6 + (n + packets * 90) / GBIT)
    assert link.ack_time(n) == pytest.approx(math.ceil(packets / 2) * 90 / GBIT)
    assert netlab.network("1Gbit/s", "5us").nic.time(n) == 5e-6 + n / GBIT  # no framing: today's


def _ring(comm, n):
    x = torch.ones(n // 4)
    collectives.allreduce(comm, x, algo="ring")
    return comm.now()


def _incast(comm, n):
    if comm.rank == 0:
        bufs = [torch.empty(n // 4) for _ in range(comm.world_size - 1)]
        comm.wait(*[comm.irecv(b, s) for s, b in zip(range(1, comm.world_size), bufs)])
    else:
        comm.send(torch.ones(n // 4), 0)
    return comm.now()


def test_the_port_model_with_framing_gives_the_ring_closed_form_and_acks_cost_an_incast_nothing():
    n = 1 << 20
    net = netlab.network("1Gbit/s", "10us", framing="tcp")
    ring = netlab.run(_ring, n, ranks=4, network=net)
    assert max(ring.values) == pytest.approx(ring_allreduce(4, n, GBIT, 10e-6, framing=Framing("tcp")), rel=1e-9)
    push = netlab.run(_incast, n, ranks=4, network=net)
    assert push.values[0] == pytest.approx(3 * (10e-6 + Framing("tcp").wire(n) / GBIT), rel=1e-9)   # no ACK time
    # the launcher's port model (Congestion() with no switch) books the same ports: the same times
    same = netlab.run(_ring, n, ranks=4, network=netlab.network("1Gbit/s", "10us", framing="tcp",
                                                                congestion=Congestion()))
    assert same.values == ring.values


def test_the_packet_fabric_sends_payload_sized_packets_with_their_headers_on_the_wire():
    n, senders = 256 * 1024, 7
    framing = Framing("rocev2", 1500)
    net = netlab.network("1Gbit/s", "50us", framing=framing, congestion=Congestion("rccc", buffer=64 * 1024))
    real = netlab.run(_incast, n, ranks=senders + 1, network=net)
    model = E.incast(senders, n, switch=replace(E.INCAST, transport="rccc", buffer=64 * 1024), framing=framing)
    assert real.values[0] == model.time_s                      # real ranks: the model's packets, to the digit
    wire = senders * math.ceil(n / 1024) * (1024 + framing.overhead)
    assert wire / GBIT <= model.time_s <= wire / GBIT + 3 * model.flows[0].base_rtt
    plain = E.incast(senders, n, switch=replace(E.INCAST, transport="rccc", buffer=64 * 1024))
    assert model.time_s > plain.time_s * (1024 + framing.overhead) / 1024 * 0.99
