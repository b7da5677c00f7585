"""The fabric's configuration objects: an incast described once (``fabric.experiments.Incast``) with the switch
``netlab.network(congestion=...)`` takes, the launcher's line kept off the user's ``Congestion``, and the
kernel's TCP profile as its own class (``linux_tcp.LinuxTCP``)."""
import dataclasses

import pytest

import netlab
from netlab import Congestion
from netlab.fabric import Incast, incast, transport
from netlab.fabric import engine, linux_tcp, tcp
from netlab.cosim.live import LaunchedCongestion, launched

KB = 1024


def test_an_incast_is_one_config_and_units_describe_the_same_one():
    """``incast`` takes the ``Incast`` alone (no second set of keywords); a switch written with units
    ('32K', '1ms') and with numbers is the same switch and the same run, and the run has drops."""
    numbers = incast(Incast(senders=6, block=64 * KB, rounds=2, bandwidth=1e9 / 8,
                            switch=Congestion("reno", buffer=32 * KB, rto_min=1e-3, seed=3)))
    units = incast(Incast(senders=6, block=64 * KB, rounds=2,
                          switch=Congestion("reno", buffer="32K", rto_min="1ms", seed=3)))
    assert list(numbers.step_times) == list(units.step_times) and numbers.summary()["drops"] == units.summary()["drops"] > 0
    with pytest.raises(TypeError):
        incast(6, 64 * KB)                                # noqa -- the old positional keywords are gone


def test_an_incasts_switch_is_what_a_network_takes():
    cfg = Incast(senders=4, switch=Congestion("dctcp", buffer="64K"))
    net = netlab.network(cfg.bandwidth, 2 * cfg.link_delay, congestion=cfg.switch)
    assert net.congestion is cfg.switch


def test_configs_are_frozen_and_keyword_only():
    with pytest.raises(TypeError):
        Incast(8)                                         # noqa -- positional on purpose
    with pytest.raises(TypeError):
        Congestion("reno", "64K")                         # noqa -- only the transport by position
    with pytest.raises(dataclasses.FrozenInstanceError):
        Incast().senders = 3
    with pytest.raises(ValueError, match="switch"):
        Incast(switch=Congestion("nscc", topology="star"))
    with pytest.raises(ValueError, match="senders"):
        Incast(senders=0)


def test_the_launchers_line_is_on_the_launched_copy_only():
    spec = Congestion("reno", buffer="64K")
    assert "authkey" not in {f.name for f in dataclasses.fields(spec)} and spec.address == ""
    copy = launched(spec, "/tmp/sock", b"key")
    assert isinstance(copy, LaunchedCongestion) and copy.address == "/tmp/sock" and copy.authkey == b"key"
    assert copy.describe() == spec.describe() and "key" not in repr(copy)


def test_textbook_reno_has_no_kernel_profile_and_make_picks_it_by_name():
    fab = engine.Fabric(0)
    nic = fab.port("nic", 1e9 / 8, 25e-6)
    flow = engine.Flow(fab, "f", [nic], 64 * KB, start=0.0)
    plain, kernel = transport.make("cubic", flow, 0.2), transport.make("cubic", flow, 0.2, linux=True, tick=0.004)
    assert type(plain) is tcp.Cubic and not isinstance(plain, linux_tcp.LinuxTCP) and not hasattr(plain, "tick")
    assert isinstance(kernel, tcp.Cubic) and isinstance(kernel, linux_tcp.LinuxTCP) and kernel.tick == 0.004
    with pytest.raises(ValueError, match="linux"):
        transport.make("dcqcn", flow, 0.2, linux=True)
    with pytest.raises(ValueError, match="tick"):
        transport.make("reno", flow, 0.2, linux=True, tick=-1)
