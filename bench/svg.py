"""Hand-written SVG grouped bar charts for docs/img (no plotting library needed).

Input: panels of groups (x labels) × series (one bar each per group) with values that may be
negative or missing. Output: one standalone SVG document as a string.
"""

import math
from html import escape

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2"]


def nice_step(span):
    """A 1/2/5 × 10^k tick step giving about five ticks over `span`."""
    raw = span / 5 if span > 0 else 1
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def panel(x0, y0, width, height, title, groups, series, values, unit):
    """One chart; `values[series][group]` is a number or None. Returns SVG elements."""
    numbers = [v for row in values.values() for v in row.values() if v is not None]
    top = max(numbers + [0.0])
    bottom = min(numbers + [0.0])
    step = nice_step(top - bottom)
    top = step * (int(top / step) + 1)
    bottom = -step * (int(-bottom / step) + (1 if bottom < 0 else 0))
    left, plot_w, plot_h = x0 + 60, width - 80, height - 70
    plot_top = y0 + 30

    def y_of(value):
        return plot_top + plot_h * (top - value) / (top - bottom)

    out = [f'<text x="{x0 + width / 2}" y="{y0 + 18}" text-anchor="middle" '
           f'font-weight="bold">{escape(title)}</text>']
    tick = bottom
    while tick <= top + step / 2:
        y = y_of(tick)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{"#444" if abs(tick) < step / 2 else "#ddd"}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += step
    out.append(f'<text x="{x0 + 14}" y="{plot_top + plot_h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 {x0 + 14} {plot_top + plot_h / 2})">{escape(unit)}</text>')
    group_w = plot_w / max(len(groups), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    for g, group in enumerate(groups):
        gx = left + g * group_w + group_w * 0.1
        out.append(f'<text x="{left + g * group_w + group_w / 2:.1f}" '
                   f'y="{plot_top + plot_h + 18}" text-anchor="middle">{escape(str(group))}</text>')
        for s, name in enumerate(series):
            value = values.get(name, {}).get(group)
            x = gx + s * bar_w
            if value is None:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{y_of(0) - 3:.1f}" '
                           f'text-anchor="middle" font-size="9">n/a</text>')
                continue
            y1, y2 = sorted((y_of(0), y_of(value)))
            out.append(f'<rect x="{x:.1f}" y="{y1:.1f}" width="{bar_w * 0.92:.1f}" '
                       f'height="{max(y2 - y1, 0.5):.1f}" fill="{PALETTE[s % len(PALETTE)]}">'
                       f'<title>{escape(name)} {escape(str(group))}: {value:.1f} {escape(unit)}'
                       f'</title></rect>')
            out.append(f'<text x="{x + bar_w * 0.46:.1f}" y="{y1 - 3:.1f}" text-anchor="middle" '
                       f'font-size="8">{value:.0f}</text>')
    return out


def document(panels, series, width=900, panel_height=300, note=""):
    """Stacks panels (title, groups, values, unit) vertically with one shared legend."""
    legend_h = 30
    height = legend_h + panel_height * len(panels) + (20 if note else 0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    x = 60
    for s, name in enumerate(series):
        out.append(f'<rect x="{x}" y="10" width="12" height="12" '
                   f'fill="{PALETTE[s % len(PALETTE)]}"/>')
        out.append(f'<text x="{x + 16}" y="20">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    for i, (title, groups, values, unit) in enumerate(panels):
        out += panel(0, legend_h + i * panel_height, width, panel_height, title, groups, series,
                     values, unit)
    if note:
        out.append(f'<text x="{width / 2}" y="{height - 6}" text-anchor="middle" '
                   f'font-size="10" fill="#555">{escape(note)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
