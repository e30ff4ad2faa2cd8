"""Small inline SVG charts (scatter with lines), written here so the report needs no network,
no plotting library and no script to show its plots."""

from __future__ import annotations

import math
from html import escape

W, H, PAD = 420, 260, 46


def _ticks(lo: float, hi: float) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / 4 or 1))
    for factor in (1, 2, 5, 10):
        if (hi - lo) / (step * factor) <= 5:
            step *= factor
            break
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 2) if start + i * step <= hi + step / 2]


def chart(title: str, xlabel: str, ylabel: str, series: dict[str, list[tuple[float, float, bool]]]) -> str:
    """`series`: name → [(x, y, marked)]; marked points (regressions) are drawn red."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return ""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.08 or 1.0
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1

    def sx(x: float) -> float:
        return PAD + (x - x0) / (x1 - x0) * (W - 2 * PAD)

    def sy(y: float) -> float:
        return H - PAD - (y - y0) / (y1 - y0) * (H - 2 * PAD)

    out = [f'<svg class="plot" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
           f'role="img"><title>{escape(title)}</title>',
           f'<rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" fill="#fafafa" stroke="#999"/>']
    for t in _ticks(y0, y1):
        out.append(f'<line x1="{PAD}" x2="{W - PAD}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#e3e3e3"/>'
                   f'<text x="{PAD - 4}" y="{sy(t) + 4:.1f}" text-anchor="end" font-size="10">{t:g}</text>')
    for t in _ticks(x0, x1):
        if x0 <= t <= x1:
            out.append(f'<text x="{sx(t):.1f}" y="{H - PAD + 14}" text-anchor="middle" font-size="10">{t:g}</text>')
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#17becf"]
    for i, (name, pts) in enumerate(series.items()):
        colour = colours[i % len(colours)]
        pts = sorted(pts)
        if len(pts) > 1:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y, _ in pts)
            out.append(f'<polyline class="series" points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for x, y, marked in pts:
            fill = "#d62728" if marked else colour
            out.append(f'<circle class="point{" regressed" if marked else ""}" cx="{sx(x):.1f}" cy="{sy(y):.1f}" '
                       f'r="{5 if marked else 3.5}" fill="{fill}"><title>{escape(name)}: {x:g}, {y:g}</title></circle>')
        out.append(f'<text x="{W - PAD + 4}" y="{PAD + 12 * (i + 1)}" font-size="10" fill="{colour}">'
                   f'{escape(name[:18])}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle" font-size="11">{escape(xlabel)}</text>'
               f'<text x="12" y="{H / 2}" text-anchor="middle" font-size="11" transform="rotate(-90 12 {H / 2})">'
               f'{escape(ylabel)}</text><text x="{W / 2}" y="16" text-anchor="middle" font-size="12" '
               f'font-weight="bold">{escape(title)}</text></svg>')
    return "".join(out)
