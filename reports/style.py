"""Shared matplotlib setup: the Agg backend, one figure style, PNG output, time units."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

DPI = 100
RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
}
matplotlib.rcParams.update(RC)

# Colour-blind-safe palette (Okabe-Ito)
BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, GREY, SKY, YELLOW = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#8E44AD", "#8C564B", "#CC79A7", "#7F7F7F", "#56B4E9", "#F0E442")
SERIES = [BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, SKY]


def figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def save(fig: Figure, path: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI)
    return path


def time_unit(span_ms: float) -> tuple[str, float]:
    """A readable unit for an axis spanning ``span_ms``: (label, ms per unit)."""
    if span_ms <= 180_000:
        return "s", 1000.0
    if span_ms <= 3 * 3_600_000:
        return "min", 60_000.0
    return "h", 3_600_000.0


def note(ax, text: str) -> None:
    """A message in the middle of an empty axes."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=11, color=GREY, wrap=True)
