"""Line charts and decision regions written as SVG text in plain Python.

:mod:`chainrule_course.charts.plots` draws its charts with matplotlib.  The web page's Python (the
"Live code" mode) has neither matplotlib nor numpy, so there :mod:`chainrule_course.charts.plots` falls
back to these two functions, which take the same data and draw the same kinds of marks:
a line style, marker and colour per series, hatching-free pale regions with black
boundaries, a marker per class.  They return the ``<svg>`` text; ``plots`` adds the alt
text.  Text is given in ``font-size`` attributes, so :func:`chainrule.figures.svg.smallest_width`
keeps it legible on a phone.
"""

import html
import math

__all__ = [
    "line_chart_svg",
    "regions_svg",
    "nice_ticks",
    "MAX_REGION_CELLS",
    "MARKERS",
    "Axes",
    "marker",
    "region_cells",
    "svg_document",
]

#: The plane is sampled on at most this many cells a side: each cell calls the classifier
#: in pure Python, which the page's Python runs a few times slower than CPython.
MAX_REGION_CELLS = 60

_DASHES = ["", "6,3", "1.5,3", "6,3,1.5,3", "8,2,2,2"]
#: The marker of each series or class, in turn: each reads without colour.
MARKERS = ["circle", "square", "triangle", "diamond", "down"]
_FONT = 11
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 12, 12, 40


def nice_ticks(low, high, count=5):
    """About ``count`` round numbers (1, 2 or 5 times a power of ten apart) from ``low`` to ``high``."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9)
    ticks = []
    k = first
    while k * step <= high + 1e-9 * step:
        ticks.append(round(k * step, 12))
        k += 1
    return ticks


def _log_ticks(low, high):
    """Powers of ten between ``low`` and ``high`` (> 0); round numbers when fewer than two fit."""
    ticks = [
        10.0**k for k in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1) if low <= 10.0**k <= high
    ]
    if len(ticks) >= 2:
        return ticks
    return [t for t in nice_ticks(low, high) if t > 0]


def _padded(low, high, log):
    """The range from ``low`` to ``high`` widened by 5 % on each side (in log space for a log axis)."""
    if log:
        low, high = math.log10(low), math.log10(high)
    margin = 0.05 * (high - low) or 0.5
    low, high = low - margin, high + margin
    return (10**low, 10**high) if log else (low, high)


def _number(value):
    return f"{value:g}".replace("-", "\u2212")


def _text(x, y, words, anchor="middle", extra=""):
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{_FONT}" text-anchor="{anchor}"{extra}>'
        f"{html.escape(str(words))}</text>"
    )


def marker(kind, x, y, colour, size=4.0, fill=None, edge=None):
    """A marker centred on (x, y): a circle, square, triangle, diamond or downward triangle."""
    style = f'fill="{fill or colour}" stroke="{edge or colour}" stroke-width="1"'
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{size:.1f}" {style}/>'
    if kind == "square":
        return f'<rect x="{x - size:.1f}" y="{y - size:.1f}" width="{2 * size:.1f}" height="{2 * size:.1f}" {style}/>'
    corners = {
        "triangle": [(0, -1.2), (1.1, 0.9), (-1.1, 0.9)],
        "diamond": [(0, -1.3), (1.1, 0), (0, 1.3), (-1.1, 0)],
        "down": [(0, 1.2), (1.1, -0.9), (-1.1, -0.9)],
    }[kind]
    points = " ".join(f"{x + dx * size:.1f},{y + dy * size:.1f}" for dx, dy in corners)
    return f'<polygon points="{points}" {style}/>'


class Axes:
    """The mapping from data to the SVG's pixels, and the axes' frame, ticks and labels.

    The plot area is the SVG's ``width`` by ``height`` less fixed margins for the tick
    labels and the axis labels; ``x`` and ``y`` map data to pixels in it.
    """

    def __init__(self, width, height, xrange, yrange, logx, logy):
        self.width, self.height, self.logx, self.logy = width, height, logx, logy
        self.xrange = tuple(self._scale(v, logx) for v in xrange)
        self.yrange = tuple(self._scale(v, logy) for v in yrange)

    @staticmethod
    def _scale(value, log):
        return math.log10(value) if log else value

    def limits(self):
        """The ranges of x and y, in data units."""
        return tuple(
            tuple(10**v if log else v for v in pair)
            for pair, log in ((self.xrange, self.logx), (self.yrange, self.logy))
        )

    def x(self, value):
        low, high = self.xrange
        span = (high - low) or 1.0
        return _LEFT + (self.width - _LEFT - _RIGHT) * (self._scale(value, self.logx) - low) / span

    def y(self, value):
        low, high = self.yrange
        span = (high - low) or 1.0
        return self.height - _BOTTOM - (self.height - _TOP - _BOTTOM) * (self._scale(value, self.logy) - low) / span

    def frame(self, xticks, yticks, xlabel, ylabel, grid=True):
        right, bottom = self.width - _RIGHT, self.height - _BOTTOM
        parts = []
        for t in xticks:
            x = self.x(t)
            if grid:
                parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP}" y2="{bottom}" stroke="#dddddd"/>')
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 4}" stroke="#000"/>')
            parts.append(_text(x, bottom + 16, _number(t)))
        for t in yticks:
            y = self.y(t)
            if grid:
                parts.append(f'<line x1="{_LEFT}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#dddddd"/>')
            parts.append(f'<line x1="{_LEFT - 4}" x2="{_LEFT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#000"/>')
            parts.append(_text(_LEFT - 7, y + 4, _number(t), anchor="end"))
        parts.append(
            f'<rect x="{_LEFT}" y="{_TOP}" width="{right - _LEFT}" height="{bottom - _TOP}" fill="none" stroke="#000"/>'
        )
        parts.append(_text((_LEFT + right) / 2, self.height - 6, xlabel))
        middle = (_TOP + bottom) / 2
        parts.append(_text(14, middle, ylabel, extra=f' transform="rotate(-90 14 {middle:.1f})"'))
        return parts


def _legend(entries, x, y):
    """Rows of (sample markup function, name) from (x, y), the samples 24 px wide."""
    rows = []
    for i, (sample, name) in enumerate(entries):
        row_y = y + 16 * i
        rows.append(sample(x, row_y))
        rows.append(_text(x + 30, row_y + 4, name, anchor="start"))
    return rows


def svg_document(width, height, parts):
    """An ``<svg>`` of ``width`` by ``height`` pixels on white, holding ``parts`` (SVG text)."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" font-family="sans-serif">'
        f'<rect width="{width}" height="{height}" fill="white"/>' + "".join(parts) + "</svg>"
    )


def line_chart_svg(lines, points, *, xlabel, ylabel, logx, logy, size, xticks, colours):
    """A line chart: ``lines`` and ``points`` are lists of (name, xs, ys), drawn in pixels of ``size`` inches."""
    width, height = round(size[0] * 72), round(size[1] * 72)
    xs = [x for _, x_values, _ in lines + points for x in x_values]
    ys = [y for _, _, y_values in lines + points for y in y_values]
    if logy and min(ys) <= 0:
        raise ValueError(f"line_chart: logy needs positive values, got {min(ys):g}")
    legend_rows = 16 * (len(lines) + len(points))
    height += legend_rows
    axes = Axes(
        width, height - legend_rows, _padded(min(xs), max(xs), logx), _padded(min(ys), max(ys), logy), logx, logy
    )
    if logx:
        x_ticks = sorted(set(xs))
    else:
        x_ticks = list(xticks) if xticks is not None else nice_ticks(min(xs), max(xs))
    (x_low, x_high), (y_low, y_high) = axes.limits()
    y_ticks = _log_ticks(y_low, y_high) if logy else nice_ticks(y_low, y_high)
    parts = axes.frame([t for t in x_ticks if x_low <= t <= x_high], y_ticks, xlabel, ylabel)
    legend = []
    for name, x_values, y_values in points:
        parts.extend(
            marker("circle", axes.x(x), axes.y(y), "#000", 3.5, "white")
            for x, y in zip(x_values, y_values, strict=True)
        )
        legend.append((lambda lx, ly: marker("circle", lx + 12, ly, "#000", 3.5, "white"), name))
    for i, (name, x_values, y_values) in enumerate(lines):
        colour, dash, shape = colours[i % len(colours)], _DASHES[i % len(_DASHES)], MARKERS[i % len(MARKERS)]
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        path = " ".join(f"{axes.x(x):.1f},{axes.y(y):.1f}" for x, y in zip(x_values, y_values, strict=True))
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.6"{dashes}/>')
        every = max(1, len(y_values) // 12)  # a dozen markers per line at most
        parts.extend(
            marker(shape, axes.x(x), axes.y(y), colour, 3.0)
            for x, y in list(zip(x_values, y_values, strict=True))[::every]
        )

        def sample(lx, ly, colour=colour, dashes=dashes, shape=shape):
            return (
                f'<line x1="{lx}" x2="{lx + 24}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="1.6"'
                f"{dashes}/>" + marker(shape, lx + 12, ly, colour, 3.0)
            )

        legend.append((sample, name))
    parts.extend(_legend(legend, _LEFT, height - legend_rows + 4))  # under the axes: it never hides a line
    return svg_document(width, height, parts)


def region_cells(classes, n, box, fills, attributes=""):
    """The ``n`` by ``n`` cells of decision regions, row by row from the top, each filled by its class.

    ``classes`` holds one class per cell in that order; ``box`` is ``(left, top, cell width,
    cell height)`` in pixels. ``attributes`` goes into every ``<rect>`` (an explorable marks
    its cells, which its steps fill again).
    """
    left, top, cell_w, cell_h = box
    return [
        f'<rect{attributes} x="{left + i * cell_w:.2f}" y="{top + j * cell_h:.2f}" width="{cell_w + 0.3:.2f}" '
        f'height="{cell_h + 0.3:.2f}" fill="{fills[classes[j * n + i] % len(fills)]}"/>'
        for j in range(n)
        for i in range(n)
    ]


def regions_svg(classify, points, labels, *, names, xlabel, ylabel, extent, resolution, size, fills, colours):
    """Decision regions: the plane in cells coloured by ``classify``'s class, boundaries, then the points."""
    n = min(resolution, MAX_REGION_CELLS)
    x0, x1, y0, y1 = extent
    centres = [
        (x0 + (x1 - x0) * (i + 0.5) / n, y1 - (y1 - y0) * (j + 0.5) / n) for j in range(n) for i in range(n)
    ]  # row by row, from the top
    classes = [int(c) for c in classify(centres)]
    if len(classes) != n * n:
        raise ValueError(f"decision_regions: classify returned {len(classes)} classes for {n * n} points")
    count = len(names)
    if min(classes + list(labels)) < 0 or max(classes + list(labels)) >= count:
        raise ValueError(f"decision_regions: classes must be 0 to {count - 1}, one per name in {list(names)}")
    legend_rows = 16 * count
    width, height = round(size[0] * 72), round(size[1] * 72) + legend_rows
    axes = Axes(width, height - legend_rows, (x0, x1), (y0, y1), False, False)
    cell_w, cell_h = (axes.x(x1) - axes.x(x0)) / n, (axes.y(y0) - axes.y(y1)) / n
    left, top = axes.x(x0), axes.y(y1)
    parts = region_cells(classes, n, (left, top, cell_w, cell_h), fills)
    edges = []
    for j in range(n):
        for i in range(n):
            here = classes[j * n + i]
            if i + 1 < n and classes[j * n + i + 1] != here:
                x = left + (i + 1) * cell_w
                edges.append(f"M{x:.2f},{top + j * cell_h:.2f}v{cell_h:.2f}")
            if j + 1 < n and classes[(j + 1) * n + i] != here:
                y = top + (j + 1) * cell_h
                edges.append(f"M{left + i * cell_w:.2f},{y:.2f}h{cell_w:.2f}")
    if edges:
        parts.append(f'<path d="{"".join(edges)}" fill="none" stroke="#000" stroke-width="1.4"/>')
    parts += axes.frame(nice_ticks(x0, x1), nice_ticks(y0, y1), xlabel, ylabel, grid=False)
    for (x, y), label in zip(points, labels, strict=True):
        parts.append(
            marker(MARKERS[label % len(MARKERS)], axes.x(x), axes.y(y), colours[label % len(colours)], 4.5, edge="#000")
        )
    legend = [
        (
            lambda lx, ly, c=c: marker(
                MARKERS[c % len(MARKERS)], lx + 12, ly, colours[c % len(colours)], 4.5, edge="#000"
            ),
            names[c],
        )
        for c in range(count)
    ]
    parts.extend(_legend(legend, _LEFT, height - legend_rows + 4))
    return svg_document(width, height, parts)
