"""Charts for the book as inline SVG: line charts (loss curves, fitted curves), bar charts
and stacked bar charts (costs, and the parts of a cost), decision regions (classifiers) and
small arrays drawn as grids of numbers (what a convolution or a pooling window touches).

matplotlib is imported only when a chart is drawn, so the course itself does not
need it.  Where it is missing, as in the web page's Python of the "Live code" mode,
line charts and decision regions are drawn by :mod:`chainrule_course.charts.svgchart` instead, in
plain Python (bar charts still need matplotlib).  Charts use matplotlib's object
interface (no pyplot, no global state), a
white background, and a different line style and marker for each series, so they read
in greyscale and in dark mode.  In a notebook a chart shows as inline ``<svg>`` with
its alt text, like the graph figures of :mod:`chainrule.figures.draw`.
"""

import io
from pathlib import Path

from chainrule.figures.svg import SVG_HEADER, accessible_svg, scrolling_figure

__all__ = ["Chart", "line_chart", "bar_chart", "stacked_bar_chart", "decision_regions", "array_grids"]

# Line style and marker for the 1st, 2nd, ... series: distinguishable without colour.
_STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v")]
_COLOURS = ["#1f4e99", "#c0392b", "#27864b", "#7d3c98", "#b9770e"]
# Hatching for areas (bars, regions), so that they too differ without colour.
_HATCHES = ["", "//", "..", "xx", "\\\\"]
# Pale fills for regions: the colours above, lightened, so the points on them stand out.
_PALE = ["#c6d4ec", "#f2c9c4", "#c4e3cf", "#dfcbe8", "#f3dcb4"]


class Chart:
    """A drawn chart: SVG markup plus one sentence of alt text."""

    def __init__(self, svg, alt):
        self._svg = svg
        self.alt = alt

    def svg(self):
        """The chart as an ``<svg>`` element for a web page."""
        return self._svg

    def _repr_html_(self):
        """Jupyter shows the chart as inline SVG, scrolling sideways if it must."""
        return scrolling_figure(self._svg)

    def save(self, path):
        """Write the chart to ``path`` as a standalone SVG file and return the path."""
        path = Path(path)
        if path.suffix.lower() != ".svg":
            raise ValueError(f"Chart.save: can only write .svg files, got {str(path)!r}")
        path.write_text(SVG_HEADER + self._svg + "\n", encoding="utf-8")
        return path

    def __repr__(self):
        return f"<Chart: {self.alt}>"


def _new_axes(size):
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, facecolor="white")
    axes = figure.subplots()
    axes.set_facecolor("white")
    axes.grid(True, color="#dddddd", linewidth=0.8)
    axes.set_axisbelow(True)
    return figure, axes


def _finish(figure, alt):
    buffer = io.StringIO()
    figure.tight_layout()
    figure.savefig(buffer, format="svg", facecolor="white", metadata={"Date": None})
    # matplotlib draws text as paths, so the SVG has no font-size to read: pass the smallest.
    smallest = min(text.get_fontsize() for text in figure.findobj(_is_text))
    return Chart(accessible_svg(buffer.getvalue(), alt, text_size=smallest), alt)


def _is_text(artist):
    from matplotlib.text import Text

    return isinstance(artist, Text) and artist.get_visible() and bool(artist.get_text())


def _have(*modules):
    """Whether every one of ``modules`` imports (matplotlib and numpy are absent in the page's Python)."""
    try:
        for module in modules:
            __import__(module)
    except ImportError:
        return False
    return True


def _check_alt(alt, where):
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError(f"{where}: alt must be a sentence describing the chart, got {alt!r}")


def line_chart(series, *, xlabel, ylabel, alt, logy=False, logx=False, size=(6.4, 3.4), points=None, xticks=None):
    """One line per entry of ``series``, a dict ``{name: y}`` or ``{name: (x, y)}``.

    ``y`` alone is plotted against 0, 1, 2, ...  ``logy`` and ``logx`` put an axis on a
    log scale (base 10 for y, base 2 for x, whose ticks are then the x values themselves).
    ``points``, a dict ``{name: (x, y)}``, adds data drawn as markers without a line
    (the data a curve was fitted to), under the lines.
    ``xticks`` places the x ticks (by default matplotlib's choice), e.g. fewer of them
    on a narrow chart.
    ``alt`` describes the chart for readers who cannot see it.
    """
    _check_alt(alt, "line_chart")
    if not series:
        raise ValueError("line_chart: series is empty; pass {name: values}")
    lines = [_xy(name, values, "series") for name, values in series.items()]
    marks = [_xy(name, values, "points") for name, values in (points or {}).items()]
    if not _have("matplotlib"):
        from .svgchart import line_chart_svg

        svg = line_chart_svg(
            lines, marks, xlabel=xlabel, ylabel=ylabel, logx=logx, logy=logy, size=size, xticks=xticks, colours=_COLOURS
        )
        return Chart(accessible_svg(svg, alt), alt)
    figure, axes = _new_axes(size)
    _plot_lines(axes, lines, marks)
    if logy:
        axes.set_yscale("log")
    if logx:
        axes.set_xscale("log", base=2)
        ticks = list(xticks) if xticks is not None else sorted({v for _, x, _ in lines for v in x})
        axes.set_xticks(ticks, [f"{v:g}" for v in ticks])
        axes.minorticks_off()
    elif xticks is not None:
        axes.set_xticks(list(xticks))
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.legend(frameon=False)
    return _finish(figure, alt)


def _xy(name, values, what):
    """``(name, x, y)`` of one line: ``values`` is y (against 0, 1, 2, ...) or a pair (x, y)."""
    x, y = values if isinstance(values, tuple) and len(values) == 2 else (range(len(values)), values)
    if len(x) != len(y):
        noun = "has" if what == "series" else "have"
        raise ValueError(f"line_chart: {what} {name!r} {noun} {len(x)} x values but {len(y)} y values")
    return str(name), list(x), [float(v) for v in y]


def _plot_lines(axes, lines, marks):
    """The marks (data without a line) under the lines, each line with its own style and colour."""
    for name, x, y in marks:
        axes.plot(
            x,
            y,
            linestyle="none",
            marker="o",
            markersize=6,
            markerfacecolor="white",
            markeredgecolor="black",
            markeredgewidth=1.1,
            color="black",
            label=name,
            zorder=1,
        )
    for i, (name, x, y) in enumerate(lines):
        linestyle, marker = _STYLES[i % len(_STYLES)]
        every = max(1, len(y) // 12)  # a dozen markers per line at most
        axes.plot(
            x,
            y,
            linestyle=linestyle,
            marker=marker,
            markevery=every,
            markersize=5,
            color=_COLOURS[i % len(_COLOURS)],
            linewidth=1.6,
            label=name,
        )


def bar_chart(values, *, ylabel, alt, size=(6.4, 3.2), annotate="{:.3g}"):
    """One bar per entry of ``values``, a dict ``{name: number}``, each labelled with its value.

    Bars are told apart by hatching as well as colour.  ``annotate`` formats the numbers
    written above the bars (None for none).
    """
    _check_alt(alt, "bar_chart")
    if not values:
        raise ValueError("bar_chart: values is empty; pass {name: number}")
    figure, axes = _new_axes(size)
    names, heights = list(values), [float(v) for v in values.values()]
    hatches = _HATCHES
    bars = axes.bar(
        range(len(names)),
        heights,
        color=[_COLOURS[i % len(_COLOURS)] for i in range(len(names))],
        edgecolor="black",
        linewidth=0.8,
        hatch=None,
    )
    for i, bar in enumerate(bars):
        bar.set_hatch(hatches[i % len(hatches)])
        bar.set_alpha(0.85)
    if annotate:
        axes.bar_label(bars, labels=[annotate.format(h) for h in heights], padding=2)
    axes.set_xticks(range(len(names)), names)
    axes.set_ylabel(ylabel)
    axes.margins(y=0.15)
    return _finish(figure, alt)


def stacked_bar_chart(bars, *, ylabel, alt, size=(6.4, 3.6), annotate="{:.3g}"):
    """One bar per entry of ``bars``, ``{bar: {part: number}}``, split into its parts.

    Every bar has the same parts, in the same order, stacked from the bottom; a part is
    told apart by hatching as well as colour, and named in the legend, which lists the
    parts top first, as they are stacked.  ``annotate`` formats the total written above
    each bar (None for none).
    """
    _check_alt(alt, "stacked_bar_chart")
    if not bars:
        raise ValueError("stacked_bar_chart: bars is empty; pass {bar: {part: number}}")
    names = list(bars)
    parts = list(bars[names[0]])
    for name in names:
        if list(bars[name]) != parts:
            raise ValueError(
                f"stacked_bar_chart: bar {name!r} has parts {list(bars[name])}, "
                f"but the first bar has {parts}; every bar needs the same parts in the same order"
            )
    figure, axes = _new_axes(size)
    bottoms = [0.0] * len(names)
    handles = []
    for i, part in enumerate(parts):
        heights = [float(bars[name][part]) for name in names]
        drawn = axes.bar(
            range(len(names)),
            heights,
            bottom=bottoms,
            width=0.6,
            label=str(part),
            color=_COLOURS[i % len(_COLOURS)],
            edgecolor="black",
            linewidth=0.8,
            hatch=_HATCHES[i % len(_HATCHES)],
            alpha=0.85,
        )
        handles.append(drawn)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    if annotate:
        for x, total in enumerate(bottoms):
            axes.annotate(
                annotate.format(total), (x, total), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom"
            )
    axes.set_xticks(range(len(names)), names)
    axes.set_ylabel(ylabel)
    axes.margins(y=0.15)
    # Beside the axes, top part first like the stacks, so that it never covers a bar.
    axes.legend(
        handles[::-1], [str(part) for part in parts][::-1], frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0)
    )
    return _finish(figure, alt)


def decision_regions(
    classify, points, labels, *, names, xlabel, ylabel, alt, extent=None, resolution=100, size=(5.2, 4.2)
):
    """The plane coloured by the class ``classify`` gives each point, with the data on top.

    ``classify`` maps an array of shape (m, 2), one point of the plane per row, to m class
    indices 0, 1, ...  ``points`` (shape (n, 2)) and ``labels`` (n class indices) are the
    data; ``names`` names the classes, in the legend.  Each class's region has a pale
    colour and its own hatching, each class's points their own marker, and the boundaries
    are drawn in black, so the chart reads in greyscale.  ``extent`` is
    ``(xmin, xmax, ymin, ymax)``, by default the data's range plus a margin; the plane is
    sampled on a ``resolution`` by ``resolution`` grid.

    Without numpy or matplotlib (the page's Python), ``classify`` gets a list of (x, y)
    pairs instead, and :func:`chainrule_course.charts.svgchart.regions_svg` draws the chart, on a grid
    of at most :data:`chainrule_course.charts.svgchart.MAX_REGION_CELLS` cells a side.
    """
    _check_alt(alt, "decision_regions")
    if not _have("numpy", "matplotlib"):
        return _plain_regions(
            classify,
            points,
            labels,
            names=names,
            xlabel=xlabel,
            ylabel=ylabel,
            alt=alt,
            extent=extent,
            resolution=resolution,
            size=size,
        )
    import numpy as np

    points = np.asarray(points, dtype=float)
    labels = np.asarray(labels)
    if points.ndim != 2 or points.shape[1] != 2 or len(points) == 0:
        raise ValueError(f"decision_regions: points must have shape (n, 2), got {points.shape}")
    if labels.shape != (len(points),):
        raise ValueError(f"decision_regions: {len(points)} points but labels of shape {labels.shape}")
    if extent is None:
        low, high = points.min(axis=0), points.max(axis=0)
        margin = 0.15 * (high - low) + 1e-9
        extent = (low[0] - margin[0], high[0] + margin[0], low[1] - margin[1], high[1] + margin[1])
    xs = np.linspace(extent[0], extent[1], resolution)
    ys = np.linspace(extent[2], extent[3], resolution)
    grid_x, grid_y = np.meshgrid(xs, ys)
    grid = np.column_stack([grid_x.ravel(), grid_y.ravel()])
    classes = np.asarray(classify(grid)).astype(int).reshape(grid_x.shape)
    count = len(names)
    if classes.min() < 0 or classes.max() >= count or labels.min() < 0 or labels.max() >= count:
        raise ValueError(f"decision_regions: classes must be 0 to {count - 1}, one per name in {list(names)}")
    figure, axes = _new_axes(size)
    _plot_regions(axes, grid_x, grid_y, classes, count)
    _plot_classes(axes, points, labels, names)
    axes.set_xlim(extent[0], extent[1])
    axes.set_ylim(extent[2], extent[3])
    from matplotlib.ticker import MaxNLocator

    for axis in (axes.xaxis, axes.yaxis):  # few ticks, so that their labels never touch on a phone
        axis.set_major_locator(MaxNLocator(5))
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=count, frameon=False)
    return _finish(figure, alt)


def _plot_regions(axes, grid_x, grid_y, classes, count):
    """Each class's region pale and hatched, the boundaries between them in black."""
    import numpy as np
    from matplotlib.colors import ListedColormap

    axes.grid(False)
    levels = np.arange(count + 1) - 0.5
    colours = ListedColormap([_PALE[i % len(_PALE)] for i in range(count)])
    regions = axes.contourf(
        grid_x,
        grid_y,
        classes,
        levels=levels,
        cmap=colours,
        hatches=[_HATCHES[i % len(_HATCHES)] for i in range(count)],
    )
    regions.set_edgecolor("#777777")  # the hatching's colour
    axes.contour(grid_x, grid_y, classes, levels=levels[1:-1], colors="black", linewidths=1.4)


def _plot_classes(axes, points, labels, names):
    """The data points, each class with its own marker and colour."""
    markers = ["o", "s", "^", "D", "v"]
    for c in range(len(names)):
        chosen = points[labels == c]
        axes.plot(
            chosen[:, 0],
            chosen[:, 1],
            linestyle="none",
            marker=markers[c % len(markers)],
            markersize=7,
            markerfacecolor=_COLOURS[c % len(_COLOURS)],
            markeredgecolor="black",
            markeredgewidth=0.9,
            label=str(names[c]),
        )


def _plain_regions(classify, points, labels, *, names, xlabel, ylabel, alt, extent, resolution, size):
    """decision_regions in plain Python: lists of points and labels, drawn by :mod:`.svgchart`."""
    from .svgchart import regions_svg

    points = [tuple(float(v) for v in point) for point in points]
    labels = [int(label) for label in labels]
    if not points or any(len(point) != 2 for point in points):
        raise ValueError(
            f"decision_regions: points must be n pairs (x, y), got {len(points)} points "
            f"of lengths {sorted({len(point) for point in points})}"
        )
    if len(labels) != len(points):
        raise ValueError(f"decision_regions: {len(points)} points but {len(labels)} labels")
    if extent is None:
        xs, ys = [x for x, _ in points], [y for _, y in points]
        mx, my = 0.15 * (max(xs) - min(xs)) + 1e-9, 0.15 * (max(ys) - min(ys)) + 1e-9
        extent = (min(xs) - mx, max(xs) + mx, min(ys) - my, max(ys) + my)
    svg = regions_svg(
        classify,
        points,
        labels,
        names=[str(name) for name in names],
        xlabel=xlabel,
        ylabel=ylabel,
        extent=extent,
        resolution=resolution,
        size=size,
        fills=_PALE,
        colours=_COLOURS,
    )
    return Chart(accessible_svg(svg, alt), alt)


def array_grids(panels, *, alt, marked=None, size=(5.4, 2.3), number="{:g}"):
    """Small 2-D arrays side by side, each a grid of cells with its numbers written in.

    ``panels`` is a dict ``{title: array}`` of 2-D arrays (a few rows and columns each);
    ``marked`` a dict ``{title: mask}`` of boolean arrays of the same shapes, whose True
    cells are filled and outlined in bold, so the marks read in greyscale too.
    ``number`` formats the entries. Row 0 is at the top, as arrays print.
    """
    _check_alt(alt, "array_grids")
    if not panels:
        raise ValueError("array_grids: panels is empty; pass {title: 2-D array}")
    import numpy as np
    from matplotlib.patches import Rectangle

    marked = marked or {}
    unknown = sorted(set(marked) - set(panels))
    if unknown:
        raise ValueError(f"array_grids: marked names {unknown}, which are not panels {list(panels)}")
    arrays = {title: np.asarray(array) for title, array in panels.items()}
    masks = {title: np.asarray(mask, dtype=bool) for title, mask in marked.items()}
    for title, array in arrays.items():
        if array.ndim != 2:
            raise ValueError(f"array_grids: panel {title!r} must be a 2-D array, got shape {array.shape}")
        if title in masks and masks[title].shape != array.shape:
            raise ValueError(
                f"array_grids: the mark of {title!r} has shape {masks[title].shape}, its array {array.shape}"
            )
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, facecolor="white")
    widths = [array.shape[1] for array in arrays.values()]
    for axes, (title, array) in zip(figure.subplots(1, len(arrays), width_ratios=widths), arrays.items(), strict=True):
        mask = masks.get(title, np.zeros(array.shape, dtype=bool))
        rows, columns = array.shape
        for (i, j), value in np.ndenumerate(array):
            axes.add_patch(
                Rectangle(
                    (j, rows - 1 - i),
                    1,
                    1,
                    facecolor=_PALE[0] if mask[i, j] else "white",
                    edgecolor="black",
                    linewidth=2.2 if mask[i, j] else 0.8,
                    zorder=2 if mask[i, j] else 1,
                )
            )
            axes.text(j + 0.5, rows - 0.5 - i, number.format(value), ha="center", va="center", fontsize=11, zorder=3)
        axes.set_xlim(-0.05, columns + 0.05)
        axes.set_ylim(-0.05, rows + 0.05)
        axes.set_aspect("equal")
        axes.set_xticks([]), axes.set_yticks([])  # no tick labels, drawn or counted as text
        axes.set_axis_off()
        axes.set_title(title, fontsize=11)
    return _finish(figure, alt)
