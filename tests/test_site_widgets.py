"""The site's widgets as their last output (tools/build_site.py), on widget state written by ipywidgets itself.

nbclient saves a notebook's widgets as ipywidgets' manager state; the site replaces each widget view
by what it showed. Here real ipywidgets build the state (a panel: controls above an Output widget
holding a figure; a prediction: a question, choices and a lock button; tqdm's progress bar), and the
static outputs must carry the panel's last figure and its settings, the question and its choices,
and a note only where something could be moved.
"""
from __future__ import annotations

import base64
import importlib.util

import pytest

from browser_driver import ROOT

widgets = pytest.importorskip("ipywidgets")

_spec = importlib.util.spec_from_file_location("build_site", ROOT / "tools" / "build_site.py")
build_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_site)

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a")).decode()   # the payload is carried, not decoded


def state_of(widget) -> dict:
    """ipywidgets' own manager state (every live widget, `widget` among them), as nbclient saves it."""
    return widgets.Widget.get_manager_state(drop_defaults=False)["state"]


def html_of(outputs) -> str:
    return "\n".join(o["data"].get("text/html", "") for o in outputs if o["output_type"] == "display_data")


def test_panel_shows_its_last_figure_settings_and_note():
    slider = widgets.SelectionSlider(options=["1Gbit/s", "10Gbit/s"], value="10Gbit/s", description="bandwidth")
    nodes = widgets.IntSlider(value=4, min=2, max=16, description="nodes")
    out = widgets.Output()
    out.outputs = ({"output_type": "display_data", "metadata": {}, "data": {"text/html": "<pre>step 2.6 ms</pre>",
                                                                           "text/plain": "step 2.6 ms"}},
                   {"output_type": "display_data", "metadata": {}, "data": {"image/png": PNG, "text/plain": "<Figure>"}})
    status = widgets.HTML('<span style="color:#777">this change took 0.16 s in the kernel</span>')
    panel = widgets.VBox([widgets.VBox([nodes, slider]), status, out])
    outputs = build_site.static_outputs(panel.model_id, state_of(panel))
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert [o["data"]["image/png"] for o in images] == [PNG]
    text = html_of(outputs)
    assert "nodes <b>4</b>" in text and "bandwidth <b>10Gbit/s</b>" in text
    assert "step 2.6 ms" in text
    assert "needs a running kernel" in text
    assert "this change took" not in text                    # the kernel's timing line means nothing on a page
    order = [i for i, o in enumerate(outputs) if "Drawn at" in o["data"].get("text/html", "")]
    assert order and order[0] < outputs.index(images[0]), "the settings come before the figure they describe"


def test_prediction_shows_question_and_choices_not_what_follows_the_button():
    question = widgets.HTML("<b>Predict:</b> from 4 to 8 nodes, the communication time...")
    choice = widgets.RadioButtons(options=["doubles", "stays about the same", "grows a little"], value=None)
    box = widgets.VBox([question, choice, widgets.Button(description="Lock my answer"),
                        widgets.HTML("<i>The measurement appears here once your answer is locked.</i>")])
    text = html_of(build_site.static_outputs(box.model_id, state_of(box)))
    assert "from 4 to 8 nodes" in text
    for option in choice.options:
        assert f"<li>{option}</li>" in text
    assert "lock it" in text and "appears here once" not in text


def test_progress_bar_is_one_line_without_a_note():
    bar = widgets.HBox([widgets.HTML("scaling"), widgets.FloatProgress(value=5, max=5), widgets.HTML("5/5 [00:03&lt;00:00,  1.52it/s]")])
    outputs = build_site.static_outputs(bar.model_id, state_of(bar))
    assert len(outputs) == 1
    text = html_of(outputs)
    assert '<progress value="5.0" max="5.0">' in text and "5/5" in text and "netlab-live-note" not in text
    assert "it/s" not in text and "00:03" not in text          # the build machine's wall clock is left out


def test_staticize_leaves_no_widget_view_or_state():
    import nbformat
    out = widgets.Output()
    panel = widgets.VBox([widgets.IntSlider(value=1, description="n"), out])
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("panel")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        build_site.WIDGET_VIEW: {"model_id": panel.model_id, "version_major": 2, "version_minor": 0},
        "text/plain": "VBox(...)"})]
    nb.cells.append(cell)
    nb.metadata["widgets"] = {build_site.WIDGET_STATE: {"state": state_of(panel), "version_major": 2, "version_minor": 0}}
    assert build_site.staticize(nb) == 1
    assert "widgets" not in nb.metadata
    assert all(build_site.WIDGET_VIEW not in o.get("data", {}) for o in nb.cells[0].outputs)
    nbformat.validate(nb)
