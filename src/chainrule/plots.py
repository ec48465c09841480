"""Charts for the book as inline SVG: line charts (loss curves) and bar charts (costs).

matplotlib is imported only when a chart is drawn, so ``chainrule`` itself does not
need it.  Charts use matplotlib's object interface (no pyplot, no global state), a
white background, and a different line style and marker for each series, so they read
in greyscale and in dark mode.  In a notebook a chart shows as inline ``<svg>`` with
its alt text, like the graph figures of :mod:`chainrule.draw`.
"""

import io
from pathlib import Path

from .svg import SVG_HEADER, accessible_svg, scrolling_figure

__all__ = ["Chart", "line_chart", "bar_chart"]

# Line style and marker for the 1st, 2nd, ... series: distinguishable without colour.
_STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v")]
_COLOURS = ["#1f4e99", "#c0392b", "#27864b", "#7d3c98", "#b9770e"]


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


def _check_alt(alt, where):
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError(f"{where}: alt must be a sentence describing the chart, got {alt!r}")


def line_chart(series, *, xlabel, ylabel, alt, logy=False, logx=False, size=(6.4, 3.4)):
    """One line per entry of ``series``, a dict ``{name: y}`` or ``{name: (x, y)}``.

    ``y`` alone is plotted against 0, 1, 2, ...  ``logy`` and ``logx`` put an axis on a
    log scale (base 10 for y, base 2 for x, whose ticks are then the x values themselves).
    ``alt`` describes the chart for readers who cannot see it.
    """
    _check_alt(alt, "line_chart")
    if not series:
        raise ValueError("line_chart: series is empty; pass {name: values}")
    figure, axes = _new_axes(size)
    for i, (name, values) in enumerate(series.items()):
        x, y = values if isinstance(values, tuple) and len(values) == 2 else (range(len(values)), values)
        if len(x) != len(y):
            raise ValueError(f"line_chart: series {name!r} has {len(x)} x values but {len(y)} y values")
        linestyle, marker = _STYLES[i % len(_STYLES)]
        every = max(1, len(y) // 12)  # a dozen markers per line at most
        axes.plot(list(x), list(y), linestyle=linestyle, marker=marker, markevery=every, markersize=5,
                  color=_COLOURS[i % len(_COLOURS)], linewidth=1.6, label=str(name))
    if logy:
        axes.set_yscale("log")
    if logx:
        axes.set_xscale("log", base=2)
        ticks = sorted({v for values in series.values() if isinstance(values, tuple) for v in values[0]})
        axes.set_xticks(ticks, [f"{v:g}" for v in ticks])
        axes.minorticks_off()
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.legend(frameon=False)
    return _finish(figure, alt)


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
    hatches = ["", "//", "..", "xx", "\\\\"]
    bars = axes.bar(range(len(names)), heights, color=[_COLOURS[i % len(_COLOURS)] for i in range(len(names))],
                    edgecolor="black", linewidth=0.8, hatch=None)
    for i, bar in enumerate(bars):
        bar.set_hatch(hatches[i % len(hatches)])
        bar.set_alpha(0.85)
    if annotate:
        axes.bar_label(bars, labels=[annotate.format(h) for h in heights], padding=2)
    axes.set_xticks(range(len(names)), names)
    axes.set_ylabel(ylabel)
    axes.margins(y=0.15)
    return _finish(figure, alt)
