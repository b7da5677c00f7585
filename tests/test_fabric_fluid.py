"""DCQCN's fluid model against the paper's claims (Zhu et al. CoNEXT'16) and its fixed point."""
import numpy as np

from netlab.fabric.fluid import dcqcn_fluid, fixed_point

LINE = 40e9 / 8


def _amplitudes(run, edges):
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        t, queue = run.queue()
        q = queue[(t >= a) & (t < b)]
        out.append(q.max() - q.min())
    return out


def test_two_flows_converge_to_the_fair_share_with_a_queue_of_about_20kb():
    run = dcqcn_fluid(2, 4e-6, duration=0.08, dt=1e-6, start_rates=[LINE, LINE / 10])
    q, r = run.window(0.07)
    np.testing.assert_allclose(r.mean(0), [LINE / 2, LINE / 2], rtol=0.01)
    ref = fixed_point(2)["queue_bytes"]                       # 23 KB (approximate closed form)
    assert abs(q.mean() - ref) <= 0.25 * ref                  # the fixed point linearises: within a quarter


def test_ten_flows_are_stable_at_4us_and_oscillate_at_85us():
    edges = [0.02, 0.03, 0.04, 0.05, 0.06]
    short = _amplitudes(dcqcn_fluid(10, 4e-6, duration=0.06, dt=1e-6), edges)
    long = _amplitudes(dcqcn_fluid(10, 85e-6, duration=0.06, dt=1e-6), edges)
    assert short[-1] < short[0] / 3 and short[-1] < 5e3          # the oscillation dies out
    assert long[-1] > long[0] and long[-1] > 50e3                # it grows instead


def test_two_flows_stay_stable_at_85us():
    amps = _amplitudes(dcqcn_fluid(2, 85e-6, duration=0.06, dt=1e-6), [0.02, 0.03, 0.04, 0.05, 0.06])
    assert amps[-1] < amps[0] / 3
