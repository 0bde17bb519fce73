"""A user's memories by category over time as a small server-rendered SVG (stacked bars, one
per month): a picture without any script. Pure: rows in, markup out, every text escaped."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from markupsafe import Markup

from eros.core.categories import CATEGORIES

#: one colour per category (colour-blind-safe palette, Okabe–Ito)
COLOURS = {"fact": "#0072B2", "preference": "#E69F00", "event": "#009E73",
           "emotion": "#CC79A7", "relation": "#56B4E9"}
WIDTH, HEIGHT, AXIS = 720, 150, 18


def svg(rows: Sequence[tuple[datetime, str, int]]) -> Markup:
    """``rows`` of (month, category, count), as from :func:`eros.ledger.db.ledger_sql.timeline`."""
    if not rows:
        return Markup("")
    months = sorted({m for m, _, _ in rows})
    per: dict[datetime, dict[str, int]] = {m: {} for m in months}
    for month, category, n in rows:
        per[month][category] = per[month].get(category, 0) + n
    peak = max(sum(v.values()) for v in per.values()) or 1
    slot = WIDTH / len(months)
    bar = max(2.0, slot * 0.8)
    plot = HEIGHT - AXIS
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" role="img" '
             f'viewBox="0 0 {WIDTH} {HEIGHT + 16}" width="{WIDTH}" height="{HEIGHT + 16}">',
             "<title>Current memories per month, by category</title>"]
    for i, month in enumerate(months):
        x, y = i * slot + (slot - bar) / 2, float(plot)
        for category in CATEGORIES:
            n = per[month].get(category, 0)
            if not n:
                continue
            h = plot * n / peak
            y -= h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                         f'fill="{COLOURS.get(category, "#999")}"><title>'
                         f'{escape(f"{month:%Y-%m} {category}: {n}")}</title></rect>')
        if len(months) <= 12 or i % max(1, len(months) // 12) == 0:
            parts.append(f'<text x="{i * slot + slot / 2:.1f}" y="{HEIGHT - 4}" font-size="10" '
                         f'text-anchor="middle" fill="#444">{escape(f"{month:%Y-%m}")}</text>')
    for j, category in enumerate(CATEGORIES):
        parts.append(f'<rect x="{j * 110}" y="{HEIGHT + 4}" width="10" height="10" '
                     f'fill="{COLOURS[category]}"/><text x="{j * 110 + 14}" y="{HEIGHT + 13}" '
                     f'font-size="11" fill="#222">{escape(category)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
