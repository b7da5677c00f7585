"""The challenge's per-link figure: how busy each link of the task's fabric was over an entry's time.

One horizontal bar per NIC and spine link direction (utilisation = bytes carried / (capacity x the
entry's time), so 100 % is a link busy from the first message to the last), and one bar each for the
busiest NVLink and PCIe direction. Left out: the other 127 intra-host directions (the JSON has them).
"""
from __future__ import annotations

import io

from .common import COLORS, axes_or_new

KIND_COLOR = {"nic": COLORS["comm"], "fabric": COLORS["compression"], "intra": COLORS["recv"], "pcie": COLORS["pcie"]}


def link_bars(links: list[dict]) -> list[tuple[str, str, float]]:
    """(label, kind, utilisation) per bar, top to bottom: spine links, NIC links, busiest intra and PCIe."""
    bars = [(d["link"], d["kind"], d["utilisation"]) for d in links if d["kind"] == "fabric"]
    bars += [(d["link"], d["kind"], d["utilisation"]) for d in links if d["kind"] == "nic"]
    for kind, name in (("intra", "NVLink"), ("pcie", "PCIe")):
        inside = [d for d in links if d["kind"] == kind]
        if inside:
            top = max(inside, key=lambda d: d["utilisation"])
            bars.append((f"busiest {name}: {top['link']}", kind, top["utilisation"]))
    return bars


def utilisation(links: list[dict], *, ax=None, title: str = ""):
    """Bars of each link's utilisation (%); returns the figure."""
    bars = link_bars(links)
    fig, ax = axes_or_new(ax, figsize=(6.4, 0.22 * len(bars) + 1.0))
    y = list(range(len(bars)))[::-1]
    ax.barh(y, [100 * u for _, _, u in bars], color=[KIND_COLOR[k] for _, k, _ in bars], height=0.7)
    ax.set_yticks(y)
    ax.set_yticklabels([label for label, _, _ in bars], fontsize=7)
    ax.set_xlim(0, 100)
    ax.set_xlabel("utilisation over the entry's time (%)")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes with no metadata (the same figure gives the same bytes)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, metadata={"Software": None})
    return buf.getvalue()
