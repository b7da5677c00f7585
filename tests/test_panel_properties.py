"""Every chapter panel, over its whole setting space: every control's value drawn jointly (Hypothesis),
the setting either draws a complete figure or refuses in one sentence that names the control at fault;
never an internal exception's text, never a traceback.

"Complete figure": the PNG the panel shows decodes, at the size its figure asks for or larger than a
thumbnail. "Refuses": one text output, ``cannot run this setting: <control>: ...`` on one line, where
<control> is one of the panel's own controls. An exception the panel did not expect (anything but a
ValueError, MemoryError or an interrupt) is kept in ``panel.error`` and fails the test with its text.

Derandomized (the same examples every run, no example database) and few examples per panel, so the
file runs in about a minute on two idle cores; the panels that train on real ranks (chapters 1, 3, 4
and 7) get the fewest and are built smaller where their constructor allows (fewer steps: the same
code path per change).
"""
import base64
import io
import re

import ipywidgets as widgets
import matplotlib.image as mpimg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

REFUSAL = re.compile(r"^cannot run this setting: ([\w-]+): \S")


def strategy_of(control):
    """Every value a student can give the widget."""
    if isinstance(control, (widgets.SelectionSlider, widgets.Dropdown, widgets.ToggleButtons)):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return st.sampled_from(values)
    if isinstance(control, widgets.IntSlider):
        return st.integers(control.min, control.max)
    if isinstance(control, widgets.FloatSlider):
        steps = round((control.max - control.min) / control.step)
        return st.integers(0, steps).map(lambda i: round(control.min + i * control.step, 10))
    if isinstance(control, widgets.Checkbox):
        return st.booleans()
    if isinstance(control, widgets.IntText):                 # a box: anything typed, sensible or not
        return st.one_of(st.integers(-3, 40), st.integers(-2**40, 2**40))
    raise TypeError(f"no strategy for {type(control).__name__}")


def settings_of(panel):
    return st.fixed_dictionaries({name: strategy_of(c) for name, c in panel.controls.items()})


def check_answer(panel, values):
    outputs = panel.out.outputs
    assert panel.error is None, f"{values}: internal {type(panel.error).__name__}: {panel.error}"
    texts = [o["data"]["text/plain"] for o in outputs if "image/png" not in o["data"]]
    images = [o["data"]["image/png"] for o in outputs if "image/png" in o["data"]]
    assert not any("Traceback" in t for t in texts), texts
    if texts and texts[0].startswith("cannot run this setting"):
        assert len(outputs) == 1 and not images, outputs
        line = texts[0]
        assert "\n" not in line.strip(), f"{values}: more than one line: {line!r}"
        m = REFUSAL.match(line)
        assert m and m.group(1) in panel.controls, f"{values}: the refusal names no control: {line!r}"
        return "refused"
    assert not any(t.startswith(("error:", "Interrupted")) for t in texts), texts
    assert len(images) == 1, f"{values}: {len(images)} figures"
    img = mpimg.imread(io.BytesIO(base64.b64decode(images[0])), format="png")
    assert img.shape[0] > 100 and img.shape[1] > 100, img.shape
    return "drawn"


def explore(panel, examples: int):
    seen = {"drawn": 0, "refused": 0}

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(settings_of(panel))
    def one(values):
        panel.set(**values)
        seen[check_answer(panel, values)] += 1
    one()
    assert seen["drawn"], seen                                  # the space is not all refusals
    return seen


def test_chapter_1_step():
    from netlab.ui.ch1 import StepPanel
    explore(StepPanel(ranks=2, width=128), 8)


def test_chapter_2_ring_stepper_and_collectives():
    from netlab.ui.ch2 import CollectivePanel, RingStepper
    explore(RingStepper(ranks=5), 6)
    explore(CollectivePanel(ranks=4, size="64K"), 5)


def test_chapter_3_parameter_servers():
    from netlab.ui.ch3 import PSPanel
    explore(PSPanel(steps=8, workers=2, servers=1), 4)                    # a first answer (4 steps), then 8


def test_chapter_4_compression(monkeypatch):
    from netlab.ui import ch4
    # a first answer of 6 steps, then 12: the same two answers a change gives in the chapter (20, then
    # 200), the accuracy curve evaluated every 3 steps as at 40 (eval_every = max(3, steps // 20))
    monkeypatch.setattr(ch4, "FIRST_STEPS", 6)
    explore(ch4.CompressPanel(steps=12, ranks=2, sweep=["1Gbit/s", "100Gbit/s"]), 3)


def test_chapter_5_fabric_explorer():
    from netlab.ui.ch5 import FabricPanel
    explore(FabricPanel(ranks=16, max_ranks=1024), 25)


def test_chapter_6_incast():
    from netlab.ui.ch6 import CongestionPanel
    explore(CongestionPanel(senders=4, block="64K"), 10)


def test_chapter_7_buckets_and_scenarios():
    from netlab.ui.ch7 import Ch7Panel
    explore(Ch7Panel(ranks=2, shape=dict(width=128, layers=3, batch=64)), 6)


def test_chapter_8_oversubscription():
    from netlab.ui.ch8 import Ch8Panel
    explore(Ch8Panel(hosts=8, size="1M"), 8)


def test_chapter_9_ethernet_for_ai():
    from netlab.ui.ch9 import EthernetPanel
    explore(EthernetPanel(senders=3), 8)
