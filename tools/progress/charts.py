"""Bar charts as inline SVG: a bar per row, its share drawn solid and the rest hatched, its number written.

Each row is a label on a line of its own, then the bar and its number: the label has the
chart's whole width, so a chapter's title fits on a phone. The solid part and the hatched
rest are told apart by their pattern as well as by the legend, and every number is written
beside its bar: nothing is said by colour alone. The colours come from the page's style
sheet (classes ``solid``, ``hatch``, ``track``, ``grid``), so that the chart follows the
page's light or dark scheme; the attributes are the light scheme's, for a viewer without
it. :func:`chainrule.figures.svg.accessible_svg` makes the SVG an image with its alt text,
never drawn so small that its smallest text falls under 9 px; the page puts the same
numbers in a table below each chart.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from chainrule.figures.svg import accessible_svg
from chainrule_course.charts.svgchart import nice_ticks

#: The chart's width in its own units, and how wide it is drawn when the page has room.
WIDTH, DRAWN_WIDTH = 440, 560
FONT, SMALL = 13, 12
#: The bar's track, from the left edge; its number is written after it.
TRACK = 300
LABEL_HEIGHT, BAR_HEIGHT, GAP = 16, 13, 9
ROW = LABEL_HEIGHT + BAR_HEIGHT + GAP
#: The longest label drawn whole, in characters: about the chart's width at FONT.
LABEL_CHARS = 60
INK, BAR, GRID = "#1a1a1a", "#1f4e9c", "#c8c8c8"


@dataclass
class Bar:
    label: str
    fraction: float | None  # the solid share of the track, 0 to 1; None when there is nothing to draw
    value: str  # the number written after the bar


def text(x: float, y: float, words: str, size: int = FONT, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{INK}"{extra}>'
        f"{html.escape(words)}</text>"
    )


def cut(words: str, limit: int = LABEL_CHARS) -> str:
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "\u2026"


def hatch_pattern(ident: str) -> str:
    return (
        f'<defs><pattern id="{ident}-hatch" patternUnits="userSpaceOnUse" width="5" height="5" '
        f'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="5" class="hatch" stroke="{BAR}" '
        'stroke-width="1.6"/></pattern></defs>'
    )


def bar(ident: str, y: float, fraction: float) -> str:
    """The track at ``y``: ``fraction`` of it solid, the rest hatched, the whole outlined."""
    solid = TRACK * min(max(fraction, 0.0), 1.0)
    return (
        f'<rect class="solid" x="0" y="{y:.1f}" width="{solid:.1f}" height="{BAR_HEIGHT}" fill="{BAR}"/>'
        f'<rect x="{solid:.1f}" y="{y:.1f}" width="{TRACK - solid:.1f}" height="{BAR_HEIGHT}" '
        f'fill="url(#{ident}-hatch)"/>'
        f'<rect class="track" x="0.5" y="{y + 0.5:.1f}" width="{TRACK - 1}" height="{BAR_HEIGHT - 1}" '
        f'fill="none" stroke="{BAR}"/>'
    )


def legend(ident: str, y: float, names: tuple[str, str]) -> list[str]:
    """Two samples, solid and hatched, with their names, on one line at ``y``."""
    solid, rest = names
    x = 24 + 7.2 * len(solid) + 18
    return [
        f'<rect class="solid" x="0" y="{y - 10:.1f}" width="18" height="11" fill="{BAR}"/>',
        text(24, y, solid),
        f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="18" height="11" fill="url(#{ident}-hatch)"/>',
        f'<rect class="track" x="{x + 0.5:.1f}" y="{y - 9.5:.1f}" width="17" height="10" fill="none" stroke="{BAR}"/>',
        text(x + 24, y, rest),
    ]


def bar_chart(
    bars: list[Bar], *, ident: str, alt: str, ticks: list[tuple[float, str]], names: tuple[str, str], unit: str
) -> str:
    """An accessible SVG of ``bars``, a row each; ``ticks`` are (fraction of the track, label) under them, ``unit``
    after them, ``names`` the legend's words for the solid part and the hatched rest. ``ident`` makes the pattern's
    id unique in the page. The grid runs behind the bars, not through their labels."""
    parts = [hatch_pattern(ident)]
    bottom = ROW * len(bars)
    for index in range(len(bars)):
        top = ROW * index + LABEL_HEIGHT - 2
        parts += [
            f'<line class="grid" x1="{TRACK * fraction:.1f}" x2="{TRACK * fraction:.1f}" y1="{top}" '
            f'y2="{top + BAR_HEIGHT + (GAP if index == len(bars) - 1 else 4)}" stroke="{GRID}"/>'
            for fraction, _ in ticks
        ]
    for index, row in enumerate(bars):
        top = ROW * index
        parts.append(text(0, top + LABEL_HEIGHT - 3, cut(row.label)))
        if row.fraction is not None:
            parts.append(bar(ident, top + LABEL_HEIGHT, row.fraction))
        parts.append(text(TRACK + 8, top + LABEL_HEIGHT + BAR_HEIGHT - 2, row.value))
    for fraction, label in ticks:
        anchor = "start" if fraction == 0 else "end" if fraction == 1 else "middle"
        parts.append(text(TRACK * fraction, bottom + 12, label, SMALL, anchor))
    parts.append(text(TRACK + 8, bottom + 12, unit, SMALL))
    parts += legend(ident, bottom + 38, names)
    height = bottom + 46
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{DRAWN_WIDTH}" '
        f'height="{round(height * DRAWN_WIDTH / WIDTH)}" font-family="system-ui, sans-serif" class="chart">'
        + "".join(parts)
        + "</svg>"
    )
    return accessible_svg(svg, alt)


def percent_ticks() -> list[tuple[float, str]]:
    """0 to 100 (per cent) in round steps, as fractions of the track; the chart's unit says "%"."""
    return [(value / 100, f"{value:g}") for value in nice_ticks(0, 100, 5)]


def count_ticks(most: int) -> list[tuple[float, str]]:
    """0 to ``most`` students in round steps (whole numbers only), as fractions of the track."""
    if most <= 0:
        return [(0.0, "0")]
    return [(value / most, f"{value:g}") for value in nice_ticks(0, most, 5) if value == int(value)]
