"""Tests for chainrule.figures.draw: the DOT text of each figure, the search trace, the SVG markup.

The expected search trace is copied from the output printed in source text 001 (a
recursive depth-first search over a dict of parents), not from our own code.
"""

import dataclasses
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from dot_text import dot_edges, dot_nodes, plain_text, smallest_text_px
from examples import SEED_PARENTS, SEED_PRINTED, seed_as_values

from chainrule import Value
from chainrule.figures import Figure, GraphTooLargeError, draw_gradient_flow, draw_graph
from chainrule.figures.svg import MIN_TEXT_PX
from chainrule.graph import DFSStep, dfs_trace, format_dfs_trace

# --- graphs used below ------------------------------------------------------------


def small_expression():
    """L = tanh(a*b + a*a) with a = 2, b = -3: 6 values, 4 operations."""
    a, b = Value(2.0, "a"), Value(-3.0, "b")
    c = a * b
    c.label = "c"
    d = c + a * a
    d.label = "d"
    loss = d.tanh()
    loss.label = "L"
    return a, b, loss


class FakeTensor:
    """Just enough of a tensor node for drawing: array data, no parents."""

    def __init__(self, data, label):
        self.data, self.grad, self.label = data, None, label
        self.op, self.parents, self.local_grads = "", (), ()


# --- draw_graph -------------------------------------------------------------------


def test_square_draws_two_edges_from_the_same_parent():
    a = Value(3.0, "a")
    source = draw_graph(a * a).source
    nodes, edges = dot_nodes(source), dot_edges(source)
    assert sorted(nodes) == ["n0", "n1", "n1_op"]
    assert [(tail, head) for tail, head, _ in edges] == [("n0", "n1_op"), ("n0", "n1_op"), ("n1_op", "n1")]
    assert plain_text(nodes["n1_op"][0]) == "\u00d7"  # the times sign
    assert plain_text(nodes["n1"][0]) == "data 9|grad 0"


def test_sum_of_sums_counts_nodes_and_edges():
    a = Value(1.5, "a")
    b = a + a
    b.label = "b"
    c = b + b
    c.label = "c"
    c.backward()
    nodes, edges = dot_nodes(draw_graph(c).source), dot_edges(draw_graph(c).source)
    assert len([n for n in nodes if n.endswith("_op")]) == 2
    assert len([n for n in nodes if not n.endswith("_op")]) == 3
    assert len(edges) == 6
    labels = {node_id: plain_text(label) for node_id, (label, _) in nodes.items()}
    assert labels["n0"] == "a|data 1.5|grad 4"
    assert labels["n1"] == "b|data 3|grad 2"
    assert labels["n2"] == "c|data 6|grad 1"
    assert labels["n1_op"] == labels["n2_op"] == "+"


def test_small_expression_layout_ids_and_parent_order():
    a, b, loss = small_expression()
    loss.backward()
    figure = draw_graph(loss, title="L = tanh(a*b + a*a)")
    nodes, edges = dot_nodes(figure.source), dot_edges(figure.source)
    values = [n for n in nodes if not n.endswith("_op")]
    assert len(values) == 6 and len(nodes) - len(values) == 4
    assert len(edges) == 2 + 2 + 2 + 1 + 4
    # ids follow the topological order: a and b first, L last
    assert plain_text(nodes["n0"][0]) == "a|data 2|grad 0.07065"
    assert plain_text(nodes["n5"][0]) == "L|data \u22120.964|grad 1"
    # the edges into the first product come from a, then from b (parent order)
    into_product = [tail for tail, head, _ in edges if head == "n2_op"]
    assert into_product == ["n0", "n1"]
    assert "L = tanh(a*b + a*a)" in figure.source
    assert "bgcolor=white" in figure.source


def test_show_grad_false_hides_gradients_and_source_is_reproducible():
    _, _, loss = small_expression()
    without = draw_graph(loss, show_grad=False).source
    assert "grad" not in without and "data \u22120.964" in without
    assert draw_graph(loss).source == draw_graph(loss).source


def test_array_data_shows_its_shape():
    weights = FakeTensor(np.zeros((256, 784)), "W1")
    label, _ = dot_nodes(draw_graph(weights).source)["n0"]
    assert plain_text(label) == "W1|data shape (256, 784)|grad none"


def test_compact_mode_draws_one_small_box_per_value_and_no_operation_nodes():
    a, b = Value(2.0, label="a"), Value(3.0, label="b")
    c = a * b
    L = c + a
    L.label = "L"
    full = draw_graph(L).dot.source
    compact = draw_graph(L, compact=True)
    source = compact.dot.source
    assert "_op" in full and "_op" not in source and "data" not in source
    assert len(re.findall(r"^\s*n\d+ \[", source, re.M)) == 4  # a, b, c, L
    assert len(re.findall(r"->", source)) == 4  # a->c, b->c, c->L, a->L
    assert 'n2 [label="\u00d7"' in source  # c has no label: its operation names it
    assert "Compact computational graph of L: 4 values (2 are leaves)" in compact.alt


def test_tensor_graphs_are_drawn_from_their_nodes_with_freed_arrays_by_shape():
    from chainrule import Tensor

    x = Tensor(np.ones((4, 3)), label="X")
    w = Tensor(np.ones((3, 2)), requires_grad=True, label="W")
    loss = ((x @ w).tanh() ** 2).sum()
    loss.label = "loss"
    source = draw_graph(loss, show_grad=False).dot.source
    for text in ("<B>X</B>", "<B>W</B>", "<B>loss</B>", "shape (4, 2)", "**2", "tanh", "@"):
        assert text in source, text


def test_labels_are_escaped():
    a = Value(1.0, 'x<&>"y"')
    figure = draw_graph(a * 2, title="<T> & co")
    ET.fromstring(figure.svg())  # would fail on an unescaped & or <
    assert "x&lt;&amp;&gt;&quot;y&quot;" in figure.source


# --- Figure and its SVG -----------------------------------------------------------


def opening_tag(svg):
    return svg[: svg.index(">") + 1]


def test_svg_is_inline_and_accessible():
    _, _, loss = small_expression()
    figure = draw_graph(loss)
    svg = figure.svg()
    assert svg.startswith("<svg ")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg
    tag = opening_tag(svg)
    assert 'role="img"' in tag
    assert 'style="max-width:100%;height:auto;min-width:' in tag
    root = ET.fromstring(svg)
    assert root.attrib["aria-label"] == figure.alt
    first_child = list(root)[0]
    assert first_child.tag.endswith("title") and first_child.text == figure.alt
    assert figure._repr_html_() == f'<div class="chainrule-figure" style="overflow-x:auto">{svg}</div>'
    assert figure.alt.endswith(".") and "6 values" in figure.alt


def test_figure_text_never_shrinks_below_nine_css_pixels():
    """At its min-width, the smallest text of a figure is MIN_TEXT_PX; any narrower, it would be less."""
    _, _, loss = small_expression()
    loss.backward()
    for figure in (draw_graph(loss), draw_gradient_flow(loss)):
        text_px = smallest_text_px(figure)
        assert MIN_TEXT_PX <= text_px < MIN_TEXT_PX + 0.5, (figure.alt, text_px)


def test_alt_text_with_markup_characters_is_escaped_in_svg():
    a = Value(1.0)
    b = a + 1
    b.label = 'say "<hi>" & go'
    b.backward()
    figure = draw_gradient_flow(b)
    root = ET.fromstring(figure.svg())
    assert root.attrib["aria-label"] == figure.alt
    assert 'say "<hi>" & go' in figure.alt


def test_save_writes_a_standalone_svg(tmp_path):
    figure = draw_graph(small_expression()[2])
    path = figure.save(tmp_path / "step.svg")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<?xml")
    assert ET.fromstring(text.split("\n", 1)[1]).attrib["role"] == "img"
    with pytest.raises(ValueError, match="Figure.save.*png"):
        figure.save(tmp_path / "step.png")


def test_figures_on_one_page_have_distinct_svg_ids():
    first = draw_graph(small_expression()[2]).svg()
    second = draw_graph(Value(2.0, "a") * Value(3.0, "b")).svg()
    ids_first = set(re.findall(r' id="([^"]+)"', first))
    ids_second = set(re.findall(r' id="([^"]+)"', second))
    assert ids_first and not ids_first & ids_second


def test_figure_wraps_any_digraph():
    figure = draw_graph(Value(1.0, "a"))
    assert isinstance(figure, Figure)
    assert figure.dot.source == figure.source


# --- the depth-first search trace -------------------------------------------------


def printed_lines(trace):
    """Turn a trace into the seed's printed form: ("v", visited) or ("t", order)."""
    return [("v", list(step.visited)) if step.event == "visit" else ("t", list(step.order)) for step in trace]


def test_trace_of_seed_dict_matches_seed_output():
    trace = dfs_trace("f", SEED_PARENTS)
    assert printed_lines(trace) == SEED_PRINTED
    assert all(isinstance(step, DFSStep) for step in trace)
    assert "e" not in trace[-1].visited
    # reversed, the final order is the list the seed's function returned
    assert list(reversed(trace[-1].order)) == ["f", "d", "c", "b", "a", "x"]


def test_trace_steps_are_frozen_and_hold_tuples():
    step = dfs_trace("f", SEED_PARENTS)[4]
    assert step == DFSStep("visit", "c", ("f", "d", "x", "c"), ("x",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.node = "z"


def test_trace_of_values_has_the_same_structure():
    trace = dfs_trace(seed_as_values())
    as_names = [(kind, [node.label for node in nodes]) for kind, nodes in printed_lines(trace)]
    assert as_names == SEED_PRINTED


def test_trace_counts_a_repeated_parent_once():
    a = Value(2.0, "a")
    trace = dfs_trace(a * a)
    assert [step.event for step in trace] == ["visit", "visit", "finish", "finish"]
    assert trace[1].node is a


def test_format_dfs_trace():
    lines = format_dfs_trace(dfs_trace("f", SEED_PARENTS)).splitlines()
    assert len(lines) == 12
    assert lines[0] == " 1  visit  f   visited=[f]"
    assert lines[3] == " 4  finish x   order=[x]"
    assert lines[-1] == "12  finish f   order=[x, a, b, c, d, f]"


def test_format_names_unlabelled_values_by_their_topological_position():
    a = Value(2.0, "a")
    lines = format_dfs_trace(dfs_trace(a * a)).splitlines()
    assert lines == [
        "1  visit  n1  visited=[n1]",
        "2  visit  a   visited=[n1, a]",
        "3  finish a   order=[a]",
        "4  finish n1  order=[a, n1]",
    ]


def test_dict_names_need_not_be_strings():
    lines = format_dfs_trace(dfs_trace(3, {3: [1, 2], 1: [], 2: []})).splitlines()
    assert lines[-1] == "6  finish 3   order=[1, 2, 3]"


def test_dict_errors_name_the_problem():
    with pytest.raises(ValueError, match="'y' is a parent of 'c' but has no entry"):
        dfs_trace("c", {"c": ["y"]})
    with pytest.raises(ValueError, match="root 'z' is not a key"):
        dfs_trace("z", SEED_PARENTS)
    with pytest.raises(TypeError, match="has no .parents"):
        dfs_trace("f")


# --- draw_gradient_flow -----------------------------------------------------------


def test_gradient_flow_labels_nodes_and_edges():
    a, b = Value(2.0, "a"), Value(-3.0, "b")
    product = a * b
    product.label = "p"
    product.backward()
    source = draw_gradient_flow(product).source
    nodes, edges = dot_nodes(source), dot_edges(source)
    assert [plain_text(nodes[n][0]) for n in ("n0", "n1", "n2")] == [
        "a|data 2|grad \u22123",
        "b|data \u22123|grad 2",
        "p (\u00d7)|data \u22126|grad 1",
    ]
    assert all("<B>grad" in nodes[n][0] and "#1f4e9c" in nodes[n][0] for n in nodes)
    assert [(tail, head, attrs["label"]) for tail, head, attrs in edges] == [
        ("n0", "n2", "<\u22123>"),  # d(a*b)/da = b
        ("n1", "n2", "<2>"),  # d(a*b)/db = a
    ]
    assert all(attrs["style"] == "dashed" and attrs["dir"] == "back" for _, _, attrs in edges)
    assert "global gradient \u2202p/\u2202node" in source and "local gradient" in source


def test_gradient_flow_legend_of_an_unlabelled_root():
    a = Value(1.0)
    out = a.exp()
    out.backward()
    figure = draw_gradient_flow(out)
    assert "\u2202root/\u2202node" in figure.source
    assert figure.alt.startswith("Gradient flow into the output over 2 values and 1 edge:")


def test_gradient_flow_square_has_two_labelled_edges():
    a = Value(3.0, "a")
    square = a * a
    square.backward()
    edges = dot_edges(draw_gradient_flow(square).source)
    assert [attrs["label"] for _, _, attrs in edges] == ["<3>", "<3>"]


def test_gradient_flow_before_backward_is_an_error():
    _, _, loss = small_expression()
    with pytest.raises(ValueError, match="draw_gradient_flow: L has grad 0.*backward"):
        draw_gradient_flow(loss)


def tensor_network(rng):
    """L = sum(tanh(X @ W) * 0.5), with X a constant and W a parameter, each value labelled."""
    from chainrule import Tensor

    x = Tensor(rng.standard_normal((4, 3)), label="X")
    w = Tensor(rng.standard_normal((3, 2)), requires_grad=True, label="W")
    h = x @ w
    a = h.tanh()
    loss = (a * 0.5).sum()
    h.label, a.label, loss.label = "H", "A", "L"
    return x, w, h, a, loss


def norm(array):
    return f"norm {float(np.sqrt((array * array).sum())):.4g}"


def test_gradient_flow_of_a_tensor_shows_the_gradients_torch_computes():
    import torch

    x, w, h, a, loss = tensor_network(np.random.default_rng(0))
    source = draw_gradient_flow(loss).source
    assert w.grad is None  # the figure ran its own backward pass and stored nothing
    tw = torch.tensor(w.data, requires_grad=True)
    th = torch.tensor(x.data) @ tw
    ta = th.tanh()
    tp = ta * 0.5
    for t in (th, ta, tp):
        t.retain_grad()
    tp.sum().backward()
    boxes = {
        plain_text(label).split("|")[0]: (node_id, plain_text(label))
        for node_id, (label, _) in dot_nodes(source).items()
    }
    for name, expected in [("W", tw.grad), ("H (@)", th.grad), ("A (tanh)", ta.grad), ("(\u00d7)", tp.grad)]:
        assert boxes[name][1].endswith(f"grad {norm(expected.numpy())}"), name
    assert boxes["X"][1] == "X|data shape (4, 3)|grad none"
    edges = {(tail, head): attrs for tail, head, attrs in dot_edges(source)}
    ids = {name: node_id for name, (node_id, _) in boxes.items()}
    # what each op sent back: dW = Xᵀ G_H, dH = G_A (1 - A²), dA = 0.5 G_P, and nothing to X
    assert edges[ids["W"], ids["H (@)"]]["label"] == f"<{norm(tw.grad.numpy())}>"
    assert edges[ids["H (@)"], ids["A (tanh)"]]["label"] == f"<{norm(th.grad.numpy())}>"
    assert edges[ids["A (tanh)"], ids["(\u00d7)"]]["label"] == f"<{norm(ta.grad.numpy())}>"
    assert edges[ids["X"], ids["H (@)"]]["label"] == "<none>"
    assert edges[ids["X"], ids["H (@)"]]["color"] == "grey45"
    assert "gradient sent back to the parent (norm)" in source
    assert "each edge is labelled with the gradient sent back along it" in draw_gradient_flow(loss).alt


def test_gradient_flow_of_a_tensor_needs_the_graph_that_backward_frees():
    x, w, h, a, loss = tensor_network(np.random.default_rng(1))
    loss.backward(retain_graph=True)
    first = w.grad.copy()
    assert "grad " + norm(first) in draw_gradient_flow(loss).source
    np.testing.assert_array_equal(w.grad, first)  # drawing added nothing to .grad
    loss.backward()  # frees the saved arrays
    with pytest.raises(RuntimeError, match=r"draw_gradient_flow: backward\(\) already freed .*retain_graph=True"):
        draw_gradient_flow(loss)
    with pytest.raises(RuntimeError, match="draw_gradient_flow: the output does not require grad"):
        draw_gradient_flow(x * 2.0)
    with pytest.raises(RuntimeError, match=r"draw_gradient_flow: the output has shape \(4, 2\).*gradient="):
        draw_gradient_flow(tensor_network(np.random.default_rng(2))[2])
    h = tensor_network(np.random.default_rng(2))[2]  # a (4, 2) output, seeded as in backward(gradient=...)
    assert f"grad {norm(np.eye(4, 2))}" in draw_gradient_flow(h, gradient=np.eye(4, 2)).source


# --- size limit -------------------------------------------------------------------


def chain(length):
    node = Value(0.5, "x")
    for _ in range(length - 1):
        node = node + 1.0
    return node


def test_large_graph_error_names_count_limit_and_remedy():
    root = chain(100)  # 100 sums, each with a constant leaf: 199 values
    root.backward()
    with pytest.raises(GraphTooLargeError) as error:
        draw_graph(root)
    message = str(error.value)
    assert isinstance(error.value, ValueError)
    assert "draw_graph" in message and "199 nodes" in message and "max_nodes=150" in message
    assert "sub-expression" in message and "max_nodes=199" in message
    with pytest.raises(GraphTooLargeError, match="199 nodes"):
        draw_gradient_flow(root)
    assert len(dot_nodes(draw_graph(root, max_nodes=199).source)) == 199 + 99


def test_a_missing_dot_program_says_how_to_install_it(monkeypatch, tmp_path):
    from chainrule.figures import GraphvizMissingError

    figure = draw_graph(Value(2.0) * Value(3.0))
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no `dot`
    with pytest.raises(GraphvizMissingError, match=r"needs Graphviz's `dot` program.*sudo apt-get install graphviz"):
        figure.svg()
