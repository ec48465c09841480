"""The depth-first search's step figures (chainrule_course.explore.dfs_figures): which nodes are
unvisited, on the path or finished at each step, in colour and in greyscale, and the ids a page restyles.

The expected steps follow the output printed in source text 001 (a recursive depth-first
search over a dict of parents), not our own code.
"""

import re

import pytest
from dot_text import EDGE_LINE, NODE_LINE, attributes, dot_edges, dot_nodes, node_by_name, smallest_text_px
from examples import SEED_PARENTS, seed_as_values

from chainrule import Value
from chainrule.figures import GraphTooLargeError
from chainrule.figures.svg import MIN_TEXT_PX
from chainrule_course.explore.dfs_figures import draw_dfs_step


def fill_lightness(colour):
    """Relative luminance of a fill colour ("white" or "#rrggbb")."""
    if colour == "white":
        return 1.0
    red, green, blue = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def test_step_figure_colours_the_right_nodes():
    # after the seed's sixth printed line: visited [f, d, x, c, a], order [x]; a just visited
    source = draw_dfs_step("f", 5, SEED_PARENTS).source
    look = {name: node_by_name(source, name)[1] for name in "abcdefx"}
    on_path = {name for name in "abcdefx" if look[name]["fillcolor"] == look["f"]["fillcolor"]}
    assert on_path == {"f", "d", "c", "a"}
    assert look["x"]["fillcolor"] not in (look["f"]["fillcolor"], "white")  # finished
    assert look["b"]["fillcolor"] == "white" and "dashed" not in look["b"]["style"]  # not yet visited
    assert "dashed" in look["e"]["style"] and look["e"]["fontcolor"].startswith("grey")  # not reached
    current = [name for name in "abcdefx" if float(look[name]["penwidth"]) >= 3]
    assert current == ["a"]
    leaves = {name for name in "abcdefx" if look[name].get("peripheries") == "2"}
    assert leaves == {"a", "b", "x"}
    assert "topological order so far: [x]" in source
    assert "Step 6 of 12: visit a" in source  # numbered from 1, as the widget and the trace


def test_step_figure_marks_the_search_path_edges():
    source = draw_dfs_step("f", 5, SEED_PARENTS).source
    ids = {name: node_by_name(source, name)[0] for name in "abcdefx"}
    bold = {(tail, head) for tail, head, attrs in dot_edges(source) if "penwidth" in attrs}
    assert bold == {(ids["d"], ids["f"]), (ids["c"], ids["d"]), (ids["a"], ids["c"])}
    grey = {(tail, head) for tail, head, attrs in dot_edges(source) if attrs.get("style") == "dashed"}
    assert grey == {(ids["c"], ids["e"])}


def test_final_step_has_every_reached_node_finished():
    source = draw_dfs_step("f", 11, SEED_PARENTS).source
    look = {name: node_by_name(source, name)[1] for name in "abcdefx"}
    finished = {name for name in "abcdfx" if look[name]["fillcolor"] == look["x"]["fillcolor"]}
    assert finished == {"a", "b", "c", "d", "f", "x"}
    assert "dashed" in look["e"]["style"]
    assert "[x, a, b, c, d, f]" in source


def test_step_states_differ_in_greyscale():
    source = draw_dfs_step("f", 5, SEED_PARENTS).source
    look = {name: node_by_name(source, name)[1] for name in "bcex"}
    # unvisited b, on-path c, finished x, unreached e: lightness or line style tells them apart
    appearance = {
        name: (round(fill_lightness(attrs["fillcolor"]) * 4), attrs["style"], attrs["penwidth"])
        for name, attrs in look.items()
    }
    assert len(set(appearance.values())) == 4
    assert abs(fill_lightness(look["c"]["fillcolor"]) - fill_lightness(look["x"]["fillcolor"])) > 0.3


def test_step_figure_on_values():
    root = seed_as_values()
    figure = draw_dfs_step(root, 5)
    look = {name: node_by_name(figure.source, name)[1] for name in "abcdfx"}
    on_path = {name for name in look if look[name]["fillcolor"] == look["f"]["fillcolor"]}
    assert on_path == {"f", "d", "c", "a"}
    assert len(dot_nodes(figure.source)) == 6  # e is not part of f's graph
    assert "visited f, d, x, c, a" in figure.alt


def test_step_figure_draws_both_edges_of_a_square():
    a = Value(2.0, "a")
    source = draw_dfs_step(a * a, 1).source
    edges = dot_edges(source)
    assert len(edges) == 2
    assert sum("penwidth" in attrs for _, _, attrs in edges) == 1


def test_step_out_of_range():
    with pytest.raises(IndexError, match="0 to 11.*got 12"):
        draw_dfs_step("f", 12, SEED_PARENTS)


def test_step_text_never_shrinks_below_nine_css_pixels():
    text_px = smallest_text_px(draw_dfs_step("f", 3, SEED_PARENTS))
    assert MIN_TEXT_PX <= text_px < MIN_TEXT_PX + 0.5


def test_figures_of_two_steps_have_distinct_svg_ids():
    first, second = (draw_dfs_step("f", step, SEED_PARENTS).svg() for step in (1, 2))
    ids = [set(re.findall(r' id="([^"]+)"', svg)) for svg in (first, second)]
    assert ids[0] and not ids[0] & ids[1]


def test_a_large_graph_is_refused_by_its_count():
    root = Value(0.5, "x")
    for _ in range(99):
        root = root + 1.0  # 100 sums, each with a constant leaf: 199 values
    with pytest.raises(GraphTooLargeError, match="199 nodes"):
        draw_dfs_step(root, 0)


def test_dict_graph_counts_unreached_nodes_towards_the_limit():
    with pytest.raises(GraphTooLargeError, match="7 nodes, more than max_nodes=6"):
        draw_dfs_step("f", 0, SEED_PARENTS, max_nodes=6)


def test_dfs_step_with_element_ids_names_every_node_and_edge_and_its_state():
    source = draw_dfs_step("f", 3, SEED_PARENTS, caption=False, element_ids=True).source
    nodes = {
        attributes(rest)["id"]: attributes(rest)["class"]
        for _, _, rest in (NODE_LINE.match(line).groups() for line in source.splitlines() if NODE_LINE.match(line))
    }
    assert nodes == {
        "node-x": "cr-finished cr-current",
        "node-a": "cr-unvisited",
        "node-b": "cr-unvisited",
        "node-c": "cr-unvisited",
        "node-d": "cr-on-path",
        "node-f": "cr-on-path",
        "node-e": "cr-not-reached",
    }
    edges = {
        attributes(rest)["id"]: attributes(rest).get("class")
        for _, _, rest in (EDGE_LINE.match(line).groups() for line in source.splitlines() if EDGE_LINE.match(line))
    }
    assert edges == {
        "edge-a-c": None,
        "edge-b-c": None,
        "edge-x-d": None,
        "edge-c-d": None,
        "edge-d-f": "cr-path",
        "edge-c-e": None,
    }
    assert "label=<<TABLE" not in source  # caption=False: no caption under the graph
    assert "id=" not in draw_dfs_step("f", 3, SEED_PARENTS).source.replace("\tid=fig", "")
