"""Tests for chainrule_course.explore: the recorded search is the engine's, and its widget is self-contained.

* The steps of ``explore.toposort`` are the events of ``depth_first_events``, in order,
  and their lists grow exactly as seed 001's printed trace (``SEED_PRINTED``, copied
  from the seed's output in tests/engine/test_draw.py, not from our code).
* The widget's HTML holds one SVG whose nodes and edges carry their ids, the steps as
  JSON, the script and the styles once each, the named controls, and is at most 300 KB.
* Without its script the widget is the final state: the SVG's classes, its alt text, the
  lists and the status say so.
* The script and styles ship in the course's wheel.

tests/browser/test_explorables_browser.py steps the widget in Chromium on the built page.
"""

from __future__ import annotations

import json
import re
import zipfile

import pytest
from bs4 import BeautifulSoup
from examples import SEED_PARENTS, SEED_PRINTED, seed_as_values, worked_example

from chainrule import Value
from chainrule.figures import GraphTooLargeError
from chainrule.figures.figure import format_number
from chainrule.graph import depth_first_events, topological_order
from chainrule_course import explore
from chainrule_course.explore import slips

MAX_WIDGET_BYTES = 300 * 1024


@pytest.fixture(scope="module")
def seed():
    return explore.toposort("f", parents=SEED_PARENTS)


@pytest.fixture(scope="module")
def seed_html(seed):
    return seed.html()


def widget_soup(markup):
    return BeautifulSoup(markup, "html.parser")


def json_data(markup):
    [data] = widget_soup(markup).select('script[type="application/json"][data-role="steps"]')
    return json.loads(data.string)


def element_ids(markup):
    """The ids of the SVG's elements, without the widget's prefix, which every one of them has."""
    prefix = json_data(markup)["prefix"]
    ids = [
        tag["id"]
        for tag in widget_soup(markup).select("svg [id]")
        if tag["id"].startswith(("node-", "edge-", "text-", "part-", prefix))
    ]
    assert all(found.startswith(prefix) for found in ids), ids
    return {found[len(prefix) :] for found in ids}


# --- the recorded steps are the engine's ------------------------------------------


def test_steps_are_the_events_of_depth_first_events(seed):
    events = list(depth_first_events("f", SEED_PARENTS.__getitem__))
    assert [(step["event"], step["node"]) for step in seed.steps] == events


def test_steps_of_a_value_graph_are_its_events():
    root = seed_as_values()
    events = [(event, node.label) for event, node in depth_first_events(root)]
    widget = explore.toposort(root)
    assert [(step["event"], step["node"]) for step in widget.steps] == events
    assert widget.steps[-1]["order"] == [node.label for node in topological_order(root)]


def test_the_last_order_is_the_topological_order(seed):
    assert seed.steps[-1]["order"] == topological_order("f", SEED_PARENTS.__getitem__)


def test_the_lists_grow_as_the_seed_printed_them(seed):
    printed = [("v", step["visited"]) if step["event"] == "visit" else ("t", step["order"]) for step in seed.steps]
    assert printed == SEED_PRINTED
    assert seed.steps[-1]["visited"] == ["f", "d", "x", "c", "a", "b"]
    assert seed.steps[-1]["order"] == ["x", "a", "b", "c", "d", "f"]


def test_each_step_says_what_it_does(seed):
    sentences = [step["sentence"] for step in seed.steps]
    assert sentences[0] == "Visit f: the root, where the search starts. Visited: f."
    assert sentences[2] == "Visit x: d's first parent. Visited: f, d, x."
    assert sentences[3].startswith("Finish x: it has no parents, so it joins the order: x.")
    assert sentences[3].endswith("The search backs up to d.")
    assert sentences[4].startswith("Visit c: d's second parent.")
    assert sentences[9].startswith("Finish c: its parents a and b are finished, so it joins the order: x, a, b, c.")
    assert sentences[-1].endswith("The search is complete; e is not reached from f.")


def test_a_parent_reached_by_another_path_is_named_when_skipped():
    # c's second parent, a, was reached from m: the search skips it and goes on to b.
    parents = {"a": [], "b": [], "m": ["a"], "c": ["m", "a", "b"]}
    sentences = [step["sentence"] for step in explore.toposort("c", parents).steps]
    assert "Visit b: c's third parent (a was visited already). Visited: c, m, a, b." in sentences
    assert sentences[-1] == (
        "Finish c: its parents m, a and b are finished, so it joins the order: a, m, b, c. The search is complete."
    )


def test_a_value_used_twice_gives_unique_ids():
    a = Value(3.0, label="a")
    b = a * a
    b.label = "b"
    markup = explore.toposort(b).html()
    ids = element_ids(markup)
    assert {"node-a", "node-b", "edge-a-b", "edge-a-b-2"} <= ids


def test_a_large_graph_is_refused_with_the_limit_to_raise():
    node = Value(0.5)
    for _ in range(60):
        node = node.tanh()
    with pytest.raises(GraphTooLargeError, match="max_nodes=61"):
        explore.toposort(node)


# --- the widget -------------------------------------------------------------------


def test_the_svg_has_an_id_for_every_node_and_edge(seed_html):
    soup = widget_soup(seed_html)
    [svg] = soup.select("svg")
    ids = element_ids(seed_html)
    nodes = {f"node-{name}" for name in SEED_PARENTS}
    edges = {f"edge-{parent}-{child}" for child, parents in SEED_PARENTS.items() for parent in parents}
    assert nodes <= ids and edges <= ids, f"missing: {sorted((nodes | edges) - ids)}"
    assert svg["role"] == "img" and svg["aria-label"] and "max-width:100%" in svg["style"]


def test_the_json_holds_every_step_and_its_picture(seed, seed_html):
    data = json_data(seed_html)
    assert data["kind"] == "toposort" and data["lists"] == ["visited", "order"]
    assert [{key: step[key] for key in seed.steps[0]} for step in data["steps"]] == seed.steps
    svg_ids = element_ids(seed_html)
    for step in data["steps"]:
        assert set(step["nodes"]) <= svg_ids and set(step["edges"]) <= svg_ids
        assert step["current"] == f"node-{step['node']}"
    assert data["steps"][2]["edges"] == ["edge-d-f", "edge-x-d"]
    assert data["steps"][2]["nodes"]["node-x"] == "cr-on-path"
    assert data["steps"][3]["nodes"]["node-x"] == "cr-finished"


def test_the_script_and_styles_are_inlined_once(seed_html):
    script = explore.asset(explore.SCRIPT_FILE)
    style = explore.asset(explore.STYLE_FILE)
    assert seed_html.count(script) == 1 and seed_html.count(style) == 1
    soup = widget_soup(seed_html)
    scripts = soup.find_all("script")
    assert [tag.get("type") for tag in scripts] == ["application/json", None]
    assert "window.chainruleExplorable" in script and "if (!window.chainruleExplorable)" in script
    assert not soup.find_all(src=True) and not soup.find_all("link")
    without_namespaces = re.sub(r'xmlns(:\w+)?="[^"]*"', "", seed_html)  # names, not addresses
    assert not re.search(r"https?://|//[\w.-]+/", without_namespaces), "the widget refers to the network"


def test_the_widget_is_small(seed_html):
    size = len(seed_html.encode("utf-8"))
    assert size <= MAX_WIDGET_BYTES, f"the widget is {size / 1024:.0f} KB"


def test_controls_have_the_names_the_reader_and_the_checks_use(seed_html):
    soup = widget_soup(seed_html)
    [root] = soup.select('[data-explorable="toposort"]')
    assert root["tabindex"] == "0"
    buttons = [button.get_text() for button in root.select("button")]
    assert buttons == ["Reset", "Previous step", "Play", "Next step"]
    [slider] = root.select('input[type="range"]')
    assert slider.find_parent("label").get_text(strip=True).startswith("Step")
    assert slider["min"] == "0" and slider["max"] == "11"
    [status] = root.select('[aria-live="polite"]')
    assert status.get_text().startswith("Step 12 of 12. Finish f:")


def test_without_script_the_widget_shows_the_final_state(seed, seed_html):
    soup = widget_soup(seed_html)
    svg = soup.select_one("svg")
    prefix = json_data(seed_html)["prefix"]
    classes = {g["id"][len(prefix) :]: g["class"] for g in svg.select("g.node")}
    for name in ["x", "a", "b", "c", "d", "f"]:
        assert "cr-finished" in classes[f"node-{name}"]
    assert "cr-not-reached" in classes["node-e"] and "cr-current" in classes["node-f"]
    assert svg["aria-label"].startswith("Depth-first search from f, step 12 of 12 (finish f)")
    assert "finished: x, a, b, c, d, f" in svg["aria-label"] and svg.title.string == svg["aria-label"]
    lists = {dd["data-list"]: dd.get_text() for dd in soup.select("[data-list]")}
    assert lists == {"visited": "f, d, x, c, a, b", "order": "x, a, b, c, d, f"}
    assert soup.select_one('[data-role="controls"]').has_attr("hidden")
    # The colours of the final state are drawn by dot too, for pages without the styles.
    assert 'fill="#2f5f98"' in str(svg.select_one(f"g#{prefix}node-x"))


def test_labels_cannot_break_out_of_the_json():
    a = Value(1.0, label="</script><b>")
    b = a.tanh()
    b.label = "b&c"
    markup = explore.toposort(b).html()
    assert markup.count("</script>") == 2
    assert json_data(markup)["steps"][1]["node"] == "</script><b>"


def test_several_widgets_on_a_page_share_one_definition():
    script = explore.asset(explore.SCRIPT_FILE)
    # The definitions sit inside the guard; what follows it only sets up widgets.
    guard = script.index("if (!window.chainruleExplorable)")
    assert script.index("var setup = function") > guard
    assert script.rindex("setupAll(document)") > script.index("window.chainruleExplorable = {")


def test_the_wheel_ships_the_script_and_styles(tmp_path):
    from tools.book import package

    _, course = package.build_wheels(tmp_path)
    with zipfile.ZipFile(course) as archive:
        names = set(archive.namelist())
    assert {
        "chainrule_course/explore/widget.py",
        "chainrule_course/explore/explorable.js",
        "chainrule_course/explore/explorable.css",
    } <= names


# --- forward and backward: the values and gradients of a Value graph -------------


def fan_out():
    """y = x*x + x: x reaches y along three edges."""
    x = Value(3.0, label="x")
    q = x * x
    q.label = "q"
    y = q + x
    y.label = "y"
    return y


def test_forward_steps_are_the_values_the_engine_computed():
    L = worked_example()
    recorded = explore.forward(L)
    order = topological_order(L)
    assert [step["node"] for step in recorded.steps] == [node.label for node in order]
    assert [step["value"] for step in recorded.steps] == [node.data for node in order]
    assert [step["inputs"] for step in recorded.steps] == [[p.label for p in node.parents] for node in order]
    assert [step["op"] for step in recorded.steps] == [node.op for node in order]
    assert recorded.steps[2]["formula"] == "p = a \u00d7 b = 2 \u00d7 (\u22120.5) = \u22121"
    assert recorded.steps[-1]["formula"] == "L = tanh(n) = tanh(\u22120.5) = \u22120.4621"
    assert recorded.steps[-1]["sentence"].endswith("The forward pass is complete.")


def test_backward_steps_follow_value_backward_edge_by_edge():
    L = worked_example()
    recorded = explore.backward(L)
    order = topological_order(L)
    edges = [(node.label, parent.label) for node in reversed(order) for parent in node.parents]
    steps = recorded.steps
    assert steps[0]["event"] == "seed" and steps[0]["gradients"]["L"] == 1.0
    assert [(step["child"], step["parent"]) for step in steps[1:]] == edges
    for step in steps[1:]:
        assert step["product"] == step["child_grad"] * step["local"]
        assert step["after"] == step["before"] + step["product"]
        assert step["gradients"][step["parent"]] == step["after"]
    assert {node.label: node.grad for node in order} == steps[-1]["gradients"]
    assert steps[2]["formula"] == ("p\u0304 += n\u0304 \u00b7 \u2202n/\u2202p = 0.7864 \u00d7 1 = 0.7864")
    assert "\u2202p/\u2202a = b = \u22120.5" in steps[4]["sentence"]


def test_backward_adds_up_the_fan_out():
    y = fan_out()
    recorded = explore.backward(y)
    into_x = [step for step in recorded.steps[1:] if step["parent"] == "x"]
    assert [step["before"] for step in into_x] == [0.0, 1.0, 4.0]
    assert recorded.steps[-1]["gradients"]["x"] == 7.0 == 2 * 3.0 + 1
    assert "x waits for its other children" in into_x[0]["sentence"]
    assert "its gradient is complete" in into_x[-1]["sentence"]
    # The quiz asks for the product of a first term, and for the new sum after a later one.
    assert into_x[0]["quiz"]["answer"] == into_x[0]["product"] == 1.0
    assert [step["quiz"]["answer"] for step in into_x[1:]] == [4.0, 7.0]
    assert into_x[2]["quiz"]["formula"] == "x\u0304 = 4 + 1 \u00d7 ? = ?", into_x[2]["quiz"]
    assert "x already holds 4 from another edge" in into_x[2]["quiz"]["sentence"]
    assert into_x[2]["quiz"]["label"] == "x\u0304 after this step"
    # A second recording starts again from zero: leaves do not accumulate across recordings.
    assert explore.backward(y).steps[-1]["gradients"]["x"] == 7.0 and y.parents[1].grad == 7.0


def test_backward_refuses_to_record_what_the_engine_did_not_do(monkeypatch):
    def wrong_backward(self, *, on_node):  # a broken engine: every gradient it sends is 2
        for node in reversed(topological_order(self)):
            on_node(node)
            for parent in node.parents:
                parent.grad = 2.0

    monkeypatch.setattr(Value, "backward", wrong_backward)
    with pytest.raises(AssertionError, match="recorded gradient of .* but backward\\(\\) holds"):
        explore.backward(worked_example())


def test_forward_and_backward_take_only_values():
    numpy = pytest.importorskip("numpy")
    from chainrule import Tensor

    with pytest.raises(TypeError, match="explore.backward: expected a chainrule Value.*Tensor"):
        explore.backward(Tensor(numpy.ones(2), requires_grad=True).sum())
    with pytest.raises(TypeError, match="explore.forward: expected a chainrule Value.*float"):
        explore.forward(1.5)
    node = Value(0.5)
    for _ in range(40):
        node = node.tanh()
    with pytest.raises(GraphTooLargeError, match="max_nodes=41"):
        explore.forward(node)


@pytest.mark.parametrize("kind", ["forward", "backward"])
def test_every_text_a_step_writes_is_in_the_svg(kind):
    recorded = getattr(explore, kind)(worked_example())
    markup = recorded.html()
    ids = element_ids(markup)
    data = json_data(markup)
    for step in data["steps"]:
        assert set(step["nodes"]) <= ids and set(step["edges"]) <= ids
        assert set(step["texts"]) <= ids
        assert set(step.get("later", [])) <= ids
    assert len(markup.encode("utf-8")) <= MAX_WIDGET_BYTES


def test_backward_without_script_shows_the_final_gradients():
    L = worked_example()
    markup = explore.backward(L).html()
    soup = widget_soup(markup)
    prefix = json_data(markup)["prefix"]
    for node in topological_order(L):
        [text] = soup.select(f'text[id="{prefix}text-grad-{node.label}"]')
        assert text.get_text() == f"grad {node.grad:.4g}".replace("-", "\u2212")
    assert soup.select_one('[data-role="formula"]').get_text().startswith("b\u0304 +=")
    assert soup.select_one('[data-role="quiz-controls"]').has_attr("hidden")
    assert "The backward pass is complete" in soup.select_one('[data-role="status"]').get_text()


def test_the_quiz_hides_the_local_gradient_and_the_product():
    steps = explore.backward(worked_example()).steps
    quiz = steps[4]["quiz"]
    assert quiz["answer"] == steps[4]["product"]
    assert quiz["formula"].endswith("= 0.7864 \u00d7 ? = ?") and "\u22120.5" not in quiz["sentence"]
    assert "quiz" not in steps[0]


def test_two_kinds_on_one_graph_have_different_ids():
    L = worked_example()
    assert explore.forward(L).prefix != explore.backward(L).prefix


# --- training: a classifier recorded while it trains ------------------------------


def small_classifier(seed=0):
    """Points of 3 classes, a 2-3-3 tanh network of Values, its units and its loss."""
    import math
    import random

    rng = random.Random(seed)
    points = [(rng.uniform(-1, 1), rng.uniform(-1, 1)) for _ in range(12)]
    labels = [0 if x < -0.3 else 1 if x < 0.3 else 2 for x, _ in points]
    weights = [
        [[Value(rng.uniform(-1, 1)) for _ in range(3)] for _ in range(3)],
        [[Value(rng.uniform(-1, 1)) for _ in range(4)] for _ in range(3)],
    ]

    def forward(point):
        layers = [[Value(x) for x in point]]
        for depth, layer in enumerate(weights):
            outputs = []
            for row in layer:
                total = sum((w * x for w, x in zip(row[:-1], layers[-1], strict=True)), row[-1])
                outputs.append(total.tanh() if depth == 0 else total)
            layers.append(outputs)
        return layers

    def loss(scores, label):
        return sum((s.exp() for s in scores), Value(0.0)).log() - scores[label]

    assert math.isfinite(loss(forward(points[0])[-1], labels[0]).data)
    return points, labels, weights, forward, loss


def train(recorder, weights, points, labels, forward, loss, steps=6, lr=0.5):
    parameters = [p for layer in weights for unit in layer for p in unit]
    recorded_grads = []
    for step in range(steps):
        total = sum((loss(forward(x)[-1], y) for x, y in zip(points, labels, strict=True)), Value(0.0))
        total = total / len(points)
        for p in parameters:
            p.grad = 0.0
        total.backward()
        before = [p.grad for p in parameters]
        recorder.record(step, total)
        recorded_grads.append((before, [p.grad for p in parameters], [p.data for p in parameters]))
        for p in parameters:
            p.data -= lr * p.grad
    return recorded_grads


def test_training_records_the_run_without_changing_it():
    points, labels, weights, forward, loss = small_classifier()
    recorder = explore.TrainingRecorder(points, labels, forward=forward, loss=loss, weights=weights, grid=8)
    runs = train(recorder, weights, points, labels, forward, loss)
    for before, after, _ in runs:
        assert before == after, "record() changed the gradients the update uses"
    snapshots = recorder.snapshots
    assert [snap["weights"] for snap in snapshots] == [data for _, _, data in runs]
    # The gradients recorded are those backward() gave and the update then used.
    assert [snap["grads"] for snap in snapshots] == [before for before, _, _ in runs]
    assert snapshots[-1]["loss"] < snapshots[0]["loss"]
    assert recorder.examples == [labels.index(k) for k in range(3)]
    for snap in snapshots:
        assert len(snap["cells"]) == 64 and set(snap["cells"]) <= {"0", "1", "2"}
    # The units of an example are its forward pass; their gradients are its own backward pass.
    layers, (example_loss, seed) = snapshots[0]["units"][0]
    assert seed == 1.0 and [len(layer) for layer in layers] == [2, 3, 3]


def test_training_widget_shows_every_step_and_weight():
    points, labels, weights, forward, loss = small_classifier()
    recorder = explore.TrainingRecorder(points, labels, forward=forward, loss=loss, weights=weights, grid=8)
    train(recorder, weights, points, labels, forward, loss, steps=4)
    widget = recorder.explorable()
    markup = widget.html()
    data = json_data(markup)
    ids = element_ids(markup)
    count = 3 * 3 + 3 * 4  # 2 inputs + bias into 3 hidden units, 3 hidden + bias into 3 scores
    assert data["kind"] == "training" and len(data["steps"]) == 4 and len(data["parameters"]) == count
    # The status counts training steps, as the chapter's prose does, not the widget's frames.
    assert [step["counter"] for step in data["steps"]] == [f"Step {k} of 3" for k in range(4)]
    assert "Step 3 of 3. After 3 updates" in markup  # the final state, without JavaScript
    assert data["parameters"][:3] == ["h1 \u2190 x1", "h1 \u2190 x2", "bias of h1"]
    assert data["parameters"][-1] == "bias of oC"
    soup = widget_soup(markup)
    assert len(soup.select("[data-cell]")) == 64 and len(soup.select('select[data-role="parameter"] option')) == count
    assert len(soup.select("figure.cr-x-panel svg[role=img][aria-label]")) == 3
    # Every weight is a line of the network (a bias its unit's outline) that a pointer can choose.
    assert len(soup.select("[data-param] line[id]")) == 3 * 2 + 3 * 3
    assert len(soup.select("[data-param] circle[id]")) == 3 + 3
    assert {f"part-w{i}" for i in range(count)} | {"part-cursor", "part-cursor-dot"} <= ids
    assert soup.select_one('[data-role="loss-chart"] svg') is not None
    for step, snap in zip(data["steps"], recorder.snapshots, strict=True):
        assert len(step["grid"]) == 64 and set(step["attrs"]) <= ids
        # As the figures print numbers: 4 significant digits, a true minus sign.
        assert step["weights"] == [format_number(w).replace("-", "\u2212") for w in snap["weights"]]
        assert step["grads"] == [format_number(g).replace("-", "\u2212") for g in snap["grads"]]
        widths = [step["attrs"][f"part-w{i}"]["stroke-width"] for i in range(count)]
        order = sorted(range(count), key=lambda i: abs(snap["weights"][i]))
        assert [widths[i] for i in order] == sorted(widths), "a larger weight is drawn thinner"
        assert all(
            step["attrs"][f"part-w{i}"]["stroke"] == ("#c0001a" if w >= 0 else "#1f4e9c")
            for i, w in enumerate(snap["weights"])
        )
    assert len(markup.encode("utf-8")) <= MAX_WIDGET_BYTES


def test_training_recorder_refuses_bad_input():
    points, labels, weights, forward, loss = small_classifier()
    with pytest.raises(ValueError, match="TrainingRecorder: 12 points but 11 labels"):
        explore.TrainingRecorder(points, labels[:-1], forward=forward, loss=loss, weights=weights)
    with pytest.raises(ValueError, match="labels must be 0, 1, ...*got \\[1, 2\\]"):
        explore.TrainingRecorder(points, [1 + (k % 2) for k in labels], forward=forward, loss=loss, weights=weights)
    recorder = explore.TrainingRecorder(points, labels, forward=forward, loss=loss, weights=weights)
    with pytest.raises(ValueError, match="nothing recorded yet"):
        recorder.explorable()


def widget_says(step, guess):
    """The slip explorable.js names for a first wrong guess: the first of the step's within its tolerance."""
    found = [m for m in step["quiz"].get("mistakes", []) if slips.close(guess, m[0])]
    return found[0] if found else None


def test_the_widget_names_a_product_s_swapped_factors_as_the_drill_does():
    """Predict mode said only "Not quite" to p̄ · a typed for p̄ · ∂p/∂a = p̄ · b. It now takes its slips from the
    local-gradient drill's and names them with the drills' matcher: on the drill's own graphs, where the drill
    names a's value typed for ∂p/∂a, the widget names the product made with it by the same name and words, and
    never by another name."""
    from chainrule_course.drills import question

    checked, named = 0, 0
    for seed in range(400):
        q = question("local", 1 + seed % 4, seed)
        parent, child = (q.graph.nodes[name] for name in q.target.split("->"))
        if child.op != "*":
            continue
        drill = q.check(repr(parent.data))  # the factor itself, not the other one
        if drill["mistake"] != "the other edge's local gradient":
            continue
        steps = explore.backward(q.graph.root).steps[1:]
        [step] = [s for s in steps if (s["child"], s["parent"]) == (child.label, parent.label)]
        said = widget_says(step, step["before"] + step["child_grad"] * parent.data)
        checked += 1
        if said is not None:
            assert said[2] == drill["mistake"] and said[1].endswith(" " + drill["message"]), (seed, said, drill)
            named += 1
    assert checked >= 50 and named >= 0.9 * checked, (checked, named)


def test_the_widget_checks_a_guess_with_the_drills_tolerance():
    from chainrule_course.drills import reading

    assert (slips.ABSOLUTE, slips.RELATIVE) == (reading.ABSOLUTE, reading.RELATIVE)
    script = explore.asset(explore.SCRIPT_FILE)
    assert f"Math.max({slips.ABSOLUTE}, {slips.RELATIVE} * Math.abs(answer))" in script
