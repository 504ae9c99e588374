"""Small charts for the HTML report, drawn as inline SVG on the server (no scripts, no network).

Each function takes numbers already in the run record (or the comparison) and returns one
``<svg>`` element as a string; every text in it is XML-escaped. The charts show what a table
cannot: a distribution (``histogram``), estimates with their uncertainty (``intervals``), a
spread over the cases (``per_case_bars``) and the per-case change between two runs
(``change_bars``). They never compute a figure the record does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["change_bars", "histogram", "intervals", "per_case_bars"]

BLUE, RED, GREEN, GREY, INK = "#2f81f7", "#cf222e", "#1a7f37", "#d0d7de", "#57606a"


def _svg(width: int, height: int, label: str, body: list[str]) -> str:
    title = escape(label)
    return (f'<svg class="chart" role="img" aria-label="{title}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}"><title>{title}</title>'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 11, fill: str = INK) -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" text-anchor="{anchor}">'
            f"{escape(text)}</text>")


def histogram(name: str, values: Sequence[float], bins: int = 10) -> str:
    """A histogram of a per-case score in [0, 1] (``bins`` equal bins; 1.0 falls in the last).

    Args:
        name: The score's name (``f1``).
        values: One value per counted case (trials pooled by the caller, or one per trial).
        bins: Number of bins.
    """
    width, height, left, bottom, top = 320, 150, 28, 24, 16
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(v * bins)))] += 1
    peak = max(counts) or 1
    plot_w, plot_h = width - left - 8, height - bottom - top
    bar_w = plot_w / bins
    body = [_text(left, 11, f"{name}: {len(values)} cases", size=12, fill="#1b1f24")]
    for i, n in enumerate(counts):
        h = plot_h * n / peak
        x, y = left + i * bar_w, top + plot_h - h
        body.append(f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" fill="{BLUE}">'
                    f"<title>{escape(f'{i / bins:.1f}-{(i + 1) / bins:.1f}: {n}')}</title></rect>")
        if n:
            body.append(_text(x + bar_w / 2, y - 2, str(n), "middle", 10))
    body.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="{GREY}"/>')
    for tick in (0.0, 0.5, 1.0):
        body.append(_text(left + plot_w * tick, height - 8, f"{tick:g}", "middle", 10))
    return _svg(width, height, f"distribution of {name} over the cases", body)


def intervals(rows: Sequence[tuple[str, float, float | None, float | None]]) -> str:
    """Rates in [0, 1] as points with their 95% intervals, one row each.

    Args:
        rows: ``(name, value, low, high)``; low/high None when the figure has no interval.
    """
    width, left, right, row_h, top = 640, 190, 60, 22, 18
    height = top + row_h * len(rows) + 22
    plot_w = width - left - right
    body = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot_w * tick
        body.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 20}" stroke="#eaeef2"/>')
        body.append(_text(x, height - 6, f"{tick:g}", "middle", 10))
    for i, (name, value, low, high) in enumerate(rows):
        y = top + row_h * i + row_h / 2
        body.append(_text(left - 8, y + 4, name, "end"))
        if low is not None and high is not None:
            body.append(f'<line x1="{left + plot_w * low:.1f}" y1="{y:.1f}" x2="{left + plot_w * high:.1f}" '
                        f'y2="{y:.1f}" stroke="{BLUE}" stroke-width="3" stroke-linecap="round"/>')
        body.append(f'<circle cx="{left + plot_w * value:.1f}" cy="{y:.1f}" r="4.5" fill="#1b1f24"/>')
        body.append(_text(width - right + 8, y + 4, f"{value:.3f}"))
    return _svg(width, height, "rates with their 95% intervals", body)


def per_case_bars(name: str, unit: str, values: Sequence[tuple[str, float]]) -> str:
    """One bar per case, tallest first (latency in seconds, cost in USD).

    Args:
        name: What is measured (``latency``).
        unit: Its unit (``s``, ``USD``).
        values: ``(case id, value)`` pairs.
    """
    ordered = sorted(values, key=lambda p: -p[1])
    width, height, left, top, bottom = 640, 130, 8, 18, 8
    plot_w, plot_h = width - 2 * left, height - top - bottom
    peak = max((v for _, v in ordered), default=0.0) or 1.0
    bar_w = plot_w / max(1, len(ordered))
    total = sum(v for _, v in ordered)
    head = f"{name} per case ({unit}): max {peak:.4g}, total {total:.4g}, {len(ordered)} cases"
    body = [_text(left, 12, head, size=12, fill="#1b1f24")]
    for i, (case_id, v) in enumerate(ordered):
        h = max(1.0, plot_h * v / peak)
        body.append(f'<rect x="{left + i * bar_w:.2f}" y="{top + plot_h - h:.1f}" width="{max(1.0, bar_w - 1):.2f}" '
                    f'height="{h:.1f}" fill="{BLUE}"><title>{escape(f"{case_id}: {v:.4g} {unit}")}</title></rect>')
    return _svg(width, height, head, body)


def change_bars(name: str, changes: Sequence[tuple[str, float]]) -> str:
    """The per-case change B - A of a value, sorted; red below zero (worse if higher is better), green above.

    Args:
        name: The value (``passed`` as a per-case pass rate, ``f1``).
        changes: ``(case id, B - A)`` for the cases compared.
    """
    ordered = sorted(changes, key=lambda p: p[1])
    width, height, left, top = 640, 150, 8, 18
    plot_w, half = width - 2 * left, (height - top - 8) / 2
    mid = top + half
    peak = max((abs(d) for _, d in ordered), default=0.0) or 1.0
    bar_w = plot_w / max(1, len(ordered))
    worse, better = sum(d < 0 for _, d in ordered), sum(d > 0 for _, d in ordered)
    head = f"change of {name} per case (B - A): {worse} down, {better} up, {len(ordered) - worse - better} same"
    body = [_text(left, 12, head, size=12, fill="#1b1f24"),
            f'<line x1="{left}" y1="{mid:.1f}" x2="{left + plot_w}" y2="{mid:.1f}" stroke="{GREY}"/>']
    for i, (case_id, d) in enumerate(ordered):
        h = half * abs(d) / peak
        y = mid - h if d > 0 else mid
        colour = GREEN if d > 0 else RED
        body.append(f'<rect x="{left + i * bar_w:.2f}" y="{y:.1f}" width="{max(1.0, bar_w - 1):.2f}" height="{h:.1f}" '
                    f'fill="{colour}"><title>{escape(f"{case_id}: {d:+.3f}")}</title></rect>')
    return _svg(width, height, head, body)
