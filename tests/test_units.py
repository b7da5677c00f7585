import pytest

from netlab import Link, network
from netlab.net import device
from netlab.units import parse_bandwidth, parse_bytes, parse_size_range, parse_time


@pytest.mark.parametrize("text, expected", [
    ("10Gbit/s", 1.25e9), ("10Gb/s", 1.25e9), ("10Gbps", 1.25e9), ("100Mbit/s", 12.5e6),
    ("25GB/s", 25e9), ("400Gbit/s", 50e9), (1e9, 1e9), ("1.5e3B/s", 1500.0),
])
def test_bandwidth_units(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("text, expected", [
    ("5us", 5e-6), ("5µs", 5e-6), ("2ms", 2e-3), ("1s", 1.0), ("250ns", 250e-9), ("0", 0.0), (3e-6, 3e-6),
])
def test_time_units(text, expected):
    assert parse_time(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("text, expected", [
    ("4MiB", 4 * 2**20), ("4MB", 4_000_000), ("1K", 1024), ("256M", 256 * 2**20), ("1GB", 10**9),
    ("1GiB", 2**30), (100, 100), ("100B", 100),
])
def test_byte_units(text, expected):
    assert parse_bytes(text) == expected


def test_size_range_doubles_like_nccl_tests():
    sizes = parse_size_range("1K:256M")
    assert sizes[0] == 1024 and sizes[-1] == 256 * 2**20 and len(sizes) == 19
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))
    assert parse_size_range("1K,4K") == [1024, 4096]


@pytest.mark.parametrize("call, name", [
    (lambda: parse_bandwidth("-1Gbit/s"), "bandwidth"),
    (lambda: parse_bandwidth("0Gbit/s"), "bandwidth"),
    (lambda: parse_bandwidth("10Gfoo/s"), "bandwidth"),
    (lambda: parse_bandwidth("fast"), "bandwidth"),
    (lambda: parse_time("5 parsecs", "latency"), "latency"),
    (lambda: parse_time("-5us", "latency"), "latency"),
    (lambda: parse_bytes("0"), "size"),
    (lambda: parse_bytes("1.5"), "size"),
    (lambda: parse_bytes("3XB"), "size"),
    (lambda: Link.of(preset="Ethernet9000"), "preset"),
    (lambda: Link.of(latency="5us"), "bandwidth"),
    (lambda: network("10Gbit/s", "5us", ranks_per_host=0), "ranks_per_host"),
    (lambda: device("TPU-v9"), "device"),
    (lambda: device("A100-bf16", efficiency=1.5), "efficiency"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(name + ":"), str(info.value)
    assert "\n" not in str(info.value)


def test_presets_carry_sources_and_units():
    from netlab.net.presets import DEVICES, LINKS
    for name in ("1GbE", "10GbE", "25GbE", "100GbE", "400GbE", "IB-NDR", "PCIe4x16", "NVLink3"):
        bw, lat, source = LINKS[name]
        assert source and Link.of(preset=name).bandwidth > 0
    assert Link.of(preset="100GbE").bandwidth == 12.5e9             # 100 Gbit/s = 12.5 GB/s
    assert Link.of(preset="NVLink4").bandwidth == 450e9
    assert all(src for _, src in DEVICES.values())
    assert "GB = 1e9" in network("10Gbit/s", "5us").describe()
