"""A panel's regimes read from its own definition, and a short walk through them for the browser test.

A regime is a region of a panel's setting space with its own set of controls that do not apply
(chapter 5 greys the fat-tree k for a spine-leaf fabric and the seed for an ordered, sprayed run;
chapter 7 greys the cluster's controls for a scenario). The browser test moves each panel through its
regimes and checks that the page greys what the panel's Python side says and re-enables it after.

Nothing here is written per chapter: `shadow` builds the chapter's panel class in this process with
its `refresh` a no-op (nothing runs), which gives every control's name, label (its description, what
the page shows), kind and values, and the panel's own `greyed(values)`. `regimes` probes `greyed`
around the setting the page shows (that setting, and it with any one other control moved) to find
the controls whose value changes what is greyed, and the values worth visiting: every option of a
menu or toggle with up to MAX_OPTIONS options, else one value for each different greyed outcome
(the one nearest the current value for a slider). `walk` then picks a short sequence of single
changes, each one a person can make (only controls not greyed at that moment), that visits those
values and sees every control that can be greyed both greyed and, later, enabled again.
"""
from __future__ import annotations

import importlib
import re
from collections import deque
from dataclasses import dataclass
from unittest import mock

MAX_OPTIONS = 7                 # a menu with more options (chapter 4's 13 methods): one per greyed outcome
CHOICES = ("dropdown", "toggle", "checkbox")


@dataclass
class Control:
    """One control of a panel as the Python side defines it."""
    name: str
    label: str                  # the description: the label the page shows beside it
    kind: str                   # as browser_driver reads the page: slider, dropdown, toggle, checkbox, text
    values: list                # every value it can take, in the order the page indexes them ([] for text)
    labels: list | None         # the option labels of a menu, toggle or selection slider


def panel_class(chapter_source: str, stem: str):
    """The panel class a chapter's notebook builds (`XxxPanel(` in its code), from netlab.ui."""
    import json
    cells = json.loads(chapter_source)["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    names = re.findall(r"\b([A-Z]\w*Panel)\(", code)
    if not names:
        return None
    modules = [f"netlab.ui.ch{int(stem)}"] if stem.isdigit() else []
    import netlab.ui as ui
    from pkgutil import iter_modules
    modules += [f"netlab.ui.{m.name}" for m in iter_modules(ui.__path__)]
    for module in modules:
        try:
            found = getattr(importlib.import_module(module), names[0], None)
        except ImportError:
            continue
        if found is not None:
            return found
    raise LookupError(f"{names[0]}: the chapter builds it, but no netlab.ui module defines it")


def shadow(cls):
    """The panel built with its defaults and nothing run: its controls and greyed() are what we need."""
    from netlab.ui.panel import Panel
    with mock.patch.object(Panel, "refresh", lambda self: None):
        panel = cls()
    panel.refresh = lambda: None
    return panel


def controls_of(panel) -> list[Control]:
    import ipywidgets as w
    found = []
    for name, c in panel.controls.items():
        labels = list(getattr(c, "_options_labels", ())) or None
        if isinstance(c, (w.Dropdown, w.ToggleButtons, w.SelectionSlider)):
            kind = {w.Dropdown: "dropdown", w.ToggleButtons: "toggle"}.get(type(c), "slider")
            values = list(c._options_values)
        elif isinstance(c, (w.IntSlider, w.FloatSlider)):
            n = int(round((c.max - c.min) / c.step))
            kind, values = "slider", [type(c.value)(c.min + i * c.step) for i in range(n + 1)]
        elif isinstance(c, w.Checkbox):
            kind, values = "checkbox", [False, True]
        else:
            kind, values = "text", []
        found.append(Control(name, c.description, kind, values, labels))
    return found


def greyed(panel, state: dict) -> frozenset:
    """The controls the panel greys at this setting (its own greyed(), given values as it is)."""
    values = panel.values()
    values = type(values)(values)
    values.update(state)
    return frozenset(name for name, off in panel.greyed(values).items() if off)


def index_of(control: Control, value) -> int:
    if isinstance(value, float) or control.kind == "slider" and control.labels is None:
        return min(range(len(control.values)), key=lambda i: abs(control.values[i] - value))
    return control.values.index(value)


def regimes(panel, controls: list[Control], state: dict) -> dict[str, list]:
    """{control name: the values to visit} for every control whose value changes what is greyed."""
    movable = [c for c in controls if c.kind != "text" and len(c.values) > 1]
    bases = [state] + [dict(state, **{d.name: v}) for d in movable for v in d.values if v != state[d.name]]
    found = {}
    for c in movable:
        outcome: dict[tuple, list] = {}
        for v in c.values:
            outcome.setdefault(tuple(greyed(panel, dict(b, **{c.name: v})) for b in bases), []).append(v)
        if len(outcome) < 2:
            continue
        if c.kind in CHOICES and len(c.values) <= MAX_OPTIONS:
            found[c.name] = list(c.values)
        else:
            here = index_of(c, state[c.name])
            found[c.name] = [min(g, key=lambda v: abs(index_of(c, v) - here)) for g in outcome.values()]
    return found


def walk(panel, visit: dict[str, list], state: dict, most: int = 40) -> list[tuple[str, object]]:
    """Single changes [(control, value)] from `state` that visit every value in `visit` and show every
    control that can be greyed both greyed and enabled again after; greedy, by gain per change."""
    names = list(visit)
    key = lambda s: tuple(s[n] for n in names)                                  # noqa: E731

    def moves(s):
        off = greyed(panel, s)
        return [(n, v) for n in names if n not in off for v in visit[n] if v != s[n]]

    reach, queue = {key(state): state}, deque([state])                         # every state a person can reach
    while queue:
        s = queue.popleft()
        for n, v in moves(s):
            t = dict(s, **{n: v})
            if key(t) not in reach:
                reach[key(t)] = t
                queue.append(t)
    greyable = set().union(*(greyed(panel, s) for s in reach.values()))
    todo = {("value", n, v) for n in names for v in visit[n] if v != state[n]}
    todo |= {("off", g) for g in greyable} | {("on", g) for g in greyable}

    def covered(s, seen_off):
        off = greyed(panel, s)
        got = {("value", n, s[n]) for n in names} | {("off", g) for g in off}
        return got | {("on", g) for g in seen_off - off}, seen_off | off

    seen_off = set(greyed(panel, state))
    todo -= covered(state, set())[0]
    plan, cur = [], state
    while todo and len(plan) < most:
        best = None
        paths, queue = {key(cur): []}, deque([cur])                            # shortest path to each state
        while queue:
            s = queue.popleft()
            for n, v in moves(s):
                t = dict(s, **{n: v})
                if key(t) in paths:
                    continue
                paths[key(t)] = paths[key(s)] + [(n, v)]
                queue.append(t)
                gain, off, u = set(), set(seen_off), cur
                for step in paths[key(t)]:
                    u = dict(u, **{step[0]: step[1]})
                    got, off = covered(u, off)
                    gain |= got & todo
                if gain and (best is None or len(gain) / len(paths[key(t)]) > best[0]):
                    best = (len(gain) / len(paths[key(t)]), paths[key(t)])
        if best is None:
            break
        for n, v in best[1]:
            cur = dict(cur, **{n: v})
            got, seen_off = covered(cur, seen_off)
            todo -= got
            plan.append((n, v))
    return plan[:most]


def from_page(controls: list[Control], page_controls: list[dict]) -> tuple[dict, dict, list[str]]:
    """Match the page's controls (browser_driver's reading) to the panel's by kind and label: returns
    ({name: value now}, {name: page control}, problems)."""
    state, where, problems = {}, {}, []
    by_label = {(c.kind, c.label): c for c in controls}
    for pc in page_controls:
        c = by_label.get((pc["kind"], pc["label"].replace("\u200b", "").strip()))
        if c is None:
            problems.append(f"the page shows a {pc['kind']} '{pc['label']}' the panel does not define")
            continue
        where[c.name] = pc
        if c.kind == "text":
            continue
        if c.labels is not None and pc.get("options") is not None and pc["options"] != c.labels:
            problems.append(f"'{c.label}' offers {pc['options']} in the page, {c.labels} in Python")
            continue
        now = pc["now"]
        if c.kind == "slider" and c.labels is not None and pc["max"] - pc["min"] + 1 != len(c.values):
            problems.append(f"'{c.label}' has {pc['max'] - pc['min'] + 1:.0f} positions in the page, "
                            f"{len(c.values)} options in Python")
            continue
        if c.kind == "checkbox":
            state[c.name] = bool(now)
        elif c.kind == "slider" and c.labels is None:
            state[c.name] = c.values[index_of(c, now)]
        elif 0 <= now < len(c.values):
            state[c.name] = c.values[int(now)]
        else:
            problems.append(f"'{c.label}' shows index {now} of {len(c.values)} options")
    missing = [c.label for c in controls if c.name not in where]
    if missing:
        problems.append(f"the page does not show the panel's control(s) {', '.join(missing)}")
    return state, where, problems
