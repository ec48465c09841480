"""Tests for chainrule.explore: the recorded search is the engine's, and its widget is self-contained.

* The steps of ``explore.toposort`` are the events of ``depth_first_events``, in order,
  and their lists grow exactly as seed 001's printed trace (``SEED_PRINTED``, copied
  from the seed's output in tests/test_draw.py, not from our code).
* The widget's HTML holds one SVG whose nodes and edges carry their ids, the steps as
  JSON, the script and the styles once each, the named controls, and is at most 300 KB.
* Without its script the widget is the final state: the SVG's classes, its alt text, the
  lists and the status say so.
* The script and styles ship in the wheel.

tests/test_explorables_browser.py steps the widget in Chromium on the built page.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile

import pytest
from bs4 import BeautifulSoup

from chainrule import Value, explore
from chainrule.draw import GraphTooLargeError
from chainrule.graph import depth_first_events, topological_order
from conftest import ROOT
from test_draw import SEED_PARENTS, SEED_PRINTED, seed_as_values

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
    printed = [("v", step["visited"]) if step["event"] == "visit" else ("t", step["order"])
               for step in seed.steps]
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
    assert sentences[9].startswith("Finish c: its parents a and b are finished, so it joins "
                                   "the order: x, a, b, c.")
    assert sentences[-1].endswith("The search is complete; e is not reached from f.")


def test_a_parent_reached_by_another_path_is_named_when_skipped():
    # c's second parent, a, was reached from m: the search skips it and goes on to b.
    parents = {"a": [], "b": [], "m": ["a"], "c": ["m", "a", "b"]}
    sentences = [step["sentence"] for step in explore.toposort("c", parents).steps]
    assert "Visit b: c's third parent (a was visited already). Visited: c, m, a, b." in sentences
    assert sentences[-1] == ("Finish c: its parents m, a and b are finished, so it joins the "
                             "order: a, m, b, c. The search is complete.")


def test_a_value_used_twice_gives_unique_ids():
    a = Value(3.0, label="a")
    b = a * a
    b.label = "b"
    markup = explore.toposort(b).html()
    ids = {g["id"] for g in widget_soup(markup).select("svg g[id]")}
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
    ids = {g["id"] for g in svg.select("g[id]")}
    nodes = {f"node-{name}" for name in SEED_PARENTS}
    edges = {f"edge-{parent}-{child}" for child, parents in SEED_PARENTS.items() for parent in parents}
    assert nodes <= ids and edges <= ids, f"missing: {sorted((nodes | edges) - ids)}"
    assert svg["role"] == "img" and svg["aria-label"] and "max-width:100%" in svg["style"]


def test_the_json_holds_every_step_and_its_picture(seed, seed_html):
    data = json_data(seed_html)
    assert data["kind"] == "toposort" and data["lists"] == ["visited", "order"]
    assert [{key: step[key] for key in seed.steps[0]} for step in data["steps"]] == seed.steps
    svg_ids = {g["id"] for g in widget_soup(seed_html).select("svg g[id]")}
    for step in data["steps"]:
        assert set(step["nodes"]) <= svg_ids and set(step["path"]) <= svg_ids
        assert step["current"] == f"node-{step['node']}"
    assert data["steps"][2]["path"] == ["edge-d-f", "edge-x-d"]
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
    classes = {g["id"]: g["class"] for g in svg.select("g.node")}
    for name in ["x", "a", "b", "c", "d", "f"]:
        assert "cr-finished" in classes[f"node-{name}"]
    assert "cr-not-reached" in classes["node-e"] and "cr-current" in classes["node-f"]
    assert svg["aria-label"].startswith("Depth-first search from f, step 12 of 12 (finish f)")
    assert "finished: x, a, b, c, d, f" in svg["aria-label"] and svg.title.string == svg["aria-label"]
    lists = {dd["data-list"]: dd.get_text() for dd in soup.select("[data-list]")}
    assert lists == {"visited": "f, d, x, c, a, b", "order": "x, a, b, c, d, f"}
    assert soup.select_one('[data-role="controls"]').has_attr("hidden")
    # The colours of the final state are drawn by dot too, for pages without the styles.
    assert 'fill="#2f5f98"' in str(svg.select_one("g#node-x"))


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
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import package  # tools/package.py
    finally:
        sys.path.remove(str(ROOT / "tools"))
    wheel = package.build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"chainrule/explore.py", "chainrule/explorable.js", "chainrule/explorable.css"} <= names
