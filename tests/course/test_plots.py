"""chainrule_course.charts.plots: charts are inline SVG with alt text, readable without colour, and refuse bad input."""

import math
import re
from itertools import pairwise

import numpy as np
import pytest

from chainrule.figures.svg import MIN_TEXT_PX
from chainrule_course.charts.plots import array_grids, bar_chart, decision_regions, line_chart, stacked_bar_chart


def test_line_chart_is_an_accessible_inline_svg_with_a_white_background():
    chart = line_chart({"a": [3, 2, 1]}, xlabel="step", ylabel="loss", alt="One falling line.")
    svg = chart.svg()
    assert svg.startswith("<svg") and "<?xml" not in svg
    assert 'role="img"' in svg and 'aria-label="One falling line."' in svg
    assert "<title>One falling line.</title>" in svg
    assert "max-width:100%" in svg
    assert re.search(r"fill: ?#ffffff", svg), "the background must be painted white"


def test_each_series_gets_its_own_line_style():
    chart = line_chart({"a": [1, 2, 3], "b": [3, 2, 1]}, xlabel="x", ylabel="y", alt="Two lines.")
    dashes = set(re.findall(r"stroke-dasharray: ([0-9.,]+)", chart.svg()))
    assert dashes, "the second series should be dashed, so the lines differ in greyscale"


def test_x_and_y_may_be_given_together():
    chart = line_chart({"a": ([0, 10, 20], [1.0, 0.5, 0.25])}, xlabel="x", ylabel="y", alt="A line.", logy=True)
    assert "<svg" in chart.svg()


def test_x_ticks_can_be_placed():
    chart = line_chart(
        {"a": ([-1.0, 0.0, 1.0], [1.0, 0.0, 1.0])}, xlabel="x", ylabel="y", alt="A V.", xticks=[-1, 0, 1]
    )
    labels = re.findall(r"<!-- (\N{MINUS SIGN}?[0-9.]+) -->", chart.svg())
    assert labels[:3] == ["\N{MINUS SIGN}1", "0", "1"]


def test_a_log2_x_axis_is_labelled_with_the_x_values():
    chart = line_chart(
        {"a": ([16, 64, 256, 1024], [2.0, 2.5, 3.5, 5.0])}, xlabel="batch", ylabel="y", alt="A line.", logx=True
    )
    labels = re.findall(r"<!-- ([0-9]+) -->", chart.svg())
    assert ["16", "64", "256", "1024"] == [label for label in labels if label in {"16", "64", "256", "1024"}]


def test_bar_chart_writes_the_values_above_the_bars(tmp_path):
    chart = bar_chart({"inference": 1.25, "training": 4.5}, ylabel="MB", alt="Two bars.")
    saved = chart.save(tmp_path / "bars.svg").read_text()
    assert saved.startswith("<?xml")
    assert "Two bars." in saved


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: line_chart({}, xlabel="x", ylabel="y", alt="x"), "line_chart: series is empty"),
        (lambda: line_chart({"a": [1]}, xlabel="x", ylabel="y", alt=""), "line_chart: alt must be a sentence"),
        (lambda: line_chart({"a": ([1, 2], [1])}, xlabel="x", ylabel="y", alt="x"), "series 'a' has 2 x values but 1"),
        (lambda: bar_chart({}, ylabel="y", alt="x"), "bar_chart: values is empty"),
        (lambda: bar_chart({"a": 1}, ylabel="y", alt="x").save("chart.png"), r"Chart.save: can only write .svg"),
        (
            lambda: line_chart({"a": [1]}, points={"d": ([1, 2], [1])}, xlabel="x", ylabel="y", alt="x"),
            "points 'd' have 2 x values but 1",
        ),
        (lambda: stacked_bar_chart({}, ylabel="y", alt="x"), "stacked_bar_chart: bars is empty"),
        (
            lambda: stacked_bar_chart({"a": {"p": 1, "q": 2}, "b": {"q": 2, "p": 1}}, ylabel="y", alt="x"),
            "bar 'b' has parts",
        ),
        (
            lambda: decision_regions(
                lambda g: g[:, 0] > 0, [[0, 0], [1, 1]], [0, 1], names=["a", "b"], xlabel="x", ylabel="y", alt=""
            ),
            "decision_regions: alt must be a sentence",
        ),
        (
            lambda: decision_regions(
                lambda g: g[:, 0] > 0, [0, 1], [0, 1], names=["a", "b"], xlabel="x", ylabel="y", alt="x"
            ),
            r"points must have shape \(n, 2\)",
        ),
        (
            lambda: decision_regions(
                lambda g: 2 + 0 * g[:, 0], [[0, 0], [1, 1]], [0, 1], names=["a", "b"], xlabel="x", ylabel="y", alt="x"
            ),
            "classes must be 0 to 1",
        ),
    ],
)
def test_bad_input_names_the_function(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_chart_text_never_shrinks_below_nine_css_pixels():
    """matplotlib draws text as paths; the chart's min-width keeps its 10 pt text at 9 px."""
    chart = line_chart({"loss": [3.0, 2.0, 1.0]}, alt="A falling loss.", xlabel="step", ylabel="loss")
    tag = chart.svg()[: chart.svg().index(">") + 1]
    min_width = float(re.search(r"min-width:(\d+)px", tag).group(1))
    view_box_width = float(re.search(r'viewBox="\S+ \S+ (\S+) \S+"', tag).group(1))
    assert MIN_TEXT_PX <= 10.0 * min_width / view_box_width < MIN_TEXT_PX + 0.5  # matplotlib's 10 pt default
    assert chart._repr_html_().startswith('<div class="chainrule-figure" style="overflow-x:auto"><svg ')


def test_points_are_drawn_as_markers_under_the_fitted_curve():
    x = [0.0, 0.5, 1.0]
    chart = line_chart(
        {"fit": (x, [0.0, 0.4, 1.0])},
        points={"data": (x, [0.1, 0.5, 0.9])},
        xlabel="x",
        ylabel="y",
        alt="Three points and a curve.",
    )
    svg = chart.svg()
    assert "<!-- data -->" in svg and "<!-- fit -->" in svg, "both appear in the legend"


def test_stacked_bars_name_every_part_and_write_each_total():
    bars = {"SGD": {"weights": 1.0, "activations": 3.0}, "Adam": {"weights": 1.0, "activations": 5.5}}
    svg = stacked_bar_chart(bars, ylabel="MB", alt="Two stacked bars.").svg()
    for text in ["weights", "activations", "SGD", "Adam", "4", "6.5"]:
        assert f"<!-- {text} -->" in svg, text
    hatches = set(re.findall(r'<pattern id="(h[0-9a-f]+)"', svg))
    assert hatches, "the second part is hatched, so the parts differ in greyscale"


def test_decision_regions_colour_the_plane_by_class_and_mark_the_points():
    points = np.array([[-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    labels = np.array([0, 1, 1])
    seen = []

    def classify(grid):
        seen.append(grid.shape)
        return (grid.sum(axis=1) > 0).astype(int)

    chart = decision_regions(
        classify,
        points,
        labels,
        names=["below", "above"],
        xlabel="x1",
        ylabel="x2",
        alt="Two regions split by a line.",
        resolution=20,
    )
    assert seen == [(400, 2)], "the plane is sampled once, on a resolution x resolution grid"
    svg = chart.svg()
    assert "<!-- below -->" in svg and "<!-- above -->" in svg
    assert 'aria-label="Two regions split by a line."' in svg
    assert re.search(r'<pattern id="h', svg), "regions are hatched as well as coloured"


# Without matplotlib and numpy (the page's Python), line charts and decision regions are
# drawn by chainrule_course.charts.svgchart in plain Python.


@pytest.fixture
def plain(monkeypatch):
    """Make chainrule_course.charts.plots behave as where matplotlib and numpy are missing."""
    import chainrule_course.charts.plots

    monkeypatch.setattr(chainrule_course.charts.plots, "_have", lambda *modules: False)


def polylines(svg):
    """Each polyline's points, as (x, y) pixel pairs."""
    return [
        [tuple(float(v) for v in pair.split(",")) for pair in points.split()]
        for points in re.findall(r'<polyline points="([^"]+)"', svg)
    ]


def test_plain_line_chart_draws_each_series_to_scale_with_its_own_dashes(plain):
    chart = line_chart(
        {"loss": ([0, 1, 2], [100.0, 10.0, 1.0]), "other": [1.0, 2.0, 3.0]},
        xlabel="step",
        ylabel="loss",
        alt="Two lines.",
        logy=True,
    )
    svg = chart.svg()
    assert 'aria-label="Two lines."' in svg and "<title>Two lines.</title>" in svg
    loss, other = polylines(svg)
    ys = [y for _, y in loss]
    assert ys[0] < ys[1] < ys[2], "a larger value is drawn higher (smaller pixel y)"
    assert ys[1] - ys[0] == pytest.approx(ys[2] - ys[1], abs=0.2), "each decade is the same height on a log axis"
    xs = [x for x, _ in other]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.2)
    assert len(set(re.findall(r'stroke-dasharray="([^"]+)"', svg))) == 1, "the second series is dashed"
    for words in ("step", "loss", "other", "1", "10", "100"):
        assert f">{words}</text>" in svg, words


def test_plain_line_chart_keeps_its_text_legible_and_refuses_bad_input(plain):
    chart = line_chart({"a": [3, 2, 1]}, xlabel="x", ylabel="y", alt="A line.", size=(6.4, 3.4))
    width = float(re.search(r"min-width:(\d+)px", chart.svg()).group(1))
    sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)"', chart.svg())]
    view_width = float(re.search(r'viewBox="0 0 ([\d.]+)', chart.svg()).group(1))
    assert min(sizes) * width / view_width >= MIN_TEXT_PX
    with pytest.raises(ValueError, match="line_chart: logy needs positive values, got -1"):
        line_chart({"a": [1.0, -1.0]}, xlabel="x", ylabel="y", alt="A line.", logy=True)
    with pytest.raises(ValueError, match="series 'a' has 2 x values but 3 y values"):
        line_chart({"a": ([0, 1], [1, 2, 3])}, xlabel="x", ylabel="y", alt="A line.")


def test_plain_decision_regions_colour_each_cell_by_the_classifier_and_draw_the_boundary(plain):
    seen = []

    def left_or_right(grid):
        seen.append(grid)
        return [int(x > 0) for x, _ in grid]

    chart = decision_regions(
        left_or_right,
        [(-1.0, 0.0), (1.0, 0.0)],
        [0, 1],
        names=["left", "right"],
        xlabel="x1",
        ylabel="x2",
        alt="Two halves.",
        extent=(-2, 2, -1, 1),
        resolution=500,
    )
    svg = chart.svg()
    from chainrule_course.charts.svgchart import MAX_REGION_CELLS

    assert isinstance(seen[0], list) and len(seen[0]) == MAX_REGION_CELLS**2, "the grid is capped, as plain pairs"
    cells = re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="[\d.]+" height="[\d.]+" fill="(#\w+)"/>', svg)
    fills = {fill for _, fill in cells}
    assert len(cells) == MAX_REGION_CELLS**2 and len(fills) == 2
    middle = sum(float(x) for x, _ in cells) / len(cells)
    left_fills = {fill for x, fill in cells if float(x) < middle - 5}
    right_fills = {fill for x, fill in cells if float(x) > middle + 5}
    assert len(left_fills) == len(right_fills) == 1 and left_fills != right_fills
    boundary = re.search(r'<path d="([^"]+)" fill="none" stroke="#000"', svg).group(1)
    assert boundary.count("v") == MAX_REGION_CELLS and "h" not in boundary, "one vertical line, cell by cell"
    assert ">left</text>" in svg and ">right</text>" in svg


def test_plain_decision_regions_refuse_classes_without_a_name(plain):
    with pytest.raises(ValueError, match=r"decision_regions: classes must be 0 to 1, one per name in \['a', 'b'\]"):
        decision_regions(
            lambda grid: [2] * len(grid), [(0.0, 0.0)], [0], names=["a", "b"], xlabel="x", ylabel="y", alt="Bad."
        )
    with pytest.raises(ValueError, match="decision_regions: 2 points but 1 labels"):
        decision_regions(
            lambda grid: [0] * len(grid), [(0.0, 0.0), (1.0, 1.0)], [0], names=["a"], xlabel="x", ylabel="y", alt="Bad."
        )


@pytest.mark.parametrize("low, high", [(0, 1), (-0.5, 1.5), (0.013, 0.21), (-37, 1200)])
def test_nice_ticks_are_round_numbers_that_span_the_range(low, high):
    from chainrule_course.charts.svgchart import nice_ticks

    ticks = nice_ticks(low, high)
    steps = {round(b - a, 9) for a, b in pairwise(ticks)}
    assert 3 <= len(ticks) <= 11 and len(steps) == 1
    step = steps.pop()
    assert f"{step / 10 ** math.floor(math.log10(step)):.6g}" in {"1", "2", "5"}
    assert low <= ticks[0] < low + step and high - step < ticks[-1] <= high


def test_array_grids_draw_a_cell_per_entry_and_mark_the_chosen_ones():
    """Each entry is a cell (a white or a pale square, outlined); the marked ones are pale and bold."""
    mask = np.eye(4, dtype=bool)
    mask[0, 3] = True
    chart = array_grids({"X": np.arange(16).reshape(4, 4), "G": np.ones((2, 3))}, marked={"X": mask}, alt="Grids.")
    svg = chart.svg()
    assert svg.count("fill: #c6d4ec") == mask.sum() == svg.count("stroke-width: 2.2")
    assert svg.count("fill: #ffffff") >= 16 - mask.sum() + 6  # the unmarked cells (and the background)
    assert 'aria-label="Grids."' in svg
    tag = svg[: svg.index(">") + 1]
    min_width = float(re.search(r"min-width:(\d+)px", tag).group(1))
    view_box_width = float(re.search(r'viewBox="\S+ \S+ (\S+) \S+"', tag).group(1))
    assert MIN_TEXT_PX <= 11.0 * min_width / view_box_width < MIN_TEXT_PX + 0.5  # its text is 11 pt
    assert min_width <= 330, "the column of a 390 px phone fits the grids unscrolled"


@pytest.mark.parametrize(
    "panels, marked, message",
    [
        ({}, None, "panels is empty"),
        ({"X": np.ones(3)}, None, "panel 'X' must be a 2-D array"),
        ({"X": np.ones((2, 2))}, {"Y": np.ones((2, 2))}, r"marked names \['Y'\]"),
        ({"X": np.ones((2, 2))}, {"X": np.ones((3, 2))}, r"the mark of 'X' has shape \(3, 2\)"),
    ],
)
def test_array_grids_refuse_what_they_cannot_draw(panels, marked, message):
    with pytest.raises(ValueError, match=f"array_grids: {message}"):
        array_grids(panels, marked=marked, alt="Grids.")
