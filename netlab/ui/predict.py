"""Predictions that count: answer first, then see the measurement, and keep a record to hand in.

    q = Prediction("ch1-more-nodes", "From 4 to 8 nodes, communication time...",
                   options=[("doubles", "why that is wrong"), ("stays about the same", "..."),
                            ("grows a little", "...", "why it is right")],
                   measure=lambda: {"value": ratio, "text": "measured: x1.17"},
                   correct=lambda m: 2 if m["value"] < 1.5 else 0)
    q          # a widget: choose, press "Lock my answer", then the measurement is revealed

Multiple choice (``options``: label, the explanation shown when that option is wrong, and optionally
a third item, the explanation shown when the run makes it the right one) or numeric (``numeric=Numeric(
unit, tolerance, why)``: the measured value is the answer, within a relative ``tolerance``; ``why`` is
shown with it). The measurement
runs only when the answer is locked, and no explanation is in the widget before that: a chapter
keeps its "why" here, not in the text below the question, so it is read after answering. The right
option is decided by ``correct(measurement)``, from the run, not written into the question.

Each locked answer is appended, with a UTC timestamp, to a small JSON file (``predictions.json``
in the working folder, or ``$NETLAB_PREDICTIONS``) that the student hands in. A question already
answered in that file opens locked, showing the first answer: re-running a notebook cannot change
a prediction after its reveal. Left out: any server; the file is the record.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import os
from dataclasses import dataclass

import ipywidgets as widgets

from .. import validate

DEFAULT_FILE = "predictions.json"


def record_path(path: str | None = None) -> str:
    return path or os.environ.get("NETLAB_PREDICTIONS") or DEFAULT_FILE


def load(path: str | None = None) -> dict:
    try:
        with open(record_path(path), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {"answers": []}
    return data if isinstance(data, dict) and isinstance(data.get("answers"), list) else {"answers": []}


def save_answer(entry: dict, path: str | None = None) -> None:
    """Append one answer (atomically: a crash never leaves half a file)."""
    path = record_path(path)
    data = load(path)
    data["answers"].append(entry)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
    os.replace(tmp, path)


def _paragraphs(text: str) -> str:
    """Plain text to HTML: escaped, a blank line starts a new paragraph."""
    return "".join(f"<p>{html.escape(' '.join(p.split()))}</p>" for p in text.split("\n\n") if p.strip())


@dataclass(frozen=True)
class Numeric:
    """A numeric answer: its unit, the relative tolerance that counts as right, and why (shown once locked)."""
    unit: str = ""
    tolerance: float = 0.25
    why: str = ""

    def __post_init__(self):
        validate.positive(self.tolerance, "tolerance")          # relative, for a numeric answer


class Prediction:
    """One question: a locked answer, then the measurement and why each wrong option is wrong."""

    def __init__(self, qid: str, question: str, measure, *, options=None, correct=None,
                 numeric: Numeric | None = None, path: str | None = None):
        if not qid or not isinstance(qid, str):
            raise ValueError(f"qid: a non-empty name for the question, got {qid!r}")
        if options is not None and (len(options) < 2 or correct is None
                                    or any(len(o) not in (2, 3) for o in options)):
            raise ValueError("options: at least two (label, why wrong[, why right]) tuples, "
                             "and correct(measurement) -> index")
        numeric = numeric or Numeric()
        unit, tolerance, why = numeric.unit, numeric.tolerance, numeric.why
        self.qid, self.question, self.measure, self.correct = qid, question, measure, correct
        self.options, self.unit, self.tolerance, self.path, self.why = options, unit, tolerance, path, why
        style = {"description_width": "0px"}
        if options is not None:
            self.choice = widgets.RadioButtons(options=[(o[0], i) for i, o in enumerate(options)],
                                               value=None, style=style, layout=widgets.Layout(width="auto"))
        else:
            self.choice = widgets.Text(value="", placeholder=f"a number{' in ' + unit if unit else ''}",
                                       layout=widgets.Layout(width="220px"))
        self.button = widgets.Button(description="Lock my answer", button_style="primary")
        self.reveal = widgets.HTML("<i>The measurement appears here once your answer is locked.</i>")
        self.button.on_click(lambda _: self.lock())
        self.widget = widgets.VBox([widgets.HTML(f"<b>Predict:</b> {html.escape(question)}"), self.choice,
                                    self.button, self.reveal])
        self.entry = next((a for a in load(path)["answers"] if a.get("id") == qid), None)
        if self.entry is not None:                      # answered before: show it, locked
            self.choice.value = self.entry["answer"] if options is not None else f"{self.entry['answer']:g}"
            self._freeze()
            self.reveal.value = self._reveal_html(self.entry)

    def _freeze(self) -> None:
        self.choice.disabled = self.button.disabled = True

    def lock(self) -> dict | None:
        """Lock the chosen answer, run the measurement, reveal and record. None if nothing was chosen."""
        if self.entry is not None:
            return self.entry
        answer = self.choice.value
        if self.options is None:
            try:
                answer = float(answer)
            except ValueError:
                answer = None
        if answer is None:
            self.reveal.value = "<b style='color:#b35900'>Choose (or type) your prediction first.</b>"
            return None
        self._freeze()
        self.reveal.value = "<i>Measuring...</i>"
        measured = self.measure()
        if self.options is not None:
            right = int(self.correct(measured))
            correct = answer == right
            shown = self.options[answer][0]
        else:
            value = float(measured["value"])
            right = value
            correct = abs(float(answer) - value) <= self.tolerance * abs(value)
            shown = f"{answer:g} {self.unit}".strip()
        self.entry = {"id": self.qid, "question": self.question, "answer": answer, "answer_text": shown,
                      "right": right, "correct": bool(correct), "measured": measured,
                      "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        save_answer(self.entry, self.path)
        self.reveal.value = self._reveal_html(self.entry)
        return self.entry

    def _reveal_html(self, entry: dict) -> str:
        mark = ("<b style='color:#1a7f37'>Right.</b>" if entry["correct"] else
                "<b style='color:#b35900'>Not this time.</b>")
        parts = [f"{mark} You said: {html.escape(str(entry['answer_text']))}.",
                 f"<b>Measured:</b> {html.escape(str(entry['measured'].get('text', entry['measured'])))}"]
        if self.options is not None:
            right = entry["right"]
            parts.append(f"<b>Answer:</b> {html.escape(self.options[right][0])}")
            if len(self.options[right]) == 3:
                parts.append("<b>Why:</b>" + _paragraphs(self.options[right][2]))
            wrong = [f"<li><i>{html.escape(o[0])}</i>: {html.escape(o[1])}</li>"
                     for i, o in enumerate(self.options) if i != right]
            parts.append("<b>Why not the others:</b><ul>" + "".join(wrong) + "</ul>")
        else:
            parts.append(f"(within {self.tolerance:.0%} counts as right)")
            if self.why:
                parts.append("<b>Why:</b>" + _paragraphs(self.why))
        return "<br>".join(parts)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)
